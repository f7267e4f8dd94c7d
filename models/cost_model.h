// What a training job costs and how much of the paid time does useful work: dollars per step,
// per million tokens and per run from the GPU-hour price; failures (cluster MTBF = GPU MTBF /
// GPUs), checkpoints (size / storage write bandwidth) at the Young/Daly interval, lost work and
// restarts -> goodput and the effective run time and cost. Units: seconds, bytes, USD.
// Pure functions of a scenario and a step prediction.
#pragma once

#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::models {

struct CostParams {
  // A resumable checkpoint per parameter: 16-bit weights (2), fp32 master weights (4) and the
  // two fp32 Adam moments (8), as Megatron-LM and torch.distributed.checkpoint save them.
  double checkpoint_bytes_per_param = 14;
  // Restart after a failure when the scenario gives none: requeue, process start, NCCL
  // initialisation and checkpoint load. 10 minutes is consistent with Llama 3's report of >90%
  // effective training time through 419 unexpected interruptions in 54 days on 16,384 H100
  // (Llama Team 2024, sec. 3.3.4): an assumption, not a measurement.
  double default_restart_s = 600;
};

struct RunCost {
  // Price (scenario cost.gpu_hour). Zero and priced = false when not given.
  bool priced = false;
  double gpu_hour_usd = 0;
  double gpu_hours_per_step = 0;
  double usd_per_step = 0;
  double usd_per_million_tokens = 0;

  // The whole run (scenario workload.train_tokens); has_run = false when not given.
  bool has_run = false;
  double steps = 0;
  double run_time_s = 0;  // steps x step time, no failures
  double gpu_hours = 0;   // without failures
  double run_usd_no_failures = 0;

  // Reliability (scenario reliability.gpu_mtbf); has_reliability = false when not given, and
  // then goodput = 1 and the effective figures equal the ideal ones.
  bool has_reliability = false;
  double cluster_mtbf_s = 0;  // GPU MTBF / GPUs
  double checkpoint_bytes = 0;
  double checkpoint_write_s = 0;     // checkpoint_bytes / storage write bandwidth (0: not given)
  double checkpoint_interval_s = 0;  // the scenario's, or Young/Daly sqrt(2 C MTBF)
  bool interval_derived = false;
  double restart_s = 0;
  // Useful fraction of wall time: tau / (tau + C) x (1 - ((tau + C) / 2 + R) / MTBF), at least 0
  // (Young 1974, Daly 2006 first order: half an interval lost per failure, plus the restart).
  double goodput = 1;
  double effective_run_time_s = 0;  // run_time_s / goodput
  double run_usd = 0;               // what the run costs with failures (= no-failure figure
                                    // without reliability data)
};

// REQUIRES: step.step_time_s > 0.
RunCost estimate_run_cost(const Scenario& scenario, const StepResult& step,
                          const CostParams& params = {});

}  // namespace clustersim::models
