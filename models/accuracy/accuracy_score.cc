#include "models/accuracy/accuracy_score.h"

#include <algorithm>
#include <cmath>

namespace clustersim::models {

double ScoredRun::error() const {
  return predicted() && published_step_s > 0 ? predicted_step_s / published_step_s - 1 : 0;
}

double ScoredRun::left_out_error() const {
  const double s = left_out_step_s > 0 ? left_out_step_s : predicted_step_s;
  return predicted() && published_step_s > 0 ? s / published_step_s - 1 : 0;
}

ErrorStats error_stats(const std::vector<ScoredRun>& runs) {
  ErrorStats s;
  std::vector<double> abs_errors;
  double sum_signed = 0;
  for (const ScoredRun& r : runs) {
    if (!r.predicted()) continue;
    const double e = r.error();
    abs_errors.push_back(std::abs(e));
    sum_signed += e;
    if (std::abs(e) >= s.max_abs) {
      s.max_abs = std::abs(e);
      s.worst = r.name;
    }
  }
  s.runs = static_cast<int>(abs_errors.size());
  if (s.runs == 0) return s;
  double sum = 0;
  for (double e : abs_errors) sum += e;
  s.mean_abs = sum / s.runs;
  s.mean_signed = sum_signed / s.runs;
  std::sort(abs_errors.begin(), abs_errors.end());
  const std::size_t n = abs_errors.size();
  s.median_abs = n % 2 ? abs_errors[n / 2] : (abs_errors[n / 2 - 1] + abs_errors[n / 2]) / 2;
  s.p90_abs = abs_errors[(9 * n + 9) / 10 - 1];  // the ceil(0.9 n)-th smallest
  return s;
}

AccuracyScore score_runs(const std::vector<ScoredRun>& runs) {
  AccuracyScore out;
  out.overall = error_stats(runs);
  std::vector<std::string> order;
  for (const ScoredRun& r : runs) {
    if (std::find(order.begin(), order.end(), r.source) == order.end()) order.push_back(r.source);
  }
  double sum = 0;
  int scored = 0;
  for (const std::string& source : order) {
    std::vector<ScoredRun> own;
    for (const ScoredRun& r : runs) {
      if (r.source == source) own.push_back(r);
    }
    SourceScore s{source, error_stats(own), 0};
    for (const ScoredRun& r : own) {
      if (r.predicted()) s.left_out_mean_abs += std::abs(r.left_out_error());
    }
    // A source none of whose runs this engine predicted (the simulator has no DualPipe) is left
    // out of its table, not listed at 0%.
    if (s.stats.runs == 0) continue;
    s.left_out_mean_abs /= s.stats.runs;
    sum += s.left_out_mean_abs;
    ++scored;
    out.sources.push_back(std::move(s));
  }
  out.leave_one_source_out_mean_abs = scored > 0 ? sum / scored : 0;
  std::vector<std::string> classes;
  for (const ScoredRun& r : runs) {
    if (!r.run_class.empty()) classes.push_back(r.run_class);
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  for (const std::string& c : classes) {
    std::vector<ScoredRun> own;
    for (const ScoredRun& r : runs) {
      if (r.run_class == c) own.push_back(r);
    }
    ClassScore cs{c, error_stats(own)};
    if (cs.stats.runs > 0) out.classes.push_back(std::move(cs));
  }
  return out;
}

}  // namespace clustersim::models
