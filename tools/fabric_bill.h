// The fabric a scenario buys, counted as `clustersim topo` counts it (topology/fabric_metrics.h):
// NICs, switches, and cables by length class, for the cost of owning (models/cost/tco_model.h).
#pragma once

#include <string>

#include "models/cost/tco_model.h"
#include "models/scenario.h"

namespace clustersim::tools {

struct CountedFabric {
  models::FabricBill bill;
  // Empty, or why the fabric cannot be built as given (then the bill holds the NICs only and
  // the cost of owning leaves switches and optics out; the caller says so).
  std::string problem;
};

// Builds the scenario's fabric graph and counts it. A single node without NICs has an empty bill.
CountedFabric count_fabric(const models::Scenario& scenario);

}  // namespace clustersim::tools
