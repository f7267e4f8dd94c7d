#include "models/step_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "models/layer_model.h"
#include "models/units.h"

namespace clustersim::models {
DimComm& StepBreakdown::of(ParallelDim d) {
  switch (d) {
    case ParallelDim::kTp:
      return tp;
    case ParallelDim::kPp:
      return pp;
    case ParallelDim::kDp:
      return dp;
    case ParallelDim::kCp:
      return cp;
    case ParallelDim::kEp:
      return ep;
  }
  return tp;
}

namespace {

// Sum over the step's collectives of one dimension and phase (seconds per micro-batch for
// forward/backward, per step for kStep).
double phase_seconds(const std::vector<TimedComm>& comms, ParallelDim d, CommPhase p) {
  double s = 0;
  for (const auto& c : comms) {
    if (c.call.dim == d && c.call.phase == p) s += c.estimate.time_s * c.call.count;
  }
  return s;
}

// The step's time in the once-per-step collectives of this dimension and op (a MoE model
// reduces its dense weights and its experts in two groups, one after the other).
double per_step_seconds(const std::vector<TimedComm>& comms, ParallelDim d, CollectiveOp op) {
  double s = 0;
  for (const auto& c : comms) {
    if (c.call.dim == d && c.call.phase == CommPhase::kStep && c.call.op == op) s += c.total_s();
  }
  return s;
}

// Two stages' compute per micro-batch, averaged: a DualPipe device runs each for half the
// micro-batches (device_compute).
StageCompute mean_of(const StageCompute& a, const StageCompute& z) {
  StageCompute d = a;
  d.layers = (a.layers + z.layers) / 2;
  d.forward_s = (a.forward_s + z.forward_s) / 2;
  d.backward_s = (a.backward_s + z.backward_s) / 2;
  d.gemm_forward_s = (a.gemm_forward_s + z.gemm_forward_s) / 2;
  d.gemm_backward_s = (a.gemm_backward_s + z.gemm_backward_s) / 2;
  d.attention_forward_s = (a.attention_forward_s + z.attention_forward_s) / 2;
  d.attention_backward_s = (a.attention_backward_s + z.attention_backward_s) / 2;
  d.tensor_s = (a.tensor_s + z.tensor_s) / 2;
  d.host_wait_s = (a.host_wait_s + z.host_wait_s) / 2;
  d.amax_reduction_s = (a.amax_reduction_s + z.amax_reduction_s) / 2;
  d.tp_gemms = a.tp_gemms.scaled(0.5);
  d.tp_gemms += z.tp_gemms.scaled(0.5);
  return d;
}

double optimizer_seconds(const GpuSpec& gpu, const WorkloadConfig& w, const MemoryBreakdown& mem,
                         const StepParams& params) {
  const auto& par = w.parallelism;
  const bool sharded = par.zero >= 1;
  const double local = mem.parameters / (sharded ? double(par.dp) * par.cp : 1) +
                       mem.expert_parameters / (sharded ? expert_data_parallel(w) : 1);
  const bool no_master = updates_16bit_parameters(w);
  const double per_param =
      (!mixed_precision(w.precision)       ? params.optimizer_bytes_per_param_fp32
       : no_master                         ? params.optimizer_bytes_per_param_no_master
       : w.precision == Precision::kFp16 ? params.optimizer_bytes_per_param_fp16
       : w.framework.param_remainders    ? params.optimizer_bytes_per_param_remainders
                                         : params.optimizer_bytes_per_param) +
      (w.framework.foreach_optimizer
           // The foreach passes' bytes are fp32 state's; 16-bit moments move 2 of each 4.
           ? params.foreach_optimizer_extra_bytes_per_param *
                 (no_master ? working_bytes(w.precision) / 4.0 : 1)
           : 0);
  return memory_bound_time(gpu, local * per_param, params.compute).time_s;
}

// The share of `call`'s calls that are a column-parallel linear's input-gradient reduction in
// the backward (reduce-scatter with SP, all-reduce without): under full recomputation half of
// the backward's reductions are the recomputed forward's.
double input_gradient_reduction_share(const WorkloadConfig& w, const CommCall& call) {
  if (call.dim != ParallelDim::kTp || call.phase != CommPhase::kBackward || call.regather) {
    return 0;
  }
  const CollectiveOp reduction = w.parallelism.sp ? CollectiveOp::kReduceScatter
                                                  : CollectiveOp::kAllReduce;
  if (call.op != reduction) return 0;
  return w.parallelism.recompute == Recompute::kFull ? 0.5 : 1.0;
}

}  // namespace

double tp_wgrad_overlapped_share(const WorkloadConfig& w, const CommCall& call) {
  if (!w.framework.tp_wgrad_overlap || w.framework.tp_comm_overlap) return 0;
  if (call.dim == ParallelDim::kTp && call.phase == CommPhase::kBackward && call.regather) {
    return 1;  // beside the data-gradient GEMM, every backward
  }
  return input_gradient_reduction_share(w, call);
}

double tp_overlap_exposed_share(const WorkloadConfig& w, const CommCall& call) {
  if (!w.framework.tp_comm_overlap || w.framework.tp_overlap_input_gradients) return 0;
  return input_gradient_reduction_share(w, call);
}

TpCallTimes tp_call_times(const std::vector<TimedComm>& comms) {
  TpCallTimes t;
  for (const TimedComm& c : comms) {
    if (c.call.dim != ParallelDim::kTp) continue;
    const bool gather = c.call.op == CollectiveOp::kAllGather;
    const double s = c.estimate.time_s;
    if (c.call.phase == CommPhase::kForward) {
      (gather ? t.gather : t.reduce) = s;
    } else if (c.call.regather) {
      t.regather = s;
    } else {
      (gather ? t.grad_gather : t.grad_reduce) = s;
    }
  }
  return t;
}

double tp_overlap_cover_s(const WorkloadConfig& w, const TpGemms& gemms, const TpCallTimes& c,
                          bool forward) {
  const FrameworkConfig& fw = w.framework;
  const bool whole = fw.tp_comm_overlap;  // every collective, not only the column linears'
  if (!whole && !fw.tp_wgrad_overlap) return 0;
  if (forward && !whole) return 0;
  const bool fused_grad_reduce = whole ? fw.tp_overlap_input_gradients : true;
  double cover = 0;
  for (const TpBlockGemms* b : {&gemms.attention, &gemms.mlp}) {
    const double n = b->blocks;
    const double forward_cover = std::min(n * c.gather, b->gathered_forward_s) +
                                 std::min(n * c.reduce, b->reduced_forward_s);
    if (forward) {
      cover += forward_cover;
      continue;
    }
    const double wgrad = b->gathered_backward_s - b->gathered_dgrad_s;
    cover += std::min(n * c.regather, b->gathered_dgrad_s) +
             (fused_grad_reduce ? std::min(n * c.grad_reduce, wgrad) : 0);
    if (whole) {
      cover += std::min(n * c.grad_gather, b->reduced_dgrad_s);
      if (w.parallelism.recompute == Recompute::kFull) cover += forward_cover;
    }
  }
  return cover;
}

double overlap_interference_s(double hidden_comm_s, const StepParams& params,
                              double host_wait_s) {
  return std::max(0.0, hidden_comm_s - host_wait_s) * params.overlap_compute_slowdown;
}

double grad_bucket_params(const WorkloadConfig& w, const StepParams& params) {
  if (w.framework.grad_bucket_params > 0) return w.framework.grad_bucket_params;
  // Megatron-Core's default grows with the group (StepParams::dp_bucket_params_per_rank).
  return std::max(params.dp_bucket_params, params.dp_bucket_params_per_rank *
                                               double(w.parallelism.dp) * w.parallelism.cp);
}

namespace {
// One rank's weight tensors of a model chunk of `layers` layers (`moe` of them mixture-of-experts
// layers, last), in the order the model creates them: per layer the attention's norm and input
// projections (Transformer Engine's LayerNormLinear), its output projection, the MLP's norm,
// its up and down projections; a MoE layer's router and shared experts (dense) or its local
// experts' up and down projections (experts: TE's GroupedLinear, a tensor per expert).
void append_layer_tensors(const WorkloadConfig& w, const ParameterCount& pc, double layers,
                          double moe, bool experts, std::vector<double>* out) {
  const ModelSpec& m = w.model;
  const auto& par = w.parallelism;
  const double h = m.hidden, norm = pc.norms_per_layer / 2;
  const double attn_out = m.heads * m.v_head_dim() * h / par.tp;
  const double attn_in = pc.attention_per_layer / par.tp - attn_out;
  const double down = double(m.ffn_hidden) * h / par.tp;
  const double up = pc.ffn_per_layer / par.tp - down;
  const int local_experts = std::max(1, pc.experts / std::max(1, par.ep));
  const double expert = pc.expert / std::max(1, par.etp);
  const double expert_down = double(m.moe.expert_ffn_hidden) * h / std::max(1, par.etp);
  for (int l = 0; l < static_cast<int>(std::lround(layers)); ++l) {
    const bool is_moe = l >= std::lround(layers - moe);
    if (experts) {
      if (!is_moe) continue;
      for (int e = 0; e < local_experts; ++e) out->push_back(expert - expert_down);
      for (int e = 0; e < local_experts; ++e) out->push_back(expert_down);
      continue;
    }
    for (double t : {norm, attn_in, attn_out, norm}) out->push_back(t);
    if (is_moe) {
      out->push_back(pc.router_per_layer);
      if (pc.shared_per_layer > 0) out->push_back(pc.shared_per_layer / par.tp);
    } else {
      out->push_back(up);
      out->push_back(down);
    }
  }
}
}  // namespace

GradBuckets grad_buckets(const WorkloadConfig& w, const StepParams& params, int stage,
                         bool experts) {
  const ParameterCount pc = count_parameters(w.model);
  const auto& par = w.parallelism;
  const std::vector<int> chunk_layers = layers_of_chunks(w, stage);
  const bool bucketed = w.framework.grad_reduce_overlap && stage == 0;
  const double bucket = grad_bucket_params(w, params);
  // The stage's dense layers not yet in a chunk: its MoE layers follow them (DeepSeek-V3's first
  // three layers are on stage 0's first chunk).
  double dense_left = layers_of_stages(w)[static_cast<size_t>(stage)] -
                      moe_layers_of_stage(w, stage);
  GradBuckets out;
  out.count = 0;
  for (size_t c = 0; c < chunk_layers.size(); ++c) {
    const double layers = chunk_layers[c];
    const double moe = std::max(0.0, layers - dense_left);
    dense_left = std::max(0.0, dense_left - layers);
    std::vector<double> tensors;
    if (!experts && stage == 0 && c == 0) tensors.push_back(pc.embedding / par.tp);
    append_layer_tensors(w, pc, layers, moe, experts, &tensors);
    if (!experts && stage == par.pp - 1 && c + 1 == chunk_layers.size()) {
      tensors.push_back(pc.final_norm);
      const double head = pc.head_on_last_stage(par.pp);
      if (head > 0) tensors.push_back(head / par.tp);
    }
    double open = 0;
    const double limit = bucketed && c == 0 ? bucket : std::numeric_limits<double>::infinity();
    for (auto t = tensors.rbegin(); t != tensors.rend(); ++t) {
      open += *t;
      out.total += *t;
      if (open >= limit) {
        ++out.count;
        if (c == 0) out.last = open;
        open = 0;
      }
    }
    if (open > 0) {
      ++out.count;
      if (c == 0) out.last = open;
    }
  }
  out.count = std::max(1, out.count);
  return out;
}

double grad_bucket_fraction(const WorkloadConfig& w, const StepParams& params) {
  const GradBuckets dense = grad_buckets(w, params, 0, false);
  const GradBuckets experts = grad_buckets(w, params, 0, true);
  const double total = dense.total + experts.total;
  return total > 0 ? std::min(1.0, (dense.last + experts.last) / total) : 1.0;
}

int nccl_max_ctas(const FrameworkConfig& fw, ParallelDim dim) {
  const auto& c = fw.nccl_max_ctas;
  switch (dim) {
    case ParallelDim::kTp:
      return fw.tp_comm_overlap ? 0 : c.tp;
    case ParallelDim::kCp:
      return c.cp;
    case ParallelDim::kDp:
      return c.dp;
    case ParallelDim::kPp:
      return c.pp;
    case ParallelDim::kEp:
      return c.ep;
  }
  return 0;
}

CollectiveParams group_collective_params(const CollectiveParams& params, const FrameworkConfig& fw,
                                         ParallelDim dim) {
  CollectiveParams p = params;
  p.nvls_enabled = p.nvls_enabled && fw.nccl_nvls;
  if (const int ctas = nccl_max_ctas(fw, dim); ctas > 0) {
    p.max_channels = p.max_channels > 0 ? std::min(p.max_channels, ctas) : ctas;
  }
  return p;
}

double overlap_block_share(const FrameworkConfig& fw, ParallelDim dim, const StepParams& params,
                           double traffic_share) {
  const int ctas = nccl_max_ctas(fw, dim);
  const bool capped = ctas > 0 && params.overlap_reference_blocks > 0;
  const double blocks = capped ? std::min(1.0, ctas / params.overlap_reference_blocks) : 1.0;
  // Ring attention's K/V exchange runs beside the attention kernels alone, which work from
  // shared memory and registers: it takes their SMs, not their HBM traffic.
  if (dim == ParallelDim::kCp) return params.overlap_sm_share * blocks;
  if (!capped) return 1;
  return params.overlap_sm_share * blocks + (1 - params.overlap_sm_share) * traffic_share;
}

double sm_equivalent_hidden_s(const StepBreakdown& b, const FrameworkConfig& fw,
                              const StepParams& params) {
  const double sm = params.overlap_compute_slowdown;
  const double relief = sm > 0 ? 1 - params.overlap_copy_engine_slowdown / sm : 0;
  double hidden = -b.tp.hidden_s() * fw.tp_overlap_copy_engine_share * relief;
  for (ParallelDim dim : kParallelDims) {
    const DimComm& d = b.of(dim);
    hidden += d.hidden_s() * overlap_block_share(fw, dim, params, d.traffic_share());
  }
  return hidden;
}

StepParams default_step_params(const ClusterConfig& cluster) {
  StepParams p;
  p.compute = default_compute_params(cluster.node.gpu);
  return p;
}

double dp_overlap_exposed_s(double total_s, double pass_s, int chunks, int group,
                            double bucket_fraction) {
  if (total_s <= 0) return 0;
  const int v = std::max(1, chunks);
  const double share = total_s / v, chunk_pass = pass_s / v;
  // Time 0: the end of the last chunk's pass; chunk k (in the order the passes finish, k = 0
  // last) ends k x group chunk passes before it. One stream runs the chunks' shares in turn,
  // each from the start of its chunk's pass (bucket by bucket behind its layers), its last
  // bucket after that pass.
  double end = -std::numeric_limits<double>::infinity();
  for (int k = v - 1; k >= 0; --k) {
    const double done = -k * group * chunk_pass;
    const double start = std::max(end, done - chunk_pass);
    end = std::max(start + share, done + bucket_fraction * total_s);
  }
  return std::max(0.0, end);
}

StageCompute device_compute(const std::vector<StageCompute>& stages, const WorkloadConfig& w,
                            int device) {
  const auto i = static_cast<std::size_t>(device);
  if (w.parallelism.pp_schedule != PipelineSchedule::kDualPipe) return stages[i];
  return mean_of(stages[i], stages[stages.size() - 1 - i]);
}

int unpaired_passes(const WorkloadConfig& w, int stage) {
  const auto& par = w.parallelism;
  const int pp = std::max(1, par.pp);
  const int m = w.micro_batches_per_step();
  switch (par.pp_schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::k1F1B:
      return std::min(pp - stage - 1, m);
    case PipelineSchedule::kInterleaved: {
      const int v = chunks_per_stage(w);
      if (v == 1) return std::min(pp - stage - 1, m);
      return interleaved_warmup_passes(pp, stage, m, v);
    }
    case PipelineSchedule::kDualPipe: {
      const int h = std::min(stage, pp - 1 - stage);
      return std::min(m, 3 * pp / 2 - h - 1 + (h == pp / 2 - 1 ? 1 : 0));
    }
  }
  return m;
}

Result<double> amax_reduction_s(const Scenario& scenario, const StepParams& params) {
  const WorkloadConfig& w = scenario.workload;
  const FrameworkConfig& fw = w.framework;
  const auto& par = w.parallelism;
  const int group = par.tp * par.cp *
                    (fw.fp8_amax_reduction == AmaxReduction::kDataParallel ? par.dp : 1);
  if (w.precision != Precision::kFp8 || fw.fp8_recipe != Fp8Recipe::kDelayed ||
      fw.kernels != KernelFusion::kFused || fw.fp8_amax_reduction == AmaxReduction::kAsync ||
      group < 2) {
    return 0.0;
  }
  auto topo = parallel_group_topology(scenario.cluster, group, 1);
  if (!topo) return Error{"fp8 amax reduction group: " + topo.message()};
  // A chunk's amaxes: an fp32 (4 bytes) for each of the forward's three tensors a GEMM (input,
  // weight, output), four GEMMs a layer; latency-bound at any of these sizes.
  constexpr double kAmaxBytes = 4, kAmaxesPerGemm = 3, kGemmsPerLayer = 4;
  const double layers = double(w.model.layers) / std::max(1, par.pp) / chunks_per_stage(w);
  const CollectiveRequest request{
      CollectiveOp::kAllReduce, kAmaxBytes * kAmaxesPerGemm * kGemmsPerLayer * std::max(1.0, layers)};
  auto est = estimate_collective(
      *topo, request, group_collective_params(params.collective, fw, ParallelDim::kDp));
  if (!est) return Error{"fp8 amax reduction: " + est.message()};
  return est->time_s;
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

  // 1. Memory, and every stage's compute per micro-batch.
  r.memory = memory_per_gpu(w, params.memory);
  r.memory_capacity_bytes = gpu.hbm_bytes;
  r.fits = r.memory.total() <= r.memory_capacity_bytes;
  // The kernel mix sets the clock under the power cap: time the stages at full clock, then at
  // the clock their tensor-core share allows (compute_model.h power_clock).
  double tensor_s = 0, busy_s = 0;
  for (const StageCompute& st : stage_compute(gpu, w, params.compute)) {
    tensor_s += st.tensor_s;
    busy_s += st.total_s();
  }
  // The slowest of the job's chips sets the pace (ComputeParams::clock_spread).
  ComputeParams paced = params.compute;
  paced.sustained_clock *=
      1 - params.compute.clock_spread * expected_max_standard_normal(std::max(1, r.gpus));
  r.clock = power_clock(busy_s > 0 ? tensor_s / busy_s : 1, paced);
  r.attention_clock = attention_clock(paced, r.clock);
  r.stages = stage_compute(gpu, w, at_clock(paced, r.clock));
  auto amax = amax_reduction_s(scenario, params);
  if (!amax) return amax.error();
  // Each chunk's forward and backward waits for one amax all-reduce.
  const double amax_per_pass_s = chunks_per_stage(w) * *amax;
  for (StageCompute& st : r.stages) {
    st.forward_s += amax_per_pass_s;
    st.backward_s += amax_per_pass_s;
    st.amax_reduction_s = 2 * amax_per_pass_s;
  }

  // 2. Every collective, timed on its group.
  // The once-a-step DP collectives go out a bucket at a time, each its own NCCL call; the
  // reduction and the gather of one stage's weights share their buckets.
  std::map<std::pair<int, bool>, int> buckets_of;
  for (CommCall call : communication_per_step(w)) {
    if (call.dim == ParallelDim::kDp && call.phase == CommPhase::kStep) {
      const auto key = std::make_pair(call.dp_stage, call.experts);
      auto it = buckets_of.find(key);
      if (it == buckets_of.end()) {
        it = buckets_of.emplace(key, grad_buckets(w, params, key.first, key.second).count).first;
      }
      call.count *= it->second;
      call.size_bytes /= it->second;
    }
    auto topo = parallel_group_topology(cluster, call.group_size, call.group_stride);
    if (!topo) return Error{std::string(to_string(call.dim)) + " group: " + topo.message()};
    const CollectiveRequest request{call.op, call.size_bytes, CollectiveAlgorithm::kAuto,
                                    CollectiveProtocol::kAuto, alltoall_dispatch(call, *topo)};
    const CollectiveParams group =
        group_collective_params(params.collective, w.framework, call.dim);
    auto est = estimate_collective(*topo, request, group);
    if (!est)
      return Error{std::string(to_string(call.dim)) + " " + call.what + ": " + est.message()};
    const double per_step = call.count * (call.phase == CommPhase::kStep ? 1 : m);
    r.comms.push_back({call, *est, per_step});
    if (nccl_max_ctas(w.framework, call.dim) > 0) {
      // The same call at NCCL's own channels: the rate its bytes would run at.
      CollectiveParams own = group;
      own.max_channels = params.collective.max_channels;
      auto full = estimate_collective(*topo, request, own);
      if (full) r.breakdown.of(call.dim).full_channels_s += full->time_s * per_step;
    }
  }
  StepBreakdown& b = r.breakdown;
  for (const auto& c : r.comms) {
    DimComm& d = b.of(c.call.dim);
    d.total_s += c.total_s();
    d.bytes_per_step += c.call.size_bytes * c.calls_per_step;
  }

  // 3. What TP and CP expose per micro-batch on each stage. The collective list counts the
  // calls of ceil(layers / pp) layers; a stage's own layers scale it.
  using D = ParallelDim;
  using P = CommPhase;
  const double ref_layers = std::max(1, layers_per_stage(w));
  const double tp_fwd_layer = phase_seconds(r.comms, D::kTp, P::kForward) / ref_layers;
  const double tp_bwd_layer = phase_seconds(r.comms, D::kTp, P::kBackward) / ref_layers;
  const double cp_fwd_layer = phase_seconds(r.comms, D::kCp, P::kForward) / ref_layers;
  const double cp_bwd_layer = phase_seconds(r.comms, D::kCp, P::kBackward) / ref_layers;
  // EP: per MoE layer (the list counts the stage with the most of them).
  const double ref_moe = std::max(1, moe_layers_per_stage(w));
  const double ep_fwd_layer = phase_seconds(r.comms, D::kEp, P::kForward) / ref_moe;
  const double ep_bwd_layer = phase_seconds(r.comms, D::kEp, P::kBackward) / ref_moe;
  const TpCallTimes tp_calls = tp_call_times(r.comms);
  struct StageComm {  // seconds per micro-batch on one stage, by dimension
    double tp = 0, cp = 0, ep = 0;
  };
  // DualPipe: each device runs its stage for half the micro-batches and the mirrored stage
  // (pp - 1 - s) for the other half: its pace is the pair's mean.
  const bool dualpipe = par.pp_schedule == PipelineSchedule::kDualPipe;
  std::vector<StageCompute> devices;
  for (int i = 0; i < static_cast<int>(r.stages.size()); ++i) {
    devices.push_back(device_compute(r.stages, w, i));
  }
  const std::vector<int> stage_moe = moe_layers_of_stages(w);
  std::vector<double> device_moe(stage_moe.begin(), stage_moe.end());
  if (dualpipe) {
    const std::size_t last = devices.size() - 1;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      device_moe[i] = (stage_moe[i] + stage_moe[last - i]) / 2.0;
    }
  }
  auto moe_of = [&](const StageCompute& st) { return device_moe[static_cast<size_t>(st.stage)]; };
  // A stage's dispatch and combine per micro-batch; the share of its passes that run alone
  // (warm-up, cool-down, DualPipe's ramps), with no partner to hide collectives behind; and what
  // of the all-to-alls a forward-backward pair does not hide behind its compute.
  auto ep_of = [&](const StageCompute& st) { return moe_of(st) * (ep_fwd_layer + ep_bwd_layer); };
  const int chunks = chunks_per_stage(w);
  const double passes = m * chunks;
  auto alone_share = [&](const StageCompute& st) {
    return std::min(1.0, unpaired_passes(w, st.stage) / passes);
  };
  auto pair_excess = [&](const StageCompute& st) {
    return std::max(0.0, ep_of(st) - st.total_s());
  };
  auto exposure = [&](const StageCompute& st) {
    StageComm x;
    const double n = st.layers;
    // TP: between the GEMMs of every layer, but what the framework hides behind the GEMMs each
    // collective feeds or drains (tp_comm_overlap, tp_wgrad_overlap), what does not fit exposed;
    // what it does not fuse (the input gradients' reductions under tp_comm_overlap without
    // tp_overlap_input_gradients) exposed whole.
    // (A stage whose blocks outnumber the list's per-layer count, a dense stage of a MoE
    // model, hides at most what it runs.)
    x.tp = std::max(0.0, n * (tp_fwd_layer + tp_bwd_layer) -
                             tp_overlap_cover_s(w, st.tp_gemms, tp_calls, true) -
                             tp_overlap_cover_s(w, st.tp_gemms, tp_calls, false));
    x.tp *= 1 - params.tp_overlap_fraction;
    // Ring attention overlaps each K/V step with the attention of the chunk in hand.
    x.cp = std::max(0.0, n * cp_fwd_layer - st.attention_forward_s) +
           std::max(0.0, n * cp_bwd_layer - st.attention_backward_s);
    // The dispatch and combine sit between the router and the experts and after them: exposed,
    // unless the framework overlaps them with another micro-batch's compute (DualPipe,
    // workload.framework.ep_comm_overlap): one micro-batch's forward runs beside another's
    // backward, each one's all-to-alls hidden behind the pair's compute, and what outlasts
    // that compute stays exposed.
    // Passes that run alone (warm-up, cool-down, DualPipe's ramps) expose theirs.
    if (w.framework.ep_comm_overlap) {
      const double alone = alone_share(st);
      x.ep = alone * ep_of(st) + (1 - alone) * pair_excess(st);
    } else {
      x.ep = ep_of(st);
    }
    return x;
  };
  // The TP, CP and EP time a stage runs per micro-batch: its own layers' calls (the collective
  // list counts those of the stage with the most layers and MoE layers).
  auto runs = [&](const StageCompute& st) {
    StageComm ran;
    ran.tp = st.layers * (tp_fwd_layer + tp_bwd_layer);
    ran.cp = st.layers * (cp_fwd_layer + cp_bwd_layer);
    ran.ep = ep_of(st);
    return ran;
  };
  // What a stage's own collectives take from its compute where they run beside it (step 6
  // charges the busiest stage's; every stage's counts in finding the busiest).
  auto interference = [&](const StageCompute& st, const StageComm& xi) {
    const StageComm ran = runs(st);
    auto share = [&](ParallelDim d) {
      return overlap_block_share(w.framework, d, params, b.of(d).traffic_share());
    };
    return overlap_interference_s((ran.tp - xi.tp) * share(D::kTp) +
                                      (ran.cp - xi.cp) * share(D::kCp) +
                                      (ran.ep - xi.ep) * share(D::kEp),
                                  params, st.host_wait_s);
  };
  // The busiest stage sets the pace of the steady state; the others add their fill and drain.
  // Fill and drain are the passes that run alone (the warm-up forwards and cool-down
  // backwards): under ep_comm_overlap their all-to-alls are exposed in full, not at the
  // step's average share, so the bubble counts each stage at its lone pace.
  auto pace = [&](const StageCompute& st, const StageComm& xi) {
    return st.total_s() + xi.tp + xi.cp + xi.ep + interference(st, xi);
  };
  std::size_t busiest = 0;
  double busiest_mb = -1, busiest_fill = 0, sum_fill = 0;
  StageComm x;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const StageComm xi = exposure(devices[i]);
    const double mb = pace(devices[i], xi);
    double fill = mb;
    if (w.framework.ep_comm_overlap) {
      StageComm lone = xi;
      lone.ep = ep_of(devices[i]);
      fill = pace(devices[i], lone);
    }
    sum_fill += fill;
    if (mb > busiest_mb) {
      busiest_mb = mb;
      busiest_fill = fill;
      busiest = i;
      x = xi;
    }
  }
  const StageCompute& st = devices[busiest];
  r.busiest_stage = static_cast<int>(busiest);
  r.forward_s = st.forward_s;
  r.backward_s = st.backward_s;
  b.tp.exposed_s = m * x.tp;
  b.cp.exposed_s = m * x.cp;
  b.ep.exposed_s = m * x.ep;
  // What the busiest stage hides is what it runs less what it exposes: the calls of layers it
  // does not have are neither (they would otherwise count as hidden, and slow its compute in
  // step 6).
  const StageComm ran = runs(st);
  b.tp.total_s = m * ran.tp;
  b.cp.total_s = m * ran.cp;
  b.ep.total_s = m * ran.ep;

  // Pipeline: each micro-batch's activation and gradient cross a stage boundary on the critical
  // path (Megatron's batched send/recv pairs are waited on before the next compute); DualPipe
  // hides them behind the overlapped chunk's compute, Megatron-Core's overlap_p2p_comm behind
  // the neighbouring chunks' (framework.pp_comm_overlap).
  // DualPipe's lone passes (its ramps) have no partner to hide theirs behind.
  b.pp.exposed_s = dualpipe                      ? b.pp.total_s * alone_share(st)
                   : w.framework.pp_comm_overlap ? 0
                                                 : b.pp.total_s;

  // DP. ZeRO-3 prefetches each layer's gather behind the previous layer's compute and
  // reduce-scatters behind the backward; what does not fit behind a micro-batch is exposed.
  const double dp_fwd_mb = phase_seconds(r.comms, D::kDp, P::kForward);
  const double dp_bwd_mb = phase_seconds(r.comms, D::kDp, P::kBackward);
  double dp_exposed =
      m * (std::max(0.0, dp_fwd_mb - st.forward_s) + std::max(0.0, dp_bwd_mb - st.backward_s));
  // Once-per-step gradient reduction overlaps the last micro-batch's backward, except its last
  // bucket (grad_reduce_overlap); without overlap it follows the whole backward. ZeRO-1/2's
  // parameter all-gather overlaps the next step's first forward but its first bucket, the same
  // embedding's bucket, which the forward waits for (Megatron-Core's forward pre-hook dispatches
  // and waits on it, prefetching the next; param_gather_overlap; without it the step waits for
  // the whole gather). Both go chunk by chunk under
  // the interleaved schedule (dp_overlap_exposed_s): a chunk's gradients are reduced once its
  // last backward is done, pp backward passes before the next chunk's, and its parameters are
  // gathered ahead of its first forward, pp forward passes after the previous chunk's.
  const double bucket_fraction = grad_bucket_fraction(w, params);
  const int group = std::min(par.pp, static_cast<int>(m));
  for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter}) {
    const double total = per_step_seconds(r.comms, D::kDp, op);
    if (total <= 0) continue;
    dp_exposed += w.framework.grad_reduce_overlap
                      ? dp_overlap_exposed_s(total, st.backward_s, chunks, group, bucket_fraction)
                      : total;
  }
  const double gather = per_step_seconds(r.comms, D::kDp, CollectiveOp::kAllGather);
  dp_exposed += w.framework.param_gather_overlap
                    ? dp_overlap_exposed_s(gather, st.forward_s, chunks, group, bucket_fraction)
                    : gather;
  b.dp.exposed_s = std::min(dp_exposed, b.dp.total_s);

  // 4. Bubble: the other stages' fill and drain, over the virtual stages (Narayanan et al.
  // 2021: (pp - 1) / v micro-batch slots when the stages are equal).
  if (dualpipe) {
    // (pp/2 - 1)(F&B + B - 3W) (DeepSeek-V3 report Table 2): F&B, an overlapped forward and
    // backward chunk, takes F + B; W, the weight-gradient GEMMs.
    const double w_grad = weight_gradient_s(st.gemm_backward_s);
    // F&B exposes what of its all-to-alls outlasts the pair's compute; the lone B all of its
    // own (the ramps' passes run alone).
    const double pair_ep = w.framework.ep_comm_overlap ? pair_excess(st) : ep_of(st);
    b.bubble_s = std::max(0.0, (par.pp / 2.0 - 1) * (st.forward_s + pair_ep + 2 * st.backward_s +
                                                     moe_of(st) * ep_bwd_layer - 3 * w_grad));
  } else {
    b.bubble_s = (sum_fill - busiest_fill) / chunks;
  }
  b.compute_s = m * st.total_s();
  b.host_wait_s = m * st.host_wait_s;

  // 5. The optimizer over the local shard.
  b.optimizer_s = optimizer_seconds(gpu, w, r.memory, params);

  // 6. What the hidden collectives take from the compute they overlap.
  b.overlap_interference_s =
      overlap_interference_s(sm_equivalent_hidden_s(b, w.framework, params), params, b.host_wait_s);
  b.compute_s += b.overlap_interference_s;

  r.step_time_s = b.compute_s + b.tp.exposed_s + b.cp.exposed_s + b.ep.exposed_s +
                  b.pp.exposed_s + b.dp.exposed_s + b.bubble_s + b.optimizer_s;

  // 7. Throughput and utilisation.
  const FlopsPerToken f = flops_per_token(w.model, w.seq_len, /*causal=*/true);
  r.tokens_per_step = w.tokens_per_step();
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  r.model_flops_per_step = r.tokens_per_step * f.training();
  r.hardware_flops_per_step =
      r.tokens_per_step * hardware_flops_per_token(f, par.recompute, par.recompute_modules);
  r.model_tflops_per_gpu = r.model_flops_per_step / r.gpus / r.step_time_s / 1e12;
  r.hardware_tflops_per_gpu = r.hardware_flops_per_step / r.gpus / r.step_time_s / 1e12;
  r.peak_flops = gpu.peak_flops(w.precision);
  r.set_mfu(gpu);
  return r;
}

void StepResult::set_mfu(const GpuSpec& gpu) {
  const double bf16 = gpu.peak_flops(Precision::kBf16);
  mfu = peak_flops > 0 ? model_tflops_per_gpu * 1e12 / peak_flops : 0;
  mfu_bf16 = bf16 > 0 ? model_tflops_per_gpu * 1e12 / bf16 : 0;
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
  if (b.ep.exposed_s > 0) {
    losses.push_back({b.ep.exposed_s,
                      "MoE all-to-all is " + share(b.ep.exposed_s) +
                          ": keep ep inside a node, overlap it with compute "
                          "(framework.ep_comm_overlap, DualPipe-like), or more NIC bandwidth"});
  }
  if (b.host_wait_s > 0) {
    const bool bias = per_expert_bias_path(scenario.workload);
    losses.push_back({b.host_wait_s,
                      "the GPU waits for the host to launch MoE layers for " +
                          share(b.host_wait_s) +
                          ": more sequences per micro-batch (micro_batch), or the layers "
                          "captured in CUDA graphs (framework.moe_layer_host_time)" +
                          std::string(bias ? "; the experts' output biases are added one "
                                             "expert at a time (framework.moe_expert_bias: "
                                             "grouped adds them in one pass)"
                                           : "")});
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
