#include "models/collective_model.h"

#include <algorithm>

#include <doctest/doctest.h>

#include "models/units.h"

using namespace clustersim::models;

namespace {

// HGX H100 nodes: 8 x H100 SXM on NVLink4 (NVSwitch with NVLS), 8 x 400G NDR NICs, one per GPU.
ClusterConfig hgx_h100(int nodes) {
  ClusterConfig c;
  c.nodes = nodes;
  c.node.gpu = *find_gpu("h100-sxm");
  c.node.gpus_per_node = 8;
  c.node.scale_up = *find_scale_up("nvlink4");
  c.node.nics_per_node = 8;
  c.node.nic = *find_nic("ib-ndr");
  c.fabric.switch_spec = *default_switch_for(c.node.nic);
  return c;
}

CollectiveTopology topology_of(const ClusterConfig& c, int gpus) {
  auto t = collective_topology(c, gpus);
  REQUIRE(t.ok());
  return *t;
}

CollectiveEstimate estimate(const CollectiveTopology& t, CollectiveOp op, double bytes,
                            CollectiveAlgorithm a = CollectiveAlgorithm::kAuto,
                            CollectiveProtocol p = CollectiveProtocol::kAuto,
                            const CollectiveParams& params = {}) {
  auto e = estimate_collective(t, {op, bytes, a, p}, params);
  REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.message()));
  return *e;
}

// A round-number topology for hand computation: raw scale-up 100 GB/s at efficiency 1 (set in
// the params), g GPUs per node, node network 80 GB/s, NIC 40 GB/s, IB-class latency.
CollectiveTopology hand_topology(int nodes, int g) {
  CollectiveTopology t;
  t.ranks = nodes * g;
  t.ranks_per_node = g;
  t.nodes = nodes;
  t.gpu_arch = "sm_90";
  t.scale_up_Bps = 100e9;
  t.switch_reduction = true;
  t.node_network_Bps = nodes > 1 ? 80e9 : 0;
  t.nic_Bps = nodes > 1 ? 40e9 : 0;
  t.network_latency_s = nodes > 1 ? 1.0e-6 : 0;
  t.in_network_reduction = true;
  return t;
}

CollectiveParams unit_efficiency() {
  CollectiveParams p;
  p.scale_up_efficiency = 1.0;
  return p;
}

constexpr double kUs = 1e-6;
constexpr double kS = 1 * kGiB;  // 1 GiB: latency is negligible next to the bandwidth term

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("collective: busbw factors are nccl-tests'") {
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 8) == doctest::Approx(1.75));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllGather, 8) == doctest::Approx(0.875));
    CHECK(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 4) == doctest::Approx(0.75));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllToAll, 2) == doctest::Approx(0.5));
    CHECK(bus_bandwidth_factor(CollectiveOp::kBroadcast, 8) == 1.0);
    CHECK(bus_bandwidth_factor(CollectiveOp::kReduce, 8) == 1.0);
    CHECK(bus_bandwidth_factor(CollectiveOp::kSendRecv, 8) == 1.0);
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 1) == 0.0);
  }

  TEST_CASE("collective: names parse and print") {
    CollectiveOp op{};
    CHECK(parse_collective_op("all_reduce", &op));
    CHECK(op == CollectiveOp::kAllReduce);
    CHECK(parse_collective_op("AllGather", &op));
    CHECK(op == CollectiveOp::kAllGather);
    CHECK_FALSE(parse_collective_op("allreduce2", &op));
    CollectiveAlgorithm a{};
    CHECK(parse_collective_algorithm("sharp", &a));
    CHECK(a == CollectiveAlgorithm::kCollNet);
    CollectiveProtocol p{};
    CHECK(parse_collective_protocol("LL128", &p));
    CHECK(p == CollectiveProtocol::kLL128);
    for (auto o : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                   CollectiveOp::kAllToAll, CollectiveOp::kBroadcast, CollectiveOp::kReduce,
                   CollectiveOp::kSendRecv}) {
      CollectiveOp back{};
      CHECK(parse_collective_op(to_string(o), &back));
      CHECK(back == o);
    }
  }

  // nccl-tests issues #212, #290, #347 (NVLS on, 8-16 GiB: 476-482 GB/s) and #309 (NVLS off,
  // ring: 365-370 GB/s) on one node of 8 x H100 SXM (github.com/NVIDIA/nccl-tests/issues).
  TEST_CASE("collective: one HGX H100 node, 8 GiB all_reduce, NVLS ~480 and ring ~370 GB/s") {
    const auto t = topology_of(hgx_h100(1), 8);
    const double s = 8 * kGiB;
    const auto nvls = estimate(t, CollectiveOp::kAllReduce, s, CollectiveAlgorithm::kNvls);
    CHECK(nvls.busbw_Bps == doctest::Approx(480e9).epsilon(0.10));
    const auto ring = estimate(t, CollectiveOp::kAllReduce, s, CollectiveAlgorithm::kRing);
    CHECK(ring.busbw_Bps == doctest::Approx(370e9).epsilon(0.10));
    CHECK(ring.protocol == CollectiveProtocol::kSimple);
    CHECK(ring.bottleneck == CollectiveBottleneck::kScaleUp);
    // NCCL's topology: 18 links x 20.6 GB/s = 370.8 GB/s of ring busbw, minus the latency term.
    CHECK(ring.busbw_Bps == doctest::Approx(370.8e9).epsilon(0.01));
    const auto chosen = estimate(t, CollectiveOp::kAllReduce, s);
    CHECK(chosen.algorithm == CollectiveAlgorithm::kNvls);
  }

  // nccl-tests #309: 8-byte all_reduce 24.7 us on 2 nodes and 34.5 us on 4 nodes of 8 x H100
  // over NDR. NCCL's tree LL: 6.8 + 2 ((ppn-1) 0.6 + log2(nodes) 5.0) = 25.2 / 35.2 us.
  TEST_CASE("collective: 8-byte all_reduce latency on 2 and 4 H100 nodes") {
    const auto two = estimate(topology_of(hgx_h100(2), 16), CollectiveOp::kAllReduce, 8);
    CHECK(two.time_s == doctest::Approx(24.7 * kUs).epsilon(0.25));
    CHECK(two.time_s == doctest::Approx(25.2 * kUs).epsilon(0.01));
    CHECK(two.algorithm == CollectiveAlgorithm::kTree);
    CHECK(two.protocol == CollectiveProtocol::kLL);
    const auto four = estimate(topology_of(hgx_h100(4), 32), CollectiveOp::kAllReduce, 8);
    CHECK(four.time_s == doctest::Approx(34.5 * kUs).epsilon(0.25));
    CHECK(four.time_s == doctest::Approx(35.2 * kUs).epsilon(0.01));
  }

  // nccl-tests #290, #319: 8 x 400G NDR per node, ring across nodes, ~46-48 GB/s per NIC and
  // ~380-396 GB/s busbw per node. The NIC efficiency (catalog ib-ndr, 0.94) gives 47 and 376.
  // NVLS-Tree across two nodes of 8 x H100 runs 8 heads (one per NIC), each channel at most
  // NCCL's 57.7 GB/s (perChMaxNVLSTreeBws): 461.6 GB/s busbw. Measured at 4-8 GiB: 461.8 over
  // 16 x 200G RoCE (OCI) and 468 over 8 x NDR (Nebius), scenarios/measurements/public.
  TEST_CASE("collective: NVLS-Tree on 2 H100 nodes is bound by its heads' channels") {
    const auto t = topology_of(hgx_h100(2), 16);
    CHECK(t.nics_per_node == 8);
    const auto e = estimate(t, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kNvls);
    CHECK(e.busbw_Bps == doctest::Approx(8 * 57.7e9).epsilon(0.01));
    CHECK(e.busbw_Bps == doctest::Approx(465e9).epsilon(0.02));
    CHECK(e.bottleneck == CollectiveBottleneck::kNetwork);
    // Without a NIC count (a hand-built topology) there is no head to count: no cap.
    auto bare = t;
    bare.nics_per_node = 0;
    CHECK(estimate(bare, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kNvls).busbw_Bps >
          500e9);
  }

  // NVLS-Tree's fill on two nodes of 8 x H100: 16 channels x 8 heads (one per NIC) a loop, 2
  // loops at the call's rate, 8 x 57.7 GB/s busbw = 246.2 GB/s algbw. NCCL's chunk is 64 KiB from
  // 8 MiB (1 x 128 x 64 KiB) and 128 KiB from 64 MiB (4 x 128 x 128 KiB): 2 x 8 MiB / 246.2 GB/s
  // = 68.1 us at 32 MiB, twice that at 64 MiB; 2 x 4 MiB (32 KiB chunks) at 4 MiB.
  TEST_CASE("collective: NVLS-Tree's fill doubles with NCCL's chunk at 64 MiB on 2 H100 nodes") {
    const auto t = topology_of(hgx_h100(2), 16);
    const auto nvls = CollectiveAlgorithm::kNvls;
    const auto at = [&](double bytes) {
      return estimate(t, CollectiveOp::kAllReduce, bytes, nvls);
    };
    const double algbw = 8 * 57.7e9 * 16 / 30;
    CHECK(at(32 * kMiB).fill_s == doctest::Approx(2 * 8 * kMiB / algbw).epsilon(0.001));
    CHECK(at(32 * kMiB).fill_s == doctest::Approx(68.1 * kUs).epsilon(0.002));
    CHECK(at(64 * kMiB).fill_s == doctest::Approx(2 * 16 * kMiB / algbw).epsilon(0.001));
    CHECK(at(4 * kMiB).fill_s == doctest::Approx(2 * 4 * kMiB / algbw).epsilon(0.001));
  }

  TEST_CASE("collective: multi-node ring all_reduce is bound by the node's 8 NDR NICs") {
    for (int nodes : {2, 4, 16}) {
      CAPTURE(nodes);
      const auto t = topology_of(hgx_h100(nodes), 8 * nodes);
      const auto ring = estimate(t, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kRing);
      CHECK(ring.bottleneck == CollectiveBottleneck::kNetwork);
      CHECK(ring.busbw_Bps / 8 >= 46e9 * 0.99);
      CHECK(ring.busbw_Bps / 8 <= 48e9);
      CHECK(ring.busbw_Bps >= 380e9 * 0.95);
      CHECK(ring.busbw_Bps <= 396e9);
    }
  }

  TEST_CASE("collective: a one-node ring runs no faster than its channels copy") {
    // 2 GPUs: all_gather moves 0.5 S over the link, but each rank's blocks load and store
    // 3 - 1/2 = 2.5 S (load, store locally and to the peer while sending; load and store while
    // receiving); 24 channels x 60.7 GB/s (Hopper) give a bus of 24 x 60.7 x 0.5 / 2.5 =
    // 291.36 GB/s, under the 370.8 GB/s of 18 NVLink 4 links. The fill stays at the link's pace.
    auto t = hand_topology(1, 2);
    t.scale_up_Bps = 450e9;  // 18 x 25 GB/s; x 0.824 = 370.8 achievable
    const CollectiveParams p;
    const auto ring = CollectiveAlgorithm::kRing;
    const auto simple = CollectiveProtocol::kSimple;
    for (auto op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      auto e = estimate(t, op, kS, ring, simple, p);
      CHECK(e.bandwidth_s == doctest::Approx(0.5 * kS / 291.36e9));
      CHECK(e.bottleneck == CollectiveBottleneck::kChannels);
      CHECK(e.fill_s == doctest::Approx(1 * kMiB / (370.8e9 / 24)).epsilon(0.001));
      CHECK(ring_channel_bus_Bps(t, p, op) == doctest::Approx(291.36e9));
    }
    // all_reduce: 6 - 4/2 = 4 S of loads and stores against S over the link: 24 x 60.7 / 4 =
    // 364.2 GB/s, just under the link's 370.8. broadcast: 3 S against S, 485.6: the link binds.
    auto ar = estimate(t, CollectiveOp::kAllReduce, kS, ring, simple, p);
    CHECK(ar.bottleneck == CollectiveBottleneck::kChannels);
    CHECK(ar.bandwidth_s == doctest::Approx(kS / 364.2e9));
    auto bc = estimate(t, CollectiveOp::kBroadcast, kS, ring, simple, p);
    CHECK(bc.bottleneck == CollectiveBottleneck::kScaleUp);
    CHECK(ring_channel_bus_Bps(t, p, CollectiveOp::kBroadcast) == doctest::Approx(485.6e9));
    // 8 GPUs: all_gather's link share grows to 7/8 S against 3 - 1/8 S of copy work:
    // 24 x 60.7 x 0.875 / 2.875 = 443.4 GB/s, the link binds; all_reduce likewise (6 - 1/2).
    auto t8 = hand_topology(1, 8);
    t8.scale_up_Bps = 450e9;
    auto ag8 = estimate(t8, CollectiveOp::kAllGather, kS, ring, simple, p);
    CHECK(ag8.bottleneck == CollectiveBottleneck::kScaleUp);
    CHECK(ring_channel_bus_Bps(t8, p, CollectiveOp::kAllGather) == doctest::Approx(443.37e9));
    CHECK(estimate(t8, CollectiveOp::kAllReduce, kS, ring, simple, p).bottleneck ==
          CollectiveBottleneck::kScaleUp);
    // Across nodes the network binds and no channel bound is charged; Blackwell scales Hopper's
    // figure by NCCL's per-channel NVLink figures.
    CHECK(ring_channel_bus_Bps(hand_topology(2, 8), p, CollectiveOp::kAllGather) == 0);
    t.gpu_arch = "sm_100";
    CHECK(ring_channel_bus_Bps(t, p, CollectiveOp::kAllGather) ==
          doctest::Approx(291.36e9 * 40.1 / 20.6));
  }

  TEST_CASE("collective: ring by hand (all_gather, reduce_scatter, all_reduce, broadcast)") {
    const auto t = hand_topology(1, 4);
    const auto p = unit_efficiency();
    const auto simple = CollectiveProtocol::kSimple;
    const auto ring = CollectiveAlgorithm::kRing;
    // all_gather on 4 GPUs: (n-1)/n S / B + base + (n-1) x NVLink hop (Simple 8.4 + 3 x 3.4),
    // plus the pipeline's fill: one slice (half of NCCL's 2 MiB chunk; 1 GiB / (4 ranks x 24
    // channels) is more than a chunk) at one channel's share of the bus, 100 / 24 GB/s.
    const double fill = 1 * kMiB / (100e9 / 24);
    auto ag = estimate(t, CollectiveOp::kAllGather, kS, ring, simple, p);
    CHECK(ag.bandwidth_s == doctest::Approx(0.75 * kS / 100e9));
    CHECK(ag.latency_s == doctest::Approx((8.4 + 3 * 3.4) * kUs + fill));
    CHECK(ag.fill_s == doctest::Approx(fill));
    CHECK(ag.time_s == doctest::Approx(ag.latency_s + ag.bandwidth_s));
    CHECK(ag.algbw_Bps == doctest::Approx(kS / ag.time_s));
    CHECK(ag.busbw_Bps == doctest::Approx(ag.algbw_Bps * 0.75));
    auto rs = estimate(t, CollectiveOp::kReduceScatter, kS, ring, simple, p);
    CHECK(rs.time_s == doctest::Approx(ag.time_s));
    // all_reduce: 2(n-1)/n S / B + base + 2(n-1) hops.
    auto ar = estimate(t, CollectiveOp::kAllReduce, kS, ring, simple, p);
    CHECK(ar.bandwidth_s == doctest::Approx(1.5 * kS / 100e9));
    CHECK(ar.latency_s == doctest::Approx((8.4 + 6 * 3.4) * kUs + fill));
    // A size under one loop (4 ranks x 24 channels x 2 MiB): the chunk is the loop's share.
    auto mid = estimate(t, CollectiveOp::kAllReduce, 48 * kMiB, ring, simple, p);
    CHECK(mid.fill_s == doctest::Approx(48 * kMiB / (4 * 24) / 2 / (100e9 / 24)));
    // LL: half the bandwidth, capped at Hopper's 141 GB/s (not reached at 50); LL latencies.
    auto ll = estimate(t, CollectiveOp::kAllReduce, kS, ring, CollectiveProtocol::kLL, p);
    CHECK(ll.bandwidth_s == doctest::Approx(1.5 * kS / 50e9));
    CHECK(ll.latency_s == doctest::Approx((6.6 + 6 * 0.6) * kUs));
    CHECK(ll.fill_s == 0);  // the fill is Simple's chunking
    auto ll128 = estimate(t, CollectiveOp::kAllReduce, kS, ring, CollectiveProtocol::kLL128, p);
    CHECK(ll128.bandwidth_s == doctest::Approx(1.5 * kS / 92e9));
    CHECK(ll128.latency_s == doctest::Approx((14.0 + 6 * 1.9) * kUs));
    // broadcast and reduce: a chain, S / B.
    for (auto op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce}) {
      auto b = estimate(t, op, kS, ring, simple, p);
      CHECK(b.bandwidth_s == doctest::Approx(kS / 100e9));
      CHECK(b.latency_s == doctest::Approx((8.4 + 3 * 3.4) * kUs));
      CHECK(b.busbw_Bps == doctest::Approx(b.algbw_Bps));
    }
  }

  // NCCL's tuner does not know the pipeline fill: it picks by the time without it, and the
  // estimate charges the pick its fill. Two ranks of a node, 64 MiB all_gather: the tuner
  // prefers Simple (full bandwidth) though its fill makes LL128 faster in the model.
  TEST_CASE("collective: NCCL picks without the fill, the estimate charges it") {
    auto t = hand_topology(1, 2);
    const auto all = collective_candidates(t, CollectiveOp::kAllGather, 64 * kMiB);
    REQUIRE(!all.empty());
    const auto picked = estimate(t, CollectiveOp::kAllGather, 64 * kMiB);
    for (const auto& c : all) {
      CAPTURE(to_string(c.protocol));
      CHECK(picked.time_s - picked.fill_s <= c.time_s - c.fill_s);
      CHECK_FALSE(nccl_prefers(c, picked));
    }
    CHECK(picked.protocol == CollectiveProtocol::kSimple);
    CHECK(picked.fill_s > 0);
    const auto fastest = *std::min_element(
        all.begin(), all.end(), [](const auto& a, const auto& b) { return a.time_s < b.time_s; });
    CHECK(fastest.protocol == CollectiveProtocol::kLL128);
    CHECK(fastest.time_s < picked.time_s);
  }

  TEST_CASE("collective: ring across nodes by hand") {
    // 2 nodes x 4 GPUs: NVLink allows 100 x 4/3 = 133 GB/s of bus bandwidth, the NICs 80.
    const auto t = hand_topology(2, 4);
    auto ar = estimate(t, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kRing,
                       CollectiveProtocol::kSimple, unit_efficiency());
    CHECK(ar.bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(ar.bandwidth_s == doctest::Approx(2.0 * 7 / 8 * kS / 80e9));
    // 14 steps, 2 of them between nodes: intra max(3.4, 3 x 1.0), inter 14 (IB: no excess).
    CHECK(ar.latency_s == doctest::Approx((8.4 + 12 * 3.4 + 2 * 14) * kUs));
    // A fatter network makes NVLink the bottleneck: bus = 100 x 4/3.
    auto fat = t;
    fat.node_network_Bps = 400e9;
    auto ar2 = estimate(fat, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kRing,
                        CollectiveProtocol::kSimple, unit_efficiency());
    CHECK(ar2.bottleneck == CollectiveBottleneck::kScaleUp);
    CHECK(ar2.bandwidth_s == doctest::Approx(2.0 * 7 / 8 * kS / (100e9 * 4 / 3)));
    // A slow-latency fabric (kernel TCP, 15 us a hop) adds its excess over the 1.5 us
    // InfiniBand reference to each inter-node step, twice for Simple.
    auto tcp = t;
    tcp.network_latency_s = 15e-6;
    auto ar3 = estimate(tcp, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kRing,
                        CollectiveProtocol::kSimple, unit_efficiency());
    CHECK(ar3.latency_s == doctest::Approx((8.4 + 12 * 3.4 + 2 * (14 + 2 * 13.5)) * kUs));
  }

  TEST_CASE("collective: tree all_reduce by hand") {
    const auto p = unit_efficiency();
    // One node of 4: chain; 2S over 100 x 0.92 (x 7/9 for LL128).
    auto one = estimate(hand_topology(1, 4), CollectiveOp::kAllReduce, kS,
                        CollectiveAlgorithm::kTree, CollectiveProtocol::kLL128, p);
    CHECK(one.bandwidth_s == doctest::Approx(2 * kS / (100e9 * 0.92 * 7 / 9)));
    CHECK(one.latency_s == doctest::Approx((14.0 + 2 * 3 * 1.25) * kUs));
    // 4 nodes x 2 GPUs, Simple: the network's 80 GB/s x 0.92; 2 ((2-1) 4.0 + log2 4 x 14).
    auto four = estimate(hand_topology(4, 2), CollectiveOp::kAllReduce, kS,
                         CollectiveAlgorithm::kTree, CollectiveProtocol::kSimple, p);
    CHECK(four.bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(four.bandwidth_s == doctest::Approx(2 * kS / (80e9 * 0.92)));
    CHECK(four.latency_s == doctest::Approx((8.4 + 2 * (1 * 4.0 + 2 * 14)) * kUs));
    // LL across 4 nodes: 80 x 0.92 / 3.8 = 19.4 GB/s, under the 20.4 GB/s cap.
    auto ll = estimate(hand_topology(4, 2), CollectiveOp::kAllReduce, kS,
                       CollectiveAlgorithm::kTree, CollectiveProtocol::kLL, p);
    CHECK(ll.bandwidth_s == doctest::Approx(2 * kS / (80e9 * 0.92 / 3.8)));
    // Mid sizes: NCCL's treeCorrectionFactor, per power of two from 64 B. 1 MiB is 2^14 x 64 B:
    // Simple 0.5, LL128 0.6; 256 KiB (2^12): Simple 0.5, LL 0.4 (after LL's cap, here 35 GB/s
    // for Hopper on more than two nodes, not reached).
    auto mib = estimate(hand_topology(4, 2), CollectiveOp::kAllReduce, 1 * kMiB,
                        CollectiveAlgorithm::kTree, CollectiveProtocol::kSimple, p);
    CHECK(mib.bandwidth_s == doctest::Approx(2 * kMiB / (80e9 * 0.92 * 0.5)));
    auto mib128 = estimate(hand_topology(4, 2), CollectiveOp::kAllReduce, 1 * kMiB,
                           CollectiveAlgorithm::kTree, CollectiveProtocol::kLL128, p);
    CHECK(mib128.bandwidth_s == doctest::Approx(2 * kMiB / (80e9 * 0.92 * 120 / 128 * 0.6)));
    auto small_ll = estimate(hand_topology(4, 2), CollectiveOp::kAllReduce, 256 * kKiB,
                             CollectiveAlgorithm::kTree, CollectiveProtocol::kLL, p);
    CHECK(small_ll.bandwidth_s == doctest::Approx(2 * 256 * kKiB / (80e9 * 0.92 / 3.8 * 0.4)));
    // LL's cap on two Hopper nodes is 45 GB/s (NCCL's llMaxBws): a fat network meets it.
    auto fat = hand_topology(2, 2);
    fat.node_network_Bps = 800e9;
    auto capped = estimate(fat, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kTree,
                           CollectiveProtocol::kLL, p);
    CHECK(capped.bandwidth_s == doctest::Approx(2 * kS / 45e9));
  }

  TEST_CASE("collective: NVLS by hand") {
    auto p = unit_efficiency();
    p.nvls_efficiency = 0.8;
    const auto one = hand_topology(1, 4);
    // all_reduce: S (1 + 1/g) each way per GPU over B x eff; NVLS latency 25 us, plus the
    // pipeline's 2 loops, a loop being a chunk for each of 16 channels x 4 heads (the node's
    // GPUs): 128 KiB chunks (1 GiB is over 64 x 64 x 128 KiB), at the call's rate 80 / 1.25.
    auto ar = estimate(one, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kNvls,
                       CollectiveProtocol::kAuto, p);
    CHECK(ar.protocol == CollectiveProtocol::kSimple);
    CHECK(ar.bandwidth_s == doctest::Approx(1.25 * kS / 80e9));
    CHECK(ar.fill_s == doctest::Approx(2 * 64 * 128 * kKiB / 64e9));
    CHECK(ar.latency_s == doctest::Approx(25 * kUs + ar.fill_s));
    // 16 MiB: under 8 x 64 x 64 KiB, over 2 x 64 x 32 KiB: 32 KiB chunks.
    auto mid = estimate(one, CollectiveOp::kAllReduce, 16 * kMiB, CollectiveAlgorithm::kNvls,
                        CollectiveProtocol::kAuto, p);
    CHECK(mid.fill_s == doctest::Approx(2 * 64 * 32 * kKiB / 64e9));
    // all_gather / reduce_scatter: S per GPU.
    for (auto op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
      auto e = estimate(one, op, kS, CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto, p);
      CHECK(e.bandwidth_s == doctest::Approx(kS / 80e9));
    }
    // 4 nodes (NVLS-Tree): max(NVLink 1.25 S / 80, network 2S / 80); 25 + 2 log2(4) 20.9 us.
    auto tree = estimate(hand_topology(4, 4), CollectiveOp::kAllReduce, kS,
                         CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto, p);
    CHECK(tree.bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(tree.bandwidth_s == doctest::Approx(2 * kS / 80e9));
    // The fill: 2 loops of 16 channels x 4 heads (no NIC count: every GPU) x 64 KiB (NVLS-Tree's
    // chunk from 4 nodes) at the network's pace, S / (2S / 80) = 40 GB/s.
    CHECK(tree.fill_s == doctest::Approx(2 * 64 * 64 * kKiB / 40e9));
    CHECK(tree.latency_s == doctest::Approx((25 + 4 * 20.9) * kUs + tree.fill_s));
    // Two nodes: the tree is one exchange, S per node.
    auto two = estimate(hand_topology(2, 4), CollectiveOp::kAllReduce, kS,
                        CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto, p);
    CHECK(two.bandwidth_s == doctest::Approx(1.25 * kS / 80e9));
  }

  TEST_CASE("collective: in-network reduction (CollNet/SHARP) by hand") {
    const auto p = unit_efficiency();
    auto t = hand_topology(4, 2);
    t.switch_reduction = false;
    // CollNet-Direct: max(NVLink 2(g-1)/g S / B = S / 100, network S / (80 x 0.85)).
    auto direct = estimate(t, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kCollNet,
                           CollectiveProtocol::kAuto, p);
    CHECK(direct.bandwidth_s == doctest::Approx(kS / (80e9 * 0.85)));
    CHECK(direct.bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(direct.latency_s == doctest::Approx((2 * (3.7 + 1 * 0.4) + 31) * kUs));
    // Half the ring's network volume: 2(n-1)/n S vs S per node.
    auto ring = estimate(t, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kRing,
                         CollectiveProtocol::kSimple, p);
    CHECK(ring.bandwidth_s / direct.bandwidth_s == doctest::Approx(2.0 * 7 / 8 * 0.85));
    // Four GPUs a node: NVLink's 2 x 3/4 S / 100 is now the slower leg.
    auto t4 = hand_topology(4, 4);
    t4.switch_reduction = false;
    auto direct4 = estimate(t4, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kCollNet,
                            CollectiveProtocol::kAuto, p);
    CHECK(direct4.bottleneck == CollectiveBottleneck::kScaleUp);
    CHECK(direct4.bandwidth_s == doctest::Approx(1.5 * kS / 100e9));
    // With NVLS inside the node: NVLS latency (25 NVLink + 18 network).
    t.switch_reduction = true;
    auto sharp_nvls = estimate(t, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kCollNet,
                               CollectiveProtocol::kAuto, p);
    CHECK(sharp_nvls.latency_s == doctest::Approx(43 * kUs));
  }

  TEST_CASE("collective: hierarchical by hand") {
    const auto p = unit_efficiency();
    const auto t = hand_topology(2, 4);
    // all_reduce: RS (3/4 S / 100) + inter ring AR of S/4 per rail (2(N-1)/N S / 80) + AG.
    auto ar = estimate(t, CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kHierarchical,
                       CollectiveProtocol::kSimple, p);
    CHECK(ar.bandwidth_s == doctest::Approx(2 * 0.75 * kS / 100e9 + 1.0 * kS / 80e9));
    CHECK(ar.latency_s == doctest::Approx((3 * 8.4 + 2 * 3 * 3.4 + 2 * 14) * kUs));
    // all_gather: inter (N-1)/N S / 80 then intra 3/4 S / 100.
    auto ag = estimate(t, CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kHierarchical,
                       CollectiveProtocol::kSimple, p);
    CHECK(ag.bandwidth_s == doctest::Approx(0.75 * kS / 100e9 + 0.5 * kS / 80e9));
    CHECK(ag.latency_s == doctest::Approx((2 * 8.4 + 3 * 3.4 + 14) * kUs));
    // reduce_scatter: the same two phases in the other order.
    auto rs = estimate(t, CollectiveOp::kReduceScatter, kS, CollectiveAlgorithm::kHierarchical,
                       CollectiveProtocol::kSimple, p);
    CHECK(rs.time_s == doctest::Approx(ag.time_s));
    // Auto never picks it (NCCL does not run it), even where it would be fastest.
    for (const auto& c : collective_candidates(t, CollectiveOp::kAllReduce, kS, p)) {
      CHECK(c.algorithm != CollectiveAlgorithm::kHierarchical);
    }
  }

  TEST_CASE("collective: point to point by hand") {
    const auto p = unit_efficiency();
    // sendrecv inside a node: S / B, one NVLink step.
    auto one = estimate(hand_topology(1, 4), CollectiveOp::kSendRecv, kS,
                        CollectiveAlgorithm::kAuto, CollectiveProtocol::kSimple, p);
    CHECK(one.algorithm == CollectiveAlgorithm::kP2p);
    CHECK(one.bandwidth_s == doctest::Approx(kS / 100e9));
    // Plus the pipeline's fill: one 512 KiB step at one channel's share of the peer's 100 GB/s;
    // 4 ranks start at 8 channels a peer, doubled to 32 while a part exceeds 16 MiB.
    CHECK(one.fill_s == doctest::Approx(512 * kKiB / (100e9 / 32)));
    CHECK(one.latency_s == doctest::Approx((8.4 + 3.4) * kUs + one.fill_s));
    CHECK(one.busbw_Bps == doctest::Approx(one.algbw_Bps));
    // Across nodes the boundary pair has one NIC (40 GB/s).
    auto two = estimate(hand_topology(2, 4), CollectiveOp::kSendRecv, kS, CollectiveAlgorithm::kP2p,
                        CollectiveProtocol::kSimple, p);
    CHECK(two.bandwidth_s == doctest::Approx(kS / 40e9));
    CHECK(two.fill_s == 0);  // across nodes NCCL's network chunks differ: no fill modelled
    CHECK(two.latency_s == doctest::Approx((8.4 + 14) * kUs));
    // alltoall on 2 x 4: NVLink (g-1)/n S / 100, network g(n-g)/n S / 80 per node.
    auto a2a = estimate(hand_topology(2, 4), CollectiveOp::kAllToAll, kS, CollectiveAlgorithm::kP2p,
                        CollectiveProtocol::kSimple, p);
    CHECK(a2a.bandwidth_s == doctest::Approx(4.0 * 4 / 8 * kS / 80e9));
    CHECK(a2a.latency_s == doctest::Approx((8.4 + 14 + 7 * 0.4) * kUs));
    CHECK(a2a.busbw_Bps == doctest::Approx(a2a.algbw_Bps * 7 / 8));
    auto a2a_one = estimate(hand_topology(1, 8), CollectiveOp::kAllToAll, kS,
                            CollectiveAlgorithm::kP2p, CollectiveProtocol::kSimple, p);
    CHECK(a2a_one.bandwidth_s == doctest::Approx(7.0 / 8 * kS / 100e9));
  }

  TEST_CASE("collective: a p2p peer gets the channels NCCL gives its bytes") {
    // 2 x sm_90 on NVSwitch (370.8 GB/s achievable): 32 p2p channels, 32 per peer, 512 KiB
    // chunk; with 2 ranks at least 16 channels per peer, doubled to 32 once a channel's part
    // exceeds 32 chunks (16 MiB). Each channel copies 20.6 GB/s (NCCL's Hopper per-link figure).
    auto t = hand_topology(1, 2);
    t.scale_up_Bps = 450e9;
    const CollectiveParams p;
    const double ch = 20.6e9;
    CHECK(p2p_peer_channel_cap_Bps(t, p, 64 * kKiB) == doctest::Approx(1 * ch));   // 64 KiB / 64 KiB
    CHECK(p2p_peer_channel_cap_Bps(t, p, 4 * kMiB) == doctest::Approx(16 * ch));
    CHECK(p2p_peer_channel_cap_Bps(t, p, 256 * kMiB) == doctest::Approx(16 * ch));  // 16 MiB parts
    CHECK(p2p_peer_channel_cap_Bps(t, p, 512 * kMiB) == doctest::Approx(32 * ch));
    auto mid = estimate(t, CollectiveOp::kSendRecv, 64 * kMiB, CollectiveAlgorithm::kP2p,
                        CollectiveProtocol::kSimple, p);
    CHECK(mid.bandwidth_s == doctest::Approx(64 * kMiB / (16 * ch)));
    auto big = estimate(t, CollectiveOp::kSendRecv, kGiB, CollectiveAlgorithm::kP2p,
                        CollectiveProtocol::kSimple, p);
    CHECK(big.bandwidth_s == doctest::Approx(kGiB / (450e9 * 20.6 / 25)));
    // alltoall of S sends S/2 to the one peer: 512 MiB -> 256 MiB per peer -> 16 channels.
    auto a2a = estimate(t, CollectiveOp::kAllToAll, 512 * kMiB, CollectiveAlgorithm::kP2p,
                        CollectiveProtocol::kSimple, p);
    CHECK(a2a.bandwidth_s == doctest::Approx(256 * kMiB / (16 * ch)));
    // With 8 ranks each peer starts at 4 channels, and 7 peers at once fill the links.
    auto t8 = hand_topology(1, 8);
    t8.scale_up_Bps = 450e9;
    CHECK(p2p_peer_channel_cap_Bps(t8, p, 4 * kMiB) == doctest::Approx(4 * ch));
    auto a2a8 = estimate(t8, CollectiveOp::kAllToAll, 32 * kMiB, CollectiveAlgorithm::kP2p,
                         CollectiveProtocol::kSimple, p);
    CHECK(a2a8.bandwidth_s == doctest::Approx(7.0 / 8 * 32 * kMiB / (450e9 * 20.6 / 25)));
  }

  // ncclConfig_t maxCTAs: a communicator runs at most that many channels of every kind.
  TEST_CASE("collective: a communicator's block cap cuts its channels") {
    auto t = hand_topology(1, 2);
    t.scale_up_Bps = 450e9;
    CollectiveParams capped;
    capped.max_channels = 1;
    const double ch = 20.6e9;
    // Point to point: one channel for any size (a context-parallel exchange under cp: 1).
    CHECK(p2p_peer_channel_cap_Bps(t, capped, 4 * kMiB) == doctest::Approx(1 * ch));
    CHECK(p2p_peer_channel_cap_Bps(t, capped, 512 * kMiB) == doctest::Approx(1 * ch));
    auto send = estimate(t, CollectiveOp::kSendRecv, 64 * kMiB, CollectiveAlgorithm::kP2p,
                         CollectiveProtocol::kSimple, capped);
    CHECK(send.bandwidth_s == doctest::Approx(64 * kMiB / ch));
    // One node's ring: 8 channels copy 8 x 60.7 x 0.5 / 2.5 = 97.12 GB/s for all_gather on 2.
    capped.max_channels = 8;
    CHECK(ring_channel_bus_Bps(t, capped, CollectiveOp::kAllGather) == doctest::Approx(97.12e9));
    // Across nodes: a NIC per channel at most, and the channels' copy work binds as on one node.
    // 2 nodes x 8 GPUs, NIC 40 GB/s, node 80 GB/s (two NICs): 1 channel leaves through one NIC,
    // 40 GB/s; its copy work for all_gather on 16 ranks, 60.7 x (15/16) / (3 - 1/16) = 19.37 GB/s.
    auto t2 = hand_topology(2, 8);
    CollectiveParams one;
    one.max_channels = 1;
    CHECK(ring_channel_bus_Bps(t2, one, CollectiveOp::kAllGather) ==
          doctest::Approx(60.7e9 * (15.0 / 16) / (3 - 1.0 / 16)));
    auto ag = estimate(t2, CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kRing,
                       CollectiveProtocol::kSimple, one);
    CHECK(ag.bottleneck == CollectiveBottleneck::kChannels);
    // 4 channels: four NICs' 160 GB/s leave the node's 80 GB/s binding the links, and the copy
    // bound, 77.5 GB/s, just under it; without a cap the node's network binds.
    CollectiveParams four;
    four.max_channels = 4;
    auto ag4 = estimate(t2, CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kRing,
                        CollectiveProtocol::kSimple, four);
    auto ag_free = estimate(t2, CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kRing,
                            CollectiveProtocol::kSimple, CollectiveParams{});
    CHECK(ag4.bottleneck == CollectiveBottleneck::kChannels);
    CHECK(ag4.bandwidth_s == doctest::Approx(kS * (15.0 / 16) / (4 * 60.7e9 * (15.0 / 16) /
                                                                (3 - 1.0 / 16))));
    CHECK(ag_free.bottleneck == CollectiveBottleneck::kNetwork);
    CHECK(ag_free.bandwidth_s == doctest::Approx(kS * (15.0 / 16) / 80e9));
    // A 2-channel cap on the same nodes: two NICs' 80 GB/s, but the copy work (38.7) binds.
    CollectiveParams two;
    two.max_channels = 2;
    CHECK(estimate(t2, CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kRing,
                   CollectiveProtocol::kSimple, two)
              .bandwidth_s ==
          doctest::Approx(kS * (15.0 / 16) / (2 * 60.7e9 * (15.0 / 16) / (3 - 1.0 / 16))));
  }

  TEST_CASE("collective: NCCL_NVLS_ENABLE=0 leaves NVLS out of auto's candidates") {
    const auto t = topology_of(hgx_h100(1), 8);
    CollectiveParams off;
    off.nvls_enabled = false;
    CHECK(estimate(t, CollectiveOp::kAllReduce, 8 * kGiB).algorithm == CollectiveAlgorithm::kNvls);
    CHECK(estimate(t, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kAuto,
                   CollectiveProtocol::kAuto, off)
              .algorithm == CollectiveAlgorithm::kRing);
    auto forced = estimate_collective(t, {CollectiveOp::kAllReduce, 8 * kGiB,
                                          CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto},
                                      off);
    REQUIRE_FALSE(forced.ok());
    CHECK(forced.message().find("NCCL_NVLS_ENABLE=0") != std::string::npos);
  }

  // The receiver copies a step out of its FIFO only once the sender has written and posted all
  // of it (sendrecv.h: one slice a step), so a send ends one step after its bytes' time. 2 x
  // sm_90, 512 KiB p2p chunk, 20.6 GB/s a channel: 64 MiB runs 16 channels of 4 MiB parts, one
  // 512 KiB step at 20.6 GB/s = 25.45 us; at 4 MiB a channel's whole part (256 KiB) is its step,
  // 12.7 us; at 512 MiB 32 channels share the links' 370.8 GB/s, 11.59 GB/s each: 45.2 us.
  TEST_CASE("collective: a p2p send inside a node ends one step after its bytes") {
    auto t = hand_topology(1, 2);
    t.scale_up_Bps = 450e9;
    const auto p2p = [&](CollectiveOp op, double bytes, CollectiveProtocol proto) {
      return estimate(t, op, bytes, CollectiveAlgorithm::kP2p, proto);
    };
    const auto simple = CollectiveProtocol::kSimple;
    CHECK(p2p(CollectiveOp::kSendRecv, 64 * kMiB, simple).fill_s ==
          doctest::Approx(512 * kKiB / 20.6e9));
    CHECK(p2p(CollectiveOp::kSendRecv, 64 * kMiB, simple).fill_s ==
          doctest::Approx(25.45 * kUs).epsilon(0.001));
    CHECK(p2p(CollectiveOp::kSendRecv, 4 * kMiB, simple).fill_s ==
          doctest::Approx(256 * kKiB / 20.6e9));
    CHECK(p2p(CollectiveOp::kSendRecv, 512 * kMiB, simple).fill_s ==
          doctest::Approx(512 * kKiB / (450e9 * 20.6 / 25 / 32)));
    CHECK(p2p(CollectiveOp::kSendRecv, 512 * kMiB, simple).fill_s ==
          doctest::Approx(45.25 * kUs).epsilon(0.001));
    // alltoall of 512 MiB on 2 ranks: 256 MiB to the one peer, 16 channels, as sendrecv's 64 MiB.
    const auto a2a = p2p(CollectiveOp::kAllToAll, 512 * kMiB, simple);
    CHECK(a2a.fill_s == doctest::Approx(512 * kKiB / 20.6e9));
    CHECK(a2a.latency_s == doctest::Approx((8.4 + 3.4 + 0.4) * kUs + a2a.fill_s));
    // LL writes its flags with the data: no step to wait for.
    CHECK(p2p(CollectiveOp::kSendRecv, 64 * kKiB, CollectiveProtocol::kLL).fill_s == 0);
  }

  TEST_CASE("collective: auto picks the cheapest candidate") {
    const auto t = topology_of(hgx_h100(4), 32);
    for (double bytes : {8.0, 64 * kKiB, 16 * kMiB, 4 * kGiB}) {
      CAPTURE(bytes);
      const auto all = collective_candidates(t, CollectiveOp::kAllReduce, bytes);
      REQUIRE(all.size() >= 7);  // ring x3, tree x3, nvls-tree
      const auto chosen = estimate(t, CollectiveOp::kAllReduce, bytes);
      for (const auto& c : all) CHECK(chosen.time_s <= c.time_s);
    }
    // Small messages go to LL, large ones to Simple.
    CHECK(estimate(t, CollectiveOp::kAllReduce, 1024).protocol == CollectiveProtocol::kLL);
    CHECK(estimate(t, CollectiveOp::kAllReduce, 4 * kGiB).protocol == CollectiveProtocol::kSimple);
  }

  TEST_CASE("collective: unsupported combinations are errors that say why") {
    const auto one = topology_of(hgx_h100(1), 8);
    auto tree_ag = estimate_collective(
        one, {CollectiveOp::kAllGather, kS, CollectiveAlgorithm::kTree, CollectiveProtocol::kAuto});
    REQUIRE_FALSE(tree_ag.ok());
    CHECK(tree_ag.message().find("all_reduce only") != std::string::npos);
    auto ring_a2a = estimate_collective(
        one, {CollectiveOp::kAllToAll, kS, CollectiveAlgorithm::kRing, CollectiveProtocol::kAuto});
    CHECK_FALSE(ring_a2a.ok());
    auto nvls_ll = estimate_collective(
        one, {CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kNvls, CollectiveProtocol::kLL});
    REQUIRE_FALSE(nvls_ll.ok());
    CHECK(nvls_ll.message().find("simple") != std::string::npos);
    auto collnet_one = estimate_collective(
        one,
        {CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kCollNet, CollectiveProtocol::kAuto});
    CHECK_FALSE(collnet_one.ok());
    auto no_sharp = estimate_collective(
        topology_of(hgx_h100(2), 16),
        {CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kCollNet, CollectiveProtocol::kAuto});
    REQUIRE_FALSE(no_sharp.ok());
    CHECK(no_sharp.message().find("in_network_reduction") != std::string::npos);
    // A100 NVSwitch has no NVLS.
    ClusterConfig a100 = hgx_h100(1);
    a100.node.gpu = *find_gpu("a100-sxm-80gb");
    a100.node.scale_up = *find_scale_up("nvlink3");
    auto no_nvls = estimate_collective(
        topology_of(a100, 8),
        {CollectiveOp::kAllReduce, kS, CollectiveAlgorithm::kNvls, CollectiveProtocol::kAuto});
    REQUIRE_FALSE(no_nvls.ok());
    CHECK(no_nvls.message().find("NVLink SHARP") != std::string::npos);
  }

  TEST_CASE("collective: one rank or zero bytes cost nothing") {
    const auto t = topology_of(hgx_h100(1), 1);
    CHECK(estimate(t, CollectiveOp::kAllReduce, kS).time_s == 0);
    const auto zero = estimate(topology_of(hgx_h100(1), 8), CollectiveOp::kAllGather, 0,
                               CollectiveAlgorithm::kRing, CollectiveProtocol::kSimple);
    CHECK(zero.bandwidth_s == 0);
    CHECK(zero.bottleneck == CollectiveBottleneck::kNone);
  }

  TEST_CASE("collective: a calibration fit replaces both terms") {
    const auto t = topology_of(hgx_h100(1), 8);
    CollectiveParams p;
    p.fits.push_back({CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing,
                      CollectiveProtocol::kSimple, 8, 30e-6, 350e9});
    auto e = estimate(t, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kRing,
                      CollectiveProtocol::kSimple, p);
    CHECK(e.bottleneck == CollectiveBottleneck::kCalibrated);
    CHECK(e.latency_s == doctest::Approx(30e-6));
    CHECK(e.bandwidth_s == doctest::Approx(8 * kGiB * 1.75 / 350e9));
    // A fit for another communicator size does not apply.
    p.fits[0].ranks = 16;
    auto f = estimate(t, CollectiveOp::kAllReduce, 8 * kGiB, CollectiveAlgorithm::kRing,
                      CollectiveProtocol::kSimple, p);
    CHECK(f.bottleneck == CollectiveBottleneck::kScaleUp);
  }

  TEST_CASE("collective: a calibrated estimate keeps the algorithm and protocol NCCL's tuner picks") {
    // calibrate's fits cover every algorithm and protocol alike (kAuto: they were measured
    // under NCCL's own choice). The tie was once broken by enumeration order, labelling a
    // 478 MiB all-gather ring / LL, which the simulator then lowered at LL's fraction of the
    // links (a DP all-gather 2.6x its calibrated time in plan's default engine).
    const auto t = topology_of(hgx_h100(1), 8);
    CollectiveParams p;
    p.fits.push_back({CollectiveOp::kAllGather, CollectiveAlgorithm::kAuto,
                      CollectiveProtocol::kAuto, 8, 80e-6, 360e9});
    for (double bytes : {64.0 * 1024, 478.0 * 1024 * 1024}) {
      CAPTURE(bytes);
      const auto tuner = estimate_collective(t, {CollectiveOp::kAllGather, bytes}, CollectiveParams{});
      const auto fitted = estimate_collective(t, {CollectiveOp::kAllGather, bytes}, p);
      REQUIRE(tuner.ok());
      REQUIRE(fitted.ok());
      CHECK(fitted->bottleneck == CollectiveBottleneck::kCalibrated);
      CHECK(fitted->algorithm == tuner->algorithm);
      CHECK(fitted->protocol == tuner->protocol);
      CHECK(fitted->latency_s == doctest::Approx(80e-6));
      CHECK(fitted->bandwidth_s == doctest::Approx(bytes * 7 / 8 / 360e9));
    }
    const auto big = estimate_collective(t, {CollectiveOp::kAllGather, 478.0 * 1024 * 1024}, p);
    REQUIRE(big.ok());
    CHECK(big->protocol == CollectiveProtocol::kSimple);
  }

  TEST_CASE("collective: topology from a cluster") {
    const auto c = hgx_h100(4);
    const auto all = topology_of(c, 32);
    CHECK(all.ranks_per_node == 8);
    CHECK(all.nodes == 4);
    CHECK(all.scale_up_Bps == doctest::Approx(450e9));
    CHECK(all.node_network_Bps == doctest::Approx(8 * 50e9 * 0.94));
    CHECK(all.nic_Bps == doctest::Approx(47e9));
    // 4 nodes x 8 NICs fit under one 64-port leaf (32 down): one switch, the NIC's 1 us.
    CHECK(all.network_latency_s == doctest::Approx(1.0e-6));
    // A partial last node: 12 GPUs fill one node and half of the next.
    const auto twelve = topology_of(c, 12);
    CHECK(twelve.nodes == 2);
    CHECK(twelve.ranks_per_node == 8);
    // DP groups of a tp=8 job: one rank per node, the 8 sibling groups share the 8 NICs.
    auto dp = parallel_group_topology(c, 4, 8);
    REQUIRE(dp.ok());
    CHECK(dp->ranks_per_node == 1);
    CHECK(dp->nodes == 4);
    CHECK(dp->node_network_Bps == doctest::Approx(47e9));
    // TP group of 8 inside a node.
    auto tp = parallel_group_topology(c, 8, 1);
    REQUIRE(tp.ok());
    CHECK(tp->nodes == 1);
    // Too many GPUs.
    auto big = collective_topology(c, 33);
    REQUIRE_FALSE(big.ok());
    CHECK(big.message().find("32 GPUs") != std::string::npos);
    CHECK_FALSE(parallel_group_topology(c, 8, 8).ok());
    // Several nodes without a NIC cannot talk.
    ClusterConfig no_nic = c;
    no_nic.node.nics_per_node = 0;
    CHECK(collective_topology(no_nic, 8).ok());
    auto cut_off = collective_topology(no_nic, 16);
    REQUIRE_FALSE(cut_off.ok());
    CHECK(cut_off.message().find("no NIC") != std::string::npos);
    // 16 nodes need a spine: three switches between nodes.
    const auto wide = topology_of(hgx_h100(16), 128);
    CHECK(wide.network_latency_s == doctest::Approx(1.0e-6 + 2 * c.fabric.switch_spec.latency_s));
  }

  TEST_CASE("collective: a NIC cannot beat its PCIe link") {
    // 8 x 200G HDR bonded on one NIC is 200 GB/s of line rate through a Gen5 x16 link (63 GB/s).
    ClusterConfig c = hgx_h100(2);
    c.node.nics_per_node = 1;
    c.node.nic = *find_nic("ib-hdr");
    c.node.links_per_nic = 8;
    const auto t = topology_of(c, 16);
    CHECK(t.nic_Bps == doctest::Approx(c.node.gpu.pcie_Bps()));
    CHECK(t.nic_Bps < 64e9);
  }
}
