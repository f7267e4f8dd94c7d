// Without contention the simulator must reproduce the analytic collective model: one case per
// algorithm x collective (and the LL/LL128 protocols), each within 1% of the formula's time.
// The clusters are H100 nodes (NVLink 4 with NVLS, 8 x NDR InfiniBand) on a non-blocking
// two-tier fat-tree with adaptive routing, so nothing but the collective's own flows shares a
// link; the agreement therefore checks that every lowering moves exactly the bytes per link that
// the formula assumes.
#include <doctest/doctest.h>

#include "models/units.h"
#include "sim/collective_sim.h"
#include "tests/topology/topology_fixtures.h"

namespace clustersim::sim {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using models::CollectiveProtocol;
using topology::testing::ClusterShape;

struct Case {
  const char* name;
  CollectiveOp op;
  CollectiveAlgorithm algorithm;
  CollectiveProtocol protocol;
  int ranks;
};

topology::ClusterGraph h100_cluster(int nodes, const std::string& scale_up = "nvlink4",
                                    bool sharp = true) {
  ClusterShape s;
  s.nodes = nodes;
  s.scale_up = scale_up;
  if (scale_up == "nvlink3") s.gpu = "a100-sxm-80gb";
  auto cluster = topology::testing::make_cluster(s);
  cluster.fabric.in_network_reduction = sharp;
  auto g = topology::ClusterGraph::build(cluster);
  REQUIRE(g.ok());
  return std::move(g).value();
}

void check_agreement(const topology::ClusterGraph& graph, const Case& c, double bytes) {
  CAPTURE(c.name);
  SimParams params;
  auto topo = models::collective_topology(graph.cluster(), c.ranks);
  REQUIRE(topo.ok());
  const models::CollectiveRequest request{c.op, bytes, c.algorithm, c.protocol};
  auto analytic = models::estimate_collective(*topo, request, params.collective);
  INFO((analytic.ok() ? std::string() : analytic.message()));
  REQUIRE(analytic.ok());
  auto des = simulate_collective(graph, request, c.ranks, params);
  INFO((des.ok() ? std::string() : des.message()));
  REQUIRE(des.ok());
  CAPTURE(analytic->time_s);
  CAPTURE(des->time_s);
  CHECK(des->analytic.algorithm == c.algorithm);
  CHECK(des->time_s == doctest::Approx(analytic->time_s).epsilon(0.01));
  CHECK(des->flows > 0);
}

TEST_SUITE("sim") {
  TEST_CASE("one node: every algorithm and collective agrees with the formula within 1%") {
    const auto graph = h100_cluster(1);
    const Case cases[] = {
        {"ring all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 8},
        {"ring all_gather", CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 8},
        {"ring reduce_scatter", CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 8},
        {"ring broadcast", CollectiveOp::kBroadcast, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 8},
        {"ring reduce", CollectiveOp::kReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 8},
        {"ring all_reduce LL128", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kLL128, 8},
        {"ring all_reduce LL", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kLL, 8},
        {"tree all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, CollectiveProtocol::kSimple, 8},
        {"nvls all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple, 8},
        {"nvls all_gather", CollectiveOp::kAllGather, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple, 8},
        {"nvls reduce_scatter", CollectiveOp::kReduceScatter, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple, 8},
        {"p2p sendrecv", CollectiveOp::kSendRecv, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 8},
        {"p2p alltoall", CollectiveOp::kAllToAll, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 8},
        {"ring all_reduce on 4 GPUs", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 4},
    };
    for (const Case& c : cases) check_agreement(graph, c, models::kGiB);
  }

  TEST_CASE("two GPUs: p2p and rings limited by NCCL's channels agree with the formula within 1%") {
    // 64 MiB to one peer rides 16 channels (below the links); 1 GiB, 32 (link-bound); alltoall
    // of 64 MiB sends 32 MiB per peer, LL in the small case.
    const auto graph = h100_cluster(1);
    const Case cases[] = {
        {"p2p sendrecv x2", CollectiveOp::kSendRecv, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 2},
        {"p2p alltoall x2", CollectiveOp::kAllToAll, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 2},
        {"p2p sendrecv x2 LL", CollectiveOp::kSendRecv, CollectiveAlgorithm::kP2p, CollectiveProtocol::kLL, 2},
        // Rings bound by their channels' copy work (all_gather, reduce_scatter) and by the link.
        {"ring all_gather x2", CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 2},
        {"ring reduce_scatter x2", CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 2},
        {"ring all_reduce x2", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 2},
    };
    for (const Case& c : cases) {
      check_agreement(graph, c, 64 * models::kMiB);
      check_agreement(graph, c, models::kGiB);
    }
  }

  TEST_CASE("four nodes: every algorithm and collective agrees with the formula within 1%") {
    const auto graph = h100_cluster(4);
    const Case cases[] = {
        {"ring all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 32},
        {"ring all_gather", CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 32},
        {"ring reduce_scatter", CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 32},
        {"ring broadcast", CollectiveOp::kBroadcast, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 32},
        {"ring reduce", CollectiveOp::kReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 32},
        {"ring all_reduce LL128", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kLL128, 32},
        {"tree all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, CollectiveProtocol::kSimple, 32},
        {"tree all_reduce LL128", CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, CollectiveProtocol::kLL128, 32},
        {"nvls-tree all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple, 32},
        {"collnet all_reduce (NVLS inside)", CollectiveOp::kAllReduce, CollectiveAlgorithm::kCollNet, CollectiveProtocol::kSimple, 32},
        {"hierarchical all_reduce", CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical, CollectiveProtocol::kSimple, 32},
        {"hierarchical all_gather", CollectiveOp::kAllGather, CollectiveAlgorithm::kHierarchical, CollectiveProtocol::kSimple, 32},
        {"hierarchical reduce_scatter", CollectiveOp::kReduceScatter, CollectiveAlgorithm::kHierarchical, CollectiveProtocol::kSimple, 32},
        {"p2p sendrecv", CollectiveOp::kSendRecv, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 32},
        {"p2p alltoall", CollectiveOp::kAllToAll, CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, 32},
        {"ring all_reduce over 2 nodes", CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple, 16},
        {"nvls-tree all_reduce over 2 nodes", CollectiveOp::kAllReduce, CollectiveAlgorithm::kNvls, CollectiveProtocol::kSimple, 16},
    };
    for (const Case& c : cases) check_agreement(graph, c, models::kGiB);
  }

  TEST_CASE("under a calibration overlay the simulator times an uncontended collective as the fit") {
    // A fit (calibrate, from nccl-tests or validate) and a transfer correction: the flows carry
    // each byte at the calibrated rate against the model's (protocol_factor), so an uncontended
    // run lasts the calibrated time; the simulator had run its own link rates beside the fit.
    const auto graph = h100_cluster(4);
    for (int ranks : {8, 32}) {
      CAPTURE(ranks);
      SimParams params;
      params.collective.fits.push_back({CollectiveOp::kAllGather, CollectiveAlgorithm::kAuto,
                                        CollectiveProtocol::kAuto, 8, 80e-6, 250e9});
      params.collective.corrections.push_back(
          {CollectiveOp::kAllGather, true, 20e-6, 0.8, {}});
      auto topo = models::collective_topology(graph.cluster(), ranks);
      REQUIRE(topo.ok());
      const models::CollectiveRequest request{CollectiveOp::kAllGather, models::kGiB};
      auto analytic = models::estimate_collective(*topo, request, params.collective);
      auto plain = models::estimate_collective(*topo, request, models::uncalibrated(params.collective));
      REQUIRE(analytic.ok());
      REQUIRE(plain.ok());
      CHECK(analytic->time_s > 1.2 * plain->time_s);  // the overlay is the slower
      auto des = simulate_collective(graph, request, ranks, params);
      REQUIRE(des.ok());
      CHECK(des->time_s == doctest::Approx(analytic->time_s).epsilon(0.01));
    }
  }

  TEST_CASE("CollNet-Direct (no NVLS inside the node) agrees with the formula") {
    const auto graph = h100_cluster(4, "nvlink3");
    check_agreement(graph,
                    {"collnet direct all_reduce", CollectiveOp::kAllReduce,
                     CollectiveAlgorithm::kCollNet, CollectiveProtocol::kSimple, 32},
                    models::kGiB);
  }

  TEST_CASE("sampling the NVLink segments of one node gives the same time") {
    const auto graph = h100_cluster(4);
    SimParams full, sampled;
    sampled.lowering.sample_intra_node = true;
    const models::CollectiveRequest r{CollectiveOp::kAllReduce, models::kGiB,
                                      CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple};
    auto a = simulate_collective(graph, r, 32, full);
    auto b = simulate_collective(graph, r, 32, sampled);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(b->flows < a->flows);
    CHECK(b->time_s == doctest::Approx(a->time_s).epsilon(1e-9));
  }
}

}  // namespace
}  // namespace clustersim::sim
