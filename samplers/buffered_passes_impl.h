// One coordinate of a buffered pass (Note [Buffered passes] in
// samplers/buffered_passes.h), and the choice of its compiled variant; for
// buffered_passes_host.cpp and buffered_passes.cu.
#pragma once

#include <type_traits>

#include "samplers/buffered_passes.h"
#include "samplers/coordinate_updates.h"

namespace bnn::samplers::detail {
namespace {  // NOLINT(cert-dcl59-cpp, google-build-namespaces): host and device copies differ

// Whether pass P forms the force from its terms (the others read a stored
// force or none).
BNN_HOST_DEVICE constexpr bool forms_force(BufferedPass p) {
  return p == BufferedPass::kUbuKick || p == BufferedPass::kKick || p == BufferedPass::kEuler ||
         p == BufferedPass::kSgld || p == BufferedPass::kSgnht;
}

template <Rounding R, ForceMode M, BufferedPass P>
BNN_HOST_DEVICE inline void buffered_coordinate(const BufferedArgs& a, int64_t i) {
  float x = a.x[i];
  float v = a.v[i];
  const ForceTerms& t = a.terms;
  const Coefficients c{a.h, a.friction_from != nullptr ? *a.friction_from : a.friction, a.minus_h, a.sigma};
  float g = 0.0f;
  if constexpr (forms_force(P)) {
    g = force_at<R, M>(t.diag, t.offset, t.grad, t.anchor_grad, t.partial, t.scale, t.minus_scale, i, x);
  }
  if constexpr (P == BufferedPass::kUbu) {
    ubu_update<R>(x, v, a.noise[i], a.noise[a.n + i], a.ubu);
  } else if constexpr (P == BufferedPass::kUbuKick) {
    kick_update<R>(v, g, a.minus_h);
    ubu_update<R>(x, v, a.noise[i], a.noise[a.n + i], a.ubu);
  } else if constexpr (P == BufferedPass::kKickDrift) {
    kick_update<R>(v, a.force[i], a.minus_h);
    drift_update<R>(x, v, a.h);
  } else if constexpr (P == BufferedPass::kOuDrift) {
    ou_drift_update<R>(x, v, a.noise[i], c);
  } else if constexpr (P == BufferedPass::kKick) {
    a.force_out[i] = g;
    kick_update<R>(v, g, a.minus_h);
  } else if constexpr (P == BufferedPass::kEuler) {
    euler_update<R>(x, v, g, a.noise[i], c);
  } else if constexpr (P == BufferedPass::kSgld) {
    sgld_update<R>(x, g, a.noise[i], c);
  } else {
    sgnht_update<R>(x, v, g, a.noise[i], c);
  }
  if constexpr (P != BufferedPass::kKick) {
    if (a.bounded) reflect(x, v, a.anchor[i], Reflection{a.w, a.two_w, a.four_w, a.inv_two_w});
  }
  a.x[i] = x;
  a.v[i] = v;
}

template <Rounding R>
using RoundingTag = std::integral_constant<Rounding, R>;
template <ForceMode M>
using ForceTag = std::integral_constant<ForceMode, M>;
template <BufferedPass P>
using PassTag = std::integral_constant<BufferedPass, P>;

// Calls f(RoundingTag, ForceTag, PassTag) for the args' variant; the passes
// that form no force get kPlain whatever the terms say.
template <BufferedPass P, class F>
void with_force_mode(const BufferedArgs& a, F&& f) {
  auto go = [&](auto r) {
    if constexpr (!forms_force(P)) {
      f(r, ForceTag<ForceMode::kPlain>{}, PassTag<P>{});
    } else if (a.terms.mode == ForceMode::kStoredAnchors) {
      f(r, ForceTag<ForceMode::kStoredAnchors>{}, PassTag<P>{});
    } else if (a.terms.mode == ForceMode::kPartial) {
      f(r, ForceTag<ForceMode::kPartial>{}, PassTag<P>{});
    } else {
      f(r, ForceTag<ForceMode::kPlain>{}, PassTag<P>{});
    }
  };
  if (a.rounding == Rounding::kFma) {
    go(RoundingTag<Rounding::kFma>{});
  } else {
    go(RoundingTag<Rounding::kSeparate>{});
  }
}

template <class F>
void with_variant(const BufferedArgs& a, F&& f) {
  switch (a.pass) {
    case BufferedPass::kUbu:
      return with_force_mode<BufferedPass::kUbu>(a, f);
    case BufferedPass::kUbuKick:
      return with_force_mode<BufferedPass::kUbuKick>(a, f);
    case BufferedPass::kKickDrift:
      return with_force_mode<BufferedPass::kKickDrift>(a, f);
    case BufferedPass::kOuDrift:
      return with_force_mode<BufferedPass::kOuDrift>(a, f);
    case BufferedPass::kKick:
      return with_force_mode<BufferedPass::kKick>(a, f);
    case BufferedPass::kEuler:
      return with_force_mode<BufferedPass::kEuler>(a, f);
    case BufferedPass::kSgld:
      return with_force_mode<BufferedPass::kSgld>(a, f);
    case BufferedPass::kSgnht:
      return with_force_mode<BufferedPass::kSgnht>(a, f);
  }
}

}  // namespace
}  // namespace bnn::samplers::detail
