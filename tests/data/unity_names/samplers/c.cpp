// A fixture of scripts/unity_names.py: another target, so its helper and
// largest are its own.
namespace bnn::samplers {
namespace {
int helper(int x) { return x - 1; }
int largest(int a, int b) { return a < b ? b : a; }
}  // namespace
}  // namespace bnn::samplers
