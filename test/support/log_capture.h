// Captures what spdlog's default logger writes, for tests of log lines.
#ifndef FACET_TEST_SUPPORT_LOG_CAPTURE_H_
#define FACET_TEST_SUPPORT_LOG_CAPTURE_H_

#include <memory>
#include <sstream>
#include <string>

#include "spdlog/spdlog.h"

namespace facet::testing {

// Sends spdlog's default logger to a string while it lives, then restores
// the previous one. Any thread may log meanwhile; text() reads the string
// without the logger's lock, so call it once the threads that log are done.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Returns everything logged so far, one line per record.
  std::string text() const;

 private:
  std::shared_ptr<std::ostringstream> log_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace facet::testing

#endif  // FACET_TEST_SUPPORT_LOG_CAPTURE_H_
