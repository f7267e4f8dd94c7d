// The calibration overlay (schema "clustersim.calibration/1"): what `clustersim calibrate` fitted
// to measurements of one GPU model — piecewise alpha-beta regimes per collective and
// communicator, the GEMM in-tile efficiency, attention efficiency curves, HBM efficiency,
// host-link and peer-to-peer rates — and how it is read, written (YAML with units, as scenarios
// are) and applied on top of the catalog's model parameters (`plan`, `collective`, `check` via a
// scenario's `calibration:` key or --calibration FILE). Units: SI in the structs; the YAML
// carries unit strings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/catalog.h"
#include "models/collective_model.h"
#include "models/compute_model.h"
#include "models/result.h"

namespace clustersim::models {

struct ClusterConfig;
struct StepParams;

inline constexpr std::string_view kCalibrationSchema = "clustersim.calibration/1";

// One size regime of one collective: time_s = latency_s + size x busbw factor / busbw_Bps for
// min_size_bytes <= size < max_size_bytes, with the fit's quality on its own points.
struct CollectiveRegime {
  double min_size_bytes = 0;
  double max_size_bytes = 0;  // +inf for the last regime
  double latency_s = 0;
  double busbw_Bps = 0;
  int points = 0;
  double rms_rel_residual = 0;
  double max_rel_residual = 0;
};

// Every regime of one collective on one communicator shape (ranks over nodes), measured with
// NCCL's own algorithm choice: applied as CollectiveFits with algorithm and protocol kAuto.
struct CollectiveCalibration {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 1;
  int nodes = 1;
  std::vector<CollectiveRegime> regimes;  // in size order, contiguous
};

// The model's correction for one op (a CollectiveCorrection), fitted on every measured
// communicator of its scope at once: an extra latency per call and a factor on the bandwidth
// term's rate. It carries the calibration to communicator sizes that were not measured (8 GPUs
// from a 2-GPU run); the regimes above stay exact for the measured ones. The residuals are the
// corrected model's own, on the fitted rows.
struct CollectiveTransfer {
  CollectiveOp op = CollectiveOp::kAllReduce;
  bool multi_node = false;     // fitted on (and applied to) multi-node communicators, else one node
  double extra_latency_s = 0;  // added to the model's latency; may be negative
  double bandwidth_scale = 1;  // multiplies the model's bandwidth-term rate
  std::vector<int> fitted_ranks;  // the communicator sizes it was fitted on
  int points = 0;
  double rms_rel_residual = 0;
  double max_rel_residual = 0;
};

// GEMM efficiency for one precision: the in-tile maximum (ComputeParams::gemm_max_efficiency),
// which gemm_time() multiplies by the shape's tile/wave/split-K efficiency
// (gemm_shape_efficiency, compute_model.h).
struct GemmCalibration {
  Precision precision = Precision::kBf16;
  double max_efficiency = 0;  // what a training run sustains at the power cap (the planner's)
  // The in-tile maximum at full clock: fitted on runs too short to reach the power cap, or, where
  // every run reached it, the capped rate over the GPU's cap (ComputeParams::sustained_clock).
  double short_max_efficiency = 0;
  int points = 0;                 // rows the maximum was fitted on
  bool sustained_scaled = false;  // max_efficiency below short_max_efficiency: the cap's clock
  double max_rel_residual = 0;      // the short-run model's worst |error| / measured on those rows
};

// The kernels an attention curve is fitted on: validate's own teaching kernel (mma.sync, ~27% of
// the H200 bf16 peak: recorded, not applied) and PyTorch's scaled_dot_product_attention, a
// production kernel measured on the same GPU (its causal rows: applied to the planner).
inline constexpr std::string_view kAttentionOwnKernel = "clustersim-flash";
inline constexpr std::string_view kAttentionProductionKernel = "torch-sdpa";

// Flash attention efficiency over sequence length: max * kv / (kv + half_kv_tokens), as the
// measured kernel reached it. apply_calibration applies the production kernel's curves only.
struct AttentionCalibration {
  bool backward = false;
  double max_efficiency = 0;
  double half_kv_tokens = 0;
  int points = 0;
  double max_rel_residual = 0;
  std::string source = std::string(kAttentionOwnKernel);  // one of the two above
  bool applied = false;  // source == kAttentionProductionKernel; the loader checks it
};

struct Calibration {
  std::string gpu;                   // catalog id of the GPU it was measured on
  std::vector<std::string> sources;  // the measurement files, with their SHA-256
  std::vector<CollectiveCalibration> collectives;
  std::vector<CollectiveTransfer> transfer;
  std::vector<GemmCalibration> gemm;
  std::vector<AttentionCalibration> attention;
  double hbm_efficiency = 0;        // measured device copy over the datasheet; 0 = not measured
  double hbm_copy_Bps = 0;          // the measured rate (read + written)
  double h2d_Bps = 0, d2h_Bps = 0;  // pinned host<->device per GPU; 0 = not measured
  double p2p_Bps = 0;               // one-way GPU-to-GPU; 0 = not measured
  // NCCL algorithms the measured runs had switched off (NCCL_NVLS_ENABLE=0, NCCL_ALGO).
  std::vector<std::string> nccl_disabled_algorithms;
  std::string path;  // the file it was read from ("" when built in memory)
};

// The YAML text of `c`: a header comment, then every field with its unit ("12.5us", "370GB/s",
// byte sizes as "65536B"), numbers to 6 significant digits.
std::string to_yaml_text(const Calibration& c);

// Reads an overlay. Fails with "file:line:col: key: what is wrong" on a wrong schema, an unknown
// key, a bare number where a unit is needed, an unknown op / GPU / precision, or regimes that are
// not contiguous in size.
Result<Calibration> load_calibration_file(const std::string& path);
Result<Calibration> load_calibration_text(std::string_view yaml_text, const std::string& origin);

// Fails when the overlay was measured on another GPU model than the cluster's (its numbers would
// not hold); "file: measured on X, but the cluster's GPU is Y".
Status check_calibration_gpu(const Calibration& c, const ClusterConfig& cluster);

// The collective regimes as CollectiveFits (algorithm and protocol kAuto, ranks, nodes, size
// range), put ahead of the fits `params` already has so that the overlay wins, and the transfer
// entries as CollectiveCorrections, likewise ahead, excluding the algorithms the runs had off.
void apply_calibration(const Calibration& c, CollectiveParams* params);

// What predicts `op` on a communicator of `ranks` over `nodes` under `c`: "fit" (its regimes
// were measured on that shape), "transfer" (the op's correction of that scope), or "model" (the
// uncalibrated model).
std::string_view calibration_basis(const Calibration& c, CollectiveOp op, int ranks, int nodes);
// GEMM (the given precision's short-run in-tile maximum as gemm_max_efficiency and, where a
// sustained burn was measured, its ratio to that as sustained_clock), HBM efficiency and the
// applied attention curves (forward sets the half-efficiency length); fields the overlay did not
// measure keep their value.
void apply_calibration(const Calibration& c, Precision precision, ComputeParams* params);
// Both of the above for a training step on `cluster`, after check_calibration_gpu.
Status apply_calibration(const Calibration& c, const ClusterConfig& cluster, Precision precision,
                         StepParams* params);

}  // namespace clustersim::models
