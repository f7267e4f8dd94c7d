// What the formulas cannot see: the same collective on fabrics that differ only where flows
// meet. A ring whose every edge leaves its leaf (ring neighbours on different leaves, as data-
// parallel groups strided across the cluster are) loads the leaf uplinks at the NICs' rate:
//  - on a 2:1 oversubscribed fat-tree it takes twice as long as on a 1:1 one (the uplinks give
//    half the NIC rate), while the analytic model, which sees only the NICs, predicts the same;
//  - under ECMP, flows hashed onto the same spine cable share it and the ring waits for them;
//    adaptive routing spreads every flow over all cables and runs at the NIC rate;
//  - RoCE additionally loses its congestion efficiency on the collided cables; InfiniBand not;
//  - the adaptive bundle equals splitting each flow over its equal paths (sub-flows);
//  - background traffic from another job on the same leaves slows the collective.
// Hosts: single-GPU, single-NIC NDR nodes on radix-12 switches (1:1 leaves: 6 down, 6 up; 2:1:
// 8 down, 4 up), so the oversubscription is exactly the ratio.
#include <doctest/doctest.h>

#include <cmath>

#include "models/scenario.h"
#include "models/units.h"
#include "sim/collective_sim.h"
#include "tests/topology/topology_fixtures.h"

namespace clustersim::sim {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using models::CollectiveProtocol;
using models::Routing;

constexpr int kHosts = 24;

topology::ClusterGraph hosts(double oversubscription, Routing routing,
                             const std::string& nic = "ib-ndr",
                             std::uint64_t ecmp_seed = topology::BuildOptions{}.ecmp_seed) {
  auto s = topology::testing::single_nic_hosts(kHosts, 12);
  s.oversubscription = oversubscription;
  s.routing = routing;
  s.nic = nic;
  topology::BuildOptions o;
  o.ecmp_seed = ecmp_seed;
  return topology::testing::build_graph(s, o);
}

// Hosts ordered leaf by leaf across the leaves: 0, p, 2p, ..., 1, p+1, ... (p hosts per leaf),
// so that every ring edge crosses from one leaf to another.
Communicator across_leaves(const topology::ClusterGraph& g) {
  const int per_leaf = g.design().plane.nodes_per_leaf;
  const int leaves = (kHosts + per_leaf - 1) / per_leaf;
  Communicator c;
  for (int slot = 0; slot < per_leaf; ++slot)
    for (int leaf = 0; leaf < leaves; ++leaf) {
      const int h = leaf * per_leaf + slot;
      if (h < kHosts) c.push_back(h);
    }
  return c;
}

// Ring all_reduce of `bytes` over the strided communicator; the simulated bandwidth term.
double strided_all_reduce_s(const topology::ClusterGraph& g, const SimParams& params,
                            const std::vector<SimFlow>& background = {},
                            FabricModel* shared_fabric = nullptr) {
  FabricModel own(g, params.transport, scale_up_efficiency(g.cluster(), params.collective),
                  flows_per_nic(params.lowering));
  FabricModel& fabric = shared_fabric ? *shared_fabric : own;
  auto topo = models::collective_topology(g.cluster(), kHosts);
  REQUIRE(topo.ok());
  auto r = simulate_collective(fabric,
                               {CollectiveOp::kAllReduce, models::kGiB, CollectiveAlgorithm::kRing,
                                CollectiveProtocol::kSimple},
                               {across_leaves(g)}, *topo, params, background);
  INFO((r.ok() ? std::string() : r.message()));
  REQUIRE(r.ok());
  return r->bandwidth_s;
}

TEST_SUITE("sim") {
  TEST_CASE("a 2:1 oversubscribed fat-tree doubles an all_reduce whose edges cross leaves") {
    const auto full = hosts(1.0, Routing::kAdaptive);
    const auto half = hosts(2.0, Routing::kAdaptive);
    REQUIRE(full.design().leaf_oversubscription == doctest::Approx(1.0));
    REQUIRE(half.design().leaf_oversubscription == doctest::Approx(2.0));
    SimParams params;
    const double t1 = strided_all_reduce_s(full, params);
    const double t2 = strided_all_reduce_s(half, params);
    // 1:1: NIC-bound, as the formula: 2(n-1)/n GiB at 400 Gb/s x 0.94.
    const double nic_Bps = 50e9 * 0.94;
    CHECK(t1 == doctest::Approx(2.0 * (kHosts - 1) / kHosts * models::kGiB / nic_Bps).epsilon(0.01));
    // 2:1: the uplinks carry half the NICs' line rate, less only the packets' headers (the NIC's
    // 0.94 also counts its host side, which the switches' links do not have): 2 x 0.94 /
    // (4096 / 4122).
    CHECK(t2 / t1 == doctest::Approx(2.0 * 0.94 / (4096.0 / 4122)).epsilon(0.02));
  }

  TEST_CASE("ECMP collisions slow a large all_reduce that adaptive routing runs at NIC rate") {
    SimParams params;
    const double adaptive = strided_all_reduce_s(hosts(1.0, Routing::kAdaptive), params);
    const double ecmp = strided_all_reduce_s(hosts(1.0, Routing::kEcmp), params);
    CAPTURE(adaptive);
    CAPTURE(ecmp);
    CHECK(ecmp > 1.2 * adaptive);
    // A flow can at worst share a cable with every other flow of its leaf: bounded slowdown.
    CHECK(ecmp < 12 * adaptive);
  }

  TEST_CASE("more queue pairs per connection spread ECMP collisions (Meta's mitigation)") {
    SimParams one, many;
    many.lowering.qps_per_connection = 8;
    const auto g = hosts(1.0, Routing::kEcmp);
    const double adaptive = strided_all_reduce_s(hosts(1.0, Routing::kAdaptive), one);
    const double ecmp1 = strided_all_reduce_s(g, one);
    const double ecmp8 = strided_all_reduce_s(g, many);
    CAPTURE(ecmp1);
    CAPTURE(ecmp8);
    CHECK(ecmp8 < ecmp1);
    CHECK(ecmp8 >= adaptive * (1 - 1e-9));
  }

  TEST_CASE("ECMP is deterministic: the same seed gives the same collisions") {
    SimParams params;
    const auto g = hosts(1.0, Routing::kEcmp);
    CHECK(strided_all_reduce_s(g, params) ==
          doctest::Approx(strided_all_reduce_s(g, params)).epsilon(1e-12));
  }

  TEST_CASE("another ECMP seed is another draw of the hash: other collisions, same bounds") {
    SimParams params;
    const double adaptive = strided_all_reduce_s(hosts(1.0, Routing::kAdaptive), params);
    auto with_seed = [&](std::uint64_t seed) {
      return strided_all_reduce_s(hosts(1.0, Routing::kEcmp, "ib-ndr", seed), params);
    };
    // The default seed is the draw every prediction uses.
    CHECK(with_seed(topology::BuildOptions{}.ecmp_seed) ==
          doctest::Approx(strided_all_reduce_s(hosts(1.0, Routing::kEcmp), params)).epsilon(1e-12));
    double lo = 1e300, hi = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      const double t = with_seed(seed);
      CHECK(t == doctest::Approx(with_seed(seed)).epsilon(1e-12));  // each draw deterministic
      CHECK(t >= adaptive * (1 - 1e-9));
      CHECK(t < 12 * adaptive);
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    CAPTURE(lo);
    CAPTURE(hi);
    CHECK(hi > lo * 1.05);  // the draws differ: collisions are the hash's luck
  }

  TEST_CASE("congestion fills the latency term before it lengthens a collective") {
    // Uncontended (the transfer no longer than the formula's bandwidth term): the transfer.
    CHECK(contended_bandwidth_s(1.9, 1.0, 2.0) == 1.9);
    CHECK(contended_bandwidth_s(2.0, 1.0, 2.0) == 2.0);
    // Contended within the latency's slack: the collective keeps its uncontended time.
    CHECK(contended_bandwidth_s(2.6, 1.0, 2.0) == 2.0);
    CHECK(contended_bandwidth_s(3.0, 1.0, 2.0) == 2.0);
    // Beyond it: the collective takes the contended transfer, latency included.
    CHECK(contended_bandwidth_s(5.0, 1.0, 2.0) == 4.0);
    CHECK(contended_bandwidth_s(5.0, -1.0, 2.0) == 5.0);

    // Tolly's 64 H20 on ECMP, NCCL's ring at 512 MiB: the hash overloads spine cables, the
    // transfer takes longer than the formula's bandwidth term, and the collective the longer of
    // latency + that term and the transfer.
    auto s = models::load_scenario_file(std::string(CLUSTERSIM_SOURCE_DIR) +
                                        "/scenarios/published/contention/"
                                        "tolly-225112-h3c-64xh20-ecmp-512mib.yaml");
    REQUIRE(s.ok());
    auto g = topology::ClusterGraph::build(s->cluster, &*s);
    REQUIRE(g.ok());
    auto r = simulate_collective(*g,
                                 {CollectiveOp::kAllReduce, 512 * models::kMiB,
                                  CollectiveAlgorithm::kRing},
                                 64, SimParams{});
    REQUIRE(r.ok());
    const double latency = r->analytic.latency_s, formula = r->analytic.bandwidth_s;
    CHECK(r->transfer_s > formula * 1.2);
    CHECK(r->time_s == doctest::Approx(std::max(latency + formula, r->transfer_s)));
    CHECK(r->time_s < latency + r->transfer_s);
  }

  TEST_CASE("RoCE loses its congestion efficiency where ECMP collides; InfiniBand does not") {
    // The shipped share is the contention corpus's fit (no loss: kRoceSharedEfficiency 1.0); a
    // calibrated lossy fabric keeps 0.9 of a congested link.
    CHECK(TransportParams{}.roce_shared_efficiency == kRoceSharedEfficiency);
    SimParams params;
    params.transport.roce_shared_efficiency = 0.9;
    const double ib = strided_all_reduce_s(hosts(1.0, Routing::kEcmp, "ib-ndr"), params);
    const double roce = strided_all_reduce_s(hosts(1.0, Routing::kEcmp, "roce-400"), params);
    const double ib_adaptive = strided_all_reduce_s(hosts(1.0, Routing::kAdaptive, "ib-ndr"), params);
    const double roce_adaptive =
        strided_all_reduce_s(hosts(1.0, Routing::kAdaptive, "roce-400"), params);
    const double nic_ratio = models::find_nic("ib-ndr")->protocol_efficiency /
                             models::find_nic("roce-400")->protocol_efficiency;
    // Without collisions only the protocol efficiency differs.
    CHECK(roce_adaptive / ib_adaptive == doctest::Approx(nic_ratio).epsilon(0.01));
    // With them RoCE loses more: at least the shared-link efficiency on the worst cable.
    CHECK(roce / ib > nic_ratio * 1.05);
    CHECK(roce / ib <= nic_ratio / params.transport.roce_shared_efficiency + 1e-9);
  }

  TEST_CASE("TCP's window caps a flow at window / round trip; RDMA has no window") {
    TransportParams t;
    t.tcp_window_bytes = 64 * 1024;
    // 15 us one way: 64 KiB per 30 us = 2.18 GB/s.
    CHECK(window_rate_cap_Bps(models::LinkTechnology::kEthernetTcp, 15e-6, t) ==
          doctest::Approx(65536 / 30e-6));
    CHECK(window_rate_cap_Bps(models::LinkTechnology::kRoce, 15e-6, t) == 0);
    SimParams wide, narrow;
    narrow.transport.tcp_window_bytes = 64 * 1024;
    const auto g = hosts(1.0, Routing::kAdaptive, "eth-tcp-100");
    const double free_s = strided_all_reduce_s(g, wide);
    const double capped_s = strided_all_reduce_s(g, narrow);
    CAPTURE(free_s);
    CAPTURE(capped_s);
    // 6 MiB windows never bind at 100 Gb/s in a data centre; 64 KiB ones do (2 flows per NIC at
    // ~1.7 GB/s each against 8.75 GB/s of NIC).
    CHECK(capped_s > 2 * free_s);
  }

  TEST_CASE("adaptive bundles equal splitting each flow over its equal paths") {
    const auto g = hosts(2.0, Routing::kAdaptive);
    SimParams params;
    FabricModel fabric(g, params.transport, 1.0);
    // Every host sends 1 GB to the host p places on (another leaf).
    const Communicator c = across_leaves(g);
    std::vector<SimFlow> bundled, split;
    for (size_t i = 0; i < c.size(); ++i) {
      const int src = c[i], dst = c[(i + 1) % c.size()];
      bundled.push_back({fabric.route(src, dst, 0).resources, 1e9, 0});
      for (const topology::Path& p : g.routes(src, dst)) {
        SimFlow f;
        f.bytes = 1e9 * p.share;
        for (const topology::LinkUse& u : p.hops) f.route.push_back(fabric.link_resource(u.link, u.forward));
        split.push_back(std::move(f));
      }
    }
    TaskGraph a, b;
    a.add_transfer(0, bundled);
    b.add_transfer(0, split);
    auto ra = run_task_graph(a, fabric.table());
    auto rb = run_task_graph(b, fabric.table());
    REQUIRE(ra.ok());
    REQUIRE(rb.ok());
    CHECK(split.size() > bundled.size());
    CHECK(ra->makespan_s == doctest::Approx(rb->makespan_s).epsilon(1e-6));
  }

  TEST_CASE("another job's traffic on the same leaves slows the collective") {
    const auto g = hosts(2.0, Routing::kAdaptive);
    SimParams params;
    FabricModel fabric(g, params.transport, 1.0);
    const double quiet = strided_all_reduce_s(g, params, {}, &fabric);
    // A neighbour streams leaf 0 -> leaf 1 on every host of leaf 0 (endless, in the background).
    const int per_leaf = g.design().plane.nodes_per_leaf;
    std::vector<SimFlow> noise;
    for (int h = 0; h < per_leaf; ++h)
      noise.push_back({fabric.route(h, per_leaf + h, 99).resources, 1e15, 0});
    const double busy = strided_all_reduce_s(g, params, noise, &fabric);
    CAPTURE(quiet);
    CAPTURE(busy);
    CHECK(busy > 1.3 * quiet);
  }
}

}  // namespace
}  // namespace clustersim::sim
