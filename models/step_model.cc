#include "models/step_model.h"

#include <algorithm>
#include <cmath>

#include "models/units.h"

namespace clustersim::models {
namespace {

// Forward and backward of one micro-batch on one stage, seconds.
struct StageTime {
  double forward_s = 0;
  double backward_s = 0;           // including recomputation
  double attention_forward_s = 0;  // the part ring attention's K/V exchange can hide behind
  double attention_backward_s = 0;
};

// One transformer layer's kernels on one GPU for a micro-batch of `tokens` (TP-local shapes).
struct LayerTime {
  double gemm_forward_s = 0;  // backward runs two GEMMs of each shape: 2x
  double attention_forward_s = 0;
  double attention_backward_s = 0;
  double elementwise_forward_s = 0;  // backward moves about twice the bytes
};

LayerTime layer_time(const GpuSpec& gpu, const WorkloadConfig& w, const ComputeParams& cp) {
  const ModelSpec& m = w.model;
  const auto& par = w.parallelism;
  const double t = par.tp;
  const double h = m.hidden;
  const double head_dim = h / m.heads;
  const double kv_dim = m.kv_heads * head_dim;
  const double tokens = double(w.seq_len) / par.cp * w.micro_batch;
  const double ffn_out = (m.gated_ffn ? 2.0 : 1.0) * m.ffn_hidden;
  LayerTime out;
  for (const GemmShape& g : {GemmShape{tokens, (h + 2 * kv_dim) / t, h},  // QKV
                             GemmShape{tokens, h, h / t},                 // attention output
                             GemmShape{tokens, ffn_out / t, h},           // FFN up (+ gate)
                             GemmShape{tokens, h, m.ffn_hidden / t}}) {   // FFN down
    out.gemm_forward_s += gemm_time(gpu, w.precision, g, cp).time_s;
  }
  // Ring attention runs cp chunks of s/cp queries against s/cp keys (load-balanced causal).
  AttentionShape a;
  a.batch = w.micro_batch;
  a.heads = m.heads / t;
  a.kv_heads = std::max(1.0, m.kv_heads / t);
  a.head_dim = head_dim;
  a.q_tokens = double(w.seq_len) / par.cp;
  a.kv_tokens = a.q_tokens;
  out.attention_forward_s = par.cp * attention_time(gpu, w.precision, a, false, cp).time_s;
  out.attention_backward_s = par.cp * attention_time(gpu, w.precision, a, true, cp).time_s;
  // Memory-bound kernels per token: two norms (read + write h) and two residual adds (read 2h,
  // write h) on the sequence-parallel shard, the FFN activation (read the up/gate outputs,
  // write f) and rotary embedding of Q and K (read + write) on the TP shard.
  const double sp = par.sp ? t : 1;
  const double elements =
      (2 * 2 * h + 2 * 3 * h) / sp + (ffn_out + m.ffn_hidden) / t + 2 * (h + kv_dim) / t;
  const double bytes = elements * tokens * working_bytes(w.precision);
  out.elementwise_forward_s = memory_bound_time(gpu, bytes, cp).time_s;
  return out;
}

StageTime stage_time(const GpuSpec& gpu, const WorkloadConfig& w, const ComputeParams& cp) {
  const LayerTime l = layer_time(gpu, w, cp);
  const double layers = layers_per_stage(w);
  const Recompute rc = w.parallelism.recompute;
  const double layer_fwd = l.gemm_forward_s + l.attention_forward_s + l.elementwise_forward_s;
  const double layer_bwd =
      2 * l.gemm_forward_s + l.attention_backward_s + 2 * l.elementwise_forward_s;
  const double recompute = rc == Recompute::kFull        ? layer_fwd
                           : rc == Recompute::kSelective ? l.attention_forward_s
                                                         : 0;
  // The last stage also runs the output head and the loss (fp32 logits: written, read by the
  // softmax, gradient written).
  const double tokens = double(w.seq_len) / w.parallelism.cp * w.micro_batch;
  const double vocab_local = double(w.model.vocab) / w.parallelism.tp;
  const double head_fwd =
      gemm_time(gpu, w.precision, {tokens, vocab_local, double(w.model.hidden)}, cp).time_s +
      memory_bound_time(gpu, 3 * 4 * tokens * vocab_local, cp).time_s;
  StageTime s;
  s.forward_s = layers * layer_fwd + head_fwd;
  s.backward_s = layers * (layer_bwd + recompute) + 2 * head_fwd;
  s.attention_forward_s = layers * l.attention_forward_s;
  s.attention_backward_s = layers * l.attention_backward_s;
  return s;
}

DimComm& dim_of(StepBreakdown& b, ParallelDim d) {
  switch (d) {
    case ParallelDim::kTp:
      return b.tp;
    case ParallelDim::kPp:
      return b.pp;
    case ParallelDim::kDp:
      return b.dp;
    case ParallelDim::kCp:
      return b.cp;
  }
  return b.tp;
}

// Sum over the step's collectives of one dimension and phase (seconds per micro-batch for
// forward/backward, per step for kStep).
double phase_seconds(const std::vector<TimedComm>& comms, ParallelDim d, CommPhase p) {
  double s = 0;
  for (const auto& c : comms) {
    if (c.call.dim == d && c.call.phase == p) s += c.estimate.time_s * c.call.count;
  }
  return s;
}

// The collective of this dimension, phase and op, or nullptr.
const TimedComm* find_comm(const std::vector<TimedComm>& comms, ParallelDim d, CommPhase p,
                           CollectiveOp op) {
  for (const auto& c : comms) {
    if (c.call.dim == d && c.call.phase == p && c.call.op == op) return &c;
  }
  return nullptr;
}

double optimizer_seconds(const GpuSpec& gpu, const WorkloadConfig& w, const MemoryBreakdown& mem,
                         const StepParams& params) {
  const auto& par = w.parallelism;
  const double shard = par.zero >= 1 ? double(par.dp) * par.cp : 1;
  const double per_param = mixed_precision(w.precision) ? params.optimizer_bytes_per_param
                                                        : params.optimizer_bytes_per_param_fp32;
  return memory_bound_time(gpu, mem.parameters / shard * per_param, params.compute).time_s;
}

}  // namespace

StepParams default_step_params(const ClusterConfig& cluster) {
  StepParams p;
  p.compute = default_compute_params(cluster.node.gpu);
  return p;
}

Result<StepResult> predict_step(const Scenario& scenario, const StepParams& params) {
  const ClusterConfig& cluster = scenario.cluster;
  const WorkloadConfig& w = scenario.workload;
  const auto& par = w.parallelism;
  const GpuSpec& gpu = cluster.node.gpu;
  StepResult r;
  r.gpus = par.gpus();
  r.micro_batches = w.micro_batches_per_step();
  if (r.micro_batches < 1) {
    return Error{scenario.where("workload.global_batch") + ": global_batch " +
                 std::to_string(w.global_batch) + " gives no micro-batch for dp " +
                 std::to_string(par.dp) + " x micro_batch " + std::to_string(w.micro_batch)};
  }
  const double m = r.micro_batches;

  // 1. Memory and compute of the busiest stage per micro-batch.
  r.memory = memory_per_gpu(w, params.memory);
  r.memory_capacity_bytes = gpu.hbm_bytes;
  r.fits = r.memory.total() <= r.memory_capacity_bytes;
  const StageTime st = stage_time(gpu, w, params.compute);
  r.forward_s = st.forward_s;
  r.backward_s = st.backward_s;

  // 2. Every collective, timed on its group.
  for (const CommCall& call : communication_per_step(w, params.comm)) {
    auto topo = parallel_group_topology(cluster, call.group_size, call.group_stride);
    if (!topo) return Error{std::string(to_string(call.dim)) + " group: " + topo.message()};
    auto est = estimate_collective(
        *topo, {call.op, call.size_bytes, CollectiveAlgorithm::kAuto, CollectiveProtocol::kAuto},
        params.collective);
    if (!est)
      return Error{std::string(to_string(call.dim)) + " " + call.what + ": " + est.message()};
    const double per_step = call.count * (call.phase == CommPhase::kStep ? 1 : m);
    r.comms.push_back({call, *est, per_step});
  }
  StepBreakdown& b = r.breakdown;
  for (const auto& c : r.comms) {
    DimComm& d = dim_of(b, c.call.dim);
    d.total_s += c.total_s();
    d.bytes_per_step += c.call.size_bytes * c.calls_per_step;
  }

  // 3. What each dimension exposes.
  using D = ParallelDim;
  using P = CommPhase;
  // TP/SP sits between the GEMMs of every layer.
  const double tp_mb =
      phase_seconds(r.comms, D::kTp, P::kForward) + phase_seconds(r.comms, D::kTp, P::kBackward);
  const double tp_exposed_mb = tp_mb * (1 - params.tp_overlap_fraction);
  // Ring attention overlaps each K/V step with the attention of the chunk in hand.
  const double cp_exposed_mb =
      std::max(0.0, phase_seconds(r.comms, D::kCp, P::kForward) - st.attention_forward_s) +
      std::max(0.0, phase_seconds(r.comms, D::kCp, P::kBackward) - st.attention_backward_s);
  b.tp.exposed_s = m * tp_exposed_mb;
  b.cp.exposed_s = m * cp_exposed_mb;

  // Pipeline: each micro-batch's activation and gradient cross a stage boundary on the critical
  // path (Megatron's batched send/recv pairs are waited on before the next compute).
  b.pp.exposed_s = b.pp.total_s;

  // DP. ZeRO-3 prefetches each layer's gather behind the previous layer's compute and
  // reduce-scatters behind the backward; what does not fit behind a micro-batch is exposed.
  const double dp_fwd_mb = phase_seconds(r.comms, D::kDp, P::kForward);
  const double dp_bwd_mb = phase_seconds(r.comms, D::kDp, P::kBackward);
  double dp_exposed =
      m * (std::max(0.0, dp_fwd_mb - st.forward_s) + std::max(0.0, dp_bwd_mb - st.backward_s));
  // Once-per-step gradient reduction overlaps the last micro-batch's backward, except its last
  // bucket; ZeRO-1/2's parameter all-gather overlaps the next step's first forward.
  for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter}) {
    const TimedComm* c = find_comm(r.comms, D::kDp, P::kStep, op);
    if (c == nullptr) continue;
    const double bucket_fraction =
        std::min(1.0, params.dp_bucket_params / std::max(1.0, r.memory.parameters));
    dp_exposed += std::max(c->total_s() - st.backward_s, c->total_s() * bucket_fraction);
  }
  if (const TimedComm* ag = find_comm(r.comms, D::kDp, P::kStep, CollectiveOp::kAllGather)) {
    dp_exposed += std::max(0.0, ag->total_s() - st.forward_s);
  }
  b.dp.exposed_s = std::min(dp_exposed, b.dp.total_s);

  // 4. Bubble: (pp - 1) / v micro-batch slots of idle per stage (Narayanan et al. 2021).
  const double v = par.pp_schedule == PipelineSchedule::kInterleaved ? par.virtual_stages : 1;
  const double mb_s = st.forward_s + st.backward_s + tp_exposed_mb + cp_exposed_mb;
  b.bubble_s = (par.pp - 1) / v * mb_s;
  b.compute_s = m * (st.forward_s + st.backward_s);

  // 5. The optimizer over the local shard.
  b.optimizer_s = optimizer_seconds(gpu, w, r.memory, params);

  r.step_time_s = b.compute_s + b.tp.exposed_s + b.cp.exposed_s + b.pp.exposed_s + b.dp.exposed_s +
                  b.bubble_s + b.optimizer_s;

  // 6. Throughput and utilisation.
  const FlopsPerToken f = flops_per_token(w.model, w.seq_len, /*causal=*/true);
  r.tokens_per_step = w.tokens_per_step();
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  r.model_flops_per_step = r.tokens_per_step * f.training();
  r.hardware_flops_per_step = r.tokens_per_step * hardware_flops_per_token(f, par.recompute);
  r.model_tflops_per_gpu = r.model_flops_per_step / r.gpus / r.step_time_s / 1e12;
  r.hardware_tflops_per_gpu = r.hardware_flops_per_step / r.gpus / r.step_time_s / 1e12;
  r.peak_flops = gpu.peak_flops(w.precision);
  r.mfu = r.peak_flops > 0 ? r.model_tflops_per_gpu * 1e12 / r.peak_flops : 0;
  return r;
}

std::vector<std::string> memory_advice(const WorkloadConfig& workload,
                                       const MemoryBreakdown& memory, double capacity_bytes,
                                       const MemoryParams& params) {
  std::vector<std::string> out;
  if (memory.total() <= capacity_bytes) return out;
  struct Option {
    std::string change;
    double bytes;
  };
  std::vector<Option> options;
  auto consider = [&](std::string change, WorkloadConfig w) {
    const double bytes = memory_per_gpu(w, params).total();
    if (bytes < memory.total()) options.push_back({std::move(change), bytes});
  };
  const auto& par = workload.parallelism;
  const int shard = par.dp * par.cp;
  if (par.zero < 3 && shard > 1) {
    WorkloadConfig w = workload;
    w.parallelism.zero = 3;
    consider(
        "zero: 3 (shard weights, gradients and optimizer over " + std::to_string(shard) + " GPUs)",
        w);
  }
  if (par.recompute != Recompute::kFull) {
    WorkloadConfig w = workload;
    w.parallelism.recompute = Recompute::kFull;
    consider("recompute: full (keep only each layer's input)", w);
  }
  if (workload.micro_batch > 1) {
    WorkloadConfig w = workload;
    w.micro_batch = 1;
    consider("micro_batch: 1", w);
  }
  // Trade data parallelism for model parallelism at the same GPU count.
  if (par.dp % 2 == 0) {
    using Dim = int ParallelismConfig::*;
    const std::pair<const char*, Dim> kDims[] = {{"tp", &ParallelismConfig::tp},
                                                 {"pp", &ParallelismConfig::pp},
                                                 {"cp", &ParallelismConfig::cp}};
    for (const auto& [name, dim] : kDims) {
      // Context parallelism splits each sequence into 2 x cp chunks.
      if (dim == &ParallelismConfig::cp && workload.seq_len % (4 * par.cp) != 0) continue;
      WorkloadConfig w = workload;
      w.parallelism.*dim *= 2;
      w.parallelism.dp /= 2;
      consider(std::string(name) + ": " + std::to_string(w.parallelism.*dim) +
                   ", dp: " + std::to_string(w.parallelism.dp),
               w);
    }
  }
  std::sort(options.begin(), options.end(),
            [](const Option& a, const Option& b) { return a.bytes < b.bytes; });
  for (const auto& o : options) {
    out.push_back(o.change + " -> " + format_size(o.bytes) + " per GPU" +
                  (o.bytes <= capacity_bytes ? " (fits)" : " (still too big)"));
  }
  return out;
}

std::vector<std::string> step_advice(const Scenario& scenario, const StepResult& step,
                                     double threshold) {
  const auto& par = scenario.workload.parallelism;
  const StepBreakdown& b = step.breakdown;
  const int gpn = scenario.cluster.node.gpus_per_node;
  struct Loss {
    double seconds;
    std::string text;
  };
  std::vector<Loss> losses;
  auto share = [&](double s) {
    return format_significant(100 * s / step.step_time_s, 3) + "% of the step";
  };
  if (b.dp.exposed_s > 0) {
    std::string fix = par.zero == 3 && step.micro_batches > 1
                          ? "ZeRO-3 gathers every parameter again for each of the " +
                                std::to_string(step.micro_batches) +
                                " micro-batches: zero 1 or 2 gathers once per step, a larger "
                                "micro_batch means fewer gathers"
                          : "gradient sync outlasts the backward it overlaps: more NIC bandwidth "
                            "per node, or a larger global_batch per step";
    losses.push_back({b.dp.exposed_s, "DP communication is " + share(b.dp.exposed_s) + ": " + fix});
  }
  if (b.tp.exposed_s > 0) {
    std::string fix = par.tp > gpn
                          ? "tp " + std::to_string(par.tp) +
                                " spans nodes: keep tp <= " + std::to_string(gpn) + " GPUs per node"
                          : "its collectives sit between GEMMs: overlap them with the "
                            "GEMMs (Transformer Engine) or use a smaller tp";
    losses.push_back({b.tp.exposed_s, "TP communication is " + share(b.tp.exposed_s) + ": " + fix});
  }
  if (b.bubble_s > 0) {
    losses.push_back({b.bubble_s, "the pipeline bubble is " + share(b.bubble_s) +
                                      ": more micro-batches per step (global_batch) or the "
                                      "interleaved schedule with more virtual_stages"});
  }
  if (b.pp.exposed_s > 0) {
    losses.push_back({b.pp.exposed_s, "pipeline sends are " + share(b.pp.exposed_s) +
                                          ": fewer stages, or stages placed closer together"});
  }
  if (b.cp.exposed_s > 0) {
    losses.push_back({b.cp.exposed_s, "ring-attention K/V exchange is " + share(b.cp.exposed_s) +
                                          ", not hidden by attention: a smaller cp"});
  }
  std::sort(losses.begin(), losses.end(),
            [](const Loss& x, const Loss& y) { return x.seconds > y.seconds; });
  std::vector<std::string> out;
  for (const auto& l : losses) {
    if (l.seconds > threshold * step.step_time_s) out.push_back(l.text);
  }
  return out;
}

}  // namespace clustersim::models
