// The fabric as a Graphviz DOT picture. Collapsed (default): the nodes under each leaf become one
// box ("n0-n3: 32 GPUs"), switches are drawn tier by tier, and the cables between two switches
// become one edge labelled with their count and bandwidth; above ~100 switches the picture folds
// further to one box per tier and plane. Full: every vertex and link (GPUs, NVSwitch, PCIe, NICs).
#pragma once

#include <string>

#include "topology/cluster_graph.h"

namespace clustersim::topology {

enum class DotDetail { kCollapsed, kFull };

// The DOT text (a `graph`, since links are full duplex). Never fails.
std::string to_dot(const ClusterGraph& graph, DotDetail detail = DotDetail::kCollapsed);

}  // namespace clustersim::topology
