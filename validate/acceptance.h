// The acceptance verdict for a rented cluster (`clustersim verify`): the acceptance checks 1-10 of
// docs/acceptance-checks.md judged on a measurement file — GPU identity, virtualization,
// PCIe link, ECC / row remaps / NVLink health, throttling, sustained GEMM, HBM, host links,
// peer-to-peer, one-node and multi-node all_reduce, NCCL transport, spread between GPUs and
// nodes. Each check: PASS / WARN / FAIL / SKIP (not measured) with the measured value, the
// threshold, why, and the source of the threshold. Pure: reads the measurement, prints nothing.
#pragma once

#include <string>
#include <vector>

#include "validate/measurement.h"

namespace clustersim::validate {

enum class CheckStatus { kPass, kWarn, kFail, kSkip };
std::string_view to_string(CheckStatus s);  // "PASS", "WARN", "FAIL", "SKIP"

struct AcceptanceCheck {
  int number = 0;         // the check's number in docs/acceptance-checks.md (1-10)
  std::string id;         // "identity", "pcie_link", "all_reduce_one_node", "nccl_transport", ...
  std::string title;
  CheckStatus status = CheckStatus::kSkip;
  std::string measured;   // what the file shows, in words and units
  std::string threshold;  // what it must reach
  std::string why;        // the reasoning (which GPU, which row, what a failure means)
  std::string source;     // the threshold's public source (datasheet, health-check suite, issue)
};

// What the buyer was promised: `--expect SKU --gpus N --nics N --nic ib-ndr`. Empty / 0: taken
// from the measurement (the SKU its PCI ids name) or not checked.
struct AcceptanceExpectation {
  std::string sku;
  int gpus = 0;
  int nics_per_node = 0;
  std::string nic;
};

// One size of the all_reduce sweep for the report's plot.
struct BusbwPoint {
  double size_bytes = 0;
  double measured_Bps = 0;
  double expected_Bps = 0;  // the analytic model on the expected hardware (0 = none)
};

struct AcceptanceResult {
  std::string sku;  // the catalog GPU judged against
  int gpus = 0;
  int nodes = 1;
  std::vector<AcceptanceCheck> checks;
  // The one-node all_reduce sweep and its threshold (check 8), for the plot.
  std::vector<BusbwPoint> all_reduce_curve;
  int all_reduce_ranks = 0;
  double all_reduce_threshold_Bps = 0;
  bool any_failed() const;
  int count(CheckStatus s) const;
};

// Runs every check. Thresholds (each check's `source` names where it comes from; most are
// Azure/azurehpc-health-checks' limits for 8 x H100): sustained bf16 GEMM >= 0.9 x the
// SKU's sustained reference (models::default_compute_params: about 680 TFLOP/s for H100/H200 at
// 700 W, measured, not the 989 datasheet); HBM copy >= 0.85 x datasheet; pinned host copies
// >= 48 GB/s on Gen5 (scaled by the PCIe generation); NVLink P2P >= 335 GB/s one way on NVLink4
// (scaled by the scale-up bandwidth); one-node all_reduce at 8-16 GiB >= 460 GB/s busbw with NVLS,
// >= 350 without (8 x H100/H200), for other GPU counts scaled by the analytic model's busbw
// ratio (model(n) / model(8), NVLS as the run's environment had it) and, extrapolated so, a WARN
// within 5% under it, a FAIL further down; multi-node all_reduce >=
// 0.9 x NICs x 0.96 x line rate per node (48 GB/s for 400G NDR); no NET/Socket transport;
// per-GPU GEMM and HBM within 10% of the median.
AcceptanceResult run_acceptance(const Measurement& m, const AcceptanceExpectation& expect);

}  // namespace clustersim::validate
