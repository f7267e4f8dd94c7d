// `clustersim calibrate MEASUREMENTS.json... -o CALIBRATION.yaml`: fits the models' parameters
// to one or more measurement files of one GPU model (models/calibration_fit.h) and writes the
// overlay that `plan`, `collective` and `check` apply (--calibration FILE or a scenario's
// `calibration:` key). Prints every fit with its residuals; --json prints the same as JSON.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "models/calibration_fit.h"
#include "models/units.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/measurement_input.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"
#include "validate/measurement_samples.h"

namespace clustersim::tools {
namespace {

using models::format_percent;
using models::format_significant;

struct CalibrateArgs {
  std::vector<std::string> files;
  std::string scenario;  // the hardware of nccl-tests logs
  std::string out;
  bool json = false;
  std::vector<std::string> attention_references;
  int max_regimes = models::PiecewiseOptions{}.max_segments;
};

nlohmann::json calibration_json(const models::Calibration& c, const std::string& out) {
  using nlohmann::json;
  json j = {{"schema", models::kCalibrationSchema},
            {"gpu", c.gpu},
            {"written_to", out},
            {"sources", c.sources},
            {"nccl_disabled_algorithms", c.nccl_disabled_algorithms}};
  json coll = json::array();
  for (const auto& cc : c.collectives) {
    json regimes = json::array();
    for (const auto& r : cc.regimes) {
      regimes.push_back({{"min_size_bytes", r.min_size_bytes},
                         {"max_size_bytes",
                          std::isinf(r.max_size_bytes) ? json(nullptr) : json(r.max_size_bytes)},
                         {"latency_us", r.latency_s * 1e6},
                         {"busbw_GBps", r.busbw_Bps / 1e9},
                         {"points", r.points},
                         {"rms_rel_residual", r.rms_rel_residual},
                         {"max_rel_residual", r.max_rel_residual}});
    }
    coll.push_back({{"op", models::to_string(cc.op)},
                    {"ranks", cc.ranks},
                    {"nodes", cc.nodes},
                    {"regimes", regimes}});
  }
  j["collectives"] = coll;
  json transfer = json::array();
  for (const auto& t : c.transfer) {
    transfer.push_back({{"op", models::to_string(t.op)},
                        {"scope", t.multi_node ? "multi_node" : "one_node"},
                        {"extra_latency_us", t.extra_latency_s * 1e6},
                        {"bandwidth_scale", t.bandwidth_scale},
                        {"fitted_ranks", t.fitted_ranks},
                        {"points", t.points},
                        {"rms_rel_residual", t.rms_rel_residual},
                        {"max_rel_residual", t.max_rel_residual}});
  }
  j["transfer"] = transfer;
  json gemm = json::array();
  for (const auto& g : c.gemm) {
    gemm.push_back({{"precision", models::to_string(g.precision)},
                    {"max_efficiency", g.max_efficiency},
                    {"short_max_efficiency", g.short_max_efficiency},
                    {"points", g.points},
                    {"sustained_scaled", g.sustained_scaled},
                    {"max_rel_residual", g.max_rel_residual}});
  }
  j["gemm"] = gemm;
  json att = json::array();
  for (const auto& a : c.attention) {
    att.push_back({{"direction", a.backward ? "backward" : "forward"},
                   {"source", a.source},
                   {"applied", a.applied},
                   {"max_efficiency", a.max_efficiency},
                   {"half_kv_tokens", a.half_kv_tokens},
                   {"points", a.points},
                   {"max_rel_residual", a.max_rel_residual}});
  }
  j["attention"] = att;
  j["hbm_efficiency"] = c.hbm_efficiency;
  j["hbm_copy_GBps"] = c.hbm_copy_Bps / 1e9;
  j["host_to_device_GBps"] = c.h2d_Bps / 1e9;
  j["device_to_host_GBps"] = c.d2h_Bps / 1e9;
  j["peer_to_peer_GBps"] = c.p2p_Bps / 1e9;
  return j;
}

void print_calibration(const models::Calibration& c, const std::string& out) {
  std::printf("Calibration of %s from %zu file(s), written to %s\n", c.gpu.c_str(),
              c.sources.size(), out.c_str());
  for (const auto& s : c.sources) std::printf("  %s\n", s.c_str());
  if (!c.nccl_disabled_algorithms.empty()) {
    std::string off;
    for (const auto& a : c.nccl_disabled_algorithms) off += (off.empty() ? "" : ", ") + a;
    std::printf("  NCCL algorithms off in the runs: %s\n", off.c_str());
  }
  std::printf(
      "\nCollectives: time = latency + size x busbw factor / busbw per size regime "
      "(relative residuals on the fitted rows)\n");
  TextTable t(
      {"op", "ranks", "from size", "to size", "latency", "busbw", "rows", "rms res", "max res"},
      {TextTable::Align::kLeft});
  for (const auto& cc : c.collectives) {
    for (const auto& r : cc.regimes) {
      t.add_row({std::string(models::to_string(cc.op)), std::to_string(cc.ranks),
                 models::format_size(r.min_size_bytes),
                 std::isinf(r.max_size_bytes) ? "-" : models::format_size(r.max_size_bytes),
                 models::format_time(r.latency_s),
                 r.busbw_Bps >= models::kFlatRegimeBusbwBps ? "(flat)"
                                                            : models::format_bandwidth(r.busbw_Bps),
                 std::to_string(r.points), format_percent(r.rms_rel_residual),
                 format_percent(r.max_rel_residual)});
    }
  }
  std::printf("%s", t.render(2).c_str());
  if (!c.transfer.empty()) {
    std::printf(
        "\nTransfer to communicator sizes not measured: the model's latency + extra, its "
        "bandwidth term / scale, fitted on every measured size at once\n");
    TextTable tr({"op", "scope", "fitted ranks", "extra latency", "bandwidth scale", "rows",
                  "rms res", "max res"},
                 {TextTable::Align::kLeft, TextTable::Align::kLeft, TextTable::Align::kLeft});
    for (const auto& e : c.transfer) {
      std::string ranks;
      for (int r : e.fitted_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      tr.add_row(
          {std::string(models::to_string(e.op)), e.multi_node ? "multi-node" : "one node", ranks,
           (e.extra_latency_s < 0 ? "-" : "") + models::format_time(std::fabs(e.extra_latency_s)),
           format_significant(e.bandwidth_scale, 4), std::to_string(e.points),
           format_percent(e.rms_rel_residual), format_percent(e.max_rel_residual)});
    }
    std::printf("%s", tr.render(2).c_str());
  }
  if (!c.gemm.empty()) {
    std::printf(
        "\nGEMM: efficiency = in-tile max x the shape's tile/wave efficiency (compute_model.h)\n");
    TextTable g({"precision", "in-tile max", "at full clock", "rows", "max res", "note"},
                {TextTable::Align::kLeft});
    for (const auto& e : c.gemm) {
      g.add_row({std::string(models::to_string(e.precision)),
                 format_significant(e.max_efficiency, 4),
                 format_significant(e.short_max_efficiency, 4), std::to_string(e.points),
                 format_percent(e.max_rel_residual),
                 e.sustained_scaled
                     ? "in-tile max at the power cap (runs of " +
                           format_significant(models::kPowerCapSettledRunS, 2) + " s+ or a burn)"
                     : std::string("short runs only: no cap measured")});
    }
    std::printf("%s", g.render(2).c_str());
  }
  for (const auto& a : c.attention) {
    std::printf(
        "\nAttention %s (%s, %s): max efficiency %s, half at %s tokens (%d rows, max residual "
        "%s)\n",
        a.backward ? "backward" : "forward", a.source.c_str(),
        a.applied ? "applied to the planner" : "recorded, not applied",
        format_significant(a.max_efficiency, 4).c_str(),
        format_significant(a.half_kv_tokens, 4).c_str(), a.points,
        format_percent(a.max_rel_residual).c_str());
  }
  std::printf("\n");
  if (c.hbm_efficiency > 0) {
    std::printf("HBM copy %s = %s of the datasheet\n",
                models::format_bandwidth(c.hbm_copy_Bps).c_str(),
                format_percent(c.hbm_efficiency).c_str());
  }
  if (c.h2d_Bps > 0)
    std::printf("host -> device %s\n", models::format_bandwidth(c.h2d_Bps).c_str());
  if (c.d2h_Bps > 0)
    std::printf("device -> host %s\n", models::format_bandwidth(c.d2h_Bps).c_str());
  if (c.p2p_Bps > 0) std::printf("peer to peer %s\n", models::format_bandwidth(c.p2p_Bps).c_str());
}

int run_calibrate(const CalibrateArgs& a) {
  const std::string cmd = "calibrate";
  auto files = load_measurements(a.files, a.scenario, "--scenario");
  if (!files) return fail_bad_input(cmd, files.message());
  auto input = validate::calibration_input(*files);
  if (!input) return fail_bad_input(cmd, input.message());
  for (const auto& path : a.attention_references) {
    auto ref = validate::load_attention_reference(path);
    if (!ref) return fail_bad_input(cmd, "--attention-reference: " + ref.message());
    input->attention.insert(input->attention.end(), ref->samples.begin(), ref->samples.end());
    input->sources.push_back(ref->source);
  }
  models::CalibrationOptions options;
  options.piecewise.max_segments = a.max_regimes;
  auto cal = models::fit_calibration(*input, options);
  if (!cal) return fail_bad_input(cmd, cal.message());
  std::ofstream out(a.out, std::ios::binary);
  out << models::to_yaml_text(*cal);
  if (!out) return fail_bad_input(cmd, "-o: cannot write " + a.out);
  if (a.json) {
    std::printf("%s\n", calibration_json(*cal, a.out).dump(2).c_str());
  } else {
    print_calibration(*cal, a.out);
  }
  return kExitOk;
}

const bool kRegistered = register_command(
    {"calibrate", "fit the models to measurement files and write a calibration overlay", 70,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<CalibrateArgs>();
       sub.add_option("measurements", a->files,
                      "measurement files (one GPU model), or nccl-tests output (*_perf logs: "
                      "give --scenario)")
           .required();
       sub.add_option("--scenario", a->scenario,
                      "the cluster nccl-tests logs ran on (their text does not say)");
       sub.add_option("-o,--out", a->out, "the overlay to write (YAML)").required();
       sub.add_flag("--json", a->json, "print the fits as JSON");
       sub.add_option("--attention-reference", a->attention_references,
                      "PyTorch SDPA rates on the same GPU (validate/device/torch_reference.py "
                      "JSON): the production attention curve the planner applies");
       sub.add_option("--max-regimes", a->max_regimes,
                      "size regimes per collective at most (piecewise alpha-beta)")
           .capture_default_str()
           .check_range(1, 64);
       return [a] { return run_calibrate(*a); };
     },
     {"clustersim calibrate scenarios/measurements/h200-2gpu.json -o overlay.yaml",
      "clustersim plan --calibration overlay.yaml"}});

}  // namespace
}  // namespace clustersim::tools
