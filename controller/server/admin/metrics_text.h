// Prometheus text exposition helpers shared by `facet serve` and
// `facet controller`.
#ifndef FACET_CONTROLLER_SERVER_ADMIN_METRICS_TEXT_H_
#define FACET_CONTROLLER_SERVER_ADMIN_METRICS_TEXT_H_

#include <string>

#include "xds_server/ads/ads_service.h"

namespace facet::controller {

// Appends one metric with its HELP and TYPE lines.
void AppendMetric(const char* name, const char* type, const char* help, double value,
                  std::string* out);

// Appends the ADS server's metrics: open and total streams, streams per
// authority, pushes, ACKs, NACKs, snapshots published.
void AppendAdsMetrics(const xds::AdsService& ads, std::string* out);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_ADMIN_METRICS_TEXT_H_
