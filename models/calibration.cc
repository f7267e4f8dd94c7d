#include "models/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "models/scenario.h"
#include "models/step_model.h"
#include "models/units.h"
#include "models/yaml_reader.h"

namespace clustersim::models {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string sig(double v) { return format_significant(v, 6); }
std::string bytes_text(double b) { return std::to_string(std::llround(b)) + "B"; }
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

// A time that may be negative (a transfer's extra latency below the model's): "-1.5us".
Result<double> parse_signed_time_s(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  auto t = parse_time_s(negative ? text.substr(1) : text);
  if (!t) return t;
  return negative ? -*t : *t;
}

}  // namespace

std::string to_yaml_text(const Calibration& c) {
  std::ostringstream y;
  y << "# clustersim calibration overlay (schema " << kCalibrationSchema
    << "), written by `clustersim calibrate`.\n"
       "# Apply it with a scenario's `calibration:` key or --calibration FILE (plan, collective,\n"
       "# check). Collectives: per op and communicator (ranks over nodes), size regimes with\n"
       "#   time = latency + size x busbw_factor(op, ranks) / busbw   for min_size <= size < the\n"
       "# next regime's min_size (nccl-tests' size column and busbw factor), measured under "
       "NCCL's\n"
       "# own algorithm and protocol choice; residuals are relative, on the fitted rows. Regimes\n"
       "# join continuously or step where NCCL's choice jumps; a regime's busbw is its marginal "
       "rate (time per extra byte), which in "
       "a\n"
       "# latency-bound regime can exceed the link; 100000 GB/s marks one that does not grow.\n"
       "# GEMM: efficiency = max_efficiency (in-tile) x the shape's tile/wave efficiency\n"
       "# (compute_model.h). Attention: efficiency = max_efficiency x kv / (kv + half_kv_tokens).\n"
       "# Attention: source clustersim-flash is validate's own kernel (recorded, not applied);\n"
       "# torch-sdpa is PyTorch's production kernel on the same GPU (calibrate\n"
       "# --attention-reference), causal rows, applied to the planner's attention term.\n";
  y << "schema: " << kCalibrationSchema << "\n";
  y << "gpu: " << c.gpu << "\n";
  y << "sources:\n";
  for (const auto& s : c.sources) y << "  - " << quoted(s) << "\n";
  if (!c.nccl_disabled_algorithms.empty()) {
    y << "nccl_disabled_algorithms: [";
    for (std::size_t i = 0; i < c.nccl_disabled_algorithms.size(); ++i) {
      y << (i ? ", " : "") << c.nccl_disabled_algorithms[i];
    }
    y << "]\n";
  }
  y << "collectives:" << (c.collectives.empty() ? " []" : "") << "\n";
  for (const auto& cc : c.collectives) {
    y << "  - op: " << to_string(cc.op) << "\n    ranks: " << cc.ranks
      << "\n    nodes: " << cc.nodes << "\n    regimes:\n";
    for (std::size_t k = 0; k < cc.regimes.size(); ++k) {
      const CollectiveRegime& r = cc.regimes[k];
      y << "      - {";
      if (k > 0) y << "min_size: " << bytes_text(r.min_size_bytes) << ", ";
      y << "latency: " << sig(r.latency_s * 1e6) << "us, busbw: " << sig(r.busbw_Bps / 1e9)
        << "GB/s, points: " << r.points << ", rms_residual: " << sig(r.rms_rel_residual)
        << ", max_residual: " << sig(r.max_rel_residual) << "}";
      y << "  # from " << (k == 0 ? "0 B" : format_size(r.min_size_bytes)) << "\n";
    }
  }
  y << "# transfer: per op, the model's own correction fitted on every measured communicator at\n"
       "# once (scope one_node or multi_node): time = the model's latency + extra_latency + its\n"
       "# bandwidth term / bandwidth_scale, for communicator sizes the regimes above do not "
       "cover.\n";
  y << "transfer:" << (c.transfer.empty() ? " []" : "") << "\n";
  for (const auto& t : c.transfer) {
    y << "  - {op: " << to_string(t.op) << ", scope: " << (t.multi_node ? "multi_node" : "one_node")
      << ", extra_latency: " << sig(t.extra_latency_s * 1e6)
      << "us, bandwidth_scale: " << sig(t.bandwidth_scale) << ", fitted_ranks: [";
    for (std::size_t i = 0; i < t.fitted_ranks.size(); ++i)
      y << (i ? ", " : "") << t.fitted_ranks[i];
    y << "], points: " << t.points << ", rms_residual: " << sig(t.rms_rel_residual)
      << ", max_residual: " << sig(t.max_rel_residual) << "}\n";
  }
  y << "gemm:" << (c.gemm.empty() ? " []" : "") << "\n";
  for (const auto& g : c.gemm) {
    y << "  - {precision: " << to_string(g.precision)
      << ", max_efficiency: " << sig(g.max_efficiency)
      << ", short_max_efficiency: " << sig(g.short_max_efficiency) << ", points: " << g.points
      << ", sustained_scaled: " << (g.sustained_scaled ? "true" : "false")
      << ", max_residual: " << sig(g.max_rel_residual) << "}\n";
  }
  y << "attention:" << (c.attention.empty() ? " []" : "") << "\n";
  for (const auto& a : c.attention) {
    y << "  - {direction: " << (a.backward ? "backward" : "forward") << ", source: " << a.source
      << ", applied: " << (a.applied ? "true" : "false")
      << ", max_efficiency: " << sig(a.max_efficiency)
      << ", half_kv_tokens: " << sig(a.half_kv_tokens) << ", points: " << a.points
      << ", max_residual: " << sig(a.max_rel_residual) << "}\n";
  }
  if (c.hbm_efficiency > 0) {
    y << "hbm_efficiency: " << sig(c.hbm_efficiency) << "\n";
    y << "hbm_copy: " << sig(c.hbm_copy_Bps / 1e9) << "GB/s\n";
  }
  if (c.h2d_Bps > 0) y << "host_to_device: " << sig(c.h2d_Bps / 1e9) << "GB/s\n";
  if (c.d2h_Bps > 0) y << "device_to_host: " << sig(c.d2h_Bps / 1e9) << "GB/s\n";
  if (c.p2p_Bps > 0) y << "peer_to_peer: " << sig(c.p2p_Bps / 1e9) << "GB/s\n";
  return y.str();
}

Result<Calibration> load_calibration_text(std::string_view yaml_text, const std::string& origin) {
  YamlReader in(origin);
  YAML::Node root;
  Calibration c;
  c.path = origin;
  auto failed = [&]() -> Result<Calibration> { return in.error(); };
  auto bad = [&](const YAML::Node& n, const std::string& at, const std::string& what) {
    in.fail(n, at, what);
    return failed();
  };
  if (!in.parse(yaml_text, &root) ||
      !in.open_map(root, "",
                   {"schema", "gpu", "sources", "nccl_disabled_algorithms", "collectives",
                    "transfer", "gemm", "attention", "hbm_efficiency", "hbm_copy", "host_to_device",
                    "device_to_host", "peer_to_peer"})) {
    return failed();
  }
  std::string schema;
  if (!in.text(root, "", "schema", &schema, true)) return failed();
  if (schema != kCalibrationSchema) {
    return bad(root["schema"], "schema",
               "expected " + std::string(kCalibrationSchema) + ", got '" + schema + "'");
  }
  if (!in.text(root, "", "gpu", &c.gpu, true)) return failed();
  if (find_gpu(c.gpu) == nullptr) {
    return bad(root["gpu"], "gpu", "unknown GPU '" + c.gpu + "' (known: " + known_gpu_ids() + ")");
  }
  YAML::Node list;
  if (!in.list(root, "", "sources", &list)) return failed();
  for (const auto& s : list) {
    if (!s.IsScalar()) return bad(s, "sources", "expected text");
    c.sources.push_back(s.Scalar());
  }
  if (!in.list(root, "", "nccl_disabled_algorithms", &list)) return failed();
  for (const auto& s : list) {
    CollectiveAlgorithm a;
    if (!s.IsScalar() || !parse_collective_algorithm(s.Scalar(), &a)) {
      return bad(s, "nccl_disabled_algorithms", "expected an algorithm name");
    }
    c.nccl_disabled_algorithms.push_back(s.Scalar());
  }
  if (!in.list(root, "", "collectives", &list)) return failed();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string path = "collectives[" + std::to_string(i) + "]";
    CollectiveCalibration cc;
    std::string op;
    YAML::Node regimes;
    if (!in.open_map(e, path, {"op", "ranks", "nodes", "regimes"}) ||
        !in.text(e, path, "op", &op, true) || !in.integer(e, path, "ranks", &cc.ranks, true) ||
        !in.integer(e, path, "nodes", &cc.nodes) || !in.list(e, path, "regimes", &regimes, true)) {
      return failed();
    }
    if (!parse_collective_op(op, &cc.op))
      return bad(e["op"], path + ".op", "unknown op '" + op + "'");
    if (cc.ranks < 2 || cc.nodes < 1 || cc.nodes > cc.ranks) {
      return bad(e, path, "needs ranks >= 2 and 1 <= nodes <= ranks");
    }
    for (std::size_t k = 0; k < regimes.size(); ++k) {
      const YAML::Node r = regimes[k];
      const std::string rp = path + ".regimes[" + std::to_string(k) + "]";
      CollectiveRegime reg;
      reg.max_size_bytes = kInf;
      if (!in.open_map(
              r, rp, {"min_size", "latency", "busbw", "points", "rms_residual", "max_residual"}) ||
          !in.quantity(
              r, rp, "min_size", [](std::string_view t) { return parse_size_bytes(t); },
              &reg.min_size_bytes, k > 0) ||
          !in.quantity(r, rp, "latency", parse_time_s, &reg.latency_s, true) ||
          !in.quantity(r, rp, "busbw", parse_bandwidth_Bps, &reg.busbw_Bps, true) ||
          !in.integer(r, rp, "points", &reg.points) ||
          !in.number(r, rp, "rms_residual", &reg.rms_rel_residual) ||
          !in.number(r, rp, "max_residual", &reg.max_rel_residual)) {
        return failed();
      }
      if (k == 0 && reg.min_size_bytes != 0) {
        return bad(r, rp + ".min_size", "the first regime starts at 0 B");
      }
      if (reg.busbw_Bps <= 0) return bad(r, rp + ".busbw", "must be positive");
      if (!cc.regimes.empty()) {
        if (reg.min_size_bytes <= cc.regimes.back().min_size_bytes) {
          return bad(r, rp + ".min_size", "regimes must go up in size");
        }
        cc.regimes.back().max_size_bytes = reg.min_size_bytes;
      }
      cc.regimes.push_back(reg);
    }
    c.collectives.push_back(std::move(cc));
  }
  if (!in.list(root, "", "transfer", &list)) return failed();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string path = "transfer[" + std::to_string(i) + "]";
    CollectiveTransfer t;
    std::string op, scope = "one_node";
    YAML::Node ranks;
    if (!in.open_map(e, path,
                     {"op", "scope", "extra_latency", "bandwidth_scale", "fitted_ranks", "points",
                      "rms_residual", "max_residual"}) ||
        !in.text(e, path, "op", &op, true) || !in.text(e, path, "scope", &scope) ||
        !in.quantity(e, path, "extra_latency", parse_signed_time_s, &t.extra_latency_s, true) ||
        !in.number(e, path, "bandwidth_scale", &t.bandwidth_scale, true) ||
        !in.list(e, path, "fitted_ranks", &ranks) || !in.integer(e, path, "points", &t.points) ||
        !in.number(e, path, "rms_residual", &t.rms_rel_residual) ||
        !in.number(e, path, "max_residual", &t.max_rel_residual)) {
      return failed();
    }
    if (!parse_collective_op(op, &t.op))
      return bad(e["op"], path + ".op", "unknown op '" + op + "'");
    if (scope != "one_node" && scope != "multi_node") {
      return bad(e["scope"], path + ".scope", "one_node or multi_node, got '" + scope + "'");
    }
    t.multi_node = scope == "multi_node";
    if (!(t.bandwidth_scale > 0)) {
      return bad(e["bandwidth_scale"], path + ".bandwidth_scale", "must be positive");
    }
    for (const auto& r : ranks) {
      int n = 0;
      try {
        n = r.as<int>();
      } catch (const YAML::Exception&) {
        return bad(r, path + ".fitted_ranks", "expected whole numbers");
      }
      t.fitted_ranks.push_back(n);
    }
    c.transfer.push_back(t);
  }
  if (!in.list(root, "", "gemm", &list)) return failed();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string path = "gemm[" + std::to_string(i) + "]";
    GemmCalibration g;
    std::string precision;
    // half_efficiency_flops and half_identified are obsolete keys of the saturating GEMM model
    // (max x FLOPs / (FLOPs + half)) that overlays written before the tile model carry: accepted
    // so that those overlays keep loading, and ignored (their max_efficiency reads as in-tile).
    if (!in.open_map(
            e, path,
            {"precision", "max_efficiency", "short_max_efficiency", "points", "sustained_scaled",
             "max_residual", "half_efficiency_flops", "half_identified"}) ||
        !in.text(e, path, "precision", &precision, true) ||
        !in.number(e, path, "max_efficiency", &g.max_efficiency, true) ||
        !in.number(e, path, "short_max_efficiency", &g.short_max_efficiency) ||
        !in.integer(e, path, "points", &g.points) ||
        !in.flag(e, path, "sustained_scaled", &g.sustained_scaled) ||
        !in.number(e, path, "max_residual", &g.max_rel_residual)) {
      return failed();
    }
    if (!parse_precision(precision, &g.precision)) {
      return bad(e["precision"], path + ".precision", "unknown precision");
    }
    if (g.short_max_efficiency == 0) g.short_max_efficiency = g.max_efficiency;
    if (g.max_efficiency <= 0 || g.max_efficiency > 1 || g.short_max_efficiency > 1) {
      return bad(e, path, "max_efficiency must be in (0, 1]");
    }
    c.gemm.push_back(g);
  }
  if (!in.list(root, "", "attention", &list)) return failed();
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    const std::string path = "attention[" + std::to_string(i) + "]";
    AttentionCalibration a;
    std::string direction;
    bool applied = false;
    if (!in.open_map(e, path,
                     {"direction", "source", "applied", "max_efficiency", "half_kv_tokens",
                      "points", "max_residual"}) ||
        !in.text(e, path, "source", &a.source) || !in.flag(e, path, "applied", &applied) ||
        !in.text(e, path, "direction", &direction, true) ||
        !in.number(e, path, "max_efficiency", &a.max_efficiency, true) ||
        !in.number(e, path, "half_kv_tokens", &a.half_kv_tokens, true) ||
        !in.integer(e, path, "points", &a.points) ||
        !in.number(e, path, "max_residual", &a.max_rel_residual)) {
      return failed();
    }
    if (direction != "forward" && direction != "backward") {
      return bad(e["direction"], path + ".direction", "forward or backward");
    }
    a.backward = direction == "backward";
    if (a.source != kAttentionOwnKernel && a.source != kAttentionProductionKernel) {
      return bad(e["source"], path + ".source",
                 "'" + std::string(kAttentionOwnKernel) + "' or '" +
                     std::string(kAttentionProductionKernel) + "', got '" + a.source + "'");
    }
    a.applied = a.source == kAttentionProductionKernel;
    if (e["applied"] && applied != a.applied) {
      return bad(
          e["applied"], path + ".applied",
          std::string("only the ") + std::string(kAttentionProductionKernel) + " curve is applied");
    }
    if (a.max_efficiency <= 0 || a.max_efficiency > 1) {
      return bad(e, path + ".max_efficiency", "must be in (0, 1]");
    }
    c.attention.push_back(a);
  }
  if (!in.number(root, "", "hbm_efficiency", &c.hbm_efficiency) ||
      !in.quantity(root, "", "hbm_copy", parse_bandwidth_Bps, &c.hbm_copy_Bps) ||
      !in.quantity(root, "", "host_to_device", parse_bandwidth_Bps, &c.h2d_Bps) ||
      !in.quantity(root, "", "device_to_host", parse_bandwidth_Bps, &c.d2h_Bps) ||
      !in.quantity(root, "", "peer_to_peer", parse_bandwidth_Bps, &c.p2p_Bps)) {
    return failed();
  }
  if (c.hbm_efficiency < 0 || c.hbm_efficiency > 1) {
    return bad(root["hbm_efficiency"], "hbm_efficiency", "must be in [0, 1]");
  }
  return c;
}

Result<Calibration> load_calibration_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return load_calibration_text(*text, path);
}

void apply_calibration(const Calibration& c, CollectiveParams* params) {
  std::vector<CollectiveFit> fits;
  for (const auto& cc : c.collectives) {
    for (const auto& r : cc.regimes) {
      CollectiveFit f;
      f.op = cc.op;
      f.algorithm = CollectiveAlgorithm::kAuto;
      f.protocol = CollectiveProtocol::kAuto;
      f.ranks = cc.ranks;
      f.nodes = cc.nodes;
      f.latency_s = r.latency_s;
      f.busbw_Bps = r.busbw_Bps;
      f.min_size_bytes = r.min_size_bytes;
      f.max_size_bytes = r.max_size_bytes;
      fits.push_back(f);
    }
  }
  params->fits.insert(params->fits.begin(), fits.begin(), fits.end());
  std::vector<CollectiveAlgorithm> excluded;
  for (const auto& name : c.nccl_disabled_algorithms) {
    CollectiveAlgorithm a;
    if (parse_collective_algorithm(name, &a)) excluded.push_back(a);
  }
  std::vector<CollectiveCorrection> corrections;
  for (const auto& t : c.transfer) {
    corrections.push_back({t.op, t.multi_node, t.extra_latency_s, t.bandwidth_scale, excluded});
  }
  params->corrections.insert(params->corrections.begin(), corrections.begin(), corrections.end());
}

std::string_view calibration_basis(const Calibration& c, CollectiveOp op, int ranks, int nodes) {
  for (const auto& cc : c.collectives) {
    if (cc.op == op && cc.ranks == ranks && cc.nodes == nodes) return "fit";
  }
  for (const auto& t : c.transfer) {
    if (t.op == op && t.multi_node == (nodes > 1)) return "transfer";
  }
  return "model";
}

void apply_calibration(const Calibration& c, Precision precision, ComputeParams* params) {
  // FP8 training runs its weight GEMMs in fp8 and the rest in bf16: the bf16 fit sets the
  // in-tile rate, the fp8 fit its ratio to it (ComputeParams::fp8_gemm_ratio).
  const Precision base = precision == Precision::kFp8 ? Precision::kBf16 : precision;
  for (const auto& g : c.gemm) {
    if (g.precision != base) continue;
    // The short-run (full-clock) in-tile rate, and where a burn was measured the clock it
    // settles at under the power cap (compute_model.h power_clock).
    params->gemm_max_efficiency = g.short_max_efficiency;
    if (g.sustained_scaled && g.short_max_efficiency > 0) {
      params->sustained_clock = g.max_efficiency / g.short_max_efficiency;
    }
  }
  if (precision == Precision::kFp8) {
    for (const auto& g : c.gemm) {
      if (g.precision == Precision::kFp8 && params->gemm_max_efficiency > 0) {
        params->fp8_gemm_ratio = g.short_max_efficiency / params->gemm_max_efficiency;
      }
    }
  }
  if (c.hbm_efficiency > 0) params->hbm_efficiency = c.hbm_efficiency;
  // The attention rows ran back to back at the power cap (PyTorch's SDPA, 0.5 s a case), and
  // the ceilings are full-clock ones that the step scales back to attention_clock: the fitted
  // maximum over the cap (as the defaults hold cuDNN's measured figures: compute_model.cc).
  const double cap = params->sustained_clock > 0 ? params->sustained_clock : 1.0;
  for (const auto& a : c.attention) {
    if (!a.applied) continue;
    if (a.backward) {
      params->attention_bwd_max_efficiency = a.max_efficiency / cap;
    } else {
      params->attention_fwd_max_efficiency = a.max_efficiency / cap;
      params->attention_half_efficiency_kv_tokens = a.half_kv_tokens;
    }
  }
}

Status check_calibration_gpu(const Calibration& c, const ClusterConfig& cluster) {
  if (!c.gpu.empty() && c.gpu != cluster.node.gpu.id) {
    return Error{(c.path.empty() ? std::string("calibration") : c.path) + ": measured on " + c.gpu +
                 ", but the cluster's GPU is " + cluster.node.gpu.id +
                 ": its numbers would not hold"};
  }
  return Status::Ok();
}

Status apply_calibration(const Calibration& c, const ClusterConfig& cluster, Precision precision,
                         StepParams* params) {
  if (auto s = check_calibration_gpu(c, cluster); !s) return s;
  apply_calibration(c, &params->collective);
  apply_calibration(c, precision, &params->compute);
  return Status::Ok();
}

}  // namespace clustersim::models
