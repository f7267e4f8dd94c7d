// The makespan of one transfer's flows without running the simulator, where it is exact: flows
// that all start together and carry the same bytes (a collective pattern's phase, every
// pipeline's stage-boundary sends), beside endless capped background flows, under the
// engine's sharing (sim_engine.h: max-min fair shares of every resource, a resource's usable
// capacity capacity_Bps x shared_efficiency while more than congestion_flows flows cross it,
// each flow at most max_rate_Bps).
//
// Why it is exact. The max-min allocation maximizes its smallest rate, m; removing a flow only
// enlarges what the others can get (and a congested resource's capacity can only come back),
// so the smallest rate never falls as flows arrive. The flows at m are those of a saturated
// resource (all of its unfrozen flows at m) or capped at m; either way they keep m until they
// arrive together at bytes / m, and every other flow, never slower than the current smallest
// rate, has arrived by then. So the makespan is bytes / m, with m the first level of
// progressive filling: one pass over the routes instead of SimGrid's max-min solve after every
// arrival (whose cost grows with the square of the flows: 19.5 s for the 30,720 sends of a
// 16,384-GPU pipeline on three tiers of 64-port switches).
#pragma once

#include <optional>
#include <vector>

#include "sim/task_graph.h"

namespace clustersim::sim {

// bytes / m for `flows` (every one the same bytes, within 1e-9 relative) beside `background`;
// nullopt when their bytes differ or a flow has neither a route nor a cap (run the simulator).
// 0 for no flows or no bytes.
std::optional<double> equal_flows_makespan(const std::vector<SimFlow>& flows,
                                           const std::vector<SimFlow>& background,
                                           const ResourceTable& table);

}  // namespace clustersim::sim
