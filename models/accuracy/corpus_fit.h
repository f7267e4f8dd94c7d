// Global constants the model takes from the accuracy corpus itself, and their cross-validation:
// each is fitted by a grid search that minimises the analytic engine's mean |error| over the
// corpus runs it applies to, and refitted without each source in turn to predict that source
// (leave one source out). One value for every run it applies to: no per-run or per-source
// factor. Pure functions; `clustersim accuracy` supplies the predictions.
#pragma once

#include <string>
#include <vector>

#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::models {

struct CorpusConstant {
  std::string name;     // what it is, for reports
  std::string why;      // why it is fitted rather than measured
  double shipped = 0;   // the value the model uses (default_step_params)
  double lo = 0;        // the search grid: lo, lo + step, ..., hi
  double hi = 0;
  double step = 0;
  bool (*applies)(const Scenario&) = nullptr;   // the runs it affects
  // Puts a value into a run's parameters (the run's scenario says what it applies to). nullptr
  // for a constant of the simulator, which its caller sets in sim::TransportParams
  // (tools/cmd_accuracy.cc, roce_shared_constant).
  void (*set)(const Scenario&, StepParams*, double) = nullptr;
  int grid_size() const;
  double grid(int i) const { return lo + i * step; }
};

// The constants the model fits on the corpus (models/compute_model.cc uses their shipped values).
const std::vector<CorpusConstant>& corpus_constants();

// One corpus run as a constant's fit sees it: its source, the published step time and the
// analytic step time at every grid value (empty when the constant does not apply to it).
struct FitRun {
  std::string source;
  double published_step_s = 0;
  std::vector<double> step_s_on_grid;
  bool applies() const { return !step_s_on_grid.empty(); }
};

struct ConstantFit {
  int index = -1;      // grid index of the best value; -1 when no run applies
  double value = 0;
  int runs = 0;        // runs it was fitted on
  double mean_abs = 0;  // their mean |error| at the value
};

// The grid value with the least mean |error| over the runs the constant applies to, leaving out
// every run of `held_out` ("" = none). Ties (means equal within 1e-9, relative: runs the
// constant does not move) go to the value nearest the middle of the grid.
ConstantFit fit_constant(const CorpusConstant& c, const std::vector<FitRun>& runs,
                         const std::string& held_out = "");

}  // namespace clustersim::models
