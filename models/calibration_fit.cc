#include "models/calibration_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "models/cluster_sketch.h"
#include "models/compute_model.h"

namespace clustersim::models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Weighted SSE and relative residuals of a candidate line.
void score(const std::vector<WeightedPoint>& pts, LineFit* f) {
  f->weighted_sse = 0;
  f->max_rel_residual = 0;
  double rel_sq = 0;
  for (const auto& p : pts) {
    const double r = p.y - f->predict(p.x);
    f->weighted_sse += p.weight * r * r;
    const double rel = p.y != 0 ? std::fabs(r / p.y) : 0;
    rel_sq += rel * rel;
    f->max_rel_residual = std::max(f->max_rel_residual, rel);
  }
  f->points = static_cast<int>(pts.size());
  f->rms_rel_residual = pts.empty() ? 0 : std::sqrt(rel_sq / pts.size());
}

// Weighted least squares of y - fixed_part over one free column (x or 1): the 1-D normal
// equation. Returns NaN when the column is all zero.
double solve_one(const std::vector<WeightedPoint>& pts, bool column_is_x, double other,
                 bool other_is_intercept) {
  double num = 0, den = 0;
  for (const auto& p : pts) {
    const double c = column_is_x ? p.x : 1.0;
    const double fixed = other_is_intercept ? other : other * p.x;
    num += p.weight * c * (p.y - fixed);
    den += p.weight * c * c;
  }
  return den > 0 ? num / den : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

LineFit fit_line(const std::vector<WeightedPoint>& points, const LineBounds& bounds) {
  CS_ASSERT(!points.empty(), "fit_line needs at least one point");
  const int n = static_cast<int>(points.size());
  std::vector<LineFit> candidates;
  auto feasible = [&](double a, double b) {
    return std::isfinite(a) && std::isfinite(b) && a >= bounds.min_intercept - 1e-300 &&
           b >= bounds.min_slope - 1e-300;
  };
  // (1) Both free: QR of sqrt(W) [1 x] against sqrt(W) y, when the columns are independent.
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    const double s = std::sqrt(points[static_cast<std::size_t>(i)].weight);
    CS_ASSERT(points[static_cast<std::size_t>(i)].weight > 0, "weights must be positive");
    a(i, 0) = s;
    a(i, 1) = s * points[static_cast<std::size_t>(i)].x;
    y(i) = s * points[static_cast<std::size_t>(i)].y;
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() == 2) {
    const Eigen::Vector2d sol = qr.solve(y);
    if (feasible(sol(0), sol(1))) candidates.push_back({sol(0), sol(1)});
  }
  // (2) Intercept at its bound, slope free; (3) slope at its bound, intercept free; (4) both.
  const double b2 = solve_one(points, true, bounds.min_intercept, true);
  if (feasible(bounds.min_intercept, b2)) {
    candidates.push_back({bounds.min_intercept, b2});
    candidates.back().intercept_at_bound = true;
  }
  const double a3 = solve_one(points, false, bounds.min_slope, false);
  if (feasible(a3, bounds.min_slope)) {
    candidates.push_back({a3, bounds.min_slope});
    candidates.back().slope_at_bound = true;
  }
  candidates.push_back({bounds.min_intercept, bounds.min_slope});
  candidates.back().intercept_at_bound = candidates.back().slope_at_bound = true;
  for (auto& c : candidates) score(points, &c);
  // The convex problem's optimum has one of these four active sets; the best feasible wins.
  return *std::min_element(
      candidates.begin(), candidates.end(),
      [](const LineFit& l, const LineFit& r) { return l.weighted_sse < r.weighted_sse; });
}

namespace {

// A knot of the spline: a change of slope at x (continuous), or a step at x (the time jumps
// where NCCL switches protocol or algorithm by its own model, not by the measured times).
struct Knot {
  double x = 0;
  bool jump = false;
  bool operator<(const Knot& o) const { return x < o.x; }
};

// The spline with these knots: its SSE and, when feasible (bounds kept), its pieces.
struct SplineFit {
  bool feasible = false;
  double sse = 0;
  std::vector<Knot> knots;
  std::vector<double> intercepts, slopes;  // per piece
};

SplineFit fit_spline(const std::vector<WeightedPoint>& pts, const std::vector<Knot>& knots,
                     const LineBounds& bounds, int min_points, double min_jump) {
  SplineFit f;
  f.knots = knots;
  const int n = static_cast<int>(pts.size());
  const int m = static_cast<int>(knots.size());
  Eigen::MatrixXd a(n, m + 2);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) {
    const auto& p = pts[static_cast<std::size_t>(i)];
    const double s = std::sqrt(p.weight);
    a(i, 0) = s;
    a(i, 1) = s * p.x;
    for (int j = 0; j < m; ++j) {
      const Knot& k = knots[static_cast<std::size_t>(j)];
      a(i, j + 2) = s * (k.jump ? (p.x >= k.x ? 1.0 : 0.0) : std::max(0.0, p.x - k.x));
    }
    y(i) = s * p.y;
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() < m + 2) return f;
  const Eigen::VectorXd c = qr.solve(y);
  f.sse = (a * c - y).squaredNorm();
  // Piece k: slope b + the kinks' c_j before it, intercept a - sum c_j k_j over those kinks
  // + the jumps' c_j.
  double intercept = c(0), slope = c(1);
  f.feasible = intercept >= bounds.min_intercept && slope >= bounds.min_slope;
  f.intercepts.push_back(intercept);
  f.slopes.push_back(slope);
  for (int j = 0; j < m; ++j) {
    const Knot& k = knots[static_cast<std::size_t>(j)];
    if (k.jump) {
      // A step smaller than min_jump of the time there is noise, not a change of protocol.
      const double below = intercept + slope * k.x;
      f.feasible = f.feasible && below > 0 && std::fabs(c(j + 2)) >= min_jump * below;
      intercept += c(j + 2);
    } else {
      slope += c(j + 2);
      intercept -= c(j + 2) * k.x;
    }
    f.feasible = f.feasible && slope >= bounds.min_slope && intercept >= bounds.min_intercept;
    f.intercepts.push_back(intercept);
    f.slopes.push_back(slope);
  }
  // Every piece rests on at least min_points sizes: one point per piece interpolates the noise.
  std::size_t piece = 0;
  std::vector<int> count(knots.size() + 1, 0);
  for (const auto& p : pts) {
    while (piece < knots.size() && p.x >= knots[piece].x) ++piece;
    ++count[piece];
  }
  for (int n_piece : count) f.feasible = f.feasible && n_piece >= min_points;
  return f;
}

}  // namespace

PiecewiseFit fit_piecewise(const std::vector<WeightedPoint>& points, const LineBounds& bounds,
                           const PiecewiseOptions& options) {
  CS_ASSERT(!points.empty(), "fit_piecewise needs at least one point");
  const int n = static_cast<int>(points.size());
  // Candidate knots: the distinct sizes strictly inside the range.
  std::vector<double> candidates;
  for (int i = 1; i < n; ++i) {
    if (points[i].x > points[i - 1].x && points[i].x < points[n - 1].x)
      candidates.push_back(points[i].x);
  }
  const double floor_sse = n * options.noise_floor * options.noise_floor;
  // The BIC of a spline, n ln(SSE/n) + penalty x parameters x ln(n): a kink is one parameter, a
  // step options.jump_parameters (its height, and a position the data must place between two
  // sizes). SSE is floored at `floor`: floor_sse for the count kept (interpolating the noise must
  // not win), none while choosing the next knot.
  auto bic = [&](double sse, const std::vector<Knot>& ks, double floor) {
    double params = 0;
    for (const Knot& k : ks) params += k.jump ? options.jump_parameters : 1.0;
    return n * std::log(std::max(sse, floor) / n) +
           options.penalty_per_knot * params * std::log(double(n));
  };
  // No knot: the bounded line.
  const LineFit line = fit_line(points, bounds);
  SplineFit best{true, line.weighted_sse, {}, {line.intercept}, {line.slope}};
  double best_bic = bic(line.weighted_sse, {}, floor_sse);
  std::vector<Knot> knots;
  // Knots go in by least unfloored BIC whether or not the spline keeps the bounds yet (a knee
  // may need two knots before it does); the kept count is the feasible one of least BIC. Each
  // candidate size is tried as a kink and as a step (a step only with options.allow_jumps).
  for (int m = 1; m < options.max_segments && !candidates.empty(); ++m) {
    SplineFit step;
    double step_score = 0;
    std::size_t step_at = 0;
    bool any = false;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      for (bool jump : {false, true}) {
        if (jump && !options.allow_jumps) continue;
        std::vector<Knot> trial = knots;
        const Knot k{candidates[c], jump};
        trial.insert(std::upper_bound(trial.begin(), trial.end(), k), k);
        SplineFit f =
            fit_spline(points, trial, bounds, options.min_points_per_piece, options.min_jump);
        if (f.slopes.empty()) continue;  // rank-deficient
        // Feasible splines first, then the least SSE with the knots' cost.
        const double score = bic(f.sse, f.knots, 1e-300);
        if (!any || (f.feasible && !step.feasible) ||
            (f.feasible == step.feasible && score < step_score)) {
          step_score = score;
          step = std::move(f);
          step_at = c;
          any = true;
        }
      }
    }
    if (!any) break;
    knots = step.knots;
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(step_at));
    const double b = bic(step.sse, step.knots, floor_sse);
    if (step.feasible && b < best_bic) {
      best_bic = b;
      best = step;
    }
  }
  // The pieces, with their own points' residuals.
  PiecewiseFit out;
  for (std::size_t k = 0; k < best.slopes.size(); ++k) {
    Segment s;
    s.from_x = k == 0 ? 0 : best.knots[k - 1].x;
    s.to_x = k < best.knots.size() ? best.knots[k].x : kInf;
    s.fit.intercept = best.intercepts[k];
    s.fit.slope = best.slopes[k];
    s.first = -1;
    std::vector<WeightedPoint> own;
    for (int i = 0; i < n; ++i) {
      const bool first_piece_below = k == 0 && points[i].x < s.from_x;
      if ((points[i].x >= s.from_x || first_piece_below) && points[i].x < s.to_x) {
        if (s.first < 0) s.first = i;
        s.last = i;
        own.push_back(points[i]);
      }
    }
    if (!own.empty()) score(own, &s.fit);
    out.weighted_sse += s.fit.weighted_sse;
    out.max_rel_residual = std::max(out.max_rel_residual, s.fit.max_rel_residual);
    out.segments.push_back(s);
  }
  return out;
}

SaturatingFit fit_saturating(const std::vector<WeightedPoint>& points, double default_half) {
  std::vector<WeightedPoint> inv;  // 1/e against 1/x, relative weights
  double first_x = -1;
  bool several_x = false;
  for (const auto& p : points) {
    if (p.x <= 0 || p.y <= 0) continue;
    if (first_x < 0) first_x = p.x;
    if (std::fabs(p.x - first_x) > 1e-9 * first_x) several_x = true;
    inv.push_back({1.0 / p.x, 1.0 / p.y, p.y * p.y});
  }
  CS_ASSERT(!inv.empty(), "fit_saturating needs a point with x > 0 and y > 0");
  SaturatingFit out;
  out.points = static_cast<int>(inv.size());
  if (several_x) {
    // 1/e = 1/max + (half/max) / x; max <= 1 and half >= 0 are the bounds.
    const LineFit f = fit_line(inv, {1.0, 0.0});
    out.max = 1.0 / f.intercept;
    out.half = f.slope / f.intercept;
    out.half_identified = !f.slope_at_bound;
  } else {
    // One work size: 1/e = (1/max) (1 + half/x) with half held at its default.
    double num = 0, den = 0;
    for (const auto& p : inv) {
      const double c = 1 + default_half * p.x;
      num += p.weight * c * p.y;
      den += p.weight * c * c;
    }
    out.max = std::min(1.0, den / num);
    out.half = default_half;
  }
  for (const auto& p : points) {
    if (p.x <= 0 || p.y <= 0) continue;
    const double e = out.max * p.x / (p.x + out.half);
    out.max_rel_residual = std::max(out.max_rel_residual, std::fabs(p.y - e) / p.y);
  }
  return out;
}

namespace {

double median(std::vector<double> v) {
  CS_ASSERT(!v.empty(), "median of nothing");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void fit_collectives(const CalibrationInput& input, const CalibrationOptions& options,
                     Calibration* out) {
  std::map<std::tuple<int, int, int>, std::vector<const CollectiveSample*>> groups;
  for (const auto& s : input.collectives) {
    if (s.size_bytes <= 0 || s.time_s <= 0 || s.size_bytes < options.min_size_bytes) continue;
    groups[{static_cast<int>(s.op), s.ranks, s.nodes}].push_back(&s);
  }
  for (auto& [key, samples] : groups) {
    const auto op = static_cast<CollectiveOp>(std::get<0>(key));
    const int ranks = std::get<1>(key);
    const double factor = bus_bandwidth_factor(op, std::max(1, ranks));
    if (ranks < 2 || factor <= 0) continue;  // one rank moves nothing: no bandwidth to fit
    std::stable_sort(samples.begin(), samples.end(),
                     [](const auto* a, const auto* b) { return a->size_bytes < b->size_bytes; });
    std::vector<WeightedPoint> pts;
    for (const auto* s : samples)
      pts.push_back({s->size_bytes, s->time_s, 1.0 / (s->time_s * s->time_s)});
    // A piece's busbw is its marginal rate (time per extra byte). In a latency-bound piece it may
    // exceed the link: the transfer overlaps the fixed latency. Only its sign is bounded.
    const LineBounds bounds{0.0, factor / kFlatRegimeBusbwBps};
    const PiecewiseFit pw = fit_piecewise(pts, bounds, options.piecewise);
    CollectiveCalibration cc;
    cc.op = op;
    cc.ranks = ranks;
    cc.nodes = std::get<2>(key);
    for (const Segment& seg : pw.segments) {
      CollectiveRegime r;
      r.min_size_bytes = seg.from_x;
      r.max_size_bytes = seg.to_x;
      r.latency_s = seg.fit.intercept;
      r.busbw_Bps = factor / seg.fit.slope;
      r.points = seg.fit.points;
      r.rms_rel_residual = seg.fit.rms_rel_residual;
      r.max_rel_residual = seg.fit.max_rel_residual;
      cc.regimes.push_back(r);
    }
    out->collectives.push_back(std::move(cc));
  }
}

// One measured row of the transfer fit: its time and what the model's enabled candidates
// charge (latency, bandwidth term) before any correction.
struct TransferRow {
  double time_s = 0;
  struct Candidate {
    CollectiveAlgorithm algorithm;
    double latency_s, bandwidth_s;
    double fill_s;  // in latency_s; NCCL's tuner chooses without it
  };
  std::vector<Candidate> candidates;
};

// The time of the candidate NCCL picks under the correction, as estimate_collective would
// choose it (nccl_prefers: the shortest time without the fill).
double corrected_time(const TransferRow& row, const CollectiveCorrection& c) {
  double best_key = kInf, best = kInf;
  for (const auto& k : row.candidates) {
    double latency = k.latency_s, bandwidth = k.bandwidth_s;
    apply_correction(c, k.algorithm, &latency, &bandwidth);
    const double key = latency + bandwidth - k.fill_s;
    if (key < best_key) best_key = key, best = latency + bandwidth;
  }
  return best;
}

// Sum over rows of ln(predicted / measured)^2: relative, symmetric in over and under. The
// 1e-12 s floor only keeps the logarithm finite (a latency floored at 0 with no bytes).
double transfer_cost(const std::vector<TransferRow>& rows, const CollectiveCorrection& c) {
  double sum = 0;
  for (const auto& r : rows) {
    const double l = std::log(std::max(corrected_time(r, c), 1e-12) / r.time_s);
    sum += l * l;
  }
  return sum;
}

// Per op, the correction (extra latency a, bandwidth scale b) of least transfer_cost over the
// one-node rows of 2 or more ranks: a grid over a (linear) and b (logarithmic, 0.1 - 3), then
// three zooms around the best cell. Multi-node rows are left out: the fit needs the fabric (NICs,
// switches) the measurement file does not describe.
void fit_transfer(const CalibrationInput& input, const CalibrationOptions& options,
                  const GpuSpec& gpu, Calibration* out) {
  int max_ranks = 0;
  for (const auto& s : input.collectives) {
    if (s.nodes == 1) max_ranks = std::max(max_ranks, s.ranks);
  }
  if (max_ranks < 2) return;
  ClusterSketch sketch;
  sketch.gpu = gpu.id;
  sketch.gpus_per_node = max_ranks;
  auto cluster = cluster_from_sketch(sketch, "the measured node");
  if (!cluster) return;
  const CollectiveParams model;
  std::map<int, std::vector<TransferRow>> rows_by_op;
  std::map<int, std::vector<int>> ranks_by_op;
  for (const auto& s : input.collectives) {
    if (s.nodes != 1 || s.ranks < 2 || s.size_bytes <= 0 || s.time_s <= 0 ||
        s.size_bytes < options.min_size_bytes) {
      continue;
    }
    auto topo = collective_topology(*cluster, s.ranks);
    if (!topo) continue;
    TransferRow row{s.time_s, {}};
    for (const auto& e : enabled_collective_candidates(*topo, s.op, s.size_bytes, model,
                                                       input.nccl_disabled_algorithms)) {
      row.candidates.push_back({e.algorithm, e.latency_s, e.bandwidth_s, e.fill_s});
    }
    if (row.candidates.empty()) continue;
    rows_by_op[static_cast<int>(s.op)].push_back(std::move(row));
    auto& ranks = ranks_by_op[static_cast<int>(s.op)];
    if (std::find(ranks.begin(), ranks.end(), s.ranks) == ranks.end()) ranks.push_back(s.ranks);
  }
  for (auto& [op, rows] : rows_by_op) {
    double min_time = kInf, min_latency = kInf;
    for (const auto& r : rows) {
      min_time = std::min(min_time, r.time_s);
      for (const auto& c : r.candidates) min_latency = std::min(min_latency, c.latency_s);
    }
    // The search box, an assumption wide of anything measured: the bandwidth scale from 0.1 to 3
    // of the model's rate (logarithmic); the extra latency from minus the model's least latency
    // (none negative at the fitted sizes) to twice the fastest measured call. 61 x 61 cells, then
    // three zooms of 21 x 21 over +-1.5 cells around the best: each zoom shrinks the cell 7x, to
    // ~1e-4 of the box, far below the rows' ~1% run-to-run noise.
    double a_lo = -min_latency, a_hi = 2 * min_time;
    double lb_lo = std::log(0.1), lb_hi = std::log(3.0);
    double best_a = 0, best_lb = 0, best = kInf;
    int steps = 60;
    CollectiveCorrection trial{static_cast<CollectiveOp>(op), false, 0, 1, {}};
    for (int round = 0; round < 4; ++round) {
      const double da = (a_hi - a_lo) / steps, db = (lb_hi - lb_lo) / steps;
      for (int i = 0; i <= steps; ++i) {
        for (int j = 0; j <= steps; ++j) {
          const double a = a_lo + i * da, lb = lb_lo + j * db;
          trial.extra_latency_s = a;
          trial.bandwidth_scale = std::exp(lb);
          const double cost = transfer_cost(rows, trial);
          if (cost < best) best = cost, best_a = a, best_lb = lb;
        }
      }
      a_lo = best_a - 1.5 * da, a_hi = best_a + 1.5 * da;
      lb_lo = best_lb - 1.5 * db, lb_hi = best_lb + 1.5 * db;
      steps = 20;
    }
    CollectiveTransfer t;
    t.op = static_cast<CollectiveOp>(op);
    t.extra_latency_s = best_a;
    t.bandwidth_scale = std::exp(best_lb);
    t.fitted_ranks = ranks_by_op[op];
    std::sort(t.fitted_ranks.begin(), t.fitted_ranks.end());
    t.points = static_cast<int>(rows.size());
    trial.extra_latency_s = t.extra_latency_s;
    trial.bandwidth_scale = t.bandwidth_scale;
    double sq = 0;
    for (const auto& r : rows) {
      const double rel = corrected_time(r, trial) / r.time_s - 1;
      sq += rel * rel;
      t.max_rel_residual = std::max(t.max_rel_residual, std::fabs(rel));
    }
    t.rms_rel_residual = std::sqrt(sq / rows.size());
    out->transfer.push_back(t);
  }
}

// Per precision, the in-tile efficiency (ComputeParams::gemm_max_efficiency): each row's
// measured fraction of peak over the fraction the tile model lets its shape reach
// (gemm_shape_efficiency) estimates it; the median over the rows is the fit, robust to the
// few rows the tile model does not describe. Every row is kept: 512^3 and 1024^3 take ~7.7 us
// each on an H200 in scenarios/measurements/call8/h200-1gpu-shapes.json (34.8 and 279 TFLOP/s
// bf16), launch- and latency-bound where the tile model (fitted bf16 in-tile 0.713 at the cap)
// puts them at 2.0 and 4.1 us; the median is unmoved by them and max_rel_residual shows them.
// The rows are fitted at the clock they ran at: runs too short to reach the power cap give the
// full-clock rate (short_max_efficiency); runs at the cap (validate's 1 s rows, a burn:
// at_power_cap) give the capped one (max_efficiency), the full-clock rate then being
// the capped one over the GPU's cap (ComputeParams::sustained_clock), which they cannot show.
void fit_gemm(const CalibrationInput& input, const GpuSpec& gpu, Calibration* out) {
  const double cap_clock = default_compute_params(gpu).sustained_clock;
  for (Precision p :
       {Precision::kBf16, Precision::kFp16, Precision::kTf32, Precision::kFp8, Precision::kFp32}) {
    const double peak = gpu.peak_flops(p);
    if (peak <= 0) continue;
    ComputeParams shape_params;  // the tile model's own k overhead, at this precision's peak
    shape_params.gemm_k_overhead = gemm_k_overhead(gpu, p, shape_params);
    // Short full-clock runs; the capped ones split into timed rows and burns (tens of seconds:
    // a further thermal settling the rows may not show).
    std::vector<const GemmSample*> shorts, capped, sustained;
    for (const auto& g : input.gemm) {
      if (g.precision != p || g.flops_per_s <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) continue;
      (g.sustained ? sustained : at_power_cap(false, g.seconds) ? capped : shorts).push_back(&g);
    }
    const bool full_clock = !shorts.empty();
    const bool burns_only = !full_clock && capped.empty();
    const auto& fitted = full_clock ? shorts : burns_only ? sustained : capped;
    if (fitted.empty()) continue;
    std::vector<double> in_tile;
    in_tile.reserve(fitted.size());
    for (const GemmSample* g : fitted) {
      const double shape = gemm_shape_efficiency(gpu, {g->m, g->n, g->k}, shape_params);
      in_tile.push_back(g->flops_per_s / peak / shape);
    }
    ComputeParams params = shape_params;
    // Capped at the peak: the overlay holds fractions of it.
    params.gemm_max_efficiency = std::min(1.0, median(in_tile));
    // The fitted model's rate for a row: gemm_time, the tile model under its roofline.
    auto predicted_flops_per_s = [&](const GemmSample& g) {
      const KernelTime t = gemm_time(gpu, p, {g.m, g.n, g.k}, params);
      return t.flops / t.time_s;
    };
    GemmCalibration g;
    g.precision = p;
    g.max_efficiency = g.short_max_efficiency = params.gemm_max_efficiency;
    g.points = static_cast<int>(fitted.size());
    for (const GemmSample* s : fitted) {
      const double error = std::fabs(predicted_flops_per_s(*s) / s->flops_per_s - 1);
      g.max_rel_residual = std::max(g.max_rel_residual, error);
    }
    // A training run is a sustained burn: where one was measured, scale the ceiling to it (at
    // the 700 W cap an H100/H200 settles below its short-run rate: 780-795 TFLOP/s in short runs
    // of ml-engineering's MAMF finder, github.com/stas00/ml-engineering; 672 over a 30 s burn on
    // our H200s, validate/NOTES.md). Fitted on capped rows, the burn adds only what heat takes
    // after them.
    if (!burns_only && !sustained.empty()) {
      std::vector<double> ratios;
      ratios.reserve(sustained.size());
      for (const GemmSample* s : sustained) {
        ratios.push_back(s->flops_per_s / predicted_flops_per_s(*s));
      }
      const double ratio = median(ratios);
      if (ratio < 1) g.max_efficiency *= ratio;
    }
    if (!full_clock) g.short_max_efficiency = std::min(1.0, g.short_max_efficiency / cap_clock);
    g.sustained_scaled = g.max_efficiency < g.short_max_efficiency;
    out->gemm.push_back(g);
  }
}

void fit_attention(const CalibrationInput& input, const GpuSpec& gpu, Calibration* out) {
  const double peak = gpu.peak_flops(Precision::kBf16);  // the flash kernels run in bf16
  if (peak <= 0) return;
  // Validate's own kernel over every row; a production kernel over its causal rows (what a
  // decoder's training runs), applied to the planner.
  for (bool production : {false, true}) {
    for (bool backward : {false, true}) {
      std::vector<WeightedPoint> pts;
      for (const auto& a : input.attention) {
        if (a.production == production && (!production || a.causal) && a.backward == backward &&
            a.flops_per_s > 0 && a.kv_tokens > 0) {
          pts.push_back({a.kv_tokens, a.flops_per_s / peak, 1});
        }
      }
      if (pts.empty()) continue;
      const SaturatingFit f =
          fit_saturating(pts, ComputeParams{}.attention_half_efficiency_kv_tokens);
      out->attention.push_back(
          {backward, f.max, f.half, f.points, f.max_rel_residual,
           std::string(production ? kAttentionProductionKernel : kAttentionOwnKernel), production});
    }
  }
}

}  // namespace

Result<Calibration> fit_calibration(const CalibrationInput& input,
                                    const CalibrationOptions& options) {
  const GpuSpec* gpu = find_gpu(input.gpu_id);
  if (gpu == nullptr) {
    return Error{"calibrate: the measured GPU '" + input.gpu_id +
                 "' is not in the catalog (known: " + known_gpu_ids() + ")"};
  }
  Calibration c;
  c.gpu = gpu->id;
  c.sources = input.sources;
  c.nccl_disabled_algorithms = input.nccl_disabled_algorithms;
  fit_collectives(input, options, &c);
  fit_transfer(input, options, *gpu, &c);
  fit_gemm(input, *gpu, &c);
  fit_attention(input, *gpu, &c);
  if (!input.hbm_copy_Bps.empty() && gpu->hbm_Bps > 0) {
    c.hbm_copy_Bps = median(input.hbm_copy_Bps);
    c.hbm_efficiency = std::min(1.0, c.hbm_copy_Bps / gpu->hbm_Bps);
  }
  if (!input.h2d_Bps.empty()) c.h2d_Bps = median(input.h2d_Bps);
  if (!input.d2h_Bps.empty()) c.d2h_Bps = median(input.d2h_Bps);
  if (!input.p2p_Bps.empty()) c.p2p_Bps = median(input.p2p_Bps);
  if (c.collectives.empty() && c.gemm.empty() && c.attention.empty() && c.hbm_efficiency == 0 &&
      c.h2d_Bps == 0 && c.d2h_Bps == 0 && c.p2p_Bps == 0) {
    return Error{
        "calibrate: nothing to fit (no collective of 2 or more ranks, no GEMM, "
        "attention or bandwidth rate in the measurements)"};
  }
  return c;
}

}  // namespace clustersim::models
