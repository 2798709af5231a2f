#include "controller/cli/stop_stack.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace facet::controller {
namespace {

using ::testing::ElementsAre;

// Records its destruction in `log`.
class Part {
 public:
  Part(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  ~Part() { log_.push_back("destroy " + name_); }

 private:
  std::string name_;
  std::vector<std::string>& log_;
};

TEST(StopStackTest, StopsAndDestroysTheLastPushedFirst) {
  std::vector<std::string> log;
  {
    StopStack stack;
    stack.Own(std::make_unique<Part>("store", log));
    stack.Own(std::make_unique<Part>("service", log));
    stack.Push([&] { log.push_back("stop worker"); });
    stack.Push([&] { log.push_back("stop port"); });
  }
  EXPECT_THAT(log, ElementsAre("stop port", "stop worker", "destroy service", "destroy store"));
}

TEST(StopStackTest, UnwindsWhatWasStartedWhenStartUpStopsHalfway) {
  std::vector<std::string> log;
  auto start = [&](bool second_fails) {
    StopStack stack;
    stack.Own(std::make_unique<Part>("first", log));
    if (second_fails) return false;  // The stack unwinds on the way out.
    stack.Own(std::make_unique<Part>("second", log));
    return true;
  };
  EXPECT_FALSE(start(/*second_fails=*/true));
  EXPECT_THAT(log, ElementsAre("destroy first"));
}

TEST(StopStackTest, UnwindEmptiesTheStackSoPartsStopOnce) {
  std::vector<std::string> log;
  StopStack stack;
  Part& part = stack.Own(std::make_unique<Part>("part", log));
  (void)part;
  stack.Push([&] { log.push_back("stop"); });
  stack.Unwind();
  stack.Unwind();
  EXPECT_THAT(log, ElementsAre("stop", "destroy part"));
}

}  // namespace
}  // namespace facet::controller
