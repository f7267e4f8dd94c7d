// FP8 training (precision: fp8) against bf16 on the same job: the weight GEMMs at the fp8 rate
// times the measured fp8/bf16 ratio, attention and the head in bf16, the casts, the memory and
// the two MFUs.
#include <doctest/doctest.h>

#include "models/compute_model.h"
#include "models/layer_model.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

using namespace clustersim::models;

namespace {

Scenario llama70b(Precision p) {
  auto s = load_scenario_text(
      "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
      "workload:\n"
      "  model: llama3-70b\n"
      "  seq_len: 8192\n"
      "  global_batch: 8\n"
      "  parallelism: {tp: 8, sp: true, pp: 1, dp: 1, recompute: none}\n",
      "fp8.yaml");
  REQUIRE(s.ok());
  s->workload.precision = p;
  return std::move(s).value();
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("fp8: weight GEMMs at the fp8 rate, attention in bf16, the casts added") {
    const Scenario b = llama70b(Precision::kBf16);
    const Scenario f = llama70b(Precision::kFp8);
    const GpuSpec& gpu = b.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels lb = layer_kernels(gpu, b.workload, p);
    const LayerKernels lf = layer_kernels(gpu, f.workload, p);
    // Twice the peak at 0.90 of bf16's in-tile efficiency (call 8's H200 measurement): the
    // large GEMMs take 1 / 1.8 of the time (shape effects the same for both).
    CHECK(lf.gemm_forward_s == doctest::Approx(lb.gemm_forward_s / (2 * 0.90)).epsilon(0.02));
    CHECK(lf.gemm_backward_s == doctest::Approx(lb.gemm_backward_s / (2 * 0.90)).epsilon(0.02));
    CHECK(lf.attention_forward_s == doctest::Approx(lb.attention_forward_s));
    CHECK(lf.attention_backward_s == doctest::Approx(lb.attention_backward_s));
    // Casts (current scaling, Transformer Engine), at the fused kernels' rate, bytes per
    // element of the tensor as this GPU holds it. Forward, each quantized GEMM's input: QKV's
    // and up's on their sequence shard (h / 8 of the h-wide norm output, SP), read 2 bytes and
    // written row-wise (1) for the FP8 all-gather, the norm having computed the amax; the
    // output and down projections' inputs (h / 8, ffn / 8 wide) whole: read for the amax (2),
    // read again (2), written with the transpose (1 + 1). Backward, each output gradient: QKV's
    // and up's whole (6), the output and down projections' on their sequence shard (2 + 2 + 1),
    // and four transposes of gathered tensors (QKV's and up's inputs, the output and down
    // projections' output gradients: 2 bytes per element of the whole tokens x h).
    const double tokens = 8192;
    const double h = 8192, kv = 1024, ffn = 28672, t = 8;
    const double forward = tokens * (3 * h / t + 6 * h / t + 3 * h / t + 6 * ffn / t);
    const double backward =
        tokens * (6 * (h + 2 * kv) / t + 5 * h / t + 6 * 2 * ffn / t + 5 * h / t + 4 * 2 * h);
    const double rate = gpu.hbm_Bps * p.elementwise_efficiency;
    CHECK(lf.memory_forward_s - lb.memory_forward_s == doctest::Approx(forward / rate));
    CHECK(lf.memory_backward_s - lb.memory_backward_s == doctest::Approx(backward / rate));
    // Delayed scaling: no amax pass, and the norms write their outputs quantized in place of
    // the 16-bit ones (no cast of QKV's and up's inputs at all).
    Scenario d = llama70b(Precision::kFp8);
    d.workload.framework.fp8_recipe = Fp8Recipe::kDelayed;
    const LayerKernels ld = layer_kernels(gpu, d.workload, p);
    CHECK(ld.memory_forward_s - lb.memory_forward_s ==
          doctest::Approx(tokens * (4 * h / t + 4 * ffn / t) / rate));
    CHECK(ld.memory_backward_s - lb.memory_backward_s ==
          doctest::Approx(
              tokens * (4 * (h + 2 * kv) / t + 3 * h / t + 4 * 2 * ffn / t + 3 * h / t + 4 * 2 * h) /
              rate));
    CHECK(ld.gemm_forward_s == doctest::Approx(lf.gemm_forward_s));
  }

  TEST_CASE("fp8: PyTorch's float8 linears cast activations, gradients and weights each pass") {
    // torchao's Float8Linear under torch.compile (TorchTitan): the casts of the GEMMs' inputs
    // and output gradients as Transformer Engine's current scaling has them, counted for
    // PyTorch's kernels too (they were not before device call 41), and the weights', which
    // nothing caches: amax and cast forward (read 2 twice, write 1) and again backward into
    // the column-major layout, or under the FP8 all-gather a column-major copy of the gathered
    // FP8 weight (read 1, write 1) and the shard cast to FP8 in place of 16 bits.
    auto load = [](Precision p, bool fp8_gather) {
      auto s = load_scenario_text(
          std::string("cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 1}}\n"
                      "workload:\n  model: llama3-8b\n  seq_len: 8192\n  global_batch: 2\n"
                      "  micro_batch: 2\n  precision: ") +
              (p == Precision::kFp8 ? "fp8" : "bf16") +
              "\n  framework: {kernels: compiled, weights_in_fp32: true" +
              (fp8_gather ? ", fp8_param_gather: true" : "") +
              "}\n  parallelism: {tp: 1, dp: 1, zero: 3, recompute: none}\n",
          "titan.yaml");
      REQUIRE(s.ok());
      return std::move(s).value();
    };
    const Scenario b = load(Precision::kBf16, false);
    const Scenario f = load(Precision::kFp8, false);
    const Scenario g = load(Precision::kFp8, true);
    REQUIRE(f.workload.framework.separate_projections());
    const GpuSpec& gpu = b.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels lb = layer_kernels(gpu, b.workload, p);
    const LayerKernels lf = layer_kernels(gpu, f.workload, p);
    const LayerKernels lg = layer_kernels(gpu, g.workload, p);
    const double tokens = 2 * 8192, h = 4096, kv = 1024, ffn = 14336;
    // Forward inputs: Q's (K and V share its cast) and gate's (up shares it) from the norms
    // (read 2, write both layouts 1 + 1), the output and down projections' (read 2 for the
    // amax, 2 again, write 1 + 1); backward every output gradient (6).
    const double forward = tokens * (4 * h + 6 * h + 4 * h + 6 * ffn);
    const double backward = tokens * 6 * (3 * h + 2 * kv + 2 * ffn);
    const double weights = 2 * h * h + 2 * h * kv + 3 * h * ffn;
    const double rate = gpu.hbm_Bps * p.elementwise_efficiency;
    CHECK(lf.memory_forward_s - lb.memory_forward_s ==
          doctest::Approx((forward + 5 * weights) / rate));
    CHECK(lf.memory_backward_s - lb.memory_backward_s ==
          doctest::Approx((backward + 5 * weights) / rate));
    // The FP8 all-gather: FSDP casts the fp32 shard to 1 byte instead of 2 and copies 1-byte
    // weights out of the gathered buffer, forward and (resharded) again backward; the weights'
    // own casts leave only the backward's column-major copy.
    const ComputeParams::EagerRates& r = p.eager;
    const double fsdp_saved = weights * (1 / eager_bandwidth_Bps(gpu, r.cast_down, p) +
                                         2 / eager_bandwidth_Bps(gpu, r.memcpy, p));
    CHECK(lf.memory_forward_s - lg.memory_forward_s ==
          doctest::Approx(5 * weights / rate + fsdp_saved));
    CHECK(lf.memory_backward_s - lg.memory_backward_s ==
          doctest::Approx(3 * weights / rate + fsdp_saved));
    // Call 41 (scenarios/measurements/call41): these casts on one H100 with four of Llama 3
    // 8B's layers cost the float8 step 12.0 ms of elementwise kernels (58.8 against 46.8 ms
    // with bf16 linears); the model's four layers' casts take 14.3 ms (Inductor fuses some
    // casts into the neighbouring kernels, SiLU's backward for one, which the model counts
    // as passes of their own).
    const double casts_ms = 4e3 * (lf.memory_forward_s + lf.memory_backward_s -
                                   lb.memory_forward_s - lb.memory_backward_s);
    CHECK(casts_ms == doctest::Approx(14.3).epsilon(0.01));
    CHECK(casts_ms / 12.0 - 1 < 0.25);
  }

  TEST_CASE("fp8: framework.fp8_attention runs the attention core in fp8, only in fp8 training") {
    Scenario f = llama70b(Precision::kFp8);
    const GpuSpec& gpu = f.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels bf16_core = layer_kernels(gpu, f.workload, p);
    f.workload.framework.fp8_attention = true;
    const LayerKernels fp8_core = layer_kernels(gpu, f.workload, p);
    // The core alone changes (compute_model_test: 1.57x forward at head dim 128 on Hopper).
    CHECK(bf16_core.attention_forward_s / fp8_core.attention_forward_s ==
          doctest::Approx(1.57).epsilon(0.02));
    CHECK(fp8_core.attention_backward_s < bf16_core.attention_backward_s);
    CHECK(fp8_core.gemm_forward_s == doctest::Approx(bf16_core.gemm_forward_s));
    CHECK(fp8_core.memory_forward_s == doctest::Approx(bf16_core.memory_forward_s));
    // The key needs fp8 training, cited where it was given.
    auto bad = load_scenario_text(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload:\n"
        "  model: llama3-70b\n"
        "  seq_len: 8192\n"
        "  global_batch: 8\n"
        "  precision: bf16\n"
        "  framework: {fp8_attention: true}\n"
        "  parallelism: {tp: 8, sp: true, pp: 1, dp: 1}\n",
        "fp8.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("fp8.yaml:7:") == 0);
    CHECK(bad.message().find("applies to precision: fp8") != std::string::npos);
  }

  TEST_CASE("fp8: memory keeps FP8 inputs for the backward and an FP8 copy of the weights") {
    const MemoryBreakdown mb = memory_per_gpu(llama70b(Precision::kBf16).workload);
    const MemoryBreakdown mf = memory_per_gpu(llama70b(Precision::kFp8).workload);
    CHECK(mf.activations_bytes < mb.activations_bytes);
    CHECK(mf.weights_bytes == doctest::Approx(mb.weights_bytes));      // 16-bit working weights
    CHECK(mf.optimizer_bytes == doctest::Approx(mb.optimizer_bytes));  // fp32 masters, Adam
    CHECK(mf.gathered_weights_bytes - mb.gathered_weights_bytes ==
          doctest::Approx(mf.parameters));  // 1 byte per parameter held
    // Per token and layer: the two norm outputs, the attention output and the activation's
    // output drop from 2 bytes to 1 (on the tp shard, h/8 each and f/8).
    const double saved_per_token_layer = (2 * 8192 + 8192 + 28672) / 8.0;
    CHECK(mb.activations_bytes - mf.activations_bytes ==
          doctest::Approx(saved_per_token_layer * 8192 * 80));
  }

  TEST_CASE("fp8: MFU against the fp8 peak and against the bf16 peak") {
    const Scenario f = llama70b(Precision::kFp8);
    auto r = predict_step(f, default_step_params(f.cluster));
    REQUIRE(r.ok());
    CHECK(r->peak_flops == doctest::Approx(1979e12));
    CHECK(r->mfu_bf16 == doctest::Approx(2 * r->mfu).epsilon(0.01));
    const Scenario b = llama70b(Precision::kBf16);
    auto rb = predict_step(b, default_step_params(b.cluster));
    REQUIRE(rb.ok());
    CHECK(rb->mfu_bf16 == doctest::Approx(rb->mfu));
    CHECK(r->step_time_s < 0.8 * rb->step_time_s);
    CHECK(r->step_time_s > 0.5 * rb->step_time_s);
  }

  TEST_CASE("fp8: blockwise scaling's GEMMs against DeepGEMM's published H800 rates") {
    // deepseek-ai/DeepGEMM README (2025-02-25), H800, fine-grained FP8: normal GEMMs with
    // M 4096 and the contiguous grouped ones (groups x M per group), TFLOP/s. The H800's
    // GEMM rate is the H100's; short benchmarks: full clock (no power-cap term).
    struct Row {
      double m, n, k, groups, tflops;
    };
    const Row rows[] = {{4096, 2112, 7168, 1, 1058}, {4096, 24576, 1536, 1, 990},
                        {4096, 32768, 512, 1, 590},  {4096, 7168, 16384, 1, 1358},
                        {4096, 4096, 7168, 1, 1304}, {4096, 7168, 2048, 1, 1025},
                        {8192, 4096, 7168, 4, 1297}, {8192, 7168, 2048, 4, 1099},
                        {4096, 4096, 7168, 8, 1288}, {4096, 7168, 2048, 8, 1093}};
    const GpuSpec& h800 = *find_gpu("h800");
    const ComputeParams p = fp8_gemm_params(h800, default_compute_params(h800), true);
    const ComputeParams per_tensor = fp8_gemm_params(h800, default_compute_params(h800), false);
    for (const Row& r : rows) {
      CAPTURE(r.k);
      CAPTURE(r.n);
      const KernelTime t = gemm_time(h800, Precision::kFp8, {r.m, r.n, r.k, r.groups}, p);
      CHECK(t.flops / t.time_s / 1e12 == doctest::Approx(r.tflops).epsilon(0.035));
      // Per-tensor scaling would be faster, the more so the shorter the reduction.
      const KernelTime u = gemm_time(h800, Precision::kFp8, {r.m, r.n, r.k, r.groups}, per_tensor);
      CHECK(u.time_s < t.time_s);
    }
  }

  TEST_CASE("fp8: FP8 parameter gather halves ZeRO's all-gathers and the working weights") {
    auto load_z3 = [](bool gather) {
      auto s = load_scenario_text(
          std::string("cluster: {nodes: 4, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: "
                      "nvlink4, nics_per_node: 8, nic: ib-ndr}, fabric: {topology: fat-tree}}\n"
                      "workload:\n  model: llama3-70b\n  seq_len: 8192\n  global_batch: 32\n"
                      "  precision: fp8\n") +
              (gather ? "  framework: {fp8_param_gather: true}\n" : "") +
              "  parallelism: {tp: 8, sp: true, dp: 4, zero: 3, recompute: full}\n",
          "z3.yaml");
      REQUIRE(s.ok());
      return std::move(s).value();
    };
    const Scenario off = load_z3(false), on = load_z3(true);
    auto gather_bytes = [](const Scenario& sc) {
      for (const auto& c : communication_per_step(sc.workload)) {
        if (c.dim == ParallelDim::kDp && c.op == CollectiveOp::kAllGather) return c.size_bytes;
      }
      return 0.0;
    };
    CHECK(gather_bytes(on) == doctest::Approx(gather_bytes(off) / 2));
    const MemoryBreakdown a = memory_per_gpu(off.workload), b = memory_per_gpu(on.workload);
    CHECK(b.weights_bytes == doctest::Approx(a.weights_bytes / 2));
    CHECK(b.gathered_weights_bytes < a.gathered_weights_bytes);
    // Only under fp8 training.
    auto bad = load_scenario_text(
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: 8\n"
        "  framework: {fp8_param_gather: true}\n  parallelism: {tp: 1, dp: 8}\n",
        "bad.yaml");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("applies to precision: fp8") != std::string::npos);
  }
}

TEST_SUITE("models") {
  TEST_CASE("fp8: delayed scaling's amax all-reduce waits once per chunk and micro-batch") {
    // Transformer Engine's fp8_autocast_exit reduces the forward's amaxes, the first module's
    // backward the gradients', each a synchronous all-reduce over the amax group; asynchronous
    // (NVTE_ASYNC_AMAX_REDUCTION=1, TE 0.8-1.5) it hides.
    const std::string text =
        "cluster: {nodes: 16, node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4,\n"
        "           nics_per_node: 8, nic: ib-ndr}, fabric: {topology: fat-tree, tiers: 2}}\n"
        "workload:\n"
        "  model: gpt3-175b\n"
        "  seq_len: 2048\n"
        "  global_batch: 64\n"
        "  precision: fp8\n"
        "  framework: {fp8_recipe: delayed, fp8_amax_reduction: REDUCTION}\n"
        "  parallelism: {tp: 4, sp: true, pp: 8, dp: 4, pp_schedule: interleaved,\n"
        "                virtual_stages: 4}\n";
    auto scenario = [&](const std::string& reduction) {
      std::string t = text;
      t.replace(t.find("REDUCTION"), 9, reduction);
      auto s = load_scenario_text(t, "amax.yaml");
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
      return std::move(s).value();
    };
    const Scenario dp = scenario("data-parallel"), tp = scenario("tensor-parallel"),
                   async = scenario("async");
    CHECK(dp.workload.framework.fp8_amax_reduction == AmaxReduction::kDataParallel);
    const StepParams params = default_step_params(dp.cluster);
    // By hand: an all-reduce of a chunk's fp32 amaxes (3 layers x 4 GEMMs x 3 tensors x 4 bytes)
    // over 16 ranks (TP 4 x DP 4: two nodes) or over TP's 4 (NVLink).
    auto all_reduce_s = [&](int ranks) {
      auto topo = parallel_group_topology(dp.cluster, ranks, 1);
      REQUIRE(topo.ok());
      auto est = estimate_collective(*topo, {CollectiveOp::kAllReduce, 3 * 4 * 3 * 4.0},
                                     group_collective_params(params.collective,
                                                             dp.workload.framework,
                                                             ParallelDim::kDp));
      REQUIRE(est.ok());
      return est->time_s;
    };
    CHECK(*amax_reduction_s(dp, params) == doctest::Approx(all_reduce_s(16)));
    CHECK(*amax_reduction_s(tp, params) == doctest::Approx(all_reduce_s(4)));
    CHECK(*amax_reduction_s(async, params) == 0);
    CHECK(all_reduce_s(16) > all_reduce_s(4));
    const StepResult rd = *predict_step(dp, params), rt = *predict_step(tp, params),
                     ra = *predict_step(async, params);
    // Every stage waits for it twice per chunk (4) and micro-batch: 8 a micro-batch.
    for (size_t s = 0; s < rd.stages.size(); ++s) {
      CHECK(rd.stages[s].amax_reduction_s == doctest::Approx(8 * all_reduce_s(16)));
      CHECK(rd.stages[s].total_s() - ra.stages[s].total_s() ==
            doctest::Approx(8 * all_reduce_s(16)));
      CHECK(ra.stages[s].amax_reduction_s == 0);
    }
    CHECK(rd.step_time_s > rt.step_time_s);
    CHECK(rt.step_time_s > ra.step_time_s);
    // The step grows by at least the critical path's share: m micro-batches x 8 waits on the
    // busiest stage (16 micro-batches here).
    CHECK(rd.step_time_s - ra.step_time_s >= 16 * 8 * all_reduce_s(16) * (1 - 1e-9));
    // Only under Transformer Engine's delayed scaling.
    std::string bad = text;
    bad.replace(bad.find("REDUCTION"), 9, "async");
    bad.replace(bad.find("delayed"), 7, "tensorwise");
    auto refused = load_scenario_text(bad, "bad.yaml");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.message().find("workload.framework.fp8_amax_reduction: applies to Transformer "
                                 "Engine's delayed scaling") != std::string::npos);
  }
}
