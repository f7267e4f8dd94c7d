// The watchdog that turns a hung collective into an error instead of a hang: the caller enqueues
// work, then waits here while `poll` reports pending; past `timeout_s` the watchdog calls `abort`
// (which aborts the NCCL communicators, so the GPUs stop waiting on each other) and returns an
// error naming what hung. This is nccl-tests' testStreamSynchronize loop (cudaStreamQuery plus
// ncclCommGetAsyncError, ncclCommAbort on timeout), kept free of CUDA so it is unit-tested.
#pragma once

#include <functional>
#include <string>

#include "models/result.h"

namespace clustersim::validate {

enum class PollState { kPending, kDone, kFailed };

struct PollResult {
  PollState state = PollState::kPending;
  std::string message;  // why, for kFailed (e.g. NCCL's asynchronous error)
};

// Calls `poll` until it reports done or failed, or until timeout_s passes (wall clock). On
// failure or timeout calls `abort` once and returns an error "<what>: ..." ("all_reduce 8 GiB
// out-of-place: did not finish within 60 s; NCCL communicator aborted"). timeout_s <= 0 waits
// forever. Sleeps poll_interval_s between polls that report pending (0: just yields).
models::Status wait_with_watchdog(const std::function<PollResult()>& poll,
                                  const std::function<void()>& abort, double timeout_s,
                                  const std::string& what, double poll_interval_s = 0.0001);

}  // namespace clustersim::validate
