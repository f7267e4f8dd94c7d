#include "sim/pipeline_schedule.h"

#include <algorithm>

#include "models/layer_model.h"
#include "models/result.h"

namespace clustersim::sim {
namespace {

// dualpipe.py's DualPipe.step, its eight steps as written; a device's "phase 0" is the
// direction its half of the pipeline feeds first (0 for the first half of the devices, 1 for
// the second), "phase 1" the other. F&B pairs (_forward_backward_chunk) run forward then
// backward. With zero bubble on, a backward defers its weight pass to a later
// _weight_chunk (first in, first out).
std::vector<PipelineOp> dualpipe_schedule(int stages, int stage, int m) {
  CS_ASSERT(stages % 2 == 0 && m % 2 == 0 && m >= 2 * stages,
            "DualPipe needs even stages and an even number of micro-batches >= 2 x stages");
  const int half_ranks = stages / 2;
  const int half_rank = std::min(stage, stages - 1 - stage);
  const int half_chunks = m / 2;
  const int dir[2] = {stage < half_ranks ? 0 : 1, stage < half_ranks ? 1 : 0};
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::vector<PipelineOp> ops;
  std::vector<PipelineOp> deferred;  // backwards whose weight pass is still to run
  size_t next_w = 0;
  auto F = [&](int phase, bool paired = false) {
    PipelineOp op{true, next_f[phase]++, dir[phase]};
    op.paired = paired;
    ops.push_back(op);
  };
  auto B = [&](int phase, bool zb, bool paired = false) {
    PipelineOp op{false, next_b[phase]++, dir[phase]};
    op.defers_weights = zb;
    op.paired = paired;
    ops.push_back(op);
    if (zb) deferred.push_back(op);
  };
  auto W = [&] {
    CS_ASSERT(next_w < deferred.size(), "a DualPipe weight pass without a deferred backward");
    PipelineOp op = deferred[next_w++];
    op.defers_weights = false;
    op.weights = true;
    ops.push_back(op);
  };
  for (int i = 0; i < (half_ranks - half_rank - 1) * 2; ++i) F(0);  // 1: nF0
  for (int i = 0; i < half_rank + 1; ++i) {                           // 2: nF0F1
    F(0);
    F(1);
  }
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {  // 3: nB1W1F1
    B(1, true);
    W();
    F(1);
  }
  const bool middle = half_rank == half_ranks - 1;
  for (int i = 0; i < half_chunks - stages + half_rank + 1; ++i) {  // 4: nF0B1F1B0
    // The middle ranks run their first F0 and B1 apart ("to further reduce bubble size").
    const bool apart = middle && i == 0;
    F(0, !apart);
    B(1, false, !apart);
    F(1, true);
    B(0, false, true);
  }
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {  // 5: nB1F1B0
    B(1, false);
    F(1, true);
    B(0, false, true);
  }
  bool zb = false;  // 6: nB1B0, the second half with zero bubble
  const int step6 = half_rank + 1;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && half_rank % 2 == 1) zb = true;
    B(1, zb);
    if (i == step6 / 2 && half_rank % 2 == 0) zb = true;
    B(0, zb);
  }
  for (int i = 0; i < half_ranks - half_rank - 1; ++i) {  // 7: nWB0
    W();
    B(0, true);
  }
  while (next_w < deferred.size()) W();  // 8: nW
  CS_ASSERT(next_f[0] == half_chunks && next_f[1] == half_chunks && next_b[0] == half_chunks &&
                next_b[1] == half_chunks,
            "DualPipe's steps cover every micro-batch once each way");
  return ops;
}

}  // namespace

std::vector<PipelineOp> stage_schedule(models::PipelineSchedule schedule, int stages, int stage,
                                       int micro_batches, int chunks) {
  CS_ASSERT(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1 && chunks >= 1,
            "pipeline schedule out of range");
  CS_ASSERT(schedule != models::PipelineSchedule::kInterleaved || micro_batches % stages == 0,
            "the interleaved schedule needs micro-batches divisible by the stages");
  const int m = micro_batches;
  if (schedule == models::PipelineSchedule::kDualPipe) return dualpipe_schedule(stages, stage, m);
  std::vector<PipelineOp> ops;
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
      ops[ops.size() - 2].paired = ops.back().paired = true;
    }
    while (b < m) ops.push_back({false, b++, 0});
    return ops;
  }
  // Interleaved: Megatron's order (models::interleaved_pass, interleaved_warmup_passes).
  const int total = m * chunks;
  auto unit = [&](int k, bool forward) {
    const models::InterleavedPass p = models::interleaved_pass(k, stages, chunks, forward);
    return PipelineOp{forward, p.micro_batch, p.chunk};
  };
  const int warmup = models::interleaved_warmup_passes(stages, stage, m, chunks);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back(unit(f, true));
  while (f < total) {
    ops.push_back(unit(f++, true));
    ops.push_back(unit(b++, false));
    ops[ops.size() - 2].paired = ops.back().paired = true;
  }
  while (b < total) ops.push_back(unit(b++, false));
  return ops;
}

}  // namespace clustersim::sim
