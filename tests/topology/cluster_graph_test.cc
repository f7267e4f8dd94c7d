// The node model and the graph layout: vertices, links, bandwidths, affinity, bonded links.
#include <doctest/doctest.h>

#include <map>

#include "tests/topology/topology_fixtures.h"
#include "topology/cluster_graph.h"

namespace clustersim::topology {
namespace {

using testing::ClusterShape;
using testing::build_graph;

std::map<VertexKind, int> count_vertices(const ClusterGraph& g) {
  std::map<VertexKind, int> n;
  for (const Vertex& v : g.vertices()) ++n[v.kind];
  return n;
}

std::map<LinkKind, int> count_links(const ClusterGraph& g) {
  std::map<LinkKind, int> n;
  for (const Link& l : g.links()) ++n[l.kind];
  return n;
}

}  // namespace

TEST_SUITE("topology") {
  TEST_CASE("fat-tree k=4: 20 switches, 16 hosts, k^3/4 cables per tier") {
    const ClusterGraph g = build_graph(testing::k_ary_fat_tree(4));
    auto v = count_vertices(g);
    CHECK(v[VertexKind::kGpu] == 16);
    CHECK(v[VertexKind::kNic] == 16);
    CHECK(v[VertexKind::kLeaf] == 8);
    CHECK(v[VertexKind::kSpine] == 8);
    CHECK(v[VertexKind::kCore] == 4);
    CHECK(v[VertexKind::kLeaf] + v[VertexKind::kSpine] + v[VertexKind::kCore] == 20);
    auto l = count_links(g);
    CHECK(l[LinkKind::kNicToLeaf] == 16);
    CHECK(l[LinkKind::kLeafToSpine] == 16);
    CHECK(l[LinkKind::kSpineToCore] == 16);
    // Every switch uses all 4 ports.
    for (size_t i = 0; i < g.vertices().size(); ++i)
      if (g.vertices()[i].tier >= 1) {
        CAPTURE(g.vertices()[i].name);
        CHECK(g.links_of(static_cast<int>(i)).size() == 4);
      }
    // Pods: leaf l sits in pod l / 2, and is cabled to both spines of that pod only.
    for (const Link& link : g.links())
      if (link.kind == LinkKind::kLeafToSpine)
        CHECK(g.vertices()[link.src].pod == g.vertices()[link.dst].pod);
  }

  TEST_CASE("HGX H100 node: NVSwitch, one PCIe switch per GPU-NIC pair, host bridge") {
    ClusterShape s;
    s.nodes = 2;
    const ClusterGraph g = build_graph(s);
    auto v = count_vertices(g);
    CHECK(v[VertexKind::kGpu] == 16);
    CHECK(v[VertexKind::kNvSwitch] == 2);
    CHECK(v[VertexKind::kPcieSwitch] == 16);
    CHECK(v[VertexKind::kHostBridge] == 2);
    CHECK(v[VertexKind::kNic] == 16);
    for (const Link& l : g.links()) {
      if (l.kind == LinkKind::kNvlink) {
        // 18 NVLink4 links x 25 GB/s per direction (H100 datasheet: 900 GB/s bidirectional).
        CHECK(l.bandwidth_Bps == doctest::Approx(450e9));
        CHECK(g.vertices()[l.src].kind == VertexKind::kGpu);
        CHECK(g.vertices()[l.dst].kind == VertexKind::kNvSwitch);
      }
      if (l.kind == LinkKind::kPcie) CHECK(l.bandwidth_Bps == doctest::Approx(63.0e9).epsilon(0.01));
      if (l.kind == LinkKind::kNicToLeaf) CHECK(l.bandwidth_Bps == doctest::Approx(50e9));
    }
    for (int r = 0; r < 16; ++r) {
      const Vertex& gpu = g.vertices()[g.gpu_vertex(r)];
      CHECK(gpu.kind == VertexKind::kGpu);
      CHECK(gpu.node == r / 8);
      CHECK(gpu.index == r % 8);
      const Vertex& nic = g.vertices()[g.nic_of_gpu(r)];
      CHECK(nic.kind == VertexKind::kNic);
      CHECK(nic.node == r / 8);
      CHECK(nic.index == r % 8);
    }
    CHECK(g.vertices()[g.nvswitch_vertex(1)].kind == VertexKind::kNvSwitch);
    CHECK(g.vertices()[g.host_bridge_vertex(1)].kind == VertexKind::kHostBridge);
  }

  TEST_CASE("PCIe-only node: GPUs share the PCIe switch of their NIC") {
    ClusterShape s;
    s.nodes = 2;
    s.gpu = "rtx-4090";
    s.scale_up = "pcie4";
    s.nics_per_node = 2;
    s.nic = "roce-200";
    const ClusterGraph g = build_graph(s);
    auto v = count_vertices(g);
    CHECK(v[VertexKind::kNvSwitch] == 0);
    CHECK(v[VertexKind::kPcieSwitch] == 4);
    CHECK(g.nvswitch_vertex(0) == -1);
    // GPUs 0-3 with NIC 0, 4-7 with NIC 1.
    for (int r = 0; r < 8; ++r) CHECK(g.vertices()[g.nic_of_gpu(r)].index == r / 4);
    auto same_switch = g.routes(0, 3);
    REQUIRE(same_switch.size() == 1);
    CHECK(same_switch[0].hops.size() == 2);
    auto via_host = g.routes(0, 5);
    REQUIRE(via_host.size() == 1);
    CHECK(via_host[0].hops.size() == 4);
    // PCIe 4.0 x16: 31.5 GB/s per direction.
    CHECK(g.links()[via_host[0].hops[0].link].bandwidth_Bps == doctest::Approx(31.5e9).epsilon(0.01));
  }

  TEST_CASE("bonded NIC links are one link of links_per_nic cables") {
    ClusterShape s;
    s.nodes = 4;
    s.nics_per_node = 1;
    s.links_per_nic = 8;
    s.nic = "ib-hdr";
    s.topology = models::TopologyKind::kSingleSwitch;
    s.radix = 40;
    const ClusterGraph g = build_graph(s);
    int nic_links = 0;
    for (const Link& l : g.links())
      if (l.kind == LinkKind::kNicToLeaf) {
        ++nic_links;
        CHECK(l.bonded == 8);
        CHECK(l.bandwidth_Bps == doctest::Approx(8 * 25e9));  // 8 x 200 Gb/s
      }
    CHECK(nic_links == 4);
    // 200 GB/s of bonded links behind a 63 GB/s PCIe Gen5 x16 host link: said, not hidden.
    bool noted = false;
    for (const auto& n : g.design().notes) noted |= n.find("PCIe Gen5 x16") != std::string::npos;
    CHECK(noted);
  }

  TEST_CASE("every link is full duplex with latency and ends of the right kinds") {
    const ClusterGraph g = build_graph(testing::k_ary_fat_tree(4));
    for (const Link& l : g.links()) {
      CHECK(l.bandwidth_Bps > 0);
      CHECK(l.latency_s > 0);
      CHECK(l.id == &l - g.links().data());
      const Vertex& a = g.vertices()[l.src];
      const Vertex& b = g.vertices()[l.dst];
      CHECK(a.tier <= b.tier);  // src is the end nearer the GPUs
      if (l.kind == LinkKind::kLeafToSpine) CHECK((a.kind == VertexKind::kLeaf && b.kind == VertexKind::kSpine));
      if (l.kind == LinkKind::kSpineToCore) CHECK((a.kind == VertexKind::kSpine && b.kind == VertexKind::kCore));
    }
  }

  TEST_CASE("a single node has no fabric") {
    ClusterShape s;
    s.nodes = 1;
    const ClusterGraph g = build_graph(s);
    CHECK(g.plane_count() == 0);
    CHECK(g.routes(0, 7).size() == 1);
    CHECK(g.routes(0, 7)[0].hops.size() == 2);  // GPU -> NVSwitch -> GPU
  }
}

}  // namespace clustersim::topology
