#include "xds_server/common/backoff.h"

#include <algorithm>
#include <utility>

namespace facet::xds {

ConnectionBackoff::ConnectionBackoff(Params params, std::function<double()> random)
    : params_(params), random_(std::move(random)), step_(params.initial) {}

absl::Duration ConnectionBackoff::Next() {
  const double uniform = random_ ? random_() : absl::Uniform(own_random_, 0.0, 1.0);
  const absl::Duration wait = step_ * (1.0 - params_.jitter + 2.0 * params_.jitter * uniform);
  step_ = std::min(params_.max, step_ * params_.multiplier);
  return wait;
}

}  // namespace facet::xds
