// Pipeline layouts beyond the even split: given first and last stages (Megatron-Core's
// num_layers_in_first/last_pipeline_stage), Megatron-Core's layout strings and DeepSeek-V3's
// DualPipe schedule.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/layer_model.h"
#include "models/parallelism_search.h"
#include "models/pipeline_layout.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

using namespace clustersim::models;

namespace {

std::string deepseek(const std::string& parallelism, int global_batch = 1024) {
  return "cluster:\n"
         "  nodes: 64\n"
         "  node: {gpu: h800, gpus_per_node: 8, scale_up: nvlink4, nics_per_node: 8, nic: ib-ndr}\n"
         "  fabric: {topology: fat-tree}\n"
         "workload:\n"
         "  model: deepseek-v3\n"
         "  seq_len: 4096\n"
         "  global_batch: " + std::to_string(global_batch) + "\n"
         "  precision: fp8\n"
         "  parallelism:\n" + parallelism;
}

Result<Scenario> load(const std::string& text) { return load_scenario_text(text, "pp.yaml"); }

// Llama 3.1 405B at 8K on `nodes` x 8 H100 (NDR fat-tree), `parallelism` the flow map's body.
std::string llama3_405b(int nodes, int global_batch, const std::string& parallelism) {
  return "cluster: {nodes: " + std::to_string(nodes) +
         ", node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, nics_per_node: 8, "
         "nic: ib-ndr}, fabric: {topology: fat-tree}}\n"
         "workload:\n  model: llama3-405b\n  seq_len: 8192\n  global_batch: " +
         std::to_string(global_batch) + "\n  parallelism: {" + parallelism + "}\n";
}

// DeepSeek-V3's 61 layers as 3 + 14 x 4 + 2 over pp 16, ep 32, and `rest` of the flow map.
std::string deepseek_layout(const std::string& rest) {
  return deepseek("    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, first_stage_layers: 3, "
                  "last_stage_layers: 2, " + rest + "}\n");
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("pipeline: first and last stage layers, the middle stages sharing the rest") {
    auto s = load(deepseek(
        "    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, first_stage_layers: 3, last_stage_layers: 2}\n"));
    INFO((s.ok() ? std::string() : s.message()));
    REQUIRE(s.ok());
    const auto layers = layers_of_stages(s->workload);
    REQUIRE(layers.size() == 16);
    CHECK(layers.front() == 3);
    CHECK(layers.back() == 2 + 1);  // and the multi-token-prediction layer
    for (size_t i = 1; i + 1 < layers.size(); ++i) CHECK(layers[i] == 4);
    // DeepSeek-V3's first 3 layers are dense: stage 0 has no MoE layer, the others all MoE.
    CHECK(moe_layers_of_stage(s->workload, 0) == 0);
    CHECK(moe_layers_of_stage(s->workload, 1) == 4);
    CHECK(moe_layers_of_stage(s->workload, 15) == 2 + 1);
    // 61 layers over 16 even stages do not split; an uneven rest is refused with the key.
    auto even = load(deepseek("    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1}\n"));
    REQUIRE_FALSE(even.ok());
    CHECK(even.message().find("not divisible by pp 16") != std::string::npos);
    auto bad = load(deepseek(
        "    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, first_stage_layers: 4, last_stage_layers: 2}\n"));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("pp.yaml:") == 0);
    CHECK(bad.message().find("even share of the 61 layers") != std::string::npos);
  }

  TEST_CASE("pipeline: DeepSeek-V3's multi-token prediction runs on the last stage") {
    auto s = load(deepseek_layout("pp_schedule: 1f1b"));
    REQUIRE(s.ok());
    REQUIRE(s->workload.model.mtp_layers == 1);
    WorkloadConfig without = s->workload;
    without.model.mtp_layers = 0;
    const GpuSpec& gpu = s->cluster.node.gpu;
    const ComputeParams params = default_step_params(s->cluster).compute;
    const auto with_mtp = stage_compute(gpu, s->workload, params);
    const auto plain = stage_compute(gpu, without, params);
    // Every stage but the last is unchanged.
    for (size_t i = 0; i + 1 < plain.size(); ++i) {
      CHECK(with_mtp[i].forward_s == plain[i].forward_s);
      CHECK(with_mtp[i].backward_s == plain[i].backward_s);
    }
    // The last: one more MoE layer, a second pass through the head and the loss, and the
    // projection of 2h to h (7168 x 14336 on 4096 tokens, fp8, as the other weight GEMMs).
    const LayerKernels moe = layer_kernels(gpu, s->workload, params, true);
    const StageCompute& a = with_mtp.back();
    const StageCompute& b = plain.back();
    CHECK(a.layers == b.layers + 1);
    const double head_fwd = b.forward_s - 2 * moe.forward_s();  // the head and the loss
    const double extra_fwd = a.forward_s - b.forward_s - moe.forward_s();
    CHECK(extra_fwd > head_fwd);  // the head again, and the projection
    CHECK(extra_fwd < 1.2 * head_fwd);
    CHECK(a.backward_s - b.backward_s > moe.backward_s());
    // A scenario can turn it off (workload.mtp_layers), never below 0.
    std::string text = deepseek_layout("pp_schedule: 1f1b");
    text.insert(text.find("  seq_len:"), "  mtp_layers: 0\n");
    auto zero = load(text);
    INFO((zero.ok() ? std::string() : zero.message()));
    REQUIRE(zero.ok());
    CHECK(zero->workload.model.mtp_layers == 0);
    CHECK(layers_of_stages(zero->workload).back() == 2);
    text.replace(text.find("mtp_layers: 0"), 13, "mtp_layers: -1");
    auto bad = load(text);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("mtp_layers") != std::string::npos);
  }

  TEST_CASE("pipeline: DualPipe's bubble, two copies of the parameters, pp + 1 in flight") {
    auto dual = load(deepseek_layout("pp_schedule: dualpipe"));
    auto one = load(deepseek_layout("pp_schedule: 1f1b"));
    INFO((dual.ok() ? std::string() : dual.message()));
    REQUIRE(dual.ok());
    REQUIRE(one.ok());
    // Device i holds stage i and stage 15 - i: a middle device 4 + 4 MoE layers' experts.
    const MemoryBreakdown md = memory_per_gpu(dual->workload);
    const MemoryBreakdown m0 = memory_per_gpu(one->workload);
    const ParameterCount pc = count_parameters(dual->workload.model);
    CHECK(md.stage > 0);
    CHECK(md.stage < 15);
    CHECK(md.expert_parameters == doctest::Approx(8 * pc.experts * pc.expert / 32));
    CHECK(m0.expert_parameters == doctest::Approx(4 * pc.experts * pc.expert / 32));
    auto rd = predict_step(*dual, default_step_params(dual->cluster));
    auto r1 = predict_step(*one, default_step_params(one->cluster));
    REQUIRE(rd.ok());
    REQUIRE(r1.ok());
    // (pp/2 - 1)(F&B + B - 3W) with W half the backward GEMMs, against 1F1B's (pp - 1)(F + B)
    // (equal stages): smaller, both with the all-to-alls on the stream here.
    CHECK(rd->breakdown.bubble_s < 0.7 * r1->breakdown.bubble_s);
    // The pairs hide their pipeline sends; the lone passes of the ramps do not.
    const Scenario& ds = *dual;
    const double lone = unpaired_passes(ds.workload, rd->busiest_stage) /
                        static_cast<double>(ds.workload.micro_batches_per_step());
    CHECK(lone > 0);
    CHECK(lone < 1);
    CHECK(rd->breakdown.pp.exposed_s == doctest::Approx(lone * rd->breakdown.pp.total_s));
    // With ep_comm_overlap the pairs hide their all-to-alls; the ramps' lone backward (B in the
    // formula) still exposes its own: the bubble shrinks by (pp/2 - 1) x what the pair hides,
    // min(its all-to-alls, F + B).
    Scenario hidden = ds;
    hidden.workload.framework.ep_comm_overlap = true;
    auto rh = predict_step(hidden, default_step_params(hidden.cluster));
    REQUIRE(rh.ok());
    REQUIRE(rh->busiest_stage == rd->busiest_stage);
    const double ep_mb = rd->breakdown.ep.total_s / rd->micro_batches;
    const double pair = rd->forward_s + rd->backward_s;
    CHECK(rd->breakdown.bubble_s - rh->breakdown.bubble_s ==
          doctest::Approx(7 * std::min(ep_mb, pair)));
    CHECK(md.parameters > m0.parameters);
    // A device's host wait is its two stages' mean, as its passes are. With a host slower than
    // every MoE layer and the first and last stages the largest (7 layers, three of them dense,
    // and 12 with the MTP layer), device 0 is the busiest and its two stages wait apart.
    auto lop = load(deepseek("    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, first_stage_layers: 7, "
                             "last_stage_layers: 12, pp_schedule: dualpipe}\n"));
    INFO((lop.ok() ? std::string() : lop.message()));
    REQUIRE(lop.ok());
    Scenario slow_host = *lop;
    slow_host.workload.framework.moe_layer_host_s = 1.0;
    auto rs = predict_step(slow_host, default_step_params(slow_host.cluster));
    REQUIRE(rs.ok());
    REQUIRE(rs->stages.size() == 16);
    REQUIRE(rs->busiest_stage == 0);
    const double first = rs->stages.front().host_wait_s, last = rs->stages.back().host_wait_s;
    CHECK(first > 0);
    CHECK(last > 2 * first);
    CHECK(first / moe_layers_of_stage(slow_host.workload, 0) ==
          doctest::Approx(last / moe_layers_of_stage(slow_host.workload, 15)));
    CHECK(rs->breakdown.host_wait_s == doctest::Approx(rs->micro_batches * (first + last) / 2));
    // Micro-batches: an even count of at least 2 x pp (dualpipe.py asserts it).
    auto few = load(deepseek("    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, first_stage_layers: 3, "
                             "last_stage_layers: 2, pp_schedule: dualpipe}\n",
                             32 * 30));  // 30 micro-batches < 2 x pp
    REQUIRE_FALSE(few.ok());
    CHECK(few.message().find("dualpipe needs an even pp >= 2 and an even number of micro-batches")
          != std::string::npos);
  }
}

TEST_SUITE("models") {
  TEST_CASE("recompute modules: what each keeps and repeats (DeepSeek-V3's MLA and MoE)") {
    auto none = load(deepseek_layout("recompute: none"));
    auto attn = load(deepseek_layout("recompute: selective"));
    auto mla = load(deepseek_layout("recompute: selective, recompute_modules: [mla_up_proj]"));
    auto lots = load(deepseek_layout(
        "recompute: selective, recompute_modules: [layernorm, mla_up_proj, moe_act]"));
    auto moe = load(deepseek_layout("recompute: selective, recompute_modules: [moe]"));
    for (auto* s : {&none, &attn, &mla, &lots, &moe}) {
      INFO((s->ok() ? std::string() : s->message()));
      REQUIRE(s->ok());
    }
    CHECK(attn->workload.parallelism.recompute_modules == kRecomputeCoreAttn);
    const auto mem = [](const Result<Scenario>& s) {
      return memory_per_gpu(s->workload).activations_bytes;
    };
    // Flash attention keeps no scores: recomputing the core saves nothing; MLA's up-projections
    // drop every head's Q, K and V (128 x (192 + 192 + 128) per token and layer).
    CHECK(mem(attn) == doctest::Approx(mem(none)));
    CHECK(mem(mla) < mem(none));
    CHECK(mem(lots) < mem(mla));
    CHECK(mem(moe) < mem(none));
    // Time: each module's forward again in the backward.
    const GpuSpec& gpu = none->cluster.node.gpu;
    const ComputeParams p = default_compute_params(gpu);
    const LayerKernels l = layer_kernels(gpu, none->workload, p, true);
    CHECK(l.moe);
    CHECK(l.recompute_s(Recompute::kSelective, kRecomputeMlaUpProj) ==
          doctest::Approx(l.gemm_mla_up_forward_s));
    CHECK(l.gemm_mla_up_forward_s > 0);
    CHECK(l.recompute_s(Recompute::kSelective, kRecomputeMoe) ==
          doctest::Approx(l.gemm_mlp_forward_s + l.gemm_shared_forward_s +
                          l.memory_act_forward_s + l.memory_permute_forward_s));
    CHECK(l.recompute_gemm_s(Recompute::kSelective, kRecomputeCoreAttn) == 0);
    // Hardware FLOPs count what is repeated.
    const auto f = flops_per_token(none->workload.model, 4096);
    CHECK(hardware_flops_per_token(f, Recompute::kSelective, kRecomputeMlaUpProj) ==
          doctest::Approx(f.training() + f.mla_up_forward));
    // Bad input: unknown module, modules without selective.
    auto bad = load(deepseek_layout("recompute: selective, recompute_modules: [attention]"));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.message().find("unknown module 'attention'") != std::string::npos);
    auto full = load(deepseek_layout("recompute: full, recompute_modules: [moe]"));
    REQUIRE_FALSE(full.ok());
    CHECK(full.message().find("needs recompute: selective") != std::string::npos);
  }

  TEST_CASE("pipeline: DP reduces what the GPU holding the most holds (Llama 3's layout)") {
    // Llama 3.1 405B on pp 16: 126 layers + embedding + head in 16 slots of 8, so the middle
    // stages hold 8 layers and the first and last 7 plus the embedding or head; a layer
    // (3.2B / tp 8) outweighs the embedding (2.1B / 8): the middle stage's gradients are the
    // largest the DP groups reduce.
    auto s = load(llama3_405b(128, 64, "tp: 8, sp: true, pp: 16, dp: 8, zero: 1"));
    INFO((s.ok() ? std::string() : s.message()));
    REQUIRE(s.ok());
    const auto pc = count_parameters(s->workload.model);
    const double middle = 8 * (pc.matmul_per_layer() / 8 + pc.norms_per_layer);
    for (const auto& c : communication_per_step(s->workload)) {
      if (c.dim == ParallelDim::kDp && c.op == CollectiveOp::kReduceScatter) {
        CHECK(c.size_bytes == doctest::Approx(middle * gradient_bytes(s->workload)));
      }
    }
  }

  TEST_CASE("pipeline: Llama 3's layout in the interleaved schedule, chunk by chunk") {
    // Llama 3.1 405B on pp 16 x 8 chunks: 126 layers + embedding + head in 128 slots of one
    // layer, so stage 0's first chunk holds only the embedding and stage 15's last only the head.
    auto s = load(llama3_405b(1024, 2048,
                              "tp: 8, sp: true, pp: 16, dp: 64, zero: 1, recompute: none, "
                              "pp_schedule: interleaved, virtual_stages: 8"));
    INFO((s.ok() ? std::string() : s.message()));
    REQUIRE(s.ok());
    WorkloadConfig w = s->workload;
    CHECK(layers_of_chunks(w, 0) == std::vector<int>{0, 1, 1, 1, 1, 1, 1, 1});
    CHECK(layers_of_chunks(w, 1) == std::vector<int>(8, 1));
    CHECK(layers_of_chunks(w, 15) == std::vector<int>{1, 1, 1, 1, 1, 1, 1, 0});
    // 32 micro-batches per pipeline. Megatron's warm-up at stage s: 2 (16 - s - 1) + 7 x 16
    // forwards, then one more before the first backward; forwards go 16 micro-batches per chunk.
    // Stage 1: 141 forwards of one layer each. Stage 0: 143 forwards, of which chunk 0's
    // 16 + 15 hold no layer: 7 x 16 = 112 layer-micro-batches (not 143 / 8 x 7 = 125.1, an even
    // share of its 7 layers). The last stage: 113 forwards, chunks 0-6 x 16 = 112 (the head's
    // chunk has run one). The middle stage holds the most; the memory is that stage's.
    const MemoryBreakdown stage1 = memory_per_gpu(w);
    // Per layer-micro-batch: 8192 tokens x 2 bytes / tp 8 x (6 h + 2 kv + 3 f) =
    // 2048 x (6 x 16384 + 2048 + 3 x 53248).
    const double per_layer = 2048.0 * (6 * 16384 + 2 * 1024 + 3 * 53248);
    CHECK(stage1.stage == 1);
    CHECK(stage1.activations_bytes == doctest::Approx(141 * per_layer).epsilon(0.001));
    // With the step's 16 micro-batches = pp, every forward runs first: 16 x 8 layers on stage 1.
    w.global_batch = 1024;
    CHECK(memory_per_gpu(w).activations_bytes == doctest::Approx(128 * per_layer).epsilon(0.001));
  }

  TEST_CASE("pipeline layout strings: Megatron-Core's grammar") {
    PipelineLayout l;
    std::string why;
    // Commas are cosmetic, groups and characters repeat.
    REQUIRE(parse_pipeline_layout("Ettt,|(tt|)*29,tmL", &l, &why));
    std::vector<int> chunks(31, 2);
    chunks.front() = 3;
    chunks.back() = 1;
    CHECK(l.chunk_layers == chunks);
    CHECK(l.mtp_layers == 1);
    // Megatron-Core's own example (parse_str_to_list's docstring) gives its MTP layer a chunk
    // of its own before the loss's: a standalone MTP stage, which the model does not have.
    CHECK_FALSE(parse_pipeline_layout("Ettt|(tt|)*29,m|L", &l, &why));
    CHECK(why.find("must sit in the last chunk") != std::string::npos);
    // DeepSeek-V3's 61 layers over 16 chunks (Megatron-Bridge's (pp 4, vp 4) recipe layout).
    REQUIRE(parse_pipeline_layout("Et*4|(t*4|)*14tmL", &l, &why));
    std::vector<int> want(16, 4);
    want.back() = 1;
    CHECK(l.chunk_layers == want);
    CHECK(l.mtp_layers == 1);
    // Each refusal says why and leaves the output alone.
    const PipelineLayout kept = l;
    struct Bad {
      const char* text;
      const char* why;
    };
    for (const Bad& b : {Bad{"t*4|E|L", "embedding (E) must come first"},
                         Bad{"Et*4|tt", "loss (L) must come last"},
                         Bad{"EtLtL", "loss (L) must come last"},
                         Bad{"Etmt|L", "decoder layer (t) after a multi-token"},
                         Bad{"Etm|tL", "decoder layer (t) after a multi-token"},
                         Bad{"Et|m|L", "must sit in the last chunk"},
                         Bad{"Etx|L", "unknown layer 'x'"},
                         Bad{"E((t)*2)*2|L", "nested parentheses"},
                         Bad{"E(t*2|L", "is not closed"},
                         Bad{"Et)*2|L", "has no '('"},
                         Bad{"E*|tL", "needs a count"},
                         Bad{"*2Et|L", "follows nothing"},
                         Bad{"E(t|)*99999999L", "too large"},
                         Bad{"E(t*1000|)*10000L", "expands to more than"}}) {
      INFO(b.text);
      why.clear();
      CHECK_FALSE(parse_pipeline_layout(b.text, &l, &why));
      CHECK(why.find(b.why) != std::string::npos);
      CHECK(l == kept);
    }
  }

  TEST_CASE("pipeline layout strings: DeepSeek-V3's 61 layers in the interleaved schedule") {
    // Megatron-Bridge's DeepSeek-V3 recipe on pp 4 x vp 4: chunk c on stage c mod 4, so stages
    // 0-2 hold 4 x 4 = 16 layers and stage 3 three chunks of 4, one of 1, and the MTP layer.
    auto s = load(deepseek("    {tp: 1, pp: 4, dp: 128, ep: 64, zero: 1, pp_schedule: interleaved, "
                           "virtual_stages: 4, pipeline_layout: \"Et*4|(t*4|)*14tmL\"}\n"));
    INFO((s.ok() ? std::string() : s.message()));
    REQUIRE(s.ok());
    const WorkloadConfig& w = s->workload;
    CHECK(layers_of_stages(w) == std::vector<int>{16, 16, 16, 13 + 1});
    CHECK(layers_of_chunks(w, 0) == std::vector<int>{4, 4, 4, 4});
    CHECK(layers_of_chunks(w, 3) == std::vector<int>{4, 4, 4, 1 + 1});
    // The 3 dense layers are model chunk 0's, on stage 0; every other layer is a MoE layer.
    CHECK(moe_layers_of_stages(w) == std::vector<int>{13, 16, 16, 14});
    // The same numbers on pp 2 x vp 8 (the GB300 recipe): stages of 32 and 29 + 1.
    auto two = load(deepseek("    {tp: 1, pp: 2, dp: 256, ep: 64, zero: 1, pp_schedule: interleaved, "
                             "virtual_stages: 8, pipeline_layout: \"Et*4|(t*4|)*14tmL\"}\n"));
    REQUIRE(two.ok());
    CHECK(layers_of_stages(two->workload) == std::vector<int>{32, 29 + 1});
    // A 1F1B layout string: one chunk a stage.
    auto plain = load(deepseek("    {tp: 1, pp: 4, dp: 128, ep: 64, zero: 1, "
                               "pipeline_layout: \"Et*16|t*16|t*16|t*13mL\"}\n"));
    REQUIRE(plain.ok());
    CHECK(layers_of_stages(plain->workload) == std::vector<int>{16, 16, 16, 14});
  }

  TEST_CASE("pipeline layout strings: what the loader refuses, at the key") {
    struct Bad {
      std::string parallelism;
      const char* why;
    };
    const std::string il = "pp_schedule: interleaved, virtual_stages: 4, ";
    for (const Bad& b :
         {Bad{il + "pipeline_layout: \"Et*4|(t*4|)*13tmL\"", "15 chunks, but pp 4 x virtual_stages 4"},
          Bad{il + "pipeline_layout: \"Et*4|(t*4|)*14ttmL\"", "62 decoder layers (t), but the model has 61"},
          Bad{il + "pipeline_layout: \"Et*4|(t*4|)*14tL\"", "0 multi-token-prediction layers (m), but the model has 1"},
          Bad{il + "pipeline_layout: \"Et*4|(t*4|)*14tmL\", first_stage_layers: 16, last_stage_layers: 13",
              "either pipeline_layout or first_stage_layers"},
          Bad{"pipeline_layout: \"Et*20|t*41|mL|\"", "must come last"},
          Bad{"pipeline_layout: \"Et*31|t*30||mL\"", "pipeline stage 2 holds no decoder layer"},
          Bad{"pipeline_layout: \"Et*30|t*31|tm|L\"", "must sit in the last chunk"},
          Bad{"pipeline_layout: \"E|t*31|t*29|tmL\"", "pipeline stage 0 holds no decoder layer"},
          Bad{"pp_schedule: dualpipe, pipeline_layout: \"Et*16|t*16|t*16|t*13mL\"",
              "DualPipe places its own"}}) {
      INFO(b.parallelism);
      auto s = load(deepseek("    {tp: 1, pp: 4, dp: 128, ep: 64, zero: 1, " + b.parallelism + "}\n"));
      REQUIRE_FALSE(s.ok());
      CHECK(s.message().find("pp.yaml:") == 0);
      CHECK(s.message().find("pipeline_layout") != std::string::npos);
      CHECK(s.message().find(b.why) != std::string::npos);
    }
  }

  TEST_CASE("pipeline layout strings: balanced ones for layers no pipeline splits evenly") {
    // 61 over 4 chunks: 16 on the first, 15 on the others; the MTP layer and the loss last.
    CHECK(balanced_pipeline_layout(61, 4, 1) == "Et*16|t*15|t*15|t*15mL");
    PipelineLayout l;
    std::string why;
    REQUIRE(parse_pipeline_layout(balanced_pipeline_layout(61, 16, 1), &l, &why));
    std::vector<int> want(16, 3);
    for (int c = 0; c < 13; ++c) want[static_cast<size_t>(c)] = 4;  // 61 = 16 x 3 + 13
    CHECK(l.chunk_layers == want);
    CHECK(l.mtp_layers == 1);
    CHECK(balanced_pipeline_layout(7, 7, 0) == "Et*1|t*1|t*1|t*1|t*1|t*1|t*1L");
    // The search gives DeepSeek-V3 (61 layers: no even split for any pp > 1) pipelines with one,
    // each accepted by the loader; without them it had none.
    const Scenario base = load(deepseek("    {tp: 1, pp: 16, dp: 32, ep: 32, zero: 1, "
                                        "first_stage_layers: 3, last_stage_layers: 2}\n")).value();
    SearchSpace space;
    space.max_virtual_stages = 2;
    int piped = 0;
    for (const Layout& layout : enumerate_layouts(base, space)) {
      const ParallelismConfig& p = layout.parallelism;
      if (p.pp == 1) {
        CHECK_FALSE(p.layout.given());
        continue;
      }
      ++piped;
      REQUIRE(p.layout.given());
      CHECK(p.layout.chunk_layers.size() == static_cast<size_t>(p.pp * p.virtual_stages));
      CHECK(check_parallelism(with_layout(base, layout)).ok());
    }
    CHECK(piped > 0);
  }
}
