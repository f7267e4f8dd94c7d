#include "models/accuracy/published_run.h"

#include "models/catalog.h"
#include "models/transformer_model.h"
#include "models/units.h"
#include "models/yaml_reader.h"

namespace clustersim::models {
namespace {

constexpr std::pair<std::string_view, PublishedMetric> kMetrics[] = {
    {"step_time", PublishedMetric::kStepTime},
    {"tokens_per_s_per_gpu", PublishedMetric::kTokensPerSPerGpu},
    {"tflops_per_gpu", PublishedMetric::kTflopsPerGpu},
    {"mfu", PublishedMetric::kMfu},
    {"busbw", PublishedMetric::kBusbw},
    {"busbw_ratio", PublishedMetric::kBusbwRatio}};

constexpr std::pair<std::string_view, FlopsConvention> kConventions[] = {
    {"narayanan", FlopsConvention::kNarayanan},
    {"korthikanti", FlopsConvention::kKorthikanti},
    {"6n", FlopsConvention::kSixN},
    {"model", FlopsConvention::kModel},
    {"model-full-attention", FlopsConvention::kModelFullAttention}};

template <class E, std::size_t N>
std::string names_of(const std::pair<std::string_view, E> (&names)[N]) {
  std::string out;
  for (const auto& [n, e] : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

template <class E, std::size_t N>
bool read_name(YamlReader& in, const YAML::Node& map, std::string_view key,
               const std::pair<std::string_view, E> (&names)[N], E* out, bool required) {
  std::string s;
  const std::string path = YamlReader::child("published", key);
  if (!in.text(map, "published", key, &s, required)) return false;
  if (s.empty()) return true;
  for (const auto& [n, e] : names) {
    if (n == s) {
      *out = e;
      return true;
    }
  }
  return in.fail(map[std::string(key)], path,
                 "unknown value '" + s + "' (expected one of: " + names_of(names) + ")");
}

// published.collective: {op, size, gpus, algorithm}.
bool read_collective(YamlReader& in, const YAML::Node& map, PublishedCollective* out) {
  const std::string path = "published.collective";
  const YAML::Node node = map["collective"];
  std::string op, algorithm = "auto";
  if (!in.open_map(node, path, {"op", "size", "gpus", "algorithm"}) ||
      !in.text(node, path, "op", &op, true) || !in.text(node, path, "algorithm", &algorithm) ||
      !in.quantity(
          node, path, "size", [](std::string_view s) { return parse_size_bytes(s); },
          &out->size_bytes, true) ||
      !in.integer(node, path, "gpus", &out->gpus)) {
    return false;
  }
  if (!parse_collective_op(op, &out->op)) {
    return in.fail(node["op"], path + ".op",
                   "unknown collective '" + op + "' (" + collective_op_names() + ")");
  }
  if (!parse_collective_algorithm(algorithm, &out->algorithm)) {
    return in.fail(node["algorithm"], path + ".algorithm",
                   "unknown algorithm '" + algorithm + "' (" + collective_algorithm_names() +
                       ")");
  }
  if (!(out->size_bytes > 0)) {
    return in.fail(node["size"], path + ".size", "must be greater than zero");
  }
  if (out->gpus < 0) {
    return in.fail(node["gpus"], path + ".gpus", "must be positive (or absent: all)");
  }
  return true;
}

// published.versus: a map of dotted scenario keys to YAML values, each a --set edit.
bool read_versus(YamlReader& in, const YAML::Node& map, std::vector<ScenarioOverride>* out) {
  const std::string path = "published.versus";
  const YAML::Node node = map["versus"];
  if (!node.IsMap() || node.size() == 0) {
    return in.fail(node, path,
                   "a map of scenario keys to the values the source compared with "
                   "({cluster.fabric.routing: ecmp})");
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (auto s = check_scenario_key(key); !s) {
      return in.fail(kv.first, path + "." + key, s.message());
    }
    if (key == "workload" || key.rfind("workload.", 0) == 0) {
      // A scenario key, but a collective never reads it: say so rather than compare nothing.
      return in.fail(kv.first, path + "." + key,
                     "a collective ratio compares fabrics; workload keys change nothing");
    }
    YAML::Emitter e;
    e << YAML::Flow << kv.second;
    out->push_back({key, e.c_str()});
  }
  return true;
}

}  // namespace

bool is_collective_metric(PublishedMetric m) {
  return m == PublishedMetric::kBusbw || m == PublishedMetric::kBusbwRatio;
}

std::string_view to_string(PublishedMetric m) {
  for (const auto& [n, e] : kMetrics) {
    if (e == m) return n;
  }
  return "?";
}

std::string_view to_string(FlopsConvention f) {
  for (const auto& [n, e] : kConventions) {
    if (e == f) return n;
  }
  return "none";
}

Result<PublishedRun> read_published_run(std::string_view yaml_text, const Scenario& scenario) {
  YamlReader in(scenario.path);
  YAML::Node root;
  if (!in.parse(yaml_text, &root)) return in.error();
  const YAML::Node node = root["published"];
  PublishedRun run;
  if (!in.open_map(node, "published",
                   {"source", "citation", "url", "metric", "value", "flops", "memory_per_gpu",
                    "not_modelled", "collective", "versus"}) ||
      !in.text(node, "published", "source", &run.source, true) ||
      !in.text(node, "published", "citation", &run.citation, true) ||
      !in.text(node, "published", "url", &run.url) ||
      !in.text(node, "published", "not_modelled", &run.not_modelled) ||
      !read_name(in, node, "metric", kMetrics, &run.metric, true) ||
      !read_name(in, node, "flops", kConventions, &run.flops, false) ||
      !in.quantity(
          node, "published", "memory_per_gpu",
          [](std::string_view s) { return parse_size_bytes(s); }, &run.memory_per_gpu_bytes)) {
    return in.error();
  }
  const bool counts_flops =
      run.metric == PublishedMetric::kTflopsPerGpu || run.metric == PublishedMetric::kMfu;
  if (counts_flops && run.flops == FlopsConvention::kNone) {
    in.fail(node, "published.flops",
            "missing: say how the source counted FLOPs (" + names_of(kConventions) + ")");
    return in.error();
  }
  if (!counts_flops && run.flops != FlopsConvention::kNone) {
    in.fail(node["flops"], "published.flops",
            "only for metric tflops_per_gpu or mfu, not " + std::string(to_string(run.metric)));
    return in.error();
  }
  const bool collective = is_collective_metric(run.metric);
  if (collective && !node["collective"].IsDefined()) {
    in.fail(node, "published.collective",
            "missing: the collective measured ({op: all_reduce, size: 8GiB, gpus: 64})");
    return in.error();
  }
  if (!collective && node["collective"].IsDefined()) {
    in.fail(node["collective"], "published.collective",
            "only for metric busbw or busbw_ratio, not " + std::string(to_string(run.metric)));
    return in.error();
  }
  if (collective && !read_collective(in, node, &run.collective)) return in.error();
  if (collective && published_collective_gpus(run, scenario) < 2) {
    in.fail(node["collective"], "published.collective",
            "a collective needs at least 2 GPUs (gpus, or the cluster's)");
    return in.error();
  }
  if (collective && run.collective.gpus > scenario.cluster.total_gpus()) {
    in.fail(node["collective"]["gpus"], "published.collective.gpus",
            std::to_string(run.collective.gpus) + " GPUs, but the cluster has " +
                std::to_string(scenario.cluster.total_gpus()));
    return in.error();
  }
  const bool ratio = run.metric == PublishedMetric::kBusbwRatio;
  if (ratio != node["versus"].IsDefined()) {
    in.fail(ratio ? node : node["versus"], "published.versus",
            ratio ? "missing: the configuration the ratio is against ({cluster.fabric.routing: "
                    "ecmp})"
                  : "only for metric busbw_ratio");
    return in.error();
  }
  if (ratio && !read_versus(in, node, &run.versus)) return in.error();
  bool ok = false;
  if (run.metric == PublishedMetric::kStepTime) {
    ok = in.quantity(node, "published", "value", parse_time_s, &run.value, true);
  } else if (run.metric == PublishedMetric::kBusbw) {
    ok = in.quantity(node, "published", "value", parse_bandwidth_Bps, &run.value, true);
  } else {
    ok = in.number(node, "published", "value", &run.value, true);
  }
  if (!ok) return in.error();
  if (!(run.value > 0)) {
    in.fail(node["value"], "published.value", "must be greater than zero");
    return in.error();
  }
  if (run.metric == PublishedMetric::kMfu && run.value > 1) {
    in.fail(node["value"], "published.value", "an MFU is a fraction of peak (0.41, not 41)");
    return in.error();
  }
  return run;
}

double convention_flops_per_step(FlopsConvention convention, const WorkloadConfig& w) {
  const double B = w.global_batch;
  const double s = w.seq_len;
  const double l = w.model.layers;
  const double h = w.model.hidden;
  const double V = w.model.vocab;
  switch (convention) {
    case FlopsConvention::kNarayanan:
      return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    case FlopsConvention::kKorthikanti:
      return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
    case FlopsConvention::kSixN:
      return 6 * count_parameters(w.model).total() * B * s;
    case FlopsConvention::kModel:
      return flops_per_token(w.model, w.seq_len, /*causal=*/true).training() * B * s;
    case FlopsConvention::kModelFullAttention:
      return flops_per_token(w.model, w.seq_len, /*causal=*/false).training() * B * s;
    case FlopsConvention::kNone:
      break;
  }
  CS_ASSERT(false, "convention_flops_per_step: no FLOP convention");
  return 0;
}

int published_collective_gpus(const PublishedRun& run, const Scenario& scenario) {
  return run.collective.gpus > 0 ? run.collective.gpus : scenario.cluster.total_gpus();
}

double published_step_time_s(const PublishedRun& run, const Scenario& scenario) {
  const WorkloadConfig& w = scenario.workload;
  const double gpus = w.parallelism.gpus();
  switch (run.metric) {
    case PublishedMetric::kStepTime:
      return run.value;
    case PublishedMetric::kTokensPerSPerGpu:
      return w.tokens_per_step() / (run.value * gpus);
    case PublishedMetric::kTflopsPerGpu:
      return convention_flops_per_step(run.flops, w) / (run.value * 1e12 * gpus);
    case PublishedMetric::kMfu:
      return convention_flops_per_step(run.flops, w) /
             (run.value * scenario.cluster.node.gpu.peak_flops(w.precision) * gpus);
    case PublishedMetric::kBusbw:
      return run.collective.size_bytes *
             bus_bandwidth_factor(run.collective.op, published_collective_gpus(run, scenario)) /
             run.value;
    case PublishedMetric::kBusbwRatio:
      return 1 / run.value;
  }
  return 0;
}

std::string accuracy_class(const Scenario& scenario) {
  const GpuSpec& gpu = scenario.cluster.node.gpu;
  const std::string family = arch_family(gpu.arch);
  std::string generation = gpu.id;
  if (family == "sm_80" || family == "sm_86") generation = "Ampere";
  if (family == "sm_89") generation = "Ada";
  if (family == "sm_90") generation = "Hopper";
  if (family == "sm_100") generation = "Blackwell";
  const bool one_node =
      scenario.workload.parallelism.gpus() <= scenario.cluster.node.gpus_per_node;
  return generation + (scenario.workload.model.moe_layers() > 0 ? " MoE" : " dense") +
         (one_node ? ", one node" : ", multi-node");
}

}  // namespace clustersim::models
