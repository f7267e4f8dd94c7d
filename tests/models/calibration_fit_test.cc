// Fits recover known parameters: exact lines, bounded lines, NCCL-like piecewise curves with 2%
// noise (fixed seed), saturating efficiency curves, the GEMM in-tile efficiency under the tile
// model, and the whole overlay from plain samples.
#include "models/calibration_fit.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "models/cluster_sketch.h"

using namespace clustersim::models;

namespace {

// NCCL's shape: the cheapest of three protocol lines (latency us, busbw GB/s), all_reduce of 2
// ranks (busbw factor 1), sizes 8 B .. 8 GiB by 2x, with multiplicative noise.
struct Line {
  double latency_us, busbw_GBps;
};
constexpr Line kTruth[] = {{9.0, 30.0}, {14.0, 120.0}, {30.0, 360.0}};

double true_time(double size) {
  double t = 1e300;
  for (const Line& l : kTruth) t = std::min(t, l.latency_us * 1e-6 + size / (l.busbw_GBps * 1e9));
  return t;
}

std::vector<CollectiveSample> noisy_sweep(unsigned seed, double noise) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0, noise);
  std::vector<CollectiveSample> out;
  for (int e = 3; e <= 33; ++e) {
    const double size = std::ldexp(1.0, e);
    out.push_back({CollectiveOp::kAllReduce, 2, 1, size, true_time(size) * (1 + n(rng))});
  }
  return out;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("calibration fit: a weighted line through exact points is exact") {
    std::vector<WeightedPoint> pts;
    for (double x : {1.0, 2.0, 5.0, 10.0})
      pts.push_back({x, 3 + 0.5 * x, 1 / std::pow(3 + 0.5 * x, 2)});
    const LineFit f = fit_line(pts, {});
    CHECK(f.intercept == doctest::Approx(3).epsilon(1e-12));
    CHECK(f.slope == doctest::Approx(0.5).epsilon(1e-12));
    CHECK(f.weighted_sse == doctest::Approx(0).epsilon(1e-20));
    CHECK_FALSE(f.intercept_at_bound);
  }

  TEST_CASE("calibration fit: lower bounds hold with the best constrained fit") {
    // y = -1 + 2x has a negative intercept: held at 0, the slope is the through-origin fit.
    std::vector<WeightedPoint> pts = {{1, 1, 1}, {2, 3, 1}, {3, 5, 1}};
    const LineFit f = fit_line(pts, {0.0, 0.0});
    CHECK(f.intercept_at_bound);
    CHECK(f.intercept == 0);
    // sum(x y) / sum(x^2) = (1 + 6 + 15) / 14.
    CHECK(f.slope == doctest::Approx(22.0 / 14.0));
    // A decreasing set with slope >= 0: flat at the mean.
    const LineFit g = fit_line({{1, 3, 1}, {2, 2, 1}, {3, 1, 1}}, {0.0, 0.0});
    CHECK(g.slope_at_bound);
    CHECK(g.slope == 0);
    CHECK(g.intercept == doctest::Approx(2));
    // One point: the intercept line through it (slope at its bound).
    const LineFit h = fit_line({{5, 7, 1}}, {0.0, 0.0});
    CHECK(h.predict(5) == doctest::Approx(7));
  }

  TEST_CASE("calibration fit: a continuous piecewise fit of a noisy NCCL-like sweep") {
    const auto sweep = noisy_sweep(42, 0.02);
    std::vector<WeightedPoint> pts;
    for (const auto& s : sweep) pts.push_back({s.size_bytes, s.time_s, 1 / (s.time_s * s.time_s)});
    const PiecewiseFit f = fit_piecewise(pts, {0.0, 1e-15}, {});
    REQUIRE(f.segments.size() >= 2);
    // The ends recover the truth: the latency of the smallest sizes, the busbw of the largest.
    CHECK(f.segments.front().fit.intercept * 1e6 ==
          doctest::Approx(kTruth[0].latency_us).epsilon(0.05));
    CHECK(1 / f.segments.back().fit.slope / 1e9 ==
          doctest::Approx(kTruth[2].busbw_GBps).epsilon(0.05));
    // Contiguous, continuous at the knots, latencies >= 0.
    for (std::size_t k = 0; k + 1 < f.segments.size(); ++k) {
      const auto& a = f.segments[k];
      const auto& b = f.segments[k + 1];
      CHECK(a.to_x == b.from_x);
      CHECK(a.fit.predict(a.to_x) == doctest::Approx(b.fit.predict(b.from_x)).epsilon(1e-9));
      CHECK(b.fit.intercept >= 0);
    }
    CHECK(f.max_rel_residual < 0.10);
    // Every size of the truth (noise-free), even between the fitted ones, within 8%.
    for (int e = 3; e <= 33; ++e) {
      const double x = std::ldexp(1.5, e);
      const auto& seg = *std::find_if(f.segments.begin(), f.segments.end(),
                                      [&](const Segment& s) { return x < s.to_x; });
      CHECK(seg.fit.predict(x) == doctest::Approx(true_time(x)).epsilon(0.08));
    }
    // Noise alone buys few knots, and those do not move the fit off the truth: one line with 2%
    // noise is followed within 5% at every size (the BIC's ln(n) per knot is what the real
    // sweeps need, tests/tools/check_cli.sh; a searched knot in pure noise can pass it).
    std::vector<WeightedPoint> one;
    std::mt19937 rng(7);
    std::normal_distribution<double> n(0, 0.02);
    auto line = [](double x) { return 10e-6 + x / 300e9; };
    for (int e = 3; e <= 33; ++e) {
      const double x = std::ldexp(1.0, e), y = line(x) * (1 + n(rng));
      one.push_back({x, y, 1 / (y * y)});
    }
    const PiecewiseFit single = fit_piecewise(one, {0.0, 1e-15}, {});
    CHECK(single.segments.size() <= 3);
    CHECK(1 / single.segments.back().fit.slope == doctest::Approx(300e9).epsilon(0.03));
    for (int e = 3; e <= 33; ++e) {
      const double x = std::ldexp(1.5, e);
      const auto& seg = *std::find_if(single.segments.begin(), single.segments.end(),
                                      [&](const Segment& s) { return x < s.to_x; });
      CHECK(seg.fit.predict(x) == doctest::Approx(line(x)).epsilon(0.05));
    }
  }

  TEST_CASE("calibration fit: a step where NCCL's choice jumps is a step, not a ramp") {
    // Call 7's 2 x H200 all_reduce in shape: flat ~15 us up to 1 MiB, then 29 us at 2 MiB and a
    // 300 GB/s line (1% noise). A continuous spline must ramp across the step and misses the
    // sizes next to it; the fit with steps follows both sides.
    auto truth = [](double x) { return x < 2e6 ? 15e-6 + x / 2e12 : 22e-6 + x / 300e9; };
    std::mt19937 rng(11);
    std::normal_distribution<double> n(0, 0.01);
    std::vector<WeightedPoint> pts;
    for (int e = 3; e <= 33; ++e) {
      const double x = std::ldexp(1.0, e), y = truth(x) * (1 + n(rng));
      pts.push_back({x, y, 1 / (y * y)});
    }
    const PiecewiseFit f = fit_piecewise(pts, {0.0, 1e-15}, {});
    auto at = [&](double x) {
      return std::find_if(f.segments.begin(), f.segments.end(),
                          [&](const Segment& s) { return x < s.to_x; })
          ->fit.predict(x);
    };
    CHECK(at(1 << 20) == doctest::Approx(truth(1 << 20)).epsilon(0.04));
    CHECK(at(2 << 20) == doctest::Approx(truth(2 << 20)).epsilon(0.04));
    CHECK(at(8.0 * (1 << 30)) == doctest::Approx(truth(8.0 * (1 << 30))).epsilon(0.03));
    bool stepped = false;
    for (std::size_t k = 0; k + 1 < f.segments.size(); ++k) {
      const auto& a = f.segments[k];
      const double x = f.segments[k + 1].from_x;
      stepped = stepped || f.segments[k + 1].fit.predict(x) > 1.3 * a.fit.predict(x);
      CHECK(f.segments[k + 1].fit.points >= 2);  // no piece on one point
    }
    CHECK(stepped);
    PiecewiseOptions continuous;
    continuous.allow_jumps = false;
    const PiecewiseFit c = fit_piecewise(pts, {0.0, 1e-15}, continuous);
    for (std::size_t k = 0; k + 1 < c.segments.size(); ++k) {
      const double x = c.segments[k + 1].from_x;
      CHECK(c.segments[k].fit.predict(x) == doctest::Approx(c.segments[k + 1].fit.predict(x)));
    }
  }

  TEST_CASE("calibration fit: saturating efficiency recovers max and half") {
    // e = 0.8 w / (w + 2e9) at five sizes (the attention curve's form, over tokens).
    std::vector<WeightedPoint> pts;
    for (double w : {1e9, 4e9, 1.6e10, 1.3e11, 1.1e12}) pts.push_back({w, 0.8 * w / (w + 2e9), 1});
    const SaturatingFit f = fit_saturating(pts, 1e9);
    CHECK(f.max == doctest::Approx(0.8).epsilon(1e-9));
    CHECK(f.half == doctest::Approx(2e9).epsilon(1e-9));
    CHECK(f.half_identified);
    // One work size: half stays at the default and max solves the point.
    const SaturatingFit g = fit_saturating({{1e12, 0.7, 1}}, 1e9);
    CHECK_FALSE(g.half_identified);
    CHECK(g.half == 1e9);
    CHECK(g.max * 1e12 / (1e12 + 1e9) == doctest::Approx(0.7));
  }

  TEST_CASE("calibration fit: the GEMM in-tile efficiency recovers its truth from the tile model") {
    // Ground truth: the tile model with an in-tile 0.74 on an H200, over the shapes validate
    // measures, and 512^3 measured at 7.7 us, launch-bound (the model: 1.9 us bf16, 0.9 us fp8).
    // The median over the in-tile estimates ignores that row; the residual names it.
    const GpuSpec& h200 = *find_gpu("h200-sxm");
    ComputeParams truth;
    truth.gemm_max_efficiency = 0.74;
    CalibrationInput in;
    in.gpu_id = "h200-sxm";
    const GemmShape shapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048},    {4096, 4096, 4096},
                                {8192, 8192, 8192}, {16384, 16384, 16384}, {4096, 4096, 16384},
                                {16384, 4096, 1024}};
    for (Precision p : {Precision::kBf16, Precision::kFp8}) {
      // Each precision's tile takes its fixed time at its own peak (fp8: twice the steps).
      ComputeParams at_p = truth;
      at_p.gemm_k_overhead = gemm_k_overhead(h200, p, truth);
      for (const GemmShape& s : shapes) {
        const KernelTime t = gemm_time(h200, p, s, at_p);
        in.gemm.push_back({p, s.m, s.n, s.k, t.flops / t.time_s, false});
      }
      in.gemm.push_back({p, 512, 512, 512, 2.0 * 512 * 512 * 512 / 7.7e-6, false});
    }
    auto c = fit_calibration(in);
    REQUIRE(c.ok());
    REQUIRE(c->gemm.size() == 2);
    for (const GemmCalibration& g : c->gemm) {
      CAPTURE(to_string(g.precision));
      CHECK(g.points == 8);
      CHECK(g.max_efficiency == doctest::Approx(0.74));
      CHECK(g.short_max_efficiency == g.max_efficiency);
      CHECK_FALSE(g.sustained_scaled);  // no burn measured
      // 512^3: the model's time over the measured 7.7 us, minus 1.
      ComputeParams at_p = truth;
      at_p.gemm_k_overhead = gemm_k_overhead(h200, g.precision, truth);
      const double model_s = gemm_time(h200, g.precision, {512, 512, 512}, at_p).time_s;
      CHECK(g.max_rel_residual == doctest::Approx(7.7e-6 / model_s - 1));
    }
  }

  TEST_CASE("calibration fit: rows timed at the power cap give the capped rate, not the full one") {
    // validate's GEMM rows run 1 s each, long enough to settle at the 700 W cap: an H200 whose
    // full-clock in-tile rate is 0.834 measures 0.834 x 0.863 in them. The fit keeps that as what
    // a run sustains and divides it by the cap for the full clock, so that the planner's power
    // model (power_clock) neither caps it twice nor lets a mixed step run it at full clock.
    const GpuSpec& h200 = *find_gpu("h200-sxm");
    const double cap = default_compute_params(h200).sustained_clock;
    ComputeParams capped;
    capped.gemm_max_efficiency = 0.834 * cap;
    auto rate = [&](const GemmShape& s) {
      const KernelTime t = gemm_time(h200, Precision::kBf16, s, capped);
      return t.flops / t.time_s;
    };
    const GemmShape shapes[] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {16384, 4096, 1024}};
    for (const char* what : {"1 s rows", "1 s rows and a burn", "a burn alone", "short rows"}) {
      const std::string w = what;
      CAPTURE(w);
      CalibrationInput in;
      in.gpu_id = "h200-sxm";
      if (w != "a burn alone") {
        for (const GemmShape& s : shapes) {
          const double seconds = w == "short rows" ? 0.1 : 1.0;
          const double r = w == "short rows" ? rate(s) / cap : rate(s);
          in.gemm.push_back({Precision::kBf16, s.m, s.n, s.k, r, false, seconds});
        }
      }
      if (w == "1 s rows and a burn" || w == "a burn alone") {
        // 2% below the 1 s rows after 30 s (heat).
        in.gemm.push_back(
            {Precision::kBf16, 8192, 8192, 8192, 0.98 * rate({8192, 8192, 8192}), true, 30});
      }
      auto c = fit_calibration(in);
      REQUIRE(c.ok());
      REQUIRE(c->gemm.size() == 1);
      const GemmCalibration& g = c->gemm[0];
      // A burn alone shows its heat too: the full clock's rate read from it is 2% low.
      const double full = w == "a burn alone" ? 0.98 * 0.834 : 0.834;
      CHECK(g.short_max_efficiency == doctest::Approx(full).epsilon(1e-3));
      const double sustained = w == "short rows" ? 0.834 : w == "1 s rows" ? 0.834 * cap
                                                                           : 0.98 * 0.834 * cap;
      CHECK(g.max_efficiency == doctest::Approx(sustained).epsilon(1e-3));
      CHECK(g.sustained_scaled == (w != "short rows"));
      // The planner's parameters from the overlay: full clock 0.834, cap 0.863 (x 0.98 with the
      // burn); without a burn or capped rows, the GPU's own cap stays.
      ComputeParams p = default_compute_params(h200);
      apply_calibration(*c, Precision::kBf16, &p);
      CHECK(p.gemm_max_efficiency == doctest::Approx(full).epsilon(1e-3));
      CHECK(p.gemm_max_efficiency * p.sustained_clock ==
            doctest::Approx(w == "short rows" ? 0.834 * cap : sustained).epsilon(1e-3));
    }
  }

  TEST_CASE("calibration fit: the overlay from samples") {
    CalibrationInput in;
    in.gpu_id = "h200-sxm";
    in.collectives = noisy_sweep(3, 0.01);
    // GEMM: 780 TFLOP/s short at 8192^3 (0.789 of 989; ml-engineering's MAMF finder), a 655
    // sustained burn.
    in.gemm = {{Precision::kBf16, 2048, 2048, 2048, 560e12, false},
               {Precision::kBf16, 4096, 4096, 4096, 730e12, false},
               {Precision::kBf16, 8192, 8192, 8192, 780e12, false},
               {Precision::kBf16, 8192, 8192, 8192, 655e12, true}};
    in.hbm_copy_Bps = {4.3e12, 4.2e12, 4.4e12};
    in.h2d_Bps = {53e9};
    auto c = fit_calibration(in);
    REQUIRE(c.ok());
    CHECK(c->gpu == "h200-sxm");
    REQUIRE(c->collectives.size() == 1);
    const auto& regimes = c->collectives[0].regimes;
    REQUIRE(regimes.size() >= 2);
    CHECK(regimes[0].min_size_bytes == 0);
    CHECK(std::isinf(regimes.back().max_size_bytes));
    for (std::size_t k = 0; k + 1 < regimes.size(); ++k) {
      CHECK(regimes[k].max_size_bytes == regimes[k + 1].min_size_bytes);
    }
    CHECK(regimes.back().busbw_Bps == doctest::Approx(360e9).epsilon(0.05));
    CHECK(regimes.front().latency_s == doctest::Approx(9e-6).epsilon(0.05));
    REQUIRE(c->gemm.size() == 1);
    // In-tile estimates (measured / peak / the shape's tile efficiency) of 2048^3, 4096^3 and
    // 8192^3: 0.620, 0.785, 0.826; the median is 4096^3's. The worst row is 2048^3, which the
    // model puts 26.5% above its measured rate. The sustained burn scales the maximum so that the
    // model at 8192^3 gives 655 / 989.
    const auto& g = c->gemm[0];
    const GpuSpec& h200 = *find_gpu("h200-sxm");
    auto in_tile = [&](double n, double tflops) {
      return tflops / 989 / gemm_shape_efficiency(h200, {n, n, n}, ComputeParams{});
    };
    CHECK(g.points == 3);
    CHECK(g.short_max_efficiency == doctest::Approx(in_tile(4096, 730)));
    CHECK(g.max_rel_residual == doctest::Approx(in_tile(4096, 730) / in_tile(2048, 560) - 1));
    CHECK(g.sustained_scaled);
    ComputeParams fitted;
    fitted.gemm_max_efficiency = g.max_efficiency;
    CHECK(gemm_time(h200, Precision::kBf16, {8192, 8192, 8192}, fitted).efficiency ==
          doctest::Approx(655.0 / 989.0));
    CHECK(g.short_max_efficiency > g.max_efficiency);
    CHECK(c->hbm_efficiency == doctest::Approx(4.3e12 / 4.8e12));
    CHECK(c->h2d_Bps == 53e9);
    // The 2-rank sweep also yields the all_reduce transfer correction.
    REQUIRE(c->transfer.size() == 1);
    CHECK(c->transfer[0].op == CollectiveOp::kAllReduce);
    CHECK(c->transfer[0].fitted_ranks == std::vector<int>{2});
    CHECK(c->transfer[0].points == 31);
    CHECK_FALSE(fit_calibration({.gpu_id = "no-such-gpu"}).ok());
    CHECK_FALSE(fit_calibration({.gpu_id = "h200-sxm"}).ok());  // nothing to fit
  }

  TEST_CASE(
      "calibration fit: the transfer correction recovers its truth and carries it to 8 GPUs") {
    // Ground truth: the model with +12 us per call and 0.85 of its bandwidth, NVLS off, on one
    // 8 x H200 node. Measured: 2 ranks only, 2% noise. The fit must recover the two numbers and
    // predict 8 ranks (never seen) as the truth does.
    ClusterSketch sketch;
    sketch.gpu = "h200-sxm";
    sketch.gpus_per_node = 8;
    auto cluster = cluster_from_sketch(sketch, "test");
    REQUIRE(cluster.ok());
    CollectiveParams truth;
    const std::vector<std::string> no_nvls = {"nvls"};
    std::mt19937 rng(7);
    std::normal_distribution<double> noise(0, 0.02);
    CalibrationInput in;
    in.gpu_id = "h200-sxm";
    in.nccl_disabled_algorithms = no_nvls;
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather}) {
      truth.corrections = {{op, false, 12e-6, 0.85}};
      auto two = collective_topology(*cluster, 2);
      REQUIRE(two.ok());
      for (int e = 3; e <= 33; ++e) {
        const double size = std::ldexp(1.0, e);
        auto t = cheapest_enabled_collective(*two, op, size, truth, no_nvls);
        REQUIRE(t.ok());
        in.collectives.push_back({op, 2, 1, size, t->time_s * (1 + noise(rng))});
      }
    }
    auto c = fit_calibration(in);
    REQUIRE(c.ok());
    REQUIRE(c->transfer.size() == 2);
    CollectiveParams fitted;
    for (const auto& t : c->transfer) {
      CHECK(t.extra_latency_s == doctest::Approx(12e-6).epsilon(0.05));
      CHECK(t.bandwidth_scale == doctest::Approx(0.85).epsilon(0.03));
      CHECK(t.rms_rel_residual < 0.03);
      CHECK_FALSE(t.multi_node);
      fitted.corrections.push_back({t.op, false, t.extra_latency_s, t.bandwidth_scale});
    }
    auto eight = collective_topology(*cluster, 8);
    REQUIRE(eight.ok());
    for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather}) {
      truth.corrections = {{op, false, 12e-6, 0.85}};
      for (double size : {8.0, 65536.0, 16.0 * (1 << 20), 8.0 * (1 << 30)}) {
        auto want = cheapest_enabled_collective(*eight, op, size, truth, no_nvls);
        auto got = cheapest_enabled_collective(*eight, op, size, fitted, no_nvls);
        REQUIRE(got.ok());
        CHECK(got->time_s == doctest::Approx(want->time_s).epsilon(0.04));
      }
    }
  }
}
