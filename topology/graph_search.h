// Breadth-first search over a ClusterGraph (Boost.Graph inside, plain vectors outside): hop
// distances and shortest-path counts, used by the metrics (diameter) and by the tests that check
// every route is a shortest path. A hop is one Link, whatever its bonded count. O(V + E) each.
#pragma once

#include <vector>

#include "topology/cluster_graph.h"

namespace clustersim::topology {

// Which vertices a search may pass through (it may always start and end anywhere).
enum class SearchScope {
  kWholeGraph,  // through GPUs, NVSwitches, PCIe switches and host bridges too
  kFabricOnly,  // only NICs and fabric switches: the paths the network itself offers
};

// Hop distance from `source` to every vertex; -1 where unreachable.
std::vector<int> hop_distances(const ClusterGraph& graph, int source,
                               SearchScope scope = SearchScope::kWholeGraph);

// Hop distances from each of `sources` (one vector per source), building the search graph once.
std::vector<std::vector<int>> hop_distances(const ClusterGraph& graph,
                                            const std::vector<int>& sources,
                                            SearchScope scope = SearchScope::kWholeGraph);

// Number of distinct shortest paths (sequences of links) from `source` to `target`; 0 when
// unreachable. Parallel cables count as different paths, as adaptive routing spreads over them.
double shortest_path_count(const ClusterGraph& graph, int source, int target,
                           SearchScope scope = SearchScope::kWholeGraph);

}  // namespace clustersim::topology
