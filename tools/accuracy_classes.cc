#include "tools/accuracy_classes.h"

#include <cmath>
#include <optional>
#include <nlohmann/json.hpp>

#include "models/accuracy/published_run.h"
#include "models/units.h"

namespace clustersim::tools {

extern const char kEmbeddedAccuracyClasses[];

namespace {

// An error to 0.01%: the table's figures stay put while a model change moves no run by more.
double rounded(double fraction) { return std::round(fraction * 1e4) / 1e4; }

nlohmann::json classes_json(const models::AccuracyScore& score) {
  nlohmann::json out = nlohmann::json::array();
  for (const models::ClassScore& c : score.classes) {
    out.push_back({{"class", c.run_class},
                   {"runs", c.stats.runs},
                   {"median_abs_error", rounded(c.stats.median_abs)},
                   {"p90_abs_error", rounded(c.stats.p90_abs)},
                   {"max_abs_error", rounded(c.stats.max_abs)},
                   {"mean_error", rounded(c.stats.mean_signed)},
                   {"worst", c.stats.worst}});
  }
  return out;
}

// How the corpus's runs of one kind came out, as the embedded table has it.
struct KindAccuracy {
  std::string run_class;
  models::ErrorStats stats;  // its runs under the engine asked for
};

// The embedded table's row for `scenario`'s kind under one engine; nullopt when the corpus has
// no run of that kind.
std::optional<KindAccuracy> corpus_accuracy_of(const models::Scenario& scenario, bool des) {
  // The table is this build's own file: a parse failure is a build defect, not user input.
  static const nlohmann::json table = nlohmann::json::parse(kEmbeddedAccuracyClasses);
  const std::string kind = models::accuracy_class(scenario);
  for (const auto& row : table.at(des ? "des" : "analytic")) {
    if (row.at("class").get<std::string>() != kind) continue;
    KindAccuracy k;
    k.run_class = kind;
    k.stats.runs = row.at("runs").get<int>();
    k.stats.median_abs = row.at("median_abs_error").get<double>();
    k.stats.p90_abs = row.at("p90_abs_error").get<double>();
    k.stats.max_abs = row.at("max_abs_error").get<double>();
    k.stats.mean_signed = row.at("mean_error").get<double>();
    k.stats.worst = row.at("worst").get<std::string>();
    return k;
  }
  return std::nullopt;
}

}  // namespace

std::string accuracy_classes_text(const models::AccuracyScore& analytic,
                                  const models::AccuracyScore& des, int corpus_runs) {
  const nlohmann::json out = {
      {"about",
       "the model's error on the accuracy corpus's training runs by kind of run (GPU "
       "generation, dense or MoE, one node or multi-node), each engine: `clustersim accuracy scenarios/published "
       "--write-classes FILE` (docs/accuracy.md); `clustersim plan` prints its scenario's row"},
      {"corpus_runs", corpus_runs},
      {"analytic", classes_json(analytic)},
      {"des", classes_json(des)}};
  return out.dump(1) + "\n";
}

nlohmann::json corpus_accuracy_json(const models::Scenario& scenario, bool des) {
  const auto k = corpus_accuracy_of(scenario, des);
  if (!k) return {{"class", models::accuracy_class(scenario)}, {"runs", 0}};
  return {{"class", k->run_class},
          {"runs", k->stats.runs},
          {"median_abs_error", k->stats.median_abs},
          {"p90_abs_error", k->stats.p90_abs},
          {"max_abs_error", k->stats.max_abs},
          {"worst", k->stats.worst}};
}

std::string kind_accuracy_line(const models::Scenario& scenario, bool des) {
  const auto k = corpus_accuracy_of(scenario, des);
  if (!k) {
    return "no published run of this kind (" + models::accuracy_class(scenario) +
           ") is in the accuracy corpus: this prediction is not checked against one";
  }
  return "on the corpus's " + std::to_string(k->stats.runs) + " published " + k->run_class +
         " runs the " + (des ? "simulator" : "analytic model") + " is off by " +
         models::format_percent(k->stats.median_abs) + " (median), 9 in 10 within " +
         models::format_percent(k->stats.p90_abs) + ", at worst " +
         models::format_percent(k->stats.max_abs) + " (" + k->stats.worst +
         "; `clustersim accuracy`, docs/accuracy.md)";
}

}  // namespace clustersim::tools
