// A fixture of scripts/unity_names.py: see a.cpp.
namespace bnn::pipeline {

static double helper(double x) { return x / 2; }
[[nodiscard]] static bool same(double a, double b) { return a == b; }

namespace {
struct Row {
  double b = 0;
};

std::function<double(double)> adder(double n) {
  return [n](double x) { return x + n; };
}

template <typename T = std::vector<int>>
T largest(T a, T b) {
  return a < b ? b : a;
}
}  // namespace

void Table::twice() {}
const int kLimit = 2;
int shared_in_the_open(double x) { return static_cast<int>(helper(x)); }

}  // namespace bnn::pipeline
