// A fixture of scripts/unity_names.py: with b.cpp, two file-local names
// shared (helper, Row); the rest declares nothing local or nothing shared.
#include <string>

#define HELPER_TEXT "namespace { int not_a_name(); }"

namespace bnn::pipeline {
namespace {

// namespace { int in_a_comment(); }
int helper(int x) { return x + 1; }

struct Row {
  int a = 0;
  static int count() { return 1; }
};

constexpr double kLimit = 1.0;
const auto twice = [](int x) { return 2 * x; };
const char* kText = R"(namespace { int in_a_raw_string(); })";

TEST(Fixture, MacroCallsDeclareNothing) { helper(1); }

}  // namespace

int shared_in_the_open(int x) { return helper(x); }

}  // namespace bnn::pipeline
