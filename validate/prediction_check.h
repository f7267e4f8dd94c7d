// Predicted vs measured for every row of a measurement file (`clustersim check`): collective
// times, GEMM rates, HBM / host-link / peer-to-peer bandwidth, each with its relative error, the
// physical floor it is held to (a measured figure beyond it is impossible), and per group the
// median and largest absolute error, apart for fitted and held-out rows. The collective
// predictor is a function, so that the analytic model (now) and the simulator (later) plug in
// alike. Units: SI (seconds, FLOP/s, bytes/s).
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "models/calibration.h"
#include "models/collective_model.h"
#include "models/compute_model.h"
#include "models/scenario.h"
#include "validate/measurement.h"

namespace clustersim::validate {

// Predicted time in seconds of one collective of nccl-tests size `size_bytes` over the first
// `ranks` GPUs of the cluster.
using CollectiveTimePredictor =
    std::function<models::Result<double>(models::CollectiveOp op, int ranks, double size_bytes)>;

// The analytic model as a predictor: the cheapest (algorithm, protocol) NCCL would choose, leaving
// out the algorithms `disabled` names (the run's NCCL_NVLS_ENABLE=0, NCCL_ALGO), with `params`
// (calibration fits included). Copies its arguments.
CollectiveTimePredictor analytic_collective_predictor(const models::ClusterConfig& cluster,
                                                      const models::CollectiveParams& params,
                                                      const std::vector<std::string>& disabled);

// What nccl-tests' host thread spends launching one GPU's kernel of a collective: a thread
// driving g GPUs (its "nGpus") starts them one after another every iteration, so no call is
// timed faster than g times this. One process driving 8 x H100 measures 35-38 us for every
// collective up to 64 KiB (together-nccl-tests, scenarios/measurements/public: all_reduce ring
// and NVLS, all_gather, reduce_scatter alike), where the GPUs' own time is 11-15 us: 35.3 / 8.
// Compared rows whose measurement names its nGpus are predicted no faster than that.
inline constexpr double kNcclTestsLaunchPerGpuS = 4.4e-6;

struct ComparedRow {
  std::string group;      // "all_reduce x2", "gemm bf16", "hbm_copy", "h2d", "d2h", "p2p"
  std::string label;      // "64 KiB", "8192x8192x8192", "rank 0"
  std::string quantity;   // "time_s" | "flops_per_s" | "Bps"
  double size_bytes = 0;  // collectives: nccl-tests' size column
  double measured = 0;
  double predicted = 0;     // 0 = no prediction (no model for it)
  double error = 0;         // predicted / measured - 1
  bool held_out = false;    // not used by the fit it is checked against
  bool in_range = true;     // inside the size range the statistics cover
  bool impossible = false;  // the measured figure is beyond its physical floor
  double floor = 0;         // least time, or most rate, the hardware allows
  std::string floor_why;
  // Collectives under a calibration: "fit" (regimes of this communicator), "transfer" (the op's
  // correction, carried from other communicator sizes) or "model"; "" otherwise.
  std::string basis;
};

struct GroupStats {
  std::string group;
  bool held_out = false;
  int rows = 0;
  double median_abs_error = 0;
  double max_abs_error = 0;
  std::string worst_label;  // the row of the largest error
  std::string basis;        // its rows' ComparedRow::basis
};

struct Comparison {
  std::vector<ComparedRow> rows;
  std::vector<GroupStats> stats;  // per group, fitted rows first then held-out rows
  int impossible_rows = 0;
};

struct ComparisonInputs {
  models::ClusterConfig cluster;
  models::ComputeParams compute;
  const models::Calibration* calibration = nullptr;  // host-link / p2p predictions, if measured
  CollectiveTimePredictor collective;
  std::vector<bool> held_out;  // per m.collectives index; empty = none
  double min_size_bytes = 0;   // statistics cover collective rows in [min, max]
  double max_size_bytes = std::numeric_limits<double>::infinity();
};

// Inputs that compare `m` with the analytic model of `cluster` and `params` (uncalibrated by
// default): the GPU's compute defaults, and NCCL's choice without the algorithms the run
// switched off. Callers add a calibration, held-out rows or a size range.
ComparisonInputs analytic_comparison_inputs(const models::ClusterConfig& cluster,
                                            const Measurement& m,
                                            const models::CollectiveParams& params = {});

// Compares every row. Collective rows the predictor refuses keep predicted 0 (not in the
// statistics); rows with wrong elements are compared but flagged in floor_why.
Comparison compare_measurement(const Measurement& m, const ComparisonInputs& in);

}  // namespace clustersim::validate
