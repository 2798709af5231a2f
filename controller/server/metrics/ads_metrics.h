// The ADS service's metrics (facet_xds_*, facet_snapshots_published_total).
#ifndef FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_
#define FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_

#include "controller/server/metrics/metrics.h"
#include "xds_server/ads/ads_service.h"

namespace facet::controller {

// Registers the ADS service's metrics in `metrics`, read from ads.stats()
// and ads.StreamsPerAuthority() at each scrape. `ads` must outlive every
// later scrape.
void AddAdsMetrics(Metrics& metrics, const xds::AdsService& ads);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_METRICS_ADS_METRICS_H_
