// Fitting the models' parameters to measurements (Eigen least squares): straight lines with
// lower bounds, piecewise lines over size regimes (the alpha-beta law of one NCCL collective,
// one line per regime where NCCL switches protocol, algorithm or channel count), saturating
// efficiency curves (attention over sequence length), the GEMM in-tile efficiency under the tile
// model (compute_model.h), and the whole overlay from plain measurement samples. Units: bytes,
// seconds, FLOP, FLOP/s, bytes/s. Pure functions; deterministic; nothing is cached.
#pragma once

#include <string>
#include <vector>

#include "models/calibration.h"
#include "models/catalog.h"
#include "models/collective_model.h"
#include "models/compute_model.h"
#include "models/result.h"

namespace clustersim::models {

// One observation y at x with weight w (> 0). Relative least squares uses w = 1 / y^2, so that a
// 10 us point and a 100 ms point count alike.
struct WeightedPoint {
  double x = 0;
  double y = 0;
  double weight = 1;
};

// y = intercept + slope x with intercept >= min_intercept and slope >= min_slope.
struct LineBounds {
  double min_intercept = 0;
  double min_slope = 0;
};

struct LineFit {
  double intercept = 0;
  double slope = 0;
  double weighted_sse = 0;      // sum of w (y - fit)^2
  double rms_rel_residual = 0;  // sqrt(mean ((y - fit) / y)^2), what a report shows
  double max_rel_residual = 0;  // max |y - fit| / |y|
  int points = 0;
  bool intercept_at_bound = false;  // the bound was active (the free fit went below it)
  bool slope_at_bound = false;
  double predict(double x) const { return intercept + slope * x; }
};

// Weighted least squares with lower bounds: the free solution (QR of sqrt(W) A), or, where it
// breaks a bound, the best fit with that parameter held at its bound (an exact active-set
// solution for two parameters). REQUIRES: at least one point, every weight > 0.
LineFit fit_line(const std::vector<WeightedPoint>& points, const LineBounds& bounds);

// One piece of a piecewise-linear fit: the points [first, last] (indices into the
// sorted input) and its line, valid for from_x <= x < to_x.
struct Segment {
  int first = 0;
  int last = 0;
  double from_x = 0;
  double to_x = 0;  // +inf for the last piece
  LineFit fit;      // intercept and slope of this piece; SSE over its own points
};

struct PiecewiseOptions {
  int max_segments = 12;  // pieces at most
  // Relative noise floor: fitting the rows better than this (rms) earns nothing in the BIC, so
  // that interpolating every point does not win by -infinity. 1%: NCCL's run-to-run spread at
  // one size (nccl-tests rounds on one node, scenarios/measurements/h200-2gpu-rounds/).
  double noise_floor = 0.01;
  // BIC penalty per knot, in units of ln(n) (Schwarz 1978: one per parameter; a knot adds one
  // slope change).
  double penalty_per_knot = 1;
  // Knots may also be steps (the time jumps at a size): NCCL picks protocol and algorithm by its
  // own model, so the measured time can jump where the choice changes (2 x H200 all_reduce in
  // scenarios/measurements/call7/h200-2gpu.json: 15 us at 1 MiB, 29 us at 2 MiB).
  bool allow_jumps = true;
  double jump_parameters = 2;    // what a step counts in the BIC (a kink: 1)
  int min_points_per_piece = 2;  // distinct-or-repeated rows each piece must rest on
  // A step must change the time by at least this fraction: NCCL's switches move it by tens of
  // percent (call7/h200-2gpu.json: +90% from 1 to 2 MiB), noise by a few.
  double min_jump = 0.15;
};

struct PiecewiseFit {
  std::vector<Segment> segments;  // in x order, contiguous; continuous at kinks, not at steps
  double weighted_sse = 0;
  double max_rel_residual = 0;
};

// A piecewise-linear least-squares fit (a linear spline, y = a + b x + sum_j c_j max(0, x - k_j)
// over its kinks + sum_j d_j [x >= s_j] over its steps) with its knots at sizes of the data: the
// alpha-beta law piece by piece where NCCL changes protocol, algorithm or channel count with the
// size, continuous at a kink, jumping at a step (options.allow_jumps). Knots are
// added greedily (the one that lowers the weighted SSE most), only where every piece keeps
// slope >= bounds.min_slope and intercept >= bounds.min_intercept (a latency), up to
// max_segments - 1; the knot count kept is the feasible one of least BIC, n ln(SSE/n) + p m ln(n)
// with SSE floored at n x noise_floor^2 (relative weights 1 / y^2 assumed). No knot: fit_line.
// REQUIRES: points sorted by x, at least one, weights > 0.
PiecewiseFit fit_piecewise(const std::vector<WeightedPoint>& points, const LineBounds& bounds,
                           const PiecewiseOptions& options);

// A saturating efficiency e(x) = max * x / (x + half): 1/e = 1/max + (half/max) (1/x) is a line
// in 1/x, fitted with relative weights. With every x equal (one size) `half` cannot be told
// from `max`: the fit keeps `default_half` and solves max from the mean.
struct SaturatingFit {
  double max = 0;
  double half = 0;
  int points = 0;
  bool half_identified = false;
  double max_rel_residual = 0;
};
// REQUIRES: at least one point with x > 0 and 0 < y. max is capped at 1 (a fraction of peak).
SaturatingFit fit_saturating(const std::vector<WeightedPoint>& points, double default_half);

// ---- The overlay from measurements ----------------------------------------------------------

// One collective sweep row: nccl-tests' size column and the measured time.
struct CollectiveSample {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 1;
  int nodes = 1;
  double size_bytes = 0;
  double time_s = 0;
};

struct GemmSample {
  Precision precision = Precision::kBf16;
  double m = 0, n = 0, k = 0;
  double flops_per_s = 0;
  bool sustained = false;  // a burn of tens of seconds (power and heat settled)
  double seconds = 0;      // the timed region's length (0: not recorded, read as a short run)
};

struct AttentionSample {
  bool backward = false;
  double kv_tokens = 0;  // the sequence length (self-attention)
  double flops_per_s = 0;
  // A production kernel (PyTorch's scaled_dot_product_attention: FlashAttention-2 / cuDNN), whose
  // curve the planner applies, rather than validate's own teaching kernel (recorded only).
  bool production = false;
  bool causal = false;
};

// Plain samples gathered from one or more measurement files (validate/ converts them).
struct CalibrationInput {
  std::string gpu_id;                // catalog id of the measured GPU
  std::vector<std::string> sources;  // "file sha256:..." for the overlay's header
  std::vector<CollectiveSample> collectives;
  std::vector<GemmSample> gemm;
  std::vector<AttentionSample> attention;
  std::vector<double> hbm_copy_Bps;  // read + written
  std::vector<double> h2d_Bps, d2h_Bps, p2p_Bps;
  std::vector<std::string> nccl_disabled_algorithms;  // from the run's environment
};

inline constexpr double kFlatRegimeBusbwBps = 1e14;  // 100 TB/s, far above any link

struct CalibrationOptions {
  PiecewiseOptions piecewise;
  // Rows below this size are left out of the collective fits (0: all).
  double min_size_bytes = 0;
};

// Fits everything the input allows: per (op, ranks, nodes) the piecewise alpha-beta regimes of
// the time (piecewise alpha-beta, relative weights, latency >= 0, busbw at most
// kFlatRegimeBusbwBps: a piece's busbw is its marginal rate, which in a latency-bound piece can
// exceed the link, the transfer overlapping the fixed latency); per op, the model's transfer
// correction (extra latency, bandwidth scale: least squared log error over every one-node
// communicator of 2 or more ranks, under the run's disabled algorithms); per precision the GEMM
// in-tile efficiency, the median over the short rows of measured / (peak x
// gemm_shape_efficiency), scaled to the sustained burn where one was run; attention efficiency over
// sequence length; HBM efficiency; host link and peer-to-peer rates. Several runs of one size are
// all kept (the fit averages them). Fails when the GPU is not in the catalog or nothing can be
// fitted.
Result<Calibration> fit_calibration(const CalibrationInput& input,
                                    const CalibrationOptions& options = {});

}  // namespace clustersim::models
