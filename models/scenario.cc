#include "models/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <utility>

#include "models/accuracy/published_run.h"
#include "models/claims.h"
#include "models/units.h"

namespace clustersim::models {

int FrameworkConfig::copy_engine_reduce_scatters() const {
  // A layer's TP collectives with SP (four forward, six backward), of them the gathers that feed
  // a forward or data-gradient GEMM (ring exchange takes these first) and the reduce-scatters.
  constexpr int kCollectives = 10, kFedGathers = 4, kReduceScatters = 4;
  if (!tp_comm_overlap) return 0;
  const int by_copy_engine =
      static_cast<int>(std::lround(kCollectives * tp_overlap_copy_engine_share));
  // Without tp_overlap_input_gradients the backward's two are NCCL's, reduced in its kernel.
  return std::clamp(by_copy_engine - kFedGathers, 0,
                    tp_overlap_input_gradients ? kReduceScatters : kReduceScatters / 2);
}

std::string_view to_string(TopologyKind k) {
  switch (k) {
    case TopologyKind::kFatTree: return "fat-tree";
    case TopologyKind::kLeafSpine: return "leaf-spine";
    case TopologyKind::kRailOptimized: return "rail-optimized";
    case TopologyKind::kSingleSwitch: return "single-switch";
  }
  return "?";
}

std::string_view to_string(Routing r) {
  switch (r) {
    case Routing::kAdaptive: return "adaptive";
    case Routing::kEcmp: return "ecmp";
    case Routing::kStatic: return "static";
  }
  return "?";
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kSelectiveOp: return "selective-op";
    case Recompute::kFull: return "full";
  }
  return "?";
}

std::string_view to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe: return "gpipe";
    case PipelineSchedule::k1F1B: return "1f1b";
    case PipelineSchedule::kInterleaved: return "interleaved";
    case PipelineSchedule::kDualPipe: return "dualpipe";
  }
  return "?";
}

std::string_view to_string(LossKernel k) {
  switch (k) {
    case LossKernel::kUnfused: return "unfused";
    case LossKernel::kFused: return "fused";
    case LossKernel::kTe: return "te";
  }
  return "?";
}

std::string_view to_string(KernelFusion k) {
  switch (k) {
    case KernelFusion::kFused: return "fused";
    case KernelFusion::kEager: return "eager";
    case KernelFusion::kCompiled: return "compiled";
  }
  return "?";
}

std::string_view to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kFlash: return "flash";
    case AttentionKernel::kFlash2: return "flash2";
    case AttentionKernel::kFlash1: return "flash1";
    case AttentionKernel::kUnfused: return "unfused";
  }
  return "?";
}

std::string_view to_string(AmaxReduction a) {
  switch (a) {
    case AmaxReduction::kDataParallel: return "data-parallel";
    case AmaxReduction::kTensorParallel: return "tensor-parallel";
    case AmaxReduction::kAsync: return "async";
  }
  return "?";
}

std::string_view to_string(Facility f) {
  return f == Facility::kOwn ? "own" : "colocation";
}

std::string_view to_string(NeighbourPlacement p) {
  return p == NeighbourPlacement::kAfter ? "after" : "interleaved";
}

std::string_view to_string(NeighbourPattern p) {
  return p == NeighbourPattern::kRing ? "ring" : "alltoall";
}

std::string SourceLocation::to_string() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Scenario::where(const std::string& key_path) const {
  auto it = locations.find(key_path);
  if (it == locations.end()) return path + ": " + key_path;
  return it->second.to_string() + ": " + key_path;
}

int WorkloadConfig::micro_batches_per_step() const {
  const int per_step = parallelism.dp * micro_batch;
  return per_step > 0 ? global_batch / per_step : 0;
}

namespace {

using Keys = std::span<const std::string_view>;

// `claims` and `published` come last: they are read from the file only, not --set keys
// (keys_under leaves them out).
constexpr std::string_view kTopKeys[] = {"name",        "note",         "cluster",
                                         "workload",    "cost",         "reliability",
                                         "calibration", "interference", "claims",
                                         "published"};
constexpr Keys kSettableTopKeys = Keys(kTopKeys).first(std::size(kTopKeys) - 2);
constexpr std::string_view kClusterKeys[] = {"nodes", "node", "fabric", "storage"};
constexpr std::string_view kNodeKeys[] = {"gpu", "gpus_per_node", "scale_up",
                                          "nics_per_node", "nic", "links_per_nic"};
constexpr std::string_view kFabricKeys[] = {
    "topology",         "tiers",          "switch_radix", "leaves",  "spines",
    "uplinks_per_leaf", "oversubscription", "routing",    "qps_per_connection",
    "in_network_reduction", "switch"};
constexpr std::string_view kStorageKeys[] = {"write_bandwidth"};
constexpr std::string_view kWorkloadKeys[] = {
    "model",   "layers",    "hidden",       "heads",       "kv_heads",  "ffn_hidden",
    "vocab",   "gated_ffn", "tied_embeddings", "linear_biases", "normalization",
    "position_embedding",
    "head_dim", "mla", "moe", "mtp_layers", "sliding_window", "sliding_window_layers",
    "seq_len", "global_batch", "micro_batch", "precision", "dropout", "framework",
    "parallelism", "train_tokens"};
constexpr std::string_view kMlaKeys[] = {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                         "qk_rope_head_dim", "v_head_dim"};
constexpr std::string_view kMoeKeys[] = {"experts",       "top_k",           "expert_ffn_hidden",
                                         "shared_experts", "dense_layers",   "capacity_factor",
                                         "imbalance",     "max_nodes_per_token",
                                         "routing"};
constexpr std::string_view kFrameworkKeys[] = {"attention",           "kernels",
                                               "tp_comm_overlap",     "tp_wgrad_overlap",
                                               "tp_overlap_input_gradients",
                                               "sp_input_regather",   "activation_layout",
                                               "projections",
                                               "recompute_early_stop",
                                               "loss_input",          "loss_kernel",
                                               "optimizer_kernel",
                                               "low_precision_norm",  "norm_kernel",
                                               "ep_comm_overlap",     "pp_comm_overlap",
                                               "ep_dispatcher",
                                               "fp8_recipe",          "fp8_param_gather",
                                               "fp8_amax_reduction",
                                               "fp8_attention",       "fp4_param_gather",
                                               "grad_reduce_overlap", "weights_in_fp32",
                                               "master_weights",      "param_gather_overlap",
                                               "param_remainders",
                                               "reshard_after_forward",
                                               "root_reshard_after_forward",
                                               "tp_overlap_copy_engine_share",
                                               "gradients_in_backward",
                                               "fp32_gradients",      "zero1_grad_reduce",
                                               "moe_layer_host_time", "moe_expert_bias",
                                               "cp_attention",        "nccl_max_ctas",
                                               "grad_bucket_params",  "nccl_nvls"};
constexpr std::string_view kNcclCtasKeys[] = {"tp", "cp", "dp", "pp", "ep"};
constexpr std::string_view kParallelismKeys[] = {"tp",   "pp",        "dp",          "cp",
                                                 "sp",   "zero",      "recompute",   "pp_schedule",
                                                 "virtual_stages", "ep", "etp", "first_stage_layers",
                                                 "last_stage_layers", "pipeline_layout",
                                                 "recompute_modules"};
constexpr std::string_view kCostKeys[] = {
    "gpu_hour",          "reserved_1y",  "reserved_3y",         "utilization",
    "server_price",      "installation", "depreciation",        "electricity",
    "pue",               "facility",     "facility_kw_month",   "support",
    "staff",             "staff_salary", "server_power",        "storage_capacity",
    "storage_price",     "cloud_storage_price", "egress",       "egress_price"};
constexpr std::string_view kReliabilityKeys[] = {"gpu_mtbf", "checkpoint_interval",
                                                 "restart_time"};
constexpr std::string_view kInterferenceKeys[] = {"neighbour", "background", "seed"};
constexpr std::string_view kNeighbourKeys[] = {"nodes", "placement", "pattern", "load"};
constexpr std::string_view kBackgroundKeys[] = {"per_node"};

// Edit distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The nearest candidate, when it is near enough to be a likely typo; "" otherwise.
template <class Range>
std::string nearest(std::string_view word, const Range& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = std::string(c);
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

template <class Range>
std::string join(const Range& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

std::string did_you_mean(std::string_view word, Keys candidates) {
  const std::string best = nearest(word, candidates);
  return best.empty() ? std::string() : "did you mean '" + best + "'? ";
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

// What a node holds, for "expected X, got Y".
std::string describe(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "nothing";
}

// Parses a plain decimal number (no unit), the whole text.
std::optional<double> plain_number(std::string_view text) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// How a field of a catalog entry is read from a scenario override map.
enum class FieldKind { kFlops, kBytes, kBandwidth, kTime, kUsd, kWatts, kFraction, kCount, kInt,
                       kBool, kString };

template <class Spec>
struct OverrideField {
  std::string_view key;
  FieldKind kind;
  double Spec::*number = nullptr;
  int Spec::*integer = nullptr;
  bool Spec::*flag = nullptr;
  std::string Spec::*text = nullptr;
};

template <class Spec>
OverrideField<Spec> num(std::string_view key, FieldKind kind, double Spec::*m) {
  return {key, kind, m, nullptr, nullptr, nullptr};
}
template <class Spec>
OverrideField<Spec> integer(std::string_view key, int Spec::*m) {
  return {key, FieldKind::kInt, nullptr, m, nullptr, nullptr};
}
template <class Spec>
OverrideField<Spec> flag(std::string_view key, bool Spec::*m) {
  return {key, FieldKind::kBool, nullptr, nullptr, m, nullptr};
}
template <class Spec>
OverrideField<Spec> text(std::string_view key, std::string Spec::*m) {
  return {key, FieldKind::kString, nullptr, nullptr, nullptr, m};
}

const std::vector<OverrideField<GpuSpec>>& gpu_fields() {
  using K = FieldKind;
  static const std::vector<OverrideField<GpuSpec>> kFields = {
      text("name", &GpuSpec::name),
      num("bf16", K::kFlops, &GpuSpec::bf16_flops),
      num("fp16", K::kFlops, &GpuSpec::fp16_flops),
      num("fp8", K::kFlops, &GpuSpec::fp8_flops),
      num("fp4", K::kFlops, &GpuSpec::fp4_flops),
      num("tf32", K::kFlops, &GpuSpec::tf32_flops),
      num("fp32", K::kFlops, &GpuSpec::fp32_flops),
      num("hbm", K::kBytes, &GpuSpec::hbm_bytes),
      num("hbm_bandwidth", K::kBandwidth, &GpuSpec::hbm_Bps),
      integer("nvlink_links", &GpuSpec::nvlink_links),
      num("nvlink_link_bandwidth", K::kBandwidth, &GpuSpec::nvlink_link_Bps),
      integer("pcie_gen", &GpuSpec::pcie_gen),
      integer("pcie_lanes", &GpuSpec::pcie_lanes),
      num("tdp", K::kWatts, &GpuSpec::tdp_w),
      num("idle_power", K::kWatts, &GpuSpec::idle_w),
      num("price", K::kUsd, &GpuSpec::list_price_usd),
      integer("sm_count", &GpuSpec::sm_count),
  };
  return kFields;
}

const std::vector<OverrideField<ScaleUpSpec>>& scale_up_fields() {
  using K = FieldKind;
  static const std::vector<OverrideField<ScaleUpSpec>> kFields = {
      num("bandwidth", K::kBandwidth, &ScaleUpSpec::per_gpu_Bps),
      num("latency", K::kTime, &ScaleUpSpec::latency_s),
      flag("switch_reduction", &ScaleUpSpec::switch_reduction),
  };
  return kFields;
}

const std::vector<OverrideField<NicSpec>>& nic_fields() {
  using K = FieldKind;
  static const std::vector<OverrideField<NicSpec>> kFields = {
      num("line_rate", K::kBandwidth, &NicSpec::line_rate_Bps),
      num("latency", K::kTime, &NicSpec::latency_s),
      num("efficiency", K::kFraction, &NicSpec::protocol_efficiency),
      flag("in_network_reduction_capable", &NicSpec::in_network_reduction_capable),
      num("price", K::kUsd, &NicSpec::price_usd),
      num("cable_price", K::kUsd, &NicSpec::cable_price_usd),
  };
  return kFields;
}

const std::vector<OverrideField<SwitchSpec>>& switch_fields() {
  using K = FieldKind;
  static const std::vector<OverrideField<SwitchSpec>> kFields = {
      integer("radix", &SwitchSpec::radix),
      num("port_bandwidth", K::kBandwidth, &SwitchSpec::port_Bps),
      num("latency", K::kTime, &SwitchSpec::latency_s),
      num("price", K::kUsd, &SwitchSpec::price_usd),
      num("power", K::kWatts, &SwitchSpec::power_w),
      flag("in_network_reduction", &SwitchSpec::in_network_reduction),
  };
  return kFields;
}

// The keys the map at dotted `path` takes ("" is the top); empty for a key that takes a value.
// Catalog entries (gpu, scale_up, nic, switch, model) take `base:` and their override fields.
std::vector<std::string_view> keys_under(std::string_view path) {
  static constexpr std::pair<std::string_view, Keys> kMaps[] = {
      {"", kSettableTopKeys},
      {"cluster", kClusterKeys},
      {"cluster.node", kNodeKeys},
      {"cluster.fabric", kFabricKeys},
      {"cluster.storage", kStorageKeys},
      {"workload", kWorkloadKeys},
      {"workload.parallelism", kParallelismKeys},
      {"workload.framework", kFrameworkKeys},
      {"cost", kCostKeys},
      {"reliability", kReliabilityKeys},
      {"interference", kInterferenceKeys},
      {"interference.neighbour", kNeighbourKeys},
      {"workload.framework.nccl_max_ctas", kNcclCtasKeys},
      {"interference.background", kBackgroundKeys}};
  for (const auto& [p, keys] : kMaps) {
    if (p == path) return {keys.begin(), keys.end()};
  }
  auto spec = [](const auto& fields) {
    std::vector<std::string_view> keys{"base"};
    for (const auto& f : fields) keys.push_back(f.key);
    return keys;
  };
  if (path == "cluster.node.gpu") return spec(gpu_fields());
  if (path == "cluster.node.scale_up") return spec(scale_up_fields());
  if (path == "cluster.node.nic") return spec(nic_fields());
  if (path == "cluster.fabric.switch") return spec(switch_fields());
  if (path == "workload.model") return {"base"};
  return {};
}

std::vector<std::string> split_key_path(std::string_view key_path) {
  std::vector<std::string> parts;
  std::string part;
  for (char ch : key_path) {
    if (ch == '.') {
      parts.push_back(std::move(part));
      part.clear();
    } else {
      part += ch;
    }
  }
  parts.push_back(std::move(part));
  return parts;
}

// One pass over the YAML tree. The first error wins: fail() records it and every reader then
// returns false, so the caller unwinds with one message.
class Loader {
 public:
  Loader(std::string origin, std::vector<ScenarioOverride> overrides, bool check_layout)
      : overrides_(std::move(overrides)), check_layout_(check_layout) {
    sc_.path = std::move(origin);
  }

  Result<Scenario> load(std::string_view text);

 private:
  // --- overrides (load_scenario_* with --set edits) ---
  // The override that set `path` or a map above it; nullptr when the file gave it.
  const ScenarioOverride* override_of(const std::string& path) const {
    for (const auto& o : overrides_) {
      if (path == o.key_path || path.rfind(o.key_path + ".", 0) == 0) return &o;
    }
    return nullptr;
  }
  // The override that created the map at `path` on its way to a key below; nullptr when none.
  const ScenarioOverride* override_below(const std::string& path) const {
    for (const auto& o : overrides_) {
      if (o.key_path.rfind(path + ".", 0) == 0) return &o;
    }
    return nullptr;
  }
  bool apply_override(YAML::Node root, const ScenarioOverride& o);

  // --- errors and locations ---
  bool fail_at(const YAML::Mark& mark, const std::string& path, const std::string& what) {
    if (!error_) {
      SourceLocation at;
      if (const ScenarioOverride* o = path.empty() ? nullptr : override_of(path)) {
        at.file = o->origin();  // the value came from the command line, not the file
      } else if (!mark.is_null()) {
        at = SourceLocation{sc_.path, mark.line + 1, mark.column + 1};
      } else if (auto it = sc_.locations.find(path); it != sc_.locations.end()) {
        at = it->second;
      } else {
        at.file = sc_.path;
      }
      error_ = Error{at.to_string() + ": " + (path.empty() ? "" : path + ": ") + what};
    }
    return false;
  }
  bool fail(const YAML::Node& node, const std::string& path, const std::string& what) {
    // An empty value ("gpu:") carries the position of whatever follows it: cite its key.
    const bool has_mark = node.IsDefined() && !node.IsNull();
    return fail_at(has_mark ? node.Mark() : YAML::Mark::null_mark(), path, what);
  }
  // For checks across keys: cites where `path` was given (or the file when it was defaulted).
  bool fail_key(const std::string& path, const std::string& what) {
    return fail_at(YAML::Mark::null_mark(), path, what);
  }

  // Checks that `node` is a map whose keys are all in `allowed` (suggesting the nearest for a
  // typo) and records where each key was given.
  bool open_map(const YAML::Node& node, const std::string& path, Keys allowed) {
    if (!node.IsMap()) {
      return fail(node, path, "expected a map with keys " + join(allowed) + ", got " + describe(node));
    }
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const YAML::Node key = entry.first;  // a copy: the iterator hands out a temporary pair
      if (!key.IsScalar()) return fail(key, path, "a key must be a plain name");
      const std::string name = key.Scalar();
      const std::string key_path = child(path, name);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        return fail(key, key_path,
                    "unknown key (" + did_you_mean(name, allowed) + "known: " + join(allowed) +
                        ")");
      }
      if (!seen.insert(name).second) return fail(key, key_path, "key given twice");
      const YAML::Mark m = key.Mark();
      const ScenarioOverride* o = override_of(key_path);
      if (o == nullptr && m.is_null()) o = override_below(key_path);  // a map it created
      sc_.locations[key_path] = o != nullptr
                                    ? SourceLocation{o->origin()}
                                    : SourceLocation{sc_.path, m.line + 1, m.column + 1};
    }
    return true;
  }

  // The scalar text of `node`, or an error naming what was expected.
  bool scalar(const YAML::Node& node, const std::string& path, std::string_view expected,
              std::string* out) {
    if (node.IsScalar()) {
      *out = node.Scalar();
      return true;
    }
    return fail(node, path, "expected " + std::string(expected) + ", got " + describe(node));
  }

  // --- typed readers: absent keys leave *out unchanged and return true ---
  bool read_int(const YAML::Node& map, const std::string& path, std::string_view key, int min,
                int* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    return parse_int(v, child(path, key), min, out);
  }

  bool parse_int(const YAML::Node& v, const std::string& p, int min, int* out) {
    std::string s;
    if (!scalar(v, p, "a whole number", &s)) return false;
    auto r = parse_count(s);
    if (!r) return fail(v, p, r.message());
    const double d = *r;
    if (d != std::floor(d) || d > std::numeric_limits<int>::max()) {
      return fail(v, p, "'" + s + "' is not a whole number that fits an int");
    }
    if (d < min) {
      return fail(v, p, "must be at least " + std::to_string(min) + ", got " + s);
    }
    *out = static_cast<int>(d);
    return true;
  }

  bool read_bool(const YAML::Node& map, const std::string& path, std::string_view key,
                 bool* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    return parse_bool(v, child(path, key), out);
  }

  bool read_optional_bool(const YAML::Node& map, const std::string& path, std::string_view key,
                          std::optional<bool>* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    bool b = false;
    if (!parse_bool(v, child(path, key), &b)) return false;
    *out = b;
    return true;
  }

  bool parse_bool(const YAML::Node& v, const std::string& p, bool* out) {
    std::string s;
    if (!scalar(v, p, "true or false", &s)) return false;
    if (s == "true" || s == "yes" || s == "on") {
      *out = true;
    } else if (s == "false" || s == "no" || s == "off") {
      *out = false;
    } else {
      return fail(v, p, "expected true or false, got '" + s + "'");
    }
    return true;
  }

  bool read_string(const YAML::Node& map, const std::string& path, std::string_view key,
                   std::string* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    std::string s;
    if (!scalar(v, child(path, key), "a string", &s)) return false;
    if (s.empty()) return fail(v, child(path, key), "must not be empty");
    *out = s;
    return true;
  }

  // A quantity with a unit (or a plain fraction / USD), parsed by kind; must be > 0 unless
  // zero_ok.
  bool parse_quantity(const YAML::Node& v, const std::string& p, FieldKind kind, bool zero_ok,
                      double* out) {
    std::string s;
    if (!scalar(v, p, "a value with a unit", &s)) return false;
    Result<double> r = Error{};
    switch (kind) {
      case FieldKind::kFlops: r = parse_flops(s); break;
      case FieldKind::kBytes: r = parse_size_bytes(s); break;
      case FieldKind::kBandwidth: r = parse_bandwidth_Bps(s); break;
      case FieldKind::kTime: r = parse_time_s(s); break;
      case FieldKind::kUsd: r = parse_usd(s); break;
      case FieldKind::kWatts: r = parse_watts(s); break;
      case FieldKind::kCount: r = parse_count(s); break;
      case FieldKind::kFraction: {
        auto d = plain_number(s);
        if (!d || *d < 0 || *d > 1) {
          return fail(v, p, "expected a fraction between 0 and 1, got '" + s + "'");
        }
        r = *d;
        break;
      }
      default: return fail(v, p, "internal: not a quantity");
    }
    if (!r) return fail(v, p, r.message());
    if (*r == 0 && !zero_ok) return fail(v, p, "must be greater than zero");
    *out = *r;
    return true;
  }

  bool read_quantity(const YAML::Node& map, const std::string& path, std::string_view key,
                     FieldKind kind, bool zero_ok, double* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    return parse_quantity(v, child(path, key), kind, zero_ok, out);
  }

  template <class E, std::size_t N>
  bool read_enum(const YAML::Node& map, const std::string& path, std::string_view key,
                 const std::pair<std::string_view, E> (&names)[N], E* out) {
    const YAML::Node v = map[std::string(key)];
    if (!v.IsDefined()) return true;
    const std::string p = child(path, key);
    std::string s;
    if (!scalar(v, p, "a name", &s)) return false;
    std::vector<std::string_view> known;
    for (const auto& [n, e] : names) {
      if (n == s) {
        *out = e;
        return true;
      }
      known.push_back(n);
    }
    return fail(v, p, "unknown value '" + s + "' (" + did_you_mean(s, known) +
                          "expected one of: " + join(known) + ")");
  }

  // A catalog entry: an id, or a map {base: id, field: value, ...} overriding fields.
  template <class Spec>
  bool read_spec(const YAML::Node& map, const std::string& path, std::string_view key,
                 std::string_view kind, const Spec* (*find)(std::string_view),
                 std::string (*known)(), const std::vector<OverrideField<Spec>>& fields,
                 Spec* out, bool* given) {
    const YAML::Node v = map[std::string(key)];
    *given = v.IsDefined();
    if (!v.IsDefined()) return true;
    const std::string p = child(path, key);
    if (v.IsMap()) {
      std::vector<std::string_view> allowed{"base"};
      for (const auto& f : fields) allowed.push_back(f.key);
      if (!open_map(v, p, allowed)) return false;
    }
    // Never assign one YAML::Node to another: yaml-cpp's operator= writes through to the tree.
    const YAML::Node base_node = v.IsMap() ? v["base"] : v;
    if (v.IsMap()) {
      if (!base_node.IsDefined()) {
        return fail(v, p, "an override map needs 'base: <" + std::string(kind) +
                              " id>' (known: " + known() + ")");
      }
    }
    const std::string id_path = v.IsMap() ? child(p, "base") : p;
    std::string id;
    if (!scalar(base_node, id_path, "a catalog id or a map with 'base:'", &id)) return false;
    const Spec* spec = find(id);
    if (spec == nullptr) {
      std::vector<std::string> ids;
      std::stringstream ss(known());
      for (std::string t; std::getline(ss, t, ',');) ids.push_back(t.substr(t[0] == ' '));
      const std::string best = nearest(id, ids);
      return fail(base_node, id_path,
                  "unknown " + std::string(kind) + " '" + id + "' (" +
                      (best.empty() ? "" : "did you mean '" + best + "'? ") +
                      "known: " + known() + ")");
    }
    *out = *spec;
    if (!v.IsMap()) return true;
    std::vector<std::string> changed;
    for (const auto& f : fields) {
      const YAML::Node fv = v[std::string(f.key)];
      if (!fv.IsDefined()) continue;
      const std::string fp = child(p, f.key);
      bool ok = true;
      switch (f.kind) {
        case FieldKind::kInt: ok = parse_int(fv, fp, 0, &(out->*f.integer)); break;
        case FieldKind::kBool: ok = parse_bool(fv, fp, &(out->*f.flag)); break;
        case FieldKind::kString: ok = scalar(fv, fp, "a string", &(out->*f.text)); break;
        default: ok = parse_quantity(fv, fp, f.kind, /*zero_ok=*/true, &(out->*f.number)); break;
      }
      if (!ok) return false;
      changed.emplace_back(f.key);
    }
    if (!changed.empty()) {
      out->source += "; overridden by " + sc_.path + ": " + join(changed);
    }
    return true;
  }

  // "3", "3.0" or "3:1"; at least 1 (1 = non-blocking).
  bool read_oversubscription(const YAML::Node& map, const std::string& path) {
    const YAML::Node v = map["oversubscription"];
    if (!v.IsDefined()) return true;
    const std::string p = child(path, "oversubscription");
    std::string s;
    if (!scalar(v, p, "a ratio", &s)) return false;
    std::string_view t = s;
    if (t.size() > 2 && t.substr(t.size() - 2) == ":1") t.remove_suffix(2);
    auto d = plain_number(t);
    if (!d) return fail(v, p, "expected a ratio such as 1, 2.0 or 3:1, got '" + s + "'");
    if (*d < 1) {
      return fail(v, p, "must be at least 1 (downlink : uplink bandwidth; 1 = non-blocking), got " + s);
    }
    sc_.cluster.fabric.oversubscription = *d;
    return true;
  }

  bool required(const YAML::Node& map, const std::string& path, std::string_view key,
                const std::string& hint) {
    if (map[std::string(key)].IsDefined()) return true;
    return fail(map, path, "missing key '" + std::string(key) + "'" + hint);
  }

  bool load_cluster(const YAML::Node& node);
  bool load_node(const YAML::Node& node, const std::string& path);
  bool load_fabric(const YAML::Node& node, const std::string& path);
  bool load_workload(const YAML::Node& node);
  bool load_parallelism(const YAML::Node& node, const std::string& path);
  bool load_model(const YAML::Node& node);
  bool load_interference(const YAML::Node& node);
  bool load_cost(const YAML::Node& node);
  bool check_combinations();

  Scenario sc_;
  std::vector<ScenarioOverride> overrides_;
  bool check_layout_ = true;
  std::optional<Error> error_;
  bool nic_given_ = false;
  bool switch_given_ = false;
  bool radix_given_ = false;
};

// Sets the value at o.key_path, creating the maps on the way; a catalog id on the way to one of
// its fields (cluster.node.gpu.hbm) becomes {base: id}.
bool Loader::apply_override(YAML::Node root, const ScenarioOverride& o) {
  auto fail_override = [&](const std::string& what) {
    if (!error_) error_ = Error{o.origin() + ": " + what};
    return false;
  };
  if (Status key = check_scenario_key(o.key_path); !key.ok()) return fail_override(key.message());
  std::optional<YAML::Node> value;
  try {
    value.emplace(YAML::Load(o.value));
  } catch (const YAML::Exception& e) {
    return fail_override("YAML syntax error in the value: " + e.msg);
  }
  if (!root.IsMap()) return true;  // reading the file reports what is wrong with it
  const std::vector<std::string> parts = split_key_path(o.key_path);
  YAML::Node node = root;  // handles: reset() rebinds, operator= would write into the tree
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path = child(path, parts[i]);
    YAML::Node next = node[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      node[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next.reset(node[parts[i]]);
    } else if (const auto keys = keys_under(path);
               next.IsScalar() && !keys.empty() && keys.front() == "base") {
      YAML::Node spec(YAML::NodeType::Map);
      spec["base"] = next.Scalar();
      node[parts[i]] = spec;
      next.reset(node[parts[i]]);
    } else if (!next.IsMap()) {
      return fail_override(path + " holds " + describe(next) + ", not a map of keys");
    }
    node.reset(next);
  }
  node[parts.back()] = *value;
  return true;
}

// `cost:`: the rented price and the keys of owning vs renting (docs/cost.md). Absent keys stay
// CostConfig::kNotGiven; the model fills the price book's defaults.
bool Loader::load_cost(const YAML::Node& node) {
  CostConfig& c = sc_.cost;
  c.present = true;
  using K = FieldKind;
  struct Field {
    std::string_view key;
    FieldKind kind;
    double* out;
  };
  const Field fields[] = {
      {"gpu_hour", K::kUsd, &c.gpu_hour_usd},
      {"reserved_1y", K::kUsd, &c.reserved_1y_usd},
      {"reserved_3y", K::kUsd, &c.reserved_3y_usd},
      {"utilization", K::kFraction, &c.utilization},
      {"server_price", K::kUsd, &c.server_usd},
      {"installation", K::kFraction, &c.installation_share},
      {"depreciation", K::kTime, &c.depreciation_s},
      {"electricity", K::kUsd, &c.electricity_usd_per_kwh},
      {"pue", K::kCount, &c.pue},
      {"facility_kw_month", K::kUsd, &c.facility_usd_per_kw_month},
      {"support", K::kFraction, &c.support_share},
      {"staff", K::kCount, &c.staff_fte},
      {"staff_salary", K::kUsd, &c.staff_usd_per_year},
      {"server_power", K::kWatts, &c.server_w_per_gpu},
      {"storage_capacity", K::kBytes, &c.storage_bytes},
      {"storage_price", K::kUsd, &c.storage_usd_per_tb},
      {"cloud_storage_price", K::kUsd, &c.cloud_storage_usd_per_tb_month},
      {"egress", K::kBytes, &c.egress_bytes},
      {"egress_price", K::kUsd, &c.egress_usd_per_gb},
  };
  if (!open_map(node, "cost", kCostKeys)) return false;
  for (const Field& f : fields) {
    // Only a utilization of 0 and a depreciation of 0 make no sense; every price may be 0.
    const bool zero_ok = f.key != "utilization" && f.key != "depreciation" && f.key != "pue";
    if (!read_quantity(node, "cost", f.key, f.kind, zero_ok, f.out)) return false;
  }
  if (c.pue != CostConfig::kNotGiven && c.pue < 1) {
    return fail(node["pue"], "cost.pue",
                "facility power over IT power is at least 1, got " + node["pue"].Scalar());
  }
  static constexpr std::pair<std::string_view, Facility> kFacilities[] = {
      {"colocation", Facility::kColocation}, {"own", Facility::kOwn}};
  return read_enum(node, "cost", "facility", kFacilities, &c.facility);
}

bool Loader::load_interference(const YAML::Node& node) {
  static constexpr std::pair<std::string_view, NeighbourPlacement> kPlacements[] = {
      {"after", NeighbourPlacement::kAfter}, {"interleaved", NeighbourPlacement::kInterleaved}};
  static constexpr std::pair<std::string_view, NeighbourPattern> kPatterns[] = {
      {"ring", NeighbourPattern::kRing}, {"alltoall", NeighbourPattern::kAllToAll}};
  InterferenceConfig& in = sc_.interference;
  const std::string path = "interference";
  if (!open_map(node, path, kInterferenceKeys)) return false;
  const YAML::Node n = node["neighbour"];
  const std::string np = path + ".neighbour";
  if (n.IsDefined() &&
      (!open_map(n, np, kNeighbourKeys) || !read_int(n, np, "nodes", 0, &in.neighbour_nodes) ||
       !read_enum(n, np, "placement", kPlacements, &in.placement) ||
       !read_enum(n, np, "pattern", kPatterns, &in.pattern) ||
       !read_quantity(n, np, "load", FieldKind::kFraction, false, &in.neighbour_load))) {
    return false;
  }
  const YAML::Node b = node["background"];
  const std::string bp = path + ".background";
  if (b.IsDefined() &&
      (!open_map(b, bp, kBackgroundKeys) ||
       !read_quantity(b, bp, "per_node", FieldKind::kBandwidth, true, &in.background_per_node_Bps))) {
    return false;
  }
  int seed = static_cast<int>(in.seed);
  if (!read_int(node, path, "seed", 0, &seed)) return false;
  in.seed = static_cast<std::uint64_t>(seed);
  return true;
}

bool Loader::load_node(const YAML::Node& node, const std::string& path) {
  if (!open_map(node, path, kNodeKeys)) return false;
  NodeConfig& n = sc_.cluster.node;
  bool given = false;
  if (!required(node, path, "gpu", " (a catalog id: " + known_gpu_ids() + ")")) return false;
  if (!read_spec<GpuSpec>(node, path, "gpu", "gpu", find_gpu, known_gpu_ids, gpu_fields(),
                          &n.gpu, &given)) {
    return false;
  }
  if (!read_int(node, path, "gpus_per_node", 1, &n.gpus_per_node)) return false;
  bool scale_up_given = false;
  if (!read_spec<ScaleUpSpec>(node, path, "scale_up", "scale_up", find_scale_up,
                              known_scale_up_ids, scale_up_fields(), &n.scale_up,
                              &scale_up_given)) {
    return false;
  }
  if (!scale_up_given) {
    // Default from the GPU: its NVLink generation behind an NVSwitch, else its PCIe generation.
    const std::string arch = arch_family(n.gpu.arch);
    const char* id = n.gpu.pcie_gen >= 5 ? "pcie5" : "pcie4";
    if (n.gpu.nvlink_links > 0 && n.gpu.vendor == "nvidia") {
      id = arch == "sm_80" ? "nvlink3" : arch == "sm_100" ? "nvlink5" : "nvlink4";
    }
    n.scale_up = *find_scale_up(id);
  }
  const std::string su_path = child(path, "scale_up");
  if (n.scale_up.technology == LinkTechnology::kNvlink) {
    if (n.gpu.nvlink_Bps() <= 0) {
      return fail_key(su_path, n.gpu.id + " has no NVLink (use pcie4 or pcie5)");
    }
    n.scale_up.per_gpu_Bps = std::min(n.scale_up.per_gpu_Bps, n.gpu.nvlink_Bps());
  } else if (n.gpu.pcie_Bps() > 0) {
    n.scale_up.per_gpu_Bps = std::min(n.scale_up.per_gpu_Bps, n.gpu.pcie_Bps());
  }
  if (!read_int(node, path, "nics_per_node", 0, &n.nics_per_node)) return false;
  if (!read_spec<NicSpec>(node, path, "nic", "nic", find_nic, known_nic_ids, nic_fields(), &n.nic,
                          &nic_given_)) {
    return false;
  }
  if (!read_int(node, path, "links_per_nic", 1, &n.links_per_nic)) return false;
  return true;
}

bool Loader::load_fabric(const YAML::Node& node, const std::string& path) {
  if (!open_map(node, path, kFabricKeys)) return false;
  FabricConfig& f = sc_.cluster.fabric;
  static constexpr std::pair<std::string_view, TopologyKind> kTopologies[] = {
      {"fat-tree", TopologyKind::kFatTree},
      {"leaf-spine", TopologyKind::kLeafSpine},
      {"rail-optimized", TopologyKind::kRailOptimized},
      {"single-switch", TopologyKind::kSingleSwitch}};
  static constexpr std::pair<std::string_view, Routing> kRoutings[] = {
      {"adaptive", Routing::kAdaptive}, {"ecmp", Routing::kEcmp}, {"static", Routing::kStatic}};
  radix_given_ = node["switch_radix"].IsDefined();
  return read_enum(node, path, "topology", kTopologies, &f.topology) &&
         read_int(node, path, "tiers", 1, &f.tiers) &&
         read_int(node, path, "switch_radix", 2, &f.switch_radix) &&
         read_int(node, path, "leaves", 1, &f.leaves) &&
         read_int(node, path, "spines", 1, &f.spines) &&
         read_int(node, path, "uplinks_per_leaf", 1, &f.uplinks_per_leaf) &&
         read_oversubscription(node, path) &&
         read_enum(node, path, "routing", kRoutings, &f.routing) &&
         read_int(node, path, "qps_per_connection", 1, &f.qps_per_connection) &&
         read_bool(node, path, "in_network_reduction", &f.in_network_reduction) &&
         read_spec<SwitchSpec>(node, path, "switch", "switch", find_switch, known_switch_ids,
                               switch_fields(), &f.switch_spec, &switch_given_);
}


bool Loader::load_cluster(const YAML::Node& node) {
  const std::string path = "cluster";
  if (!open_map(node, path, kClusterKeys)) return false;
  ClusterConfig& c = sc_.cluster;
  if (!read_int(node, path, "nodes", 1, &c.nodes)) return false;
  if (!required(node, path, "node", " (gpu, gpus_per_node, scale_up, nics_per_node, nic)")) {
    return false;
  }
  if (!load_node(node["node"], child(path, "node"))) return false;
  const YAML::Node fabric = node["fabric"];
  if (fabric.IsDefined() && !load_fabric(fabric, child(path, "fabric"))) return false;
  const YAML::Node storage = node["storage"];
  if (storage.IsDefined()) {
    const std::string sp = child(path, "storage");
    if (!open_map(storage, sp, kStorageKeys) ||
        !read_quantity(storage, sp, "write_bandwidth", FieldKind::kBandwidth, false,
                       &c.storage.write_Bps)) {
      return false;
    }
  }

  // The NIC and the switch it plugs into.
  NodeConfig& n = c.node;
  if (!nic_given_) {
    if (c.nodes > 1 || n.nics_per_node > 0) {
      return fail(node["node"], "cluster.node",
                  "missing key 'nic' (" +
                      std::string(c.nodes > 1 ? "a multi-node cluster" : "nics_per_node > 0") +
                      " needs a NIC; known: " + known_nic_ids() + ")");
    }
    return true;
  }
  // The format has no default fabric (docs/scenario-format.md): a multi-node cluster says how
  // its NICs are joined (issue 2: "NICs without a fabric" is an error, not a silent fat-tree).
  if (c.nodes > 1 && !required(node, path, "fabric",
                               " (" + std::to_string(c.nodes) +
                                   " nodes need the network that joins their NICs, e.g. "
                                   "fabric: {topology: fat-tree, tiers: 2}; topology: fat-tree, "
                                   "leaf-spine, rail-optimized or single-switch)")) {
    return false;
  }
  FabricConfig& f = c.fabric;
  const std::string sw_path = "cluster.fabric.switch";
  if (switch_given_) {
    if (!switch_serves(f.switch_spec, n.nic)) {
      return fail_key(sw_path, "switch '" + f.switch_spec.id + "' (" +
                                   std::string(to_string(f.switch_spec.technology)) + ", " +
                                   format_bandwidth_bits(f.switch_spec.port_Bps) +
                                   " ports) cannot carry nic '" + n.nic.id + "' (" +
                                   std::string(to_string(n.nic.technology)) + ", " +
                                   format_bandwidth_bits(n.nic.line_rate_Bps) + ")");
    }
  } else {
    const SwitchSpec* sw = default_switch_for(n.nic);
    if (sw == nullptr) {
      return fail_key("cluster.node.nic", "no catalog switch carries a " +
                                              format_bandwidth_bits(n.nic.line_rate_Bps) + " " +
                                              std::string(to_string(n.nic.technology)) +
                                              " link; name one in fabric.switch");
    }
    f.switch_spec = *sw;
  }
  if (!radix_given_) f.switch_radix = f.switch_spec.radix;
  return true;
}

bool Loader::load_model(const YAML::Node& node) {
  const std::string path = "workload";
  ModelSpec& m = sc_.workload.model;
  bool given = false;
  if (!read_spec<ModelSpec>(node, path, "model", "model", find_model, known_model_ids, {}, &m,
                            &given)) {
    return false;
  }
  static constexpr std::string_view kDims[] = {"layers", "hidden", "ffn_hidden", "vocab",
                                               "heads"};
  if (!given) {
    for (auto d : kDims) {
      if (!required(node, path, d,
                    " (give 'model: <id>' (" + known_model_ids() +
                        ") or all of layers, hidden, heads, ffn_hidden, vocab)")) {
        return false;
      }
    }
    m.id = "custom";
    m.name = "custom transformer";
    m.source = "dimensions given in " + sc_.path;
  }
  std::vector<std::string> overridden;
  auto dim = [&](std::string_view key, int* out) {
    if (node[std::string(key)].IsDefined()) overridden.emplace_back(key);
    return read_int(node, path, key, 1, out);
  };
  auto flag_dim = [&](std::string_view key, bool* out) {
    if (node[std::string(key)].IsDefined()) overridden.emplace_back(key);
    return read_bool(node, path, key, out);
  };
  const bool kv_given = node["kv_heads"].IsDefined();
  if (!dim("layers", &m.layers) || !dim("hidden", &m.hidden) || !dim("heads", &m.heads) ||
      !dim("kv_heads", &m.kv_heads) || !dim("ffn_hidden", &m.ffn_hidden) ||
      !dim("vocab", &m.vocab) || !flag_dim("gated_ffn", &m.gated_ffn) ||
      !flag_dim("tied_embeddings", &m.tied_embeddings) ||
      !flag_dim("linear_biases", &m.linear_biases)) {
    return false;
  }
  static constexpr std::pair<std::string_view, Normalization> kNorms[] = {
      {"layernorm", Normalization::kLayerNorm}, {"rmsnorm", Normalization::kRmsNorm}};
  static constexpr std::pair<std::string_view, PositionEmbedding> kPositions[] = {
      {"rope", PositionEmbedding::kRope},
      {"learned", PositionEmbedding::kLearned},
      {"alibi", PositionEmbedding::kAlibi}};
  for (auto key : {"normalization", "position_embedding"}) {
    if (node[key].IsDefined()) overridden.emplace_back(key);
  }
  if (!read_enum(node, path, "normalization", kNorms, &m.normalization) ||
      !read_enum(node, path, "position_embedding", kPositions, &m.position_embedding)) {
    return false;
  }
  if (!given && !kv_given) m.kv_heads = m.heads;  // no grouped-query attention
  if (!dim("head_dim", &m.head_dim_override)) return false;
  if (node["mtp_layers"].IsDefined()) overridden.emplace_back("mtp_layers");
  if (!read_int(node, path, "mtp_layers", 0, &m.mtp_layers)) return false;
  for (auto key : {"sliding_window", "sliding_window_layers"}) {
    if (node[key].IsDefined()) overridden.emplace_back(key);
  }
  if (!read_int(node, path, "sliding_window", 0, &m.sliding_window) ||
      !read_int(node, path, "sliding_window_layers", 0, &m.sliding_window_layers)) {
    return false;
  }
  if (node["sliding_window"].IsDefined() && !node["sliding_window_layers"].IsDefined() &&
      m.sliding_window > 0 && m.sliding_window_layers == 0) {
    m.sliding_window_layers = m.layers;  // a window on every layer unless said otherwise
  }
  if (m.sliding_window_layers > m.layers) {
    // Given here, or the preset's count against fewer layers given here.
    const char* key =
        node["sliding_window_layers"].IsDefined() ? "sliding_window_layers" : "layers";
    return fail(node[key], child(path, key),
                "at most the model's " + std::to_string(m.layers) + " layers, got " +
                    std::to_string(m.sliding_window_layers) + " windowed ones" +
                    (key == std::string_view("layers")
                         ? " from " + m.id + ": give sliding_window_layers"
                         : std::string()));
  }
  if (m.sliding_window_layers > 0 && m.sliding_window == 0) {
    return fail(node["sliding_window_layers"], child(path, "sliding_window_layers"),
                "needs sliding_window (the tokens a query of those layers sees)");
  }
  // Multi-head latent attention and the experts: maps of their own; each key given overrides
  // the preset's.
  const YAML::Node mla = node["mla"];
  if (mla.IsDefined()) {
    const std::string mp = child(path, "mla");
    if (!open_map(mla, mp, kMlaKeys)) return false;
    overridden.emplace_back("mla");
    MlaSpec& a = m.mla;
    const bool had_mla = a.enabled();
    if (!read_int(mla, mp, "q_lora_rank", 0, &a.q_lora_rank) ||
        !read_int(mla, mp, "kv_lora_rank", 1, &a.kv_lora_rank) ||
        !read_int(mla, mp, "qk_nope_head_dim", 1, &a.qk_nope_head_dim) ||
        !read_int(mla, mp, "qk_rope_head_dim", 1, &a.qk_rope_head_dim) ||
        !read_int(mla, mp, "v_head_dim", 1, &a.v_head_dim)) {
      return false;
    }
    for (auto key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (!had_mla && !required(mla, mp, key,
                                " (multi-head latent attention needs kv_lora_rank, "
                                "qk_nope_head_dim, qk_rope_head_dim and v_head_dim)")) {
        return false;
      }
    }
  }
  const YAML::Node moe = node["moe"];
  if (moe.IsDefined()) {
    const std::string moe_path = child(path, "moe");
    if (!open_map(moe, moe_path, kMoeKeys)) return false;
    MoeSpec& e = m.moe;
    const bool had_experts = e.enabled();
    for (auto key : {"experts", "top_k", "expert_ffn_hidden", "shared_experts", "dense_layers"}) {
      if (moe[key].IsDefined()) overridden.emplace_back(std::string("moe.") + key);
    }
    if (!read_int(moe, moe_path, "experts", 2, &e.experts) || !read_int(moe, moe_path, "top_k", 1, &e.top_k) ||
        !read_int(moe, moe_path, "expert_ffn_hidden", 1, &e.expert_ffn_hidden) ||
        !read_int(moe, moe_path, "shared_experts", 0, &e.shared_experts) ||
        !read_int(moe, moe_path, "dense_layers", 0, &e.dense_layers)) {
      return false;
    }
    if (!had_experts && e.enabled()) {
      for (auto key : {"top_k", "expert_ffn_hidden"}) {
        if (!required(moe, moe_path, key, " (a mixture of experts needs experts, top_k and "
                                    "expert_ffn_hidden)")) {
          return false;
        }
      }
    }
    ExpertRouting& r = sc_.workload.moe_routing;
    static constexpr std::pair<std::string_view, bool> kRoutings[] = {{"random", false},
                                                                     {"consecutive", true}};
    if (!read_quantity(moe, moe_path, "capacity_factor", FieldKind::kCount, false, &r.capacity_factor) ||
        !read_quantity(moe, moe_path, "imbalance", FieldKind::kCount, false, &r.imbalance) ||
        !read_int(moe, moe_path, "max_nodes_per_token", 1, &r.max_nodes_per_token) ||
        !read_enum(moe, moe_path, "routing", kRoutings, &r.consecutive)) {
      return false;
    }
    if (moe["imbalance"].IsDefined() && r.imbalance < 1) {
      return fail(moe["imbalance"], child(moe_path, "imbalance"),
                  "the busiest GPU's share over the even share is at least 1, got " +
                      format_significant(r.imbalance, 4));
    }
    if (moe["capacity_factor"].IsDefined() && moe["imbalance"].IsDefined()) {
      return fail(moe["imbalance"], child(moe_path, "imbalance"),
                  "give capacity_factor (tokens dropped beyond it) or imbalance (dropless), not "
                  "both");
    }
    if (!e.enabled()) {
      // A dense model: any key here (top_k, routing...) would be ignored without a word.
      return fail(moe, moe_path,
                  "needs a mixture-of-experts model: give experts (with top_k and "
                  "expert_ffn_hidden) or a MoE preset such as mixtral-8x7b");
    }
  }
  if (given && !overridden.empty()) {
    m.name += " (modified)";
    m.source += "; overridden by " + sc_.path + ": " + join(overridden);
  }
  return true;
}

bool Loader::load_parallelism(const YAML::Node& node, const std::string& path) {
  if (!open_map(node, path, kParallelismKeys)) return false;
  ParallelismConfig& p = sc_.workload.parallelism;
  static constexpr std::pair<std::string_view, Recompute> kRecompute[] = {
      {"none", Recompute::kNone},
      {"selective", Recompute::kSelective},
      {"selective-op", Recompute::kSelectiveOp},
      {"full", Recompute::kFull}};
  static constexpr std::pair<std::string_view, PipelineSchedule> kSchedules[] = {
      {"gpipe", PipelineSchedule::kGpipe},
      {"1f1b", PipelineSchedule::k1F1B},
      {"interleaved", PipelineSchedule::kInterleaved},
      {"dualpipe", PipelineSchedule::kDualPipe}};
  if (!read_int(node, path, "tp", 1, &p.tp) || !read_int(node, path, "pp", 1, &p.pp) ||
      !read_int(node, path, "dp", 1, &p.dp) || !read_int(node, path, "cp", 1, &p.cp) ||
      !read_bool(node, path, "sp", &p.sp) || !read_int(node, path, "zero", 0, &p.zero) ||
      !read_enum(node, path, "recompute", kRecompute, &p.recompute) ||
      !read_enum(node, path, "pp_schedule", kSchedules, &p.pp_schedule) ||
      !read_int(node, path, "virtual_stages", 1, &p.virtual_stages) ||
      !read_int(node, path, "ep", 1, &p.ep) || !read_int(node, path, "etp", 1, &p.etp) ||
      !read_int(node, path, "first_stage_layers", 1, &p.first_stage_layers) ||
      !read_int(node, path, "last_stage_layers", 1, &p.last_stage_layers)) {
    return false;
  }
  std::string layout_text;
  if (!read_string(node, path, "pipeline_layout", &layout_text)) return false;
  if (!layout_text.empty()) {
    std::string why;
    if (!parse_pipeline_layout(layout_text, &p.layout, &why)) {
      return fail(node["pipeline_layout"], child(path, "pipeline_layout"), why);
    }
  }
  if (p.zero > 3) {
    return fail(node["zero"], child(path, "zero"),
                "must be 0, 1, 2 or 3 (3 = FSDP full shard), got " + std::to_string(p.zero));
  }
  const YAML::Node modules = node["recompute_modules"];
  if (modules.IsDefined()) {
    static constexpr std::pair<std::string_view, RecomputeModule> kModules[] = {
        {"core_attn", kRecomputeCoreAttn},   {"layernorm", kRecomputeLayerNorm},
        {"mla_up_proj", kRecomputeMlaUpProj}, {"moe_act", kRecomputeMoeAct},
        {"mlp", kRecomputeMlp},              {"moe", kRecomputeMoe},
        {"shared_experts", kRecomputeSharedExperts}};
    const std::string mp = child(path, "recompute_modules");
    if (!modules.IsSequence() || modules.size() == 0) {
      return fail(modules, mp,
                  "expected a list of modules (core_attn, layernorm, mla_up_proj, moe_act, mlp, "
                  "moe, shared_experts), got " + describe(modules));
    }
    if (p.recompute != Recompute::kSelective) {
      return fail(modules, mp, "recompute_modules needs recompute: selective");
    }
    p.recompute_modules = 0;
    for (const YAML::Node& item : modules) {
      std::string name;
      if (!scalar(item, mp, "a module name", &name)) return false;
      bool known = false;
      for (const auto& [n, bit] : kModules) {
        if (n == name) {
          p.recompute_modules |= bit;
          known = true;
        }
      }
      if (!known) {
        return fail(item, mp,
                    "unknown module '" + name + "' (core_attn, layernorm, mla_up_proj, moe_act, "
                    "mlp, moe, shared_experts)");
      }
    }
  }
  return true;
}

bool Loader::load_workload(const YAML::Node& node) {
  const std::string path = "workload";
  if (!open_map(node, path, kWorkloadKeys)) return false;
  WorkloadConfig& w = sc_.workload;
  static constexpr std::pair<std::string_view, Precision> kPrecisions[] = {
      {"fp32", Precision::kFp32},
      {"tf32", Precision::kTf32},
      {"bf16", Precision::kBf16},
      {"fp16", Precision::kFp16},
      {"fp8", Precision::kFp8},
      {"fp4", Precision::kFp4}};
  if (!load_model(node) || !read_int(node, path, "seq_len", 1, &w.seq_len) ||
      !read_int(node, path, "global_batch", 1, &w.global_batch) ||
      !read_int(node, path, "micro_batch", 1, &w.micro_batch) ||
      !read_enum(node, path, "precision", kPrecisions, &w.precision) ||
      !read_quantity(node, path, "train_tokens", FieldKind::kCount, false, &w.train_tokens) ||
      !read_quantity(node, path, "dropout", FieldKind::kFraction, true, &w.dropout)) {
    return false;
  }
  if (w.dropout >= 1) return fail(node["dropout"], child(path, "dropout"), "must be below 1");
  const YAML::Node fw = node["framework"];
  if (fw.IsDefined()) {
    const std::string fp = child(path, "framework");
    static constexpr std::pair<std::string_view, AttentionKernel> kAttention[] = {
        {"flash", AttentionKernel::kFlash},
        {"flash2", AttentionKernel::kFlash2},
        {"flash1", AttentionKernel::kFlash1},
        {"unfused", AttentionKernel::kUnfused}};
    static constexpr std::pair<std::string_view, KernelFusion> kKernels[] = {
        {"fused", KernelFusion::kFused},
        {"eager", KernelFusion::kEager},
        {"compiled", KernelFusion::kCompiled}};
    static constexpr std::pair<std::string_view, AmaxReduction> kAmaxReductions[] = {
        {"data-parallel", AmaxReduction::kDataParallel},
        {"tensor-parallel", AmaxReduction::kTensorParallel},
        {"async", AmaxReduction::kAsync}};
    static constexpr std::pair<std::string_view, Fp8Recipe> kFp8Recipes[] = {
        {"tensorwise", Fp8Recipe::kTensorwise},
        {"delayed", Fp8Recipe::kDelayed},
        {"blockwise", Fp8Recipe::kBlockwise},
        {"mxfp8", Fp8Recipe::kMxfp8}};
    static constexpr std::pair<std::string_view, bool> kNormKernels[] = {{"fused", false},
                                                                        {"fp32-ops", true}};
    static constexpr std::pair<std::string_view, bool> kDispatchers[] = {{"alltoall", false},
                                                                        {"hierarchical", true}};
    static constexpr std::pair<std::string_view, std::optional<bool>> kLayouts[] = {
        {"sbh", false}, {"bsh", true}};
    static constexpr std::pair<std::string_view, std::optional<bool>> kProjections[] = {
        {"fused", false}, {"separate", true}};
    static constexpr std::pair<std::string_view, std::optional<bool>> kExpertBias[] = {
        {"per_expert", true}, {"grouped", false}};
    static constexpr std::pair<std::string_view, LossInput> kLossInputs[] = {
        {"fp32", LossInput::kFp32},
        {"autocast", LossInput::kAutocast},
        {"fused", LossInput::kFused}};
    static constexpr std::pair<std::string_view, LossKernel> kLossKernels[] = {
        {"unfused", LossKernel::kUnfused}, {"fused", LossKernel::kFused}, {"te", LossKernel::kTe}};
    static constexpr std::pair<std::string_view, bool> kOptimizerKernels[] = {{"fused", false},
                                                                             {"foreach", true}};
    static constexpr std::pair<std::string_view, bool> kCpAttention[] = {{"ring", false},
                                                                          {"allgather", true}};
    static constexpr std::pair<std::string_view, bool> kZero1Reduce[] = {
        {"reduce_scatter", false}, {"all_reduce", true}};
    FrameworkConfig& f = w.framework;
    if (!open_map(fw, fp, kFrameworkKeys) ||
        !read_enum(fw, fp, "attention", kAttention, &f.attention) ||
        !read_enum(fw, fp, "kernels", kKernels, &f.kernels) ||
        !read_bool(fw, fp, "tp_comm_overlap", &f.tp_comm_overlap) ||
        !read_bool(fw, fp, "tp_wgrad_overlap", &f.tp_wgrad_overlap) ||
        !read_bool(fw, fp, "tp_overlap_input_gradients", &f.tp_overlap_input_gradients) ||
        !read_bool(fw, fp, "sp_input_regather", &f.sp_input_regather) ||
        !read_enum(fw, fp, "activation_layout", kLayouts, &f.batch_first_activations) ||
        !read_enum(fw, fp, "projections", kProjections, &f.separate_projection_gemms) ||
        !read_optional_bool(fw, fp, "recompute_early_stop", &f.recompute_early_stop) ||
        !read_enum(fw, fp, "loss_input", kLossInputs, &f.loss_input) ||
        !read_enum(fw, fp, "loss_kernel", kLossKernels, &f.loss_kernel) ||
        !read_enum(fw, fp, "optimizer_kernel", kOptimizerKernels, &f.foreach_optimizer) ||
        !read_bool(fw, fp, "low_precision_norm", &f.low_precision_norm) ||
        !read_enum(fw, fp, "norm_kernel", kNormKernels, &f.fp32_op_norm) ||
        !read_bool(fw, fp, "ep_comm_overlap", &f.ep_comm_overlap) ||
        !read_bool(fw, fp, "pp_comm_overlap", &f.pp_comm_overlap) ||
        !read_enum(fw, fp, "ep_dispatcher", kDispatchers, &f.ep_hierarchical) ||
        !read_enum(fw, fp, "fp8_recipe", kFp8Recipes, &f.fp8_recipe) ||
        !read_bool(fw, fp, "fp8_param_gather", &f.quantized_param_gather) ||
        !read_enum(fw, fp, "fp8_amax_reduction", kAmaxReductions, &f.fp8_amax_reduction) ||
        !read_bool(fw, fp, "fp8_attention", &f.fp8_attention) ||
        !read_bool(fw, fp, "fp4_param_gather", &f.quantized_param_gather) ||
        !read_bool(fw, fp, "grad_reduce_overlap", &f.grad_reduce_overlap) ||
        !read_bool(fw, fp, "param_gather_overlap", &f.param_gather_overlap) ||
        !read_quantity(fw, fp, "tp_overlap_copy_engine_share", FieldKind::kFraction, true,
                       &f.tp_overlap_copy_engine_share) ||
        !read_bool(fw, fp, "weights_in_fp32", &f.weights_in_fp32) ||
        !read_bool(fw, fp, "master_weights", &f.master_weights) ||
        !read_bool(fw, fp, "param_remainders", &f.param_remainders) ||
        !read_bool(fw, fp, "reshard_after_forward", &f.reshard_after_forward) ||
        !read_bool(fw, fp, "root_reshard_after_forward", &f.root_reshard_after_forward) ||
        !read_bool(fw, fp, "gradients_in_backward", &f.gradients_in_backward) ||
        !read_bool(fw, fp, "fp32_gradients", &f.fp32_gradients) ||
        !read_enum(fw, fp, "zero1_grad_reduce", kZero1Reduce, &f.zero1_all_reduce) ||
        !read_quantity(fw, fp, "moe_layer_host_time", FieldKind::kTime, true,
                       &f.moe_layer_host_s) ||
        !read_enum(fw, fp, "moe_expert_bias", kExpertBias, &f.expert_bias_per_expert) ||
        !read_enum(fw, fp, "cp_attention", kCpAttention, &f.cp_allgather) ||
        !read_quantity(fw, fp, "grad_bucket_params", FieldKind::kCount, false,
                       &f.grad_bucket_params) ||
        !read_bool(fw, fp, "nccl_nvls", &f.nccl_nvls)) {
      return false;
    }
    if (const YAML::Node ctas = fw["nccl_max_ctas"]; ctas.IsDefined()) {
      const std::string cp = child(fp, "nccl_max_ctas");
      auto& c = f.nccl_max_ctas;
      if (!open_map(ctas, cp, kNcclCtasKeys) || !read_int(ctas, cp, "tp", 1, &c.tp) ||
          !read_int(ctas, cp, "cp", 1, &c.cp) || !read_int(ctas, cp, "dp", 1, &c.dp) ||
          !read_int(ctas, cp, "pp", 1, &c.pp) || !read_int(ctas, cp, "ep", 1, &c.ep)) {
        return false;
      }
    }
    if (fw["tp_overlap_copy_engine_share"].IsDefined() && !f.tp_comm_overlap) {
      return fail(fw["tp_overlap_copy_engine_share"], child(fp, "tp_overlap_copy_engine_share"),
                  "applies to tp_comm_overlap: true (the TP collectives are not hidden)");
    }
    if (fw["low_precision_norm"].IsDefined() && f.kernels == KernelFusion::kFused) {
      return fail(fw["low_precision_norm"], child(fp, "low_precision_norm"),
                  "applies to kernels: eager or compiled (fused kernels have their own norms)");
    }
    if (fw["norm_kernel"].IsDefined() && f.kernels == KernelFusion::kFused) {
      return fail(fw["norm_kernel"], child(fp, "norm_kernel"),
                  "applies to kernels: eager or compiled (fused kernels have their own norms)");
    }
    if (f.fp32_op_norm && f.low_precision_norm) {
      return fail(fw["norm_kernel"], child(fp, "norm_kernel"),
                  "fp32-ops computes the norm in fp32; low_precision_norm: true computes it in 16 "
                  "bits: give one");
    }
    if (fw["master_weights"].IsDefined() && f.weights_in_fp32) {
      return fail(fw["master_weights"], child(fp, "master_weights"),
                  "applies to 16-bit parameters (weights_in_fp32: true keeps the parameters "
                  "themselves in fp32)");
    }
    if (fw["master_weights"].IsDefined() &&
        (w.precision == Precision::kFp32 || w.precision == Precision::kTf32)) {
      return fail(fw["master_weights"], child(fp, "master_weights"),
                  "applies to 16-bit or quantized training (fp32 training has no master copy)");
    }
    if (f.param_remainders &&
        (f.weights_in_fp32 || !f.master_weights || w.precision == Precision::kFp32 ||
         w.precision == Precision::kTf32 || w.precision == Precision::kFp16)) {
      return fail(fw["param_remainders"], child(fp, "param_remainders"),
                  "applies to bf16 parameters with an fp32 master copy (an fp32 value is a bf16 "
                  "one and 16 more bits; not with fp16, fp32 training, weights_in_fp32 or "
                  "master_weights: false)");
    }
    if (fw["loss_input"].IsDefined() && f.kernels == KernelFusion::kFused) {
      return fail(fw["loss_input"], child(fp, "loss_input"),
                  "applies to kernels: eager or compiled (fused kernels have their own "
                  "cross-entropy: loss_kernel)");
    }
    if (fw["loss_kernel"].IsDefined() && f.kernels != KernelFusion::kFused) {
      return fail(fw["loss_kernel"], child(fp, "loss_kernel"),
                  "applies to kernels: fused (PyTorch's kernels take loss_input)");
    }
    for (const auto& [key, precision] : {std::pair{"fp8_recipe", Precision::kFp8},
                                         std::pair{"fp8_param_gather", Precision::kFp8},
                                         std::pair{"fp8_amax_reduction", Precision::kFp8},
                                         std::pair{"fp8_attention", Precision::kFp8},
                                         std::pair{"fp4_param_gather", Precision::kFp4}}) {
      if (fw[key].IsDefined() && w.precision != precision) {
        return fail(fw[key], child(fp, key),
                    "applies to precision: " + std::string(to_string(precision)) +
                        " (the workload trains in " + std::string(to_string(w.precision)) + ")");
      }
    }
    if (fw["fp8_amax_reduction"].IsDefined() &&
        (f.fp8_recipe != Fp8Recipe::kDelayed || f.kernels != KernelFusion::kFused)) {
      return fail(fw["fp8_amax_reduction"], child(fp, "fp8_amax_reduction"),
                  "applies to Transformer Engine's delayed scaling (fp8_recipe: delayed, "
                  "kernels: fused)");
    }
    for (const char* key :
         {"ep_dispatcher", "ep_comm_overlap", "moe_layer_host_time", "moe_expert_bias"}) {
      if (fw[key].IsDefined() && !w.model.moe.enabled()) {
        return fail(fw[key], child(fp, key),
                    "applies to a mixture-of-experts model (" + w.model.name + " is dense)");
      }
    }
    if (fw["moe_expert_bias"].IsDefined() && !w.model.linear_biases) {
      return fail(fw["moe_expert_bias"], child(fp, "moe_expert_bias"),
                  "applies to a model with linear biases (" + w.model.name +
                      " has none: linear_biases: true gives them)");
    }
    if (fw["moe_expert_bias"].IsDefined() && f.kernels != KernelFusion::kFused) {
      return fail(fw["moe_expert_bias"], child(fp, "moe_expert_bias"),
                  "applies to kernels: fused (Megatron-Core's experts)");
    }
  }
  const YAML::Node par = node["parallelism"];
  if (par.IsDefined() && !load_parallelism(par, child(path, "parallelism"))) return false;
  if (fw.IsDefined() && fw["tp_overlap_input_gradients"].IsDefined() &&
      !w.framework.tp_comm_overlap) {
    return fail(fw["tp_overlap_input_gradients"],
                child(child(path, "framework"), "tp_overlap_input_gradients"),
                "applies to tp_comm_overlap: true (without it no TP collective is hidden)");
  }
  if (fw.IsDefined() && fw["sp_input_regather"].IsDefined() && !w.parallelism.sp) {
    return fail(fw["sp_input_regather"], child(child(path, "framework"), "sp_input_regather"),
                "applies to parallelism.sp: true (without SP each linear's input is whole, "
                "with nothing to gather again)");
  }
  return true;
}

// Rules between keys, each citing the key a user would change.
bool Loader::check_combinations() {
  const ClusterConfig& c = sc_.cluster;
  const NodeConfig& n = c.node;
  const FabricConfig& f = c.fabric;
  const WorkloadConfig& w = sc_.workload;
  auto given = [&](const std::string& key) { return sc_.locations.count(key) > 0; };
  auto cite = [&](const std::string& key, const std::string& fallback) {
    return given(key) ? key : fallback;
  };
  auto str = [](auto v) { return std::to_string(v); };

  // Cluster.
  // The idle board's power is what a lower cap cannot take from the clock (tdp_clock_factor).
  if (n.gpu.tdp_w > 0 && n.gpu.idle_w >= n.gpu.tdp_w) {
    return fail_key(cite("cluster.node.gpu.idle_power", "cluster.node.gpu.tdp"),
                    "the idle power (" + format_significant(n.gpu.idle_w, 4) +
                        " W) must be below the power cap (" + format_significant(n.gpu.tdp_w, 4) +
                        " W)");
  }
  if (c.nodes > 1 && n.nics_per_node == 0) {
    return fail_key(cite("cluster.node.nics_per_node", "cluster.nodes"),
                    str(c.nodes) + " nodes need nics_per_node >= 1 (typically one per GPU: " +
                        str(n.gpus_per_node) + ")");
  }
  const bool fat_tree_like =
      f.topology == TopologyKind::kFatTree || f.topology == TopologyKind::kRailOptimized;
  if (given("cluster.fabric.tiers")) {
    if (!fat_tree_like) {
      return fail_key("cluster.fabric.tiers",
                      "tiers applies to fat-tree and rail-optimized fabrics, not " +
                          std::string(to_string(f.topology)));
    }
    if (f.tiers != 2 && f.tiers != 3) {
      return fail_key("cluster.fabric.tiers", "must be 2 or 3, got " + str(f.tiers));
    }
  }
  for (const char* key : {"leaves", "spines", "uplinks_per_leaf"}) {
    const std::string k = std::string("cluster.fabric.") + key;
    if (given(k) && f.topology != TopologyKind::kLeafSpine) {
      return fail_key(k, "applies to topology: leaf-spine only (this fabric is " +
                             std::string(to_string(f.topology)) + ")");
    }
  }
  // NCCL caps NCCL_IB_QPS_PER_CONNECTION at 128 (NCCL_IB_MAX_QPS, src/transport/net_ib/common.h).
  if (f.qps_per_connection > 128) {
    return fail_key("cluster.fabric.qps_per_connection",
                    "NCCL allows at most 128 queue pairs per connection, got " +
                        str(f.qps_per_connection));
  }
  if (f.in_network_reduction) {
    const std::string k = "cluster.fabric.in_network_reduction";
    if (n.nic.id.empty() || !n.nic.in_network_reduction_capable) {
      return fail_key(k, "needs an InfiniBand NIC with SHARP (nic is '" + n.nic.id + "')");
    }
    if (!f.switch_spec.in_network_reduction) {
      return fail_key(k, "switch '" + f.switch_spec.id + "' has no in-network reduction");
    }
  }

  // Parallelism against the cluster, the model, the batch and the sequence (shared with the
  // parallelism search through check_parallelism).
  if (Status st = check_layout_ ? check_parallelism(sc_) : Status::Ok(); !st.ok()) {
    if (!error_) error_ = Error{st.message()};
    return false;
  }
  if (n.gpu.peak_flops(w.precision) <= 0) {
    return fail_key(cite("workload.precision", "workload"),
                    n.gpu.id + " has no " + std::string(to_string(w.precision)) +
                        " tensor-core peak (use bf16)");
  }
  // MXFP8's 1 x 32 block scales are applied inside Blackwell's tensor cores (its block-scaled
  // MMA); earlier GPUs have no such instruction (Transformer Engine refuses the recipe there).
  if (w.precision == Precision::kFp8 && w.framework.fp8_recipe == Fp8Recipe::kMxfp8 &&
      arch_family(n.gpu.arch) != "sm_100") {
    return fail_key(cite("workload.framework.fp8_recipe", "workload"),
                    "mxfp8 needs Blackwell's block-scaled tensor cores (sm_100, sm_103); " +
                        n.gpu.id + " is " + (n.gpu.arch.empty() ? "not NVIDIA" : n.gpu.arch) +
                        " (use tensorwise)");
  }
  if (given("workload.framework.param_gather_overlap") &&
      (w.parallelism.zero < 1 || w.parallelism.zero > 2)) {
    return fail_key("workload.framework.param_gather_overlap",
                    "applies to zero: 1 or 2 (the workload has zero: " + str(w.parallelism.zero) +
                        "; 0 gathers nothing, 3 gathers each layer as it runs)");
  }
  if (w.framework.fp32_op_norm && fp32_residual_stream(w)) {
    return fail_key("workload.framework.norm_kernel",
                    "fp32-ops is modelled on a 16-bit residual stream (FSDP's mixed precision, "
                    "zero: 3, or 16-bit weights), as TorchTitan runs it; this workload keeps "
                    "fp32 weights and an fp32 stream under autocast");
  }
  if (w.framework.fp32_op_norm && w.model.normalization != Normalization::kRmsNorm) {
    return fail_key("workload.framework.norm_kernel",
                    "fp32-ops is TorchTitan's RMSNorm; the model has normalization: layernorm");
  }
  if (given("workload.framework.reshard_after_forward") && w.parallelism.zero != 3) {
    return fail_key("workload.framework.reshard_after_forward",
                    "applies to zero: 3 (the workload has zero: " + str(w.parallelism.zero) +
                        "; only ZeRO-3 / FSDP frees the gathered weights)");
  }
  if (given("workload.framework.root_reshard_after_forward") && !pytorch_fsdp(w)) {
    return fail_key("workload.framework.root_reshard_after_forward",
                    "applies to PyTorch FSDP (zero: 3 with weights_in_fp32: fp32 shards, 16-bit "
                    "gathers); this workload has zero: " + str(w.parallelism.zero) +
                        (w.framework.weights_in_fp32 ? "" : " without weights_in_fp32"));
  }
  if (given("workload.framework.zero1_grad_reduce") && w.parallelism.zero != 1) {
    return fail_key("workload.framework.zero1_grad_reduce",
                    "applies to zero: 1 (the workload has zero: " + str(w.parallelism.zero) +
                        "; 0 all-reduces, 2 and 3 reduce-scatter)");
  }
  return true;
}

Result<Scenario> Loader::load(std::string_view text) {
  std::optional<YAML::Node> parsed;
  try {
    parsed.emplace(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    fail_at(e.mark, "", "YAML syntax error: " + e.msg);
    return *error_;
  }
  const YAML::Node& root = *parsed;
  try {
    if (!root.IsDefined() || root.IsNull()) {
      fail_at(YAML::Mark::null_mark(), "", "empty scenario (expected a map with cluster and workload)");
      return *error_;
    }
    for (const auto& o : overrides_) {
      if (!apply_override(*parsed, o)) return *error_;
    }
    if (!open_map(root, "", kTopKeys)) return *error_;
    const std::string stem = std::filesystem::path(sc_.path).stem().string();
    sc_.name = stem.empty() || sc_.path.front() == '<' ? "scenario" : stem;
    if (!read_string(root, "", "name", &sc_.name) || !read_string(root, "", "note", &sc_.note)) {
      return *error_;
    }
    if (!required(root, "", "cluster", " (nodes, node, fabric)") ||
        !load_cluster(root["cluster"]) ||
        !required(root, "", "workload", " (model, seq_len, global_batch, parallelism)") ||
        !load_workload(root["workload"])) {
      return *error_;
    }
    const YAML::Node cost = root["cost"];
    if (cost.IsDefined() && !load_cost(cost)) return *error_;
    const YAML::Node rel = root["reliability"];
    ReliabilityConfig& r = sc_.reliability;
    if (rel.IsDefined() &&
        (!open_map(rel, "reliability", kReliabilityKeys) ||
         !read_quantity(rel, "reliability", "gpu_mtbf", FieldKind::kTime, false, &r.gpu_mtbf_s) ||
         !read_quantity(rel, "reliability", "checkpoint_interval", FieldKind::kTime, false,
                        &r.checkpoint_interval_s) ||
         !read_quantity(rel, "reliability", "restart_time", FieldKind::kTime, true,
                        &r.restart_s))) {
      return *error_;
    }
    const YAML::Node interference = root["interference"];
    if (interference.IsDefined() && !load_interference(interference)) return *error_;
    std::string calibration;
    if (!read_string(root, "", "calibration", &calibration)) return *error_;
    if (!calibration.empty()) {
      namespace fs = std::filesystem;
      fs::path cal(calibration);
      if (cal.is_relative() && sc_.path.front() != '<') {
        cal = fs::path(sc_.path).parent_path() / cal;
      }
      sc_.calibration_path = cal.lexically_normal().string();
      std::error_code ec;
      if (!fs::is_regular_file(sc_.calibration_path, ec)) {
        fail(root["calibration"], "calibration",
             "no such file '" + sc_.calibration_path + "' (resolved relative to the scenario)");
        return *error_;
      }
    }
    if (!check_combinations()) return *error_;
    if (root["claims"].IsDefined()) {
      auto claims = read_scenario_claims(text, sc_);
      if (!claims) {
        error_ = claims.error();
        return *error_;
      }
      sc_.claims = std::make_shared<const std::vector<Claim>>(std::move(*claims));
    }
    if (root["published"].IsDefined()) {
      auto published = read_published_run(text, sc_);
      if (!published) {
        error_ = published.error();
        return *error_;
      }
      sc_.published = std::make_shared<const PublishedRun>(std::move(*published));
    }
  } catch (const YAML::Exception& e) {
    fail_at(e.mark, "", "cannot read the YAML: " + e.msg);
    return *error_;
  }
  return std::move(sc_);
}

}  // namespace

std::vector<std::string> settable_keys_under(std::string_view path) {
  const std::vector<std::string_view> keys = keys_under(path);
  return {keys.begin(), keys.end()};
}

Status check_parallelism(const Scenario& scenario) {
  const ClusterConfig& c = scenario.cluster;
  const NodeConfig& n = c.node;
  const WorkloadConfig& w = scenario.workload;
  const ParallelismConfig& p = w.parallelism;
  const ModelSpec& m = w.model;
  auto given = [&](const std::string& key) { return scenario.locations.count(key) > 0; };
  auto cite = [&](const std::string& key, const std::string& fallback) {
    return given(key) ? key : fallback;
  };
  auto str = [](auto v) { return std::to_string(v); };
  auto fail_key = [&](const std::string& key, const std::string& what) -> Status {
    return Error{scenario.where(key) + ": " + what};
  };
  const std::string par = "workload.parallelism";

  // Against the cluster.
  if (p.gpus() != c.total_gpus()) {
    return fail_key(cite(par, "workload"),
                    "tp " + str(p.tp) + " x pp " + str(p.pp) + " x dp " + str(p.dp) + " x cp " +
                        str(p.cp) + " = " + str(p.gpus()) + " GPUs, but the cluster has " +
                        str(c.total_gpus()) + " (" + str(c.nodes) + " nodes x " +
                        str(n.gpus_per_node) + " gpus_per_node)");
  }
  const std::string tp_key = cite(par + ".tp", par);
  if (p.tp > n.gpus_per_node) {
    return fail_key(tp_key, "tp " + str(p.tp) + " exceeds gpus_per_node " +
                                str(n.gpus_per_node) +
                                ": tensor parallelism must stay inside one node's scale-up "
                                "domain");
  }
  if (n.gpus_per_node % p.tp != 0) {
    return fail_key(tp_key, "tp " + str(p.tp) + " does not divide gpus_per_node " +
                                str(n.gpus_per_node) +
                                ": tensor-parallel groups would straddle nodes");
  }

  // Parallelism against the model.
  const std::string model_key = cite("workload.model", "workload");
  if (m.hidden % m.heads != 0 && m.head_dim_override == 0 && !m.mla.enabled()) {
    return fail_key(cite("workload.hidden", model_key),
                    "hidden " + str(m.hidden) + " is not divisible by heads " + str(m.heads));
  }
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0) {
    return fail_key(cite("workload.kv_heads", model_key),
                    "kv_heads " + str(m.kv_heads) + " must divide heads " + str(m.heads) +
                        " (grouped-query attention shares each KV head among a group)");
  }
  if (m.heads % p.tp != 0) {
    return fail_key(tp_key, "heads " + str(m.heads) + " are not divisible by tp " + str(p.tp) +
                                ": each tensor-parallel rank needs whole attention heads");
  }
  if (m.kv_heads % p.tp != 0 && p.tp % m.kv_heads != 0) {
    return fail_key(tp_key, "kv_heads " + str(m.kv_heads) + " and tp " + str(p.tp) +
                                ": kv_heads must be divisible by tp, or tp a multiple of "
                                "kv_heads (each KV head then replicated on tp/kv_heads ranks)");
  }
  // Experts.
  const MoeSpec& e = m.moe;
  const std::string ep_key = cite(par + ".ep", par);
  if (e.enabled()) {
    const std::string moe_key = cite("workload.moe", model_key);
    if (e.top_k > e.experts) {
      return fail_key(cite("workload.moe.top_k", moe_key),
                      "top_k " + str(e.top_k) + " exceeds the " + str(e.experts) + " experts");
    }
    if (e.dense_layers >= m.layers) {
      return fail_key(cite("workload.moe.dense_layers", moe_key),
                      "dense_layers " + str(e.dense_layers) + " leaves none of the " +
                          str(m.layers) + " layers with experts");
    }
    if (e.expert_ffn_hidden % p.etp != 0) {
      return fail_key(cite(par + ".etp", par),
                      "etp " + str(p.etp) + " does not divide expert_ffn_hidden " +
                          str(e.expert_ffn_hidden) + ": each expert's FFN is split over etp GPUs");
    }
    if (e.experts % p.ep != 0) {
      return fail_key(ep_key, "ep " + str(p.ep) + " does not divide the " + str(e.experts) +
                                  " experts: each GPU of an expert-parallel group holds "
                                  "experts / ep of them");
    }
    if (p.tp > 1 && !p.sp) {
      // Megatron-Core asserts it (transformer_config.py: "When using expert parallelism and
      // tensor parallelism, sequence parallelism must be used").
      return fail_key(cite(par + ".sp", par),
                      "a mixture of experts with tp " + str(p.tp) +
                          " needs sp: true (the experts take each rank's sequence shard)");
    }
  } else if (p.ep > 1 || p.etp > 1) {
    const bool ep = p.ep > 1;
    return fail_key(ep ? ep_key : cite(par + ".etp", par),
                    std::string(ep ? "ep " : "etp ") + str(ep ? p.ep : p.etp) +
                        " needs a mixture-of-experts model (workload.moe or a MoE preset such as "
                        "mixtral-8x7b)");
  }
  const int stage_gpus = p.tp * p.cp * p.dp;
  if (stage_gpus % p.expert_model_parallel() != 0) {
    return fail_key(p.etp > 1 ? cite(par + ".etp", par) : ep_key,
                    (p.etp > 1 ? "ep x etp = " + str(p.expert_model_parallel()) : "ep " + str(p.ep)) +
                        " does not divide tp x cp x dp = " + str(stage_gpus) +
                        ": expert-parallel groups are carved from a pipeline stage's GPUs");
  }
  const bool interleaved = p.pp_schedule == PipelineSchedule::kInterleaved;
  const std::string vs_key = par + ".virtual_stages";
  if (p.virtual_stages > 1 && !interleaved) {
    return fail_key(vs_key, "virtual_stages " + str(p.virtual_stages) +
                                " needs pp_schedule: interleaved (got " +
                                std::string(to_string(p.pp_schedule)) + ")");
  }
  if (w.framework.pp_comm_overlap && !interleaved) {
    return fail_key("workload.framework.pp_comm_overlap",
                    "applies to pp_schedule: interleaved (Megatron-Core overlaps pipeline sends "
                    "only in its interleaved schedule; DualPipe hides them anyway), got " +
                        std::string(to_string(p.pp_schedule)));
  }
  if (interleaved && p.pp < 2) {
    return fail_key(cite(par + ".pp_schedule", par), "the interleaved schedule needs pp >= 2");
  }
  if (p.pp_schedule == PipelineSchedule::kDualPipe &&
      (p.pp < 2 || p.pp % 2 != 0 || w.micro_batches_per_step() % 2 != 0 ||
       w.micro_batches_per_step() < 2 * p.pp)) {
    // DualPipe feeds half the micro-batches from each end (DeepSeek-V3 report sec. 3.2.1);
    // deepseek-ai/DualPipe's step() asserts num_chunks >= num_ranks * 2.
    return fail_key(cite(par + ".pp_schedule", par),
                    "dualpipe needs an even pp >= 2 and an even number of micro-batches per "
                    "step, at least 2 x pp (pp " + str(p.pp) + ", micro-batches " +
                        str(w.micro_batches_per_step()) + ")");
  }
  // Layers split evenly over pp x virtual_stages model chunks, or in Llama 3's balanced layout:
  // the embedding and the output head each take a layer's slot, so layers + 2 split evenly
  // (Llama Team 2024, "The Llama 3 Herd of Models", sec. 3.3.2: 126 layers on 16 stages).
  const int chunks = p.pp * p.virtual_stages;
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  const std::string layout_key = par + ".pipeline_layout";
  if (p.layout.given()) {
    // Megatron-Core's layout places every layer itself (PipelineParallelLayerLayout's checks).
    const std::vector<int>& chunk = p.layout.chunk_layers;
    int decoder = 0;
    for (int layers_in : chunk) decoder += layers_in;
    if (uneven) {
      return fail_key(layout_key, "give either pipeline_layout or first_stage_layers and "
                                  "last_stage_layers, not both");
    }
    if (p.pp_schedule == PipelineSchedule::kDualPipe) {
      return fail_key(layout_key, "pipeline_layout is for the gpipe, 1f1b and interleaved "
                                  "schedules (DualPipe places its own two chunks per stage)");
    }
    if (static_cast<int>(chunk.size()) != chunks) {
      return fail_key(layout_key,
                      str(chunk.size()) + " chunks, but pp " + str(p.pp) + " x virtual_stages " +
                          str(p.virtual_stages) + " = " + str(chunks) + " model chunks run");
    }
    if (decoder != m.layers) {
      return fail_key(layout_key, str(decoder) + " decoder layers (t), but the model has " +
                                      str(m.layers));
    }
    if (p.layout.mtp_layers != m.mtp_layers) {
      return fail_key(layout_key, str(p.layout.mtp_layers) +
                                      " multi-token-prediction layers (m), but the model has " +
                                      str(m.mtp_layers));
    }
    for (int s = 0; s < p.pp; ++s) {
      int on_stage = 0;
      for (int k = s; k < chunks; k += p.pp) on_stage += chunk[static_cast<size_t>(k)];
      if (on_stage == 0) {
        return fail_key(layout_key, "pipeline stage " + str(s) + " holds no decoder layer");
      }
    }
  } else if (uneven) {
    const std::string key = cite(par + (p.first_stage_layers > 0 ? ".first_stage_layers"
                                                                 : ".last_stage_layers"),
                                 par);
    if (p.pp < 3) {
      return fail_key(key, "first_stage_layers and last_stage_layers need pp >= 3 (a middle "
                           "stage to take the rest)");
    }
    if (interleaved) {
      return fail_key(key, "first_stage_layers and last_stage_layers are for the 1f1b, gpipe "
                           "and dualpipe schedules, not the interleaved one");
    }
    const int middle = m.layers - p.first_stage_layers - p.last_stage_layers;
    if (p.first_stage_layers == 0 || p.last_stage_layers == 0 || middle <= 0 ||
        middle % (p.pp - 2) != 0) {
      return fail_key(key, "give both first_stage_layers and last_stage_layers, leaving the " +
                               str(p.pp - 2) + " middle stages an even share of the " +
                               str(m.layers) + " layers (got " + str(p.first_stage_layers) +
                               " and " + str(p.last_stage_layers) + ")");
    }
  } else if (chunks > 1 && m.layers % chunks != 0 && (m.layers + 2) % chunks != 0) {
    return fail_key(cite(par + ".pp", par),
                    "layers " + str(m.layers) + " are not divisible by pp " + str(p.pp) +
                        (p.virtual_stages > 1 ? " x virtual_stages " + str(p.virtual_stages)
                                              : std::string()) +
                        " (nor is layers + 2, Llama 3's layout with the embedding and the "
                        "output head in the first and last stages): pipeline stages would be "
                        "unbalanced");
  }

  // Batch and sequence.
  const int per_step = p.dp * w.micro_batch;
  if (w.global_batch % per_step != 0) {
    return fail_key(cite("workload.global_batch", "workload"),
                    "global_batch " + str(w.global_batch) + " is not divisible by dp " +
                        str(p.dp) + " x micro_batch " + str(w.micro_batch) + " = " +
                        str(per_step));
  }
  if (interleaved && w.micro_batches_per_step() % p.pp != 0) {
    // Megatron-LM's interleaved schedule requires it (schedules.py).
    return fail_key(cite(par + ".pp_schedule", par),
                    "the interleaved schedule needs micro-batches per step (" +
                        str(w.micro_batches_per_step()) + ") divisible by pp " + str(p.pp));
  }
  const std::string seq_key = cite("workload.seq_len", "workload");
  if (p.cp > 1 && w.seq_len % (2 * p.cp) != 0) {
    return fail_key(seq_key, "seq_len " + str(w.seq_len) + " is not divisible by 2 x cp = " +
                                 str(2 * p.cp) +
                                 ": context parallelism cuts the sequence into 2 x cp chunks, "
                                 "two per rank, to balance causal attention (Megatron-LM)");
  }
  if (p.sp && p.tp > 1 && (w.seq_len / p.cp) % p.tp != 0) {
    return fail_key(seq_key, "with sp, each rank's " + str(w.seq_len / p.cp) +
                                 " tokens must divide by tp " + str(p.tp));
  }
  return Status::Ok();
}

Status check_scenario_key(std::string_view key_path) {
  const std::vector<std::string> parts = split_key_path(key_path);
  if (parts.front() == "claims" || parts.front() == "published") {
    return Error{std::string(key_path) + ": a scenario's " + parts.front() +
                 " section is read from its file only"};
  }
  std::string path;
  for (const std::string& part : parts) {
    if (part.empty()) {
      return Error{"'" + std::string(key_path) +
                   "': not a key path (dotted keys such as cluster.nodes or "
                   "workload.parallelism.tp)"};
    }
    const std::vector<std::string_view> keys = keys_under(path);
    if (keys.empty()) {
      return Error{std::string(key_path) + ": " + path + " takes a value, not keys"};
    }
    if (std::find(keys.begin(), keys.end(), part) == keys.end()) {
      return Error{std::string(key_path) + ": unknown key '" + part + "'" +
                   (path.empty() ? std::string(" at the top") : " in " + path) + " (" +
                   did_you_mean(part, keys) + "known: " + join(keys) + ")"};
    }
    path = child(path, part);
  }
  return Status::Ok();
}

Result<Scenario> load_scenario_text(std::string_view yaml_text, const std::string& origin) {
  return Loader(origin, {}, true).load(yaml_text);
}

Result<Scenario> load_scenario_text(std::string_view yaml_text, const std::string& origin,
                                    const std::vector<ScenarioOverride>& overrides,
                                    bool check_layout) {
  return Loader(origin, overrides, check_layout).load(yaml_text);
}

Result<Scenario> load_scenario_file(const std::string& path) {
  return load_scenario_file(path, {});
}

Result<Scenario> load_scenario_file(const std::string& path,
                                    const std::vector<ScenarioOverride>& overrides,
                                    bool check_layout) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{path + ": is a directory, not a scenario file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open scenario file (" + std::strerror(errno) + ")"};
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Error{path + ": cannot read scenario file"};
  return load_scenario_text(buf.str(), path, overrides, check_layout);
}

}  // namespace clustersim::models
