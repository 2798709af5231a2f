#include "controller/kubernetes/client/backoff.h"

#include <algorithm>
#include <utility>

namespace facet::controller::kube {

Backoff::Backoff(Params params, std::function<double()> random)
    : params_(params), random_(std::move(random)), step_(params.initial) {}

absl::Duration Backoff::Next(absl::Time now) {
  if (now - last_ > params_.reset_after) step_ = params_.initial;
  last_ = now;
  absl::Duration wait = step_;
  step_ = std::min(step_ * params_.factor, params_.cap);
  if (params_.jitter > 0) wait += wait * (random_() * params_.jitter);
  return wait;
}

}  // namespace facet::controller::kube
