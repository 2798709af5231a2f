#include "controller/server/metrics/metrics.h"

#include <utility>

#include "prometheus/text_serializer.h"

namespace facet::controller {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  return *kBuckets;
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {}

prometheus::Counter& Metrics::Counter(const std::string& name, const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(*registry_).Add({});
}

prometheus::Gauge& Metrics::Gauge(const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(*registry_).Add({});
}

prometheus::Histogram& Metrics::Histogram(const std::string& name, const std::string& help,
                                          const prometheus::Histogram::BucketBoundaries& buckets) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_).Add({}, buckets);
}

void Metrics::OnScrape(std::function<void()> update) {
  absl::MutexLock lock(&scrape_mu_);
  updates_.push_back(std::move(update));
}

std::string Metrics::Text() {
  {
    absl::MutexLock lock(&scrape_mu_);
    for (const std::function<void()>& update : updates_) update();
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void AdvanceTo(prometheus::Counter& counter, double total) {
  const double current = counter.Value();
  if (total > current) counter.Increment(total - current);
}

}  // namespace facet::controller
