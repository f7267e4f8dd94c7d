// Fabric sizing: switch and cable counts against hand counts and published designs, the seed's
// 256-GPU leaf-spine, multi-plane splits and the errors that say by how many ports a design
// falls short.
#include <doctest/doctest.h>

#include <string>

#include "models/scenario.h"
#include "tests/topology/topology_fixtures.h"
#include "topology/cluster_graph.h"
#include "topology/fabric_design.h"

namespace clustersim::topology {
namespace {

using models::TopologyKind;
using testing::ClusterShape;
using testing::make_cluster;

FabricDesign design_of(const ClusterShape& s) {
  auto d = design_fabric(make_cluster(s));
  REQUIRE_MESSAGE(d.ok(), (d.ok() ? "" : d.message()));
  return d.value();
}

std::string error_of(const ClusterShape& s) {
  auto d = design_fabric(make_cluster(s));
  REQUIRE_FALSE(d.ok());
  return d.message();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool any_note_contains(const FabricDesign& d, const std::string& part) {
  for (const auto& n : d.notes)
    if (contains(n, part)) return true;
  return false;
}

}  // namespace

TEST_SUITE("topology") {
  TEST_CASE("leaf port split keeps the ratio and the radix") {
    // Hand: 32+32 = 64 at 1:1; 42/21 = 2 and 42+21 = 63 (43+22 = 65 > 64); 48/16 = 3.
    CHECK(leaf_port_split(64, 1.0).down == 32);
    CHECK(leaf_port_split(64, 1.0).up == 32);
    CHECK(leaf_port_split(64, 2.0).down == 42);
    CHECK(leaf_port_split(64, 2.0).up == 21);
    CHECK(leaf_port_split(64, 3.0).down == 48);
    CHECK(leaf_port_split(64, 3.0).up == 16);
    CHECK(leaf_port_split(40, 1.0).down == 20);
  }

  TEST_CASE("k-ary fat-tree has 5k^2/4 switches and k^3/4 hosts") {
    // Al-Fares et al., SIGCOMM 2008, sec. 3.3: k pods of k/2 edge and k/2 aggregation switches,
    // (k/2)^2 core switches; k = 4 -> 20 switches, 16 hosts.
    for (int k : {4, 6, 8}) {
      CAPTURE(k);
      const FabricDesign d = design_of(testing::k_ary_fat_tree(k));
      CHECK(d.planes == 1);
      CHECK(d.plane.tiers == 3);
      CHECK(d.plane.pods == k);
      CHECK(d.plane.leaves == k * k / 2);
      CHECK(d.plane.spines() == k * k / 2);
      CHECK(d.plane.cores() == k * k / 4);
      CHECK(d.plane.switches() == 5 * k * k / 4);
      CHECK(d.leaf_oversubscription == doctest::Approx(1.0));
    }
    const FabricDesign k4 = design_of(testing::k_ary_fat_tree(4));
    CHECK(k4.plane.switches() == 20);
  }

  TEST_CASE("rail-optimized and three-tier designs match NVIDIA DGX SuperPOD counts") {
    // NVIDIA DGX SuperPOD reference architectures, compute fabric component counts (64-port
    // NDR QM9700 switches, 8 NICs per node, rail-aligned scalable units of 32 nodes):
    // H100 RA (docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100,
    // "Network Fabrics", Table 4) and B200 RA ("DGX SuperPOD Architecture", larger SuperPOD
    // component counts): 2 SU = 64 nodes: 16 leaves, 8 spines; 4 SU = 128 nodes: 32 leaves,
    // 16 spines, 1024 leaf-spine cables; 8 SU: 64 / 32; 16 SU = 512 nodes: 128 leaves, 128
    // spines, 64 cores; 32 SU: 256 / 256 / 128; 64 SU = 2048 nodes (16,384 GPUs): 512 / 512 / 256.
    struct Row {
      int nodes, tiers, leaves, spines, cores;
    };
    for (const Row& r : {Row{64, 2, 16, 8, 0}, Row{128, 2, 32, 16, 0}, Row{256, 2, 64, 32, 0},
                         Row{512, 3, 128, 128, 64}, Row{1024, 3, 256, 256, 128},
                         Row{2048, 3, 512, 512, 256}}) {
      CAPTURE(r.nodes);
      ClusterShape s;
      s.nodes = r.nodes;
      s.topology = TopologyKind::kRailOptimized;
      s.tiers = r.tiers;
      const FabricDesign d = design_of(s);
      CHECK(d.planes == 1);
      CHECK(d.plane.tiers == r.tiers);
      CHECK(d.plane.leaves == r.leaves);
      CHECK(d.plane.spines() == r.spines);
      CHECK(d.plane.cores() == r.cores);
      CHECK(d.plane.leaves * d.plane.uplinks_per_leaf == r.nodes * 8);  // leaf-spine cables
    }
  }

  TEST_CASE("1,024-node rail-optimized two-tier fabric splits into planes") {
    // 8,192 NICs; a two-tier plane of 64-port switches reaches 64 leaves x 32 NICs = 2,048.
    // Rails per plane: 8 -> 256 leaves, 4 -> 128, 2 -> 64 leaves: 4 planes of 2 rails, each
    // 64 leaves (32 nodes x 1 rail per leaf) and 64 x 32 / 64 = 32 spines.
    ClusterShape s;
    s.nodes = 1024;
    s.topology = TopologyKind::kRailOptimized;
    const FabricDesign d = design_of(s);
    CHECK(d.planes == 4);
    CHECK(d.plane.rails.size() == 2);
    CHECK(d.plane.tiers == 2);
    CHECK(d.plane.leaves == 64);
    CHECK(d.plane.nodes_per_leaf == 32);
    CHECK(d.plane.downlinks_per_leaf == 32);
    CHECK(d.plane.uplinks_per_leaf == 32);
    CHECK(d.plane.spines() == 32);
    CHECK(d.plane.links_per_leaf_spine == 1);
    CHECK(d.planes * d.plane.switches() == 384);
    CHECK(any_note_contains(d, "4 planes"));
    // Rail i of every node on a leaf that carries rail i only.
    for (int node : {0, 31, 32, 1023})
      for (int nic = 0; nic < 8; ++nic) {
        const NicPlacement at = place_nic(d, 8, node, nic);
        CHECK(at.plane == nic / 2);
        CHECK(at.leaf == node / 32 * 2 + nic % 2);
        CHECK(at.slot == node % 32);
      }
  }

  TEST_CASE("the seed's 8 leaves x 32 ports + 2 spines for 32 nodes") {
    // scenarios/seed/fat-tree-256gpu.yaml. 8 NICs per node: 256 NIC ports fill all 8 x 32 leaf
    // ports.
    ClusterShape s = testing::seed_leaf_spine(8);
    SUBCASE("8 NICs per node cannot be cabled") {
      const std::string e = error_of(s);
      CHECK(contains(e, "cluster.fabric.leaves: "));
      CHECK(contains(e, "32 NIC ports + at least 2 uplinks = 34 ports, has 32"));
      CHECK(contains(e, "short by 2 ports per leaf (16 in all)"));
      CHECK(contains(e, "at 1:1 each leaf needs 32 NIC ports + 32 uplinks = 64 ports"));
      CHECK(contains(e, "the spines 256 ports (2 x 32 = 64)"));
    }
    SUBCASE("one or two NICs per node are non-blocking") {
      for (int nics : {1, 2}) {
        s.nics_per_node = nics;
        const FabricDesign d = design_of(s);
        CHECK(d.plane.downlinks_per_leaf == 4 * nics);
        CHECK(d.plane.uplinks_per_leaf == 4 * nics);  // 2 or 4 cables to each spine
        CHECK(d.leaf_oversubscription == doctest::Approx(1.0));
        CHECK(d.notes.empty());
      }
    }
    SUBCASE("four NICs per node give 2:1") {
      // 16 NIC ports per leaf; 2 spines x 32 ports / 8 leaves = 8 uplinks per leaf at most.
      s.nics_per_node = 4;
      const FabricDesign d = design_of(s);
      CHECK(d.plane.downlinks_per_leaf == 16);
      CHECK(d.plane.uplinks_per_leaf == 8);
      CHECK(d.leaf_oversubscription == doctest::Approx(2.0));
      REQUIRE(d.notes.size() == 1);
      CHECK(contains(d.notes[0], "2:1 oversubscribed (16 NIC ports, 8 uplinks per leaf)"));
      CHECK(contains(d.notes[0], "the spines 128 ports (2 x 32 = 64)"));
      CHECK(contains(d.notes[0], "8 more uplinks per leaf"));
      CHECK(contains(d.notes[0], "64 spine ports short"));
    }
  }

  TEST_CASE("the seed's 256-GPU scenario file fails with its file:line:col") {
    const std::string path = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed/fat-tree-256gpu.yaml";
    auto scenario = models::load_scenario_file(path);
    REQUIRE_MESSAGE(scenario.ok(), (scenario.ok() ? "" : scenario.message()));
    auto g = ClusterGraph::build(scenario->cluster, &scenario.value());
    REQUIRE_FALSE(g.ok());
    CHECK(contains(g.message(), "fat-tree-256gpu.yaml:"));
    CHECK(contains(g.message(), "cluster.fabric.leaves: "));
    CHECK(contains(g.message(), "short by 2 ports per leaf"));
  }

  TEST_CASE("explicit leaf-spine errors say by how many ports") {
    ClusterShape s;
    s.nodes = 16;
    s.nics_per_node = 2;
    s.topology = TopologyKind::kLeafSpine;
    s.radix = 32;
    s.leaves = 4;
    s.spines = 4;
    SUBCASE("uneven uplinks") {
      s.uplinks_per_leaf = 10;
      CHECK(contains(error_of(s), "10 uplinks do not divide evenly over 4 spines: 2 port(s) over a "
                                  "multiple (use 8 or 12)"));
    }
    SUBCASE("uplinks exceed the leaf") {
      s.uplinks_per_leaf = 24;  // 8 NIC ports + 24 = 32 fits; 28 would not
      CHECK(design_fabric(make_cluster(s)).ok());
      s.uplinks_per_leaf = 28;
      CHECK(contains(error_of(s), "8 NIC ports (16 nodes x 2 NICs x 1 link over 4 leaves) + 28 "
                                  "uplinks = 36 ports, has 32: short by 4 ports per leaf"));
    }
    SUBCASE("spines run out of ports") {
      s.leaves = 16;  // 2 NICs per leaf
      s.spines = 2;
      s.uplinks_per_leaf = 6;  // 3 cables to each spine: 16 x 3 = 48 > 32
      CHECK(contains(error_of(s), "each spine needs 16 leaves x 3 links = 48 ports, has 32: short "
                                  "by 16 ports per spine (32 in all)"));
    }
    SUBCASE("only one of leaves and spines") {
      s.spines = 0;
      CHECK(contains(error_of(s), "cluster.fabric.spines: leaf-spine: give both"));
    }
  }

  TEST_CASE("single switch and multi-plane single switches") {
    ClusterShape s;
    s.topology = TopologyKind::kSingleSwitch;
    s.nodes = 4;
    SUBCASE("32 NIC ports on one 64-port switch") {
      const FabricDesign d = design_of(s);
      CHECK(d.planes == 1);
      CHECK(d.plane.tiers == 1);
      CHECK(d.plane.downlinks_per_leaf == 32);
    }
    SUBCASE("16 nodes x 8 NICs: two planes of one switch") {
      s.nodes = 16;
      const FabricDesign d = design_of(s);
      CHECK(d.planes == 2);
      CHECK(d.plane.rails.size() == 4);
      CHECK(d.plane.downlinks_per_leaf == 64);
    }
    SUBCASE("100 nodes cannot share 64-port switches") {
      s.nodes = 100;
      CHECK(contains(error_of(s), "a single 64-port switch cannot host 100 nodes even with one "
                                  "plane per NIC (100 ports per plane): short by 36 ports"));
    }
  }

  TEST_CASE("fat-tree sizing: one leaf, oversubscription, bonded links, shortfalls") {
    ClusterShape s;
    SUBCASE("4 nodes x 8 NICs fit on one leaf") {
      const FabricDesign d = design_of(s);
      CHECK(d.plane.tiers == 1);
      CHECK(d.plane.leaves == 1);
      CHECK(any_note_contains(d, "fit on one leaf switch"));
    }
    SUBCASE("2:1 halves the uplinks") {
      s.nodes = 64;
      s.nics_per_node = 1;
      s.oversubscription = 2.0;
      const FabricDesign d = design_of(s);
      // 42 NIC ports at most per leaf: 42 nodes -> 2 leaves of 32 nodes, 16 uplinks each.
      CHECK(d.plane.leaves == 2);
      CHECK(d.plane.downlinks_per_leaf == 32);
      CHECK(d.plane.uplinks_per_leaf == 16);
      CHECK(d.leaf_oversubscription == doctest::Approx(2.0));
    }
    SUBCASE("8 bonded links per NIC take 8 leaf ports") {
      s.nodes = 16;
      s.nics_per_node = 1;
      s.links_per_nic = 8;
      s.nic = "ib-hdr";
      const FabricDesign d = design_of(s);
      // 64 ports at 1:1: 32 NIC ports per leaf = 4 NICs x 8 links; 16 nodes -> 4 leaves with
      // 32 uplinks each.
      CHECK(d.plane.nics_per_leaf == 4);
      CHECK(d.plane.downlinks_per_leaf == 32);
      CHECK(d.plane.leaves == 4);
      CHECK(d.plane.uplinks_per_leaf == 32);
    }
    SUBCASE("too many nodes for two tiers") {
      s.nodes = 3000;
      const std::string e = error_of(s);
      // One rail per plane: 3000 NICs / 32 per leaf = 94 leaves > 64: short by 30 x 32 ports.
      CHECK(contains(e, "a two-tier plane of 64-port switches reaches at most 64 leaves, this one "
                        "needs 94"));
      CHECK(contains(e, "short by 960 NIC ports per plane (7680 in all)"));
    }
    SUBCASE("tiers must be 2 or 3") {
      s.nodes = 64;
      s.tiers = 4;
      CHECK(contains(error_of(s), "cluster.fabric.tiers: 4 tiers"));
    }
    SUBCASE("several nodes need NICs") {
      s.nics_per_node = 0;
      CHECK(contains(error_of(s), "cluster.node.nics_per_node: 4 nodes need at least one NIC"));
    }
  }
}

}  // namespace clustersim::topology
