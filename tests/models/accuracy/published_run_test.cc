// The corpus format (docs/accuracy.md): the published: section, the framework keys, the FLOP
// conventions against hand-computed counts and the step time a published figure implies.
#include "models/accuracy/published_run.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "models/accuracy/accuracy_score.h"
#include "models/accuracy/corpus_fit.h"
#include "models/transformer_model.h"

namespace clustersim::models {
namespace {

// Narayanan et al. 2021 Table 1, row 1 (1.7B, 32 GPUs, 137 TFLOP/s), as a corpus file.
constexpr const char* kRun =
    "name: t\n"                                     // 1
    "cluster:\n"                                    // 2
    "  nodes: 4\n"                                  // 3
    "  node: {gpu: a100-sxm-80gb, gpus_per_node: 8, nics_per_node: 8, nic: ib-hdr}\n"  // 4
    "  fabric: {topology: fat-tree}\n"              // 5
    "workload:\n"                                   // 6
    "  layers: 24\n"                                // 7
    "  hidden: 2304\n"                              // 8
    "  heads: 24\n"                                 // 9
    "  ffn_hidden: 9216\n"                          // 10
    "  vocab: 51200\n"                              // 11
    "  gated_ffn: false\n"                          // 12
    "  normalization: layernorm\n"                  // 13
    "  position_embedding: learned\n"               // 14
    "  seq_len: 2048\n"                             // 15
    "  global_batch: 512\n"                         // 16
    "  dropout: 0.1\n"                              // 17
    "  framework: {attention: unfused, grad_reduce_overlap: false}\n"  // 18
    "  parallelism: {tp: 1, dp: 32}\n"              // 19
    "published:\n"                                  // 20
    "  source: megatron-sc21\n"                     // 21
    "  citation: Table 1 row 1\n"                   // 22
    "  metric: tflops_per_gpu\n"                    // 23
    "  value: 137\n"                                // 24
    "  flops: narayanan\n";                         // 25

std::string with(const std::string& from, const std::string& to) {
  std::string s = kRun;
  const auto at = s.find(from + "\n");
  REQUIRE_MESSAGE(at != std::string::npos, from);
  s.replace(at, from.size(), to);
  return s;
}

// Checks that `text` contains `part`, showing the whole text when it does not.
#define CHECK_CONTAINS(text, part)                                  \
  do {                                                              \
    const std::string t_ = (text);                                  \
    CHECK_MESSAGE(t_.find(part) != std::string::npos, t_);          \
  } while (false)

std::string error_of(const std::string& text) {
  auto r = load_scenario_text(text, "p.yaml");
  REQUIRE_FALSE_MESSAGE(r.ok(), text);
  return r.message();
}

TEST_SUITE("accuracy") {
  TEST_CASE("a corpus file loads its framework keys and its published figure") {
    auto sc = load_scenario_text(kRun, "p.yaml");
    REQUIRE_MESSAGE(sc.ok(), sc.message());
    CHECK(sc->workload.dropout == doctest::Approx(0.1));
    CHECK(sc->workload.framework.attention == AttentionKernel::kUnfused);
    CHECK_FALSE(sc->workload.framework.grad_reduce_overlap);
    CHECK_FALSE(sc->workload.framework.tp_comm_overlap);  // the default
    CHECK(sc->workload.model.normalization == Normalization::kLayerNorm);
    CHECK(sc->workload.model.position_embedding == PositionEmbedding::kLearned);
    REQUIRE(sc->published != nullptr);
    CHECK(sc->published->source == "megatron-sc21");
    CHECK(sc->published->metric == PublishedMetric::kTflopsPerGpu);
    CHECK(sc->published->flops == FlopsConvention::kNarayanan);
    // 96 B s l h^2 (1 + s/6h + V/16lh) = 96 * 512 * 2048 * 24 * 2304^2 * (1 + 2048/13824 +
    // 51200/884736) = 1.28247e16 * 1.20602 = 1.54669e16 FLOPs; at 137 TFLOP/s on 32 GPUs:
    // 3.5280 s.
    CHECK(convention_flops_per_step(FlopsConvention::kNarayanan, sc->workload) ==
          doctest::Approx(1.54669e16).epsilon(1e-3));
    CHECK(published_step_time_s(*sc->published, *sc) == doctest::Approx(3.5280).epsilon(1e-3));
  }

  TEST_CASE("a scenario without published: has none, and defaults are Megatron-Core's") {
    std::string text = kRun;
    text = text.substr(0, text.find("published:"));
    text = text.substr(0, text.find("  dropout:")) + "  parallelism: {tp: 1, dp: 32}\n";
    auto sc = load_scenario_text(text, "p.yaml");
    REQUIRE_MESSAGE(sc.ok(), sc.message());
    CHECK(sc->published == nullptr);
    CHECK(sc->workload.dropout == 0);
    CHECK(sc->workload.framework.attention == AttentionKernel::kFlash);
    CHECK(sc->workload.framework.grad_reduce_overlap);
  }

  TEST_CASE("the other metrics imply their step time") {
    std::string text = with("  metric: tflops_per_gpu", "  metric: step_time");
    text.replace(text.find("  value: 137"), 12, "  value: 3.5s");
    text.erase(text.find("  flops:"));
    auto sc = load_scenario_text(text, "p.yaml");
    REQUIRE_MESSAGE(sc.ok(), sc.message());
    CHECK(published_step_time_s(*sc->published, *sc) == doctest::Approx(3.5));
    PublishedRun tokens{"s", "c", "", PublishedMetric::kTokensPerSPerGpu, 8192, {}, 0};
    // 512 x 2048 tokens over 32 GPUs at 8192 tokens/s each: 4 s.
    CHECK(published_step_time_s(tokens, *sc) == doctest::Approx(4.0));
    PublishedRun mfu{"s", "c", "", PublishedMetric::kMfu, 0.5, FlopsConvention::kSixN, 0};
    const double n = 6 * count_parameters(sc->workload.model).total() * 512 * 2048;
    CHECK(published_step_time_s(mfu, *sc) == doctest::Approx(n / (0.5 * 312e12 * 32)));
  }

  TEST_CASE("bad published sections name the key, the line and the column") {
    CHECK_CONTAINS(error_of(with("  flops: narayanan", "  flops: chinchilla")),
                   "p.yaml:25:10: published.flops: unknown value 'chinchilla'");
    CHECK_CONTAINS(error_of(with("  metric: tflops_per_gpu", "  metric: wps")),
                   "p.yaml:23:11: published.metric: unknown value 'wps'");
    CHECK_CONTAINS(error_of(with("  value: 137", "  value: -3")),
                   "published.value: must be greater than zero");
    CHECK_CONTAINS(error_of(with("  flops: narayanan", "  color: red")),
                   "p.yaml:25:3: published.color: unknown key");
    CHECK_CONTAINS(error_of(with("  flops: narayanan", "")),
                   "published.flops: missing: say how the source counted FLOPs");
    std::string mfu = with("  metric: tflops_per_gpu", "  metric: mfu");
    mfu.replace(mfu.find("  value: 137"), 12, "  value: 41");
    CHECK_CONTAINS(error_of(mfu),
                   "an MFU is a fraction of peak");
    CHECK_CONTAINS(error_of(with("  metric: tflops_per_gpu", "  metric: step_time")),
                   "published.flops: only for metric tflops_per_gpu or mfu");
    CHECK_CONTAINS(error_of(with("  dropout: 0.1", "  dropout: 1")),
                   "workload.dropout: must be below 1");
    CHECK_CONTAINS(error_of(with("  framework: {attention: unfused, grad_reduce_overlap: false}",
                        "  framework: {attention: sdpa}")),
                   "p.yaml:18:26: workload.framework.attention: unknown value 'sdpa'");
    CHECK_CONTAINS(error_of(with("  normalization: layernorm", "  normalization: batchnorm")),
                   "p.yaml:13:18: workload.normalization: unknown value 'batchnorm'");
  }

  // A contention measurement: one collective on the fabric, or its ratio to another fabric.
  std::string collective_run(const std::string& metric_lines) {
    std::string text = kRun;
    text.erase(text.find("  metric: tflops_per_gpu"));
    return text + metric_lines;
  }

  TEST_CASE("a collective's bus bandwidth implies its time; a ratio the ratio of the times") {
    auto sc = load_scenario_text(collective_run("  metric: busbw\n"
                                                "  collective: {op: all_reduce, size: 1GiB, gpus: 16}\n"
                                                "  value: 40GB/s\n"),
                                 "p.yaml");
    REQUIRE_MESSAGE(sc.ok(), sc.message());
    const PublishedRun& p = *sc->published;
    CHECK(is_collective_metric(p.metric));
    CHECK(p.collective.op == CollectiveOp::kAllReduce);
    CHECK(p.collective.size_bytes == doctest::Approx(1073741824.0));
    CHECK(published_collective_gpus(p, *sc) == 16);
    CHECK(p.collective.algorithm == CollectiveAlgorithm::kAuto);  // NCCL's tuner, unless pinned
    // nccl-tests: busbw = algbw x 2 (n-1)/n, so time = 1 GiB x 2 x 15/16 / 40 GB/s = 50.3 ms.
    CHECK(published_step_time_s(p, *sc) == doctest::Approx(1073741824.0 * 2 * 15 / 16 / 40e9));

    auto ratio = load_scenario_text(
        collective_run("  metric: busbw_ratio\n"
                       "  collective: {op: all_gather, size: 8GiB}\n"
                       "  versus: {cluster.fabric.routing: ecmp, cluster.fabric.qps_per_connection: 1}\n"
                       "  value: 1.4\n"),
        "p.yaml");
    REQUIRE_MESSAGE(ratio.ok(), ratio.message());
    const PublishedRun& r = *ratio->published;
    CHECK(published_collective_gpus(r, *ratio) == 32);  // every GPU of the 4 x 8
    REQUIRE(r.versus.size() == 2);
    CHECK(r.versus[0].key_path == "cluster.fabric.routing");
    CHECK(r.versus[0].value == "ecmp");
    CHECK(r.versus[1].key_path == "cluster.fabric.qps_per_connection");
    CHECK(r.versus[1].value == "1");
    CHECK(published_step_time_s(r, *ratio) == doctest::Approx(1 / 1.4));
    // A source that pins NCCL's algorithm (NCCL_ALGO=Ring) says so.
    auto ring = load_scenario_text(
        collective_run("  metric: busbw\n"
                       "  collective: {op: all_reduce, size: 1GiB, algorithm: ring}\n"
                       "  value: 40GB/s\n"),
        "p.yaml");
    REQUIRE_MESSAGE(ring.ok(), ring.message());
    CHECK(ring->published->collective.algorithm == CollectiveAlgorithm::kRing);
    // The training metrics are not collective ones.
    CHECK_FALSE(is_collective_metric(PublishedMetric::kMfu));
  }

  TEST_CASE("bad collective measurements name the key, the line and the column") {
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n  value: 40GB/s\n")),
                   "published.collective: missing");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB}\n"
                                           "  value: 40\n")),
                   "published.value");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: allgatherv, size: 1GiB}\n"
                                           "  value: 40GB/s\n")),
                   "p.yaml:24:20: published.collective.op: unknown collective 'allgatherv'");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB, ranks: 8}\n"
                                           "  value: 40GB/s\n")),
                   "published.collective.ranks: unknown key");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB, algorithm: rings}\n"
                                           "  value: 40GB/s\n")),
                   "published.collective.algorithm: unknown algorithm 'rings'");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw_ratio\n"
                                           "  collective: {op: all_reduce, size: 1GiB}\n"
                                           "  value: 1.4\n")),
                   "published.versus: missing");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB, gpus: 64}\n"
                                           "  value: 40GB/s\n")),
                   "published.collective.gpus: 64 GPUs, but the cluster has 32");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB, gpus: 1}\n"
                                           "  value: 40GB/s\n")),
                   "published.collective: a collective needs at least 2 GPUs");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw\n"
                                           "  collective: {op: all_reduce, size: 1GiB}\n"
                                           "  versus: {cluster.fabric.routing: ecmp}\n"
                                           "  value: 40GB/s\n")),
                   "published.versus: only for metric busbw_ratio");
    CHECK_CONTAINS(error_of(collective_run("  metric: busbw_ratio\n"
                                           "  collective: {op: all_reduce, size: 1GiB}\n"
                                           "  versus: {cluster.fabric.routeing: ecmp}\n"
                                           "  value: 1.4\n")),
                   "published.versus.cluster.fabric.routeing");
    CHECK_CONTAINS(error_of(collective_run("  metric: step_time\n"
                                           "  collective: {op: all_reduce, size: 1GiB}\n"
                                           "  value: 3s\n")),
                   "published.collective: only for metric busbw or busbw_ratio");
  }

  TEST_CASE("published is not a --set key") {
    CHECK_FALSE(check_scenario_key("published.value").ok());
    CHECK(check_scenario_key("workload.framework.tp_comm_overlap").ok());
    CHECK(check_scenario_key("workload.dropout").ok());
  }

  TEST_CASE("corpus constants: the grid fit and its refit without a source") {
    CorpusConstant c;
    c.name = "k";
    c.lo = 0.5;
    c.hi = 1.0;
    c.step = 0.1;  // 0.5 0.6 0.7 0.8 0.9 1.0
    REQUIRE(c.grid_size() == 6);
    // Step time = 1 / value: source a is published at 1 / 0.8, source b at 1 / 0.6; a run the
    // constant does not apply to is ignored.
    auto run = [&](const char* src, double truth) {
      FitRun r{src, 1 / truth, {}};
      for (int i = 0; i < c.grid_size(); ++i) r.step_s_on_grid.push_back(1 / c.grid(i));
      return r;
    };
    const std::vector<FitRun> runs = {run("a", 0.8), run("a", 0.8), run("b", 0.6),
                                      FitRun{"c", 1, {}}};
    const ConstantFit all = fit_constant(c, runs);
    CHECK(all.runs == 3);
    CHECK(all.value == doctest::Approx(0.8));  // two runs of a outweigh one of b (L1)
    CHECK(all.mean_abs == doctest::Approx((1 - 0.6 / 0.8) / 3));  // b: 1/0.8 vs 1/0.6
    CHECK(fit_constant(c, runs, "a").value == doctest::Approx(0.6));
    CHECK(fit_constant(c, runs, "b").value == doctest::Approx(0.8));
    CHECK(fit_constant(c, {FitRun{"c", 1, {}}}).index == -1);
    // A run the constant does not move (equal within rounding on every grid value): the value
    // nearest the grid's middle (0.75: 0.7 or 0.8), not the first or the least by rounding.
    FitRun flat{"d", 2, {}};
    for (int i = 0; i < c.grid_size(); ++i) flat.step_s_on_grid.push_back(1 - 1e-13 * i);
    CHECK(std::fabs(fit_constant(c, {flat}).value - 0.75) < 0.05 + 1e-9);
    // The shipped constants: A100's in-training GEMM rate, on A100 scenarios only.
    REQUIRE_FALSE(corpus_constants().empty());
    const CorpusConstant& a100 = corpus_constants().front();
    CHECK(a100.shipped >= a100.lo);
    CHECK(a100.shipped <= a100.hi);
    auto sc = load_scenario_text(kRun, "p.yaml");
    REQUIRE(sc.ok());
    CHECK(a100.applies(*sc));
    sc->cluster.node.gpu = *find_gpu("h100-sxm");
    CHECK_FALSE(a100.applies(*sc));
  }

  TEST_CASE("scores: mean, median, max, bias, per source and left out") {
    // Errors: a -10%, b +20%, c -30% (source x); d +5% (source y); e not predicted.
    const std::vector<ScoredRun> runs = {{"a", "x", 10, 9},  {"b", "x", 10, 12},
                                         {"c", "x", 10, 7},  {"d", "y", 20, 21},
                                         {"e", "y", 10, 0}};
    const AccuracyScore s = score_runs(runs);
    CHECK(s.overall.runs == 4);
    CHECK(s.overall.mean_abs == doctest::Approx((0.1 + 0.2 + 0.3 + 0.05) / 4));
    CHECK(s.overall.median_abs == doctest::Approx((0.1 + 0.2) / 2));
    CHECK(s.overall.max_abs == doctest::Approx(0.3));
    CHECK(s.overall.worst == "c");
    CHECK(s.overall.mean_signed == doctest::Approx((-0.1 + 0.2 - 0.3 + 0.05) / 4));
    REQUIRE(s.sources.size() == 2);
    CHECK(s.sources[0].source == "x");
    CHECK(s.sources[0].stats.mean_abs == doctest::Approx(0.2));
    CHECK(s.sources[1].stats.runs == 1);
    CHECK(s.leave_one_source_out_mean_abs == doctest::Approx((0.2 + 0.05) / 2));
    // With a refitted constant, a's left-out prediction is 11: source x's left-out mean uses it.
    std::vector<ScoredRun> refit = runs;
    refit[0].left_out_step_s = 11;
    const AccuracyScore r = score_runs(refit);
    CHECK(r.overall.mean_abs == doctest::Approx(s.overall.mean_abs));
    CHECK(r.sources[0].left_out_mean_abs == doctest::Approx((0.1 + 0.2 + 0.3) / 3));
    // No kinds given: no class table.
    CHECK(s.classes.empty());
  }

  TEST_CASE("scores by kind of run: the 90th percentile by nearest rank, classes in name order") {
    // Ten Hopper dense runs off by 1..10% (9 in 10 within 9%), two Blackwell MoE runs, one
    // Hopper dense run not predicted, one run of no kind (a collective).
    std::vector<ScoredRun> runs;
    for (int i = 1; i <= 10; ++i) {
      runs.push_back({"h" + std::to_string(i), "x", 100, 100.0 + (i % 2 ? i : -i), 0, "Hopper dense"});
    }
    runs.push_back({"b1", "y", 10, 12, 0, "Blackwell MoE"});
    runs.push_back({"b2", "y", 10, 9, 0, "Blackwell MoE"});
    runs.push_back({"h0", "x", 10, 0, 0, "Hopper dense"});
    runs.push_back({"c", "z", 1, 2});
    const AccuracyScore s = score_runs(runs);
    REQUIRE(s.classes.size() == 2);
    CHECK(s.classes[0].run_class == "Blackwell MoE");
    CHECK(s.classes[0].stats.runs == 2);
    CHECK(s.classes[0].stats.p90_abs == doctest::Approx(0.2));
    CHECK(s.classes[0].stats.median_abs == doctest::Approx(0.15));
    CHECK(s.classes[0].stats.worst == "b1");
    const ErrorStats& h = s.classes[1].stats;
    CHECK(s.classes[1].run_class == "Hopper dense");
    CHECK(h.runs == 10);
    CHECK(h.p90_abs == doctest::Approx(0.09));
    CHECK(h.median_abs == doctest::Approx(0.055));
    CHECK(h.max_abs == doctest::Approx(0.10));
    CHECK(h.mean_signed == doctest::Approx((1 - 2 + 3 - 4 + 5 - 6 + 7 - 8 + 9 - 10) / 1000.0));
    CHECK(s.overall.runs == 13);
    CHECK(s.overall.p90_abs == doctest::Approx(0.2));  // ceil(0.9 x 13) = 12th of 13: b1's
  }

  TEST_CASE("accuracy_class: the GPU's generation and dense or MoE") {
    auto kind = [](const std::string& gpu, const std::string& model, int nodes = 1) {
      auto sc = load_scenario_text(
          "cluster: {nodes: " + std::to_string(nodes) + ", node: {gpu: " + gpu +
              ", gpus_per_node: 8" + (nodes > 1 ? ", nics_per_node: 8, nic: ib-ndr" : "") +
              "}" + (nodes > 1 ? ", fabric: {topology: fat-tree}" : "") + "}\n"
              "workload: {model: " + model + ", seq_len: 4096, global_batch: " +
              std::to_string(8 * nodes) + ", parallelism: {dp: " + std::to_string(8 * nodes) +
              "}}\n",
          "k.yaml");
      INFO((sc.ok() ? std::string() : sc.message()));
      REQUIRE(sc.ok());
      return accuracy_class(*sc);
    };
    CHECK(kind("a100-sxm-80gb", "llama3-8b") == "Ampere dense, one node");
    CHECK(kind("h100-sxm", "llama3-8b", 4) == "Hopper dense, multi-node");
    CHECK(kind("h200-sxm", "mixtral-8x7b") == "Hopper MoE, one node");
    CHECK(kind("b200", "llama3-8b", 2) == "Blackwell dense, multi-node");
    CHECK(kind("gb300", "qwen3-30b-a3b") == "Blackwell MoE, one node");
    CHECK(kind("l40s", "llama3-8b") == "Ada dense, one node");
    CHECK(kind("mi300x", "llama3-8b") == "mi300x dense, one node");
  }
}

}  // namespace
}  // namespace clustersim::models
