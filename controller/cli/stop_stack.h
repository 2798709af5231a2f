// The parts a command started, stopped in the reverse order on every way out.
#ifndef FACET_CONTROLLER_CLI_STOP_STACK_H_
#define FACET_CONTROLLER_CLI_STOP_STACK_H_

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace facet::controller {

// Holds what a command started, as a stack: stop actions (Push) and owned
// parts (Own). Unwind, or destruction, runs the stops and destroys the parts,
// the last pushed first, so a part outlives everything pushed after it and
// nothing depends on the order of declarations. Owned by one thread.
class StopStack {
 public:
  StopStack() = default;
  StopStack(const StopStack&) = delete;
  StopStack& operator=(const StopStack&) = delete;
  ~StopStack() { Unwind(); }

  // Runs `stop` at Unwind, before anything pushed earlier is stopped.
  void Push(std::function<void()> stop) { entries_.push_back({std::move(stop), nullptr}); }

  // Takes `part` (non-null) and returns it; it is destroyed at Unwind, after
  // everything pushed later was stopped and before anything pushed earlier.
  template <typename T>
  T& Own(std::unique_ptr<T> part) {
    T& borrowed = *part;
    entries_.push_back({nullptr, std::shared_ptr<T>(std::move(part))});
    return borrowed;
  }

  // Stops and destroys everything, the last pushed first. The stack is empty
  // afterwards (and may be used again).
  void Unwind() {
    while (!entries_.empty()) {
      Entry entry = std::move(entries_.back());
      entries_.pop_back();
      if (entry.stop) entry.stop();
      entry.part.reset();
    }
  }

 private:
  struct Entry {
    std::function<void()> stop;
    std::shared_ptr<void> part;
  };
  std::vector<Entry> entries_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_STOP_STACK_H_
