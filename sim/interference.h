// Traffic that is not the simulated job's own but shares its fabric: a neighbour job on nodes next
// to ours, or background traffic (checkpoints, data loading, other tenants) from our own nodes.
// Both run for the whole simulated step and are never waited for; they only take bandwidth.
// The description is the scenario's `interference:` section (models::InterferenceConfig, loaded
// with the scenario, see models/scenario.h); here is where its nodes go. Units: nodes.
#pragma once

#include <vector>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::sim {

using Interference = models::InterferenceConfig;
using models::NeighbourPattern;
using models::NeighbourPlacement;

// Where our job's nodes sit on the enlarged cluster: physical node of our node i.
struct NodePlacement {
  int total_nodes = 0;         // ours + the neighbour's
  std::vector<int> ours;       // our node i -> physical node
  std::vector<int> neighbour;  // the neighbour's nodes
  int physical_gpu(int our_gpu, int gpus_per_node) const {
    return ours[our_gpu / gpus_per_node] * gpus_per_node + our_gpu % gpus_per_node;
  }
};

// The placement for a cluster of `our_nodes` nodes with this interference (identity without a
// neighbour): after ours, or alternating node by node while both have nodes left. Fails on
// negative counts, a load outside (0, 1] or a negative background rate.
models::Result<NodePlacement> place_nodes(int our_nodes, const Interference& interference);

}  // namespace clustersim::sim
