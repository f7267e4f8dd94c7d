// Traffic that is not the simulated job's own but shares its fabric: a neighbour job on nodes next
// to ours, or background traffic (checkpoints, data loading, other tenants) from our own nodes.
// Both run for the whole simulated step and are never waited for; they only take bandwidth.
// Units: nodes, bytes per second per direction. Plain data, defaults = no interference.
// The scenario loader belongs to models/ (SCENARIO.md): an `interference:` section maps onto
// this struct key by key (see the field comments); until it is wired, `compare`/`plan` callers
// and the tests fill it in code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::sim {

enum class NeighbourPlacement {
  kAfter,        // the neighbour's nodes follow ours (own leaves where they fill them: shares the
                 // spine and core tiers only)
  kInterleaved,  // ours and the neighbour's alternate node by node (a fragmented allocation:
                 // shares leaves and their uplinks too)
};
enum class NeighbourPattern {
  kRing,      // a data-parallel ring all_reduce: each GPU streams to the next node's GPU
  kAllToAll,  // expert-parallel style: each node streams to every other neighbour node
};
std::string_view to_string(NeighbourPlacement p);
std::string_view to_string(NeighbourPattern p);

struct Interference {
  // interference.neighbour.nodes: nodes of a second job, added to the cluster (0: none).
  int neighbour_nodes = 0;
  // interference.neighbour.placement: after | interleaved.
  NeighbourPlacement placement = NeighbourPlacement::kAfter;
  // interference.neighbour.pattern: ring | alltoall.
  NeighbourPattern pattern = NeighbourPattern::kRing;
  // interference.neighbour.load: the fraction of each of its NICs' line rate the neighbour offers
  // (1 = as fast as the fabric lets it).
  double neighbour_load = 1.0;
  // interference.background.per_node: bytes/s each of our nodes sends to random other nodes of
  // the cluster (one flow per NIC, destinations drawn with `seed`), e.g. checkpoint traffic.
  double background_per_node_Bps = 0;
  // interference.seed: destinations of background traffic.
  std::uint64_t seed = 1;

  bool any() const { return neighbour_nodes > 0 || background_per_node_Bps > 0; }
};

// Where our job's nodes sit on the enlarged cluster: physical node of our node i.
struct NodePlacement {
  int total_nodes = 0;            // ours + the neighbour's
  std::vector<int> ours;          // our node i -> physical node
  std::vector<int> neighbour;     // the neighbour's nodes
  int physical_gpu(int our_gpu, int gpus_per_node) const {
    return ours[our_gpu / gpus_per_node] * gpus_per_node + our_gpu % gpus_per_node;
  }
};

// The placement for a cluster of `our_nodes` nodes with this interference (identity without a
// neighbour). Fails on negative counts or a load outside (0, 1].
models::Result<NodePlacement> place_nodes(int our_nodes, const Interference& interference);

}  // namespace clustersim::sim
