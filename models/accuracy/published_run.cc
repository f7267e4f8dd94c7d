#include "models/accuracy/published_run.h"

#include "models/transformer_model.h"
#include "models/units.h"
#include "models/yaml_reader.h"

namespace clustersim::models {
namespace {

constexpr std::pair<std::string_view, PublishedMetric> kMetrics[] = {
    {"step_time", PublishedMetric::kStepTime},
    {"tokens_per_s_per_gpu", PublishedMetric::kTokensPerSPerGpu},
    {"tflops_per_gpu", PublishedMetric::kTflopsPerGpu},
    {"mfu", PublishedMetric::kMfu}};

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

}  // namespace

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
                    "not_modelled"}) ||
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
  const bool ok = run.metric == PublishedMetric::kStepTime
                      ? in.quantity(node, "published", "value", parse_time_s, &run.value, true)
                      : in.number(node, "published", "value", &run.value, true);
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
  }
  return 0;
}

}  // namespace clustersim::models
