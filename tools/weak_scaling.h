// A design grown or shrunk by whole nodes for a scaling curve (compare --plot, report).
#pragma once

#include <optional>

#include "models/scenario.h"

namespace clustersim::tools {

// The design grown or shrunk to `factor` x its nodes with the same TP, PP, CP and micro-batches
// per pipeline (weak scaling: the global batch follows DP). nullopt when it does not divide or
// the nodes cannot be joined (models::with_nodes: no NIC).
std::optional<models::Scenario> scaled(const models::Scenario& base, double factor);

}  // namespace clustersim::tools
