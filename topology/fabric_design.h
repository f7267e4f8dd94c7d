// The fabric's design: how many switches sit in each tier, how the NICs are spread over the
// leaves and how many cables join each pair of switches. Pure arithmetic on the scenario's
// `cluster` section (no graph); ClusterGraph::build lays the graph out from it. Counts are plain
// integers, bandwidths bytes/s per direction. A design that cannot be cabled is an Error that
// says by how many ports it falls short, citing the scenario's file:line:col when known.
#pragma once

#include <string>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::topology {

// One plane: an independent switch fabric that carries some of each node's NICs ("rails").
// Every plane of a fabric has the same shape. Tiers: 1 = one switch (the "leaf"), 2 = leaves and
// spines (every leaf cabled to every spine), 3 = pods of leaves and spines (aggregation) under a
// core tier (spine j of every pod cabled to core group j), as in Al-Fares et al., "A Scalable,
// Commodity Data Center Network Architecture", SIGCOMM 2008.
struct PlaneDesign {
  int tiers = 1;
  std::vector<int> rails;     // NIC indices (0..nics_per_node-1) of every node on this plane
  bool rail_aligned = false;  // true: a leaf carries one rail only (rail-optimized)

  // Tier 1. A NIC with links_per_nic bonded links takes that many ports on ONE leaf.
  // Placement (place_nic): rail-aligned, leaf g * rails + k carries rail k of the nodes of group
  // g (nodes_per_leaf consecutive nodes); node-aligned, whole nodes fill a leaf (nodes_per_leaf
  // of them), or, when one node's NICs need more ports than a leaf has, each node gets
  // leaves_per_node leaves of its own.
  int leaves = 0;
  int nodes_per_leaf = 0;      // 0 when nodes straddle leaves (leaves_per_node > 0)
  int leaves_per_node = 0;     // 0 unless node-aligned NICs straddle leaves
  int nics_per_leaf = 0;       // capacity; the last leaf may hold fewer
  int downlinks_per_leaf = 0;  // ports for NICs = nics_per_leaf * links_per_nic
  int uplinks_per_leaf = 0;    // = spines_per_pod * links_per_leaf_spine (0 with 1 tier)

  // Tier 2 (spines; "aggregation" switches in a three-tier fat-tree).
  int pods = 1;                  // 3 tiers: groups of leaves with their own spines; else 1
  int leaves_per_pod = 0;        // capacity of a pod; the last pod may hold fewer
  int spines_per_pod = 0;        // 2 tiers: all spines of the plane
  int links_per_leaf_spine = 0;  // parallel cables between one leaf and one spine of its pod

  // Tier 3 (core), three tiers only: spine j of every pod is cabled to each core of group j.
  int uplinks_per_spine = 0;  // = cores_per_group * links_per_spine_core
  int cores_per_group = 0;
  int links_per_spine_core = 0;

  int spines() const { return pods * spines_per_pod; }
  int cores() const { return tiers == 3 ? spines_per_pod * cores_per_group : 0; }
  int switches() const { return leaves + (tiers >= 2 ? spines() : 0) + cores(); }
};

struct FabricDesign {
  models::TopologyKind kind = models::TopologyKind::kFatTree;
  int radix = 0;            // ports per switch (cluster.fabric.switch_radix)
  double port_Bps = 0;      // switch port rate, per direction
  double nic_link_Bps = 0;  // one NIC link as cabled: min(NIC line rate, port rate)
  int planes = 0;           // 0: a single node without a fabric
  PlaneDesign plane;        // the shape every plane shares
  double requested_oversubscription = 1.0;
  // Leaf downlink : uplink bandwidth as built (1 = non-blocking; 0 with one tier).
  double leaf_oversubscription = 0;
  // Findings that do not stop the build ("asked 1:1 but the ports give 2:1", "fits on one
  // leaf: no spine tier needed", "planes: 4 because ..."): printed by `clustersim topo`.
  std::vector<std::string> notes;
};

// Sizes the fabric for `cluster`. Multi-plane: when the NICs of all nodes exceed what one plane
// of the requested tiers can reach at this radix, the rails are split over the smallest number
// of planes (a divisor of nics_per_node) that fits. Fails, with the shortfall in ports, when no
// split fits, when an explicit leaf-spine's leaves or spines run out of ports, or when uplinks do
// not divide evenly over the spines. `for_locations` (optional) supplies file:line:col.
// Where NIC `nic` (0..nics_per_node-1) of `node` is cabled. `index` numbers the NICs of a plane
// leaf by leaf (leaf * nics_per_leaf + slot): the destination D of D-mod-k routing.
struct NicPlacement {
  int plane = -1;
  int leaf = -1;   // within the plane
  int slot = -1;   // within the leaf
  int index = -1;  // within the plane
};
// REQUIRES: design.planes > 0, node and nic in range.
NicPlacement place_nic(const FabricDesign& design, int nics_per_node, int node, int nic);

models::Result<FabricDesign> design_fabric(const models::ClusterConfig& cluster,
                                           const models::Scenario* for_locations = nullptr);

// For a design that design_fabric() rejects: what the same switches and nodes can do instead,
// one sentence each (the seed's 8 leaves x 32 ports + 2 spines with 8 NICs per node: "with 2
// NICs per node: 1:1 ...", "with 4 NICs per node: 2:1 ...", "a two-tier fat-tree of 32-port
// switches for 8 NICs per node: 16 leaves + 16 spines, 1:1"). Empty when nothing close fits.
// Each carries the cluster it describes; the last one, when keeps_every_nic, is a fabric sized for
// every NIC of the nodes (what `topo --nearest` draws).
struct DesignAlternative {
  std::string text;
  models::ClusterConfig cluster;
  bool keeps_every_nic = false;
};
std::vector<DesignAlternative> design_alternatives(const models::ClusterConfig& cluster);

// One line for a design: "2 planes x (16 leaves + 8 spines), 32 NICs and 32 uplinks per leaf
// (1:1)"; "no fabric" for a single node.
std::string describe(const FabricDesign& design);

// Largest ports-per-leaf split (down, up) with down / up <= oversubscription and down + up <=
// radix, e.g. 64 ports at 1:1 -> (32, 32), at 2:1 -> (42, 21), at 3:1 -> (48, 16).
struct LeafPortSplit {
  int down = 0;
  int up = 0;
};
LeafPortSplit leaf_port_split(int radix, double oversubscription);

}  // namespace clustersim::topology
