// How each network technology behaves beyond its line rate, for the simulator: what a link keeps
// of its capacity while flows collide on it (congestion control), and TCP's window. Line rates
// and the uncontended protocol efficiency stay in the catalog (NicSpec), shared with the analytic
// model; what is here only matters under contention, which formulas do not see.
// Units: fractions, bytes, seconds, bytes per second. Plain data; a calibration may replace it.
#pragma once

#include "models/catalog.h"

namespace clustersim::sim {

// RoCE's share of a congested link (TransportParams::roce_shared_efficiency): the grid value
// (0.80-1.00, step 0.01) with the least mean |error| over the accuracy corpus's contention
// measurements on RoCE fabrics (scenarios/published/contention, `clustersim accuracy`, which
// refits it without each source). Tolly #225112's ECMP ring on 64 H20 against planned paths
// loses less than any lower value gives; Meta's QP scaling does not depend on it.
inline constexpr double kRoceSharedEfficiency = 1.0;

struct TransportParams {
  // InfiniBand: credit-based link-level flow control never drops and never over-sends, so a
  // shared link stays busy and is split fairly among its flows (IBTA spec vol. 1, ch. 7.9; what
  // congestion remains shows up as the fair share itself). 1 = no loss beyond sharing.
  double infiniband_shared_efficiency = 1.0;
  // RoCEv2 with PFC and ECN-based congestion control (DCQCN): when more flows converge on one
  // egress than it carries at their demand (incast, or an ECMP collision on a spine link), the
  // fraction of the link they keep between them. ECN marking and DCQCN's rate cuts keep the
  // queue short, which can cost utilisation (Zhu et al., "Congestion Control for Large-Scale
  // RDMA Deployments", SIGCOMM 2015; Li et al., HPCC, SIGCOMM 2019); PFC alone never drops and
  // keeps the link busy (Meta runs its AI fabric without DCQCN: Gangidi et al., SIGCOMM 2024).
  // No public measurement of the loss on a tuned fabric was found: fitted on the contention
  // measurements of the accuracy corpus (kRoceSharedEfficiency). A mistuned fabric measures far
  // lower (nccl #2409: 216-231 GB/s busbw on 2 x 8 x 400G RoCE where ~470 is expected, 0.46-0.49):
  // calibrate per cluster.
  double roce_shared_efficiency = kRoceSharedEfficiency;
  // Kernel TCP (NCCL's socket transport): many senders into one port lose goodput to drops and
  // retransmission timeouts (TCP incast, Vasudevan et al., SIGCOMM 2009). 0.75 is an
  // assumption for data-centre switches with moderate buffers.
  double tcp_shared_efficiency = 0.75;
  // The largest TCP window: Linux net.ipv4.tcp_rmem / tcp_wmem maximum, 6 MiB by default
  // (Documentation/networking/ip-sysctl.rst). A flow cannot exceed window / round-trip time.
  double tcp_window_bytes = 6291456;
  // One-way latency the kernel stack adds on each end beyond the wire path; the catalog's TCP
  // NIC latency (~15 us one way, netperf TCP_RR) already includes it, so 0 by default.
  double tcp_extra_latency_s = 0;
};

// What a switch-to-switch link of this technology carries of its line rate: only the packets'
// headers cost it (4096-byte payloads: RoCEv2 adds Ethernet 38 bytes with preamble and gap, IPv4
// 20, UDP 8, BTH 12, ICRC 4: 4096 / 4178 = 0.980; InfiniBand LRH 8, BTH 12, ICRC 4, VCRC 2:
// 4096 / 4122 = 0.994; kernel TCP on 1500-byte frames, 1460 / 1538 = 0.949). The NIC's
// protocol_efficiency (the catalog's, 0.90-0.94 for RDMA) also counts its host side (DMA,
// PCIe, NCCL's proxy), which limits a flow where it starts and ends, not on the switches'
// links: those keep the difference as headroom for flows that collide on them.
double wire_efficiency(models::LinkTechnology technology);
// A switch-to-switch link's share of its line rate for this NIC's traffic: the headers' loss,
// or the NIC's own efficiency where a catalog override puts that higher.
double switch_link_efficiency(const models::NicSpec& nic);

// The capacity a link of this technology keeps while several flows share it (see above).
double shared_link_efficiency(models::LinkTechnology technology, const TransportParams& params);

// The rate TCP's window allows over a path of this one-way latency: window / (2 x latency);
// 0 (no cap) for RDMA technologies or a zero latency.
double window_rate_cap_Bps(models::LinkTechnology technology, double one_way_latency_s,
                           const TransportParams& params);

}  // namespace clustersim::sim
