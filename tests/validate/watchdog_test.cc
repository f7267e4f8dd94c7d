#include "validate/watchdog.h"

#include <doctest/doctest.h>

#include <chrono>

using namespace clustersim::validate;

TEST_SUITE("validate") {
  TEST_CASE("watchdog: done after a few polls, no abort") {
    int polls = 0, aborts = 0;
    auto s = wait_with_watchdog(
        [&] { return PollResult{++polls < 3 ? PollState::kPending : PollState::kDone, ""}; },
        [&] { ++aborts; }, 5.0, "all_reduce 1 KiB out-of-place");
    CHECK(s.ok());
    CHECK(polls == 3);
    CHECK(aborts == 0);
  }

  TEST_CASE("watchdog: a hang becomes an error naming the collective, and aborts once") {
    int aborts = 0;
    const auto start = std::chrono::steady_clock::now();
    auto s = wait_with_watchdog([] { return PollResult{}; }, [&] { ++aborts; }, 0.05,
                                "all_gather 8 GiB in-place", 0.001);
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("all_gather 8 GiB in-place: did not finish within 50 ms") == 0);
    CHECK(s.message().find("communicator aborted") != std::string::npos);
    CHECK(aborts == 1);
    CHECK(waited >= 0.05);
    CHECK(waited < 2.0);
  }

  TEST_CASE("watchdog: an asynchronous error aborts at once") {
    int aborts = 0;
    auto s = wait_with_watchdog(
        [] { return PollResult{PollState::kFailed, "unhandled system error"}; },
        [&] { ++aborts; }, 100, "broadcast 4 MiB out-of-place");
    REQUIRE_FALSE(s.ok());
    CHECK(s.message() ==
          "broadcast 4 MiB out-of-place: failed: unhandled system error; communicator aborted");
    CHECK(aborts == 1);
  }
}
