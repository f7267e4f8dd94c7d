#include "validate/watchdog.h"

#include <chrono>
#include <thread>

#include "models/units.h"

namespace clustersim::validate {

models::Status wait_with_watchdog(const std::function<PollResult()>& poll,
                                  const std::function<void()>& abort, double timeout_s,
                                  const std::string& what, double poll_interval_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    PollResult r = poll();
    if (r.state == PollState::kDone) return models::Status::Ok();
    if (r.state == PollState::kFailed) {
      if (abort) abort();
      return models::Error{what + ": failed: " + r.message + "; communicator aborted"};
    }
    const double waited_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (timeout_s > 0 && waited_s > timeout_s) {
      if (abort) abort();
      return models::Error{what + ": did not finish within " + models::format_time(timeout_s) +
                           " (watchdog); communicator aborted"};
    }
    if (poll_interval_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_interval_s));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace clustersim::validate
