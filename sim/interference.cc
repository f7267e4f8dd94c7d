#include "sim/interference.h"

namespace clustersim::sim {

models::Result<NodePlacement> place_nodes(int our_nodes, const Interference& interference) {
  if (our_nodes < 1 || interference.neighbour_nodes < 0) {
    return models::Error{"interference.neighbour.nodes: must be >= 0"};
  }
  if (interference.neighbour_nodes > 0 &&
      !(interference.neighbour_load > 0 && interference.neighbour_load <= 1)) {
    return models::Error{"interference.neighbour.load: must be in (0, 1]"};
  }
  if (interference.background_per_node_Bps < 0) {
    return models::Error{"interference.background.per_node: must be >= 0"};
  }
  NodePlacement p;
  const int theirs = interference.neighbour_nodes;
  p.total_nodes = our_nodes + theirs;
  if (interference.placement == NeighbourPlacement::kAfter || theirs == 0) {
    for (int i = 0; i < our_nodes; ++i) p.ours.push_back(i);
    for (int i = 0; i < theirs; ++i) p.neighbour.push_back(our_nodes + i);
    return p;
  }
  // Alternate while both have nodes left, then the rest of whichever is larger.
  int a = 0, b = 0;
  for (int n = 0; n < p.total_nodes; ++n) {
    const bool ours_turn = b >= theirs || (a < our_nodes && n % 2 == 0);
    if (ours_turn) {
      p.ours.push_back(n);
      ++a;
    } else {
      p.neighbour.push_back(n);
      ++b;
    }
  }
  return p;
}

}  // namespace clustersim::sim
