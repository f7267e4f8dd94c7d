#include "models/cost_model.h"

#include <algorithm>
#include <cmath>

#include "models/transformer_model.h"

namespace clustersim::models {

RunCost estimate_run_cost(const Scenario& scenario, const StepResult& step,
                          const CostParams& params) {
  CS_ASSERT(step.step_time_s > 0, "a step takes time");
  const WorkloadConfig& w = scenario.workload;
  RunCost c;
  c.gpu_hours_per_step = step.gpus * step.step_time_s / 3600;
  c.gpu_hour_usd = scenario.cost.gpu_hour_usd;
  c.priced = c.gpu_hour_usd > 0;
  c.usd_per_step = c.gpu_hours_per_step * c.gpu_hour_usd;
  c.usd_per_million_tokens = c.usd_per_step / (step.tokens_per_step / 1e6);

  if (w.train_tokens > 0) {
    c.has_run = true;
    c.steps = std::ceil(w.train_tokens / step.tokens_per_step);
    c.run_time_s = c.steps * step.step_time_s;
    c.gpu_hours = c.steps * c.gpu_hours_per_step;
    c.run_usd_no_failures = c.gpu_hours * c.gpu_hour_usd;
  }

  const ReliabilityConfig& rel = scenario.reliability;
  if (rel.gpu_mtbf_s > 0) {
    c.has_reliability = true;
    c.cluster_mtbf_s = rel.gpu_mtbf_s / step.gpus;
    c.checkpoint_bytes = count_parameters(w.model).total() * params.checkpoint_bytes_per_param;
    const double write_Bps = scenario.cluster.storage.write_Bps;
    c.checkpoint_write_s = write_Bps > 0 ? c.checkpoint_bytes / write_Bps : 0;
    c.interval_derived = rel.checkpoint_interval_s <= 0;
    c.checkpoint_interval_s = c.interval_derived
                                  ? std::sqrt(2 * c.checkpoint_write_s * c.cluster_mtbf_s)
                                  : rel.checkpoint_interval_s;
    c.restart_s = rel.restart_s > 0 ? rel.restart_s : params.default_restart_s;
    const double tau = c.checkpoint_interval_s;
    const double cycle = tau + c.checkpoint_write_s;
    const double checkpoint_share = cycle > 0 ? tau / cycle : 1;
    const double failure_loss = (cycle / 2 + c.restart_s) / c.cluster_mtbf_s;
    c.goodput = std::max(0.0, checkpoint_share * (1 - failure_loss));
  }
  if (c.has_run) {
    c.effective_run_time_s = c.goodput > 0 ? c.run_time_s / c.goodput : HUGE_VAL;
    c.run_usd = step.gpus * c.effective_run_time_s / 3600 * c.gpu_hour_usd;
  }
  return c;
}

}  // namespace clustersim::models
