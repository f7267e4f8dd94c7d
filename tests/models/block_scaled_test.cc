// Blackwell's block-scaled formats: MXFP8 (fp8_recipe: mxfp8) and NVFP4 (precision: fp4) against
// per-tensor fp8 and bf16 on the same job, by hand: the weight GEMMs at their peak and measured
// in-tile ratio, both quantizations cast, both kept for the weights; and the scenario rules.
#include <doctest/doctest.h>

#include <string>

#include "models/layer_model.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

using namespace clustersim::models;

namespace {

// Llama 3 70B with TP 8 on one node of `gpu`; `framework` and `precision` as given.
Scenario llama70b(const std::string& gpu, const std::string& precision,
                  const std::string& framework = "") {
  auto s = load_scenario_text(
      "cluster: {nodes: 1, node: {gpu: " + gpu + ", gpus_per_node: 8, scale_up: " +
          (gpu == "h100-sxm" ? "nvlink4" : "nvlink5") +
          "}}\n"
          "workload:\n"
          "  model: llama3-70b\n"
          "  seq_len: 8192\n"
          "  global_batch: 8\n"
          "  precision: " +
          precision + "\n" + (framework.empty() ? "" : "  framework: " + framework + "\n") +
          "  parallelism: {tp: 8, sp: true, pp: 1, dp: 1, recompute: none}\n",
      "block_scaled.yaml");
  REQUIRE_MESSAGE(s.ok(), s.message());
  return std::move(s).value();
}

// The elements of each tensor the forward casts per layer of llama70b(), as each GPU holds it
// (8,192 tokens at TP 8 with SP): QKV's and the up projection's inputs are quantized on their
// sequence shard (h wide) and gathered quantized, the output projection's (h / 8) and the down
// projection's (ffn / 8) inputs whole; each the same h / 8, h / 8, h / 8, ffn / 8 per token.
// `gathered` weighs the first and third, `whole` the second and fourth.
double forward_cast_elements(double gathered = 1, double whole = 1) {
  const double tokens = 8192, h = 8192, ffn = 28672, t = 8;
  return tokens * (gathered * (h / t + h / t) + whole * (h / t + ffn / t));
}
double cast_rate(const GpuSpec& gpu, const ComputeParams& p) {
  return gpu.hbm_Bps * p.elementwise_efficiency;
}

std::string load_error(const std::string& text) {
  auto s = load_scenario_text(text, "bad.yaml");
  REQUIRE_FALSE(s.ok());
  return s.message();
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("catalog: Blackwell's dense NVFP4 peaks, none before it") {
    CHECK(find_gpu("b200")->peak_flops(Precision::kFp4) == doctest::Approx(9e15));
    CHECK(find_gpu("gb200")->peak_flops(Precision::kFp4) == doctest::Approx(10e15));
    CHECK(find_gpu("b300")->peak_flops(Precision::kFp4) == doctest::Approx(13.5e15));
    CHECK(find_gpu("gb300")->peak_flops(Precision::kFp4) == doctest::Approx(15e15));
    CHECK(find_gpu("h100-sxm")->peak_flops(Precision::kFp4) == 0);
    CHECK(bytes_per_element(Precision::kFp4) == doctest::Approx(0.5625));
    Precision p;
    REQUIRE(parse_precision("fp4", &p));
    CHECK(p == Precision::kFp4);
    CHECK(to_string(p) == "fp4");
    CHECK(quantized(Precision::kFp4));
    CHECK(quantized(Precision::kFp8));
    CHECK_FALSE(quantized(Precision::kBf16));
  }

  TEST_CASE("block scaling: MXFP8 GEMMs at the fp8 rate, casts of both quantizations") {
    const Scenario cs = llama70b("b200", "fp8");
    const Scenario mx = llama70b("b200", "fp8", "{fp8_recipe: mxfp8}");
    const GpuSpec& gpu = cs.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels a = layer_kernels(gpu, cs.workload, p);
    const LayerKernels b = layer_kernels(gpu, mx.workload, p);
    // The block scales are applied in the tensor core: the GEMMs are per-tensor fp8's.
    CHECK(b.gemm_forward_s == doctest::Approx(a.gemm_forward_s));
    CHECK(b.gemm_backward_s == doctest::Approx(a.gemm_backward_s));
    CHECK(b.attention_forward_s == doctest::Approx(a.attention_forward_s));
    // Casts: read 2 bytes and write; MXFP8 both quantizations, 2 x (1 + 1/32) = 4.0625 a
    // cast. Per-tensor FP8 (current scaling) one copy on the B200, whose FP8 GEMMs take any
    // layout (Transformer Engine quantizes no transpose there): 3 bytes where the norm computed
    // the amax (QKV, up), 5 where a pass of its own reads the tensor again (out, down).
    CHECK(b.memory_forward_s - a.memory_forward_s ==
          doctest::Approx(forward_cast_elements(4.0625 - 3, 4.0625 - 5) / cast_rate(gpu, p))
              .epsilon(1e-6));
    // DeepSeek's blockwise casts write both quantizations (their 128-element scales run along
    // K) and take their amax per block in the cast: 4 bytes each. Per-tensor: QKV's and up's
    // 2 + 1 on Hopper too (gathered row-wise; the backward transposes the gathered tensor), the
    // others 4 + 2 on Hopper and 4 + 1 on the B200.
    for (const char* id : {"h100-sxm", "b200"}) {
      CAPTURE(id);
      const Scenario tensorwise = llama70b(id, "fp8");
      const Scenario blockwise = llama70b(id, "fp8", "{fp8_recipe: blockwise}");
      const GpuSpec& g = tensorwise.cluster.node.gpu;
      const ComputeParams pg = default_compute_params(g);
      const double whole = std::string(id) == "b200" ? 5 : 6;
      CHECK(layer_kernels(g, blockwise.workload, pg).memory_forward_s -
                layer_kernels(g, tensorwise.workload, pg).memory_forward_s ==
            doctest::Approx(forward_cast_elements(4 - 3, 4 - whole) / cast_rate(g, pg))
                .epsilon(1e-6));
    }
  }

  TEST_CASE("block scaling: NVFP4 GEMMs at the fp4 peak times the measured ratio") {
    const Scenario b16 = llama70b("b200", "bf16");
    const Scenario f4 = llama70b("b200", "fp4");
    const GpuSpec& gpu = b16.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels a = layer_kernels(gpu, b16.workload, p);
    const LayerKernels b = layer_kernels(gpu, f4.workload, p);
    // 4 x bf16's peak, its in-tile efficiency and the tile's fixed time at the fp4 peak (together
    // torchao's B200 cuBLAS 0.946 at 6144^3-8192^3): the large GEMMs of this layer take about
    // 1 / 3.78 of the time (shape effects, a few percent).
    CHECK(b.gemm_forward_s == doctest::Approx(a.gemm_forward_s / (4 * 0.946)).epsilon(0.05));
    CHECK(b.gemm_backward_s == doctest::Approx(a.gemm_backward_s / (4 * 0.946)).epsilon(0.05));
    // Attention stays in bf16.
    CHECK(b.attention_forward_s == doctest::Approx(a.attention_forward_s));
    CHECK(b.attention_backward_s == doctest::Approx(a.attention_backward_s));
    // Casts: read 2 bytes for the per-tensor amax the global scale needs (Transformer Engine's
    // NVFP4Quantizer runs that pass before the cast), read 2 again and write both quantizations
    // at 0.5625 each: 5.125 bytes per element (QKV's and up's inputs on their sequence shard,
    // gathered quantized). MXFP8 (above) takes its scales per block inside the cast: no pass.
    CHECK(b.memory_forward_s - a.memory_forward_s ==
          doctest::Approx(5.125 * forward_cast_elements() / cast_rate(gpu, p)));
  }

  TEST_CASE("block scaling: memory keeps both quantizations of the weights") {
    const WorkloadConfig cs = llama70b("b200", "fp8").workload;
    const WorkloadConfig mx = llama70b("b200", "fp8", "{fp8_recipe: mxfp8}").workload;
    const WorkloadConfig f4 = llama70b("b200", "fp4").workload;
    const WorkloadConfig b16 = llama70b("b200", "bf16").workload;
    CHECK(quantized_weight_bytes(b16) == 0);
    CHECK(quantized_weight_bytes(cs) == doctest::Approx(1));
    CHECK(quantized_weight_bytes(mx) == doctest::Approx(2 * (1 + 1.0 / 32)));
    CHECK(quantized_weight_bytes(f4) == doctest::Approx(2 * 0.5625));
    CHECK(quantized_tensor_bytes(f4) == doctest::Approx(0.5625));
    const MemoryBreakdown m16 = memory_per_gpu(b16), m4 = memory_per_gpu(f4);
    CHECK(m4.gathered_weights_bytes - m16.gathered_weights_bytes ==
          doctest::Approx(1.125 * m4.parameters));
    // The saved GEMM inputs (two norm outputs, the attention output, the activation's output)
    // drop from 2 bytes to 0.5625.
    const double per_token_layer = (2 * 8192 + 8192 + 28672) / 8.0;
    CHECK(m16.activations_bytes - m4.activations_bytes ==
          doctest::Approx(per_token_layer * (2 - 0.5625) * 8192 * 80));
    // fp4_param_gather: the working weights are the NVFP4 copies.
    const WorkloadConfig g4 = llama70b("b200", "fp4", "{fp4_param_gather: true}").workload;
    const MemoryBreakdown mg = memory_per_gpu(g4);
    CHECK(mg.weights_bytes == doctest::Approx(m16.weights_bytes * 1.125 / 2));
    CHECK(mg.gathered_weights_bytes == doctest::Approx(m16.gathered_weights_bytes));
  }

  TEST_CASE("block scaling: NVFP4 runs a step faster than fp8, MFU against the fp4 peak") {
    const Scenario f8 = llama70b("gb300", "fp8");
    const Scenario f4 = llama70b("gb300", "fp4");
    auto r8 = predict_step(f8, default_step_params(f8.cluster));
    auto r4 = predict_step(f4, default_step_params(f4.cluster));
    REQUIRE(r8.ok());
    REQUIRE(r4.ok());
    CHECK(r4->peak_flops == doctest::Approx(15e15));
    CHECK(r4->mfu_bf16 == doctest::Approx(6 * r4->mfu).epsilon(0.01));
    // GB300's fp4 peak is 3 x its fp8; attention, norms and casts do not speed up.
    CHECK(r4->step_time_s < 0.8 * r8->step_time_s);
    CHECK(r4->step_time_s > r8->step_time_s / 3);
  }

  TEST_CASE("block scaling: the scenario rules") {
    const std::string head =
        "cluster: {nodes: 1, node: {gpu: GPU, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: 8\n";
    auto on = [&](const std::string& gpu, const std::string& rest) {
      std::string text = head;
      text.replace(text.find("GPU"), 3, gpu);
      return text + rest + "  parallelism: {tp: 1, dp: 8}\n";
    };
    // MXFP8 needs Blackwell's block-scaled tensor cores.
    CHECK(load_error(on("h100-sxm", "  precision: fp8\n  framework: {fp8_recipe: mxfp8}\n"))
              .find("mxfp8 needs Blackwell's block-scaled tensor cores (sm_100, sm_103); "
                    "h100-sxm is sm_90") != std::string::npos);
    // Per-tensor scaling, current (the default) or delayed, on any FP8 GPU.
    for (const auto& [name, recipe] : {std::pair{"tensorwise", Fp8Recipe::kTensorwise},
                                       std::pair{"delayed", Fp8Recipe::kDelayed}}) {
      auto s = load_scenario_text(
          on("h100-sxm", std::string("  precision: fp8\n  framework: {fp8_recipe: ") + name +
                             "}\n"),
          "per-tensor.yaml");
      REQUIRE_MESSAGE(s.ok(), s.message());
      CHECK(s->workload.framework.fp8_recipe == recipe);
    }
    // fp4 needs an fp4 peak.
    CHECK(load_error(on("h100-sxm", "  precision: fp4\n"))
              .find("h100-sxm has no fp4 tensor-core peak") != std::string::npos);
    // Each gather key to its own precision.
    CHECK(load_error(on("h100-sxm", "  precision: fp8\n  framework: {fp4_param_gather: true}\n"))
              .find("applies to precision: fp4 (the workload trains in fp8)") !=
          std::string::npos);
    // param_gather_overlap: ZeRO-1 or 2 only.
    CHECK(load_error(on("h100-sxm", "  framework: {param_gather_overlap: false}\n"))
              .find("applies to zero: 1 or 2 (the workload has zero: 0") != std::string::npos);
  }

  TEST_CASE("param_gather_overlap: without it the step waits for ZeRO-1's whole gather") {
    auto load = [](bool overlap) {
      auto s = load_scenario_text(
          std::string("cluster: {nodes: 4, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: "
                      "nvlink4, nics_per_node: 8, nic: ib-ndr}, fabric: {topology: fat-tree}}\n"
                      "workload:\n  model: llama3-70b\n  seq_len: 8192\n  global_batch: 32\n") +
              (overlap ? "" : "  framework: {param_gather_overlap: false}\n") +
              "  parallelism: {tp: 8, sp: true, pp: 1, dp: 4, zero: 1, recompute: full}\n",
          "z1.yaml");
      REQUIRE(s.ok());
      return std::move(s).value();
    };
    const Scenario on = load(true), off = load(false);
    auto a = predict_step(on, default_step_params(on.cluster));
    auto b = predict_step(off, default_step_params(off.cluster));
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    // The gather of the step: each of the 4 DP ranks' 70.6B / 8 parameters, 2 bytes.
    double gather = 0;
    for (const auto& c : b->comms) {
      if (c.call.dim == ParallelDim::kDp && c.call.op == CollectiveOp::kAllGather) {
        gather += c.total_s();
      }
    }
    REQUIRE(gather > 0);
    CHECK(b->breakdown.dp.exposed_s - a->breakdown.dp.exposed_s > 0.5 * gather);
    CHECK(b->step_time_s > a->step_time_s);
  }
}

TEST_SUITE("models") {
  TEST_CASE("tp_overlap_copy_engine_share: copy engines cost hidden TP traffic 0.057, not 0.61") {
    // One node, TP only: every hidden second is TP's.
    auto load = [](const std::string& share) {
      auto s = load_scenario_text(
          "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
          "workload:\n  model: llama3-70b\n  seq_len: 8192\n  global_batch: 8\n"
          "  framework: {tp_comm_overlap: true" +
              (share.empty() ? std::string() : ", tp_overlap_copy_engine_share: " + share) +
              "}\n  parallelism: {tp: 8, sp: true, pp: 1, dp: 1, recompute: none}\n",
          "ce.yaml");
      REQUIRE_MESSAGE(s.ok(), s.message());
      return std::move(s).value();
    };
    const Scenario sm = load(""), ce = load("1"), half = load("0.5");
    const StepParams p = default_step_params(sm.cluster);
    auto a = predict_step(sm, p), b = predict_step(ce, p), c = predict_step(half, p);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(c.ok());
    REQUIRE(a->breakdown.tp.hidden_s() > 0);
    CHECK(a->breakdown.hidden_comm_s() == doctest::Approx(a->breakdown.tp.hidden_s()));
    CHECK(a->breakdown.overlap_interference_s ==
          doctest::Approx(0.61 * a->breakdown.tp.hidden_s()));
    // (Each its own hidden TP time: the copy engines' collectives run at their own rate, and
    // each collective hides only behind its own GEMMs.)
    CHECK(b->breakdown.overlap_interference_s ==
          doctest::Approx(0.057 * b->breakdown.tp.hidden_s()));
    CHECK(c->breakdown.overlap_interference_s ==
          doctest::Approx((0.61 + 0.057) / 2 * c->breakdown.tp.hidden_s()));
    CHECK(b->step_time_s < a->step_time_s);
    // Only where the TP collectives are hidden.
    CHECK(load_error("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: "
                     "nvlink4}}\nworkload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: "
                     "8\n  framework: {tp_overlap_copy_engine_share: 0.5}\n  parallelism: {tp: 8, "
                     "dp: 1}\n")
              .find("applies to tp_comm_overlap: true") != std::string::npos);
    CHECK(load_error("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: "
                     "nvlink4}}\nworkload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: "
                     "8\n  framework: {tp_comm_overlap: true, tp_overlap_copy_engine_share: 1.5}\n"
                     "  parallelism: {tp: 8, dp: 1}\n")
              .find("expected a fraction between 0 and 1") != std::string::npos);
  }
}
