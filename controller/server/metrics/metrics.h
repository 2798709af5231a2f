// The process's metrics on prometheus-cpp's core: one registry, served as
// text on the admin port's /metrics.
#ifndef FACET_CONTROLLER_SERVER_METRICS_METRICS_H_
#define FACET_CONTROLLER_SERVER_METRICS_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace facet::controller {

// Content type of Text(): Prometheus' text exposition format.
inline constexpr char kMetricsContentType[] = "text/plain; version=0.0.4";

// The buckets of Facet's latency histograms, in seconds: 1 ms to 30 s.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets();

// One registry of counters, gauges and histograms. Instrumented code updates
// its metrics directly; counts that other components keep in their own stats
// are copied into metrics by updates that run at each scrape (OnScrape).
// Thread-safe; metrics live as long as the Metrics.
class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  prometheus::Registry& registry() { return *registry_; }

  // Return the one metric of a new family without labels. A name registered
  // twice, or not a valid metric name, is a programming error (prometheus-cpp
  // throws).
  prometheus::Counter& Counter(const std::string& name, const std::string& help);
  prometheus::Gauge& Gauge(const std::string& name, const std::string& help);
  prometheus::Histogram& Histogram(const std::string& name, const std::string& help,
                                   const prometheus::Histogram::BucketBoundaries& buckets);

  // Runs `update` before every scrape, in the order registered, one scrape at
  // a time. It sets metrics from a component's stats, so what it reads must
  // outlive every later Text() call.
  void OnScrape(std::function<void()> update);

  // Runs the scrape updates, then returns every metric in the text format
  // (prometheus::TextSerializer: label values escaped).
  std::string Text();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  absl::Mutex scrape_mu_;  // Held while a scrape runs the updates.
  std::vector<std::function<void()>> updates_ ABSL_GUARDED_BY(scrape_mu_);
};

// Advances `counter` to `total`, a count kept elsewhere: a counter never
// goes down, so a smaller total leaves it as it is.
void AdvanceTo(prometheus::Counter& counter, double total);

// Counters and gauges whose values are read from a component's stats (a
// struct of counts it keeps) once per scrape. Declare each metric with how to
// read it from the stats, then Install.
template <typename Stats>
class StatsMetrics {
 public:
  using Read = std::function<double(const Stats&)>;

  explicit StatsMetrics(Metrics& metrics) : metrics_(metrics) {}

  // A counter advanced to read(stats) at each scrape (see AdvanceTo).
  StatsMetrics& Counter(const std::string& name, const std::string& help, Read read) {
    counters_.push_back({&metrics_.Counter(name, help), std::move(read)});
    return *this;
  }
  // A gauge set to read(stats) at each scrape.
  StatsMetrics& Gauge(const std::string& name, const std::string& help, Read read) {
    gauges_.push_back({&metrics_.Gauge(name, help), std::move(read)});
    return *this;
  }
  // Registers the scrape update: calls `stats` once and sets every metric
  // declared from what it returns. What `stats` reads must outlive every
  // later scrape.
  void Install(std::function<Stats()> stats) {
    metrics_.OnScrape([stats = std::move(stats), counters = std::move(counters_),
                       gauges = std::move(gauges_)] {
      const Stats now = stats();
      for (const auto& [counter, read] : counters) AdvanceTo(*counter, read(now));
      for (const auto& [gauge, read] : gauges) gauge->Set(read(now));
    });
  }

 private:
  Metrics& metrics_;
  std::vector<std::pair<prometheus::Counter*, Read>> counters_;
  std::vector<std::pair<prometheus::Gauge*, Read>> gauges_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_SERVER_METRICS_METRICS_H_
