// Scoring predictions against published runs: each run's relative error, and the mean,
// median and largest absolute error overall, per source and leaving each source out. Pure
// functions over plain rows; `clustersim accuracy` fills the rows and prints the result.
#pragma once

#include <string>
#include <vector>

namespace clustersim::models {

// One run as scored: the step time the published figure implies and a prediction of it.
struct ScoredRun {
  std::string name;    // the scenario's name
  std::string source;  // PublishedRun::source
  double published_step_s = 0;
  double predicted_step_s = 0;  // <= 0: no prediction (the engine failed); left out of stats
  // The prediction with every corpus-fitted constant refitted without this run's source
  // (corpus_fit.h); 0 = the same as predicted_step_s (no constant applies to the run).
  double left_out_step_s = 0;
  // The kind of run, as accuracy_class (published_run.h) names it: what a prediction for a
  // scenario of the same kind is compared with. "" = none (a collective).
  std::string run_class;
  // predicted / published - 1: negative when the model is too fast. 0 without a prediction.
  double error() const;
  double left_out_error() const;
  bool predicted() const { return predicted_step_s > 0; }
};

struct ErrorStats {
  int runs = 0;  // runs with a prediction
  double mean_abs = 0;
  double median_abs = 0;
  double p90_abs = 0;  // nine runs in ten at or under it (nearest rank)
  double max_abs = 0;
  double mean_signed = 0;  // bias: negative when the model is too fast on average
  std::string worst;       // the name of the run with max_abs
};

// The statistics over the runs that have a prediction (all zero when none has).
ErrorStats error_stats(const std::vector<ScoredRun>& runs);

struct SourceScore {
  std::string source;
  ErrorStats stats;  // its own runs
  // Its runs' mean |error| when every constant fitted on the corpus is refitted without this
  // source (ScoredRun::left_out_step_s): how well the model predicts a source it has not seen.
  double left_out_mean_abs = 0;
};

struct ClassScore {
  std::string run_class;
  ErrorStats stats;
};

struct AccuracyScore {
  ErrorStats overall;
  std::vector<SourceScore> sources;  // in the order of first appearance
  std::vector<ClassScore> classes;   // by ScoredRun::run_class, in name order
  // The mean over sources of left_out_mean_abs: how well the model predicts a source it has
  // not seen.
  double leave_one_source_out_mean_abs = 0;
};

AccuracyScore score_runs(const std::vector<ScoredRun>& runs);

}  // namespace clustersim::models
