#include "tools/weak_scaling.h"

#include <cmath>

#include "models/parallelism_search.h"

namespace clustersim::tools {

std::optional<models::Scenario> scaled(const models::Scenario& base, double factor) {
  const double nodes = base.cluster.nodes * factor;
  if (nodes < 1 || std::abs(nodes - std::round(nodes)) > 1e-9) return std::nullopt;
  auto resized = models::with_nodes(base, static_cast<int>(std::lround(nodes)));
  if (!resized) return std::nullopt;
  models::Scenario s = std::move(resized).value();
  const auto& par = s.workload.parallelism;
  // with_nodes leaves dp as it was where the GPUs do not divide by tp x pp x cp.
  if (s.cluster.total_gpus() != par.tp * par.pp * par.cp * par.dp) return std::nullopt;
  const int base_dp = base.workload.parallelism.dp;
  const long long batch = base.workload.global_batch * static_cast<long long>(par.dp);
  if (batch % base_dp != 0) return std::nullopt;
  s.workload.global_batch = static_cast<int>(batch / base_dp);
  return s;
}

}  // namespace clustersim::tools
