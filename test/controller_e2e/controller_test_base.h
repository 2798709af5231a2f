// The fixture the controller end-to-end tests derive from: a fresh
// ControllerHarness per test; at the end its controllers are stopped (each
// must exit 0 on SIGTERM), the test's duration is printed and, after a
// failure, its temporary directory is kept and the controllers' logs printed.
#ifndef FACET_TEST_CONTROLLER_E2E_CONTROLLER_TEST_BASE_H_
#define FACET_TEST_CONTROLLER_E2E_CONTROLLER_TEST_BASE_H_

#include <iostream>
#include <memory>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/controller_e2e/controller_harness.h"
#include "xds_server/common/status_matchers.h"

namespace facet::e2e {

class ControllerTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    started_ = absl::Now();
    absl::StatusOr<std::unique_ptr<ControllerHarness>> harness = ControllerHarness::Create();
    ASSERT_THAT(harness, ::facet::testing::IsOk());
    harness_ = *std::move(harness);
  }

  void TearDown() override {
    if (harness_ == nullptr) return;
    EXPECT_THAT(harness_->StopControllers(), ::facet::testing::IsOk())
        << "facet controller must release everything and exit 0 on SIGTERM";
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::cerr << "controller_e2e: " << test->name() << " took "
              << absl::FormatDuration(absl::Trunc(absl::Now() - started_, absl::Milliseconds(10)))
              << (ControllerHarness::KubectlUnavailableReason().empty() ? "" : " (no kubectl)")
              << "\n";
    if (HasFailure()) {
      harness_->e2e().KeepTempDir();
      std::cerr << "controller_e2e: kept " << harness_->e2e().dir() << " (logs/, kubeconfig)\n"
                << harness_->ControllerLogs();
    }
  }

  ControllerHarness& h() { return *harness_; }

  std::unique_ptr<ControllerHarness> harness_;
  absl::Time started_;
};

}  // namespace facet::e2e

#endif  // FACET_TEST_CONTROLLER_E2E_CONTROLLER_TEST_BASE_H_
