// The order in which one pipeline stage runs its forward and backward passes in one optimizer
// step, per schedule: GPipe (all forwards, then all backwards; Huang et al. 2019), 1F1B
// (PipeDream-Flush: pp - s - 1 warm-up forwards, then one forward one backward; Narayanan et
// al. 2021 sec. 2.2), Megatron's interleaved 1F1B over v model chunks per stage (Narayanan
// et al. 2021 sec. 2.2.2; megatron/core/pipeline_parallel/schedules.py) and DeepSeek-V3's
// DualPipe (deepseek-ai/DualPipe, dualpipe.py DualPipe.step: micro-batches fed from both ends,
// each device holding its stage and the mirrored one, zero-bubble weight passes in the ramps).
// Pure functions.
#pragma once

#include <vector>

#include "models/scenario.h"

namespace clustersim::sim {

struct PipelineOp {
  bool forward = true;
  int micro_batch = 0;
  // Model chunk on this stage (0 .. v-1); always 0 without interleaving. DualPipe: the
  // direction, 0 for the micro-batches that enter at device 0 (this device runs model stage
  // `stage` for them), 1 for those that enter at the last device (model stage stages-1-stage).
  int chunk = 0;
  // DualPipe's zero-bubble split: a backward that leaves its weight gradients for later
  // (input gradients only), and the later weight pass (of the oldest such backward).
  bool defers_weights = false;
  bool weights = false;
  // Run as one of a forward-backward pair, each one's communication beside the other's compute
  // where the framework overlaps them (framework.ep_comm_overlap): the steady state's forward and
  // backward under 1F1B and interleaved 1F1B (Megatron-Core's combined 1F1B EP overlap),
  // DualPipe's F&B chunks (_forward_backward_chunk). Warm-up forwards, cool-down backwards,
  // GPipe's passes, DualPipe's ramps and its middle ranks' first main-step pair run alone.
  // models::unpaired_passes counts the same.
  bool paired = false;
};

// The ops of stage `stage` (0 .. stages-1) in execution order: every (micro-batch, chunk) once
// forward and once backward.
// REQUIRES: stages >= 1, micro_batches >= 1, chunks >= 1; for the interleaved schedule,
// micro_batches a multiple of stages (Megatron requires it; the scenario loader checks it);
// for DualPipe an even number of stages and an even number of micro-batches, at least 2 x
// stages (dualpipe.py asserts both), half of them in each direction.
std::vector<PipelineOp> stage_schedule(models::PipelineSchedule schedule, int stages, int stage,
                                       int micro_batches, int chunks);

}  // namespace clustersim::sim
