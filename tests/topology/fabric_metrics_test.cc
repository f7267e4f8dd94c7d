// Fabric metrics: bisection from max-flow (never from the formula) against hand values, counts,
// cost, diameter against all-pairs search, latencies.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/topology/topology_fixtures.h"
#include "topology/cluster_graph.h"
#include "topology/fabric_metrics.h"
#include "topology/graph_search.h"

namespace clustersim::topology {
namespace {

using models::TopologyKind;
using testing::ClusterShape;
using testing::build_graph;

// 64 single-NIC NDR hosts on 8 leaves: 16-port switches at 1:1 (8 down, 8 up), 12-port ones at
// 2:1 (8 down, 4 up).
ClusterShape sixty_four_hosts(double oversubscription) {
  ClusterShape s = testing::single_nic_hosts(64, oversubscription > 1 ? 12 : 16);
  s.oversubscription = oversubscription;
  return s;
}

}  // namespace

TEST_SUITE("topology") {
  TEST_CASE("bisection by max-flow: 1:1 is half the injection, 2:1 half of that") {
    // 64 hosts x 400 Gb/s = 3.2 TB/s injection; the 32 hosts on one side can push 1.6 TB/s
    // through a non-blocking fabric, 0.8 TB/s when the leaves are 2:1.
    const ClusterGraph full = build_graph(sixty_four_hosts(1.0));
    const ClusterGraph half = build_graph(sixty_four_hosts(2.0));
    REQUIRE(full.design().plane.leaves == 8);
    REQUIRE(half.design().plane.leaves == 8);
    REQUIRE(half.design().plane.uplinks_per_leaf == 4);
    const FabricMetrics mf = compute_metrics(full);
    const FabricMetrics mh = compute_metrics(half);
    CHECK(mf.injection_Bps == doctest::Approx(64 * 50e9));
    CHECK(mf.bisection_Bps == doctest::Approx(mf.injection_Bps / 2));
    CHECK(mh.bisection_Bps == doctest::Approx(mh.injection_Bps / 4));
    CHECK(mf.bisection_Bps == doctest::Approx(mf.bisection_closed_form_Bps));
    CHECK(mh.bisection_Bps == doctest::Approx(mh.bisection_closed_form_Bps));
    CHECK(mh.tiers[0].oversubscription == doctest::Approx(2.0));
    CHECK(mf.tiers[0].oversubscription == doctest::Approx(1.0));
  }

  TEST_CASE("bisection of a three-tier k=8 fat-tree and of a multi-plane rail fabric") {
    const FabricMetrics k8 = compute_metrics(build_graph(testing::k_ary_fat_tree(8)));
    CHECK(k8.bisection_Bps == doctest::Approx(64 * 50e9));  // 128 hosts / 2 x 400 Gb/s
    ClusterShape s;
    s.nodes = 1024;
    s.topology = TopologyKind::kRailOptimized;
    const FabricMetrics rail = compute_metrics(build_graph(s));
    CHECK(rail.planes == 4);
    CHECK(rail.bisection_Bps == doctest::Approx(512 * 8 * 50e9));
    CHECK(rail.bisection_closed_form_Bps == doctest::Approx(rail.bisection_Bps));
    CHECK(rail.switches == 384);
    CHECK(rail.cables == 8192 + 8192);
  }

  TEST_CASE("the seed's switches with 4 NICs per node: 2:1, bisection a quarter of injection") {
    const FabricMetrics m = compute_metrics(build_graph(testing::seed_leaf_spine(4)));
    CHECK(m.switches == 10);
    CHECK(m.injection_Bps == doctest::Approx(32 * 4 * 50e9));
    CHECK(m.bisection_Bps == doctest::Approx(m.injection_Bps / 4));
    CHECK(m.tiers[0].ports_used == 8 * (16 + 8));
    CHECK(m.tiers[1].ports_used == 2 * 32);
  }

  TEST_CASE("k=4 fat-tree counts, cost and diameter") {
    const ClusterGraph g = build_graph(testing::k_ary_fat_tree(4));
    const FabricMetrics m = compute_metrics(g);
    CHECK(m.switches == 20);
    CHECK(m.switch_ports == 80);
    CHECK(m.switch_ports_used == 16 + 2 * 16 + 2 * 16);  // NICs; both ends of inter-switch cables
    CHECK(m.cables == 48);
    CHECK(m.transceivers == 96);
    REQUIRE(m.tiers.size() == 3);
    CHECK(m.tiers[0].uplinks == 16);
    CHECK(m.tiers[1].oversubscription == doctest::Approx(1.0));
    CHECK(m.tiers[2].oversubscription == 0);
    // Catalog: QM9700 $33,000, NDR cable $1,500, ConnectX-7 $2,000.
    CHECK(m.switch_cost_usd == doctest::Approx(20 * 33000));
    CHECK(m.cable_cost_usd == doctest::Approx(48 * 1500));
    CHECK(m.nic_cost_usd == doctest::Approx(16 * 2000));
    // GPU, PCIe switch, NIC, leaf, spine, core, spine, leaf, NIC, PCIe switch, GPU: 10 links.
    CHECK(m.diameter_hops == 10);
  }

  TEST_CASE("sampled diameter equals the all-pairs diameter") {
    ClusterShape rail;
    rail.nodes = 12;
    rail.gpus_per_node = 4;
    rail.nics_per_node = 4;
    rail.radix = 8;
    rail.topology = TopologyKind::kRailOptimized;
    ClusterShape pcie = rail;
    pcie.topology = TopologyKind::kFatTree;
    pcie.gpu = "rtx-4090";
    pcie.scale_up = "pcie4";
    pcie.nic = "roce-200";
    pcie.nics_per_node = 2;
    ClusterShape three = testing::k_ary_fat_tree(4);
    three.nodes = 13;  // a partial last pod
    for (const ClusterShape& s : {rail, pcie, three}) {
      const ClusterGraph g = build_graph(s);
      int all_pairs = 0;
      for (int r = 0; r < g.gpu_count(); ++r) {
        const auto d = hop_distances(g, g.gpu_vertex(r));
        for (int q = 0; q < g.gpu_count(); ++q) all_pairs = std::max(all_pairs, d[g.gpu_vertex(q)]);
      }
      CHECK(compute_metrics(g).diameter_hops == all_pairs);
    }
  }

  TEST_CASE("latencies add up link by link") {
    ClusterShape s;
    s.nodes = 2;
    s.nics_per_node = 8;
    s.topology = TopologyKind::kSingleSwitch;
    const FabricMetrics m = compute_metrics(build_graph(s));
    // NVLink: the catalog's 0.6 us one hop through the NVSwitch.
    CHECK(m.intra_node_latency_s == doctest::Approx(0.6e-6));
    // Between nodes: PCIe 0.5 + 0.5 us to the NIC, 1 us NIC -> switch -> NIC, 0.5 + 0.5 us.
    CHECK(m.worst_latency_s == doctest::Approx(3.0e-6));
    CHECK(m.typical_latency_s == doctest::Approx(3.0e-6));  // 8 of 15 destinations are remote
  }
}

}  // namespace clustersim::topology
