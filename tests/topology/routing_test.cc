// Routing invariants: every route is a connected shortest path (checked by Boost breadth-first
// search), adaptive returns every equal-cost fabric path with shares summing to 1, D-mod-k
// spreads destinations evenly over spines and cores and routes a shift permutation without
// contention, ECMP is deterministic for a seed.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <utility>

#include "tests/topology/topology_fixtures.h"
#include "topology/cluster_graph.h"
#include "topology/graph_search.h"

namespace clustersim::topology {
namespace {

using models::Routing;
using models::TopologyKind;
using testing::ClusterShape;

ClusterGraph build(const ClusterShape& s, std::uint64_t seed = BuildOptions{}.ecmp_seed) {
  BuildOptions o;
  o.ecmp_seed = seed;
  return testing::build_graph(s, o);
}

// Walks the hops from the source GPU; returns the vertex reached (-1 if a hop does not connect).
int walk(const ClusterGraph& g, int from, const Path& p) {
  int at = from;
  for (const LinkUse& u : p.hops) {
    const Link& l = g.links()[u.link];
    const int expect = u.forward ? l.src : l.dst;
    if (expect != at) return -1;
    at = u.forward ? l.dst : l.src;
  }
  return at;
}

// Small fabrics of every kind the builders make.
std::vector<std::pair<const char*, ClusterShape>> fabrics() {
  std::vector<std::pair<const char*, ClusterShape>> out;
  out.emplace_back("k=4 fat-tree", testing::k_ary_fat_tree(4));
  ClusterShape two_tier;  // 8 nodes x 2 GPUs x 2 NICs on 8-port switches: 4 leaves, 4 spines
  two_tier.nodes = 8;
  two_tier.gpus_per_node = 2;
  two_tier.nics_per_node = 2;
  two_tier.radix = 8;
  out.emplace_back("two-tier fat-tree", two_tier);
  ClusterShape parallel = two_tier;  // 2 leaves: 2 parallel cables per leaf-spine pair
  parallel.nodes = 4;
  out.emplace_back("two-tier with parallel cables", parallel);
  ClusterShape over = two_tier;
  over.oversubscription = 3.0;
  over.nodes = 12;
  out.emplace_back("3:1 fat-tree", over);
  ClusterShape rail = two_tier;
  rail.topology = TopologyKind::kRailOptimized;
  rail.nics_per_node = 4;
  rail.gpus_per_node = 4;
  out.emplace_back("rail-optimized", rail);
  ClusterShape planes = rail;  // 8 nodes x 4 rails on 4-port switches: 2 leaves per rail
  planes.radix = 4;
  out.emplace_back("multi-plane rail-optimized", planes);
  ClusterShape rail3 = rail;
  rail3.tiers = 3;
  rail3.radix = 4;
  rail3.nics_per_node = 2;
  rail3.gpus_per_node = 2;
  out.emplace_back("three-tier rail-optimized", rail3);
  ClusterShape leaf_spine = two_tier;
  leaf_spine.topology = TopologyKind::kLeafSpine;
  leaf_spine.leaves = 4;
  leaf_spine.spines = 2;
  out.emplace_back("explicit leaf-spine", leaf_spine);
  ClusterShape pcie = two_tier;
  pcie.gpu = "rtx-4090";
  pcie.scale_up = "pcie4";
  pcie.nic = "roce-200";
  pcie.gpus_per_node = 4;
  out.emplace_back("PCIe nodes", pcie);
  ClusterShape pcie_planes = pcie;  // 4-port switches: 2 planes, so PXN through the host bridge
  pcie_planes.radix = 4;
  out.emplace_back("multi-plane PCIe nodes", pcie_planes);
  ClusterShape single = two_tier;
  single.topology = TopologyKind::kSingleSwitch;
  single.radix = 16;
  out.emplace_back("single switch", single);
  return out;
}

}  // namespace

TEST_SUITE("topology") {
  TEST_CASE("every route is a connected shortest path; adaptive finds every equal path") {
    for (auto& [name, shape] : fabrics()) {
      CAPTURE(name);
      for (Routing r : {Routing::kStatic, Routing::kEcmp, Routing::kAdaptive}) {
        shape.routing = r;
        const ClusterGraph g = build(shape);
        CAPTURE(models::to_string(r));
        for (int src = 0; src < g.gpu_count(); ++src) {
          const std::vector<int> dist = hop_distances(g, g.gpu_vertex(src));
          for (int dst = 0; dst < g.gpu_count(); ++dst) {
            if (src == dst) continue;
            CAPTURE(src);
            CAPTURE(dst);
            const auto paths = g.routes(src, dst, 7);
            REQUIRE(!paths.empty());
            CHECK(static_cast<long long>(paths.size()) == g.path_count(src, dst));
            double shares = 0;
            std::set<std::vector<std::pair<int, bool>>> distinct;
            for (const Path& p : paths) {
              CHECK(walk(g, g.gpu_vertex(src), p) == g.gpu_vertex(dst));
              CHECK(static_cast<int>(p.hops.size()) == dist[g.gpu_vertex(dst)]);
              shares += p.share;
              std::vector<std::pair<int, bool>> key;
              for (const LinkUse& u : p.hops) key.emplace_back(u.link, u.forward);
              distinct.insert(key);
            }
            CHECK(shares == doctest::Approx(1.0));
            CHECK(distinct.size() == paths.size());
            if (r != Routing::kAdaptive) CHECK(paths.size() == 1);
            // Adaptive: as many paths as the fabric has shortest paths between the two NICs.
            if (r == Routing::kAdaptive && g.node_of_gpu(src) != g.node_of_gpu(dst)) {
              int nic_a = -1, nic_b = -1;
              for (const LinkUse& u : paths[0].hops) {
                const Link& l = g.links()[u.link];
                if (l.kind != LinkKind::kNicToLeaf) continue;
                (nic_a < 0 ? nic_a : nic_b) = l.src;
              }
              CHECK(shortest_path_count(g, nic_a, nic_b, SearchScope::kFabricOnly) ==
                    doctest::Approx(static_cast<double>(paths.size())));
            }
          }
        }
      }
    }
  }

  TEST_CASE("link loads are the routes' shares per link direction") {
    ClusterShape s = testing::k_ary_fat_tree(4);
    const ClusterGraph g = build(s);
    for (auto [src, dst] : {std::pair{0, 15}, std::pair{0, 1}, std::pair{0, 2}, std::pair{3, 9}}) {
      CAPTURE(src);
      CAPTURE(dst);
      std::map<std::pair<int, bool>, double> from_paths, from_loads;
      for (const Path& p : g.routes(src, dst))
        for (const LinkUse& u : p.hops) from_paths[{u.link, u.forward}] += p.share;
      for (const LinkLoad& l : g.link_loads(src, dst)) from_loads[{l.link, l.forward}] += l.share;
      REQUIRE(from_paths.size() == from_loads.size());
      for (const auto& [key, share] : from_paths) CHECK(from_loads[key] == doctest::Approx(share));
    }
  }

  TEST_CASE("D-mod-k spreads destinations evenly over spines and cores") {
    SUBCASE("two tiers with parallel cables") {
      // 64 single-NIC nodes on 16-port switches: 8 leaves of 8 NICs, 8 uplinks as 4 spines x 2
      // cables. From leaf 0, the 56 destinations on other leaves: 14 per spine, 7 per cable.
      ClusterShape s = testing::single_nic_hosts(64, 16);
      s.routing = Routing::kStatic;
      const ClusterGraph g = build(s);
      REQUIRE(g.design().plane.spines_per_pod == 4);
      REQUIRE(g.design().plane.links_per_leaf_spine == 2);
      std::map<int, int> per_spine, per_cable;
      for (int dst = 8; dst < 64; ++dst) {
        const auto p = g.routes(0, dst);
        REQUIRE(p.size() == 1);
        for (const LinkUse& u : p[0].hops)
          if (g.links()[u.link].kind == LinkKind::kLeafToSpine && u.forward) {
            ++per_spine[g.links()[u.link].dst];
            ++per_cable[u.link];
          }
      }
      CHECK(per_spine.size() == 4);
      for (auto [spine, n] : per_spine) CHECK(n == 14);
      CHECK(per_cable.size() == 8);
      for (auto [cable, n] : per_cable) CHECK(n == 7);
    }
    SUBCASE("three tiers: cores too") {
      ClusterShape s = testing::k_ary_fat_tree(8);  // 128 hosts, 16 cores
      s.routing = Routing::kStatic;
      const ClusterGraph g = build(s);
      std::map<int, int> per_core;
      for (int dst = 16; dst < 128; ++dst) {  // every host outside pod 0
        const auto paths = g.routes(0, dst);
        for (const LinkUse& u : paths[0].hops)
          if (g.links()[u.link].kind == LinkKind::kSpineToCore && u.forward)
            ++per_core[g.links()[u.link].dst];
      }
      CHECK(per_core.size() == 16);
      for (auto [core, n] : per_core) CHECK(n == 7);  // 112 destinations / 16 cores
    }
  }

  TEST_CASE("D-mod-k routes a shift permutation without contention; ECMP collides") {
    // Every host i sends to i + 8 (next leaf): 64 flows. Under D-mod-k no link direction carries
    // two of them (Zahavi et al. 2010); hashing piles some onto one cable.
    ClusterShape s = testing::single_nic_hosts(64, 16);
    auto max_load = [&](Routing r) {
      s.routing = r;
      const ClusterGraph g = build(s);
      std::map<std::pair<int, bool>, int> load;
      int worst = 0;
      for (int i = 0; i < 64; ++i) {
        const auto paths = g.routes(i, (i + 8) % 64, i);
        for (const LinkUse& u : paths[0].hops)
          worst = std::max(worst, ++load[{u.link, u.forward}]);
      }
      return worst;
    };
    CHECK(max_load(Routing::kStatic) == 1);
    CHECK(max_load(Routing::kEcmp) > 1);
  }

  TEST_CASE("ECMP is deterministic for a seed and spreads flows") {
    ClusterShape s = testing::single_nic_hosts(64, 16);
    s.routing = Routing::kEcmp;
    const ClusterGraph a = build(s, 42), b = build(s, 42), c = build(s, 43);
    int differ = 0;
    std::map<int, int> per_cable;
    for (std::uint64_t flow = 0; flow < 800; ++flow) {
      const auto pa = a.routes(0, 63, flow), pb = b.routes(0, 63, flow), pc = c.routes(0, 63, flow);
      REQUIRE(pa.size() == 1);
      CHECK(pa[0].hops.size() == pb[0].hops.size());
      for (size_t h = 0; h < pa[0].hops.size(); ++h) CHECK(pa[0].hops[h].link == pb[0].hops[h].link);
      CHECK(a.routes(0, 63, flow)[0].hops[3].link == pa[0].hops[3].link);  // same query again
      differ += pa[0].hops[3].link != pc[0].hops[3].link;
      ++per_cable[pa[0].hops[3].link];  // GPU, PCIe, NIC-leaf, then the leaf's uplink
    }
    CHECK(differ > 400);  // another seed picks another of the 8 uplinks 7 times in 8
    CHECK(per_cable.size() == 8);
    for (auto [cable, n] : per_cable) CHECK((n > 60 && n < 140));  // 100 expected each
  }

  TEST_CASE("between planes the source crosses NVLink to the destination's rail (PXN)") {
    ClusterShape s;  // 8 nodes x 4 rails on 4-port switches: 4 planes of one rail
    s.nodes = 8;
    s.gpus_per_node = 4;
    s.nics_per_node = 4;
    s.radix = 4;
    s.topology = TopologyKind::kRailOptimized;
    const ClusterGraph g = build(s);
    REQUIRE(g.plane_count() == 4);
    const auto p = g.routes(0, 4 * 5 + 2);  // GPU 0 of node 0 to GPU 2 of node 5
    const Path& path = p[0];
    CHECK(g.links()[path.hops[0].link].kind == LinkKind::kNvlink);
    CHECK(g.links()[path.hops[1].link].kind == LinkKind::kNvlink);
    CHECK(g.links()[path.hops[1].link].src == g.gpu_vertex(2));  // to GPU 2 beside NIC 2
    int nic_links = 0;
    for (const LinkUse& u : path.hops)
      if (g.links()[u.link].kind == LinkKind::kNicToLeaf) {
        CHECK(g.vertices()[g.links()[u.link].src].index == 2);
        ++nic_links;
      }
    CHECK(nic_links == 2);
  }

  TEST_CASE("between planes a PCIe-only node reaches the other rail's NIC through the host") {
    ClusterShape s;  // 8 nodes x 4 RTX 4090 x 2 NICs on 4-port switches: 2 planes of one rail
    s.nodes = 8;
    s.gpus_per_node = 4;
    s.nics_per_node = 2;
    s.radix = 4;
    s.gpu = "rtx-4090";
    s.scale_up = "pcie4";
    s.nic = "roce-200";
    const ClusterGraph g = build(s);
    REQUIRE(g.plane_count() == 2);
    const auto p = g.routes(0, 4 * 5 + 3);  // GPU 0 (NIC 0) to GPU 3 of node 5 (NIC 1)
    const Path& path = p[0];
    REQUIRE(path.hops.size() >= 4);
    CHECK(g.vertices()[g.links()[path.hops[1].link].dst].kind == VertexKind::kHostBridge);
    CHECK(g.vertices()[g.links()[path.hops[2].link].dst].kind == VertexKind::kHostBridge);
    CHECK(g.links()[path.hops[3].link].src == g.nic_vertex(0, 1));
  }
}

}  // namespace clustersim::topology
