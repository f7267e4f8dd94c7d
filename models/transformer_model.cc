#include "models/transformer_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "models/layer_model.h"

namespace clustersim::models {
namespace {

// Parameters of one GPU in `stage` before ZeRO sharding: the stage's layers split by TP, the
// embedding on the first stage and the output head (or, when tied, a copy of the embedding, as
// Megatron keeps) with the final norm on the last. Norm weights are replicated across TP.
double stage_parameters(const WorkloadConfig& w, const ParameterCount& pc, int stage) {
  const auto& par = w.parallelism;
  const int last = par.pp - 1;
  const double layers = layers_of_stages(w)[static_cast<size_t>(stage)];
  const double moe = moe_layers_of_stage(w, stage);
  // Attention (MLA's down projections are replicated over TP, a small share: counted split),
  // the dense MLPs, and of the MoE layers what is not an expert: the shared experts (TP-split)
  // and the router (replicated).
  double p = layers * (pc.attention_per_layer / par.tp + pc.norms_per_layer) +
             (layers - moe) * pc.ffn_per_layer / par.tp +
             moe * (pc.shared_per_layer / par.tp + pc.router_per_layer);
  if (stage == 0) p += pc.embedding / par.tp;
  if (stage == last) {
    p += pc.head_on_last_stage(par.pp) / par.tp + pc.final_norm;
  }
  return p;
}

// The routed experts one GPU of `stage` holds: experts / ep of each MoE layer's, each split
// over etp.
double stage_expert_parameters(const WorkloadConfig& w, const ParameterCount& pc, int stage) {
  return moe_layers_of_stage(w, stage) * pc.experts * pc.expert /
         w.parallelism.expert_model_parallel();
}

// What the GPU of `stage` holds before ZeRO sharding: its stage's dense parameters and routed
// experts, and under DualPipe also the mirrored stage's (DeepSeek-V3 report Table 2: "Parameter
// 2x": device s runs stages s and pp - 1 - s).
struct HeldParameters {
  double dense = 0;
  double experts = 0;
};
HeldParameters held_parameters(const WorkloadConfig& w, const ParameterCount& pc, int stage) {
  HeldParameters out{stage_parameters(w, pc, stage), stage_expert_parameters(w, pc, stage)};
  if (w.parallelism.pp_schedule == PipelineSchedule::kDualPipe) {
    const int mirror = w.parallelism.pp - 1 - stage;
    out.dense += stage_parameters(w, pc, mirror);
    out.experts += stage_expert_parameters(w, pc, mirror);
  }
  return out;
}

// Layer activations the interleaved schedule has a stage hold at its peak, in units of "one
// micro-batch through one layer", chunk by chunk in Megatron-LM's order (interleaved_pass,
// interleaved_warmup_passes). With chunks of one size this is (warm-up + 1) / v stage-fulls;
// with Llama 3's layout the first stage's first chunk (the embedding) and the last stage's last
// (the head) hold no layer, which the count follows. After the warm-up the passes held repeat
// with the period of pp x v forward-backward pairs, so one period finds the peak.
double interleaved_layers_in_flight(const WorkloadConfig& w, int stage) {
  const int pp = std::max(1, w.parallelism.pp);
  const std::vector<int> chunk = layers_of_chunks(w, stage);
  const int v = static_cast<int>(chunk.size());
  const int m = w.micro_batches_per_step();
  auto layers = [&](int pass, bool forward) {
    return chunk[static_cast<size_t>(interleaved_pass(pass, pp, v, forward).chunk)];
  };
  const int warmup = interleaved_warmup_passes(pp, stage, m, v);
  double held = 0;
  int f = 0;
  for (; f < warmup; ++f) held += layers(f, true);
  double peak = held;
  const int steady_end = std::min(m * v, warmup + pp * v);
  for (int b = 0; f < steady_end; ++f, ++b) {  // the steady state's forward, then its backward
    held += layers(f, true);
    peak = std::max(peak, held);
    held -= layers(b, false);
  }
  return peak;
}

// Micro-batches whose activations a stage holds at its peak, in units of "one micro-batch
// through all the stage's layers" (Korthikanti et al. 2022, sec. 4.2.3).
double microbatches_in_flight(const WorkloadConfig& w, int stage) {
  const auto& par = w.parallelism;
  const int m = w.micro_batches_per_step();
  switch (par.pp_schedule) {
    case PipelineSchedule::kGpipe:
      return m;
    case PipelineSchedule::k1F1B:
      return std::min(par.pp - stage, m);
    case PipelineSchedule::kInterleaved: {
      const double layers = layers_of_stages(w)[static_cast<size_t>(stage)];
      if (layers > 0) return interleaved_layers_in_flight(w, stage) / layers;
      // No layer: the chunk forwards held before the first backward.
      const int v = chunks_per_stage(w);
      return std::min(interleaved_warmup_passes(par.pp, stage, m, v) + 1, m * v) / double(v);
    }
    case PipelineSchedule::kDualPipe:
      // DeepSeek-V3 report Table 2: pp + 1 micro-batches' activations on every device, in units
      // of one stage's layers (each micro-batch passes through one of its two stages).
      return std::min<double>(par.pp + 1, m);
  }
  return 1;
}

// Whether the stage runs every forward pass of the step before its first backward (GPipe; 1F1B
// and the interleaved schedule when their warm-up covers every micro-batch): its activations
// peak before any gradient exists.
bool forwards_before_first_backward(const WorkloadConfig& w, int stage) {
  const auto& par = w.parallelism;
  const int m = w.micro_batches_per_step();
  switch (par.pp_schedule) {
    case PipelineSchedule::kGpipe:
      return true;
    case PipelineSchedule::k1F1B:
      return par.pp - stage >= m;
    case PipelineSchedule::kInterleaved: {
      const int v = chunks_per_stage(w);
      return interleaved_warmup_passes(par.pp, stage, m, v) >= m * v;
    }
    case PipelineSchedule::kDualPipe:
      return false;
  }
  return false;
}

MemoryBreakdown stage_memory(const WorkloadConfig& w, const ParameterCount& pc,
                             const MemoryParams& params, int stage) {
  const auto& par = w.parallelism;
  const ModelSpec& m = w.model;
  const FrameworkConfig& fw = w.framework;
  const double t = par.tp;
  const double shard = double(par.dp) * par.cp;
  const double e = working_bytes(w.precision);
  const bool mixed = mixed_precision(w.precision);
  MemoryBreakdown out;
  out.stage = stage;
  const HeldParameters held = held_parameters(w, pc, stage);
  const double layers = layers_of_stages(w)[static_cast<size_t>(stage)];
  out.parameters = held.dense;
  out.expert_parameters = held.experts;
  const double expert_shard = expert_data_parallel(w);
  // 1. Weights, gradients, optimizer state. 16-bit weights with an fp32 master copy in the
  // optimizer (Megatron-LM, DeepSpeed: 2 + 12 bytes), or fp32 parameters cast per use (PyTorch
  // autocast, FSDP mixed precision: 4 + 8); fp32 or 16-bit gradient buffers.
  const bool fp32_params = fw.weights_in_fp32 || !mixed;
  // fp8_param_gather / fp4_param_gather: the working weights themselves are quantized (no
  // separate quantized copy below).
  const bool quantized_params = gathers_quantized_weights(w);
  const double weight_bytes = fp32_params        ? 4
                              : quantized_params ? quantized_weight_bytes(w)
                                                 : e;
  const double grad_bytes = gradient_bytes(w);
  // Adam m, v (+ the fp32 master, or its 16-bit remainder beside the bf16 parameter); without a
  // master copy the moments take the parameters' dtype (torch.optim.Adam's zeros_like).
  const double state_bytes = fp32_params                  ? 8
                             : updates_16bit_parameters(w) ? 2 * e
                             : fw.param_remainders         ? 10
                                                           : 12;
  // ZeRO shards the dense weights over dp x cp, the experts over their expert data-parallel
  // group.
  const double experts = out.expert_parameters;
  auto sharded = [&](int zero_level) {
    return par.zero >= zero_level ? out.parameters / shard + experts / expert_shard
                                  : out.parameters + experts;
  };
  out.weights_bytes = sharded(3) * weight_bytes;
  out.gradients_bytes = sharded(2) * grad_bytes;
  // DeepSpeed's BF16_Optimizer keeps the 16-bit gradients beside its fp32 ones
  // (FrameworkConfig::zero1_all_reduce).
  if (zero1_all_reduce(w) && mixed) out.gradients_bytes += (out.parameters + experts) * e;
  out.optimizer_bytes = sharded(1) * state_bytes;
  out.gradients_replace_activations =
      fw.weights_in_fp32 || (fw.gradients_in_backward && forwards_before_first_backward(w, stage));
  // Autocast keeps a 16-bit copy of every fp32 weight it casts from the forward until the
  // backward has used it; FSDP instead gathers 16-bit layers (below).
  if (fp32_residual_stream(w) && mixed) {
    out.gathered_weights_bytes = out.cast_weights_bytes = (out.parameters + experts) * e;
    out.casts_freed_after_forward = par.recompute == Recompute::kFull;
    out.forward_end_casts_bytes = out.cast_weights_bytes;
    // torch.compile'd blocks (compiled per block, as TorchTitan does) cast inside their graphs:
    // with full recomputation only the eager output head's cast is cached at the forward's end.
    if (fw.kernels == KernelFusion::kCompiled && par.recompute == Recompute::kFull) {
      // The head's weight is vocab x hidden, tied to the embedding or not (pc.embedding).
      const double head = stage == par.pp - 1 ? pc.embedding / t * e : 0;
      out.forward_end_casts_bytes = std::min(out.cast_weights_bytes, head);
    }
  }
  // Quantized training keeps a quantized copy of every weight for its GEMMs (Transformer
  // Engine's cached FP8/FP4 weights, cast on the first micro-batch of a step).
  if (quantized(w.precision) && !quantized_params) {
    out.gathered_weights_bytes += sharded(3) * quantized_weight_bytes(w);
  }
  if (par.zero >= 3) {
    // The current and the prefetched layer, whole (a MoE layer with its local experts).
    const double layer = pc.moe_layers > 0
                             ? pc.attention_per_layer / t + pc.shared_per_layer / t +
                                   pc.router_per_layer +
                                   pc.experts * pc.expert / par.expert_model_parallel()
                             : pc.matmul_per_layer() / t;
    // Without resharding after the forward every layer of the stage stays gathered until its
    // backward.
    const double held_layers = fw.reshard_after_forward ? 2 : std::max(2.0, layers);
    const double layer_bytes = layer * (quantized_params ? quantized_weight_bytes(w) : e);
    out.gathered_weights_bytes += held_layers * layer_bytes;
    if (pytorch_fsdp(w) && fw.reshard_after_forward) out.gathered_window_idle_bytes = layer_bytes;
  }
  // PyTorch FSDP2's root module (fully_shard on the model: the embedding, the final norm and the
  // output head) stays gathered from its forward to the end of its backward unless it is told
  // to reshard (framework.root_reshard_after_forward): FSDP2's heuristic for the root, the
  // backward needing it first (layer_model.cc times its casts). Its 16-bit parameters,
  // unsharded, beside the blocks'. Device call 49 (scenarios/measurements/call49): four
  // Qwen3-30B-A3B layers with 0.62 B embedding and head parameters peaked 20.1-21.0 GiB
  // allocated, the model 18.3-18.4 without them (1.16 GiB).
  if (!fw.root_reshard_after_forward) {
    out.gathered_weights_bytes += fsdp_root_parameters(w, stage) * e;
  }

  // 2. Activations each layer keeps for its backward, bytes per token (transformer_model.h).
  const double s = double(w.seq_len) / par.cp;
  const double tokens = s * w.micro_batch;
  const double h = m.hidden;
  const double kv = m.kv_width();  // the K projection's width (head_dim as the model gives it)
  const double f = m.ffn_hidden;
  const double ffn_out = m.up_width(f);
  const double sp = par.sp ? t : 1;  // the sequence-parallel shard
  // Under autocast with fp32 parameters the embedding's output, and so the residual stream, is
  // fp32; FSDP mixed precision gathers 16-bit parameters and runs the layers in 16 bits.
  const double residual = fp32_residual_stream(w) ? 4 : e;
  // One micro-batch's residual stream on this GPU (a layer's input, the embedding's output, the
  // final norm's input), bytes.
  const double stream = tokens * h * residual / sp;
  const bool drop = w.dropout > 0;
  const bool eager = fw.kernels == KernelFusion::kEager;
  // Selective recomputation's modules (none but the attention core unless given).
  const unsigned modules =
      par.recompute == Recompute::kSelective ? par.recompute_modules : 0u;
  // Quantized training (Transformer Engine) keeps the quantized cast of each quantized GEMM's
  // input for its backward instead of the 16-bit tensor: the norms' outputs, the attention
  // output and the MLP activation's output, 1 byte each in fp8 (MXFP8: + a scale per 32), 0.5625
  // in NVFP4.
  const double e_in = quantized(w.precision) ? quantized_tensor_bytes(w) : e;
  // Norm inputs and outputs; the outputs feed the column-parallel linears, which keep them
  // gathered where SP does not gather them again in the backward (sp_input_regather false).
  const double sp_linear_in = sp_regathers_inputs(w) ? sp : 1;
  // A norm computed in 16 bits on a cast of the fp32 stream (framework.low_precision_norm)
  // keeps that cast, not the stream.
  const double norm_in =
      fw.kernels != KernelFusion::kFused && fw.low_precision_norm ? e : residual;
  double per_token = 2 * (h * norm_in / sp + h * e_in / sp_linear_in);
  // The MLP's part, dense and (MoE layers) routed: each routed copy of a token (top_k x the
  // busiest share, on the sequence shard) keeps its permuted input, the expert's up (+ gate)
  // output and activation; the shared experts like a dense MLP; the router's fp32 scores.
  double mlp_dense = 0, mlp_moe = 0;
  if (eager) {
    // PyTorch eager keeps the whole QKV output (Q, K, V are views of it), with rotary SDPA's
    // 16-bit casts of rotated Q and K, its output and the output projection's input copy, and
    // the whole up+gate output, SiLU's output and the gate product; without a gate, GELU's input
    // and output (layer_model.cc's op list). MPT-1B and the 7B layer under autocast and under
    // FSDP on one H200 (device call 20) check the GPT-style counts.
    const bool rope = m.position_embedding == PositionEmbedding::kRope;
    per_token += ((rope ? 2 * h + 3 * kv : h + 2 * kv) + 2 * h) / t * e;
    mlp_dense = (m.gated_ffn ? 4 : 2) * f / t * e;
  } else if (m.mla.enabled()) {
    // MLA: the two latents (and their norms' outputs), every head's Q, K, V (unless the up-
    // projections are recomputed) and the output.
    per_token += 2 * (m.mla.q_lora_rank + m.mla.kv_lora_rank) * e + m.v_width() / t * e_in;
    if (!(modules & kRecomputeMlaUpProj)) {
      per_token += (m.q_width() + m.kv_width() + m.v_width()) / t * e;
    }
    mlp_dense = (ffn_out * e + f * e_in) / t;
  } else {
    per_token += (m.q_width() + kv + m.v_width()) / t * e + m.heads * m.v_head_dim() / t * e_in;
    mlp_dense = (ffn_out * e + f * e_in) / t;  // MLP up (+ gate) output, activation
    // Inductor's graphs keep the rotated Q and K that SDPA saves beside the QKV output (V, a
    // view of it, keeps all of it): 6f + 24h per token for a SwiGLU block, measured (call 17).
    if (fw.kernels == KernelFusion::kCompiled) per_token += (m.q_width() + kv) / t * e;
  }
  if (m.moe.enabled()) {
    // The permuted inputs and activation outputs are FP8 GEMM inputs under fp8 training.
    const MoeSpec& x = m.moe;
    const double out_e = m.up_width(x.expert_ffn_hidden);
    const double copies = x.top_k * w.moe_routing.busiest_share() / t;
    const double act_out = (modules & kRecomputeMoeAct) ? 0 : x.expert_ffn_hidden * e_in;
    // Expert TP: a GPU keeps the etp x more tokens its group gathered, each 1/etp as wide
    // past the up projection.
    const double routed = copies * (h * e_in * par.etp + out_e * e + act_out);
    const double shared = x.shared_experts * (out_e * e + act_out) / t;
    mlp_moe = routed + ((modules & kRecomputeSharedExperts) ? 0 : shared) + x.experts * 4.0 / t;
    if (modules & kRecomputeMoe) mlp_moe = 0;  // only the MoE block's input (the norm output)
  }
  if (modules & kRecomputeMlp) mlp_dense = 0;
  // Recomputed norms keep their inputs (the residual stream) but not their outputs.
  if (modules & kRecomputeLayerNorm) per_token -= 2 * h * e_in / sp_linear_in;
  if (drop) per_token += 2 * h / sp;                   // 1-byte masks of the two dropouts
  const bool keep_scores = w.framework.attention == AttentionKernel::kUnfused &&
                           par.recompute == Recompute::kNone;
  if (keep_scores) per_token += m.heads / t * s * (drop ? 2 * e + 1 : e);  // softmax (+ dropout)
  const double moe_layers = moe_layers_of_stage(w, stage);
  const double layer_dense = (per_token + mlp_dense) * tokens;
  const double layer_moe = (per_token + mlp_moe) * tokens;
  const double layer = moe_layers > 0 ? std::max(layer_moe, layer_dense) : layer_dense;
  const double in_flight = microbatches_in_flight(w, stage);
  if (par.recompute == Recompute::kFull) {
    // Each layer's input, and one layer's activations while it is recomputed.
    out.recompute_layer_bytes = layer;
    out.activations_bytes = in_flight * layers * stream + layer;
  } else if (par.recompute == Recompute::kSelectiveOp) {
    // The layer's input, the attention output and every other matmul output (wq, wv, w1, w2),
    // and one layer's activations while its backward recomputes the rest.
    const double kept = h * residual / sp + (2 * h + kv + f) / t * e + h / sp * e;
    out.recompute_layer_bytes = layer;
    out.activations_bytes = in_flight * layers * kept * tokens + layer;
  } else {
    out.activations_bytes =
        in_flight * ((layers - moe_layers) * layer_dense + moe_layers * layer_moe);
  }
  // Embedding output on the first stage; on the last, the final norm's output and the loss's
  // tensors over the vocabulary, bytes per logit at its backward (its peak) and its forward:
  // - fused (Megatron's vocab-parallel cross-entropy): the fp32 softmax beside the 16-bit
  //   logits, 4 + e in both (Korthikanti et al. 2022 sec. 4.3 count 4 s b V / t); counted so
  //   for every framework.loss_kernel, though Transformer Engine's kernels (te) write the
  //   gradient over the 16-bit logits and keep no fp32 copy (e): not told apart yet;
  // - PyTorch's F.cross_entropy on logits cast to fp32 (framework.loss_input fp32): forward the
  //   16-bit logits, their fp32 copy and its log-softmax (e + 8); backward the log-softmax
  //   output, nll_loss's input gradient and log-softmax's (12);
  // - on the 16-bit logits under autocast (loss_input autocast): log-softmax runs in 16 bits and
  //   autocast runs nll_loss in fp32 on a copy, which nll_loss keeps for its backward: forward
  //   the logits, the log-softmax and the copy (2e + 4); backward the log-softmax output, the
  //   copy and its gradient (e + 8);
  // - one fused kernel on the 16-bit logits in PyTorch (loss_input fused: flash-attn's
  //   CrossEntropyLoss, Inductor's compiled F.cross_entropy(logits.float()) as TorchTitan
  //   compiles its loss): it keeps the logits and one log-sum-exp a token for its backward, which
  //   writes the logits' 16-bit gradient (flash-attn's xentropy backward into a new tensor;
  //   Inductor fuses the softmax, the one-hot subtraction and the cast back): e forward, 2e
  //   backward, and the allocator reserves the two (device call 50: 2.00 and 4.00 measured).
  // torch.compile as TorchTitan (and our H200 steps) apply it compiles each transformer block:
  // the head and, unless loss_input is fused, the loss still run eager.
  if (stage == 0) out.logits_bytes += in_flight * stream;
  if (stage == par.pp - 1) {
    // Reserved: on autocast's path the logits' freed segment serves no later request, 2e + 8;
    // on the fp32 one the backward reuses the forward's, 12 (both measured, call 17: 12.03,
    // 12.00 bytes per logit; the peaks 8.03 / 10.03 and 10.00 / 12.00 as counted above).
    double backward = 4 + e, forward = 4 + e, reserved = 4 + e;
    if (fw.kernels != KernelFusion::kFused && fw.loss_input == LossInput::kFused) {
      backward = 2 * e;
      forward = e;
      reserved = 2 * e;
    } else if (fw.kernels != KernelFusion::kFused) {
      const bool autocast = fw.loss_input == LossInput::kAutocast;
      backward = autocast ? e + 8 : 12;
      forward = autocast ? 2 * e + 4 : e + 8;
      reserved = autocast ? 2 * e + 8 : 12;
      // With TP, PyTorch's loss_parallel (TorchTitan's default over vocabulary-sharded logits)
      // runs the log-softmax as DTensor's decomposition (torch/distributed/tensor/parallel/
      // loss.py, _log_softmax): x - max, then exp of it for the sum, then the shifted logits
      // minus the log-sum-exp, each a new fp32 tensor beside the fp32 logits, and its nll and
      // log-softmax backward handlers one more fp32 tensor than aten's: 4 bytes a logit more
      // at either peak. Device call 50 (scenarios/measurements/call50, one H100, 16,384 x
      // 128,256 logits): 14.00 and 16.00 bytes a logit, against 10.00 and 12.00 for aten's
      // path (and the model's other counts to the byte: autocast 8 / 10, compiled 2 / 4).
      if (!autocast && t > 1) {
        forward += 4;
        backward += 4;
        reserved += 4;
      }
    }
    const double logits = tokens * m.vocab / t;
    out.loss_backward_bytes = stream + logits * backward;
    out.loss_forward_bytes = stream + logits * forward;
    out.loss_reserved_bytes = stream + logits * reserved;
    out.logits_bytes += out.loss_backward_bytes;
  }
  // 3. Outside the model: the CUDA context and NCCL's buffers, and the caching allocator's
  // slack over what it hands out (MemoryParams).
  int communicators = 0;
  for (int size : {par.tp, par.cp, par.dp * par.cp, par.pp}) communicators += size > 1;
  out.outside_allocator_bytes =
      params.context_bytes + communicators * params.nccl_bytes_per_communicator;
  out.layer_activations_bytes = layer;
  out.allocator_slack_bytes =
      (params.allocator_layer_slack - (out.recompute_layer_bytes > 0 ? 1 : 0)) * layer;
  out.gradients_own_pool = pytorch_fsdp(w);
  return out;
}

}  // namespace

bool mixed_precision(Precision p) { return p != Precision::kFp32 && p != Precision::kTf32; }

double working_bytes(Precision p) { return mixed_precision(p) ? 2 : 4; }

bool block_scaled(const WorkloadConfig& w) {
  return w.precision == Precision::kFp4 ||
         (w.precision == Precision::kFp8 && w.framework.fp8_recipe == Fp8Recipe::kMxfp8);
}

bool gathers_quantized_weights(const WorkloadConfig& w) {
  return w.framework.quantized_param_gather && quantized(w.precision);
}

bool sp_regathers_inputs(const WorkloadConfig& w) {
  return w.parallelism.sp && w.framework.sp_input_regather;
}

double fsdp_root_parameters(const WorkloadConfig& w, int stage) {
  if (!pytorch_fsdp(w) || !mixed_precision(w.precision)) return 0;
  const bool first = stage == 0;
  const bool last = stage == w.parallelism.pp - 1;
  const double tables = (first ? 1 : 0) + (last && (!first || !w.model.tied_embeddings) ? 1 : 0);
  return tables * double(w.model.vocab) * w.model.hidden / w.parallelism.tp;
}

double quantized_tensor_bytes(const WorkloadConfig& w) {
  if (!quantized(w.precision)) return 0;
  // MXFP8: an E8M0 scale byte per 32 elements (NVFP4's scales are in bytes_per_element).
  const bool mxfp8 = w.precision == Precision::kFp8 && block_scaled(w);
  return mxfp8 ? 1 + 1.0 / 32 : bytes_per_element(w.precision);
}

double quantized_weight_bytes(const WorkloadConfig& w) {
  return (block_scaled(w) ? 2 : 1) * quantized_tensor_bytes(w);
}

ParameterCount count_parameters(const ModelSpec& model) {
  const double h = model.hidden;
  const double matrices = model.gated_ffn ? 3 : 2;
  ParameterCount pc;
  pc.layers = model.layers;
  pc.embedding = double(model.vocab) * h;
  pc.output_head = model.tied_embeddings ? 0 : double(model.vocab) * h;
  pc.norms_per_layer = 2 * h;
  if (model.mla.enabled()) {
    const MlaSpec& a = model.mla;
    const double heads = model.heads;
    const double q = a.q_lora_rank > 0
                         ? h * a.q_lora_rank + double(a.q_lora_rank) * heads * a.qk_head_dim()
                         : h * heads * a.qk_head_dim();
    const double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) +
                      double(a.kv_lora_rank) * heads * (a.qk_nope_head_dim + a.v_head_dim);
    pc.attention_per_layer = q + kv + heads * a.v_head_dim * h;
    pc.norms_per_layer += a.q_lora_rank + a.kv_lora_rank;
  } else {
    pc.attention_per_layer = h * (model.q_width() + model.kv_width() + model.v_width()) +
                             model.heads * model.v_head_dim() * h;
  }
  pc.ffn_per_layer = matrices * h * model.ffn_hidden;
  if (model.moe.enabled()) {
    const MoeSpec& e = model.moe;
    pc.moe_layers = model.moe_layers();
    pc.experts = e.experts;
    pc.top_k = e.top_k;
    pc.expert = matrices * h * e.expert_ffn_hidden;
    pc.shared_per_layer = e.shared_experts * pc.expert;
    pc.router_per_layer = h * e.experts;
  }
  pc.final_norm = h;
  return pc;
}

FlopsPerToken flops_per_token(const ModelSpec& model, int seq_len, bool causal) {
  const ParameterCount pc = count_parameters(model);
  FlopsPerToken f;
  f.head_forward = 2.0 * model.vocab * model.hidden;
  f.dense_forward = 2 * pc.active_layer_matmuls() + f.head_forward;
  // Per token and layer: a query against the keys it sees (attention_keys_per_query), on the
  // windowed layers against the window's.
  const double per_key = 2.0 * model.heads * (model.qk_head_dim() + model.v_head_dim());
  const double full_keys = attention_keys_per_query(seq_len, 0, causal);
  const double window_keys = attention_keys_per_query(seq_len, model.sliding_window, causal);
  const double windowed = model.sliding_window > 0 ? model.sliding_window_layers : 0;
  f.attention_forward = per_key * ((model.layers - windowed) * full_keys + windowed * window_keys);
  // wk, wo and w3 (the up half of a gated MLP): what op-level checkpointing recomputes (of the
  // dense layers' MLPs; TorchTitan's recipe is for dense models).
  const double h = model.hidden;
  f.op_recomputed_forward =
      2.0 * (model.layers * (h * model.kv_width() + model.heads * model.v_head_dim() * h) +
             pc.dense_layers() * (model.gated_ffn ? h * model.ffn_hidden : 0));
  if (model.mla.enabled()) {
    const MlaSpec& a = model.mla;
    const double q_up = a.q_lora_rank > 0 ? double(a.q_lora_rank) * model.heads * a.qk_head_dim() : 0;
    const double kv_up = double(a.kv_lora_rank) * model.heads * (a.qk_nope_head_dim + a.v_head_dim);
    f.mla_up_forward = 2.0 * model.layers * (q_up + kv_up);
  }
  f.dense_mlp_forward = 2.0 * pc.dense_layers() * pc.ffn_per_layer;
  f.moe_routed_forward = 2.0 * pc.moe_layers * (pc.top_k * pc.expert + pc.router_per_layer);
  f.moe_shared_forward = 2.0 * pc.moe_layers * pc.shared_per_layer;
  return f;
}

double hardware_flops_per_token(const FlopsPerToken& f, Recompute recompute, unsigned modules) {
  switch (recompute) {
    case Recompute::kNone:
      return f.training();
    case Recompute::kSelective:
      return f.training() + ((modules & kRecomputeCoreAttn) ? f.attention_forward : 0) +
             ((modules & kRecomputeMlaUpProj) ? f.mla_up_forward : 0) +
             ((modules & kRecomputeMlp) ? f.dense_mlp_forward : 0) +
             ((modules & kRecomputeMoe) ? f.moe_routed_forward + f.moe_shared_forward
              : (modules & kRecomputeSharedExperts) ? f.moe_shared_forward
                                                    : 0);
    case Recompute::kSelectiveOp:
      return f.training() + f.op_recomputed_forward;
    case Recompute::kFull:
      return f.training() + f.forward() - f.head_forward;
  }
  return f.training();
}

int layers_per_stage(const WorkloadConfig& workload) {
  const int pp = std::max(1, workload.parallelism.pp);
  return (workload.model.layers + pp - 1) / pp;
}

MemoryBreakdown memory_per_gpu(const WorkloadConfig& workload, const MemoryParams& params) {
  const ParameterCount pc = count_parameters(workload.model);
  // The busiest stage: the first or the last (the embedding, the output head, more micro-batches
  // in flight), or with an uneven split (Llama 3's layout: a layer more on each middle stage) or
  // DualPipe's paired stages a middle one.
  MemoryBreakdown busiest = stage_memory(workload, pc, params, 0);
  const auto& par = workload.parallelism;
  const std::vector<int> layers = layers_of_stages(workload);
  const bool uneven = std::adjacent_find(layers.begin(), layers.end(), std::not_equal_to<>()) !=
                      layers.end();
  const bool all = par.pp_schedule == PipelineSchedule::kDualPipe || uneven;
  for (int s = 1; s < par.pp; ++s) {
    if (!all && s != par.pp - 1) continue;
    MemoryBreakdown m = stage_memory(workload, pc, params, s);
    if (m.total() > busiest.total()) busiest = m;
  }
  return busiest;
}

std::string_view to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::kTp:
      return "tp";
    case ParallelDim::kPp:
      return "pp";
    case ParallelDim::kDp:
      return "dp";
    case ParallelDim::kCp:
      return "cp";
    case ParallelDim::kEp:
      return "ep";
  }
  return "?";
}

int expert_data_parallel(const WorkloadConfig& w) {
  const auto& par = w.parallelism;
  return std::max(1, par.tp * par.cp * par.dp / std::max(1, par.expert_model_parallel()));
}

bool zero1_all_reduce(const WorkloadConfig& w) {
  return w.parallelism.zero == 1 && w.framework.zero1_all_reduce;
}

bool updates_16bit_parameters(const WorkloadConfig& w) {
  return mixed_precision(w.precision) && !w.framework.weights_in_fp32 &&
         !w.framework.master_weights;
}

double gradient_bytes(const WorkloadConfig& w) {
  return w.framework.fp32_gradients || !mixed_precision(w.precision) ? 4
                                                                     : working_bytes(w.precision);
}

namespace {
// The blocks of `block` consecutive experts (a node's, a GPU's) that hold any of a token's top_k
// experts, on average.
double expert_blocks_met(const ExpertDispatch& d, double block) {
  const int e = d.experts, k = d.top_k;
  if (block >= e) return 1;
  if (d.consecutive) {
    // Token i takes experts (i k + j) mod e, j < k: its window starts at a multiple of
    // gcd(k, e), each start equally often.
    const int step = std::gcd(k, e);
    double sum = 0;
    int starts = 0;
    for (int s = 0; s < e; s += step, ++starts) {
      double last = -1;
      int met = 0;
      for (int j = 0; j < k; ++j) {
        const double b = std::floor(((s + j) % e) / block);
        if (b != last) ++met;
        last = b;
      }
      sum += met;
    }
    return sum / starts;
  }
  double miss = 1;  // a given block holds none of the token's top_k experts
  for (int i = 0; i < k; ++i) miss *= std::max(0.0, (e - block - i) / (e - i));
  return (e / block) * (1 - miss);
}
}  // namespace

AllToAllDispatch alltoall_dispatch(const CommCall& call, const CollectiveTopology& group) {
  const ExpertDispatch& d = call.dispatch;
  if (!d.hierarchical || d.experts <= 0 || d.top_k <= 0) return {};
  AllToAllDispatch out;
  out.rank_share =
      std::min(1.0, expert_blocks_met(d, double(d.experts) / group.ranks) / d.top_k);
  const int nodes = group.nodes;
  if (nodes <= 1) return out;
  out.forward_in_node = true;
  if (d.max_nodes > 0 && d.max_nodes < nodes) {
    // The router picks the M nodes whose experts score highest for the token, so each holds
    // some of its top_k.
    out.network_share = std::min(1.0, double(d.max_nodes) / d.top_k);
  } else {
    out.network_share = std::min(1.0, expert_blocks_met(d, double(d.experts) / nodes) / d.top_k);
  }
  return out;
}

std::vector<CommCall> communication_per_step(const WorkloadConfig& w) {
  const auto& par = w.parallelism;
  const ModelSpec& m = w.model;
  const double ab = working_bytes(w.precision);
  const double layers = layers_per_stage(w);
  const double s = double(w.seq_len) / par.cp;
  const double activation_elements = s * w.micro_batch * m.hidden;  // one block's input or output
  const double activation_bytes = activation_elements * ab;
  const bool full = par.recompute == Recompute::kFull;
  std::vector<CommCall> calls;
  auto add = [&](ParallelDim dim, CommPhase phase, CollectiveOp op, double size, double count,
                 int size_ranks, int stride, const char* what, ExpertDispatch dispatch = {}) {
    if (count > 0 && size_ranks > 1) {
      calls.push_back({dim, phase, op, size, count, size_ranks, stride, what, dispatch});
    }
    return count > 0 && size_ranks > 1;
  };

  const double moe_layers = moe_layers_per_stage(w);

  // TP: the attention and MLP blocks each end in an all-reduce (forward) and begin with one
  // (backward); SP splits each into a reduce-scatter and an all-gather of the same total. A MoE
  // layer's routed experts take the sequence shard without TP collectives (EP all-to-all
  // instead); its shared experts, TP-split, keep the MLP block's pair.
  const double mlp_blocks_moe = m.moe.shared_experts > 0 ? 1 : 0;
  const double tp_per_pass = 2 * (layers - moe_layers) + (1 + mlp_blocks_moe) * moe_layers;
  const double tp_backward = tp_per_pass * (full ? 2 : 1);  // the recompute forward repeats it
  if (par.sp) {
    // Quantized training gathers what the next GEMM takes, quantized before the gather
    // (Transformer Engine's gather_along_first_dim with a quantizer, and its userbuffers' FP8
    // all-gather buffers; torchao's float8 TP likewise); the reduce-scatters carry the GEMMs'
    // 16-bit outputs.
    const double gathered_bytes =
        activation_elements * (quantized(w.precision) ? quantized_tensor_bytes(w) : ab);
    for (auto op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      const double bytes = op == CollectiveOp::kAllGather ? gathered_bytes : activation_bytes;
      add(ParallelDim::kTp, CommPhase::kForward, op, bytes, tp_per_pass, par.tp, 1,
          "sequence-parallel block inputs/outputs");
      add(ParallelDim::kTp, CommPhase::kBackward, op, bytes, tp_backward, par.tp, 1,
          "sequence-parallel block gradients (and recompute)");
    }
    // Each block's column-parallel linear (QKV, the MLP's first) keeps its input as the
    // sequence shard and gathers it again for its weight gradient: once per backward, whether
    // or not the forward was recomputed (Megatron-LM tensor_parallel/layers.py,
    // LinearWithGradAccumulationAndAsyncCommunication.backward; Transformer Engine's Linear and
    // LayerNormLinear: the ub_bulk_dgrad overlap, or an async gather beside the data gradient).
    if (sp_regathers_inputs(w) &&
        add(ParallelDim::kTp, CommPhase::kBackward, CollectiveOp::kAllGather, gathered_bytes,
            tp_per_pass, par.tp, 1, "sequence-parallel inputs gathered again for weight gradients")) {
      calls.back().regather = true;
    }
  } else {
    add(ParallelDim::kTp, CommPhase::kForward, CollectiveOp::kAllReduce, activation_bytes,
        tp_per_pass, par.tp, 1, "attention and MLP outputs");
    add(ParallelDim::kTp, CommPhase::kBackward, CollectiveOp::kAllReduce, activation_bytes,
        tp_backward, par.tp, 1, "attention and MLP input gradients (and recompute)");
  }

  // CP (ring attention): each layer passes K and V around the ring (cp-1 steps); backward
  // passes K, V and their gradients.
  // One rank's K and V heads (MLA: every head's, as training materialises them), each of the
  // model's key and value widths.
  const double kv_heads_local =
      std::max(1.0, double(m.mla.enabled() ? m.heads : m.kv_heads) / par.tp);
  const double kv_bytes =
      s * w.micro_batch * kv_heads_local * (m.qk_head_dim() + m.v_head_dim()) * ab;
  const double cp_steps = (par.cp - 1) * layers;
  add(ParallelDim::kCp, CommPhase::kForward, CollectiveOp::kSendRecv, kv_bytes, cp_steps, par.cp,
      par.tp, "ring attention K/V");
  add(ParallelDim::kCp, CommPhase::kBackward, CollectiveOp::kSendRecv, 2 * kv_bytes, cp_steps,
      par.cp, par.tp, "ring attention K/V and gradients");
  if (full) {
    add(ParallelDim::kCp, CommPhase::kBackward, CollectiveOp::kSendRecv, kv_bytes, cp_steps, par.cp,
        par.tp, "ring attention K/V (recompute)");
  }

  // PP: one activation (forward) and one gradient (backward) per micro-batch and model chunk,
  // each TP rank sending its 1/t (Megatron's scatter/gather optimization, Narayanan et al. 2021
  // sec. 4.1, on by default; with SP the tensor is already split).
  const double pp_bytes = activation_bytes / par.tp;
  const int stage_stride = par.tp * par.cp * par.dp;
  const double chunks = chunks_per_stage(w);
  add(ParallelDim::kPp, CommPhase::kForward, CollectiveOp::kSendRecv, pp_bytes, chunks, par.pp,
      stage_stride, "stage-boundary activations");
  add(ParallelDim::kPp, CommPhase::kBackward, CollectiveOp::kSendRecv, pp_bytes, chunks, par.pp,
      stage_stride, "stage-boundary activation gradients");

  // EP: each MoE layer sends its tokens' routed copies to the experts' GPUs (dispatch) and
  // brings the results back (combine), an all-to-all each, forward and (gradients) backward,
  // again in the recompute forward. One rank's send buffer: its sequence shard x top_k x hidden,
  // scaled by the busiest GPU's share (the all-to-all ends when the busiest receiver has its
  // tokens). ep ranks of the stage, etp apart. With expert TP the etp ranks of an expert
  // shard then all-gather what was dispatched to them and reduce-scatter the experts' output
  // (Megatron-Core's alltoall dispatcher), forward, backward (the transposes) and recompute.
  const double routed_bytes = s * w.micro_batch / par.tp * m.moe.top_k *
                              w.moe_routing.busiest_share() * m.hidden * ab;
  if (m.moe.enabled() && par.ep > 1) {
    const ExpertDispatch dispatch{m.moe.experts, m.moe.top_k, w.moe_routing.max_nodes_per_token,
                                  w.framework.ep_hierarchical, w.moe_routing.consecutive};
    add(ParallelDim::kEp, CommPhase::kForward, CollectiveOp::kAllToAll, routed_bytes,
        2 * moe_layers, par.ep, par.etp, "MoE token dispatch and combine", dispatch);
    add(ParallelDim::kEp, CommPhase::kBackward, CollectiveOp::kAllToAll, routed_bytes,
        2 * moe_layers * (full ? 2 : 1), par.ep, par.etp,
        "MoE dispatch and combine gradients (and recompute)", dispatch);
  }
  if (m.moe.enabled() && par.etp > 1) {
    const double gathered = routed_bytes * par.etp;
    for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      const bool gather = op == CollectiveOp::kAllGather;
      add(ParallelDim::kEp, CommPhase::kForward, op, gathered, moe_layers, par.etp, 1,
          gather ? "expert-TP token gather" : "expert-TP output reduce-scatter");
      add(ParallelDim::kEp, CommPhase::kBackward, op, gathered, moe_layers * (full ? 2 : 1),
          par.etp, 1,
          gather ? "expert-TP gradient gather (and recompute)"
                 : "expert-TP gradient reduce-scatter (and recompute)");
    }
  }

  // DP over the dp x cp ranks that hold the same weights; a MoE model's experts over their
  // expert data-parallel group (tp x cp x dp / (ep x etp) ranks, ep x etp apart).
  const ParameterCount pc = count_parameters(m);
  auto data_parallel = [&](double params, int size, int stride, int stage, bool experts,
                           const char* grads, const char* gather, const char* z3_fwd,
                           const char* z3_bwd, const char* z3_rs) {
    const size_t first = calls.size();
    const double grad_bytes = params * gradient_bytes(w);
    // ZeRO/FSDP gathers the working weights: quantized with fp8_param_gather / fp4_param_gather.
    const double weight_bytes =
        params * (gathers_quantized_weights(w) ? quantized_weight_bytes(w) : ab);
    switch (par.zero) {
      case 0:
        add(ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllReduce, grad_bytes, 1, size,
            stride, grads);
        break;
      case 1:
      case 2:
        add(ParallelDim::kDp, par.zero == 1 ? CommPhase::kStep : CommPhase::kBackward,
            zero1_all_reduce(w) ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter,
            grad_bytes, 1, size, stride, grads);
        add(ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllGather, weight_bytes, 1, size,
            stride, gather);
        break;
      default: {
        // One NCCL call per FSDP unit and pass: each transformer block, and the root module
        // that `fully_shard(model)` makes of the rest (embedding, final norm, head), counted on
        // every stage (TorchTitan, NeMo AutoModel, llm-foundry wrap each block).
        const double units = std::max(1.0, std::round(layers)) + 1;
        add(ParallelDim::kDp, CommPhase::kForward, CollectiveOp::kAllGather, weight_bytes / units,
            units, size, stride, z3_fwd);
        if (w.framework.reshard_after_forward) {
          add(ParallelDim::kDp, CommPhase::kBackward, CollectiveOp::kAllGather,
              weight_bytes / units, units, size, stride, z3_bwd);
        }
        add(ParallelDim::kDp, CommPhase::kBackward, CollectiveOp::kReduceScatter,
            grad_bytes / units, units, size, stride, z3_rs);
        break;
      }
    }
    for (size_t i = first; i < calls.size(); ++i) {
      calls[i].dp_stage = stage;
      calls[i].experts = experts;
    }
  };
  // The dense weights and the experts of the GPU holding the most (the first or last stage
  // with the embedding or the head, or a middle one under Llama 3's layout, an uneven split or
  // DualPipe's paired stages): the stage and how much it holds.
  auto busiest = [&](bool experts) {
    std::pair<int, double> most{0, 0.0};
    for (int st = 0; st < par.pp; ++st) {
      const HeldParameters held = held_parameters(w, pc, st);
      const double of_kind = experts ? held.experts : held.dense;
      if (of_kind > most.second) most = {st, of_kind};
    }
    return most;
  };
  const auto [dense_stage, stage_params] = busiest(false);
  data_parallel(stage_params, par.dp * par.cp, par.tp, dense_stage, false,
                par.zero == 0 || zero1_all_reduce(w) ? "gradient all-reduce" : "gradient reduce-scatter",
                "updated-parameter all-gather", "ZeRO-3 parameter gather (forward)",
                "ZeRO-3 parameter gather (backward)", "ZeRO-3 gradient reduce-scatter");
  if (m.moe.enabled()) {
    const auto [expert_stage, experts] = busiest(true);
    data_parallel(experts, expert_data_parallel(w), par.expert_model_parallel(), expert_stage, true,
                  par.zero == 0 || zero1_all_reduce(w) ? "expert gradient all-reduce"
                                                       : "expert gradient reduce-scatter",
                  "updated-expert all-gather", "ZeRO-3 expert gather (forward)",
                  "ZeRO-3 expert gather (backward)", "ZeRO-3 expert gradient reduce-scatter");
  }
  return calls;
}

}  // namespace clustersim::models
