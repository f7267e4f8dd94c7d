// The calibration overlay: YAML round trip, errors that cite file:line:col, and applying it —
// regimes replace the collective model's terms in their size range, efficiencies replace the
// compute defaults, an overlay of another GPU is refused.
#include "models/calibration.h"

#include <doctest/doctest.h>

#include <cmath>

#include "models/cluster_sketch.h"
#include "models/step_model.h"

using namespace clustersim::models;

namespace {

Calibration sample() {
  Calibration c;
  c.gpu = "h200-sxm";
  c.sources = {"a.json sha256:00"};
  c.nccl_disabled_algorithms = {"nvls"};
  CollectiveCalibration cc;
  cc.op = CollectiveOp::kAllReduce;
  cc.ranks = 2;
  cc.nodes = 1;
  cc.regimes = {{0, 65536, 10e-6, 30e9, 8, 0.01, 0.02},
                {65536, std::numeric_limits<double>::infinity(), 30e-6, 360e9, 12, 0.012, 0.03}};
  c.collectives.push_back(cc);
  c.transfer.push_back({CollectiveOp::kAllReduce, false, 13e-6, 0.9, {2}, 31, 0.07, 0.2});
  c.transfer.push_back({CollectiveOp::kSendRecv, true, -1.5e-6, 1.1, {16, 32}, 20, 0.05, 0.1});
  c.gemm.push_back({Precision::kBf16, 0.66, 0.79, 6, true, 0.02});
  c.attention.push_back({false, 0.5, 700, 5, 0.03});
  c.hbm_efficiency = 0.9;
  c.hbm_copy_Bps = 4.32e12;
  c.h2d_Bps = 53e9;
  return c;
}

ClusterConfig h200s(int gpus) {
  ClusterSketch s;
  s.gpu = "h200-sxm";
  s.gpus_per_node = gpus;
  auto c = cluster_from_sketch(s, "test");
  REQUIRE(c.ok());
  return *c;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("calibration: YAML round trip keeps every field") {
    const Calibration c = sample();
    auto back = load_calibration_text(to_yaml_text(c), "x.yaml");
    REQUIRE_MESSAGE(back.ok(), back.message());
    CHECK(back->gpu == "h200-sxm");
    CHECK(back->nccl_disabled_algorithms == c.nccl_disabled_algorithms);
    REQUIRE(back->collectives.size() == 1);
    const auto& r = back->collectives[0].regimes;
    REQUIRE(r.size() == 2);
    CHECK(r[0].min_size_bytes == 0);
    CHECK(r[0].max_size_bytes == 65536);
    CHECK(r[1].min_size_bytes == 65536);
    CHECK(std::isinf(r[1].max_size_bytes));
    CHECK(r[1].latency_s == doctest::Approx(30e-6));
    CHECK(r[1].busbw_Bps == doctest::Approx(360e9));
    CHECK(r[1].points == 12);
    REQUIRE(back->transfer.size() == 2);
    CHECK(back->transfer[0].op == CollectiveOp::kAllReduce);
    CHECK_FALSE(back->transfer[0].multi_node);
    CHECK(back->transfer[0].extra_latency_s == doctest::Approx(13e-6));
    CHECK(back->transfer[0].bandwidth_scale == doctest::Approx(0.9));
    CHECK(back->transfer[0].fitted_ranks == std::vector<int>{2});
    CHECK(back->transfer[0].points == 31);
    CHECK(back->transfer[0].max_rel_residual == doctest::Approx(0.2));
    CHECK(back->transfer[1].multi_node);
    CHECK(back->transfer[1].extra_latency_s == doctest::Approx(-1.5e-6));  // signed
    CHECK(back->transfer[1].fitted_ranks == std::vector<int>{16, 32});
    REQUIRE(back->gemm.size() == 1);
    CHECK(back->gemm[0].max_efficiency == doctest::Approx(0.66));
    CHECK(back->gemm[0].short_max_efficiency == doctest::Approx(0.79));
    CHECK(back->gemm[0].points == 6);
    CHECK(back->gemm[0].sustained_scaled);
    CHECK(back->gemm[0].max_rel_residual == doctest::Approx(0.02));
    CHECK(to_yaml_text(c).find("half_efficiency_flops") == std::string::npos);
    CHECK(back->attention[0].half_kv_tokens == doctest::Approx(700));
    CHECK(back->hbm_efficiency == doctest::Approx(0.9));
    CHECK(back->h2d_Bps == doctest::Approx(53e9));
  }

  TEST_CASE("calibration: an overlay of the saturating GEMM model still loads") {
    // Overlays written before the tile model carry half_efficiency_flops and half_identified:
    // accepted and ignored; max_efficiency reads as the in-tile maximum.
    auto old = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ngemm:\n"
        "  - {precision: bf16, max_efficiency: 0.684, short_max_efficiency: 0.69,"
        " half_efficiency_flops: 4.1e+09, points: 8, half_identified: true,"
        " sustained_scaled: true, max_residual: 0.25}\n",
        "old.yaml");
    REQUIRE_MESSAGE(old.ok(), old.message());
    REQUIRE(old->gemm.size() == 1);
    CHECK(old->gemm[0].max_efficiency == doctest::Approx(0.684));
    CHECK(old->gemm[0].short_max_efficiency == doctest::Approx(0.69));
    CHECK(old->gemm[0].points == 8);
    // half_efficiency_flops is no longer required.
    auto bare = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ngemm:\n"
        "  - {precision: fp8, max_efficiency: 0.6}\n",
        "new.yaml");
    REQUIRE_MESSAGE(bare.ok(), bare.message());
    CHECK(bare->gemm[0].short_max_efficiency == doctest::Approx(0.6));  // defaults to the max
    auto above = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ngemm:\n"
        "  - {precision: bf16, max_efficiency: 1.2}\n",
        "c.yaml");
    REQUIRE_FALSE(above.ok());
    CHECK(above.message().find("c.yaml:4:") == 0);
    CHECK(above.message().find("max_efficiency must be in (0, 1]") != std::string::npos);
  }

  TEST_CASE("calibration: bad overlays fail with file:line:col") {
    auto wrong_schema = load_calibration_text("schema: nope\ngpu: h200-sxm\n", "c.yaml");
    REQUIRE_FALSE(wrong_schema.ok());
    CHECK(wrong_schema.message().find("c.yaml:1:9: schema: expected clustersim.calibration/1") ==
          0);
    auto bare = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ncollectives:\n  - op: all_reduce\n"
        "    ranks: 2\n    regimes:\n      - {latency: 10, busbw: 30GB/s}\n",
        "c.yaml");
    REQUIRE_FALSE(bare.ok());
    CHECK(bare.message().find("c.yaml:7:") == 0);
    CHECK(bare.message().find("latency") != std::string::npos);
    auto unknown = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\nfoo: 1\n", "c.yaml");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.message().find("c.yaml:3:1: foo: unknown key") == 0);
    auto order = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ncollectives:\n  - op: all_reduce\n"
        "    ranks: 2\n    regimes:\n      - {latency: 10us, busbw: 30GB/s}\n"
        "      - {min_size: 0B, latency: 10us, busbw: 30GB/s}\n",
        "c.yaml");
    REQUIRE_FALSE(order.ok());
    CHECK(order.message().find("regimes must go up in size") != std::string::npos);
    auto scope = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ntransfer:\n"
        "  - {op: all_reduce, scope: rack, extra_latency: 1us, bandwidth_scale: 0.9}\n",
        "c.yaml");
    REQUIRE_FALSE(scope.ok());
    CHECK(scope.message().find("c.yaml:4:") == 0);
    CHECK(scope.message().find("one_node or multi_node") != std::string::npos);
    auto scale = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ntransfer:\n"
        "  - {op: all_reduce, extra_latency: 1us, bandwidth_scale: 0}\n",
        "c.yaml");
    REQUIRE_FALSE(scale.ok());
    CHECK(scale.message().find("bandwidth_scale: must be positive") != std::string::npos);
    auto unitless = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\ntransfer:\n"
        "  - {op: all_reduce, extra_latency: 3, bandwidth_scale: 0.9}\n",
        "c.yaml");
    REQUIRE_FALSE(unitless.ok());
    CHECK(unitless.message().find("extra_latency") != std::string::npos);
    auto source = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\nattention:\n"
        "  - {direction: forward, source: cudnn, max_efficiency: 0.5, half_kv_tokens: 512}\n",
        "c.yaml");
    REQUIRE_FALSE(source.ok());
    CHECK(source.message().find("c.yaml:4:") == 0);
    CHECK(source.message().find("'clustersim-flash' or 'torch-sdpa'") != std::string::npos);
    auto applied = load_calibration_text(
        "schema: clustersim.calibration/1\ngpu: h200-sxm\nattention:\n"
        "  - {direction: forward, source: clustersim-flash, applied: true, max_efficiency: 0.3,"
        " half_kv_tokens: 512}\n",
        "c.yaml");
    REQUIRE_FALSE(applied.ok());
    CHECK(applied.message().find("only the torch-sdpa curve is applied") != std::string::npos);
    CHECK_FALSE(load_calibration_file("/no/such/file.yaml").ok());
  }

  TEST_CASE("calibration: regimes replace the collective model in their size range") {
    CollectiveParams p;
    apply_calibration(sample(), &p);
    auto topo = collective_topology(h200s(2), 2);
    REQUIRE(topo.ok());
    // 1 KiB: the first regime, 10 us + 1024 x 1 / 30 GB/s.
    auto small = estimate_collective(*topo, {CollectiveOp::kAllReduce, 1024}, p);
    REQUIRE(small.ok());
    CHECK(small->bottleneck == CollectiveBottleneck::kCalibrated);
    CHECK(small->time_s == doctest::Approx(10e-6 + 1024 / 30e9));
    // 1 GiB: the second; every algorithm candidate gets the measured line (auto fits).
    auto big = estimate_collective(*topo, {CollectiveOp::kAllReduce, 1 << 30}, p);
    REQUIRE(big.ok());
    CHECK(big->time_s == doctest::Approx(30e-6 + (1 << 30) / 360e9));
    auto tree = estimate_collective(
        *topo, {CollectiveOp::kAllReduce, 1 << 30, CollectiveAlgorithm::kTree}, p);
    CHECK(tree->time_s == doctest::Approx(big->time_s));
    // Another communicator size or op keeps the model.
    auto four = collective_topology(h200s(4), 4);
    auto other = estimate_collective(*four, {CollectiveOp::kAllReduce, 1 << 30}, p);
    CHECK(other->bottleneck != CollectiveBottleneck::kCalibrated);
    auto gather = estimate_collective(*topo, {CollectiveOp::kAllGather, 1 << 30}, p);
    CHECK(gather->bottleneck != CollectiveBottleneck::kCalibrated);
  }

  TEST_CASE("calibration: transfer corrections carry to communicators that were not measured") {
    Calibration c = sample();
    CollectiveParams p;
    apply_calibration(c, &p);
    const CollectiveParams model;
    const std::vector<std::string> no_nvls = {"nvls"};
    auto eight = collective_topology(h200s(8), 8);
    REQUIRE(eight.ok());
    // 8 ranks: no regimes for them; every candidate gets +13 us and its bandwidth term / 0.9,
    // then the cheapest wins. Hand-check on ring Simple at 1 GiB and the choice at 8 B.
    const CollectiveRequest ring{CollectiveOp::kAllReduce, 1 << 30, CollectiveAlgorithm::kRing,
                                 CollectiveProtocol::kSimple};
    auto raw = estimate_collective(*eight, ring, model);
    auto corrected = estimate_collective(*eight, ring, p);
    REQUIRE(raw.ok());
    REQUIRE(corrected.ok());
    CHECK(corrected->latency_s == doctest::Approx(raw->latency_s + 13e-6));
    CHECK(corrected->bandwidth_s == doctest::Approx(raw->bandwidth_s / 0.9));
    CHECK(corrected->bottleneck == raw->bottleneck);
    auto small_raw =
        cheapest_enabled_collective(*eight, CollectiveOp::kAllReduce, 8, model, no_nvls);
    auto small = cheapest_enabled_collective(*eight, CollectiveOp::kAllReduce, 8, p, no_nvls);
    REQUIRE(small.ok());
    CHECK(small->time_s == doctest::Approx(small_raw->time_s + 13e-6).epsilon(1e-6));
    // The 2-rank regimes still win on their own shape; ops without a correction keep the model.
    auto two = collective_topology(h200s(8), 2);
    auto exact = estimate_collective(*two, {CollectiveOp::kAllReduce, 1024}, p);
    CHECK(exact->time_s == doctest::Approx(10e-6 + 1024 / 30e9));
    auto gather = estimate_collective(*eight, {CollectiveOp::kAllGather, 1 << 30}, p);
    auto gather_raw = estimate_collective(*eight, {CollectiveOp::kAllGather, 1 << 30}, model);
    CHECK(gather->time_s == doctest::Approx(gather_raw->time_s));
    // A multi-node correction leaves one-node communicators alone.
    auto sr = estimate_collective(*eight, {CollectiveOp::kSendRecv, 1 << 20}, p);
    auto sr_raw = estimate_collective(*eight, {CollectiveOp::kSendRecv, 1 << 20}, model);
    CHECK(sr->time_s == doctest::Approx(sr_raw->time_s));
    // One rank moves nothing, corrected or not.
    auto one = collective_topology(h200s(8), 1);
    CHECK(estimate_collective(*one, {CollectiveOp::kAllReduce, 1 << 20}, p)->time_s == 0);
    // NVLS was off in the runs (sample's nccl_disabled_algorithms): it pays the extra latency
    // but keeps the model's bandwidth.
    const CollectiveRequest nvls{CollectiveOp::kAllReduce, 1 << 30, CollectiveAlgorithm::kNvls,
                                 CollectiveProtocol::kSimple};
    auto nvls_raw = estimate_collective(*eight, nvls, model);
    auto nvls_corrected = estimate_collective(*eight, nvls, p);
    CHECK(nvls_corrected->latency_s == doctest::Approx(nvls_raw->latency_s + 13e-6));
    CHECK(nvls_corrected->bandwidth_s == doctest::Approx(nvls_raw->bandwidth_s));
    // uncalibrated() drops both.
    const CollectiveParams bare = uncalibrated(p);
    CHECK(bare.fits.empty());
    CHECK(bare.corrections.empty());
    // The basis a report names.
    CHECK(calibration_basis(c, CollectiveOp::kAllReduce, 2, 1) == "fit");
    CHECK(calibration_basis(c, CollectiveOp::kAllReduce, 8, 1) == "transfer");
    CHECK(calibration_basis(c, CollectiveOp::kAllReduce, 16, 2) == "model");
    CHECK(calibration_basis(c, CollectiveOp::kSendRecv, 16, 2) == "transfer");
    CHECK(calibration_basis(c, CollectiveOp::kAllGather, 8, 1) == "model");
  }

  TEST_CASE("calibration: a production attention fit is what a step at the power cap runs") {
    // PyTorch's SDPA ran back to back at the cap (call 8: 0.592 forward, 0.556 backward of the
    // bf16 peak on an H200). The overlay's ceilings are read as full-clock ones over the cap, so
    // that a step, which scales them back to attention_clock, runs them at the measured rates;
    // they were once applied as full-clock rates and the cap taken from them a second time
    // (a 32K-token H200 step 10% slower calibrated than uncalibrated).
    const GpuSpec& h200 = *find_gpu("h200-sxm");
    Calibration c;
    c.gpu = "h200-sxm";
    c.attention.push_back({false, 0.592, 1800, 7, 0.1, std::string(kAttentionProductionKernel), true});
    c.attention.push_back({true, 0.556, 2000, 7, 0.04, std::string(kAttentionProductionKernel), true});
    for (bool with_burn : {false, true}) {
      CAPTURE(with_burn);
      Calibration ci = c;
      if (with_burn) ci.gemm.push_back({Precision::kBf16, 0.70, 0.83, 4, true, 0.02});
      ComputeParams p = default_compute_params(h200);
      apply_calibration(ci, Precision::kBf16, &p);
      const ComputeParams at_cap = at_clock(p, p.sustained_clock);
      CHECK(at_cap.attention_fwd_max_efficiency == doctest::Approx(0.592));
      CHECK(at_cap.attention_bwd_max_efficiency == doctest::Approx(0.556));
      CHECK(p.attention_half_efficiency_kv_tokens == doctest::Approx(1800));
      // Full clock above the cap: what the defaults hold for cuDNN's measured figures.
      CHECK(p.attention_fwd_max_efficiency > 0.592);
    }
  }

  TEST_CASE("calibration: compute efficiencies, and an overlay of another GPU is refused") {
    ComputeParams cp;
    apply_calibration(sample(), Precision::kBf16, &cp);
    // The short-run in-tile rate, and the burn's rate over it as the power cap's clock.
    CHECK(cp.gemm_max_efficiency == doctest::Approx(0.79));
    CHECK(cp.sustained_clock == doctest::Approx(0.66 / 0.79));
    CHECK(cp.gemm_k_overhead == ComputeParams{}.gemm_k_overhead);  // the tile model's own
    // Attention from validate's own kernel is recorded, not applied.
    CHECK(cp.attention_fwd_max_efficiency == ComputeParams{}.attention_fwd_max_efficiency);
    CHECK(cp.hbm_efficiency == doctest::Approx(0.9));
    ComputeParams fp8;
    apply_calibration(sample(), Precision::kFp8, &fp8);
    // FP8 training: the bf16 fit for its bf16 GEMMs, the default fp8 ratio (fp8 not measured);
    // with an fp8 fit too, the ratio of the two.
    CHECK(fp8.gemm_max_efficiency == doctest::Approx(0.79));
    CHECK(fp8.fp8_gemm_ratio == ComputeParams{}.fp8_gemm_ratio);
    Calibration both = sample();
    GemmCalibration g8;
    g8.precision = Precision::kFp8;
    g8.max_efficiency = g8.short_max_efficiency = 0.632;
    both.gemm.push_back(g8);
    ComputeParams fp8_fit;
    apply_calibration(both, Precision::kFp8, &fp8_fit);
    CHECK(fp8_fit.gemm_max_efficiency == doctest::Approx(0.79));
    CHECK(fp8_fit.fp8_gemm_ratio == doctest::Approx(0.632 / 0.79));
    CHECK(fp8_gemm_params(*find_gpu("h200-sxm"), fp8_fit).gemm_max_efficiency ==
          doctest::Approx(0.632));
    StepParams sp = default_step_params(h200s(8));
    CHECK(apply_calibration(sample(), h200s(8), Precision::kBf16, &sp).ok());
    CHECK(sp.collective.fits.size() == 2);
    ClusterSketch h100;
    h100.gpu = "h100-sxm";
    h100.gpus_per_node = 8;
    auto other = cluster_from_sketch(h100, "test");
    REQUIRE(other.ok());
    const Status s = apply_calibration(sample(), *other, Precision::kBf16, &sp);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("measured on h200-sxm, but the cluster's GPU is h100-sxm") !=
          std::string::npos);
  }
}
