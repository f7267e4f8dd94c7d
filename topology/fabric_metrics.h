// What a fabric is, in the figures a buyer compares: switches, ports, cables and transceivers per
// tier, oversubscription per tier, bisection bandwidth (max-flow on the graph, Boost.Graph push-
// relabel, next to the closed form of a fat-tree), diameter in hops, latencies and hardware cost
// from the catalog's prices. Bandwidths in bytes/s per direction, latencies in seconds, USD.
#pragma once

#include <string>
#include <vector>

#include "topology/cluster_graph.h"

namespace clustersim::topology {

struct TierMetrics {
  std::string name;       // "leaf", "spine", "core"
  int switches = 0;       // all planes
  int ports = 0;          // switches * radix
  int ports_used = 0;     // cabled ports (a bonded NIC link uses `bonded` ports)
  int downlinks = 0;      // cabled ports facing the tier below (NICs for leaves)
  int uplinks = 0;        // cabled ports facing the tier above
  // Downlink : uplink bandwidth of one switch of this tier, the worst switch (1 = non-blocking);
  // 0 for the top tier.
  double oversubscription = 0;
};

struct FabricMetrics {
  int nodes = 0;
  int gpus = 0;
  int nics = 0;
  int planes = 0;
  std::vector<TierMetrics> tiers;  // bottom up; empty without a fabric
  int switches = 0;
  int switch_ports = 0;
  int switch_ports_used = 0;
  int cables = 0;        // physical fabric cables: NIC links (bonded counted each) + inter-switch
  int transceivers = 0;  // two per cable: every fabric cable taken as optical (AOC / transceivers)

  double injection_Bps = 0;  // all nodes' NIC links together, per direction
  // Max-flow from the first half of the nodes to the second (and from the even nodes to the odd
  // ones; the smaller of the two), at node level: each node is one vertex joined to the fabric
  // by its NIC links (its GPUs aggregated), so it stays fast at 16,384 GPUs.
  double bisection_Bps = 0;
  // Closed form for the same cut: min(half the injection, the cut's share of the leaf uplinks)
  // = nodes/2 * injection per node / leaf oversubscription for a fat-tree; -1 when the fabric
  // is not a regular fat-tree / leaf-spine (then only max-flow stands).
  double bisection_closed_form_Bps = -1;

  int diameter_hops = 0;           // longest shortest GPU-to-GPU path, in links
  double intra_node_latency_s = 0;  // GPU to GPU of the same node
  double worst_latency_s = 0;       // longest route latency from the first and last GPU
  double typical_latency_s = 0;     // median over all destinations of those two GPUs

  double switch_cost_usd = 0;
  double cable_cost_usd = 0;  // catalog NIC cable price (with its transceivers) per cable
  double nic_cost_usd = 0;
  double total_cost_usd() const { return switch_cost_usd + cable_cost_usd + nic_cost_usd; }
};

// Computes every figure above. Diameter: breadth-first search (Boost.Graph) from every GPU of the
// first and of the last node, exact for the symmetric fabrics the builders lay out (a test
// compares it with all-pairs search on small fabrics). Latencies: the static route from the
// first and from the last GPU to every other GPU (all equal-cost paths of these fabrics have the
// same latency). About 0.2 s at 16,384 GPUs.
FabricMetrics compute_metrics(const ClusterGraph& graph);

// The hardware alone: nodes, GPUs, NICs, planes, the counts per tier, switches, ports, cables,
// transceivers and their catalog costs, as compute_metrics gives them; no latency, diameter or
// bisection (zero). For pricing a fabric in a loop (the cost of owning per sweep row), where
// the searches of compute_metrics cost about 0.2 s at 16,384 GPUs.
FabricMetrics count_hardware(const ClusterGraph& graph);

// The node-level max-flow of FabricMetrics::bisection_Bps for an explicit cut: nodes whose entry
// in `in_first_half` is true send, the others receive. REQUIRES: one entry per node.
double node_cut_max_flow_Bps(const ClusterGraph& graph, const std::vector<bool>& in_first_half);

}  // namespace clustersim::topology
