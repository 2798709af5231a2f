#include "test/support/log_capture.h"

#include "spdlog/sinks/ostream_sink.h"

namespace facet::testing {

LogCapture::LogCapture()
    : log_(std::make_shared<std::ostringstream>()),
      logger_(std::make_shared<spdlog::logger>(
          "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(*log_))),
      previous_(spdlog::default_logger()) {
  spdlog::set_default_logger(logger_);
}

LogCapture::~LogCapture() { spdlog::set_default_logger(previous_); }

std::string LogCapture::text() const {
  logger_->flush();
  return log_->str();
}

}  // namespace facet::testing
