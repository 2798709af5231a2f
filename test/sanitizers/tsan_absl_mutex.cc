// Makes ThreadSanitizer see abseil's Mutex and CondVar, which Debian's
// abseil (uninstrumented) implements with atomics and futexes TSan cannot
// follow: without this every ABSL_GUARDED_BY field would be reported as a
// race. Linked into every executable of a FACET_SANITIZE=thread build (and
// exported with -rdynamic), these definitions interpose on the shared
// library's, so calls from Facet, from gRPC (grpc_core::Mutex is an
// absl::Mutex) and from abseil itself (Notification, Barrier) all come here.
// Each one forwards to the library's function (dlsym RTLD_NEXT) and tells TSan
// what happened with the annotations abseil itself uses when it is built with
// TSan (absl/synchronization/mutex.cc).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

// Returns the library's definition of `symbol`; aborts when there is none.
void* Next(const char* symbol) {
  void* function = dlsym(RTLD_NEXT, symbol);
  if (function == nullptr) {
    std::fprintf(stderr, "tsan_absl_mutex: %s not found after the executable\n", symbol);
    std::abort();
  }
  return function;
}

// The mangled names depend on abseil's inline namespace (Debian: debian3).
#define FACET_ABSL_NS "4absl7debian3"
#define FACET_NEXT(type, mangled) \
  static const auto real = reinterpret_cast<type>(Next(mangled))

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Notification;
using absl::Time;

constexpr unsigned kRead = __tsan_mutex_read_lock;

// The library's functions call each other (CondVar::WaitWithTimeout calls
// WaitWithDeadline, through the interposed symbol): only the outermost call
// on a thread is annotated.
thread_local int nesting = 0;

// What TSan has been told about the outermost call in progress on this
// thread: it is taking `mu` (pre-lock announced, post-lock not yet) or
// releasing it (pre-unlock announced).
enum class Phase { kNone, kLocking, kUnlocking };
struct Operation {
  const Mutex* mu = nullptr;
  Phase phase = Phase::kNone;
  unsigned flags = 0;
};
thread_local Operation current;

class Nested {
 protected:
  Nested() : outer_(nesting++ == 0) {}
  ~Nested() { --nesting; }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;
  bool outer() const { return outer_; }

 private:
  const bool outer_;
};

// A Notification call: its own Mutex use inside is not annotated.
class Signal : Nested {
 public:
  using Nested::outer;
};

// A waiter's Condition, which the library evaluates while it holds the mutex
// internally: in the waiting thread in the middle of taking the mutex, or in
// another thread in the middle of releasing it. TSan, told about the outer
// operation only, would see the evaluation outside the mutex, so the wrapper
// tells it the mutex is held for the evaluation and then restores the state
// of the operation in progress (abseil does the same when built with TSan:
// EvalConditionAnnotated in absl/synchronization/mutex.cc).
class AnnotatedCondition {
 public:
  AnnotatedCondition(const Mutex* mu, const Condition& cond) : mu_(mu), cond_(cond) {}
  AnnotatedCondition(const AnnotatedCondition&) = delete;
  AnnotatedCondition& operator=(const AnnotatedCondition&) = delete;

  Condition condition() { return Condition(&Eval, this); }

 private:
  static bool Eval(AnnotatedCondition* self) {
    void* mu = const_cast<Mutex*>(self->mu_);
    const Operation op = current;
    if (op.mu != self->mu_ || op.phase == Phase::kNone) return self->cond_.Eval();
    // A try-lock flag belongs to the pending lock, not to the pretended one.
    const unsigned flags = op.flags & ~(__tsan_mutex_try_lock | __tsan_mutex_try_lock_failed);
    bool result = false;
    if (op.phase == Phase::kLocking) {
      __tsan_mutex_post_lock(mu, op.flags, 0);
      result = self->cond_.Eval();
      __tsan_mutex_pre_unlock(mu, flags);
      __tsan_mutex_post_unlock(mu, flags);
      __tsan_mutex_pre_lock(mu, op.flags);
    } else {
      __tsan_mutex_post_unlock(mu, flags);
      __tsan_mutex_pre_lock(mu, flags);
      __tsan_mutex_post_lock(mu, flags, 0);
      result = self->cond_.Eval();
      __tsan_mutex_pre_unlock(mu, flags);
    }
    return result;
  }

  const Mutex* const mu_;
  const Condition& cond_;
};

// Tells TSan, around the library call in its scope, that `mu` is acquired
// (in `flags` mode). condition() wraps the call's Condition.
class Acquire : Nested {
 public:
  Acquire(Mutex* mu, unsigned flags) : mu_(mu), flags_(flags) {
    if (!outer()) return;
    __tsan_mutex_pre_lock(mu_, flags_);
    current = {mu_, Phase::kLocking, flags_};
  }
  Acquire(Mutex* mu, unsigned flags, const Condition& cond) : Acquire(mu, flags) {
    wrapped_.emplace(mu, cond);
  }
  ~Acquire() {
    if (!outer()) return;
    current = {};
    __tsan_mutex_post_lock(mu_, flags_, 0);
  }
  // For try-locks: the call did not take the mutex.
  void Failed() { flags_ |= __tsan_mutex_try_lock_failed; }
  // The Condition to pass to the library: annotated on the outermost call.
  Condition condition(const Condition& cond) {
    return outer() && wrapped_ ? wrapped_->condition() : cond;
  }

 private:
  Mutex* const mu_;
  unsigned flags_;
  std::optional<AnnotatedCondition> wrapped_;
};

// Tells TSan that `mu` is released around the library call in its scope.
class Release : Nested {
 public:
  Release(Mutex* mu, unsigned flags) : mu_(mu), flags_(flags) {
    if (!outer()) return;
    __tsan_mutex_pre_unlock(mu_, flags_);
    current = {mu_, Phase::kUnlocking, flags_};
  }
  ~Release() {
    if (!outer()) return;
    current = {};
    __tsan_mutex_post_unlock(mu_, flags_);
  }

 private:
  Mutex* const mu_;
  const unsigned flags_;
};

// Waits (CondVar::Wait, Mutex::Await) release `mu` and take it again before
// they return: TSan is told the mutex is released at once and taken again
// when the wait returns (a taking in progress all along, so that conditions
// evaluated meanwhile are annotated like those of LockWhen). The mode it is
// held in is not known here; Facet waits with writer locks only.
class ReleaseWhileWaiting : Nested {
 public:
  explicit ReleaseWhileWaiting(Mutex* mu) : mu_(mu) {
    if (!outer()) return;
    __tsan_mutex_pre_unlock(mu_, 0);
    __tsan_mutex_post_unlock(mu_, 0);
    __tsan_mutex_pre_lock(mu_, 0);
    current = {mu_, Phase::kLocking, 0};
  }
  ReleaseWhileWaiting(Mutex* mu, const Condition& cond) : ReleaseWhileWaiting(mu) {
    wrapped_.emplace(mu, cond);
  }
  ~ReleaseWhileWaiting() {
    if (!outer()) return;
    current = {};
    __tsan_mutex_post_lock(mu_, 0, 0);
  }
  Condition condition(const Condition& cond) {
    return outer() && wrapped_ ? wrapped_->condition() : cond;
  }

 private:
  Mutex* const mu_;
  std::optional<AnnotatedCondition> wrapped_;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  FACET_NEXT(void (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex4LockEv");
  Acquire scope(this, 0);
  real(this);
}

void Mutex::Unlock() {
  FACET_NEXT(void (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex6UnlockEv");
  Release scope(this, 0);
  real(this);
}

bool Mutex::TryLock() {
  FACET_NEXT(bool (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex7TryLockEv");
  Acquire scope(this, __tsan_mutex_try_lock);
  if (real(this)) return true;
  scope.Failed();
  return false;
}

void Mutex::ReaderLock() {
  FACET_NEXT(void (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex10ReaderLockEv");
  Acquire scope(this, kRead);
  real(this);
}

void Mutex::ReaderUnlock() {
  FACET_NEXT(void (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex12ReaderUnlockEv");
  Release scope(this, kRead);
  real(this);
}

bool Mutex::ReaderTryLock() {
  FACET_NEXT(bool (*)(Mutex*), "_ZN" FACET_ABSL_NS "5Mutex13ReaderTryLockEv");
  Acquire scope(this, kRead | __tsan_mutex_try_lock);
  if (real(this)) return true;
  scope.Failed();
  return false;
}

void Mutex::LockWhen(const Condition& cond) {
  FACET_NEXT(void (*)(Mutex*, const Condition&),
             "_ZN" FACET_ABSL_NS "5Mutex8LockWhenERKNS0_9ConditionE");
  Acquire scope(this, 0, cond);
  real(this, scope.condition(cond));
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  FACET_NEXT(void (*)(Mutex*, const Condition&),
             "_ZN" FACET_ABSL_NS "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Acquire scope(this, kRead, cond);
  real(this, scope.condition(cond));
}

// The ...WithTimeout/...WithDeadline forms hold the mutex on return whether
// or not the condition became true.
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  FACET_NEXT(bool (*)(Mutex*, const Condition&, Duration),
             "_ZN" FACET_ABSL_NS "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Acquire scope(this, 0, cond);
  return real(this, scope.condition(cond), timeout);
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  FACET_NEXT(bool (*)(Mutex*, const Condition&, Time),
             "_ZN" FACET_ABSL_NS "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Acquire scope(this, 0, cond);
  return real(this, scope.condition(cond), deadline);
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  FACET_NEXT(
      bool (*)(Mutex*, const Condition&, Duration),
      "_ZN" FACET_ABSL_NS "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  Acquire scope(this, kRead, cond);
  return real(this, scope.condition(cond), timeout);
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  FACET_NEXT(
      bool (*)(Mutex*, const Condition&, Time),
      "_ZN" FACET_ABSL_NS "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  Acquire scope(this, kRead, cond);
  return real(this, scope.condition(cond), deadline);
}

void Mutex::Await(const Condition& cond) {
  FACET_NEXT(void (*)(Mutex*, const Condition&),
             "_ZN" FACET_ABSL_NS "5Mutex5AwaitERKNS0_9ConditionE");
  ReleaseWhileWaiting scope(this, cond);
  real(this, scope.condition(cond));
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  FACET_NEXT(bool (*)(Mutex*, const Condition&, Duration),
             "_ZN" FACET_ABSL_NS "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  ReleaseWhileWaiting scope(this, cond);
  return real(this, scope.condition(cond), timeout);
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  FACET_NEXT(bool (*)(Mutex*, const Condition&, Time),
             "_ZN" FACET_ABSL_NS "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  ReleaseWhileWaiting scope(this, cond);
  return real(this, scope.condition(cond), deadline);
}

void CondVar::Wait(Mutex* mu) {
  FACET_NEXT(void (*)(CondVar*, Mutex*), "_ZN" FACET_ABSL_NS "7CondVar4WaitEPNS0_5MutexE");
  ReleaseWhileWaiting scope(mu);
  real(this, mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  FACET_NEXT(bool (*)(CondVar*, Mutex*, Duration),
             "_ZN" FACET_ABSL_NS "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  ReleaseWhileWaiting scope(mu);
  return real(this, mu, timeout);
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  FACET_NEXT(bool (*)(CondVar*, Mutex*, Time),
             "_ZN" FACET_ABSL_NS "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  ReleaseWhileWaiting scope(mu);
  return real(this, mu, deadline);
}

// Notify happens before every wait that returns notified, and before every
// HasBeenNotified() that returns true: that one is inline (an acquire load of
// notified_yet_, which follows mutex_ in notification.h, compiled into the
// instrumented caller), so the release is also made on that field's address.
void Notification::Notify() {
  FACET_NEXT(void (*)(Notification*), "_ZN" FACET_ABSL_NS "12Notification6NotifyEv");
  const Signal scope;
  if (scope.outer()) {
    __tsan_release(this);
    __tsan_release(reinterpret_cast<char*>(this) + sizeof(Mutex));
  }
  real(this);
}

void Notification::WaitForNotification() const {
  FACET_NEXT(void (*)(const Notification*),
             "_ZNK" FACET_ABSL_NS "12Notification19WaitForNotificationEv");
  const Signal scope;
  real(this);
  if (scope.outer()) __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  FACET_NEXT(bool (*)(const Notification*, Duration),
             "_ZNK" FACET_ABSL_NS "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const Signal scope;
  const bool notified = real(this, timeout);
  if (notified && scope.outer()) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  FACET_NEXT(bool (*)(const Notification*, Time),
             "_ZNK" FACET_ABSL_NS "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const Signal scope;
  const bool notified = real(this, deadline);
  if (notified && scope.outer()) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
