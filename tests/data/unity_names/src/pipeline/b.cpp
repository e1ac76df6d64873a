// A fixture of scripts/unity_names.py: see a.cpp.
namespace bnn::pipeline {

static double helper(double x) { return x / 2; }

namespace {
struct Row {
  double b = 0;
};

template <typename T>
T largest(T a, T b) {
  return a < b ? b : a;
}
}  // namespace

void Table::twice() {}
const int kLimit = 2;
int shared_in_the_open(double x) { return static_cast<int>(helper(x)); }

}  // namespace bnn::pipeline
