#include "models/transformer_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "models/compute_model.h"
#include "models/layer_model.h"
#include "models/scenario.h"
#include "models/units.h"

using namespace clustersim::models;

namespace {

const ModelSpec& preset(const char* id) {
  const ModelSpec* m = find_model(id);
  REQUIRE(m != nullptr);
  return *m;
}

// The seed's default job: Llama 2 70B on 32 H100, TP 8 + SP, DP 4, ZeRO-3, full recompute.
WorkloadConfig llama2_70b_default() {
  WorkloadConfig w;
  w.model = preset("llama2-70b");
  w.seq_len = 4096;
  w.global_batch = 1024;
  w.micro_batch = 1;
  w.parallelism.tp = 8;
  w.parallelism.dp = 4;
  w.parallelism.sp = true;
  w.parallelism.zero = 3;
  w.parallelism.recompute = Recompute::kFull;
  return w;
}

// The memory model of one of our single-H200 steps (scenarios/published/clustersim-h200/).
MemoryBreakdown h200_step_memory(const char* run) {
  const auto sc = load_scenario_file(std::string(CLUSTERSIM_SOURCE_DIR) +
                                     "/scenarios/published/clustersim-h200/clustersim-h200-" +
                                     run + ".yaml");
  REQUIRE(sc.ok());
  return memory_per_gpu(sc->workload);
}

const CommCall* find_call(const std::vector<CommCall>& calls, ParallelDim dim, CommPhase phase,
                          CollectiveOp op) {
  for (const auto& c : calls) {
    if (c.dim == dim && c.phase == phase && c.op == op) return &c;
  }
  return nullptr;
}

}  // namespace

TEST_SUITE("models") {
  // Published sizes: Llama 2 70B (Touvron et al. 2023: "70B"; Hugging Face config: 68.98B),
  // GPT-3 175B (Brown et al. 2020), Llama 3 8B and 405B (Llama Team 2024).
  TEST_CASE("transformer: Megatron's weight gradients accumulate into main_grad, by hand") {
    // Llama 3 8B at TP 2, one 8K sequence, on an H100 with fused kernels: each weight-gradient
    // GEMM reads and writes the layer's local weights' main_grad: 6 bytes an element in fp32
    // beyond a fresh bf16 output, 2 in bf16, of which the exposed share
    // (wgrad_accumulate_exposed) at the HBM rate. The forward and the eager path are untouched.
    WorkloadConfig w;
    w.model = preset("llama3-8b");
    w.seq_len = 8192;
    w.global_batch = 1;
    w.micro_batch = 1;
    w.parallelism.tp = 2;
    w.parallelism.sp = true;
    const GpuSpec& gpu = *find_gpu("h100-sxm");
    const ComputeParams params = default_compute_params(gpu);
    const double h = 4096, f = 14336, kv = 1024;
    const double local_weights = (2 * h * h + 2 * h * kv + 3 * f * h) / 2;
    const double per_byte = params.wgrad_accumulate_exposed * local_weights /
                            (gpu.hbm_Bps * params.hbm_efficiency);
    w.framework.fp32_gradients = true;
    const LayerKernels fp32 = layer_kernels(gpu, w, params);
    w.framework.fp32_gradients = false;
    const LayerKernels bf16 = layer_kernels(gpu, w, params);
    CHECK(fp32.gemm_backward_s - bf16.gemm_backward_s == doctest::Approx((6 - 2) * per_byte));
    CHECK(fp32.gemm_forward_s == bf16.gemm_forward_s);
    ComputeParams none = params;
    none.wgrad_accumulate_exposed = 0;
    CHECK(bf16.gemm_backward_s - layer_kernels(gpu, w, none).gemm_backward_s ==
          doctest::Approx(2 * per_byte));
    // Fused kernels under PyTorch's FSDP (zero 3, autograd's .grad: NeMo AutoModel) produce
    // each micro-batch's unsharded gradient fresh and reduce-scatter it: no such bytes either.
    WorkloadConfig fsdp = w;
    fsdp.parallelism.zero = 3;
    fsdp.framework.gradients_in_backward = true;
    CHECK(layer_kernels(gpu, fsdp, params).gemm_backward_s ==
          doctest::Approx(layer_kernels(gpu, fsdp, none).gemm_backward_s));
    fsdp.framework.gradients_in_backward = false;  // Megatron-FSDP's persistent main_grad
    CHECK(layer_kernels(gpu, fsdp, params).gemm_backward_s >
          layer_kernels(gpu, fsdp, none).gemm_backward_s);
    // PyTorch's own steps write fresh gradients: no such bytes.
    w.framework.kernels = KernelFusion::kEager;
    CHECK(layer_kernels(gpu, w, params).gemm_backward_s ==
          doctest::Approx(layer_kernels(gpu, w, none).gemm_backward_s));
  }

  TEST_CASE("transformer: eager and compiled PyTorch time the elementwise work by hand") {
    // Llama 3 8B on one H200, one 8K sequence, no TP: eager's op-by-op bytes per token (132 h
    // + 10 f forward, 196 h + 26 f backward, plus 6 bytes per weight each way for the casts),
    // each at its kind of kernel's rate (device call 24), and torch.compile's measured share of
    // that time.
    WorkloadConfig w;
    w.model = preset("llama3-8b");
    w.seq_len = 8192;
    w.global_batch = 1;
    w.micro_batch = 1;
    w.framework.weights_in_fp32 = true;
    w.framework.separate_projection_gemms = false;  // train_step.py's Block: fused QKV, gate-up
    const GpuSpec& gpu = *find_gpu("h200-sxm");
    const ComputeParams params = default_compute_params(gpu);
    const double h = 4096, f = 14336, kv = 1024, tokens = 8192;
    const double weights = 2 * h * h + 2 * h * kv + 3 * f * h;
    const ComputeParams::EagerRates& r = params.eager;
    const auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / (gpu.hbm_Bps * kind.fraction);  // on the H200: the measured fraction
    };
    w.framework.kernels = KernelFusion::kEager;
    const LayerKernels eager = layer_kernels(gpu, w, params);
    // Forward: two fp32 rms_norms (8 h) with their outputs' down-casts (6 h) and two residual
    // adds of a bf16 output into the fp32 stream (10 h); the attention output's transposing
    // copy (4 h); rotary on Q and K (strided halves times the table 24 h, their sums 24 h, the
    // concatenations 16 h), SDPA's down-casts (12 h) and V's copy (4 h); SiLU and the gate
    // product (10 f); the weights' down-casts.
    const double forward = 2 * (at(r.rms_norm, 8 * h) + at(r.cast_down, 6 * h) +
                                at(r.mixed, 10 * h)) +
                           at(r.layout, 4 * h) + at(r.strided, 24 * h) + at(r.same, 24 * h) +
                           at(r.cat, 16 * h) + at(r.cast_down, 12 * h) + at(r.layout, 4 * h) +
                           at(r.same, 10 * f) + at(r.cast_down, 6 * weights / tokens);
    CHECK(eager.memory_forward_s == doctest::Approx(forward * tokens));
    // Backward: per norm the up-cast (6 h), the norm's backward (12 h), the accumulation (8 h)
    // and the branch gradient's down-cast (6 h); the transposing copy (4 h) and the Q K V
    // gradients' concatenation (12 h); rotary's backward (32 h strided, 16 h layout, 44 h
    // same-dtype) and its casts (12 h up, 12 h down); the MLP's gradients (18 f) and their
    // concatenation (8 f); the weight gradients' up-casts.
    const double backward =
        2 * (at(r.cast_up, 6 * h) + at(r.norm_backward, 12 * h) + at(r.same, 8 * h) +
             at(r.cast_down, 6 * h)) +
        at(r.layout, 4 * h) + at(r.cat, 12 * h) + at(r.strided, 32 * h) + at(r.layout, 16 * h) +
        at(r.same, 44 * h) + at(r.cast_up, 12 * h) + at(r.cast_down, 12 * h) +
        at(r.same, 18 * f) + at(r.cat, 8 * f) + at(r.cast_up, 6 * weights / tokens);
    CHECK(eager.memory_backward_s == doctest::Approx(backward * tokens));
    // At the one rate of an up-cast, as the model had it before call 24, the same bytes took
    // longer: the kinds' rates are faster for most of the bytes, slower for rotary's strided ops.
    CHECK(eager.memory_forward_s <
          (132 * h + 10 * f + 6 * weights / tokens) * tokens / (gpu.hbm_Bps * 0.44));
    w.framework.kernels = KernelFusion::kCompiled;
    const LayerKernels compiled = layer_kernels(gpu, w, params);
    CHECK(params.compiled_elementwise_share == doctest::Approx(0.33));
    CHECK(compiled.memory_forward_s == doctest::Approx(0.33 * eager.memory_forward_s));
    CHECK(compiled.memory_backward_s == doctest::Approx(0.33 * eager.memory_backward_s));
    CHECK(compiled.gemm_forward_s == eager.gemm_forward_s);
    // Fused (Transformer Engine) runs below compiled PyTorch's time.
    w.framework.kernels = KernelFusion::kFused;
    CHECK(layer_kernels(gpu, w, params).memory_forward_s < compiled.memory_forward_s);
    // Memory: torch.compile per block keeps the fused layers' tensors and the rotated Q and K
    // (2 (h + kv) bytes per token and layer, call 17), but runs the head and the loss eager: 12
    // bytes per logit (fp32 log-softmax, its gradient, the input gradient) instead of the fused
    // loss's fp32 softmax beside the 16-bit logits (6).
    const MemoryBreakdown fused_memory = memory_per_gpu(w);
    w.framework.kernels = KernelFusion::kCompiled;
    const MemoryBreakdown compiled_memory = memory_per_gpu(w);
    CHECK(compiled_memory.activations_bytes - fused_memory.activations_bytes ==
          doctest::Approx(32 * 2 * (h + kv) * tokens));
    CHECK(compiled_memory.logits_bytes - fused_memory.logits_bytes ==
          doctest::Approx(6.0 * 128256 * tokens));
    w.framework.kernels = KernelFusion::kEager;
    CHECK(memory_per_gpu(w).logits_bytes == doctest::Approx(compiled_memory.logits_bytes));
    CHECK(memory_per_gpu(w).activations_bytes > compiled_memory.activations_bytes);
  }

  TEST_CASE("transformer: MPT's GPT-style eager layer and FSDP's casts by hand") {
    // MPT-7B's layer (llm-foundry): LayerNorm computed in 16 bits on a cast of the fp32 stream
    // (low_precision_layernorm), a 4h GELU MLP, biases on every linear, learned positions (no
    // rotary ops). Bytes per token under autocast (layer_model.cc's op list): forward 44 h + 4 f
    // (two norms' casts and norms 2 x 10 h, two residual adds to the fp32 stream 2 x 10 h, the
    // attention output's transpose copy 4 h, GELU 4 f); backward 94 h + 8 f (the norms with their
    // casts and fp32 accumulation 2 x 28 h, the branch gradients' casts 2 x 6 h, the transpose
    // 4 h, the Q K V gradients concatenated 12 h, GELU's gradient 6 f, the bias gradients
    // 2 (5 h + f)); plus each weight's cast, 6 bytes a parameter each way.
    WorkloadConfig w;
    w.model.layers = 32;
    w.model.hidden = 4096;
    w.model.heads = 32;
    w.model.kv_heads = 32;
    w.model.ffn_hidden = 16384;
    w.model.vocab = 50368;
    w.model.gated_ffn = false;
    w.model.tied_embeddings = true;
    w.model.linear_biases = true;
    w.model.normalization = Normalization::kLayerNorm;
    w.model.position_embedding = PositionEmbedding::kLearned;
    w.seq_len = 2048;
    w.micro_batch = 6;
    w.global_batch = 6;
    w.framework.kernels = KernelFusion::kEager;
    w.framework.separate_projection_gemms = false;  // MPT's Wqkv
    w.framework.weights_in_fp32 = true;
    w.framework.low_precision_norm = true;
    const GpuSpec& gpu = *find_gpu("h200-sxm");
    const ComputeParams params = default_compute_params(gpu);
    const double h = 4096, f = 16384, tokens = 2048 * 6;
    const double weights = 4 * h * h + 2 * f * h;
    const ComputeParams::EagerRates& r = params.eager;
    const auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / (gpu.hbm_Bps * kind.fraction);  // on the H200: the measured fraction
    };
    const LayerKernels autocast = layer_kernels(gpu, w, params);
    CHECK(autocast.memory_forward_s ==
          doctest::Approx(tokens * (2 * (at(r.cast_down, 6 * h) + at(r.layer_norm, 4 * h) +
                                         at(r.mixed, 10 * h)) +
                                    at(r.layout, 4 * h) + at(r.gelu, 4 * f)) +
                          at(r.cast_down, 6 * weights)));
    CHECK(autocast.memory_backward_s ==
          doctest::Approx(tokens * (2 * (at(r.norm_backward, 10 * h) + at(r.cast_up, 6 * h) +
                                         at(r.same, 12 * h) + at(r.cast_down, 6 * h)) +
                                    at(r.layout, 4 * h) + at(r.cat, 12 * h) +
                                    at(r.gelu_backward, 6 * f) + at(r.same, 2 * (5 * h + f))) +
                          at(r.cast_up, 6 * weights)));
    // torch's LayerNorm in fp32 on the stream instead: forward the norm's 8 h and the next
    // linear's down-cast 6 h against the down-cast 6 h and the norm's 4 h; backward the up-cast
    // 6 h, the norm's 12 h and an 8 h accumulation against 10 h, 6 h and 12 h.
    w.framework.low_precision_norm = false;
    const LayerKernels torch_norm = layer_kernels(gpu, w, params);
    CHECK(torch_norm.memory_forward_s - autocast.memory_forward_s ==
          doctest::Approx(2 * at(r.layer_norm, 4 * h) * tokens));
    CHECK(torch_norm.memory_backward_s - autocast.memory_backward_s ==
          doctest::Approx(2 * (at(r.norm_backward, 2 * h) - at(r.same, 4 * h)) * tokens));
    // FSDP's mixed precision over 8 ranks: the layer runs on a 16-bit stream (norms 2 x 4 h,
    // residual adds 2 x 6 h forward; norm gradients with LayerNorm's weight and bias 2 x 16 h
    // backward), no per-use casts, and FSDP's own copies: (6 / 8 + 4) bytes a parameter
    // forward, (6 / 8 + 10) backward.
    w.parallelism.zero = 3;
    w.parallelism.dp = 8;
    w.global_batch = 48;
    const LayerKernels fsdp = layer_kernels(gpu, w, params);
    // FSDP's copies: the shard's down-cast (6 / 8), the copy out of the gathered buffer (4, a
    // device-to-device memcpy), backward also the gradients' up-cast (6).
    const double fsdp_copies = at(r.cast_down, 6.0 / 8 * weights) + at(r.memcpy, 4 * weights);
    CHECK(fsdp.memory_forward_s ==
          doctest::Approx(tokens * (2 * (at(r.layer_norm, 4 * h) + at(r.same, 6 * h)) +
                                    at(r.layout, 4 * h) + at(r.gelu, 4 * f)) +
                          fsdp_copies));
    CHECK(fsdp.memory_backward_s ==
          doctest::Approx(tokens * (2 * (at(r.norm_backward, 10 * h) + at(r.same, 6 * h)) +
                                    at(r.layout, 4 * h) + at(r.cat, 12 * h) +
                                    at(r.gelu_backward, 6 * f) + at(r.same, 2 * (5 * h + f))) +
                          fsdp_copies + at(r.cast_up, 6 * weights)));
    // The biases' gradients are PyTorch eager's only: fused kernels fold them into the GEMMs.
    w.model.linear_biases = false;
    CHECK(fsdp.memory_backward_s - layer_kernels(gpu, w, params).memory_backward_s ==
          doctest::Approx(at(r.same, 2 * (5 * h + f)) * tokens));

    // Memory under autocast: a norm computed on a 16-bit cast of the stream keeps that cast (2
    // bytes), not the fp32 stream (4), for each of a layer's two norms; a fused loss kernel
    // (flash-attn's CrossEntropyLoss) holds the logits and their 16-bit gradient, 2 + 2 bytes a
    // logit at its backward, where the fp32 path holds 12.
    w.parallelism.zero = 0;
    w.parallelism.dp = 1;
    w.global_batch = 6;
    const MemoryBreakdown torch_norm_memory = memory_per_gpu(w);
    w.framework.low_precision_norm = true;
    const MemoryBreakdown cast_norm_memory = memory_per_gpu(w);
    CHECK(torch_norm_memory.activations_bytes - cast_norm_memory.activations_bytes ==
          doctest::Approx(32 * 2 * h * (4 - 2) * tokens));
    w.framework.loss_input = LossInput::kFused;
    const double logits = tokens * 50368;
    CHECK(cast_norm_memory.loss_backward_bytes - memory_per_gpu(w).loss_backward_bytes ==
          doctest::Approx((12 - 4) * logits));
  }

  TEST_CASE("transformer: parameter counts of the presets") {
    CHECK(count_parameters(preset("llama2-70b")).total() == doctest::Approx(69.0e9).epsilon(0.01));
    CHECK(count_parameters(preset("llama2-70b")).total() == doctest::Approx(70e9).epsilon(0.02));
    CHECK(count_parameters(preset("gpt3-175b")).total() == doctest::Approx(175e9).epsilon(0.01));
    CHECK(count_parameters(preset("llama3-8b")).total() == doctest::Approx(8.0e9).epsilon(0.01));
    CHECK(count_parameters(preset("llama3-405b")).total() == doctest::Approx(405e9).epsilon(0.01));
    CHECK(count_parameters(preset("llama2-7b")).total() == doctest::Approx(6.74e9).epsilon(0.01));
    CHECK(count_parameters(preset("gpt2-124m")).total() == doctest::Approx(124e6).epsilon(0.02));
  }

  // The dense presets added with their model cards' totals: Llama 3.2 1B / 3B 1.23B / 3.21B
  // (Meta's model card); Mistral 7B 7.24B (mistralai/Mistral-7B-v0.1); Qwen2.5 7.61B / 14.7B /
  // 32.5B / 72.7B (Qwen2.5 model cards); Qwen3 8.2B / 14.8B / 32.8B (Qwen3 model cards);
  // Nemotron-4 15B 3.2B + 12.5B and 340B 9.4B + 331.6B (their reports' Table 1); OPT-175B
  // (Zhang et al. 2022); BLOOM 176.25B (bigscience/bloom); MPT-7B 6.7B, MPT-30B 29.95B
  // (MosaicML). Each within 1%: a wrong dimension moves a count by more.
  TEST_CASE("transformer: parameter counts of the dense presets against their model cards") {
    const std::pair<const char*, double> kCards[] = {
        {"llama3.2-1b", 1.23e9},    {"llama3.2-3b", 3.21e9},    {"mistral-7b", 7.24e9},
        {"qwen2.5-7b", 7.61e9},     {"qwen2.5-14b", 14.7e9},    {"qwen2.5-32b", 32.5e9},
        {"qwen2.5-72b", 72.7e9},    {"qwen3-8b", 8.2e9},        {"qwen3-14b", 14.8e9},
        {"qwen3-32b", 32.8e9},      {"nemotron4-15b", 15.7e9},  {"nemotron4-340b", 341.0e9},
        {"opt-175b", 175e9},        {"bloom-176b", 176.25e9},   {"mpt-7b", 6.7e9},
        {"mpt-30b", 29.95e9}};
    for (const auto& [id, card] : kCards) {
      CAPTURE(id);
      const auto pc = count_parameters(preset(id));
      CHECK(pc.total() == doctest::Approx(card).epsilon(0.01));
      CHECK(pc.active() == pc.total());
    }
    // By hand: Qwen3-32B's 64 query heads of 128 are wider than its 5120 residual stream.
    const auto q32 = count_parameters(preset("qwen3-32b"));
    CHECK(q32.attention_per_layer == 2.0 * 5120 * 8192 + 2.0 * 5120 * 1024);
    CHECK(q32.ffn_per_layer == 3.0 * 5120 * 25600);
    // Nemotron-4's squared-ReLU MLP has two matrices.
    CHECK(count_parameters(preset("nemotron4-15b")).ffn_per_layer == 2.0 * 6144 * 24576);
  }

  TEST_CASE("transformer: parameters by hand (Llama 2 70B, GQA, gated FFN)") {
    const auto pc = count_parameters(preset("llama2-70b"));
    // Q and O 8192^2 each; K and V 8192 x (8 kv heads x 128).
    CHECK(pc.attention_per_layer == 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024);
    CHECK(pc.ffn_per_layer == 3.0 * 8192 * 28672);
    CHECK(pc.embedding == 32000.0 * 8192);
    CHECK(pc.output_head == 32000.0 * 8192);
    CHECK(pc.total() == 68976648192.0);
    // GPT-3 ties the head to the embedding and has a 2-matrix MLP: 12 h^2 per layer.
    const auto g = count_parameters(preset("gpt3-175b"));
    CHECK(g.output_head == 0);
    CHECK(g.matmul_per_layer() == 12.0 * 12288 * 12288);
  }

  // Mixtures of experts against their model cards: total and activated parameters.
  // Mixtral 8x7B 46.7B / 12.9B (Jiang et al. 2024); 8x22B 141B / 39B (Mistral AI); DeepSeek-V3
  // 671B / 37B (its report, without the 14B MTP module); Qwen3-235B-A22B 235B / 22B (Qwen3
  // report); Kimi K2 1.04T / 32B (Kimi Team 2025); DBRX 132B / 36B (Databricks 2024).
  TEST_CASE("transformer: MoE parameters, total and activated, against the model cards") {
    struct Card {
      const char* id;
      double total, active, tolerance;
    };
    for (const Card& c : {Card{"mixtral-8x7b", 46.7e9, 12.9e9, 0.01},
                          Card{"mixtral-8x22b", 141e9, 39e9, 0.01},
                          Card{"deepseek-v3", 671e9, 37e9, 0.02},
                          Card{"qwen3-235b-a22b", 235e9, 22e9, 0.02},
                          Card{"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02},
                          Card{"kimi-k2", 1.04e12, 32e9, 0.03},
                          Card{"dbrx", 132e9, 36e9, 0.02}}) {
      CAPTURE(c.id);
      const auto pc = count_parameters(preset(c.id));
      CHECK(pc.total() == doctest::Approx(c.total).epsilon(c.tolerance));
      CHECK(pc.active() == doctest::Approx(c.active).epsilon(c.tolerance));
    }
  }

  TEST_CASE("transformer: MoE and MLA parameters by hand (DeepSeek-V3)") {
    const ModelSpec& m = preset("deepseek-v3");
    const auto pc = count_parameters(m);
    const double h = 7168;
    // MLA: q down 7168 x 1536, q up 1536 x 128 heads x (128 + 64), kv down 7168 x (512 + 64), kv
    // up 512 x 128 x (128 + 128), out 128 x 128 x 7168.
    CHECK(pc.attention_per_layer ==
          h * 1536 + 1536.0 * 128 * 192 + h * 576 + 512.0 * 128 * 256 + 128.0 * 128 * h);
    CHECK(pc.layers == 61);
    CHECK(pc.moe_layers == 58);
    CHECK(pc.dense_layers() == 3);
    CHECK(pc.expert == 3 * h * 2048);
    CHECK(pc.shared_per_layer == pc.expert);
    CHECK(pc.router_per_layer == h * 256);
    CHECK(pc.moe_mlp_per_layer() == 257 * pc.expert + h * 256);
    CHECK(pc.moe_active_mlp_per_layer() == 9 * pc.expert + h * 256);
    // Attention FLOPs: QK^T over 192 dimensions and AV over 128, 128 heads, causal.
    const auto f = flops_per_token(m, 4096);
    CHECK(f.attention_forward == doctest::Approx(2.0 * 4096 * 128 * (192 + 128) * 61 * 0.5));
    CHECK(f.dense_forward == doctest::Approx(2 * pc.active_layer_matmuls() + 2 * 129280 * h));
    // A dense model is unchanged: active = total.
    const auto d = count_parameters(preset("llama3-70b"));
    CHECK(d.active() == d.total());
  }

  TEST_CASE("transformer: gpt-oss's sliding window, 128 keys on half the layers") {
    const ModelSpec& m = preset("gpt-oss-120b");
    const auto pc = count_parameters(m);
    // The model card's 116.83B total (OpenAI 2025, Table 1).
    CHECK(pc.total() == doctest::Approx(116.83e9).epsilon(0.001));
    // Per token and layer: 2 x 64 heads x (64 + 64) FLOPs per key; 18 dense layers see half of
    // 4096 keys (causal), 18 windowed ones 128.
    const double per_key = 2.0 * 64 * (64 + 64);
    const auto f = flops_per_token(m, 4096);
    CHECK(f.attention_forward == doctest::Approx(per_key * (18 * 2048 + 18 * 128)));
    CHECK(flops_per_token(m, 4096, false).attention_forward ==
          doctest::Approx(per_key * (18 * 4096 + 18 * 128)));
    // A window as long as the sequence changes nothing.
    ModelSpec wide = m;
    wide.sliding_window = 4096;
    ModelSpec none = m;
    none.sliding_window = 0;
    none.sliding_window_layers = 0;
    CHECK(flops_per_token(wide, 4096).attention_forward ==
          doctest::Approx(flops_per_token(none, 4096).attention_forward));
  }

  TEST_CASE("transformer: 6N FLOPs plus attention") {
    const ModelSpec& m = preset("llama3-8b");
    const auto pc = count_parameters(m);
    const auto f = flops_per_token(m, 8192);
    // Dense: 2 FLOPs per matmul weight per token forward; the embedding lookup is free.
    const double n_matmul = pc.layers * pc.matmul_per_layer() + pc.output_head;
    CHECK(f.dense_forward == doctest::Approx(2 * n_matmul));
    CHECK(3 * f.dense_forward == doctest::Approx(6 * n_matmul));
    // Causal attention: 4 s h per layer, halved.
    CHECK(f.attention_forward == doctest::Approx(2.0 * 8192 * 4096 * 32));
    CHECK(flops_per_token(m, 8192, false).attention_forward ==
          doctest::Approx(2 * f.attention_forward));
    CHECK(f.training() == doctest::Approx(3 * (f.dense_forward + f.attention_forward)));
    // Recompute: full repeats the layers' forward, selective the attention core.
    CHECK(hardware_flops_per_token(f, Recompute::kNone) == doctest::Approx(f.training()));
    CHECK(hardware_flops_per_token(f, Recompute::kSelective) ==
          doctest::Approx(f.training() + f.attention_forward));
    CHECK(hardware_flops_per_token(f, Recompute::kFull) ==
          doctest::Approx(4 * f.forward() - f.head_forward));
  }

  // Narayanan et al. 2021, eq. (3): a training iteration with full recomputation does
  // 96 B s l h^2 (1 + s / (6h) + V / (16 l h)) FLOPs (full attention counted).
  TEST_CASE("transformer: Megatron-LM's FLOPs formula for GPT-3") {
    const ModelSpec& m = preset("gpt3-175b");
    const double B = 1536, s = 2048, l = 96, h = 12288, V = 50257;
    const auto f = flops_per_token(m, 2048, /*causal=*/false);
    const double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    CHECK(hardware_flops_per_token(f, Recompute::kFull) * B * s ==
          doctest::Approx(megatron).epsilon(1e-9));
    // Without recomputation: 72 B s l h^2 (1 + s / (6h) + V / (12 l h)).
    const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    CHECK(f.training() * B * s == doctest::Approx(model).epsilon(1e-9));
  }

  TEST_CASE("transformer: memory of the default job by hand") {
    const auto w = llama2_70b_default();
    const auto mem = memory_per_gpu(w);
    // 80 layers x (855,638,016 / 8 + 2 x 8192 norm) + embedding and head / 8 + final norm.
    CHECK(mem.parameters == doctest::Approx(8623235072.0));
    // ZeRO-3 over dp 4: 2 (bf16 weights) + 4 (fp32 gradients, Megatron's default for bf16) +
    // 12 (fp32 master, m, v) bytes per parameter, all sharded by 4.
    CHECK(mem.weights_bytes == doctest::Approx(8623235072.0 * 2 / 4));
    CHECK(mem.gradients_bytes == doctest::Approx(8623235072.0 * 4 / 4));
    CHECK(mem.optimizer_bytes == doctest::Approx(8623235072.0 * 12 / 4));
    // Full recompute with SP: each layer's input, s h / t x 2 bytes, x 80; plus one layer's
    // tensors: norm inputs and outputs 4 h / t, Q K V and the attention output (2 h + 2 kv) / t,
    // the gated MLP's up+gate and activation (2 f + f) / t, each 2 bytes.
    const double s = 4096, h = 8192, kv = 1024, f = 28672, t = 8;
    const double layer = s * 2 * (4 * h / t + (2 * h + 2 * kv) / t + 3 * f / t);
    CHECK(mem.activations_bytes == doctest::Approx(80 * s * h * 2 / t + layer));
    // One stage: the embedding output (s h / t x 2) and, for the loss, the final norm's output
    // and fp32 + bf16 logits (6 bytes x s V / t).
    CHECK(mem.logits_bytes == doctest::Approx(2 * s * h * 2 / t + s * 6 * 32000 / t));
    // Two unsharded layers for ZeRO-3's gather and prefetch.
    CHECK(mem.gathered_weights_bytes == doctest::Approx(2 * 855638016.0 / 8 * 2));
    // Outside the allocator: the CUDA context (1 GiB) and NCCL's buffers for the TP and DP
    // communicators (0.6 GiB each). The allocator's cache beyond the tensors: two layers'
    // activations, one of which the recomputed layer takes back.
    CHECK(mem.outside_allocator_bytes == doctest::Approx(1 * kGiB + 2 * 0.6 * kGiB));
    CHECK(mem.layer_activations_bytes == doctest::Approx(layer));
    CHECK(mem.allocator_slack_bytes == doctest::Approx(layer));
    CHECK_FALSE(mem.gradients_own_pool);  // Megatron's ZeRO-3: one stream's pool
    // The peak: Megatron's persistent gradients, the stored layer inputs and embedding output,
    // the gathered layers, and the larger of the loss (at the last layer's end) and a layer
    // being recomputed (after the loss has freed its tensors): never both.
    const double loss = s * h * 2 / t + s * 6 * 32000 / t;
    const double stored = 80 * s * h * 2 / t + s * h * 2 / t;
    CHECK(mem.tensor_bytes() ==
          doctest::Approx(mem.weights_bytes + mem.optimizer_bytes + mem.gradients_bytes + stored +
                          mem.gathered_weights_bytes + std::max(loss, layer)));
    CHECK(mem.total() < 80 * kGiB);
  }

  TEST_CASE("transformer: the peak is the busiest moment, within 1% of the measured peaks") {
    // Our single-H200 PyTorch steps (scenarios/measurements/call9, torch.cuda.max_memory_
    // allocated): fp32 parameters under autocast, the loss on the 16-bit logits. Call 17 saw
    // the moments: 1.4B full 24.75 GiB in the forward, 23.43 in the backward; 4.3B full 61.0 /
    // 64.6; 374M-like 134M eager 12.35 / 13.33 (each less the 2.2 GiB it left allocated).
    struct Run {
      const char* file;
      double allocated_gib;
      MemoryBreakdown::Moment moment;
    };
    using Moment = MemoryBreakdown::Moment;
    for (const Run& run : {
             // 4.2 G logits: the loss's backward holds 10 bytes each (its log-softmax output,
             // nll_loss's fp32 copy and that copy's gradient).
             Run{"134m-s128k-b1-full", 45.77, Moment::kLossBackward},
             // autocast's 2.5 GiB of weight casts live until the forward leaves autocast.
             Run{"1.4b-s8k-b2-full", 24.83, Moment::kForwardEnd},
             // 16 GiB of fp32 gradients outweigh the 8K-token loss.
             Run{"4.3b-s8k-b1-full", 64.68, Moment::kGradients},
             Run{"374m-s8k-b2", 27.91, Moment::kLossBackward},
             // torch.compile'd blocks: 6f + 24h bytes per token and layer (call 17).
             Run{"134m-s8k-b2-compiled", 12.37, Moment::kLossBackward},
             Run{"4.3b-s8k-b1-compiled", 91.97, Moment::kLossBackward},
             // Compiled blocks under full recompute: autocast caches only the eager head's
             // cast, so the loss's backward is the peak (call 17: 0.98 GiB above the forward's
             // end). Measured with the previous configuration collected (call 18): call 9's
             // 28.10 GiB held the previous compiled model's block parameters, 4.6 GiB kept by
             // a reference cycle.
             Run{"1.4b-s8k-b2-full-compiled", 23.51, Moment::kLossBackward},
         }) {
      CAPTURE(run.file);
      const auto mem = h200_step_memory(run.file);
      CHECK(mem.peak_moment() == run.moment);
      CHECK(mem.tensor_bytes() / kGiB == doctest::Approx(run.allocated_gib).epsilon(0.01));
    }
  }

  TEST_CASE("transformer: the caching allocator's reserve, within 10% of the measured") {
    // torch.cuda.max_memory_reserved of our single-H200 steps (device calls 9 and 20, the same
    // peaks again in call 21, whose allocator trace shows where the cache is: 1.2-3.5 GiB at the
    // allocated peak without recompute, and under FSDP2 the reduce-scatter stream's own pool,
    // the fp32 gradients: 4.95 GiB for MPT-1B's 4.90, 6.82 for the 7B layers' 6.80).
    struct Run {
      const char* file;
      double reserved_gib;
      bool fsdp;
    };
    for (const Run& run : {
             Run{"1.4b-s2k-b8", 63.76, false},
             Run{"1.4b-s2k-b8-fsdp", 62.30, true},
             Run{"mpt-1b-s2k-b8", 51.05, false},
             Run{"mpt-1b-s2k-b8-fsdp", 56.00, true},
             Run{"mpt-7b-8l-s2k-b6", 47.23, false},
             Run{"mpt-7b-8l-s2k-b6-fsdp", 53.04, true},
             Run{"134m-s128k-b1-full", 58.05, false},
             Run{"4.3b-s32k-b1-full", 87.97, false},
         }) {
      CAPTURE(run.file);
      const auto mem = h200_step_memory(run.file);
      CHECK(mem.gradients_own_pool == run.fsdp);
      CHECK(mem.allocator_bytes() / kGiB == doctest::Approx(run.reserved_gib).epsilon(0.10));
    }
    // Under FSDP the gradients add to the reserve; under autocast they take the freed
    // activations' blocks.
    MemoryBreakdown mem = h200_step_memory("mpt-7b-8l-s2k-b6-fsdp");
    const double own_pool = mem.allocator_bytes();
    mem.gradients_own_pool = false;
    CHECK(own_pool - mem.allocator_bytes() == doctest::Approx(mem.gradients_bytes));
  }

  TEST_CASE("transformer: framework.loss_input, and only for PyTorch's kernels") {
    const std::string head =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 1}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 8192\n  global_batch: 1\n"
        "  framework:\n";
    auto loss = [&](const std::string& framework) {
      auto s = load_scenario_text(head + framework + "  parallelism: {tp: 1, dp: 1}\n", "t.yaml");
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
      return memory_per_gpu(s->workload);
    };
    const MemoryBreakdown fp32 = loss("    kernels: eager\n");
    const MemoryBreakdown autocast = loss("    kernels: eager\n    loss_input: autocast\n");
    // 8192 x 128256 logits: 12 against 10 bytes each at the loss's backward, 10 against 8 at
    // its forward; the allocator holds 12 for either (call 17).
    const double logits = 8192.0 * 128256;
    CHECK(fp32.loss_backward_bytes - autocast.loss_backward_bytes == doctest::Approx(2 * logits));
    CHECK(fp32.loss_forward_bytes - autocast.loss_forward_bytes == doctest::Approx(2 * logits));
    CHECK(fp32.loss_reserved_bytes == doctest::Approx(autocast.loss_reserved_bytes));
    // One fused kernel (loss_input fused: flash-attn's, or Inductor's compiled loss as TorchTitan
    // runs it) keeps only the 16-bit logits (and a log-sum-exp a token) for its backward, which
    // writes their 16-bit gradient: 2 bytes a logit forward, 4 backward and reserved.
    const MemoryBreakdown one_kernel = loss("    kernels: compiled\n    loss_input: fused\n");
    CHECK(fp32.loss_forward_bytes - one_kernel.loss_forward_bytes == doctest::Approx(8 * logits));
    CHECK(fp32.loss_backward_bytes - one_kernel.loss_backward_bytes ==
          doctest::Approx(8 * logits));
    CHECK(fp32.loss_reserved_bytes - one_kernel.loss_reserved_bytes ==
          doctest::Approx(8 * logits));
    // With TP the vocabulary-sharded logits go through PyTorch's loss_parallel, whose
    // log-softmax is DTensor's decomposition: x - max, exp of it, then the shifted logits minus
    // the log-sum-exp, each a new fp32 tensor: 12 bytes a logit at its forward beside the
    // 16-bit logits' 2, where aten's fused log-softmax holds 8, and its backward handlers one
    // fp32 tensor more than aten's: 16 (device call 50 measured 14.00 and 16.00).
    auto tp2 = load_scenario_text(
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 2}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 8192\n  global_batch: 1\n"
        "  framework:\n    kernels: eager\n  parallelism: {tp: 2, dp: 1}\n",
        "t.yaml");
    REQUIRE_MESSAGE(tp2.ok(), (tp2.ok() ? "" : tp2.message()));
    const MemoryBreakdown sharded = memory_per_gpu(tp2->workload);
    const double stream = 8192.0 * 4096 * 2;  // the final norm's output (no SP)
    CHECK(sharded.loss_forward_bytes == doctest::Approx(stream + (2 + 12) * logits / 2));
    CHECK(sharded.loss_backward_bytes == doctest::Approx(stream + 16 * logits / 2));
    CHECK(sharded.loss_reserved_bytes == doctest::Approx(stream + 16 * logits / 2));
    auto fused = load_scenario_text(head + "    loss_input: autocast\n  parallelism: {tp: 1}\n",
                                    "t.yaml");
    REQUIRE_FALSE(fused.ok());
    CHECK(fused.message().rfind("t.yaml:7:17: workload.framework.loss_input: applies to kernels: "
                                "eager or compiled", 0) == 0);
  }

  TEST_CASE("layer: framework.loss_kernel, Megatron's cross-entropy as each implementation runs") {
    const std::string head =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 1}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 8192\n  global_batch: 1\n"
        "  framework:\n";
    const GpuSpec& gpu = *find_gpu("h200-sxm");
    const ComputeParams params = default_compute_params(gpu);
    auto forward = [&](const std::string& framework) {
      auto s = load_scenario_text(head + framework + "  parallelism: {tp: 1, dp: 1}\n", "t.yaml");
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
      const auto stages = stage_compute(gpu, s->workload, params);
      return std::pair{stages.back().forward_s, stages.back().backward_s};
    };
    const auto fused = forward("    attention: flash\n");  // the default: loss_kernel fused
    const auto unfused = forward("    loss_kernel: unfused\n");
    const auto te = forward("    loss_kernel: te\n");
    // 8192 x 128256 logits. Beyond the 16-bit read, forward: 36 bytes unfused (the fp32 copy,
    // the max, subtract, exp, sum and divide, one kernel each), 20 fused, 4 through
    // Transformer Engine (the gradient written over the logits); backward 14 for Megatron's
    // two (scale the fp32 gradient, cast it), 4 for Transformer Engine's (scale in place).
    const double logits = 8192.0 * 128256;
    auto bytes_time = [&](double bytes) {
      return elementwise_time(gpu, logits * bytes, params).time_s;
    };
    CHECK(unfused.first - fused.first == doctest::Approx(bytes_time(2 + 36) - bytes_time(2 + 20)));
    CHECK(fused.first - te.first == doctest::Approx(bytes_time(2 + 20) - bytes_time(2 + 4)));
    CHECK(unfused.second == doctest::Approx(fused.second));
    CHECK(fused.second - te.second == doctest::Approx(bytes_time(14) - bytes_time(4)));
    // Only for fused kernels; a bad value names its line and column.
    auto eager = load_scenario_text(
        head + "    kernels: eager\n    loss_kernel: te\n  parallelism: {tp: 1}\n", "t.yaml");
    REQUIRE_FALSE(eager.ok());
    CHECK(eager.message().rfind("t.yaml:8:18: workload.framework.loss_kernel: applies to "
                                "kernels: fused",
                                0) == 0);
    auto bad = load_scenario_text(head + "    loss_kernel: apex\n  parallelism: {tp: 1}\n",
                                  "t.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().rfind("t.yaml:7:18: workload.framework.loss_kernel", 0) == 0);
  }

  TEST_CASE("transformer: DeepSpeed's BF16_Optimizer keeps the 16-bit gradients beside fp32") {
    WorkloadConfig w = llama2_70b_default();
    w.parallelism.zero = 1;
    const MemoryBreakdown reduce_scatter = memory_per_gpu(w);
    w.framework.zero1_all_reduce = true;  // zero1_grad_reduce: all_reduce
    const MemoryBreakdown bf16_optimizer = memory_per_gpu(w);
    // fp32 gradients (4 bytes) and the bf16 ones (update_hp_grads(clear_lp_grads=False)): 2 more.
    CHECK(bf16_optimizer.gradients_bytes - reduce_scatter.gradients_bytes ==
          doctest::Approx(2 * reduce_scatter.parameters));
    CHECK(reduce_scatter.gradients_bytes == doctest::Approx(4 * reduce_scatter.parameters));
  }

  TEST_CASE("transformer: GPT activations are Korthikanti et al. 2022's 34 sbh / t + 5 as^2b / t") {
    WorkloadConfig w;
    w.model = preset("gpt3-175b");  // 4h GeLU MLP, multi-head attention
    w.seq_len = 2048;
    w.micro_batch = 1;
    w.global_batch = 64;
    w.dropout = 0.1;
    w.framework.attention = AttentionKernel::kUnfused;
    w.parallelism.tp = 8;
    w.parallelism.pp = 8;
    w.parallelism.dp = 1;
    w.parallelism.sp = true;
    w.parallelism.pp_schedule = PipelineSchedule::k1F1B;
    const double s = 2048, h = 12288, a = 96, t = 8;
    const double sbh = s * h;
    // Stage 0 under 1F1B: pp = 8 micro-batches x 12 layers.
    const auto mem = memory_per_gpu(w);
    REQUIRE(mem.stage == 0);
    const double per_layer = sbh * 34 / t + 5 * a * s * s / t;
    CHECK(mem.activations_bytes == doctest::Approx(8 * 12 * per_layer));
    // Without SP: 10 sbh + 24 sbh / t.
    w.parallelism.sp = false;
    CHECK(memory_per_gpu(w).activations_bytes ==
          doctest::Approx(8 * 12 * (sbh * (10 + 24 / t) + 5 * a * s * s / t)));
    // Flash attention keeps no scores; without dropout no masks: 32 sbh / t with SP.
    w.parallelism.sp = true;
    w.framework.attention = AttentionKernel::kFlash;
    w.dropout = 0;
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(8 * 12 * sbh * 32 / t));
    // Context parallelism divides s.
    w.parallelism.cp = 2;
    w.parallelism.pp = 4;
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(4 * 24 * sbh / 2 * 32 / t));
    // DTensor SP (no second gather in the backward) keeps the two norms' outputs gathered: 2 x
    // 2 sbh instead of 2 x 2 sbh / t.
    w.framework.sp_input_regather = false;
    CHECK(memory_per_gpu(w).activations_bytes ==
          doctest::Approx(4 * 24 * sbh / 2 * (32 / t + 4 * (1 - 1 / t))));
  }

  TEST_CASE("transformer: op-level selective checkpointing keeps every other matmul output") {
    WorkloadConfig w;
    w.model = preset("llama3-8b");  // h 4096, kv 1024, gated f 14336
    w.seq_len = 8192;
    w.micro_batch = 1;
    w.global_batch = 8;
    w.parallelism.dp = 8;
    w.parallelism.zero = 3;
    w.parallelism.recompute = Recompute::kSelectiveOp;
    const double h = 4096, kv = 1024, f = 14336, s = 8192;
    // Per token: the layer input, wq and wv outputs, w1 output, the attention output and the
    // w2 output (2 bytes each); plus one whole layer while it is recomputed.
    const double kept = 2 * h + 2 * (2 * h + kv + f) + 2 * h;
    const double layer = 2 * (4 * h + (2 * h + 2 * kv) + 3 * f);
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(32 * kept * s + layer * s));
    // It recomputes wk, wo and w3: 2 (h kv + h^2 + h f) FLOPs per token and layer.
    const auto fl = flops_per_token(w.model, 8192);
    CHECK(hardware_flops_per_token(fl, Recompute::kSelectiveOp) ==
          doctest::Approx(fl.training() + 2 * 32 * (h * kv + h * h + h * f)));
    // Between Megatron's selective (the attention core) and full recompute in memory.
    const double op = memory_per_gpu(w).activations_bytes;
    w.parallelism.recompute = Recompute::kFull;
    CHECK(memory_per_gpu(w).activations_bytes < op);
    w.parallelism.recompute = Recompute::kSelective;
    CHECK(memory_per_gpu(w).activations_bytes > op);
  }

  TEST_CASE("transformer: PyTorch's full recompute stops before the block's down projection") {
    // torch.utils.checkpoint(use_reentrant=False) stops recomputing once the tensors the
    // backward saved are back: the MLP's down projection, whose output only the residual add
    // reads, runs once. Megatron's and DeepSpeed's checkpointing rerun the whole forward.
    auto w = llama2_70b_default();
    const GpuSpec& gpu = *find_gpu("h100-sxm");
    const ComputeParams p = default_compute_params(gpu);
    CHECK_FALSE(w.framework.recompute_stops_early());  // fused kernels: Megatron-style
    const LayerKernels megatron = layer_kernels(gpu, w, p);
    CHECK(megatron.full_recompute_skipped_gemm_s == 0);
    CHECK(megatron.full_recompute_skipped_memory_s == 0);
    CHECK(megatron.recompute_s(Recompute::kFull) == doctest::Approx(megatron.forward_s()));
    w.framework.kernels = KernelFusion::kCompiled;
    CHECK(w.framework.recompute_stops_early());  // PyTorch's kernels: its checkpoint
    const LayerKernels pytorch = layer_kernels(gpu, w, p);
    // The down projection (tokens x h x ffn / t) alone: its forward GEMM time.
    const double tokens = 4096, h = 8192, f = 28672, t = 8;
    const double down = gemm_time(gpu, Precision::kBf16, {tokens, h, f / t}, p).time_s;
    CHECK(pytorch.full_recompute_skipped_gemm_s == doctest::Approx(down));
    // And the residual add after it: on this 16-bit stream (FSDP's parameters) 6 h bytes per
    // token of the sequence shard at the same-dtype kind's rate, at torch.compile's share.
    const double add = p.compiled_elementwise_share * 6 * h / t * tokens /
                       eager_bandwidth_Bps(gpu, p.eager.same, p);
    CHECK(pytorch.full_recompute_skipped_memory_s == doctest::Approx(add));
    CHECK(pytorch.recompute_s(Recompute::kFull) ==
          doctest::Approx(pytorch.forward_s() - down - add).epsilon(1e-9));
    CHECK(pytorch.recompute_gemm_s(Recompute::kFull) ==
          doctest::Approx(pytorch.gemm_forward_s - down));
    // The key overrides the default either way, and names itself when misspelt.
    w.framework.recompute_early_stop = false;
    CHECK(layer_kernels(gpu, w, p).full_recompute_skipped_gemm_s == 0);
    auto s = load_scenario_text(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload: {model: llama3-8b, seq_len: 4096, global_batch: 8,\n"
        "  framework: {recompute_early_stop: true},\n"
        "  parallelism: {tp: 1, dp: 8, recompute: full}}\n",
        "early.yaml");
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(s->workload.framework.recompute_stops_early());
    auto bad = load_scenario_text(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload: {model: llama3-8b, seq_len: 4096, global_batch: 8,\n"
        "  framework: {recompute_early_stop: maybe},\n"
        "  parallelism: {tp: 1, dp: 8}}\n",
        "early.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("recompute_early_stop") != std::string::npos);
  }

  TEST_CASE("transformer: pipeline stages hold micro-batches in flight") {
    auto w = llama2_70b_default();
    w.parallelism.zero = 1;
    w.parallelism.recompute = Recompute::kNone;
    w.parallelism.pp = 4;
    w.parallelism.dp = 1;
    const double s = 4096, h = 8192, kv = 1024, f = 28672, t = 8;
    const double per_layer = s * 2 * (4 * h / t + (2 * h + 2 * kv) / t + 3 * f / t);
    // 1F1B: stage 0 holds pp = 4 micro-batches of its 20 layers (all 80 layers' worth).
    CHECK(layers_per_stage(w) == 20);
    auto one_f = memory_per_gpu(w);
    CHECK(one_f.stage == 0);
    CHECK(one_f.activations_bytes == doctest::Approx(4 * 20 * per_layer));
    // Interleaved with 2 chunks: Megatron's warm-up 2 (pp - 1) + (v - 1) pp + 1 = 11 chunks of
    // 10 layers = 4 x 1.375 micro-batches through the stage.
    w.parallelism.pp_schedule = PipelineSchedule::kInterleaved;
    w.parallelism.virtual_stages = 2;
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(11 * 10 * per_layer));
    // With only m = pp = 4 micro-batches in the step Megatron runs every forward first: the
    // 4 micro-batches' 20 layers, not 5.5 (the cap a 2-chunk warm-up would pass).
    const int global_batch = w.global_batch;
    w.global_batch = 4;
    CHECK(w.micro_batches_per_step() == 4);
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(4 * 20 * per_layer));
    w.global_batch = global_batch;
    // GPipe: all 1024 micro-batches.
    w.parallelism.pp_schedule = PipelineSchedule::kGpipe;
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(1024 * 20 * per_layer));
  }

  TEST_CASE("transformer: gradients the backward allocates are not held at an all-forward peak") {
    // PyTorch allocates .grad in the backward (framework.gradients_in_backward); Megatron keeps
    // persistent buffers. A stage that runs every forward before its first backward then peaks
    // (its stored activations) with no gradient, and ends its backward with every gradient and
    // no activation: the larger of the two, not their sum.
    auto w = llama2_70b_default();
    w.parallelism.zero = 1;
    w.parallelism.recompute = Recompute::kNone;
    w.parallelism.pp = 4;
    w.parallelism.dp = 1;
    w.parallelism.pp_schedule = PipelineSchedule::kInterleaved;
    w.parallelism.virtual_stages = 2;
    w.global_batch = 4;  // m = pp: Megatron runs every forward first
    const MemoryBreakdown persistent = memory_per_gpu(w);
    CHECK_FALSE(persistent.gradients_replace_activations);
    w.framework.gradients_in_backward = true;
    const MemoryBreakdown lazy = memory_per_gpu(w);
    CHECK(lazy.gradients_replace_activations);
    CHECK(lazy.gradients_bytes == doctest::Approx(persistent.gradients_bytes));
    CHECK(persistent.tensor_bytes() - lazy.tensor_bytes() ==
          doctest::Approx(persistent.gradients_bytes));  // activations dominate the peak
    // 8 micro-batches: the steady state runs forwards after the first backward, beside the
    // gradients it allocated: they add up again.
    w.global_batch = 8;
    CHECK_FALSE(memory_per_gpu(w).gradients_replace_activations);
    // 1F1B: every forward first only where the warm-up (pp - stage) covers the step. With 4
    // micro-batches stage 0 does (4 >= 4) and the last stage does not (1 < 4): it holds its
    // gradients beside one micro-batch, and is now the busiest.
    w.parallelism.pp_schedule = PipelineSchedule::k1F1B;
    w.parallelism.virtual_stages = 1;
    w.global_batch = 4;
    const MemoryBreakdown busiest = memory_per_gpu(w);
    CHECK(busiest.stage == 3);
    CHECK_FALSE(busiest.gradients_replace_activations);
    w.framework.gradients_in_backward = false;
    CHECK(memory_per_gpu(w).stage == 0);  // persistent buffers: stage 0's 4 micro-batches
  }

  TEST_CASE("transformer: ZeRO stages shard more; precision layouts") {
    auto w = llama2_70b_default();
    w.parallelism.recompute = Recompute::kFull;
    double previous = 1e30;
    for (int zero : {0, 1, 2, 3}) {
      w.parallelism.zero = zero;
      const double total = memory_per_gpu(w).total();
      CHECK(total < previous);
      previous = total;
    }
    w.parallelism.zero = 0;
    auto static_bytes = [](const MemoryBreakdown& m) {
      return m.weights_bytes + m.gradients_bytes + m.optimizer_bytes + m.gathered_weights_bytes;
    };
    const auto z0 = memory_per_gpu(w);
    // Megatron's layout: 2 + 4 (fp32 gradients) + 12.
    CHECK(static_bytes(z0) == doctest::Approx(18 * z0.parameters));
    // 16-bit gradients (NeMo's recipes): 2 + 2 + 12.
    w.framework.fp32_gradients = false;
    CHECK(static_bytes(memory_per_gpu(w)) == doctest::Approx(16 * z0.parameters));
    // PyTorch autocast: fp32 parameters and gradients, m and v, and the 16-bit copies autocast
    // keeps until the backward: 4 + 4 + 8 + 2.
    w.framework.weights_in_fp32 = true;
    w.framework.fp32_gradients = true;
    CHECK(static_bytes(memory_per_gpu(w)) == doctest::Approx(18 * z0.parameters));
    CHECK(memory_per_gpu(w).optimizer_bytes == doctest::Approx(8 * z0.parameters));
    // ... and an fp32 residual stream: the layer inputs full recompute keeps are 4 bytes.
    CHECK(memory_per_gpu(w).activations_bytes > z0.activations_bytes);
  }

  TEST_CASE("transformer: communication of the default job") {
    const auto w = llama2_70b_default();
    const auto calls = communication_per_step(w);
    const double act = 4096.0 * 8192 * 2;  // s b h in bf16
    // SP: 2 all-gathers per layer forward, 4 backward (2 + 2 in the recompute).
    auto ag_fwd = find_call(calls, ParallelDim::kTp, CommPhase::kForward, CollectiveOp::kAllGather);
    REQUIRE(ag_fwd != nullptr);
    CHECK(ag_fwd->size_bytes == doctest::Approx(act));
    CHECK(ag_fwd->count == 160);
    CHECK(ag_fwd->group_size == 8);
    auto rs_bwd =
        find_call(calls, ParallelDim::kTp, CommPhase::kBackward, CollectiveOp::kReduceScatter);
    REQUIRE(rs_bwd != nullptr);
    CHECK(rs_bwd->count == 320);
    // The QKV and first MLP linears gather their inputs again for their weight gradients: 2 per
    // layer and backward, recompute or not; none without SP or where autograd keeps the
    // gathered input (DTensor).
    auto second_gathers = [](const std::vector<CommCall>& cs) {
      std::vector<const CommCall*> out;
      for (const auto& c : cs) {
        if (c.regather) out.push_back(&c);
      }
      return out;
    };
    const auto regathers = second_gathers(calls);
    REQUIRE(regathers.size() == 1);
    CHECK(regathers[0]->dim == ParallelDim::kTp);
    CHECK(regathers[0]->phase == CommPhase::kBackward);
    CHECK(regathers[0]->op == CollectiveOp::kAllGather);
    CHECK(regathers[0]->size_bytes == doctest::Approx(act));
    CHECK(regathers[0]->count == 160);
    auto no_sp = w;
    no_sp.parallelism.sp = false;
    CHECK(second_gathers(communication_per_step(no_sp)).empty());
    auto dtensor = w;
    dtensor.framework.sp_input_regather = false;
    CHECK(second_gathers(communication_per_step(dtensor)).empty());
    // ZeRO-3 over dp 4, stride tp 8: parameter gathers both ways, fp32 gradient reduce-scatter,
    // one call per FSDP unit a micro-batch (the stage's 80 blocks and the root module).
    auto gather = find_call(calls, ParallelDim::kDp, CommPhase::kForward, CollectiveOp::kAllGather);
    REQUIRE(gather != nullptr);
    CHECK(gather->count == 81);
    CHECK(gather->size_bytes * gather->count == doctest::Approx(8623235072.0 * 2));
    CHECK(gather->group_size == 4);
    CHECK(gather->group_stride == 8);
    auto rs =
        find_call(calls, ParallelDim::kDp, CommPhase::kBackward, CollectiveOp::kReduceScatter);
    REQUIRE(rs != nullptr);
    CHECK(rs->count == 81);
    CHECK(rs->size_bytes * rs->count == doctest::Approx(8623235072.0 * 4));
    // No PP or CP traffic.
    for (const auto& c : calls) {
      CHECK(c.dim != ParallelDim::kPp);
      CHECK(c.dim != ParallelDim::kCp);
    }
  }

  TEST_CASE("transformer: ZeRO-1's gradient reduction, reduce-scatter or all-reduce") {
    auto w = llama2_70b_default();
    w.parallelism.zero = 1;
    // Copies of the calls found (the list they point into ends with the lambda).
    auto grads = [&] {
      const auto calls = communication_per_step(w);
      auto copy = [](const CommCall* c) { return c ? std::optional<CommCall>(*c) : std::nullopt; };
      const CommCall* ag =
          find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllGather);
      REQUIRE(ag != nullptr);
      CHECK(ag->size_bytes == doctest::Approx(8623235072.0 * 2));  // bf16 weights
      return std::pair{
          copy(find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kReduceScatter)),
          copy(find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllReduce))};
    };
    auto [rs, ar] = grads();
    REQUIRE(rs.has_value());
    CHECK_FALSE(ar.has_value());
    CHECK(rs->size_bytes == doctest::Approx(8623235072.0 * 4));  // fp32 gradients
    CHECK(std::string(rs->what) == "gradient reduce-scatter");
    w.framework.zero1_all_reduce = true;
    std::tie(rs, ar) = grads();
    CHECK_FALSE(rs.has_value());
    REQUIRE(ar.has_value());
    CHECK(ar->size_bytes == doctest::Approx(8623235072.0 * 4));
    CHECK(std::string(ar->what) == "gradient all-reduce");
    // Only ZeRO-1 has the choice: ZeRO-2 reduce-scatters in the backward whatever the key says.
    w.parallelism.zero = 2;
    const auto z2 = communication_per_step(w);
    CHECK(find_call(z2, ParallelDim::kDp, CommPhase::kBackward, CollectiveOp::kReduceScatter) !=
          nullptr);
    // The loader takes the key with zero: 1 only, and names the values.
    const std::string head =
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: 8\n";
    auto ok = load_scenario_text(head +
                                     "  framework: {zero1_grad_reduce: all_reduce}\n"
                                     "  parallelism: {tp: 1, dp: 8, zero: 1}\n",
                                 "ok.yaml");
    REQUIRE(ok.ok());
    CHECK(ok.value().workload.framework.zero1_all_reduce);
    auto z0 = load_scenario_text(head +
                                     "  framework: {zero1_grad_reduce: all_reduce}\n"
                                     "  parallelism: {tp: 1, dp: 8, zero: 0}\n",
                                 "z0.yaml");
    REQUIRE_FALSE(z0.ok());
    CHECK(z0.message().find("z0.yaml:6:") == 0);
    CHECK(z0.message().find("applies to zero: 1") != std::string::npos);
    auto typo = load_scenario_text(head +
                                       "  framework: {zero1_grad_reduce: allreduce}\n"
                                       "  parallelism: {tp: 1, dp: 8, zero: 1}\n",
                                   "typo.yaml");
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.message().find("reduce_scatter") != std::string::npos);
  }

  TEST_CASE("transformer: communication of PP, CP and plain DP") {
    auto w = llama2_70b_default();
    w.parallelism.sp = false;
    w.parallelism.zero = 0;
    w.parallelism.recompute = Recompute::kNone;
    w.parallelism.pp = 4;
    w.parallelism.cp = 2;
    w.parallelism.dp = 1;
    const auto calls = communication_per_step(w);
    const double act = 2048.0 * 8192 * 2;  // s / cp
    auto ar = find_call(calls, ParallelDim::kTp, CommPhase::kForward, CollectiveOp::kAllReduce);
    REQUIRE(ar != nullptr);
    CHECK(ar->size_bytes == doctest::Approx(act));
    CHECK(ar->count == 2 * 20);
    auto pp = find_call(calls, ParallelDim::kPp, CommPhase::kForward, CollectiveOp::kSendRecv);
    REQUIRE(pp != nullptr);
    CHECK(pp->size_bytes == doctest::Approx(act / 8));  // Megatron's scatter/gather: 1/t
    CHECK(pp->group_stride == 8 * 2 * 1);
    // CP: K and V of the local kv heads (8 / 8 = 1 head of 128) for s / cp tokens, cp-1 steps
    // per layer.
    auto cp = find_call(calls, ParallelDim::kCp, CommPhase::kForward, CollectiveOp::kSendRecv);
    REQUIRE(cp != nullptr);
    CHECK(cp->size_bytes == doctest::Approx(2 * 2048.0 * 128 * 2));
    CHECK(cp->count == 20);
    // Gradients all-reduced over dp x cp = 2 ranks once per step.
    auto dp = find_call(calls, ParallelDim::kDp, CommPhase::kStep, CollectiveOp::kAllReduce);
    REQUIRE(dp != nullptr);
    CHECK(dp->group_size == 2);
    CHECK(dp->count == 1);
  }
}
