// The model's error on the accuracy corpus by kind of run (models::accuracy_class: the GPU's
// generation, dense or MoE, one node or several), so that a prediction says how far runs like it
// were off.
// `clustersim accuracy --write-classes FILE` writes the table (scenarios/published/
// accuracy-classes.json, reviewed and committed; tests/tools/accuracy_cli.sh fails when the
// committed one no longer matches the corpus); the binary embeds it and `plan` prints the row of
// its scenario's kind.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "models/accuracy/accuracy_score.h"
#include "models/scenario.h"

namespace clustersim::tools {

// The table's text (JSON): every class of each engine's score, errors rounded to 0.01%.
std::string accuracy_classes_text(const models::AccuracyScore& analytic,
                                  const models::AccuracyScore& des, int corpus_runs);

// How far the corpus's runs of `scenario`'s kind came out under one engine, as the embedded table
// has it, as JSON (plan's `corpus_accuracy`): class, runs, median / 90th percentile / max
// |error| (fractions) and the worst run; only class and runs 0 where the corpus has none.
nlohmann::json corpus_accuracy_json(const models::Scenario& scenario, bool des);

// One line for `plan`: how far the corpus's runs of this scenario's kind were off, or that it
// has none (the prediction is unchecked there).
std::string kind_accuracy_line(const models::Scenario& scenario, bool des);

}  // namespace clustersim::tools
