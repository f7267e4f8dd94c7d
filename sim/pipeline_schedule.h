// The order in which one pipeline stage runs its forward and backward passes in one optimizer
// step, per schedule: GPipe (all forwards, then all backwards; Huang et al. 2019), 1F1B
// (PipeDream-Flush: pp - s - 1 warm-up forwards, then one forward one backward; Narayanan et
// al. 2021 sec. 2.2) and Megatron's interleaved 1F1B over v model chunks per stage (Narayanan
// et al. 2021 sec. 2.2.2; megatron/core/pipeline_parallel/schedules.py). Pure functions.
#pragma once

#include <vector>

#include "models/scenario.h"

namespace clustersim::sim {

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this stage (0 .. v-1); always 0 without interleaving
};

// The ops of stage `stage` (0 .. stages-1) in execution order: every (micro-batch, chunk) once
// forward and once backward.
// REQUIRES: stages >= 1, micro_batches >= 1, chunks >= 1; for the interleaved schedule,
// micro_batches a multiple of stages (Megatron requires it; the scenario loader checks it).
std::vector<PipelineOp> stage_schedule(models::PipelineSchedule schedule, int stages, int stage,
                                       int micro_batches, int chunks);

}  // namespace clustersim::sim
