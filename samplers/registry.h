// Samplers created by name, as configs name them.
//
//   name        integrator                      default batch order   bias (SMS-UBU paper 3.4)
//   sms_ubu     UBU (samplers/ubu.h)            sms                   O(h^2)
//   sg_ubu      UBU                             iid                   O(h)
//   ubu_rr      UBU (SG-UBU-RR)                 rr                    O(h^2) empirically
//   sms_baoab   BAOAB (samplers/baoab.h)        sms                   O(h^2)
//   sg_baoab    BAOAB                           iid                   O(h)
//   baoab_rr    BAOAB                           rr                    O(h^2) empirically
//   sghmc       Euler-Maruyama (euler_maruyama.h)  rr                 O(h)
//   sg_em       Euler-Maruyama                  iid                   O(h)
//   em_rr       Euler-Maruyama                  rr                    O(h)
//   sms_em      Euler-Maruyama                  sms                   O(h)
//   csghmc      Euler-Maruyama, cosine cycles   rr
//   sgld        overdamped Euler-Maruyama (sgld.h)  rr
//   sgnht       Nose-Hoover thermostat (sgnht.h)    rr
//   obabo       OBABO / GGMC, optional MH (obabo.h) rr
//   nogin       ABOBA, noise-corrected friction (nogin.h)  iid          O(h^2)
//
// "sghmc" and "em_rr" are the same sampler: SGHMC as usually implemented, in
// epochs of reshuffled batches. nogin draws batches with replacement, as its
// covariance estimate assumes (a random batch per step). The batch order can be
// overridden by options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "samplers/gradient_oracle.h"
#include "samplers/langevin_options.h"
#include "samplers/sampler.h"

namespace bnn::samplers {

// Valid sampler names, in the order of the table above.
const std::vector<std::string>& sampler_names();

// One line describing sampler `name` (for help text); throws on unknown names.
const std::string& sampler_summary(const std::string& name);

// The default batch order of a sampler (the table above).
BatchOrderKind default_batch_order(const std::string& name);

// The options that only some samplers read; every sampler reads the step
// size, rho, rho_max, the prior, the temperature, the batch order and the
// gradient estimator.
enum class SamplerOption {
  kFriction,         // gamma: all but sgld (overdamped: no velocity)
  kCycleLength,      // csghmc
  kMhBlock,          // obabo
  kNoiseCovariance,  // nogin
};
// The option's name in LangevinOptions ("friction", "cycle_length", ...).
const char* to_string(SamplerOption option);
// Whether sampler `name` reads `option` (the registry's table); throws on
// unknown names.
bool reads_option(const std::string& name, SamplerOption option);

// Creates sampler `name` over `oracle`, anchored at `anchor` (x*). Unknown
// names throw, listing the valid names; options are validated, an unset batch
// order becomes the sampler's default, and options that the sampler ignores
// (cycle_length, mh_block) are errors when set.
std::unique_ptr<Sampler> make_sampler(const std::string& name, GradientOracle& oracle, torch::Tensor anchor,
                                      const LangevinOptions& options, uint64_t seed);

}  // namespace bnn::samplers
