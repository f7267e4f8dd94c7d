#include "models/step_model.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/compute_model.h"
#include "models/layer_model.h"
#include "models/transformer_model.h"
#include "models/units.h"

using namespace clustersim::models;

namespace {

Scenario load(const std::string& name) {
  auto s = load_scenario_file(std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
  return *s;
}

StepResult predict(const Scenario& s) {
  auto r = predict_step(s, default_step_params(s.cluster));
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.message()));
  return *r;
}

// |value / reference - 1| <= tolerance: a tolerance relative to the published figure.
bool within(double value, double reference, double tolerance) {
  return std::abs(value / reference - 1) <= tolerance;
}

// Llama 3 8B at 8,192 tokens on one H100, `sequences` in one micro-batch, with the given flow
// maps' contents for workload.framework (line 7) and workload.parallelism (line 8).
std::string one_h100_llama3_8b(int sequences, const std::string& framework,
                               const std::string& parallelism) {
  const std::string n = std::to_string(sequences);
  return "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 1}}\n"
         "workload:\n  model: llama3-8b\n  seq_len: 8192\n  global_batch: " + n + "\n"
         "  micro_batch: " + n + "\n  framework: {" + framework + "}\n"
         "  parallelism: {" + parallelism + "}\n";
}

// A scenario text the loader must refuse, with a message that begins with `prefix`
// ("file:line:col: key: why").
void check_refused(const std::string& text, const std::string& file, const std::string& prefix) {
  auto s = load_scenario_text(text, file);
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(s.message().rfind(prefix, 0) == 0, s.message());
}

// A scenario text the loader must accept.
Scenario accepted(const std::string& text, const std::string& file) {
  auto s = load_scenario_text(text, file);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
  return *s;
}

// Text with the first `from` replaced by `to`.
std::string edited(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

// Text with `from` replaced by `to`, which the loader must accept.
Scenario accepted_edit(const std::string& text, const std::string& from, const std::string& to) {
  return accepted(edited(text, from, to), "edited.yaml");
}

// One H100 node running Llama 3 8B with plain data parallelism: no TP, PP or CP traffic.
Scenario single_node_dp() {
  Scenario s = load("llama3-8b-8xh100.yaml");
  s.workload.parallelism.zero = 0;
  s.workload.parallelism.recompute = Recompute::kNone;
  return s;
}

}  // namespace

TEST_SUITE("models") {
  // Narayanan et al. 2021, Table 2: GPT-3 175B on 1536 A100 with PTD-P (TP 8, PP 12, DP 16,
  // batch 1536) reports 141 TFLOP/s per GPU (hardware FLOPs, with recomputation). The corpus
  // (clustersim accuracy) scores this and 80 other runs; this test keeps a coarse guard.
  TEST_CASE("step: GPT-3 175B on 1536 A100 (Megatron-LM) within 25% of the published TFLOP/s") {
    const StepResult r = predict(load("gpt3-175b-1536xa100-megatron.yaml"));
    MESSAGE("GPT-3 175B, 1536 A100: ", r.hardware_tflops_per_gpu, " TFLOP/s/GPU (paper 141)");
    CHECK(within(r.hardware_tflops_per_gpu, 141, 0.25));
    CHECK(r.fits);
  }

  // Llama Team 2024, "The Llama 3 Herd of Models", Table 4: 405B on 16,384 H100, 8K sequence:
  // 38-43% BF16 MFU (41% for this layout, 400 TFLOP/s per GPU).
  TEST_CASE("step: Llama 3 405B on 16K H100 within 25% of the published MFU") {
    const StepResult r = predict(load("llama3-405b-16k-h100.yaml"));
    MESSAGE("Llama 3 405B, 16K H100: MFU ", r.mfu, " (paper 0.38-0.43), ", r.model_tflops_per_gpu,
            " TFLOP/s/GPU (paper 400)");
    CHECK(within(r.mfu, 0.41, 0.25));
    CHECK(within(r.model_tflops_per_gpu, 400, 0.25));
  }

  TEST_CASE("step: the slowest chip sets the clock, by the job's size") {
    // The same 8-GPU job planned as if it ran on more or fewer GPUs keeps its kernel mix, so its
    // clock moves only by the slowest chip: sustained x (1 - 1.5% x E[max of n normals]).
    StepParams params = default_step_params(single_node_dp().cluster);
    const Scenario s = single_node_dp();
    auto r8 = predict_step(s, params);
    REQUIRE(r8.ok());
    params.compute.clock_spread = 0;
    auto even = predict_step(s, params);
    REQUIRE(even.ok());
    REQUIRE(even->clock < 1);  // the step is power-capped, so the spread shows
    CHECK(r8->clock == doctest::Approx(even->clock * (1 - 0.015 * expected_max_standard_normal(8))));
    CHECK(r8->clock / even->clock == doctest::Approx(1 - 0.015 * 1.4236).epsilon(1e-4));
    CHECK(r8->step_time_s > even->step_time_s);
    // One GPU: no slower chip to wait for.
    Scenario one = s;
    one.cluster.node.gpus_per_node = 1;
    one.workload.parallelism.dp = 1;
    one.workload.global_batch = one.workload.micro_batch;
    StepParams p1 = default_step_params(one.cluster);
    auto r1 = predict_step(one, p1);
    REQUIRE(r1.ok());
    p1.compute.clock_spread = 0;
    auto r1_even = predict_step(one, p1);
    REQUIRE(r1_even.ok());
    CHECK(r1->clock == r1_even->clock);
    // Flash attention runs at the sustained clock of the slowest chip, or at the step's clock
    // where that is lower (compute_model.h at_clock): never above either.
    const double paced_sustained = params.compute.sustained_clock;  // no spread: the mean chip
    REQUIRE(even->clock > paced_sustained);  // the mix lets the clock rise: attention stays
    CHECK(even->attention_clock == doctest::Approx(paced_sustained));
    CHECK(r8->attention_clock ==
          doctest::Approx(std::min(r8->clock, default_compute_params(s.cluster.node.gpu)
                                                      .sustained_clock *
                                                  (1 - 0.015 * expected_max_standard_normal(8)))));
    CHECK(r8->attention_clock <= r8->clock);
  }

  TEST_CASE("step: the step time is the sum of its parts") {
    for (const char* name : {"default.yaml", "gpt3-175b-1536xa100-megatron.yaml",
                             "llama3-70b-64xh100-ndr-rail.yaml"}) {
      CAPTURE(name);
      const StepResult r = predict(load(name));
      const auto& b = r.breakdown;
      CHECK(r.step_time_s ==
            doctest::Approx(b.compute_s + b.tp.exposed_s + b.pp.exposed_s + b.dp.exposed_s +
                            b.cp.exposed_s + b.bubble_s + b.optimizer_s));
      CHECK(b.compute_s - b.overlap_interference_s ==
            doctest::Approx(r.micro_batches * (r.forward_s + r.backward_s)));
      for (const DimComm* d : {&b.tp, &b.pp, &b.dp, &b.cp}) {
        CHECK(d->exposed_s >= 0);
        CHECK(d->exposed_s <= d->total_s * (1 + 1e-12));
      }
      // MFU is model FLOPs over peak: consistent with TFLOP/s per GPU.
      CHECK(r.mfu * r.peak_flops == doctest::Approx(r.model_tflops_per_gpu * 1e12));
      CHECK(r.model_flops_per_step ==
            doctest::Approx(r.model_tflops_per_gpu * 1e12 * r.gpus * r.step_time_s));
      CHECK(r.hardware_flops_per_step >= r.model_flops_per_step);
      CHECK(r.tokens_per_s == doctest::Approx(r.tokens_per_step / r.step_time_s));
    }
  }

  TEST_CASE("step: compute runs below the GPU's ceiling and above half of it for a big model") {
    // One node, plain DP, no recompute: hardware FLOPs over compute time sits between the
    // attention-diluted and the pure-GEMM ceilings.
    const StepResult r = predict(single_node_dp());
    const double achieved = r.hardware_flops_per_step / r.gpus / r.breakdown.compute_s;
    CHECK(achieved < 655e12);
    CHECK(achieved > 0.8 * 655e12);
    CHECK(r.breakdown.tp.total_s == 0);
    CHECK(r.breakdown.pp.total_s == 0);
    CHECK(r.breakdown.bubble_s == 0);
  }

  TEST_CASE("step: DP gradient all-reduce hides behind the last backward but its last bucket") {
    const Scenario s = single_node_dp();
    const StepResult r = predict(s);
    REQUIRE(r.comms.size() == 1);
    const TimedComm& ar = r.comms[0];
    CHECK(ar.call.op == CollectiveOp::kAllReduce);
    // Megatron-Core's buckets of 40M parameters (max(40M, 1M x 8 ranks)), tensors taken from the
    // output head back: the head (525.3M) alone; the final norm and layer 31's down projection
    // (58.7M); its up projection (117.4M); its MLP norm, output and QKV projections (16.8M +
    // 25.2M); its attention norm with layer 30's down projection; ... layer 0's attention norm
    // with the embedding (525.3M), the bucket reduced last: 1 + 32 x 3 + 1 = 98 calls.
    CHECK(ar.calls_per_step == 98);
    CHECK(ar.call.size_bytes == doctest::Approx(8030261248.0 * 4 / 98));
    // 8.03B parameters in fp32 over NVLink: ~ 2 x 7/8 x 32 GB / 370 GB/s = 0.15 s < backward.
    CHECK(ar.total_s() < r.backward_s);
    const double last = 128256.0 * 4096 + 4096;
    CHECK(r.memory.parameters == doctest::Approx(8030261248.0));
    CHECK(r.breakdown.dp.exposed_s == doctest::Approx(ar.total_s() * last / r.memory.parameters));
    const GradBuckets b = grad_buckets(s.workload, default_step_params(s.cluster), 0, false);
    CHECK(b.count == 98);
    CHECK(b.last == doctest::Approx(last));
    CHECK(b.total == doctest::Approx(8030261248.0));
    // Without overlap Megatron-Core reduces the gradients in one bucket (bucket_size None).
    Scenario whole = s;
    whole.workload.framework.grad_reduce_overlap = false;
    CHECK(predict(whole).comms[0].calls_per_step == 1);
    // Below a tensor's size every tensor is its own bucket (Cisco's MLPerf 8B: bucket_size 64):
    // the embedding, 32 x 6, the final norm and the head.
    Scenario tiny = s;
    tiny.workload.framework.grad_bucket_params = 64;
    CHECK(grad_buckets(tiny.workload, default_step_params(s.cluster), 0, false).count == 195);
  }

  TEST_CASE("step: the last gradient bucket grows with the data-parallel group, as Megatron-Core's") {
    // Megatron-Core's default bucket: max(40M, 1M x the DP ranks with CP) parameters. 16 nodes
    // of plain DP, 128 ranks: 128M parameters a bucket, the all-reduce still inside the backward.
    Scenario s = single_node_dp();
    s.cluster.nodes = 16;
    s.cluster.node.nics_per_node = 8;
    s.cluster.node.nic = *find_nic("ib-ndr");
    s.workload.parallelism.dp = 128;
    s.workload.global_batch = 128 * s.workload.micro_batch;
    const StepResult r = predict(s);
    REQUIRE(r.comms.size() == 1);
    const TimedComm& ar = r.comms[0];
    REQUIRE(ar.total_s() < r.backward_s);
    // 34 buckets of 128M or more; the last, layer 0's attention and its norms (42.0M) with the
    // embedding (525.3M).
    CHECK(ar.calls_per_step == 34);
    CHECK(r.breakdown.dp.exposed_s ==
          doctest::Approx(ar.total_s() * 567287808.0 / r.memory.parameters));
    CHECK(grad_bucket_params(s.workload, default_step_params(s.cluster)) == 128e6);
    // A configuration's own bucket (NVIDIA's MLPerf 8B: BUCKET_SIZE 768000000) replaces it:
    // 9 buckets, the last 1.22B parameters.
    s.workload.framework.grad_bucket_params = 768e6;
    const StepResult big = predict(s);
    CHECK(big.comms[0].calls_per_step == 9);
    CHECK(big.breakdown.dp.exposed_s ==
          doctest::Approx(big.comms[0].total_s() * 1221623808.0 / big.memory.parameters));
  }

  TEST_CASE("step: ZeRO-1's parameter gather waits for its first bucket, the embedding's") {
    // The reduce-scatter's last bucket and the all-gather's first are the same one (layer 0's
    // attention norm with the embedding): one leaves after the backward, the other comes before
    // the next forward, each exposed, the rest hidden behind the passes.
    Scenario s = single_node_dp();
    s.workload.parallelism.zero = 1;
    const StepResult r = predict(s);
    const TimedComm* rs = nullptr;
    const TimedComm* ag = nullptr;
    for (const TimedComm& c : r.comms) {
      if (c.call.op == CollectiveOp::kReduceScatter) rs = &c;
      if (c.call.op == CollectiveOp::kAllGather) ag = &c;
    }
    REQUIRE(rs != nullptr);
    REQUIRE(ag != nullptr);
    CHECK(rs->calls_per_step == 98);
    CHECK(ag->calls_per_step == 98);
    REQUIRE(rs->total_s() < r.backward_s);
    REQUIRE(ag->total_s() < r.forward_s);
    const double first = (128256.0 * 4096 + 4096) / r.memory.parameters;
    CHECK(r.breakdown.dp.exposed_s ==
          doctest::Approx((rs->total_s() + ag->total_s()) * first));
  }

  TEST_CASE("step: Megatron-Core buckets only the first stage's first model chunk") {
    // Two stages of two chunks (8 layers each): stage 0's first chunk (the embedding and layers
    // 0-7) in buckets of 40M, every other chunk one bucket (distributed_data_parallel.py: pp rank
    // > 0; training.py: disable_bucketing for chunks after the first).
    Scenario s = single_node_dp();
    s.workload.parallelism.pp = 2;
    s.workload.parallelism.dp = 4;
    s.workload.parallelism.pp_schedule = PipelineSchedule::kInterleaved;
    s.workload.parallelism.virtual_stages = 2;
    s.workload.global_batch = 4 * 8 * s.workload.micro_batch;
    const StepParams p = default_step_params(s.cluster);
    // Stage 0, chunk 0: 8 layers of 3 buckets and the embedding's with layer 0's attention norm.
    const GradBuckets first = grad_buckets(s.workload, p, 0, false);
    CHECK(first.count == 8 * 3 + 1 + 1);
    CHECK(first.last == doctest::Approx(128256.0 * 4096 + 4096));
    const GradBuckets later = grad_buckets(s.workload, p, 1, false);
    CHECK(later.count == 2);
    CHECK(later.total == doctest::Approx(16 * 218112000.0 + 4096 + 128256.0 * 4096));
  }

  TEST_CASE("step: once-per-step DP collectives overlap chunk by chunk under interleaving") {
    // One chunk: what outlasts the pass, at least the last bucket.
    CHECK(dp_overlap_exposed_s(10, 4, 1, 8, 0.1) == doctest::Approx(6));
    CHECK(dp_overlap_exposed_s(3, 4, 1, 8, 0.1) == doctest::Approx(0.3));
    CHECK(dp_overlap_exposed_s(0, 4, 4, 8, 0.1) == 0);
    // Four chunks, 8 passes apart: each 2 s share has its own 1 s pass and the 8 passes of the
    // other chunks behind it; the last chunk's share outlasts its pass by 1 s.
    CHECK(dp_overlap_exposed_s(8, 4, 4, 8, 0.1) == doctest::Approx(1));
    // A share longer than the passes between them piles up on the one stream: no better than
    // one chunk, total - pass.
    CHECK(dp_overlap_exposed_s(40, 4, 4, 1, 0.1) == doctest::Approx(36));
    // By hand, shares of 3 s, passes of 1 s, 2 apart: ends at -5+3 = -2, max(-2,-3)+3 = 1,
    // max(1,-1)+3 = 4 -> 4.
    CHECK(dp_overlap_exposed_s(9, 3, 3, 2, 0) == doctest::Approx(4));
  }

  TEST_CASE("step: ZeRO-3 with many micro-batches exposes its parameter gathers") {
    // The seed's layout (the default scenario's before NeMo's): 256 micro-batches, each
    // re-gathering 17 GB of parameters over one 400G NIC per DP group: the gathers outlast the
    // compute they should hide behind.
    const StepResult r = predict(load("examples/llama2-70b-zero3-full-recompute.yaml"));
    CHECK(r.micro_batches == 256);
    CHECK(r.fits);
    CHECK(r.breakdown.dp.exposed_s > 0.3 * r.step_time_s);
    const TimedComm* gather = nullptr;
    for (const auto& c : r.comms) {
      if (c.call.dim == ParallelDim::kDp && c.call.phase == CommPhase::kForward) gather = &c;
    }
    REQUIRE(gather != nullptr);
    // One call per FSDP unit: the 80 blocks a stage holds and the root module.
    CHECK(gather->call.count == 81);
    CHECK(gather->estimate.time_s * gather->call.count > r.forward_s);
    CHECK(gather->estimate.bottleneck == CollectiveBottleneck::kNetwork);
    // ZeRO-1 sends the same parameters once per step: the DP cost almost vanishes.
    Scenario z1 = load("examples/llama2-70b-zero3-full-recompute.yaml");
    z1.workload.parallelism.zero = 1;
    const StepResult r1 = predict(z1);
    CHECK(r1.breakdown.dp.exposed_s < 0.05 * r.breakdown.dp.exposed_s);
    CHECK(r1.step_time_s < r.step_time_s);
  }

  TEST_CASE("step: the pipeline bubble is the other stages' fill and drain, over v") {
    Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    s.workload.parallelism.pp_schedule = PipelineSchedule::k1F1B;
    s.workload.parallelism.virtual_stages = 1;
    const StepResult r = predict(s);
    const auto& p = s.workload.parallelism;
    REQUIRE(p.pp > 1);
    REQUIRE(r.stages.size() == static_cast<size_t>(p.pp));
    const double m = r.micro_batches;
    // The last stage also runs the output head and the loss: it is the busiest, and the others
    // add their own per-micro-batch time once each (Narayanan et al. 2021's (pp - 1) / m of the
    // ideal when the stages are equal).
    CHECK(r.busiest_stage == p.pp - 1);
    const double ideal =
        r.breakdown.compute_s + r.breakdown.tp.exposed_s + r.breakdown.cp.exposed_s;
    const double others = r.stages[0].total_s() / r.stages[static_cast<size_t>(p.pp - 1)].total_s();
    CHECK(others < 1);
    CHECK(r.breakdown.bubble_s < (p.pp - 1) / m * ideal);
    CHECK(r.breakdown.bubble_s > (p.pp - 1) / m * ideal * others * 0.99);
    s.workload.parallelism.pp_schedule = PipelineSchedule::kInterleaved;
    s.workload.parallelism.virtual_stages = 2;
    const StepResult r2 = predict(s);
    CHECK(r2.breakdown.bubble_s == doctest::Approx(r.breakdown.bubble_s / 2));
    // Same compute, more stage-boundary traffic (one send per chunk).
    CHECK(r2.breakdown.pp.total_s == doctest::Approx(2 * r.breakdown.pp.total_s));
    // Megatron-Core's overlap_p2p_comm (NeMo and Megatron-Bridge with virtual stages): the
    // sends leave the critical path and, hidden beside compute, slow it by 0.61 of their time.
    REQUIRE(r2.breakdown.pp.exposed_s == doctest::Approx(r2.breakdown.pp.total_s));
    s.workload.framework.pp_comm_overlap = true;
    const StepResult r3 = predict(s);
    CHECK(r3.breakdown.pp.exposed_s == 0);
    CHECK(r3.breakdown.pp.total_s == doctest::Approx(r2.breakdown.pp.total_s));
    CHECK(r3.step_time_s == doctest::Approx(r2.step_time_s - 0.39 * r2.breakdown.pp.total_s)
                                .epsilon(1e-3));
  }

  TEST_CASE("step: pp_comm_overlap is Megatron-Core's, in its interleaved schedule only") {
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: 32\n"
        "  framework:\n    pp_comm_overlap: true\n"
        "  parallelism: {tp: 4, pp: 2, dp: 1, pp_schedule: 1f1b}\n";
    check_refused(text, "p.yaml",
                  "p.yaml:7:5: workload.framework.pp_comm_overlap: applies to "
                  "pp_schedule: interleaved");
    accepted_edit(text, "pp_schedule: 1f1b", "pp_schedule: interleaved, virtual_stages: 2");
  }

  TEST_CASE("step: PyTorch's foreach AdamW moves 52 more bytes a parameter than the fused one") {
    // One H200, a 1.3B-parameter GPT-style model, fp32 parameters under autocast: the optimizer
    // step reads and writes its 38 bytes a parameter with the fused kernel, 38 + 52 with the
    // foreach one (a pass per arithmetic op; measured 21.4 against 8.3 ps a parameter, device
    // call 20), each at the GPU's memory-bound rate.
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 1}}\n"
        "workload:\n  model: llama3-8b\n  layers: 8\n  seq_len: 2048\n  global_batch: 1\n"
        "  framework:\n    kernels: eager\n    weights_in_fp32: true\n"
        "    optimizer_kernel: foreach\n"
        "  parallelism: {tp: 1, dp: 1}\n";
    auto foreach_scenario = load_scenario_text(text, "o.yaml");
    REQUIRE_MESSAGE(foreach_scenario.ok(),
                    (foreach_scenario.ok() ? "" : foreach_scenario.message()));
    CHECK(foreach_scenario->workload.framework.foreach_optimizer);
    Scenario fused_scenario = *foreach_scenario;
    fused_scenario.workload.framework.foreach_optimizer = false;
    const StepResult foreach_step = predict(*foreach_scenario);
    const StepResult fused_step = predict(fused_scenario);
    const StepParams params = default_step_params(foreach_scenario->cluster);
    CHECK(params.foreach_optimizer_extra_bytes_per_param == 52);
    const double ratio = (params.optimizer_bytes_per_param + 52) / params.optimizer_bytes_per_param;
    CHECK(foreach_step.breakdown.optimizer_s ==
          doctest::Approx(ratio * fused_step.breakdown.optimizer_s).epsilon(0.01));
    // A value it does not know is refused where it stands.
    check_refused(edited(text, "foreach", "forach"), "o.yaml",
                  "o.yaml:10:23: workload.framework.optimizer_kernel: unknown value 'forach'");
  }

  TEST_CASE("step: without a master copy Adam keeps 16-bit moments and moves 16 bytes") {
    // NeMo AutoModel's MoE recipes: bf16 parameters updated in place by torch.optim.Adam with
    // bf16 moments. Hand count for Llama 3 8B's 8.03B parameters on one GPU: the optimizer holds
    // m and v at 2 bytes each (4 B a parameter, against 12 with the fp32 master), and its step
    // reads the weight, gradient, m and v and writes the weight, m and v (14 B) plus the
    // gradient norm's read (2 B): 16 bytes a parameter against 38, the foreach passes half
    // their 52.
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 1}}\n"
        "workload:\n  model: llama3-8b\n  layers: 8\n  seq_len: 2048\n  global_batch: 1\n"
        "  framework:\n    master_weights: false\n"
        "  parallelism: {tp: 1, dp: 1}\n";
    const Scenario plain = accepted(text, "m.yaml");
    CHECK_FALSE(plain.workload.framework.master_weights);
    Scenario master = plain;
    master.workload.framework.master_weights = true;
    const MemoryBreakdown mem = memory_per_gpu(plain.workload);
    const MemoryBreakdown mem_master = memory_per_gpu(master.workload);
    const double params = mem.parameters + mem.expert_parameters;
    CHECK(mem.optimizer_bytes == doctest::Approx(4 * params));
    CHECK(mem_master.optimizer_bytes == doctest::Approx(12 * params));
    CHECK(mem.weights_bytes == doctest::Approx(mem_master.weights_bytes));
    const StepParams params_default = default_step_params(plain.cluster);
    CHECK(params_default.optimizer_bytes_per_param_no_master == 16);
    const double t_plain = predict(plain).breakdown.optimizer_s;
    const double t_master = predict(master).breakdown.optimizer_s;
    CHECK(t_plain == doctest::Approx(t_master * 16 / params_default.optimizer_bytes_per_param)
                         .epsilon(0.01));
    Scenario foreach_plain = plain, foreach_master = master;
    foreach_plain.workload.framework.foreach_optimizer = true;
    foreach_master.workload.framework.foreach_optimizer = true;
    CHECK(predict(foreach_plain).breakdown.optimizer_s ==
          doctest::Approx(t_master * (16 + 26) / params_default.optimizer_bytes_per_param)
              .epsilon(0.01));
    CHECK(predict(foreach_master).breakdown.optimizer_s ==
          doctest::Approx(t_master * (38 + 52) / params_default.optimizer_bytes_per_param)
              .epsilon(0.01));
    // fp32 parameters have no master copy to drop: refused where it stands.
    check_refused(edited(text, "    master_weights", "    weights_in_fp32: true\n    master_weights"),
                  "m.yaml",
                  "m.yaml:9:21: workload.framework.master_weights: applies to 16-bit parameters");
  }

  TEST_CASE("step: the master kept as a 16-bit remainder holds 10 bytes and moves 32") {
    // Apex's DistributedFusedAdam with store_param_remainders (NeMo 1.x, bf16 O2): an fp32
    // master is the bf16 parameter plus 16 more bits, so the optimizer keeps the remainder (2 B)
    // and m, v (8 B): 10 bytes a parameter where the full master takes 12. Its step reads the
    // parameter, remainder, gradient, m and v (2 + 2 + 4 + 8) and writes parameter, remainder, m
    // and v (2 + 2 + 8), plus the gradient norm's read (4): 32 bytes against 38.
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 8}}\n"
        "workload:\n  model: llama3-8b\n  layers: 8\n  seq_len: 2048\n  global_batch: 8\n"
        "  precision: bf16\n"
        "  framework:\n    param_remainders: true\n"
        "  parallelism: {tp: 1, dp: 8, zero: 1}\n";
    const Scenario remainders = accepted(text, "r.yaml");
    CHECK(remainders.workload.framework.param_remainders);
    Scenario full = remainders;
    full.workload.framework.param_remainders = false;
    const MemoryBreakdown mem = memory_per_gpu(remainders.workload);
    const MemoryBreakdown mem_full = memory_per_gpu(full.workload);
    const double local = (mem.parameters + mem.expert_parameters) / 8;  // ZeRO-1 over 8 ranks
    CHECK(mem.optimizer_bytes == doctest::Approx(10 * local));
    CHECK(mem_full.optimizer_bytes == doctest::Approx(12 * local));
    CHECK(mem.weights_bytes == doctest::Approx(mem_full.weights_bytes));
    CHECK(mem.gradients_bytes == doctest::Approx(mem_full.gradients_bytes));
    const StepParams params = default_step_params(remainders.cluster);
    CHECK(params.optimizer_bytes_per_param_remainders == 32);
    CHECK(predict(remainders).breakdown.optimizer_s ==
          doctest::Approx(predict(full).breakdown.optimizer_s * 32 /
                          params.optimizer_bytes_per_param)
              .epsilon(0.01));
    // fp16 has no 16 bits in common with fp32's top half; without a master there is no
    // remainder: both refused where the key stands.
    check_refused(edited(text, "bf16", "fp16"), "r.yaml",
                  "r.yaml:9:23: workload.framework.param_remainders: applies to bf16 parameters");
    check_refused(edited(text, "    param_remainders", "    master_weights: false\n    param_remainders"),
                  "r.yaml",
                  "r.yaml:10:23: workload.framework.param_remainders: applies to bf16 parameters");
  }

  TEST_CASE("step: FSDP without resharding after the forward gathers once a micro-batch") {
    // fully_shard(reshard_after_forward=False): each layer's gathered weights are kept from its
    // forward to its backward, so the backward's all-gather goes, and at the activations' peak
    // the stage holds every gathered layer (32 of Llama 3 8B's) instead of two.
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h100-sxm, gpus_per_node: 8}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 4096\n  global_batch: 16\n"
        "  framework:\n    reshard_after_forward: false\n"
        "  parallelism: {tp: 1, dp: 8, zero: 3}\n";
    const Scenario kept = accepted(text, "r.yaml");
    CHECK_FALSE(kept.workload.framework.reshard_after_forward);
    Scenario resharded = kept;
    resharded.workload.framework.reshard_after_forward = true;
    auto gathers = [](const Scenario& sc) {
      int n = 0;
      for (const auto& c : communication_per_step(sc.workload)) {
        n += c.dim == ParallelDim::kDp && c.op == CollectiveOp::kAllGather;
      }
      return n;
    };
    CHECK(gathers(resharded) == 2);
    CHECK(gathers(kept) == 1);
    const MemoryBreakdown mk = memory_per_gpu(kept.workload);
    const MemoryBreakdown mr = memory_per_gpu(resharded.workload);
    CHECK(mk.gathered_weights_bytes == doctest::Approx(mr.gathered_weights_bytes * 32 / 2));
    // Only ZeRO-3 frees the gathered weights: refused with the key's place.
    check_refused(edited(text, "zero: 3", "zero: 1"), "r.yaml",
                  "r.yaml:7:5: workload.framework.reshard_after_forward: applies to zero: 3");
  }

  TEST_CASE("step: PyTorch FSDP's root module and the cross-entropy on fp32 logits") {
    // One H100, Llama 3 8B under FSDP2 with fp32 shards (TorchTitan's recipe on one rank): the
    // root module (embedding, final norm, untied head: 2 x 128,256 x 4,096 parameters) is cast
    // and copied each micro-batch's forward as the blocks are, and not gathered again for the
    // backward. Halving the shard (dp 2) saves 3 bytes a parameter of the cast (read 4 / dp,
    // write 2 / dp) for the blocks forward and backward and for the root forward only.
    const std::string text = one_h100_llama3_8b(2, "kernels: compiled, weights_in_fp32: true",
                                                "tp: 1, dp: 1, zero: 3, recompute: none");
    const Scenario one = accepted(text, "root.yaml");
    const GpuSpec& gpu = one.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    WorkloadConfig two = one.workload;
    two.parallelism.dp = 2;
    const StageCompute c1 = stage_compute(gpu, one.workload, p).at(0);
    const StageCompute c2 = stage_compute(gpu, two, p).at(0);
    const double h = 4096, kv = 1024, ffn = 14336, vocab = 128256, layers = 32;
    const double block = 2 * h * h + 2 * h * kv + 3 * h * ffn;
    const double cast = eager_bandwidth_Bps(gpu, p.eager.cast_down, p);
    CHECK(c1.forward_s - c2.forward_s ==
          doctest::Approx((layers * block + 2 * vocab * h) * 3 / cast));
    CHECK(c1.backward_s - c2.backward_s == doctest::Approx(layers * block * 3 / cast));
    // The loss on fp32 logits (loss_input fp32, logits.float()): PyTorch's log-softmax reads a
    // 501 KiB row three times and writes it (16 bytes a logit, call 41: 15.8 measured at the
    // copy rate), its backward reads two and writes one after nll_loss's gradient (20), then
    // the cast to 16 bits: 8 bytes a logit more than on autocast's logits forward, 12 backward.
    WorkloadConfig autocast = one.workload;
    autocast.framework.loss_input = LossInput::kAutocast;
    const StageCompute ca = stage_compute(gpu, autocast, p).at(0);
    const double logits = 2 * 8192 * vocab;
    const double rate = gpu.hbm_Bps * p.elementwise_efficiency;
    CHECK(c1.forward_s - ca.forward_s == doctest::Approx(logits * 8 / rate));
    CHECK(c1.backward_s - ca.backward_s == doctest::Approx(logits * 12 / rate));
    // The root stays gathered from its forward to its backward (FSDP2's heuristic for the
    // root): its 16-bit embedding and head beside the blocks' gathered layers. Resharded after
    // the forward (fully_shard(model, reshard_after_forward=True), torch 2.8+), it is gathered
    // and cast again for the backward instead.
    WorkloadConfig resharded = one.workload;
    resharded.framework.root_reshard_after_forward = true;
    const MemoryBreakdown kept_root = memory_per_gpu(one.workload);
    const MemoryBreakdown freed_root = memory_per_gpu(resharded);
    CHECK(kept_root.gathered_weights_bytes - freed_root.gathered_weights_bytes ==
          doctest::Approx(2 * vocab * h * 2));
    const StageCompute cr = stage_compute(gpu, resharded, p).at(0);
    CHECK(cr.forward_s == doctest::Approx(c1.forward_s));
    // Read the fp32 shard (4 bytes a parameter), write the 16-bit gather (2), then copy it
    // out of the gathered buffer (read 2, write 2).
    const double memcpy = eager_bandwidth_Bps(gpu, p.eager.memcpy, p);
    CHECK(cr.backward_s - c1.backward_s ==
          doctest::Approx(2 * vocab * h * ((4 + 2) / cast + 4 / memcpy)));
    // While the loss runs, between the blocks, FSDP holds one block gathered (the next to run
    // backward), not the window of two it holds while the blocks run.
    CHECK(kept_root.gathered_window_idle_bytes == doctest::Approx(block * 2));
    MemoryBreakdown window = kept_root;
    window.gathered_window_idle_bytes = 0;
    using Moment = MemoryBreakdown::Moment;
    for (auto moment : {Moment::kForwardEnd, Moment::kLossBackward}) {
      CHECK(window.live_bytes(moment) - kept_root.live_bytes(moment) == doctest::Approx(block * 2));
    }
    CHECK(window.live_bytes(Moment::kGradients) ==
          doctest::Approx(kept_root.live_bytes(Moment::kGradients)));
    WorkloadConfig unsharded = one.workload;
    unsharded.framework.reshard_after_forward = false;  // every block kept: nothing idle
    CHECK(memory_per_gpu(unsharded).gathered_window_idle_bytes == 0);
    check_refused(edited(text, "weights_in_fp32: true",
                         "weights_in_fp32: false, root_reshard_after_forward: true"),
                  "root.yaml",
                  "root.yaml:7:58: workload.framework.root_reshard_after_forward: applies to "
                  "PyTorch FSDP");
  }

  TEST_CASE("step: low_precision_norm applies to PyTorch's kernels only") {
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 1}}\n"
        "workload:\n  model: llama3-8b\n  seq_len: 2048\n  global_batch: 1\n"
        "  framework:\n    low_precision_norm: true\n"
        "  parallelism: {tp: 1, dp: 1}\n";
    check_refused(text, "n.yaml",
                  "n.yaml:7:25: workload.framework.low_precision_norm: applies to "
                  "kernels: eager or compiled");
    CHECK(accepted_edit(text, "    low_precision_norm", "    kernels: eager\n    low_precision_norm")
              .workload.framework.low_precision_norm);
  }

  TEST_CASE("step: TP overlap hides TP communication") {
    // tp 8 without a pipeline: TP time and compute alone on the critical path.
    const Scenario s = load("examples/llama2-70b-zero3-full-recompute.yaml");
    StepParams params = default_step_params(s.cluster);
    auto exposed = predict_step(s, params);
    REQUIRE(exposed.ok());
    CHECK(exposed->breakdown.tp.exposed_s == doctest::Approx(exposed->breakdown.tp.total_s));
    params.tp_overlap_fraction = 1;
    auto hidden = predict_step(s, params);
    REQUIRE(hidden.ok());
    CHECK(hidden->breakdown.tp.exposed_s == 0);
    // The TP time leaves the step, and 0.61 of it comes back as slower compute (Lee et al.
    // 2025: 18.9% compute slowdown while overlapped, sequential 10.2% slower than overlapped).
    CHECK(hidden->step_time_s ==
          doctest::Approx(exposed->step_time_s - exposed->breakdown.tp.total_s +
                          0.61 * exposed->breakdown.tp.total_s));
    CHECK(overlap_interference_s(2.0, params) == doctest::Approx(1.22));
    CHECK(overlap_interference_s(-1.0, params) == 0);
  }

  TEST_CASE("step: PyTorch's async TP leaves the backward's input-gradient reductions exposed") {
    // TorchTitan's Llama 3 70B, TP 8 with SP, full recompute: a layer's backward runs the
    // recomputed forward's two all-gathers and two reduce-scatters, and its own two gathers
    // (of wo's and w2's output gradients) and two reduce-scatters (the input gradients of
    // q/k/v and w1/w3, sums of matmuls that Inductor's pass does not fuse).
    Scenario s = load("published/other-labs/torchtitan-llama3.1-70b-256xh100-fsdp32-asynctp8.yaml");
    WorkloadConfig& w = s.workload;
    REQUIRE(w.parallelism.sp);
    REQUIRE(w.parallelism.recompute == Recompute::kFull);
    CommCall rs;
    rs.dim = ParallelDim::kTp;
    rs.phase = CommPhase::kBackward;
    rs.op = CollectiveOp::kReduceScatter;
    CommCall ag = rs;
    ag.op = CollectiveOp::kAllGather;
    CommCall forward_rs = rs;
    forward_rs.phase = CommPhase::kForward;
    CHECK(tp_overlap_exposed_share(w, rs) == 0.5);  // half: the recomputed forward's are fused
    CHECK(tp_overlap_exposed_share(w, ag) == 0);
    CHECK(tp_overlap_exposed_share(w, forward_rs) == 0);
    w.parallelism.recompute = Recompute::kNone;
    CHECK(tp_overlap_exposed_share(w, rs) == 1);
    w.parallelism.recompute = Recompute::kFull;
    const StepResult pytorch = predict(s);
    w.framework.tp_overlap_input_gradients = true;  // Transformer Engine's fused QKV and MLP-up
    CHECK(tp_overlap_exposed_share(w, rs) == 0);
    const StepResult te = predict(s);
    // Exposed: the backward's reduce-scatters' unfused half (per micro-batch, every layer).
    double unfused = 0;
    for (const auto& c : pytorch.comms) {
      if (c.call.dim == ParallelDim::kTp && c.call.phase == CommPhase::kBackward &&
          c.call.op == CollectiveOp::kReduceScatter) {
        unfused += 0.5 * c.total_s();
      }
    }
    REQUIRE(unfused > 0);
    CHECK(pytorch.breakdown.tp.exposed_s >= unfused);
    CHECK(pytorch.breakdown.tp.exposed_s > te.breakdown.tp.exposed_s + 0.9 * unfused);
    CHECK(pytorch.step_time_s > te.step_time_s);
    // Without tp_comm_overlap nothing is hidden to begin with: the key has nothing to say.
    w.framework.tp_comm_overlap = false;
    w.framework.tp_overlap_input_gradients = false;
    CHECK(tp_overlap_exposed_share(w, rs) == 0);
  }

  TEST_CASE("step: TP overlap hides each block's collectives behind its own GEMMs only") {
    // By hand: a small attention (QKV 1 ms, out 0.5 ms) and a large MLP (up 4 ms, down 2 ms)
    // against 1.5 ms collectives. Each gather hides behind what it feeds, each reduce-scatter
    // behind what it drains: 1 + 0.5 + 1.5 + 1.5 = 4.5 ms of the 6, where matching the layer's
    // collectives against all its GEMMs (7.5 ms) would hide all 6.
    Scenario s = load("published/other-labs/torchtitan-llama3.1-8b-64xh100-fsdp8-asynctp8.yaml");
    WorkloadConfig& w = s.workload;
    w.parallelism.recompute = Recompute::kNone;
    w.framework.tp_overlap_input_gradients = true;
    REQUIRE(w.framework.tp_comm_overlap);
    TpGemms g;
    // blocks, gathered forward, reduced forward, reduced dgrad, gathered backward (of it dgrad)
    g.attention = {1, 1e-3, 0.5e-3, 0.4e-3, 2e-3, 1e-3};
    g.mlp = {1, 4e-3, 2e-3, 2e-3, 8e-3, 4e-3};
    TpCallTimes c;
    c.gather = c.reduce = c.grad_gather = c.grad_reduce = 1.5e-3;
    c.regather = 0;
    CHECK(tp_overlap_cover_s(w, g, c, true) == doctest::Approx(4.5e-3));
    // Backward: the output gradients' gathers behind the out (0.4) and down (2) data gradients,
    // the input gradients' reduce-scatters behind the gathered GEMMs' weight gradients (1, 4).
    const double grad_gathers = 0.4e-3 + 1.5e-3;
    CHECK(tp_overlap_cover_s(w, g, c, false) == doctest::Approx(grad_gathers + 1e-3 + 1.5e-3));
    // Unfused input gradients (PyTorch's async TP) hide nowhere; a regather hides behind the
    // gathered GEMMs' data gradients (1, 4).
    w.framework.tp_overlap_input_gradients = false;
    c.regather = 1.5e-3;
    CHECK(tp_overlap_cover_s(w, g, c, false) == doctest::Approx(grad_gathers + 1e-3 + 1.5e-3));
    // Full recomputation repeats the forward's collectives beside the forward's GEMMs.
    w.parallelism.recompute = Recompute::kFull;
    CHECK(tp_overlap_cover_s(w, g, c, false) ==
          doctest::Approx(grad_gathers + 1e-3 + 1.5e-3 + 4.5e-3));
    // Two layers: twice each.
    w.parallelism.recompute = Recompute::kNone;
    CHECK(tp_overlap_cover_s(w, g.scaled(2), c, true) == doctest::Approx(9e-3));
    // Megatron-LM's overlap without userbuffers (tp_wgrad_overlap): the column-parallel
    // linears' regather beside their data gradients, the input gradients' reduce-scatters
    // beside their weight gradients; the forward's collectives and the output gradients'
    // gathers exposed.
    w.framework.tp_comm_overlap = false;
    w.framework.tp_wgrad_overlap = true;
    CHECK(tp_overlap_cover_s(w, g, c, true) == 0);
    CHECK(tp_overlap_cover_s(w, g, c, false) == doctest::Approx(2.5e-3 + 2.5e-3));
    w.framework.tp_wgrad_overlap = false;
    CHECK(tp_overlap_cover_s(w, g, c, false) == 0);

    // The layer's GEMMs by block: TorchTitan's 8B at TP 8 (Q/K/V 768 columns a rank, the MLP's
    // 3,584), every weight GEMM in one of the four roles, the MLP's far larger (more than twice
    // the separate Q, K and V GEMMs, K's and V's bound by memory).
    s = load("published/other-labs/torchtitan-llama3.1-8b-64xh100-fsdp8-asynctp8.yaml");
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels l = layer_kernels(gpu, s.workload, p);
    const TpGemms& lg = l.tp_gemms;
    CHECK(lg.attention.blocks == 1);
    CHECK(lg.mlp.blocks == 1);
    CHECK(lg.attention.gathered_forward_s + lg.attention.reduced_forward_s +
              lg.mlp.gathered_forward_s + lg.mlp.reduced_forward_s ==
          doctest::Approx(l.gemm_forward_s));
    CHECK(lg.attention.gathered_backward_s + lg.mlp.gathered_backward_s +
              2 * (lg.attention.reduced_dgrad_s + lg.mlp.reduced_dgrad_s) ==
          doctest::Approx(l.gemm_backward_s).epsilon(0.05));
    CHECK(lg.mlp.gathered_forward_s > 2 * lg.attention.gathered_forward_s);
    // On the step: the attention's gathers outlast Q/K/V, so TP is exposed although the
    // layer's GEMMs outlast its collectives.
    const StepResult r = predict(s);
    const TpCallTimes calls = tp_call_times(r.comms);
    const StageCompute& st = r.stages.front();
    REQUIRE(calls.gather * st.layers > st.tp_gemms.attention.gathered_forward_s);
    REQUIRE(r.breakdown.tp.total_s > 0);
    const double fwd_calls = 2 * st.layers * (calls.gather + calls.reduce);
    REQUIRE(fwd_calls < st.gemm_forward_s);
    CHECK(r.breakdown.tp.exposed_s >=
          r.micro_batches * (calls.gather * st.layers - st.tp_gemms.attention.gathered_forward_s));
  }

  TEST_CASE("step: separate projections, GEMM by GEMM and their gradients' sums") {
    // TorchTitan's Llama 3 8B layer at TP 8 with SP, 12 sequences of 8192 on a 500 W H100:
    // wq, wk and wv (512, 128 and 128 columns a rank) and w1, w3 (1,792 each) as GEMMs of
    // their own, where fused code runs one of 768 and one of 3,584 columns.
    Scenario s = load("published/other-labs/torchtitan-llama3.1-8b-64xh100-fsdp8-tp8.yaml");
    WorkloadConfig& w = s.workload;
    REQUIRE(w.framework.kernels == KernelFusion::kCompiled);
    REQUIRE(w.framework.separate_projections());  // PyTorch's kernels: separate by default
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const double M = 12 * 8192.0, h = 4096, f = 14336 / 8.0;
    auto gemm = [&](double n, double k) { return gemm_time(gpu, Precision::kBf16, {M, n, k}, p).time_s; };
    const LayerKernels separate = layer_kernels(gpu, w, p);
    w.framework.separate_projection_gemms = false;
    const LayerKernels fused = layer_kernels(gpu, w, p);
    CHECK(separate.gemm_forward_s - fused.gemm_forward_s ==
          doctest::Approx(gemm(512, h) + 2 * gemm(128, h) - gemm(768, h) + 2 * gemm(f, h) -
                          gemm(2 * f, h)));
    // K and V at 128 columns are bound by reading the input (M x h, 16 bits, at the HBM rate).
    CHECK(gemm(128, h) >= 0.99 * M * h * 2 / (gpu.hbm_Bps * p.hbm_efficiency));
    CHECK(separate.gemm_forward_s > 1.05 * fused.gemm_forward_s);
    // Op-level checkpointing recomputes wk, wo and w3: whole GEMMs now.
    CHECK(separate.gemm_recomputed_by_op_s ==
          doctest::Approx(gemm(128, h) + gemm(h, 512) + gemm(f, h)));
    // Backward: autograd sums the three attention and the two MLP input gradients (three adds
    // of the gathered M x h, 6 bytes an element each) where fused code concatenates Q's, K's and
    // V's gradients (12 h) and the gate's and up's (8 f) on this GPU's columns; no V copy
    // (4 h) forward. At torch.compile's share of eager's time.
    const ComputeParams::EagerRates& r = p.eager;
    auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / eager_bandwidth_Bps(gpu, kind, p);
    };
    const double share = p.compiled_elementwise_share;
    CHECK(separate.memory_backward_s - fused.memory_backward_s ==
          doctest::Approx(share * M * (at(r.same, 18 * h) - (at(r.cat, 12 * h) + at(r.cat, 8 * 14336.0)) / 8)));
    CHECK(fused.memory_forward_s - separate.memory_forward_s ==
          doctest::Approx(share * M * at(r.layout, 4 * h) / 8));
    // Fused kernels (Megatron's) default to fused projections.
    w.framework.kernels = KernelFusion::kFused;
    w.framework.separate_projection_gemms.reset();
    CHECK_FALSE(w.framework.separate_projections());
  }

  TEST_CASE("step: copy-engine reduce-scatters end in a local reduction on the compute stream") {
    // TorchTitan's async TP (every TP collective by copy engines) on Llama 3 70B, TP 8: each of
    // a layer's four reduce-scatters sums the 8 partials it received, reading the GEMM's
    // 16 x 8192 tokens x 8192 outputs (16-bit) and writing their eighth, at the fused
    // elementwise rate: the forward's two (attention output, MLP down) and the backward's two.
    Scenario s = load("published/other-labs/torchtitan-llama3.1-70b-256xh100-fsdp32-asynctp8.yaml");
    FrameworkConfig& fw = s.workload.framework;
    fw.batch_first_activations = false;  // the layout's copies apart (the next test)
    REQUIRE(fw.tp_overlap_copy_engine_share == 1.0);
    // The file's: Inductor fuses the forward's two; the backward's input gradients are NCCL's.
    REQUIRE_FALSE(fw.tp_overlap_input_gradients);
    CHECK(fw.copy_engine_reduce_scatters() == 2);
    const LayerKernels unfused = layer_kernels(s.cluster.node.gpu, s.workload,
                                               default_compute_params(s.cluster.node.gpu));
    fw.tp_overlap_input_gradients = true;
    CHECK(fw.copy_engine_reduce_scatters() == 4);
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const double tokens = 16.0 * 8192, h = 8192;
    const double one = tokens * h * 2 * (1 + 1.0 / 8) / (gpu.hbm_Bps * p.elementwise_efficiency);
    CHECK(one == doctest::Approx(elementwise_time(gpu, tokens * h * 2 * 1.125, p).time_s));
    const LayerKernels async_tp = layer_kernels(gpu, s.workload, p);
    // Transformer Engine's defaults ring-exchange only the four gathers (0.4): no reduction.
    fw.tp_overlap_copy_engine_share = 0.4;
    CHECK(fw.copy_engine_reduce_scatters() == 0);
    const LayerKernels te = layer_kernels(gpu, s.workload, p);
    CHECK(async_tp.memory_forward_s == doctest::Approx(te.memory_forward_s + 2 * one));
    CHECK(async_tp.memory_backward_s == doctest::Approx(te.memory_backward_s + 2 * one));
    CHECK(async_tp.gemm_forward_s == te.gemm_forward_s);
    CHECK(unfused.memory_forward_s == doctest::Approx(async_tp.memory_forward_s));
    CHECK(unfused.memory_backward_s == doctest::Approx(te.memory_backward_s));
    // Megatron-Bridge's FP8 userbuffers configurations (0.6): the forward's two only.
    fw.tp_overlap_copy_engine_share = 0.6;
    CHECK(fw.copy_engine_reduce_scatters() == 2);
    const LayerKernels mbridge = layer_kernels(gpu, s.workload, p);
    CHECK(mbridge.memory_forward_s == doctest::Approx(te.memory_forward_s + 2 * one));
    CHECK(mbridge.memory_backward_s == doctest::Approx(te.memory_backward_s));
    // Without TP overlap the reduce-scatters are NCCL's, which reduce in their own kernels.
    fw.tp_comm_overlap = false;
    CHECK(fw.copy_engine_reduce_scatters() == 0);
  }

  TEST_CASE("step: sequence parallelism on batch-first activations copies around TP collectives") {
    // TorchTitan's Llama 3 70B, TP 8 with SP, 16 x 8192 tokens a micro-batch: PyTorch's
    // functional collectives gather and scatter dim 1 of [b, s, h] through a torch.cat of the
    // whole 16-bit tensor (read and write tokens x h), at the eager concatenation's rate.
    Scenario s = load("published/other-labs/torchtitan-llama3.1-70b-256xh100-fsdp32-tp8.yaml");
    FrameworkConfig& fw = s.workload.framework;
    const GpuSpec& gpu = s.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    REQUIRE(fw.batch_first_layout());  // compiled kernels: PyTorch's layout by default
    REQUIRE_FALSE(fw.tp_comm_overlap);
    REQUIRE_FALSE(fw.sp_input_regather);
    const double one = 2 * 16.0 * 8192 * 8192 * 2 / eager_bandwidth_Bps(gpu, p.eager.cat, p);
    const LayerKernels bsh = layer_kernels(gpu, s.workload, p);
    fw.batch_first_activations = false;
    const LayerKernels sbh = layer_kernels(gpu, s.workload, p);
    // Vanilla TP: the forward's two gathers and two reduce-scatters, the backward's four.
    CHECK(bsh.memory_forward_s - sbh.memory_forward_s == doctest::Approx(4 * one));
    CHECK(bsh.memory_backward_s - sbh.memory_backward_s == doctest::Approx(4 * one));
    CHECK(bsh.sp_copy_forward_s == doctest::Approx(4 * one));
    CHECK(sbh.sp_copy_forward_s == 0);
    CHECK(bsh.gemm_forward_s == sbh.gemm_forward_s);
    // Full recomputation runs the forward's collectives again; op-level checkpointing keeps the
    // reduce-scatters' outputs and gathers the inputs again (sp_input_regather: two more).
    CHECK(bsh.recompute_s(Recompute::kFull) - sbh.recompute_s(Recompute::kFull) ==
          doctest::Approx(4 * one));
    CHECK(bsh.recompute_s(Recompute::kSelectiveOp) ==
          doctest::Approx(sbh.recompute_s(Recompute::kSelectiveOp)));
    fw.batch_first_activations = true;
    fw.sp_input_regather = true;
    const LayerKernels regather = layer_kernels(gpu, s.workload, p);
    CHECK(regather.memory_backward_s - sbh.memory_backward_s == doctest::Approx(6 * one));
    // Async TP: the fused matmuls take the chunks in place; the input-gradient reduce-scatters
    // it leaves to NCCL and the weight gradients' gathers still copy.
    fw.tp_comm_overlap = true;
    fw.tp_overlap_input_gradients = false;
    fw.tp_overlap_copy_engine_share = 0;  // no copy-engine reductions in the difference
    const LayerKernels async_bsh = layer_kernels(gpu, s.workload, p);
    fw.batch_first_activations = false;
    const LayerKernels async_sbh = layer_kernels(gpu, s.workload, p);
    CHECK(async_bsh.memory_forward_s == doctest::Approx(async_sbh.memory_forward_s));
    CHECK(async_bsh.memory_backward_s - async_sbh.memory_backward_s == doctest::Approx(4 * one));
    // Without SP there is nothing to gather along the sequence.
    fw.batch_first_activations = true;
    s.workload.parallelism.sp = false;
    fw.sp_input_regather = false;
    fw.tp_comm_overlap = false;
    CHECK(layer_kernels(gpu, s.workload, p).sp_copy_forward_s == 0);
  }

  TEST_CASE("step: the busiest stage hides only the collectives it runs") {
    // DeepSeek-V3 on 16 stages of 1F1B: 3 dense layers on the first, 2 (and the MTP module,
    // the head) on the last, 4 MoE layers on the others. The busiest stage (the last) runs
    // fewer all-to-alls than the collective list counts (4 MoE layers); without EP overlap
    // every one it runs is exposed, and none of the others' slows its compute.
    const Scenario s = load("published/nvidia-moe/dgxc-25.05-deepseek-v3-1024gpu-bf16.yaml");
    REQUIRE_FALSE(s.workload.framework.ep_comm_overlap);
    const StepResult r = predict(s);
    REQUIRE(r.busiest_stage == 15);
    double listed = 0;
    for (const auto& c : r.comms) {
      if (c.call.dim == ParallelDim::kEp) listed += c.total_s();
    }
    CHECK(r.breakdown.ep.exposed_s == doctest::Approx(r.breakdown.ep.total_s));
    CHECK(r.breakdown.ep.total_s == doctest::Approx(listed * 3 / 4));  // 2 layers + MTP of 4
    // What is hidden: the backward's input-gradient reductions beside the weight-gradient
    // GEMMs (tp_wgrad_overlap) and the DP reduction; their 0.61 is all the slowdown.
    const StepParams params = default_step_params(s.cluster);
    CHECK(r.breakdown.overlap_interference_s ==
          doctest::Approx(overlap_interference_s(r.breakdown.hidden_comm_s(), params)));
    CHECK(r.breakdown.ep.hidden_s() == doctest::Approx(0).epsilon(1e-9));
  }

  TEST_CASE("step: context parallelism hides K/V exchange behind attention") {
    Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    s.workload.seq_len = 131072;
    s.workload.global_batch = 64;
    s.workload.parallelism.cp = 2;
    s.workload.parallelism.dp /= 2;
    const StepResult r = predict(s);
    CHECK(r.breakdown.cp.total_s > 0);
    CHECK(r.breakdown.cp.exposed_s < r.breakdown.cp.total_s);
  }

  TEST_CASE("step: nccl_max_ctas cuts a group's channels and the compute its traffic costs") {
    // Llama 3 70B at 128K on 64 H100, tp 4 x cp 2 inside a node: the K/V exchange at NCCL's
    // 16+ channels a peer, then on one block (MLPerf's NeMo configurations: cp 1, dp 8).
    Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    s.workload.seq_len = 131072;
    s.workload.global_batch = 64;
    s.workload.parallelism.tp /= 2;
    s.workload.parallelism.cp = 2;
    const StepResult free = predict(s);
    s.workload.framework.nccl_max_ctas = {.cp = 1, .dp = 8};
    const StepResult cut = predict(s);
    const StepParams params = default_step_params(s.cluster);
    // One channel copies NCCL's 20.6 GB/s a block on Hopper: the exchange runs slower.
    CHECK(cut.breakdown.cp.total_s > 2 * free.breakdown.cp.total_s);
    CHECK(cut.breakdown.cp.full_channels_s == doctest::Approx(free.breakdown.cp.total_s));
    CHECK(cut.breakdown.cp.traffic_share() < 0.5);
    CHECK(free.breakdown.cp.full_channels_s == 0);
    CHECK(free.breakdown.cp.traffic_share() == 1);
    // A data-parallel group's hidden second costs 0.61 x (0.23 x 8/16 + 0.77 x its traffic
    // share): its bytes cost the compute what they cost at full rate, its blocks their SMs.
    const double share = cut.breakdown.cp.traffic_share();
    CHECK(overlap_block_share(s.workload.framework, ParallelDim::kDp, params, share) ==
          doctest::Approx(0.14 / 0.61 * 8 / 16 + (1 - 0.14 / 0.61) * share));
    CHECK(overlap_block_share(s.workload.framework, ParallelDim::kTp, params, 1) == 1);
    // The K/V exchange hides behind the attention kernels alone, which are compute-bound: a
    // second of it costs them the SMs its blocks hold, 0.61 x 0.23 x 1/16 on one block and
    // 0.61 x 0.23 at NCCL's own counts, whatever its traffic.
    CHECK(overlap_block_share(s.workload.framework, ParallelDim::kCp, params, share) ==
          doctest::Approx(0.14 / 0.61 / 16));
    CHECK(overlap_block_share(FrameworkConfig{}, ParallelDim::kCp, params, 1) ==
          doctest::Approx(0.14 / 0.61));
    auto charge = [&](const StepResult& r, const FrameworkConfig& fw) {
      return r.breakdown.cp.hidden_s() *
             overlap_block_share(fw, ParallelDim::kCp, params, r.breakdown.cp.traffic_share());
    };
    CHECK(charge(cut, s.workload.framework) < charge(free, FrameworkConfig{}));
    CHECK(free.breakdown.overlap_interference_s > 0);
    // TP under tp_comm_overlap runs in userbuffers, outside NCCL: a tp cap does not apply.
    FrameworkConfig fw;
    fw.nccl_max_ctas.tp = 8;
    CHECK(nccl_max_ctas(fw, ParallelDim::kTp) == 8);
    fw.tp_comm_overlap = true;
    CHECK(nccl_max_ctas(fw, ParallelDim::kTp) == 0);
    CHECK(group_collective_params(params.collective, fw, ParallelDim::kTp).max_channels == 0);
    CHECK(group_collective_params(params.collective, s.workload.framework, ParallelDim::kDp)
              .max_channels == 8);
  }

  TEST_CASE("step: ring attention merges each step's output and accumulates its gradients") {
    // Llama 3 8B with 8,192 local tokens: cp 2 over seq 16,384 against seq 8,192 without CP.
    // The flash kernels are cp calls of the local causal attention; beyond them, PyTorch's
    // context_parallel (device call 42's ring_attention_probe.py: 1.08-1.12x forward and
    // 1.03-1.05x backward on an H100) casts both steps' outputs to fp32 (2 + 4 bytes an
    // element), merges the second (32), casts the result back (6) and copies K and V into the
    // rotation (read and write 2 each); backward it adds the gradients into fp32 accumulators
    // (10 an element: both steps' queries, the first step's keys and values whole and the
    // second's half), copies K, V (8) and their fp32 gradients (16) into the rotation and casts
    // the accumulators back (6).
    const std::string text = one_h100_llama3_8b(1, "attention: flash, kernels: compiled",
                                                "tp: 1, dp: 1, cp: 1, zero: 1, recompute: none");
    const Scenario one = accepted(text, "ring.yaml");
    const GpuSpec& gpu = one.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    WorkloadConfig two = one.workload;
    two.seq_len = 16384;
    two.parallelism.cp = 2;
    const LayerKernels k1 = layer_kernels(gpu, one.workload, p);
    const LayerKernels k2 = layer_kernels(gpu, two, p);
    const double o = 8192.0 * 32 * 128, kv = 8192.0 * 8 * 128;
    const double rate = gpu.hbm_Bps * p.elementwise_efficiency;
    CHECK(k2.attention_forward_s - 2 * k1.attention_forward_s ==
          doctest::Approx((o * (6 + 6 + 32 + 6) + 2 * kv * 4) / rate));
    CHECK(k2.attention_backward_s - 2 * k1.attention_backward_s ==
          doctest::Approx((10 * (2 * o + 2 * kv * 1.5) + 2 * kv * (8 + 4) + (o + 2 * kv) * 6) /
                          rate));
    // Transformer Engine's ring (fused kernels) corrects the output in 16 bits in one fused
    // kernel a step (the first step's output written: 4 bytes; the second's added: 6) and
    // concatenates K and V once (4 each); backward the first step's gradients written (4), the
    // second's added (6; the keys' and values' halves).
    WorkloadConfig te = two, te1 = one.workload;
    te.framework.kernels = te1.framework.kernels = KernelFusion::kFused;
    const LayerKernels t1 = layer_kernels(gpu, te1, p);
    const LayerKernels t2 = layer_kernels(gpu, te, p);
    CHECK(t2.attention_forward_s - 2 * t1.attention_forward_s ==
          doctest::Approx((o * (4 + 6) + 2 * kv * 4) / rate));
    CHECK(t2.attention_backward_s - 2 * t1.attention_backward_s ==
          doctest::Approx((4 * (o + 2 * kv) + 6 * (o + kv)) / rate));
    // Llama 3's all-gather CP: one call against the gathered K and V, no merges.
    WorkloadConfig gathered = te;
    gathered.framework.cp_allgather = true;
    CHECK(layer_kernels(gpu, gathered, p).attention_forward_s ==
          doctest::Approx(2 * t1.attention_forward_s));
    CHECK(layer_kernels(gpu, gathered, p).attention_backward_s ==
          doctest::Approx(2 * t1.attention_backward_s));
    // The scenario key, and a value it does not know refused where it stands.
    const std::string keyed = edited(text, "compiled}", "compiled, cp_attention: allgather}");
    CHECK(accepted(keyed, "ring.yaml").workload.framework.cp_allgather);
    CHECK_FALSE(one.workload.framework.cp_allgather);
    check_refused(edited(text, "compiled}", "compiled, cp_attention: ulysses}"), "r.yaml",
                  "r.yaml:7:66: workload.framework.cp_attention: unknown value 'ulysses'");
  }

  TEST_CASE("step: a job that does not fit gets advice that fits") {
    Scenario s = load("examples/llama2-70b-zero3-full-recompute.yaml");
    s.workload.parallelism.zero = 0;
    s.workload.parallelism.recompute = Recompute::kNone;
    s.workload.micro_batch = 2;
    const StepResult r = predict(s);
    CHECK_FALSE(r.fits);
    CHECK(r.memory.total() > 80 * kGiB);
    const auto advice = memory_advice(s.workload, r.memory, r.memory_capacity_bytes);
    REQUIRE_FALSE(advice.empty());
    CHECK(advice.front().find("(fits)") != std::string::npos);
    CHECK(memory_advice(load("default.yaml").workload, predict(load("default.yaml")).memory,
                        80 * kGiB)
              .empty());
  }
}

TEST_SUITE("models") {
  TEST_CASE("step: framework.attention flash2 slows the attention kernels alone, on Hopper only") {
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: GPU, gpus_per_node: 8, scale_up: SCALE}}\n"
        "workload:\n"
        "  model: llama3-8b\n"
        "  seq_len: 8192\n"
        "  global_batch: 16\n"
        "  micro_batch: 2\n"
        "  framework: {attention: KERNEL, kernels: compiled}\n"
        "  parallelism: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: none}\n";
    auto scenario = [&](const std::string& gpu, const std::string& kernel) {
      std::string t = text;
      t.replace(t.find("GPU"), 3, gpu);
      t.replace(t.find("SCALE"), 5, gpu == "h100-sxm" ? "nvlink4" : "nvlink3");
      t.replace(t.find("KERNEL"), 6, kernel);
      auto s = load_scenario_text(t, "flash2.yaml");
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
      return *s;
    };
    for (const std::string gpu : {"h100-sxm", "a100-sxm-80gb"}) {
      const Scenario native = scenario(gpu, "flash");
      const Scenario fa2 = scenario(gpu, "flash2");
      CHECK(fa2.workload.framework.attention == AttentionKernel::kFlash2);
      const GpuSpec& g = native.cluster.node.gpu;
      const ComputeParams p = default_compute_params(g);
      const LayerKernels a = layer_kernels(g, native.workload, p);
      const LayerKernels b = layer_kernels(g, fa2.workload, p);
      const double fwd = gpu == "h100-sxm" ? 0.585 : 1, bwd = gpu == "h100-sxm" ? 0.590 : 1;
      CHECK(b.attention_forward_s == doctest::Approx(a.attention_forward_s / fwd));
      CHECK(b.attention_backward_s == doctest::Approx(a.attention_backward_s / bwd));
      CHECK(b.gemm_forward_s == a.gemm_forward_s);
      CHECK(b.memory_backward_s == a.memory_backward_s);
      // The same memory: both keep no score matrix.
      CHECK(memory_per_gpu(fa2.workload).activations_bytes ==
            memory_per_gpu(native.workload).activations_bytes);
      const StepResult ra = predict(native), rb = predict(fa2);
      if (gpu == "h100-sxm") {
        CHECK(rb.step_time_s > ra.step_time_s * 1.03);
      } else {
        CHECK(rb.step_time_s == doctest::Approx(ra.step_time_s));
      }
      // FlashAttention 1 (flash1): half FA2's ceilings on both GPUs, the rest unchanged.
      const Scenario fa1 = scenario(gpu, "flash1");
      CHECK(fa1.workload.framework.attention == AttentionKernel::kFlash1);
      const LayerKernels c = layer_kernels(g, fa1.workload, p);
      CHECK(c.attention_forward_s > 1.6 * b.attention_forward_s);
      CHECK(c.attention_forward_s <= 2 * b.attention_forward_s * (1 + 1e-12));
      CHECK(c.gemm_forward_s == b.gemm_forward_s);
      CHECK(predict(fa1).step_time_s > rb.step_time_s * 1.03);
    }
    std::string bad = text;
    bad.replace(bad.find("KERNEL"), 6, "flash3");
    bad.replace(bad.find("GPU"), 3, "h100-sxm");
    bad.replace(bad.find("SCALE"), 5, "nvlink4");
    check_refused(bad, "f.yaml",
                  "f.yaml:7:26: workload.framework.attention: unknown value 'flash3' (did "
                  "you mean 'flash'? expected one of: flash, flash2, flash1, unfused)");
  }
}

TEST_SUITE("models") {
  TEST_CASE("step: norm_kernel fp32-ops charges TorchTitan's RMSNorm op by op") {
    const std::string text =
        "cluster: {nodes: 1, node: {gpu: h200-sxm, gpus_per_node: 8, scale_up: nvlink4}}\n"
        "workload:\n"
        "  model: llama3-8b\n"
        "  seq_len: 8192\n"
        "  global_batch: 16\n"
        "  micro_batch: 2\n"
        "  framework:\n"
        "    kernels: eager\n"
        "    weights_in_fp32: true\n"
        "NORM"
        "  parallelism: {tp: 1, pp: 1, dp: 8, zero: 3, recompute: none}\n";
    auto scenario = [&](const std::string& norm) {
      std::string t = text;
      t.replace(t.find("NORM"), 4, norm);
      auto s = load_scenario_text(t, "n.yaml");
      REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
      return *s;
    };
    const Scenario fused = scenario("");
    const Scenario ops = scenario("    norm_kernel: fp32-ops\n");
    CHECK(ops.workload.framework.fp32_op_norm);
    const GpuSpec& gpu = fused.cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const ComputeParams::EagerRates& r = p.eager;
    const auto at = [&](const ComputeParams::EagerRate& kind, double bytes) {
      return bytes / (gpu.hbm_Bps * kind.fraction);  // on the H200: the measured fraction
    };
    const double h = 4096, tokens = 2 * 8192;
    // FSDP's 16-bit stream: the fused norm is 4 h forward, 6 h of its backward and a 6 h
    // accumulation backward. TorchTitan's: forward the up-cast (6 h), pow and mean (12 h), the
    // broadcast rsqrt product (8 h), the down-cast (6 h), the broadcast weight product (4 h);
    // backward 4 h layout, 6 h, 2 h at the norm backward's rate, the up-cast 6 h, 8 h mixed,
    // 56 h same-dtype, the down-cast 6 h and the 6 h accumulation.
    const double fwd_fused = at(r.rms_norm, 4 * h);
    const double bwd_fused = at(r.norm_backward, 6 * h) + at(r.same, 6 * h);
    const double fwd_ops = at(r.cast_up, 6 * h) + at(r.same, 12 * h) + at(r.mixed, 8 * h) +
                           at(r.cast_down, 6 * h) + at(r.layout, 4 * h);
    const double bwd_ops = at(r.layout, 4 * h) + at(r.same, 6 * h) + at(r.norm_backward, 2 * h) +
                           at(r.cast_up, 6 * h) + at(r.mixed, 8 * h) + at(r.same, 56 * h) +
                           at(r.cast_down, 6 * h) + at(r.same, 6 * h);
    const LayerKernels a = layer_kernels(gpu, fused.workload, p);
    const LayerKernels b = layer_kernels(gpu, ops.workload, p);
    CHECK(b.memory_forward_s - a.memory_forward_s ==
          doctest::Approx(2 * tokens * (fwd_ops - fwd_fused)));
    CHECK(b.memory_backward_s - a.memory_backward_s ==
          doctest::Approx(2 * tokens * (bwd_ops - bwd_fused)));
    // Device call 25 measured TorchTitan's 17 norms of 16,384 x 4096 at 45-48 ms a step on an
    // H200 (forward and backward): the op list gives 2.7-3.2 ms a norm.
    const double per_norm = tokens * (fwd_ops + bwd_ops);
    CHECK(per_norm > 2.6e-3);
    CHECK(per_norm < 3.2e-3);
    CHECK(b.gemm_forward_s == a.gemm_forward_s);
    // Refused: with fused kernels, with low_precision_norm, on LayerNorm, on an fp32 stream.
    std::string bad = text;
    const std::string eager = "    kernels: eager\n", llama = "  model: llama3-8b\n";
    bad.replace(bad.find(eager), eager.size(), "    kernels: fused\n");
    bad.replace(bad.find("NORM"), 4, "    norm_kernel: fp32-ops\n");
    check_refused(bad, "n.yaml",
                  "n.yaml:10:18: workload.framework.norm_kernel: applies to kernels: eager or "
                  "compiled");
    bad = text;
    bad.replace(bad.find("NORM"), 4, "    norm_kernel: fp32-ops\n    low_precision_norm: true\n");
    check_refused(bad, "n.yaml", "n.yaml:10:18: workload.framework.norm_kernel: fp32-ops computes");
    bad = text;
    bad.replace(bad.find("NORM"), 4, "    norm_kernel: fp32-ops\n");
    bad.replace(bad.find("zero: 3"), 7, "zero: 1");
    check_refused(bad, "n.yaml", "n.yaml:10:5: workload.framework.norm_kernel: fp32-ops is "
                                 "modelled on a 16-bit residual stream");
    bad = text;
    bad.replace(bad.find("NORM"), 4, "    norm_kernel: fp32-ops\n");
    bad.replace(bad.find(llama), llama.size(), "  model: gpt3-175b\n");
    check_refused(bad, "n.yaml", "n.yaml:10:5: workload.framework.norm_kernel: fp32-ops is "
                                 "TorchTitan's RMSNorm");
  }
}
