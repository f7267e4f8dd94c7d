#include "validate/prediction_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/physical_floor.h"
#include "models/units.h"
#include "validate/measurement_samples.h"

namespace clustersim::validate {

CollectiveTimePredictor analytic_collective_predictor(const models::ClusterConfig& cluster,
                                                      const models::CollectiveParams& params,
                                                      const std::vector<std::string>& disabled) {
  return [cluster, params, disabled](models::CollectiveOp op, int ranks,
                                     double size_bytes) -> models::Result<double> {
    auto topo = models::collective_topology(cluster, ranks);
    if (!topo) return topo.error();
    auto e = models::cheapest_enabled_collective(*topo, op, size_bytes, params, disabled);
    if (!e) return e.error();
    return e->time_s;
  };
}

ComparisonInputs analytic_comparison_inputs(const models::ClusterConfig& cluster,
                                            const Measurement& m,
                                            const models::CollectiveParams& params) {
  ComparisonInputs in;
  in.cluster = cluster;
  in.compute = models::default_compute_params(cluster.node.gpu);
  in.collective = analytic_collective_predictor(cluster, params, nccl_disabled_algorithms(m));
  return in;
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void set_error(ComparedRow* r) {
  r->error = r->predicted > 0 && r->measured > 0 ? r->predicted / r->measured - 1 : 0;
}

void compare_collectives(const Measurement& m, const ComparisonInputs& in, Comparison* out) {
  for (std::size_t i = 0; i < m.collectives.size(); ++i) {
    const CollectiveRow& row = m.collectives[i];
    models::CollectiveOp op;
    const double t = row_time_s(row);
    if (!models::parse_collective_op(row.op, &op) || t <= 0) continue;
    ComparedRow r;
    r.group = row.op + " x" + std::to_string(row.ranks);
    r.label = models::format_size(double(row.size_bytes));
    r.quantity = "time_s";
    r.size_bytes = double(row.size_bytes);
    r.measured = t;
    r.held_out = i < in.held_out.size() && in.held_out[i];
    r.in_range = r.size_bytes >= in.min_size_bytes && r.size_bytes <= in.max_size_bytes;
    if (in.collective) {
      auto p = in.collective(op, row.ranks, r.size_bytes);
      if (p) r.predicted = std::max(*p, row.gpus_per_thread * kNcclTestsLaunchPerGpuS);
    }
    set_error(&r);
    if (in.calibration != nullptr) {
      // The key the fit used (validate::calibration_input): the file's hosts.
      r.basis = models::calibration_basis(*in.calibration, op, row.ranks, nodes_of(m, row.ranks));
    }
    const models::CollectiveFloor f =
        models::collective_floor(models::floor_hardware(in.cluster, row.ranks), op, r.size_bytes);
    r.floor = f.time_s;
    r.floor_why = f.explanation;
    r.impossible = f.time_s > 0 && t < f.time_s * (1 - 1e-9);
    if (row.out_of_place.wrong > 0 || row.in_place.wrong > 0) {
      r.floor_why += "; the run reported wrong elements";
    }
    out->rows.push_back(r);
  }
}

void compare_gemm(const Measurement& m, const ComparisonInputs& in, Comparison* out) {
  const models::GpuSpec& gpu = in.cluster.node.gpu;
  for (const GemmRate& g : m.gemm) {
    models::Precision p;
    if (!models::parse_precision(g.precision, &p) || g.tflops <= 0) continue;
    const double peak = gpu.peak_flops(p);
    if (peak <= 0) continue;
    ComparedRow r;
    r.group = "gemm " + g.precision + (g.sustained ? " sustained" : "");
    r.label = std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
              " rank " + std::to_string(g.rank);
    r.quantity = "flops_per_s";
    r.measured = g.tflops * 1e12;
    // The calibrated curve of this precision, where the overlay has one; FP8 and FP4 at their
    // own in-tile ratio and tile fixed time (what the step model runs them with).
    models::ComputeParams compute = in.compute;
    if (in.calibration) models::apply_calibration(*in.calibration, p, &compute);
    compute = models::gemm_params(gpu, p, compute);
    // A run too short to reach the power cap is held to the full clock; a burn, or a run long
    // enough for the clock to settle (validate's 1 s rows), to the cap's sustained clock.
    if (models::at_power_cap(g.sustained, g.seconds)) {
      compute = models::at_clock(compute, compute.sustained_clock);
    }
    const models::KernelTime k =
        models::gemm_time(gpu, p, {double(g.m), double(g.n), double(g.k)}, compute);
    r.predicted = k.time_s > 0 ? k.flops / k.time_s : 0;
    set_error(&r);
    r.floor = peak;
    r.floor_why = gpu.id + " dense " + g.precision + " peak " + models::format_flops(peak);
    r.impossible = r.measured > peak * (1 + 1e-9);
    out->rows.push_back(r);
  }
}

void compare_bandwidth(const Measurement& m, const ComparisonInputs& in, Comparison* out) {
  const models::GpuSpec& gpu = in.cluster.node.gpu;
  const models::Calibration* cal = in.calibration;
  for (const BandwidthRate& b : m.bandwidth) {
    if (b.GBps <= 0) continue;
    ComparedRow r;
    r.group = b.kind;
    r.label =
        "rank " + std::to_string(b.rank) + (b.peer >= 0 ? " -> " + std::to_string(b.peer) : "");
    r.quantity = "Bps";
    r.measured = b.GBps * 1e9;
    if (b.kind == "hbm_copy") {
      // A device copy reads and writes: the datasheet bandwidth bounds the sum.
      r.predicted = gpu.hbm_Bps * in.compute.hbm_efficiency;
      r.floor = gpu.hbm_Bps;
      r.floor_why = gpu.id + " HBM " + models::format_bandwidth(gpu.hbm_Bps) + " (datasheet)";
    } else if (b.kind == "h2d" || b.kind == "d2h") {
      if (cal) r.predicted = b.kind == "h2d" ? cal->h2d_Bps : cal->d2h_Bps;
      r.floor = gpu.pcie_Bps();
      r.floor_why = "PCIe gen" + std::to_string(gpu.pcie_gen) + " x" +
                    std::to_string(gpu.pcie_lanes) + " " + models::format_bandwidth(r.floor) +
                    " per direction";
    } else if (b.kind == "p2p" || b.kind == "p2p_bidirectional") {
      if (cal && b.kind == "p2p") r.predicted = cal->p2p_Bps;
      const double lanes = b.kind == "p2p" ? 1 : 2;
      r.floor = lanes * in.cluster.node.scale_up.per_gpu_Bps;
      r.floor_why = in.cluster.node.scale_up.id + " " + models::format_bandwidth(r.floor) +
                    (lanes > 1 ? " both directions" : " per direction");
    } else {
      continue;
    }
    set_error(&r);
    r.impossible = r.floor > 0 && r.measured > r.floor * (1 + 1e-9);
    out->rows.push_back(r);
  }
}

}  // namespace

Comparison compare_measurement(const Measurement& m, const ComparisonInputs& in) {
  Comparison out;
  compare_collectives(m, in, &out);
  compare_gemm(m, in, &out);
  compare_bandwidth(m, in, &out);
  // Statistics per (group, held out), in the order groups first appear.
  std::vector<std::pair<std::string, bool>> order;
  std::map<std::pair<std::string, bool>, std::vector<const ComparedRow*>> by;
  for (const ComparedRow& r : out.rows) {
    out.impossible_rows += r.impossible ? 1 : 0;
    if (r.predicted <= 0 || !r.in_range) continue;
    const auto key = std::make_pair(r.group, r.held_out);
    if (by.find(key) == by.end()) order.push_back(key);
    by[key].push_back(&r);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
  for (const auto& key : order) {
    GroupStats s;
    s.group = key.first;
    s.held_out = key.second;
    s.basis = by[key].front()->basis;
    std::vector<double> errs;
    for (const ComparedRow* r : by[key]) {
      errs.push_back(std::fabs(r->error));
      if (std::fabs(r->error) >= s.max_abs_error) {
        s.max_abs_error = std::fabs(r->error);
        s.worst_label = r->label;
      }
    }
    s.rows = static_cast<int>(errs.size());
    s.median_abs_error = median(errs);
    out.stats.push_back(s);
  }
  return out;
}

}  // namespace clustersim::validate
