// Clusters built by hand from catalog entries for the topology tests, so that each test states
// exactly the shape it checks (scenario files are loaded where a test is about them).
#pragma once

#include <string>

#include <cstdio>
#include <cstdlib>

#include "models/catalog.h"
#include "models/scenario.h"
#include "topology/cluster_graph.h"

namespace clustersim::topology::testing {

struct ClusterShape {
  int nodes = 4;
  int gpus_per_node = 8;
  int nics_per_node = 8;
  int links_per_nic = 1;
  models::TopologyKind topology = models::TopologyKind::kFatTree;
  int tiers = 2;
  int radix = 64;
  double oversubscription = 1.0;
  models::Routing routing = models::Routing::kAdaptive;
  int leaves = 0;
  int spines = 0;
  int uplinks_per_leaf = 0;
  std::string gpu = "h100-sxm";
  std::string scale_up = "nvlink4";
  std::string nic = "ib-ndr";
};

// REQUIRES: catalog ids exist (asserts otherwise). The switch is the catalog default for the NIC
// with its radix replaced by shape.radix.
inline models::ClusterConfig make_cluster(const ClusterShape& s) {
  models::ClusterConfig c;
  c.nodes = s.nodes;
  const models::GpuSpec* gpu = models::find_gpu(s.gpu);
  const models::ScaleUpSpec* up = models::find_scale_up(s.scale_up);
  const models::NicSpec* nic = models::find_nic(s.nic);
  CS_ASSERT(gpu && up && nic, "unknown catalog id in a test");
  c.node.gpu = *gpu;
  c.node.gpus_per_node = s.gpus_per_node;
  c.node.scale_up = *up;
  c.node.nics_per_node = s.nics_per_node;
  c.node.nic = *nic;
  c.node.links_per_nic = s.links_per_nic;
  c.fabric.topology = s.topology;
  c.fabric.tiers = s.tiers;
  c.fabric.switch_radix = s.radix;
  c.fabric.oversubscription = s.oversubscription;
  c.fabric.routing = s.routing;
  c.fabric.leaves = s.leaves;
  c.fabric.spines = s.spines;
  c.fabric.uplinks_per_leaf = s.uplinks_per_leaf;
  c.fabric.switch_spec = *models::default_switch_for(*nic);
  c.fabric.switch_spec.radix = s.radix;
  return c;
}

// A k-ary fat-tree in the sense of Al-Fares et al. (SIGCOMM 2008): k^3/4 single-GPU, single-NIC
// hosts on three tiers of k-port switches.
inline ClusterShape k_ary_fat_tree(int k) {
  ClusterShape s;
  s.nodes = k * k * k / 4;
  s.gpus_per_node = 1;
  s.nics_per_node = 1;
  s.tiers = 3;
  s.radix = k;
  return s;
}

// `nodes` single-GPU, single-NIC NDR hosts (the textbook fat-tree host), `radix`-port switches.
inline ClusterShape single_nic_hosts(int nodes, int radix) {
  ClusterShape s;
  s.nodes = nodes;
  s.gpus_per_node = 1;
  s.nics_per_node = 1;
  s.radix = radix;
  return s;
}

// The seed's 256-GPU build (scenarios/seed/fat-tree-256gpu.yaml): "8 leaf switches (each 32 ports) and 2
// spine switches to connect 32 nodes", with `nics` NDR NICs per 8-GPU node.
inline ClusterShape seed_leaf_spine(int nics) {
  ClusterShape s;
  s.nodes = 32;
  s.nics_per_node = nics;
  s.topology = models::TopologyKind::kLeafSpine;
  s.radix = 32;
  s.leaves = 8;
  s.spines = 2;
  return s;
}

// Builds the graph of a shape that must build; a failure is a broken test: it aborts with the
// builder's message.
inline ClusterGraph build_graph(const ClusterShape& s, const BuildOptions& options = {}) {
  auto g = ClusterGraph::build(make_cluster(s), nullptr, options);
  if (!g.ok()) {
    std::fprintf(stderr, "test shape does not build: %s\n", g.message().c_str());
    std::abort();
  }
  return std::move(g).value();
}

}  // namespace clustersim::topology::testing
