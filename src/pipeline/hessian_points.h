// `bnn hessian --checkpoint MEMBER_DIR`: the Hessian spectral norm of the
// log-posterior (src/evaluation/hessian.h; paper appendix D.2) at the points of
// one finished member's path: random initialisation, after Adam, at the SWA
// point x*, and at x* + rho xi with xi ~ N(0, I) (a typical start of a chain;
// rho is sampler.rho, or 50^-1/2 for a global sampler, as bnn rhat's starts).
//
// The potential is f(x) = sum_i CE_i(x) + (lambda / 2) ||x_w||^2 over the first
// `examples` training examples (all when 0), with the model in train mode
// (BatchNorm with batch statistics, as while sampling). The localized
// potential of the sampler adds (1 / (2 rho^2)) ||x - x*||^2, whose Hessian is
// I / rho^2: its eigenvalues are those of f shifted by 1 / rho^2, reported as
// `localized` (the Rayleigh quotient plus 1 / rho^2).
// Results go to MEMBER_DIR/hessian.json, or to `out` where given (atomically),
// with the options that produced them (seed, max_iterations, tolerance,
// device), and are returned. An existing result file is never written over:
// a second `bnn hessian` of the member (other examples, say) would otherwise
// replace the first's numbers. The command refuses at once if the file exists,
// and publishes its own only if no other process wrote one while it ran
// (io::create_file_atomically).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/evaluation/hessian.h"

namespace bnn::pipeline {

struct HessianOptions {
  std::filesystem::path member_dir;  // <run>/member_NNN with *_weights.npy
  int64_t examples = 0;              // first N training examples; 0 = all
  evaluation::PowerIterationOptions power;
  uint64_t seed = 0;                 // power-iteration start and the perturbation
  std::string device = "auto";
  std::filesystem::path out;  // the result file; empty: member_dir/hessian.json
};

// Where hessian_at_checkpoints writes: options.out, else MEMBER_DIR/hessian.json.
std::filesystem::path hessian_output(const HessianOptions& options);

struct HessianPoint {
  std::string point;  // "init", "adam", "swa", "swa_perturbed"
  evaluation::SpectralNormEstimate estimate;
  double localized = 0;  // estimate.rayleigh + 1 / rho^2
};

std::vector<HessianPoint> hessian_at_checkpoints(const HessianOptions& options);

nlohmann::json to_json(const std::vector<HessianPoint>& points);

}  // namespace bnn::pipeline
