// `clustersim check MEASUREMENTS.json`: predicted vs measured for every row of a measurement
// file — collective times, GEMM rates, HBM / host-link / peer-to-peer bandwidth — with each row's
// error, the per-group median and largest absolute error, and IMPOSSIBLE where a measured figure
// beats its physical floor. With --holdout it cross-validates: fits a calibration on part of the
// sizes and reports the fitted and the held-out rows apart. The cluster is the scenario's
// (--scenario) or the measured one (its GPU model, GPU count, one node). Exit 1 when a row is
// impossible or an error gate (--max-median-error / --max-error on held-out rows) is missed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "models/calibration_fit.h"
#include "models/units.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/measurement_input.h"
#include "tools/range_option.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"
#include "validate/measurement_samples.h"
#include "validate/prediction_check.h"

namespace clustersim::tools {
namespace {

using models::format_percent;
using models::format_significant;

struct CheckArgs {
  std::vector<std::string> files;
  std::string scenario;
  std::string calibration;
  std::string holdout = "none";
  std::string sizes;  // "64KiB:8GiB"
  bool json = false;
  bool summary = false;
  double max_median_error = 0;  // 0 = no gate
  double max_error = 0;
};

std::string value_text(const validate::ComparedRow& r, double v) {
  if (v <= 0) return "-";
  if (r.quantity == "time_s") return models::format_time(v);
  if (r.quantity == "flops_per_s") return models::format_flops(v);
  return models::format_bandwidth(v);
}

// "fitted" / "held_out" in a cross-validation, "all" otherwise.
std::string set_name(bool cross_validation, bool held_out) {
  return !cross_validation ? "all" : held_out ? "held_out" : "fitted";
}

nlohmann::json comparison_json(const validate::Comparison& c, const std::string& mode,
                               const models::ClusterConfig& cluster, bool cross_validation) {
  using nlohmann::json;
  json rows = json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"group", r.group},
                    {"label", r.label},
                    {"quantity", r.quantity},
                    {"size_bytes", r.size_bytes},
                    {"measured", r.measured},
                    {"predicted", r.predicted > 0 ? json(r.predicted) : json(nullptr)},
                    {"error", r.predicted > 0 ? json(r.error) : json(nullptr)},
                    {"held_out", r.held_out},
                    {"in_range", r.in_range},
                    {"impossible", r.impossible},
                    {"floor", r.floor},
                    {"floor_why", r.floor_why},
                    {"basis", r.basis.empty() ? json(nullptr) : json(r.basis)}});
  }
  json stats = json::array();
  for (const auto& s : c.stats) {
    stats.push_back(
        {{"group", s.group},
         {"set", set_name(cross_validation, s.held_out)},
         {"rows", s.rows},
         {"median_abs_error", s.median_abs_error},
         {"max_abs_error", s.max_abs_error},
         {"worst", s.worst_label},
         {"basis", s.basis.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.basis)}});
  }
  return {{"mode", mode},
          {"cluster",
           {{"gpu", cluster.node.gpu.id},
            {"gpus_per_node", cluster.node.gpus_per_node},
            {"nodes", cluster.nodes}}},
          {"impossible_rows", c.impossible_rows},
          {"rows", rows},
          {"stats", stats}};
}

int run_check(const CheckArgs& a) {
  const std::string cmd = "check";
  auto loaded = load_measurements(a.files, a.scenario, "--scenario");
  if (!loaded) return fail_bad_input(cmd, loaded.message());
  if (loaded->size() != 1) {
    return fail_bad_input(cmd, "one measurement at a time: several nccl-tests logs make one, "
                               "measurement files (JSON) do not merge");
  }
  const validate::MeasurementFile* file = &loaded->front();
  const validate::Measurement& m = file->data;

  // 1. The cluster and the calibration to predict with.
  models::ClusterConfig cluster;
  std::string scenario_calibration;
  if (!a.scenario.empty()) {
    auto sc = models::load_scenario_file(a.scenario);
    if (!sc) return fail_bad_input(cmd, sc.message());
    cluster = sc->cluster;
    scenario_calibration = sc->calibration_path;
  } else {
    auto c = validate::measured_cluster(m);
    if (!c) return fail_bad_input(cmd, file->path + ": " + c.message());
    cluster = *c;
  }
  validate::Holdout holdout = validate::Holdout::kNone;
  if (a.holdout == "every-other") holdout = validate::Holdout::kEveryOther;
  if (a.holdout == "upper-half") holdout = validate::Holdout::kUpperHalf;
  if (holdout != validate::Holdout::kNone && !a.calibration.empty()) {
    return fail_bad_input(cmd,
                          "--holdout fits its own calibration on the other rows: drop "
                          "--calibration");
  }
  models::CollectiveParams params;
  std::optional<models::Calibration> calibration;
  std::string mode = "uncalibrated analytic model";
  std::vector<bool> held_out;
  if (holdout != validate::Holdout::kNone) {
    held_out = validate::held_out_rows(m, holdout);
    auto input = validate::calibration_input({*file}, {held_out});
    if (!input) return fail_bad_input(cmd, input.message());
    auto fit = models::fit_calibration(*input);
    if (!fit) return fail_bad_input(cmd, fit.message());
    calibration = std::move(*fit);
    mode = "calibrated on the other rows, holdout " + a.holdout;
  } else {
    auto c = calibration_for(a.calibration, scenario_calibration, cluster);
    if (!c) return fail_bad_input(cmd, c.message());
    calibration = std::move(*c);
    if (calibration) mode = "calibrated by " + calibration->path;
  }
  if (calibration) models::apply_calibration(*calibration, &params);
  validate::ComparisonInputs in = validate::analytic_comparison_inputs(cluster, m, params);
  in.held_out = std::move(held_out);
  if (calibration) {
    models::apply_calibration(*calibration, models::Precision::kBf16, &in.compute);
    in.calibration = &*calibration;
  }
  if (!a.sizes.empty()) {
    auto size = [](std::string_view t) { return models::parse_size_bytes(t, true); };
    auto range = parse_min_max(a.sizes, size, /*single_value_allowed=*/true);
    if (!range) return fail_bad_input(cmd, "--sizes: " + range.message() + ", e.g. 64KiB:8GiB");
    in.min_size_bytes = range->min;
    in.max_size_bytes = range->max;
  }

  // 2. Compare, report.
  const validate::Comparison c = validate::compare_measurement(m, in);
  bool gate_missed = false;
  for (const auto& s : c.stats) {
    if (holdout != validate::Holdout::kNone && !s.held_out) continue;
    if ((a.max_median_error > 0 && s.median_abs_error > a.max_median_error) ||
        (a.max_error > 0 && s.max_abs_error > a.max_error)) {
      gate_missed = true;
    }
  }
  if (a.json) {
    nlohmann::json j = comparison_json(c, mode, cluster, !in.held_out.empty());
    j["measurement"] = {{"path", file->path}, {"sha256", file->sha256_hex}};
    j["gate_missed"] = gate_missed;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("clustersim check: %s (sha256 %s)\n", file->path.c_str(), file->sha256_hex.c_str());
    std::printf("  cluster %d x %s per node, %d node(s); %s\n", cluster.node.gpus_per_node,
                cluster.node.gpu.id.c_str(), cluster.nodes, mode.c_str());
    if (!a.summary) {
      TextTable t({"group", "row", "measured", "predicted", "error", "set", "floor", "verdict"},
                  {TextTable::Align::kLeft, TextTable::Align::kLeft});
      for (const auto& r : c.rows) {
        t.add_row({r.group, r.label, value_text(r, r.measured), value_text(r, r.predicted),
                   r.predicted > 0 ? models::format_signed_percent(r.error) : "-",
                   r.held_out ? "held out" : (in.held_out.empty() ? "" : "fitted"),
                   value_text(r, r.floor), r.impossible ? "IMPOSSIBLE" : ""});
      }
      std::printf("\n%s", t.render(2).c_str());
    }
    std::printf("\nError per group%s (|predicted / measured - 1|)\n",
                a.sizes.empty() ? "" : (", sizes " + a.sizes).c_str());
    TextTable s({"group", "set", "rows", "median |err|", "max |err|", "worst row", "basis"},
                {TextTable::Align::kLeft, TextTable::Align::kLeft});
    bool transferred = false;
    for (const auto& g : c.stats) {
      std::string set = set_name(!in.held_out.empty(), g.held_out);
      std::replace(set.begin(), set.end(), '_', ' ');
      s.add_row({g.group, set, std::to_string(g.rows), format_percent(g.median_abs_error),
                 format_percent(g.max_abs_error), g.worst_label, g.basis});
      transferred = transferred || g.basis == "transfer";
    }
    std::printf("%s", s.render(2).c_str());
    if (transferred) {
      std::printf(
          "  basis transfer: the calibration has no regimes for that communicator; its "
          "per-op correction (extra latency, bandwidth scale) fitted on the sizes it was "
          "measured on carries over\n");
    }
    for (const auto& r : c.rows) {
      if (r.impossible) {
        std::printf("  IMPOSSIBLE: %s %s measured %s beats the physical floor %s (%s)\n",
                    r.group.c_str(), r.label.c_str(), value_text(r, r.measured).c_str(),
                    value_text(r, r.floor).c_str(), r.floor_why.c_str());
      }
    }
    if (gate_missed) std::printf("  error gate missed (--max-median-error / --max-error)\n");
  }
  return c.impossible_rows > 0 || gate_missed ? kExitCheckFailed : kExitOk;
}

const bool kRegistered = register_command(
    {"check", "predicted vs measured per row, error per group, impossible figures flagged", 71,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<CheckArgs>();
       sub.add_option("measurements", a->files,
                      "a measurement file, or nccl-tests output (one or several *_perf logs: "
                      "give --scenario)")
           .required();
       sub.add_option("--scenario", a->scenario,
                      "the cluster (default: the measured one; required for nccl-tests logs)");
       sub.add_option("--calibration", a->calibration,
                      "overlay to predict with (default: the scenario's, else none)");
       sub.add_option("--holdout", a->holdout,
                      "cross-validate: fit on the other sizes, check these: every-other | "
                      "upper-half")
           .check_member({"none", "every-other", "upper-half"});
       sub.add_option("--sizes", a->sizes, "collective sizes the statistics cover, MIN:MAX");
       sub.add_option("--max-median-error", a->max_median_error,
                      "exit 1 when a group's median |error| (held-out rows with --holdout) "
                      "exceeds this fraction");
       sub.add_option("--max-error", a->max_error, "likewise for the largest |error|");
       sub.add_flag("--summary", a->summary, "only the per-group statistics");
       sub.add_flag("--json", a->json, "one JSON object: rows and statistics");
       return [a] { return run_check(*a); };
     },
     {"clustersim check scenarios/measurements/h200-2gpu.json --sizes 64KiB:8GiB",
      "clustersim check scenarios/measurements/public/h100-8gpu-nvls-all_reduce.txt --scenario scenarios/measurements/public/h100-8gpu-nvls-all_reduce.scenario.yaml"}});

}  // namespace
}  // namespace clustersim::tools
