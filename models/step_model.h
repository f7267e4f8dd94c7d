// Analytic time of one optimizer step of a transformer training job on a cluster: the busiest
// pipeline stage's forward and backward per micro-batch (compute model), the collectives of
// every parallel dimension (transformer model -> collective model), the pipeline bubble, what
// overlap hides, and the optimizer update. Units: seconds, FLOPs, bytes. Pure functions; the
// simulator in sim/ must agree with this on uncontended cases (no contention is modelled here:
// the dimensions' traffic shares nothing but what CollectiveTopology divides up front).
#pragma once

#include <string>
#include <vector>

#include "models/collective_model.h"
#include "models/compute_model.h"
#include "models/layer_model.h"
#include "models/scenario.h"
#include "models/transformer_model.h"

namespace clustersim::models {

// Every assumption of the step model, with its default and why. Calibration replaces fields.
struct StepParams {
  ComputeParams compute;
  CollectiveParams collective;
  MemoryParams memory;
  // Fraction of the TP/SP communication the step would otherwise expose that is hidden anyway
  // (a what-if knob; 0 by default). Whether the framework overlaps TP with the GEMMs is the
  // scenario's workload.framework.tp_comm_overlap.
  double tp_overlap_fraction = 0;
  // Gradient buckets: the last one cannot overlap with backward. Megatron-Core DDP's default
  // bucket is max(dp_bucket_params, dp_bucket_params_per_rank x the DP ranks with CP)
  // parameters, max(40M, 1M x ranks): "larger DP sizes need larger buckets"
  // (distributed_data_parallel_config.py bucket_size; distributed_data_parallel.py and
  // training.py set max(40000000, 1000000 * size)).
  double dp_bucket_params = 40e6;
  double dp_bucket_params_per_rank = 1e6;
  // A collective running beside compute slows it: its kernels hold SMs (NCCL one thread block
  // per channel, 16 or more on NVLink and multi-NIC nodes; TE's userbuffers 16-24), its traffic
  // shares HBM and L2 with the compute's, and its NVLink/NIC power comes out of the GPU's power
  // cap. Each second of hidden communication adds this many seconds to the compute it hides
  // behind. 0.61: Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
  // Distributed Deep Learning: Performance and Power Implications" (arXiv 2507.03114, 2025),
  // GPT and Llama training on 4 A100, H100, MI250 and MI210: overlapped compute ran 18.9%
  // slower than alone on average, and sequential execution was 10.2% slower than overlapped,
  // so the communication lasted 1.102 x 1.189 - 1 = 0.310 of the compute and cost
  // 0.189 / 0.310 = 0.61 of its duration. (The SMs alone, 16 of 132, would explain 0.14.)
  double overlap_compute_slowdown = 0.61;
  // Of it, what the SMs the collective's blocks hold explain: 16 blocks of 132 SMs take 12.1%
  // of the compute's SMs, a 0.14 slowdown (0.121 / 0.879), 0.23 of the 0.61; the rest is its
  // traffic through HBM and L2 and its power. A process group whose communicator runs fewer
  // blocks than overlap_reference_blocks (FrameworkConfig::nccl_max_ctas) holds that share of
  // the SMs, and its bytes, moved more slowly, cost the compute what they cost at full rate:
  // per second of its hidden time, overlap_compute_slowdown x (overlap_sm_share x blocks / 16
  // + (1 - overlap_sm_share) x its time at NCCL's own channels / its time).
  double overlap_reference_blocks = 16;
  double overlap_sm_share = 0.14 / 0.61;
  // The same for a transfer a copy engine moves, which holds no SM: device call 19 on one H200
  // (scenarios/measurements/call19/overlap_probe_h200.txt), a cuBLAS bf16 GEMM 8192^3 ran 0.057
  // slower while a copy engine moved 308 GB/s beside it the whole time (0.27 beside 16 copying
  // blocks). Applies to the copy-engine share of hidden TP traffic
  // (FrameworkConfig::tp_overlap_copy_engine_share).
  double overlap_copy_engine_slowdown = 0.057;
  // The optimizer step's HBM traffic per parameter (Megatron-LM's mixed-precision optimizer,
  // optimizer.py): the gradient norm for clipping (read the fp32 gradient: 4; --clip-grad 1.0
  // is the default), Adam (read master weight, gradient, m, v: 16; write master, m, v: 12),
  // the 16-bit working weights copied from the fp32 masters (read 4, write 2): 38 bytes. fp16
  // adds the loss-scale unscale and inf/nan check (read 4, write 4): 46. fp32 training keeps no
  // 16-bit copy: 32.
  double optimizer_bytes_per_param = 38;
  double optimizer_bytes_per_param_fp16 = 46;
  double optimizer_bytes_per_param_fp32 = 32;
  // PyTorch's foreach AdamW (framework.optimizer_kernel: foreach) makes a pass per arithmetic
  // op instead of one: weight decay (read 4, write 4), lerp of m (8, 4), v x beta2 (4, 4),
  // addcmul of g^2 into v (8, 4), sqrt(v), its division and + eps (4, 4 each), addcdiv into the
  // weight (12, 4): 80 bytes where the fused kernel moves 28, so 52 more per parameter. One H200
  // (device call 20): 21.4 ps per parameter against fused AdamW's 8.3, over 1.3 B and 1.8 B
  // parameters.
  double foreach_optimizer_extra_bytes_per_param = 52;
  // Without a master copy (framework.master_weights: false) Adam updates the 16-bit parameters
  // with 16-bit moments: read the weight, gradient, m and v, write the weight, m and v, 2 bytes
  // each (14), and the gradient norm's read (2): 16 bytes. The foreach passes move half their
  // fp32 bytes (26).
  double optimizer_bytes_per_param_no_master = 16;
  // The master kept as a 16-bit remainder beside the bf16 parameter (framework.param_remainders):
  // the gradient norm's read (4), Adam reading the parameter and its remainder, the gradient, m
  // and v (2 + 2 + 4 + 8) and writing the parameter, remainder, m and v (2 + 2 + 8), with no
  // separate copy to the 16-bit weights: 32 bytes.
  double optimizer_bytes_per_param_remainders = 32;
};

// The defaults for this cluster's GPU (compute efficiency by architecture).
StepParams default_step_params(const ClusterConfig& cluster);

// A backward's weight-gradient GEMMs, the weight pass zero-bubble schedules (DualPipe) defer:
// half its GEMMs (each weight GEMM has a data- and a weight-gradient GEMM of its forward's size).
inline double weight_gradient_s(double gemm_backward_s) { return 0.5 * gemm_backward_s; }

// framework.tp_wgrad_overlap: the share of `call`'s calls that are a column-parallel linear's
// input-gradient reduction in the backward (reduce-scatter with SP, all-reduce without; the
// full-recompute forward's half of the backward's calls is not), which run beside that linear's
// weight-gradient GEMM, or its input's second gather (CommCall::regather), which runs beside
// its data-gradient GEMM. 0 for any other call, or when the framework does not overlap them.
double tp_wgrad_overlapped_share(const WorkloadConfig& w, const CommCall& call);
// framework.tp_comm_overlap without tp_overlap_input_gradients (PyTorch's async TP): the share
// of `call`'s calls that are a column-parallel linear's input-gradient reduction, which stay
// exposed between the GEMMs while the other TP collectives hide behind them. 0 otherwise.
double tp_overlap_exposed_share(const WorkloadConfig& w, const CommCall& call);
// Of a stage's forward passes (per micro-batch and model chunk, m x v in a step), how many run
// alone rather than as one of a forward-backward pair whose communication hides behind the
// other's compute (framework.ep_comm_overlap); as many backward passes run alone. 1F1B: the
// pp - s - 1 warm-up forwards; interleaved 1F1B: Megatron's 2 (pp - s - 1) + (v - 1) pp (all
// of them when m = pp); GPipe: every pass; DualPipe (dualpipe.py): its ramps, 1.5 pp - h - 1
// with h = min(s, pp - 1 - s), and one more on the middle ranks. sim::stage_schedule marks the
// same passes (PipelineOp::paired).
int unpaired_passes(const WorkloadConfig& w, int stage);

// What a once-per-step DP collective of `total_s` exposes beside the passes it overlaps: the
// gradient reduction after the last backward, or ZeRO-1/2's parameter gather before the first
// forward (each the stage's `pass_s` over all its chunks for one micro-batch). Chunk by chunk:
// each chunk's share runs behind its own pass (bucket by bucket, its last bucket,
// `bucket_fraction` of the total, after it) and the `group` passes of other chunks (Megatron's
// interleaved order: pp consecutive micro-batches per chunk) between its pass and the last
// chunk's, on one stream. One chunk: max(total - pass, bucket_fraction x total).
double dp_overlap_exposed_s(double total_s, double pass_s, int chunks, int group,
                            double bucket_fraction);

// The compute time a step loses to the collectives it hides: `hidden_comm_s` of them running
// beside compute, times params.overlap_compute_slowdown. The first `host_wait_s` of them run
// while the GPU waits for the host (StageCompute::host_wait_s), beside no kernel: free.
double overlap_interference_s(double hidden_comm_s, const StepParams& params,
                              double host_wait_s = 0);

// One kind of collective of the step, timed.
struct TimedComm {
  CommCall call;
  CollectiveEstimate estimate;  // one call
  double calls_per_step = 0;    // count x micro-batches (forward/backward) or count (step)
  double total_s() const { return estimate.time_s * calls_per_step; }
};

// One TP block's collectives, seconds per call, as the collective list times them.
struct TpCallTimes {
  double gather = 0;       // forward: the block input's all-gather (SP)
  double reduce = 0;       // forward: its output's reduce-scatter (all-reduce without SP)
  double grad_gather = 0;  // backward: the output gradient's all-gather (SP)
  double grad_reduce = 0;  // backward: the input gradient's reduce-scatter (all-reduce)
  double regather = 0;     // backward: the input gathered again for the weight gradients
};
TpCallTimes tp_call_times(const std::vector<TimedComm>& comms);

// What the framework hides of a pass's TP collectives on a stage (or part of one): each
// collective behind the GEMMs it is fused with or launched beside (TpGemms), at most their time,
// what does not fit exposed. framework.tp_comm_overlap: forward, the input's gather behind Q/K/V
// (the MLP's up), the output's reduce-scatter behind the output (down) projection; backward, the
// output gradient's gather behind that projection's data gradient, and under full
// recomputation the recomputed forward's collectives as forward. framework.tp_comm_overlap (with
// tp_overlap_input_gradients) or tp_wgrad_overlap: the input's regather behind the gathered
// GEMMs' data gradients, the input gradient's reduction behind their weight gradients
// (Transformer Engine's ub_bulk_dgrad / ub_bulk_wgrad; Megatron-LM's async all-gather and
// reduce-scatter beside the column-parallel linear's backward GEMMs).
double tp_overlap_cover_s(const WorkloadConfig& w, const TpGemms& gemms, const TpCallTimes& calls,
                          bool forward);

// Time of one parallel dimension's communication per step.
struct DimComm {
  double total_s = 0;    // all its collectives back to back
  double exposed_s = 0;  // what the step waits for
  double hidden_s() const { return total_s - exposed_s; }
  double bytes_per_step = 0;  // the size column x calls per step, summed
  // total_s at NCCL's own channel counts, where FrameworkConfig::nccl_max_ctas cuts them (0:
  // not cut): the same bytes at the rate of a full set of channels.
  double full_channels_s = 0;
  // full_channels_s / total_s: the rate its traffic runs at against a full set of channels.
  double traffic_share() const {
    return full_channels_s > 0 && total_s > 0 ? std::min(1.0, full_channels_s / total_s) : 1;
  }
};

struct StepBreakdown {
  // m x (forward + backward incl. recompute) of the busiest stage, slowed where collectives run
  // beside it (overlap_interference_s, part of it)
  double compute_s = 0;
  double overlap_interference_s = 0;
  // m x the GPU's wait for the host to launch MoE layers (StageCompute::host_wait_s), part of it
  double host_wait_s = 0;
  DimComm tp, pp, dp, cp, ep;  // exposed parts add to the step; hidden parts overlap compute
  double bubble_s = 0;     // pipeline fill and drain
  double optimizer_s = 0;  // the Adam update over the local shard
  double hidden_comm_s() const {
    return tp.hidden_s() + pp.hidden_s() + dp.hidden_s() + cp.hidden_s() + ep.hidden_s();
  }
  // The communication the step waits for: the exposed parts of every dimension.
  double exposed_comm_s() const {
    return tp.exposed_s + pp.exposed_s + dp.exposed_s + cp.exposed_s + ep.exposed_s;
  }
  // The communication of one dimension.
  DimComm& of(ParallelDim d);
  const DimComm& of(ParallelDim d) const { return const_cast<StepBreakdown*>(this)->of(d); }
};

// The step's hidden communication as SM-driven collectives cost compute: the copy-engine share
// of its hidden TP traffic (FrameworkConfig::tp_overlap_copy_engine_share) counts at
// overlap_copy_engine_slowdown / overlap_compute_slowdown of its time, a group whose NCCL
// communicator runs fewer blocks than StepParams::overlap_reference_blocks at that share.
double sm_equivalent_hidden_s(const StepBreakdown& b, const FrameworkConfig& fw,
                              const StepParams& params);

// The parameters of a gradient bucket: FrameworkConfig::grad_bucket_params where the scenario
// gives it, else Megatron-Core's default (StepParams::dp_bucket_params, _per_rank).
double grad_bucket_params(const WorkloadConfig& w, const StepParams& params);
// Megatron-Core DDP's gradient buckets over one rank's weights of pipeline stage `stage`, its
// dense weights or (experts) its routed experts', each bucket one NCCL reduce-scatter (and with
// ZeRO-1 one all-gather) of its own (param_and_grad_buffer.py): the tensors in the reverse order
// of their creation, the order their gradients become ready, a bucket closed once it holds
// grad_bucket_params or more, so a bucket never splits a tensor and below a tensor's size each
// tensor is one (Cisco's MLPerf Llama 3.1 8B: bucket_size 64). One bucket per model chunk where
// Megatron-Core turns bucketing off (distributed_data_parallel.py): stages after the first, the
// chunks after the first of the interleaved schedule (training.py disable_bucketing), and
// without grad_reduce_overlap.
struct GradBuckets {
  int count = 1;      // buckets, NCCL calls per reduction
  double last = 0;    // the parameters of the bucket reduced last (the embedding's on stage 0)
  double total = 0;   // the parameters bucketed
};
GradBuckets grad_buckets(const WorkloadConfig& w, const StepParams& params, int stage,
                         bool experts);
// The last bucket's share of the gradients, at most 1: what the reduction leaves for after the
// backward, in both engines. Pipeline stage 0's (it finishes the step's backward last; the
// later stages' single buckets go out during the pipeline's drain), over its dense and expert
// weights.
double grad_bucket_fraction(const WorkloadConfig& w, const StepParams& params);

// The thread blocks NCCL runs for `dim`'s process group (FrameworkConfig::nccl_max_ctas), 0 for
// NCCL's own counts; TP's collectives under tp_comm_overlap are not NCCL's: 0.
int nccl_max_ctas(const FrameworkConfig& fw, ParallelDim dim);
// The collective constants for `dim`'s communicator: `params` with its channel cap and, where
// the framework turns NVLS off (FrameworkConfig::nccl_nvls), without NVLS.
CollectiveParams group_collective_params(const CollectiveParams& params, const FrameworkConfig& fw,
                                         ParallelDim dim);
// What a second of `dim`'s hidden traffic costs compute against a full set of NCCL blocks
// (StepParams::overlap_sm_share): 1 for NCCL's own counts; `traffic_share` is
// DimComm::traffic_share. Context parallelism's K/V exchange hides behind the attention kernels
// only, which are compute-bound (flash attention's tiles stay in shared memory and registers):
// it costs them the SMs its blocks hold, overlap_sm_share at a full set, none of the traffic
// share.
double overlap_block_share(const FrameworkConfig& fw, ParallelDim dim, const StepParams& params,
                           double traffic_share);

// What pipeline device `device` runs per micro-batch: its stage's compute, under DualPipe the
// mean of its stage and the mirrored one (pp - 1 - device), each run for half the micro-batches.
// Both engines take a device's pace and its wait for the host from it.
StageCompute device_compute(const std::vector<StageCompute>& stages, const WorkloadConfig& w,
                            int device);

// Transformer Engine's synchronous amax reduction under delayed FP8 scaling (kernels fused,
// FrameworkConfig::fp8_amax_reduction not async): the time of one all-reduce of a model chunk's
// amaxes over the amax group (a stage's TP x CP x DP ranks, or TP x CP, contiguous in
// Megatron's rank order), which the compute stream waits for once per chunk and micro-batch
// forward and once backward (predict_step adds it to every stage's passes). 0 where it does not
// apply.
Result<double> amax_reduction_s(const Scenario& scenario, const StepParams& params);

struct StepResult {
  int gpus = 0;
  int micro_batches = 0;  // per pipeline per step
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;     // no recompute (MFU numerator)
  double hardware_flops_per_step = 0;  // with recompute
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;  // model FLOP/s per GPU over the GPU's dense peak in the workload precision
  double peak_flops = 0;
  // The same over the GPU's bf16 peak: the figure to compare an fp8 run with a bf16 one (under
  // fp8 training, mfu is against the fp8 peak, twice the bf16 one on Hopper).
  double mfu_bf16 = 0;
  // MFU from the model FLOP/s per GPU (the peaks above).
  void set_mfu(const GpuSpec& gpu);
  // One micro-batch on the busiest stage (with its exposed TP and CP communication).
  double forward_s = 0;
  double backward_s = 0;  // including recomputation
  int busiest_stage = 0;
  double clock = 1;  // the SM clock over its full clock under the power cap (power_clock)
  double attention_clock = 1;  // flash attention's (compute_model.h attention_clock)
  std::vector<StageCompute> stages;  // every pipeline stage's compute per micro-batch
  MemoryBreakdown memory;
  double memory_capacity_bytes = 0;
  bool fits = false;
  // It fits, but PyTorch's caching allocator with its cache (MemoryBreakdown::allocator_bytes)
  // would reserve more than the GPU holds: it frees the cache and retries allocations, each
  // retry synchronising the device, which the step time does not include.
  bool allocator_at_capacity() const {
    return fits && memory.allocator_bytes() > memory_capacity_bytes;
  }
  StepBreakdown breakdown;
  std::vector<TimedComm> comms;
};

// Predicts one step. Fails when a collective cannot run on the cluster (a group spans nodes
// without NICs) or the batch gives no micro-batch; the scenario loader has already checked the
// rest (tp * pp * dp * cp == GPUs, divisibility).
Result<StepResult> predict_step(const Scenario& scenario, const StepParams& params);

// Plain-language changes that would make the job fit in GPU memory, biggest lever first
// (empty when it fits): e.g. "zero: 3 shards weights and gradients too (saves 52 GiB)".
std::vector<std::string> memory_advice(const WorkloadConfig& workload,
                                       const MemoryBreakdown& memory, double capacity_bytes,
                                       const MemoryParams& params = {});

// Where the step loses time, in plain language with the change that helps, for every loss above
// `threshold` of the step time (exposed communication per dimension, the pipeline bubble),
// largest first. Empty when nothing stands out.
std::vector<std::string> step_advice(const Scenario& scenario, const StepResult& step,
                                     double threshold = 0.10);

}  // namespace clustersim::models
