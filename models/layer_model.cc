#include "models/layer_model.h"

#include <algorithm>
#include <initializer_list>
#include <utility>

#include "models/transformer_model.h"

namespace clustersim::models {
namespace {

// Bytes of a dropout mask element (PyTorch keeps a bool per element).
constexpr double kMaskBytes = 1;
// PyTorch's kernels (eager, compiled) run F.cross_entropy on an fp32 copy of the logits, per
// logit beyond their read: the copy written (4), log-softmax reading it for the max and the sum
// (4 + 4); backward the gradient written and read (4 + 4) and cast to 16 bits (4 + 2). The
// counts our own steps on the H200 and the H100 were checked with (clustersim-h200, -h100).
constexpr double kTorchLossForwardBytesPerLogit = 4 + 4 + 4;
constexpr double kTorchLossBackwardBytesPerLogit = 4 + 4 + 4 + 2;
// The same on fp32 logits cast by the model's code (framework.loss_input fp32: TorchTitan's
// logits.float(), our FSDP steps), rows too wide for shared memory (Llama 3's 128,256 fp32
// logits, 501 KiB a row): the copy written (4); PyTorch's cunn_SoftMaxForward reads each row
// three times, for the max, for the sum and to write the log-probabilities (12 + 4); backward
// nll_loss writes their gradient (4), cunn_SoftMaxBackward reads it twice and the
// log-probabilities once and writes the logits' gradient (8 + 4 + 4), cast to 16 bits (4 + 2).
// Device calls 23 (H200, 4.3 TB/s copies) and 41 (H100, 3.0 TB/s): the two softmax kernels took
// 7.9 and 8.5 ms (H200) and 11.1 and 11.4 ms (H100) for 2.1 G logits, 15.8-17.5 bytes a logit
// at the copy rate (scenarios/measurements/call41/train-steps-float8-h100.json, top_kernels).
constexpr double kTorchFp32LossForwardBytesPerLogit = 4 + 12 + 4;
constexpr double kTorchFp32LossBackwardBytesPerLogit = 4 + 16 + 6;
// PyTorch FSDP with fp32 shards (layer_kernels' comment): the seconds to cast `weights`
// parameters of a shard over `shard` ranks to the gathered precision (`gathered` bytes: read 4,
// write gathered, on the shard) and copy them out of the all-gather's buffer (read and write
// gathered), and to cast their 16-bit gradients to fp32 for the reduce-scatter (read 2, write 4).
double fsdp_gather_s(const GpuSpec& gpu, const ComputeParams& params, double weights,
                     double shard, double gathered) {
  return weights *
         ((4 + gathered) / shard / eager_bandwidth_Bps(gpu, params.eager.cast_down, params) +
          2 * gathered / eager_bandwidth_Bps(gpu, params.eager.memcpy, params));
}
double fsdp_gradient_cast_s(const GpuSpec& gpu, const ComputeParams& params, double weights) {
  return weights * 6 / eager_bandwidth_Bps(gpu, params.eager.cast_up, params);
}

struct RingAttentionPasses {
  double forward_s = 0, backward_s = 0;
};
// Ring attention's own passes (context parallelism, FrameworkConfig::cp_allgather false), per
// layer and micro-batch on the rank that merges the most (the last: with the load-balanced
// causal sharding each of its cp steps takes all its queries, and the later steps the first
// half of the received keys). `outputs`, `queries` and `keys`: the rank's elements of the
// attention output, the queries and the keys (each of K and V); `e` the 16-bit bytes.
// - PyTorch's context_parallel (`pytorch`: kernels eager or compiled; torch's _SDPAMerger and
//   ring backward, eager ops in fp32). Forward: each step's output cast to fp32 (read e, write
//   4) and, after the first, merged into the running output (its difference with the running
//   output, scaled by the sigmoid of the log-sum-exps' difference, subtracted: 12 + 8 + 12 bytes
//   an element), the result cast back once; K and V copied into the next rotation's buffer (read
//   and write e each). Backward: each step's gradients added into fp32 accumulators (read 4 + e,
//   write 4), the key and value gradients copied into the rotation (read and write 4 each) as K
//   and V are, the accumulators cast back once. Device call 42 (validate/device/
//   ring_attention_probe.py on one H100, 32,768 local tokens of Llama 3 8B, cp 2-8;
//   scenarios/measurements/call42/ring-attention.json): the steps took 1.08-1.12x cp causal
//   calls forward, 1.03-1.05x backward, 2.1-2.7 and 1.9-3.6 ms a step beyond the flash kernels;
//   these bytes give 1.9 and 2.0 ms a step at the copy rate.
// - Transformer Engine's p2p ring (fused kernels: Megatron-Core): K and V concatenated into the
//   rotation's buffer once a pass; each step's output scaled by its log-sum-exp's correction and
//   added into the 16-bit output in one fused kernel (flash_attn_fwd_out_correction: read e +
//   e, write e; the first step's written alone, read e write e); backward each step's gradients
//   added into the 16-bit dq and dK/dV buffers the same way, which the rotation sends as they
//   are. Read from its code (transformer_engine/pytorch/attention/dot_product_attention/
//   context_parallel.py), not measured.
RingAttentionPasses ring_attention_passes(const GpuSpec& gpu, const ComputeParams& params,
                                          double outputs, double queries, double keys, int cp,
                                          double e, bool pytorch) {
  if (cp <= 1) return {};
  constexpr double f32 = 4;  // bytes of an fp32 element
  const double steps = cp, later = cp - 1;
  const double key_steps = 1 + later / 2;  // the first step's keys whole, the later ones half
  double forward = 0, backward = 0;
  if (pytorch) {
    // Bytes of a merge: the difference (read 2 x f32, write f32), the scaling (read and write
    // f32), the subtraction (read 2 x f32, write f32).
    constexpr double merge = 3 * f32 + 2 * f32 + 3 * f32;
    forward = outputs * ((e + f32) * steps + merge * later + (f32 + e)) +
              later * 2 * keys * 2 * e;
    const double accumulate = f32 + e + f32;
    backward = accumulate * (queries * steps + 2 * keys * key_steps) +
               later * 2 * keys * (2 * f32 + 2 * e) + (queries + 2 * keys) * (f32 + e);
  } else {
    forward = outputs * (2 * e + 3 * e * later) + 2 * keys * 2 * e;
    // The first step's gradients written (read e, write e), the later ones added: the queries'
    // whole, the keys' and values' first halves.
    backward = 2 * e * (queries + 2 * keys) + 3 * e * later * (queries + keys);
  }
  return {elementwise_time(gpu, forward, params).time_s,
          elementwise_time(gpu, backward, params).time_s};
}

// What runs outside FP8 (FP4) under FP8 (NVFP4) training (Transformer Engine; DeepSeek-AI
// 2024, "DeepSeek-V3 Technical Report" sec. 3.3.1): the attention core, the embedding, the
// output head, the MoE router and the norms stay in bf16.
Precision unquantized_precision(Precision p) { return quantized(p) ? Precision::kBf16 : p; }

// Megatron-Core's per-expert output bias (per_expert_bias_path), as device call 34 measured it
// (validate/device/moe_bias_probe.py on one H100 machine, torch 2.11, gpt-oss's width 2880, 4-32
// local experts, 256 to 32,768 routed copies, bf16 router probabilities;
// scenarios/measurements/call34/moe-bias.json):
// - the GPU time of its small kernels beyond their bytes, per local expert and micro-batch,
//   forward and backward: the measured kernel time less the bytes at the eager kinds' rates, per
//   expert 11-21 us, median 16.7 us; seven kernels an expert, two of them forward;
// - the host's time, per MoE layer and micro-batch, forward and backward: at few routed copies,
//   where the GPU waits for Python, 0.733 / 2.310 / 4.405 ms for 4 / 16 / 32 local experts (33 /
//   117 / 229 kernels), a line of 0.21 ms plus 0.131 ms an expert (about 19 us a kernel); with 16
//   experts the host still paces it at a micro-batch's 16,384 copies (2.28 ms wall, 0.96 ms of
//   kernels).
constexpr double kExpertBiasGpuSPerExpert = 16.7e-6;
constexpr double kExpertBiasForwardKernelShare = 2.0 / 7;
constexpr double kExpertBiasHostS = 0.21e-3;
constexpr double kExpertBiasHostSPerExpert = 0.131e-3;

// Forward, data-gradient and weight-gradient GEMMs of a weight [k x n] applied to m tokens.
struct WeightGemm {
  double forward_s = 0;
  double backward_s = 0;
  double dgrad_s = 0;  // of backward_s, the data gradient
};

// `chunks` > 1: the forward and data-gradient GEMMs run as that many GEMMs of m / chunks rows.
// `accumulate_bytes`: what the weight-gradient GEMM moves beyond a fresh 16-bit output, per
// weight element, accumulating into a persistent gradient buffer (wgrad_accumulate_bytes).
WeightGemm weight_gemm(const GpuSpec& gpu, Precision p, double m, double n, double k,
                       const ComputeParams& params, int chunks = 1, double accumulate_bytes = 0) {
  const double rows = m / chunks;
  WeightGemm w;
  w.forward_s = chunks * gemm_time(gpu, p, {rows, n, k}, params).time_s;
  w.dgrad_s = chunks * gemm_time(gpu, p, {rows, k, n}, params).time_s;  // dX = dY W^T
  w.backward_s = w.dgrad_s +
                 gemm_time(gpu, p, {k, n, m}, params).time_s +              // dW = X^T dY
                 params.wgrad_accumulate_exposed *
                     memory_bound_time(gpu, accumulate_bytes * k * n, params).time_s;
  return w;
}

// Megatron-LM / Megatron-Core (fused kernels) compute each weight gradient into the parameter's
// main_grad (gradient_accumulation_fusion): the GEMM reads and writes the buffer (fp32: 4 bytes
// an element, or 16-bit: 2) where a fresh output is written once in 16 bits, so 2 x buffer - 2
// bytes more per weight element: 6 into fp32, 2 into 16 bits. PyTorch's eager and compiled
// steps write fresh gradients (their accumulation over micro-batches is in the op list), and
// so do fused kernels under PyTorch's FSDP (zero 3 with autograd's .grad): each micro-batch's
// unsharded gradient is produced fresh and reduce-scattered, no full-size buffer persists.
double wgrad_accumulate_bytes(const WorkloadConfig& w) {
  if (w.framework.kernels != KernelFusion::kFused) return 0;
  if (w.parallelism.zero >= 3 && w.framework.gradients_in_backward) return 0;
  const double buffer = w.framework.fp32_gradients ? 4 : 2;
  return 2 * buffer - 2;
}

// The attention core without a fused kernel: per (sequence, head) QK^T writes s_q x s_k scores,
// the fused scale-mask-softmax reads and writes them, dropout reads them and writes them with a
// mask, AV reads them. Backward: dP = dO V^T, dV = P^T dO, dropout and softmax backward, dQ =
// dS K, dK = dS^T Q. Causal attention computes the full square (the mask is applied after).
void unfused_attention(const GpuSpec& gpu, const WorkloadConfig& w, const ComputeParams& params,
                       double heads_local, double head_dim, LayerKernels* out) {
  const Precision p = unquantized_precision(w.precision);
  const double e = working_bytes(p);
  const double s_q = double(w.seq_len) / w.parallelism.cp;
  const double s_k = double(w.seq_len);
  const double batch = w.micro_batch * heads_local;
  const double scores = s_q * s_k * batch;  // elements
  const bool drop = w.dropout > 0;
  auto kernel = [&](GemmShape g, double extra_bytes) {
    g.batch = batch;
    KernelTime k = gemm_time(gpu, p, g, params);
    // The scores a GEMM writes or reads are its operand traffic already; extra_bytes adds what
    // the roofline's operand count misses.
    const double bytes = k.bytes + extra_bytes;
    return std::max(k.time_s, bytes / (gpu.hbm_Bps * params.hbm_efficiency));
  };
  const double softmax_fwd = 2 * scores * e;
  const double dropout_fwd = drop ? scores * (2 * e + kMaskBytes) : 0;
  out->attention_forward_s = kernel({s_q, s_k, head_dim}, 0) + kernel({s_q, head_dim, s_k}, 0) +
                             elementwise_time(gpu, softmax_fwd + dropout_fwd, params).time_s;
  const double softmax_bwd = 3 * scores * e;
  const double dropout_bwd = drop ? scores * (2 * e + kMaskBytes) : 0;
  out->attention_backward_s = kernel({s_q, s_k, head_dim}, 0) +   // dP
                              kernel({s_k, head_dim, s_q}, 0) +   // dV
                              kernel({s_q, head_dim, s_k}, 0) +   // dQ
                              kernel({s_k, head_dim, s_q}, 0) +   // dK
                              elementwise_time(gpu, softmax_bwd + dropout_bwd, params).time_s;
}

// The routed experts one GPU holds: experts / ep (fractional where a scenario splits them so).
double experts_per_gpu(const WorkloadConfig& w) {
  return double(w.model.moe.experts) / w.parallelism.ep;
}

// Llama 3's layout: (layers + 2) slots over pp x v chunks where the layers alone do not split.
bool embedding_and_head_take_slots(const WorkloadConfig& w) {
  if (w.parallelism.layout.given()) return false;  // the layout places them
  const int slots = std::max(1, w.parallelism.pp) * chunks_per_stage(w);
  return w.model.layers % slots != 0 && (w.model.layers + 2) % slots == 0;
}

}  // namespace

double loss_forward_bytes_per_logit(LossKernel k) {
  switch (k) {
    case LossKernel::kUnfused:
      return 4 + 4 + 8 + 8 + 4 + 8;
    case LossKernel::kFused:
      return 4 + 8 + 8;
    case LossKernel::kTe:
      return 2 + 2;
  }
  return 0;
}

double loss_backward_bytes_per_logit(LossKernel k) {
  return k == LossKernel::kTe ? 2 + 2 : 4 + 4 + 4 + 2;
}

bool per_expert_bias_path(const WorkloadConfig& w) {
  return w.model.moe.enabled() && w.model.linear_biases &&
         w.framework.kernels == KernelFusion::kFused && w.framework.expert_bias_eager();
}

double expert_bias_host_s(const WorkloadConfig& w) {
  if (!per_expert_bias_path(w)) return 0;
  return kExpertBiasHostS + experts_per_gpu(w) * kExpertBiasHostSPerExpert;
}

TpBlockGemms& TpBlockGemms::operator+=(const TpBlockGemms& o) {
  blocks += o.blocks;
  gathered_forward_s += o.gathered_forward_s;
  reduced_forward_s += o.reduced_forward_s;
  reduced_dgrad_s += o.reduced_dgrad_s;
  gathered_backward_s += o.gathered_backward_s;
  gathered_dgrad_s += o.gathered_dgrad_s;
  return *this;
}

TpBlockGemms TpBlockGemms::scaled(double f) const {
  return {f * blocks,          f * gathered_forward_s, f * reduced_forward_s,
          f * reduced_dgrad_s, f * gathered_backward_s, f * gathered_dgrad_s};
}

double LayerKernels::recompute_gemm_s(Recompute r, unsigned modules) const {
  switch (r) {
    case Recompute::kNone:
      return 0;
    case Recompute::kSelective: {
      double s = 0;
      if (modules & kRecomputeMlaUpProj) s += gemm_mla_up_forward_s;
      const bool whole_mlp = recomputes_whole_mlp(modules);
      if (whole_mlp) s += gemm_mlp_forward_s + gemm_shared_forward_s;
      if (moe && !whole_mlp && (modules & kRecomputeSharedExperts)) s += gemm_shared_forward_s;
      return s;
    }
    case Recompute::kSelectiveOp:
      return gemm_recomputed_by_op_s;
    case Recompute::kFull:
      return gemm_forward_s - full_recompute_skipped_gemm_s;
  }
  return 0;
}

double LayerKernels::recompute_s(Recompute r, unsigned modules) const {
  switch (r) {
    case Recompute::kNone:
      return 0;
    case Recompute::kSelective: {
      double s = recompute_gemm_s(r, modules);
      if (modules & kRecomputeCoreAttn) s += attention_forward_s;
      if (modules & kRecomputeLayerNorm) s += memory_norm_forward_s;
      if (recomputes_whole_mlp(modules)) {
        s += memory_act_forward_s + memory_permute_forward_s;
      } else if (moe && (modules & kRecomputeMoeAct)) {
        s += memory_act_forward_s;
      }
      return s;
    }
    case Recompute::kSelectiveOp:  // the collectives' outputs are kept, or gathered again
      return gemm_recomputed_by_op_s + memory_forward_s - sp_copy_forward_s - fsdp_forward_s;
    case Recompute::kFull:
      return forward_s() - full_recompute_skipped_gemm_s - full_recompute_skipped_memory_s -
             fsdp_forward_s;
  }
  return 0;
}

std::vector<int> moe_layers_of_stages(const WorkloadConfig& w) {
  const int pp = std::max(1, w.parallelism.pp);
  std::vector<int> out(static_cast<size_t>(pp), 0);
  if (!w.model.moe.enabled()) return out;
  // The leading dense layers go to the model's first chunks in model order: chunk c of every
  // stage before chunk c + 1 of any (the interleaved schedule's layout).
  std::vector<std::vector<int>> chunks;
  for (int s = 0; s < pp; ++s) chunks.push_back(layers_of_chunks(w, s));
  int dense_left = w.model.moe.dense_layers;  // not yet placed
  for (size_t c = 0; c < chunks.front().size(); ++c) {
    for (int s = 0; s < pp; ++s) {
      const int n = chunks[static_cast<size_t>(s)][c];
      const int dense = std::min(dense_left, n);
      dense_left -= dense;
      out[static_cast<size_t>(s)] += n - dense;
    }
  }
  return out;
}

int moe_layers_of_stage(const WorkloadConfig& w, int stage) {
  return moe_layers_of_stages(w)[static_cast<size_t>(stage)];
}

int moe_layers_per_stage(const WorkloadConfig& w) {
  const std::vector<int> moe = moe_layers_of_stages(w);
  return std::min(*std::max_element(moe.begin(), moe.end()), layers_per_stage(w));
}

LayerKernels layer_kernels(const GpuSpec& gpu, const WorkloadConfig& w,
                           const ComputeParams& params, bool moe_layer) {
  const ModelSpec& m = w.model;
  const auto& par = w.parallelism;
  const Precision p = w.precision;
  const double t = par.tp;
  const double h = m.hidden;
  const double head_dim = m.head_dim();
  const double q_width = m.q_width();
  const double kv_dim = m.kv_width();  // the K projection's width (MLA: every head's key)
  const double tokens = double(w.seq_len) / par.cp * w.micro_batch;
  const double ffn_out = m.up_width(m.ffn_hidden);
  const bool moe = moe_layer && m.moe.enabled();
  LayerKernels out;
  out.moe = moe;
  out.tp_gemms.attention.blocks = 1;
  out.tp_gemms.mlp.blocks = !moe || m.moe.shared_experts > 0 ? 1 : 0;

  // 1. Weight GEMMs (TP-local shapes: QKV and up column-split, out and down row-split). With TP
  // communication overlap, Transformer Engine's userbuffers split each GEMM that an all-gather
  // feeds or a reduce-scatter drains into tp chunks of tokens / tp rows, each computed while the
  // ring passes the next (forward and data gradients; weight gradients run whole).
  const int chunks = w.framework.tp_comm_overlap && par.tp > 1 ? par.tp : 1;
  const double sp = par.sp ? t : 1;  // the sequence-parallel shard of the residual stream
  // Full recomputation leaves a dense block's down projection and the residual add after it
  // out (LayerKernels::full_recompute_skipped_gemm_s).
  const bool early_stop = !moe && w.framework.recompute_stops_early();
  // Q, K, V and the gated MLP's halves as GEMMs of their own (FrameworkConfig::
  // separate_projection_gemms).
  const bool separate = w.framework.separate_projections();
  enum class Role { kAttention, kMlaUp, kMlp, kShared };
  struct Gemm {
    double m, n, k;
    double recomputed_share;  // what op-level checkpointing recomputes of it (LayerKernels)
    int chunks;
    bool quantized = true;    // an FP8 (FP4) GEMM under fp8 (fp4) training (the router is not)
    Role role = Role::kAttention;
    // Identical GEMMs (a GPU's local experts), each timed on its own with its own last partial
    // wave of tiles. Device call 30 (scenarios/measurements/call30, validate/device/
    // grouped_gemm.py, CUDA graphs, one H200): sixteen of Qwen3-30B-A3B's up projections at one
    // sequence (2048 rows each) ran at 603 TFLOP/s back to back, 593 on 4 streams as Transformer
    // Engine's GroupedLinear issues them, 603 as CUTLASS's grouped kernel (torch._grouped_mm),
    // against 668 as one GEMM of all their rows; the model's per-expert ratio is 0.897, measured
    // 0.903. Sharing the waves across experts is not what these kernels do.
    double count = 1;
    // Where its FP8 (FP4) casts run (Transformer Engine, module/linear.py and
    // layernorm_linear.py): a column-parallel linear under SP quantizes its input's sequence
    // shard and all-gathers the quantized tensor, a row-parallel one its output gradient's; a
    // norm fused into the linear (LayerNormLinear) computes its output's amax (current scaling)
    // or writes its output quantized (delayed scaling).
    bool norm_fed = false;
    bool gathers_input = false;
    bool gathers_grad = false;
    bool last = false;  // the block's last GEMM (a dense MLP's down projection)
    // Fed by the TP block's gathered input without being column-parallel (MLA's unsplit down
    // projections, which take the gathered hidden states).
    bool tp_fed = false;
    // A separate projection after the first on the same input (K and V after Q, up after
    // gate): the first's quantized copy of the input serves it.
    bool shares_input = false;
  };
  std::vector<Gemm> gemms;
  // The flags of the GEMM just added: column-parallel (its input gathered under SP), fed by a
  // fused norm, row-parallel (its output gradient gathered under SP).
  const auto column = [&](bool norm_fed) {
    gemms.back().gathers_input = true;
    gemms.back().norm_fed = norm_fed;
  };
  const auto row = [&] { gemms.back().gathers_grad = true; };
  // The column-parallel GEMMs of one norm-fed input, each output {width, the share op-level
  // checkpointing recomputes}: one fused GEMM, or (separate projections) one GEMM each, all
  // but the first reusing its quantized input.
  const auto project = [&](std::initializer_list<std::pair<double, double>> outputs, Role role) {
    const std::size_t first = gemms.size();
    for (const auto& [width, recomputed] : outputs) {
      gemms.push_back({tokens, width / t, h, recomputed, chunks, true, role});
      column(true);
      gemms.back().shares_input = gemms.size() > first + 1;
    }
  };
  if (m.mla.enabled()) {
    // MLA (DeepSeek-V3): the down projections unsplit, the up and output projections TP-split.
    const MlaSpec& a = m.mla;
    const double heads_t = m.heads / t;
    if (a.q_lora_rank > 0) {
      // The down projections take the gathered hidden states (Megatron-Core's MLA), the up
      // projections the latent through their fused norm (q_layernorm, kv_layernorm).
      gemms.push_back({tokens, double(a.q_lora_rank), h, 0, 1});
      gemms.back().tp_fed = true;
      gemms.push_back({tokens, heads_t * a.qk_head_dim(), double(a.q_lora_rank), 0, chunks, true,
                       Role::kMlaUp});
      gemms.back().norm_fed = true;
    } else {
      gemms.push_back({tokens, heads_t * a.qk_head_dim(), h, 0, chunks});
      column(false);
    }
    gemms.push_back({tokens, double(a.kv_lora_rank + a.qk_rope_head_dim), h, 0, 1});
    gemms.back().tp_fed = true;
    gemms.push_back({tokens, heads_t * (a.qk_nope_head_dim + a.v_head_dim),
                     double(a.kv_lora_rank), 0, chunks, true, Role::kMlaUp});
    gemms.back().norm_fed = true;
    gemms.push_back({tokens, h, heads_t * a.v_head_dim, 1, chunks});
    row();
  } else {
    // Op-level checkpointing recomputes K's projection.
    const double qkv = q_width + kv_dim + m.v_width();
    if (separate) {
      project({{q_width, 0}, {kv_dim, 1}, {m.v_width(), 0}}, Role::kAttention);
    } else {
      project({{qkv, kv_dim / qkv}}, Role::kAttention);
    }
    gemms.push_back({tokens, h, m.heads * m.v_head_dim() / t, 1, chunks});
    row();
  }
  if (!moe) {
    // The gate (w1) and the up half (w3, which op-level checkpointing recomputes).
    if (separate && m.gated_ffn) {
      project({{m.ffn_hidden, 0}, {m.ffn_hidden, 1}}, Role::kMlp);
    } else {
      project({{ffn_out, m.gated_ffn ? 0.5 : 0}}, Role::kMlp);
    }
    gemms.push_back({tokens, h, m.ffn_hidden / t, 0, chunks, true, Role::kMlp});
    row();
    gemms.back().last = true;
  } else {
    // The router on the sequence-parallel shard; the routed experts, each over its share of
    // the routed tokens; the shared experts TP-split like a dense MLP.
    const MoeSpec& e = m.moe;
    const double shard = tokens / t;
    const double local_experts = experts_per_gpu(w);
    const double routed = shard * e.top_k * w.moe_routing.busiest_share();
    // Expert TP: each expert's rows are the etp ranks' gathered tokens, its columns (up) and
    // reduction (down) 1/etp of the FFN.
    const double etp = par.etp;
    const double per_expert = routed / local_experts * etp;
    const double out_e = m.up_width(e.expert_ffn_hidden) / etp;
    gemms.push_back({shard, double(e.experts), h, 0, 1, false, Role::kMlp});
    gemms.push_back({per_expert, out_e, h, 0, 1, true, Role::kMlp, local_experts});
    gemms.push_back({per_expert, h, e.expert_ffn_hidden / etp, 0, 1, true, Role::kMlp,
                     local_experts});
    if (e.shared_experts > 0) {
      const double f_s = double(e.shared_experts) * e.expert_ffn_hidden;
      // A MoE layer's norm stands alone (TENorm): its output feeds the router and both MLPs.
      gemms.push_back({tokens, m.up_width(f_s) / t, h, 0, chunks, true, Role::kShared});
      column(false);
      gemms.push_back({tokens, h, f_s / t, 0, chunks, true, Role::kShared});
      row();
    }
  }
  // Quantized training casts each quantized GEMM's input forward and its output gradient
  // backward.
  //
  // Hopper's FP8 tensor-core GEMMs take both operands K-major, so the weight-gradient GEMM
  // needs the input and the output gradient transposed as well: Transformer Engine's fused
  // cast_transpose (and DeepSeek's per_channel_cast_and_transpose) reads the 16-bit tensor once
  // and writes both FP8 copies. Block-scaled formats (MXFP8, NVFP4) scale along the reduction,
  // which the weight-gradient GEMM takes along the other dimension: one kernel reads the tensor
  // and writes both quantizations with their scales (NVFP4's column-wise one through a 16-point
  // Hadamard transform, fused into that cast). Blackwell's data-center FP8 GEMMs (sm_100,
  // sm_103) take any operand layout, and Transformer Engine then quantizes a per-tensor-scaled
  // tensor once, with no transposed copy (pytorch/csrc/quantizer.cpp: with_transpose =
  // columnwise_usage && !nvte_is_non_tn_fp8_gemm_supported(), true from sm_100 to sm_119 and from
  // sm_130; TE 2.4, May 2025).
  //
  // Under SP a per-tensor-scaled tensor is quantized on its sequence shard and gathered in FP8,
  // row-wise only (distributed.py, _all_gather_fp8: "We cannot directly all-gather the
  // transposed fp8 tensor"); on Hopper the backward then transposes the gathered tensor
  // (_create_transpose: read and write a byte per element). Block-scaled tensors are gathered
  // with both quantizations.
  //
  // Current scaling (fp8_recipe tensorwise) takes each tensor's amax in a pass of its own before
  // the cast (quantizer.cpp, Float8CurrentScalingQuantizer::quantize_impl: nvte_compute_amax,
  // then nvte_quantize_v2), a second read of the 16-bit tensor, except where a fused norm
  // computes it (normalization.cpp: FUSED_NORM_AMAX_FP8); the backward's activation functions
  // fuse no cast under it (layernorm_mlp.py). Delayed scaling records the amax inside the cast,
  // and its fused norm writes the quantized output in place of the 16-bit one.
  const bool low_precision = quantized(p);
  const ComputeParams quantized_params =
      gemm_params(gpu, p, params, w.framework.fp8_recipe == Fp8Recipe::kBlockwise);
  const bool current = p == Precision::kFp8 && w.framework.fp8_recipe == Fp8Recipe::kTensorwise;
  const bool delayed = p == Precision::kFp8 && w.framework.fp8_recipe == Fp8Recipe::kDelayed;
  const bool per_tensor = current || delayed;
  const bool one_copy = per_tensor && arch_family(gpu.arch) == "sm_100";
  // A pass of its own reads the 16-bit tensor for its amax before the cast: current scaling's
  // (but where a fused norm computes it) and NVFP4's, whose per-tensor global scale every block's
  // E4M3 scale is taken against (quantizer.cpp, NVFP4Quantizer::quantize_impl, TE 2.8-2.18:
  // nvte_hadamard_transform_amax with the random Hadamard transform, nvte_compute_amax_with_config
  // without, then the cast; normalization.cpp leaves the norm unfused under the transform's amax).
  const bool amax_pass = current || p == Precision::kFp4;
  const double q = quantized_tensor_bytes(w);
  // Bytes one cast moves, and (on Hopper) the backward's transpose of a gathered tensor.
  struct CastBytes {
    double cast = 0, transpose = 0;
  };
  const auto cast_bytes = [&](double elements, bool gathered, bool norm_fed) {
    CastBytes b;
    const bool gathered_rowwise = gathered && sp > 1 && per_tensor;
    const double local = gathered ? elements / sp : elements;
    const double write = (gathered_rowwise || one_copy ? 1 : 2) * q * local;
    if (delayed && norm_fed) {
      b.cast = std::max(0.0, write - 2 * local);  // in place of the norm's 16-bit output
    } else {
      b.cast = (amax_pass && !(current && norm_fed) ? 4 : 2) * local + write;
    }
    if (gathered_rowwise && !one_copy) b.transpose = 2 * q * elements;
    return b;
  };
  const double accumulate_bytes = wgrad_accumulate_bytes(w);
  double cast_forward_bytes = 0, cast_backward_bytes = 0;
  for (const Gemm& g : gemms) {
    if (g.m <= 0) continue;
    const bool gemm_quantized = low_precision && g.quantized;
    WeightGemm wg = weight_gemm(gpu, gemm_quantized ? p : unquantized_precision(p), g.m, g.n,
                                g.k, gemm_quantized ? quantized_params : params, g.chunks,
                                accumulate_bytes);
    wg.forward_s *= g.count;
    wg.backward_s *= g.count;
    out.gemm_forward_s += wg.forward_s;
    out.gemm_backward_s += wg.backward_s;
    out.gemm_recomputed_by_op_s += g.recomputed_share * wg.forward_s;
    switch (g.role) {
      case Role::kMlaUp: out.gemm_mla_up_forward_s += wg.forward_s; break;
      case Role::kMlp: out.gemm_mlp_forward_s += wg.forward_s; break;
      case Role::kShared: out.gemm_shared_forward_s += wg.forward_s; break;
      case Role::kAttention: break;
    }
    if (g.last && early_stop) {
      out.full_recompute_skipped_gemm_s += wg.forward_s;
    }
    TpBlockGemms& block = g.role == Role::kMlp || g.role == Role::kShared ? out.tp_gemms.mlp
                                                                           : out.tp_gemms.attention;
    if (g.gathers_input || g.tp_fed) {
      block.gathered_forward_s += wg.forward_s;
      block.gathered_backward_s += wg.backward_s;
      block.gathered_dgrad_s += wg.dgrad_s;
    }
    if (g.gathers_grad) {
      block.reduced_forward_s += wg.forward_s;
      block.reduced_dgrad_s += wg.dgrad_s;
    }
    if (gemm_quantized) {
      const CastBytes in =
          g.shares_input ? CastBytes{} : cast_bytes(g.m * g.k, g.gathers_input, g.norm_fed);
      const CastBytes grad = cast_bytes(g.m * g.n, g.gathers_grad, false);
      cast_forward_bytes += g.count * in.cast;
      cast_backward_bytes += g.count * (in.transpose + grad.cast + grad.transpose);
    }
  }

  // 2. The attention core: ring attention runs cp chunks of s/cp queries against s/cp keys.
  const double heads_local = m.heads / t;
  if (fused_attention(w.framework.attention)) {
    AttentionShape a;
    a.batch = w.micro_batch;
    a.heads = heads_local;
    a.kv_heads = std::max(1.0, (m.mla.enabled() ? m.heads : m.kv_heads) / t);
    // MLA's query/key heads are 192 wide and its value heads 128: the core's FLOPs follow
    // their mean (2 s (qk + v) per head).
    a.head_dim = 0.5 * (m.qk_head_dim() + m.v_head_dim());
    a.q_tokens = double(w.seq_len) / par.cp;
    a.kv_tokens = a.q_tokens;
    a.dropout = w.dropout;
    // Transformer Engine's FP8 attention (framework.fp8_attention) runs both matmuls in FP8.
    const Precision pa = w.framework.fp8_attention ? Precision::kFp8 : unquantized_precision(p);
    const ComputeParams kernel = attention_kernel_params(params, w.framework.attention);
    out.attention_forward_s = par.cp * attention_time(gpu, pa, a, false, kernel).time_s;
    out.attention_backward_s = par.cp * attention_time(gpu, pa, a, true, kernel).time_s;
    // Sliding-window layers: each query against the window's keys, at the kernel's rate for
    // keys that few (the sequence's K and V still read whole); the layer's time is the mean over
    // the windowed and the full layers.
    const double share = m.windowed_share();
    if (share > 0) {  // a window no shorter than the sequence times as the full layers
      AttentionShape win = a;
      win.window = m.sliding_window;
      const double fwd = par.cp * attention_time(gpu, pa, win, false, kernel).time_s;
      const double bwd = par.cp * attention_time(gpu, pa, win, true, kernel).time_s;
      out.attention_forward_s = (1 - share) * out.attention_forward_s + share * fwd;
      out.attention_backward_s = (1 - share) * out.attention_backward_s + share * bwd;
    }
    if (!w.framework.cp_allgather) {
      const double tokens_local = a.batch * a.q_tokens;
      const RingAttentionPasses ring = ring_attention_passes(
          gpu, params, tokens_local * heads_local * m.v_head_dim(),
          tokens_local * heads_local * m.qk_head_dim(),
          tokens_local * a.kv_heads * m.qk_head_dim(), par.cp,
          working_bytes(unquantized_precision(p)),
          w.framework.kernels != KernelFusion::kFused);
      out.attention_forward_s += ring.forward_s;
      out.attention_backward_s += ring.backward_s;
    }
  } else {
    unfused_attention(gpu, w, params, heads_local, head_dim, &out);
  }

  // 3. Memory-bound kernels, bytes per token (see the header).
  const double e = working_bytes(p);
  // A TP reduce-scatter that copy engines move (FrameworkConfig::copy_engine_reduce_scatters:
  // Transformer Engine's ring exchange, PyTorch's async TP) sends each peer the GEMM's partial
  // output for that peer's rows and ends with a kernel on the compute stream that sums the tp
  // partials it received: read the GEMM's whole tokens x h output, write the tokens / tp x h
  // shard (TE's reduce_bf16 in split_overlap_rs_p2p; torch.sum over the stacked partials in
  // _fused_matmul_reduce_scatter_impl). An SM-driven reduce-scatter (NCCL, TE's pipeline and
  // bulk methods) reduces inside its communication kernel instead. MoE layers reduce-scatter
  // only their shared experts' output.
  double rs_forward_s = 0, rs_backward_s = 0;
  if (const int rs = w.framework.copy_engine_reduce_scatters(); rs > 0 && par.tp > 1) {
    const double outputs = (!moe || m.moe.shared_experts > 0) ? 2 : 1;
    // The partials are GEMM outputs, in the working precision's bytes (fp8 GEMMs write 16 bits).
    const double one = elementwise_time(gpu, tokens * h * e * (1 + 1 / t), params).time_s;
    rs_forward_s = std::min(rs, 2) / 2.0 * outputs * one;
    rs_backward_s = std::max(rs - 2, 0) / 2.0 * outputs * one;
  }
  // PyTorch FSDP with mixed precision (zero 3 over fp32 shards): per micro-batch each layer's
  // parameters are cast to 16 bits on the shard (read 4, write 2 per parameter of the shard)
  // and all-gathered, then copied out of the gathered buffer into the parameters (read 2,
  // write 2), in the forward and again for the backward (FSDP reshards after the forward); the
  // 16-bit gradients are cast to fp32 into the reduce-scatter's buffer (read 2, write 4):
  // (6 / shard + 4) forward and (6 / shard + 4 + 6) backward bytes per parameter. One rank of
  // FSDP2 on our H200 (device call 20, scenarios/measurements/call20): chunk_cat, the
  // device-to-device copies and the casts took 15.1 ms a step for 1.32 B parameters. With
  // quantized all-gathers (fp8_param_gather: torchao's float8 FSDP all-gather) the shard is cast
  // to FP8 instead (read 4, write 1) and the FP8 weight gathered and copied out (read 1, write 1).
  // This GPU's share of the layer's matmul weights: the attention's projections and the MLP, or
  // a MoE layer's local experts (each 1 / etp of its FFN), its shared experts (TP-split) and
  // its router.
  const double attention_weights =
      (h * (q_width + kv_dim + m.v_width()) + m.heads * m.v_head_dim() * h) / t;
  double mlp_weights = (ffn_out + m.ffn_hidden) * h / t;
  if (moe) {
    const MoeSpec& x = m.moe;
    const double fe = x.expert_ffn_hidden, fs = double(x.shared_experts) * fe;
    mlp_weights = experts_per_gpu(w) * (m.up_width(fe) + fe) * h / par.etp +
                  (m.up_width(fs) + fs) * h / t + h * x.experts;
  }
  const double layer_weights = attention_weights + mlp_weights;
  const ComputeParams::EagerRates& rate = params.eager;
  // Seconds to move `bytes` in a kind of eager kernel on this GPU.
  const auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
    return bytes / eager_bandwidth_Bps(gpu, kind, params);
  };
  const bool quantized_gather = gathers_quantized_weights(w);
  double fsdp_forward_s = 0, fsdp_backward_s = 0;
  if (pytorch_fsdp(w) && mixed_precision(p)) {
    const double shard = double(par.dp) * par.cp;
    fsdp_forward_s = fsdp_gather_s(gpu, params, layer_weights, shard, quantized_gather ? q : e);
    // Without resharding after the forward (reshard_after_forward false) the backward uses
    // the forward's gathered weights.
    fsdp_backward_s = (w.framework.reshard_after_forward ? fsdp_forward_s : 0) +
                      fsdp_gradient_cast_s(gpu, params, layer_weights);
  }
  // Sequence parallelism on [batch, sequence, hidden] activations (FrameworkConfig::
  // batch_first_layout): each TP collective that PyTorch's functional collectives run copies the
  // whole gathered tensor once (torch.cat of its tp chunks: read and write tokens x h), after an
  // all-gather or before a reduce-scatter. A dense layer gathers the attention's and the MLP's
  // inputs (2) and reduce-scatters their outputs (2) forward; backward the gathers' gradients
  // are reduce-scattered and the reduce-scatters' gathered; a MoE layer counts its attention's.
  // Async TP's fused matmuls take the chunks in place: under tp_comm_overlap only the
  // input-gradient reduce-scatters it leaves unfused (tp_overlap_input_gradients false) copy.
  // The inputs gathered again for the weight gradients (sp_input_regather; PyTorch's op-level
  // checkpointing recomputes their gathers) feed those GEMMs as their second operand, which no
  // fused matmul takes: they copy either way.
  double sp_copy_forward_s = 0, sp_copy_backward_s = 0;
  if (par.sp && par.tp > 1 && w.framework.batch_first_layout()) {
    const double gathers = moe ? 1 : 2;  // = the reduce-scatters, a layer and pass
    const double one = at(rate.cat, 2 * tokens * h * e);
    const bool fused = w.framework.tp_comm_overlap;
    const bool input_grads_fused = fused && w.framework.tp_overlap_input_gradients;
    // Backward: the gathers' gradients (reduce-scatters), the reduce-scatters' (gathers), the
    // inputs gathered again.
    const double backward_copies = (input_grads_fused ? 0 : gathers) + (fused ? 0 : gathers) +
                                   (sp_regathers_inputs(w) ? gathers : 0);
    sp_copy_forward_s = fused ? 0 : 2 * gathers * one;
    sp_copy_backward_s = backward_copies * one;
  }
  // Memory-bound time outside the layer's op list: FSDP's casts and copies, the reductions,
  // the collectives' layout copies.
  const double outside_forward_s = fsdp_forward_s + rs_forward_s + sp_copy_forward_s;
  const double outside_backward_s = fsdp_backward_s + rs_backward_s + sp_copy_backward_s;
  out.sp_copy_forward_s = sp_copy_forward_s;
  out.fsdp_forward_s = fsdp_forward_s;
  if (w.framework.kernels != KernelFusion::kFused) {
    // PyTorch eager, op by op: bytes per token, each term at its kind of kernel's measured rate
    // (ComputeParams::EagerRates). Under autocast with fp32 parameters (outside FSDP) the
    // residual stream x is fp32 and every weight is cast to 16 bits each forward (read 4, write
    // 2: a down-cast) and its 16-bit gradient to fp32 each backward (read 2, write 4: an
    // up-cast); FSDP's mixed precision runs the layer on 16-bit parameters and a 16-bit stream.
    // GEMM outputs are 16-bit; the linears' biases are added in the GEMMs' epilogues.
    // Forward on the residual stream: two norms, each in fp32 on x (torch's fused rms_norm or
    // LayerNorm under autocast: 8 h at the norm's rate, and the next linear's cast of its output
    // 6 h, a down-cast), on a 16-bit stream 4 h, or in 16 bits on a 16-bit cast of x
    // (framework.low_precision_norm: the down-cast 6 h, the norm 4 h); two residual adds of a
    // 16-bit output (to an fp32 stream 10 h each, mixed dtypes, else 6 h, same-dtype).
    // Forward on this GPU's heads and FFN columns: the attention output's transposing copy (4 h,
    // layout); with rotary embedding, rotary on Q and K in fp32 (x1 c, x2 s, x1 s, x2 c: strided
    // 16-bit halves times the broadcast fp32 table, 12 h; their difference and sum, 12 h
    // same-dtype; the concatenation, 8 h: 32 h each), SDPA's down-casts of them (12 h) and V's
    // contiguous copy (4 h, layout) (without it SDPA takes strided views of the QKV output); SiLU
    // (4 f) and the gate product (6 f), same-dtype, or GELU (4 f).
    // Backward on the stream: the two branch outputs' gradients down-cast to 16 bits (fp32
    // stream: 6 h each); each norm's backward with its cast's backward and the gradient
    // accumulated into the stream's (in fp32 26 h: the up-cast 6 h, the norm's backward 12 h,
    // the accumulation 8 h; in 16 bits on a cast 28 h: input gradient 6 h and weight and bias
    // gradients 4 h at the norm backward's rate, the up-cast 6 h, the fp32 accumulation 12 h; on
    // a 16-bit stream the norm's 6 h (+ 4 h for LayerNorm's bias and weight) and a 6 h
    // accumulation).
    // Backward on this GPU's heads and columns: the transposing copy (4 h); rotary's slices and
    // sums (92 h: the four products' gradients, 32 h strided, the slices' scatter back into Q's
    // and K's gradients, 16 h layout, the rest 44 h same-dtype), SDPA's casts' gradients (12 h,
    // up-casts) and Q's and K's fp32 gradients down-cast (12 h); Q, K and V's gradients
    // concatenated (12 h); the gate product's and SiLU's gradients (18 f) and the gate and up
    // gradients concatenated (8 f), or GELU's (6 f); with biases, each linear's bias gradient
    // reads its output gradient (2 bytes per output column).
    // Llama under autocast: forward 132 h + 10 f, backward 196 h + 26 f bytes; MPT's GPT-style
    // layer (low-precision LayerNorm, GELU, biases, no rotary) under autocast: 44 h + 4 f and
    // 94 h + 8 f. At the single rate of an up-cast (0.44), these counted 8-17% over the
    // elementwise GPU time of our profiled H200 steps (device calls 12, 14, 20, 23; the 1.4B
    // Llama's 156.8 ms a step where it counted 170, MPT-1B's and the 7B layer's 66.1 and 40.1
    // where it counted 78 and 46).
    // With TP, the ops on the residual stream run on the sequence-parallel shard (all of it
    // without SP), the rest on this GPU's heads and FFN columns: 1 / t of them.
    const bool stream32 = fp32_residual_stream(w);
    const double f = m.ffn_hidden;
    const bool rms = m.normalization == Normalization::kRmsNorm;
    const ComputeParams::EagerRate& norm_rate = rms ? rate.rms_norm : rate.layer_norm;
    // Seconds per token of each of the two norms and residual adds, forward and backward.
    double norm_fwd = 0, norm_bwd = 0;
    if (w.framework.fp32_op_norm) {
      // TorchTitan's RMSNorm on the 16-bit stream, op by op (call 25's kernel lists: 45-48 ms of
      // the 8B layers' 136 ms of elementwise time on the H200). Forward: x.float() (6 h, an
      // up-cast), pow (8 h) and mean (4 h) in fp32, the product by the broadcast rsqrt (8 h, a
      // non-vectorized broadcast: 2.46 TB/s measured, the mixed kind's rate), type_as (6 h, a
      // down-cast), the product by the broadcast weight in 16 bits (4 h: 1.45 TB/s measured,
      // the layout kind's). Backward (autograd): the weight's product and its gradient's product
      // and sum over tokens (4 h layout, 6 h same, 2 h norm backward), type_as's up-cast (6 h),
      // the rsqrt product's two gradients (8 h mixed; 12 h and the sum over h 4 h, same), the
      // mean's and pow's backwards (8 h and 20 h), the two gradients added (12 h), x.float()'s
      // down-cast (6 h); then the accumulation into the stream's gradient (6 h).
      norm_fwd = at(rate.cast_up, 6 * h) + at(rate.same, 12 * h) + at(rate.mixed, 8 * h) +
                 at(rate.cast_down, 6 * h) + at(rate.layout, 4 * h);
      norm_bwd = at(rate.layout, 4 * h) + at(rate.same, 6 * h) + at(rate.norm_backward, 2 * h) +
                 at(rate.cast_up, 6 * h) + at(rate.mixed, 8 * h) + at(rate.same, 56 * h) +
                 at(rate.cast_down, 6 * h) + at(rate.same, 6 * h);
    } else if (!stream32) {  // on a 16-bit stream
      norm_fwd = at(norm_rate, 4 * h);
      norm_bwd = at(rate.norm_backward, (rms ? 6 : 10) * h) + at(rate.same, 6 * h);
    } else if (w.framework.low_precision_norm) {  // in 16 bits on a cast of the fp32 stream
      norm_fwd = at(rate.cast_down, 6 * h) + at(norm_rate, 4 * h);
      norm_bwd = at(rate.norm_backward, 10 * h) + at(rate.cast_up, 6 * h) + at(rate.same, 12 * h);
    } else {  // in fp32 on the fp32 stream
      norm_fwd = at(norm_rate, 8 * h) + at(rate.cast_down, 6 * h);
      norm_bwd = at(rate.cast_up, 6 * h) + at(rate.norm_backward, 12 * h) + at(rate.same, 8 * h);
    }
    const double add_fwd = stream32 ? at(rate.mixed, 10 * h) : at(rate.same, 6 * h);
    const double add_bwd = stream32 ? at(rate.cast_down, 6 * h) : 0;
    const double stream_fwd = 2 * (norm_fwd + add_fwd);
    const double stream_bwd = 2 * (norm_bwd + add_bwd);
    // On this GPU's heads and columns: the transposing copy (and the Q, K, V gradients'
    // concatenation), rotary with its casts, the MLP's activation (and gate).
    // Separate projections (FrameworkConfig::separate_projection_gemms) have no concatenated
    // gradients and no strided V to copy; instead autograd sums their input gradients, Q's, K's
    // and V's (two adds) and the gate's and up's (one), each reading two and writing one
    // 16-bit tensor of the whole (gathered) sequence: 6 h a token each, on no shard.
    double local_fwd = at(rate.layout, 4 * h);
    double local_bwd = at(rate.layout, 4 * h) + (separate ? 0 : at(rate.cat, 12 * h));
    double whole_bwd = separate ? at(rate.same, 2 * 6 * h) : 0;
    if (m.position_embedding == PositionEmbedding::kRope) {
      local_fwd += at(rate.strided, 24 * h) + at(rate.same, 24 * h) + at(rate.cat, 16 * h) +
                   at(rate.cast_down, 12 * h) + (separate ? 0 : at(rate.layout, 4 * h));
      local_bwd += at(rate.strided, 32 * h) + at(rate.layout, 16 * h) + at(rate.same, 44 * h) +
                   at(rate.cast_up, 12 * h) + at(rate.cast_down, 12 * h);
    }
    // A MoE layer as TorchTitan's MoE code runs it in PyTorch (torchtitan/models/moe/moe.py,
    // validate/device/train_step.py's MoEBlock), per token of the micro-batch: the router's
    // logits cast to fp32 (6 E), their softmax (8 E) and top-k (4 E), the output zeroed for the
    // scatter_add (2 h); per routed copy on this GPU: its token's row gathered (4 h), scaled by
    // its score in fp32 (up-cast 6 h, product 8 h, down-cast 6 h), the experts' SiLU and gate
    // product (10 f), the output row added back into its token's (read 2 h, the add's read and
    // write 4 h). Backward: per copy the output gradient gathered (4 h), the activation's
    // gradients (18 f), the two grouped GEMMs' input gradients summed (6 h), the scaling's
    // backward (up-cast 6 h, the product 8 h, the score's gradient 8 h, down-cast 6 h) and the
    // gather's (scatter_add into the zeroed input gradient, 6 h a copy, 2 h a token); per token
    // the router's top-k and softmax backward with the cast (22 E). Shared experts as a dense
    // SwiGLU MLP.
    double moe_fwd = 0, moe_bwd = 0;
    if (moe) {
      const MoeSpec& x = m.moe;
      const double copies = x.top_k * w.moe_routing.busiest_share() / t;
      const double fe = x.expert_ffn_hidden / par.etp;
      const double experts = x.experts;
      moe_fwd = at(rate.cast_up, 6 * experts) + at(rate.same, 12 * experts) +
                at(rate.same, 2 * h) +
                copies * (at(rate.same, 4 * h) + at(rate.cast_up, 6 * h) + at(rate.same, 8 * h) +
                          at(rate.cast_down, 6 * h) + at(rate.same, 10 * fe) +
                          at(rate.layout, 6 * h));
      moe_bwd = at(rate.same, 18 * experts) + at(rate.cast_down, 6 * experts) +
                at(rate.same, 2 * h) +
                copies * (at(rate.same, 4 * h) + at(rate.same, 18 * fe) + at(rate.same, 6 * h) +
                          at(rate.cast_up, 6 * h) + at(rate.same, 16 * h) +
                          at(rate.cast_down, 6 * h) + at(rate.layout, 6 * h));
      const double fs = double(x.shared_experts) * x.expert_ffn_hidden;
      local_fwd += at(rate.same, 10 * fs);
      local_bwd += at(rate.same, 18 * fs);
    } else if (m.gated_ffn) {
      local_fwd += at(rate.same, 10 * f);
      local_bwd += at(rate.same, 18 * f) + (separate ? 0 : at(rate.cat, 8 * f));
      whole_bwd += separate ? at(rate.same, 6 * h) : 0;
    } else {
      local_fwd += at(rate.gelu, 4 * f);
      local_bwd += at(rate.gelu_backward, 6 * f);
    }
    if (m.linear_biases)
      local_bwd += at(rate.same, 2 * (q_width + kv_dim + m.v_width() + h + ffn_out + h));
    const double casts_fwd = stream32 ? at(rate.cast_down, 6 * layer_weights / tokens) : 0;
    const double casts_bwd = stream32 ? at(rate.cast_up, 6 * layer_weights / tokens) : 0;
    const double fwd = local_fwd / t + stream_fwd / sp + casts_fwd + moe_fwd;
    const double bwd = local_bwd / t + stream_bwd / sp + whole_bwd + casts_bwd + moe_bwd;
    // torch.compile fuses those ops: a measured share of eager's time (call 14).
    const double share =
        w.framework.kernels == KernelFusion::kCompiled ? params.compiled_elementwise_share : 1.0;
    out.memory_forward_s = share * fwd * tokens + outside_forward_s;
    out.memory_backward_s = share * bwd * tokens + outside_backward_s;
    if (low_precision) {
      // Quantized linears in PyTorch (torchao's Float8Linear, tensorwise): the activations' and
      // gradients' casts of section 1, and the weights', which nothing caches: each forward
      // takes the 16-bit weight's amax and casts it (read 2 twice, write 1 a parameter), each
      // backward casts it again into the column-major layout the data gradient's GEMM takes
      // (torchao's matmul_with_hp_or_float8_args). Under an FP8 all-gather the gathered weight
      // is already FP8 (FSDP's shard cast above): the backward copies it column-major (read
      // 1, write 1). Dense layers' weights (a MoE layer's experts are not torchao's here).
      const double weights = moe ? 0 : layer_weights;
      const double weight_fwd = quantized_gather ? 0 : (2 * e + q) * weights;
      const double weight_bwd = (quantized_gather ? 2 * q : 2 * e + q) * weights;
      out.memory_forward_s +=
          elementwise_time(gpu, cast_forward_bytes + weight_fwd, params).time_s;
      out.memory_backward_s +=
          elementwise_time(gpu, cast_backward_bytes + weight_bwd, params).time_s;
    }
    if (early_stop) {  // the last residual add, the down weight's cast
      const double down_cast = stream32 ? at(rate.cast_down, 6 * h * f / t / tokens) : 0;
      out.full_recompute_skipped_memory_s = share * (add_fwd / sp + down_cast) * tokens;
    }
    return out;
  }
  const double drop_mask = w.dropout > 0 ? kMaskBytes : 0;
  double bytes = 0;
  const double norm_bytes = 2 * (2 * h * e) / sp;  // two norms: read h, write h
  double act_bytes = 0, permute_bytes = 0;
  // A residual add (with dropout's mask) on the sequence shard: read two, write one.
  const double residual_add_bytes = (3 * h * e + h * drop_mask) / sp;
  bytes += 2 * residual_add_bytes;
  if (!moe) {
    act_bytes = (ffn_out + m.ffn_hidden) / t * e;  // activation: read the up (+ gate), write f
  } else {
    // Per token of the micro-batch: the routed copies (top_k x the busiest share, on the
    // sequence shard) permuted into expert order and back (read + write h each way), the
    // experts' activation, the shared experts' activation, the router's fp32 softmax.
    const MoeSpec& x = m.moe;
    const double copies = x.top_k * w.moe_routing.busiest_share() / t;
    const double out_e = m.up_width(x.expert_ffn_hidden);
    permute_bytes = copies * 2 * 2 * h * e + 2.0 * x.experts * 4 / t;
    act_bytes = copies * (out_e + x.expert_ffn_hidden) * e +
                x.shared_experts * (out_e + x.expert_ffn_hidden) / t * e;
  }
  bytes += norm_bytes + act_bytes + permute_bytes;
  out.memory_norm_forward_s = elementwise_time(gpu, norm_bytes * tokens, params).time_s;
  out.memory_act_forward_s = elementwise_time(gpu, act_bytes * tokens, params).time_s;
  out.memory_permute_forward_s = elementwise_time(gpu, permute_bytes * tokens, params).time_s;
  if (m.mla.enabled()) {
    // The latents' two norms; rotary on the decoupled query and key parts.
    bytes += 2 * (m.mla.q_lora_rank + m.mla.kv_lora_rank) * e;
    if (m.position_embedding == PositionEmbedding::kRope) {
      bytes += 2 * (m.heads / t + 1) * m.mla.qk_rope_head_dim * e;
    }
  } else if (m.position_embedding == PositionEmbedding::kRope) {
    bytes += 2 * (q_width + kv_dim) / t * e;
  }
  if (w.framework.attention == AttentionKernel::kUnfused) bytes += 2 * h / t * e;
  out.memory_forward_s = elementwise_time(gpu, bytes * tokens, params).time_s;
  if (early_stop) {  // the last residual add
    out.full_recompute_skipped_memory_s =
        elementwise_time(gpu, residual_add_bytes * tokens, params).time_s;
  }
  out.memory_backward_s = 2 * out.memory_forward_s;
  if (moe && per_expert_bias_path(w)) {
    // The experts' output bias added expert by expert in eager PyTorch (Megatron-Core's
    // TEGroupedMLP._apply_bias, FrameworkConfig::expert_bias_per_expert), per routed copy:
    // forward the bias times the copy's probability (a broadcast product writing h), its sum with
    // the second linear's output (read 2h, write h) and the concatenation of the experts' slices
    // (read h, write h); backward the output gradient times the probability and times the bias
    // (broadcast products reading h and writing h each), their sums over the copies and over h
    // (reading h each) and the gradient's slices concatenated back (read h, write h). Device
    // call 34 (kExpertBiasGpuSPerExpert's comment): the broadcast products ran as PyTorch's
    // non-vectorized broadcast kernel at 1.19 TB/s (the layout kind's rate, 1.23), the sums
    // near the norm backward's; those bytes give the measured time within 0.06 ms at 4
    // experts, and each expert adds kExpertBiasGpuSPerExpert of small kernels' time (its seven
    // kernels of 1,024 rows or fewer).
    const double copies = m.moe.top_k * w.moe_routing.busiest_share() / t * tokens;
    const double local_experts = experts_per_gpu(w);
    out.memory_forward_s +=
        copies * (at(rate.layout, h * e) + at(rate.same, 3 * h * e) + at(rate.cat, 2 * h * e)) +
        kExpertBiasForwardKernelShare * local_experts * kExpertBiasGpuSPerExpert;
    out.memory_backward_s +=
        copies * (at(rate.layout, 4 * h * e) + at(rate.norm_backward, 2 * h * e) +
                  at(rate.cat, 2 * h * e)) +
        (1 - kExpertBiasForwardKernelShare) * local_experts * kExpertBiasGpuSPerExpert;
  }
  out.memory_forward_s += outside_forward_s;
  out.memory_backward_s += outside_backward_s;
  if (low_precision) {
    out.memory_forward_s +=
        elementwise_time(gpu, cast_forward_bytes, params).time_s;
    out.memory_backward_s += elementwise_time(gpu, cast_backward_bytes, params).time_s;
  }
  return out;
}

ComputeParams attention_kernel_params(const ComputeParams& params, AttentionKernel kernel) {
  if (kernel == AttentionKernel::kFlash1) return flash1_params(params);
  return kernel == AttentionKernel::kFlash2 ? flash2_params(params) : params;
}

int chunks_per_stage(const WorkloadConfig& w) {
  return w.parallelism.pp_schedule == PipelineSchedule::kInterleaved
             ? std::max(1, w.parallelism.virtual_stages)
             : 1;
}

int interleaved_warmup_passes(int pp, int stage, int micro_batches, int chunks) {
  const int total = micro_batches * chunks;
  if (micro_batches == pp) return total;
  return std::min(total, 2 * (pp - stage - 1) + (chunks - 1) * pp);
}

InterleavedPass interleaved_pass(int pass, int pp, int chunks, bool forward) {
  const int group = pp * chunks;
  const int chunk = (pass % group) / pp;
  return {forward ? chunk : chunks - 1 - chunk, (pass / group) * pp + pass % pp};
}

std::vector<int> layers_of_stages(const WorkloadConfig& w) {
  const int pp = std::max(1, w.parallelism.pp);
  const int layers = w.model.layers;
  std::vector<int> out(static_cast<size_t>(pp), 0);
  const auto& par = w.parallelism;
  if (par.layout.given()) {
    // Megatron-Core's layout: model chunk c x pp + s on stage s (the loader checked the count).
    const std::vector<int>& chunk = par.layout.chunk_layers;
    for (size_t c = 0; c < chunk.size(); ++c) out[c % static_cast<size_t>(pp)] += chunk[c];
  } else if (pp == 1) {
    out[0] = layers;
  } else if (par.first_stage_layers > 0 && par.last_stage_layers > 0 && pp >= 3) {
    // Given first and last stages; the middle ones share the rest (the loader checked it).
    const int middle = (layers - par.first_stage_layers - par.last_stage_layers) / (pp - 2);
    for (int s = 0; s < pp; ++s) out[static_cast<size_t>(s)] = middle;
    out.front() = par.first_stage_layers;
    out.back() = par.last_stage_layers;
  } else if (!embedding_and_head_take_slots(w)) {
    // Megatron's even split; a remainder (not accepted by the loader) goes to the first stages.
    for (int s = 0; s < pp; ++s) out[static_cast<size_t>(s)] = layers / pp + (s < layers % pp);
  } else {
    const int slots = (layers + 2) / pp;
    for (int s = 0; s < pp; ++s) out[static_cast<size_t>(s)] = slots - (s == 0 || s == pp - 1);
  }
  out.back() += w.model.mtp_layers;  // the multi-token-prediction layers follow the output head
  return out;
}

std::vector<int> layers_of_chunks(const WorkloadConfig& w, int stage) {
  const int pp = std::max(1, w.parallelism.pp);
  const int v = chunks_per_stage(w);
  const int stage_layers = layers_of_stages(w)[static_cast<size_t>(stage)];
  std::vector<int> out(static_cast<size_t>(v), 0);
  if (w.parallelism.layout.given()) {
    const std::vector<int>& chunk = w.parallelism.layout.chunk_layers;
    for (int c = 0; c < v; ++c) out[static_cast<size_t>(c)] = chunk[static_cast<size_t>(c * pp + stage)];
    if (stage == pp - 1) out.back() += w.model.mtp_layers;
    return out;
  }
  if (v > 1 && pp > 1 && embedding_and_head_take_slots(w)) {
    const int slots = (w.model.layers + 2) / (pp * v);
    for (int c = 0; c < v; ++c) out[static_cast<size_t>(c)] = slots;
    if (stage == 0) out.front() -= 1;
    if (stage == pp - 1) out.back() -= 1;
    out.back() += stage == pp - 1 ? w.model.mtp_layers : 0;
    return out;
  }
  // An even split, a remainder on the first chunks.
  for (int c = 0; c < v; ++c) {
    out[static_cast<size_t>(c)] = stage_layers / v + (c < stage_layers % v);
  }
  return out;
}

std::vector<StageCompute> stage_compute(const GpuSpec& gpu, const WorkloadConfig& w,
                                        const ComputeParams& params) {
  const LayerKernels dense_layer = layer_kernels(gpu, w, params);
  const LayerKernels moe_layer =
      w.model.moe.enabled() ? layer_kernels(gpu, w, params, true) : dense_layer;
  const Recompute rc = w.parallelism.recompute;
  const double t = w.parallelism.tp;
  const double h = w.model.hidden;
  const double e = working_bytes(w.precision);
  const double tokens = double(w.seq_len) / w.parallelism.cp * w.micro_batch;
  const double vocab_local = double(w.model.vocab) / t;
  const double accumulate_bytes = wgrad_accumulate_bytes(w);
  const std::vector<int> layers = layers_of_stages(w);
  const std::vector<int> moe_layers = moe_layers_of_stages(w);
  const unsigned modules = w.parallelism.recompute_modules;
  const bool flash = fused_attention(w.framework.attention);
  const int last = static_cast<int>(layers.size()) - 1;
  std::vector<StageCompute> out;
  for (int s = 0; s <= last; ++s) {
    StageCompute c;
    c.stage = s;
    c.layers = layers[static_cast<size_t>(s)];
    const int n_moe = moe_layers[static_cast<size_t>(s)];
    // n layers of kind l: their kernels, with recomputation.
    auto add = [&](double n, const LayerKernels& l) {
      c.gemm_forward_s += n * l.gemm_forward_s;
      c.gemm_backward_s += n * (l.gemm_backward_s + l.recompute_gemm_s(rc, modules));
      c.tp_gemms += l.tp_gemms.scaled(n);
      c.attention_forward_s += n * l.attention_forward_s;
      c.attention_backward_s += n * l.attention_backward_s;
      c.forward_s += n * l.forward_s();
      c.backward_s += n * (l.backward_s() + l.recompute_s(rc, modules));
      // Unfused attention's kernels are bound by the scores' memory traffic: not tensor time.
      const double att_fwd = flash ? l.attention_forward_s : 0;
      const double att_bwd = flash ? l.attention_backward_s : 0;
      c.tensor_s += n * (l.gemm_forward_s + l.gemm_backward_s + att_fwd + att_bwd);
      c.tensor_s += n * l.recompute_gemm_s(rc, modules);
      if (rc == Recompute::kFull ||
          (rc == Recompute::kSelective && (modules & kRecomputeCoreAttn))) {
        c.tensor_s += n * att_fwd;
      }
    };
    add(c.layers - n_moe, dense_layer);
    add(n_moe, moe_layer);
    // The host's time to launch a MoE layer, with the experts' output biases added one local
    // expert at a time where the model has them (expert_bias_host_s).
    const double host = w.framework.moe_layer_host_s + expert_bias_host_s(w);
    if (n_moe > 0 && host > 0) {
      const double host_fwd = kHostForwardShare * host;
      const double host_bwd = host - host_fwd + (rc == Recompute::kFull ? host_fwd : 0);
      const double wait_fwd = std::max(0.0, host_fwd - moe_layer.forward_s());
      const double wait_bwd = std::max(
          0.0, host_bwd - (moe_layer.backward_s() + moe_layer.recompute_s(rc, modules)));
      c.forward_s += n_moe * wait_fwd;
      c.backward_s += n_moe * wait_bwd;
      c.host_wait_s += n_moe * (wait_fwd + wait_bwd);
    }
    // Embedding: gather h per token forward; backward accumulates into the fp32 gradient.
    auto add_embedding_lookup = [&](double n) {
      c.forward_s += n * elementwise_time(gpu, 2 * h * e * tokens, params).time_s;
      c.backward_s += n * elementwise_time(gpu, (h * e + 2 * h * 4) * tokens, params).time_s;
    };
    if (s == 0) add_embedding_lookup(1);
    // PyTorch FSDP's root module (fully_shard on the model: the embedding, the final norm and
    // the output head) casts and copies its parameters as the blocks' do (layer_kernels: read 4,
    // write 2 a parameter of the fp32 shard; read 2, write 2 out of the gathered buffer) each
    // micro-batch's forward. FSDP2 keeps the root gathered through the backward (its
    // reshard_after_forward heuristic), which then only casts the 16-bit gradients to fp32 for
    // the reduce-scatter (read 2, write 4). Device call 41 (scenarios/measurements/call41): on
    // one H100 with Llama 3 8B's 1.05 B embedding and head parameters beside four of its layers'
    // 0.87 B, FSDP's casts, copies and chunk_cat took 25.4 ms a step (the model 22.7).
    if (const double root = fsdp_root_parameters(w, s); root > 0) {
      const double shard = double(w.parallelism.dp) * w.parallelism.cp;
      c.forward_s += fsdp_gather_s(gpu, params, root, shard, e);
      c.backward_s += fsdp_gradient_cast_s(gpu, params, root);
      // Resharded after the forward (framework.root_reshard_after_forward), it is gathered, cast
      // and copied again for the backward.
      if (w.framework.root_reshard_after_forward) {
        c.backward_s += fsdp_gather_s(gpu, params, root, shard, e);
      }
    }
    if (s == last) {
      // The output head and loss, once for the model and once more for each MTP module, which
      // also projects [norm(h), norm(embedding of the next token)] (2h) back to h, TP-split.
      const double passes = 1 + w.model.mtp_layers;
      const WeightGemm head = weight_gemm(gpu, unquantized_precision(w.precision), tokens,
                                          vocab_local, h, params, 1, accumulate_bytes);
      const double logits = tokens * vocab_local;
      const bool fused = w.framework.kernels == KernelFusion::kFused;
      const LossKernel loss = w.framework.loss_kernel;
      const bool fp32_logits = !fused && w.framework.loss_input == LossInput::kFp32;
      const double loss_bytes = fused         ? loss_forward_bytes_per_logit(loss)
                                : fp32_logits ? kTorchFp32LossForwardBytesPerLogit
                                              : kTorchLossForwardBytesPerLogit;
      const double loss_backward_bytes = fused         ? loss_backward_bytes_per_logit(loss)
                                         : fp32_logits ? kTorchFp32LossBackwardBytesPerLogit
                                                       : kTorchLossBackwardBytesPerLogit;
      c.forward_s += passes * (head.forward_s +
                               elementwise_time(gpu, logits * (e + loss_bytes), params).time_s);
      c.backward_s += passes * (head.backward_s +
                                elementwise_time(gpu, logits * loss_backward_bytes,
                                                 params).time_s);
      c.tensor_s += passes * (head.forward_s + head.backward_s);
      if (w.model.mtp_layers > 0) {
        // Each MTP module looks up the next tokens' embeddings (the shared table) and projects.
        const WeightGemm proj =
            weight_gemm(gpu, w.precision, tokens, h / t, 2 * h, params, 1, accumulate_bytes);
        const double mtp = w.model.mtp_layers;
        add_embedding_lookup(mtp);
        c.forward_s += mtp * proj.forward_s;
        c.backward_s += mtp * proj.backward_s;
        c.tensor_s += mtp * (proj.forward_s + proj.backward_s);
      }
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace clustersim::models
