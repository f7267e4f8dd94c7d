#include "sim/pipeline_schedule.h"

#include <algorithm>

#include "models/result.h"

namespace clustersim::sim {

std::vector<PipelineOp> stage_schedule(models::PipelineSchedule schedule, int stages, int stage,
                                       int micro_batches, int chunks) {
  CS_ASSERT(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1 && chunks >= 1,
            "pipeline schedule out of range");
  CS_ASSERT(schedule != models::PipelineSchedule::kInterleaved || micro_batches % stages == 0,
            "the interleaved schedule needs micro-batches divisible by the stages");
  std::vector<PipelineOp> ops;
  const int m = micro_batches;
  if (schedule == models::PipelineSchedule::kGpipe) {
    for (int mb = 0; mb < m; ++mb)
      for (int c = 0; c < chunks; ++c) ops.push_back({true, mb, c});
    for (int mb = 0; mb < m; ++mb)
      for (int c = chunks - 1; c >= 0; --c) ops.push_back({false, mb, c});
    return ops;
  }
  if (schedule == models::PipelineSchedule::k1F1B || chunks == 1) {
    const int warmup = std::min(stages - stage - 1, m);
    int f = 0, b = 0;
    for (; f < warmup; ++f) ops.push_back({true, f, 0});
    while (f < m) {
      ops.push_back({true, f++, 0});
      ops.push_back({false, b++, 0});
    }
    while (b < m) ops.push_back({false, b++, 0});
    return ops;
  }
  // Interleaved: unit k of the m x v units maps to a chunk and a micro-batch (Megatron's
  // get_model_chunk_id / get_microbatch_id_in_model_chunk).
  const int total = m * chunks;
  const int group = stages * chunks;
  auto unit = [&](int k, bool forward) {
    int chunk = (k % group) / stages;
    if (!forward) chunk = chunks - 1 - chunk;
    const int mb = (k / group) * stages + k % stages;
    return PipelineOp{forward, mb, chunk};
  };
  const int warmup =
      m == stages ? total : std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back(unit(f, true));
  while (f < total) {
    ops.push_back(unit(f++, true));
    ops.push_back(unit(b++, false));
  }
  while (b < total) ops.push_back(unit(b++, false));
  return ops;
}

}  // namespace clustersim::sim
