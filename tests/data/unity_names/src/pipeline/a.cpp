// A fixture of scripts/unity_names.py: with b.cpp, four file-local names
// shared (helper, Row, same, adder); the rest declares nothing local or
// nothing shared.
#include <functional>
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

// `->` and `==` are neither brackets nor an initialiser: adder is still seen.
auto same(int a, int b) -> decltype(a == b) { return a == b; }
std::function<int(int)> adder(int n) {
  return [n](int x) { return x + n; };
}

}  // namespace

int shared_in_the_open(int x) { return helper(x); }

}  // namespace bnn::pipeline
