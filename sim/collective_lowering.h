// One NCCL collective as flows over the fabric, for every algorithm of the analytic model:
// ring, tree, NVLS (NVLS-Tree across nodes), CollNet (in-network reduction), hierarchical, and
// p2p (sendrecv, alltoall). The flows carry the bytes each link moves in the whole collective
// (NCCL pipelines chunks through every edge at once, so a phase is one set of concurrent flows,
// each at the rate the shared links give it; simulating one ring step of chunk size c and
// multiplying by the 2(n-1) steps gives the same time in this fluid model, with 2(n-1) times the
// events). Without contention the slowest flow's time is exactly the analytic bandwidth term;
// with contention it is what the links give.
//
// How each algorithm is laid out (NCCL 2.2x, src/graph/{rings,trees}.cc, connect.cc):
//  - ring across nodes: channels_per_nic channels per NIC (nccl #320: channel pairs per NIC on
//    DGX A100); channel c enters node j at local rank (c - j) mod g, visits the node's GPUs over
//    NVLink and leaves from the GPU before its entry point to the same local rank of the next
//    node, so inter-node edges stay on one rail, each NIC sends and receives one channel's share
//    and each GPU's NVLink carries (g-1)/g of the ring volume, as the analytic model assumes;
//  - tree: the chain inside each node and NCCL's double binary tree across nodes (ncclGetDtree),
//    channel pairs (one per tree) sharing a head GPU, so that every NIC carries 2S/nics;
//  - NVLS: each GPU's port to the NVSwitch carries S(1+1/g) each way (all_reduce), S/g up and S
//    down (all_gather), S up and S/g down (reduce_scatter); across nodes the double binary tree
//    between the head GPUs carries the network share;
//  - CollNet: each channel's head GPU sends S/C to its leaf and gets S/C back; the leaves above
//    exchange one stream per channel along the aggregation tree (tree_up/tree_down);
//  - hierarchical: three phases in sequence (NVLink ring reduce-scatter, one ring per rail
//    across nodes, NVLink ring all-gather);
//  - alltoall: every GPU sends S/n to every other; across nodes the g GPUs' shares for one
//    destination node travel on the rail of their local rank (aggregated per rail, as PXN
//    does); above max_alltoall_flows the shift pattern is sampled and scaled.
// Efficiencies shared with the analytic model (CollectiveParams): tree_efficiency,
// nvls_efficiency, collnet_efficiency multiply bytes on the wire (an inefficient protocol holds
// the link longer), and the LL/LL128 cost is the analytic model's own ratio of the protocol's
// bandwidth term to Simple's for the same topology.
#pragma once

#include <algorithm>
#include <vector>

#include "models/collective_model.h"
#include "models/result.h"
#include "sim/fabric_model.h"
#include "sim/task_graph.h"

namespace clustersim::sim {

struct LoweringOptions {
  // NCCL's channels (connections) per NIC for rings and trees across nodes; more channels mean
  // more distinct flows for an ECMP hash to spread (nccl #320, two per NIC).
  int channels_per_nic = 2;
  // Queue pairs per connection across nodes (NCCL_IB_QPS_PER_CONNECTION, default 1): a channel's
  // bytes split evenly over this many flows, each hashed on its own by ECMP. Raising it is the
  // mitigation Meta used against ECMP collisions (Gangidi et al., SIGCOMM 2024, sec. 5). The
  // step and cluster-level simulations take it from the scenario (cluster.fabric).
  int qps_per_connection = 1;
  // Symmetry: the NVLink segments of a ring or tree are the same on every node, so simulate them
  // on each communicator's first node only (their time is the same; the NICs and the fabric,
  // where nodes differ, are simulated everywhere). Exact unless intra-node flows share NVLink
  // with inter-node ones (PXN across fabric planes).
  bool sample_intra_node = false;
  // Above this many flows, alltoall samples its shift pattern (see above).
  int max_alltoall_flows = 65536;
};

// The flows one NIC's traffic to one peer forms on the fabric: channels x queue pairs. A link
// that carries no more than this many flows is not congested (FabricModel's congestion_flows).
inline int flows_per_nic(const LoweringOptions& o) {
  return std::max(1, o.channels_per_nic) * std::max(1, o.qps_per_connection);
}

// A communicator: the global GPU ranks of its members in communicator-rank order.
using Communicator = std::vector<int>;

// The collective to lower: the algorithm and protocol already resolved (never kAuto).
struct CollectiveShape {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  models::CollectiveAlgorithm algorithm = models::CollectiveAlgorithm::kRing;
  models::CollectiveProtocol protocol = models::CollectiveProtocol::kSimple;
  double size_bytes = 0;  // nccl-tests' size column (see CollectiveRequest)
  models::AllToAllDispatch dispatch;  // alltoall: CollectiveRequest::dispatch
};

// Phases run one after the other; the flows of a phase run together.
struct LoweredCollective {
  std::vector<std::vector<SimFlow>> phases;
  size_t flow_count() const;
};

// Lowers the collective on each communicator of `comms` (sibling groups that run it at the same
// time, e.g. the eight DP groups of a node) into one set of phases. `topology` is the analytic
// view of one communicator (for the protocol factor). Fails when the algorithm cannot run there
// (NVLS without NVSwitch, CollNet without in-network reduction, ...), as the analytic model does.
models::Result<LoweredCollective> lower_collective(const CollectiveShape& shape,
                                                   const std::vector<Communicator>& comms,
                                                   const models::CollectiveTopology& topology,
                                                   FabricModel& fabric,
                                                   const models::CollectiveParams& params,
                                                   const LoweringOptions& options);

// What each byte of this collective costs on the wire relative to the uncalibrated model's
// Simple protocol: the bandwidth term of `shape`'s algorithm and protocol under `params` over the
// uncalibrated Simple one. Uncalibrated, the LL/LL128 cost (1 for Simple); under a calibration
// overlay also the fit's or correction's rate against the model's, so that the simulator's flows
// of an uncontended collective last what the calibration measured.
double protocol_factor(const CollectiveShape& shape, const models::CollectiveTopology& topology,
                       const models::CollectiveParams& params);

// NCCL's double binary tree over n ranks (ncclGetDtree): the parent of `rank` in tree 0 or 1,
// -1 for a root.
int dtree_parent(int n, int rank, int tree);

}  // namespace clustersim::sim
