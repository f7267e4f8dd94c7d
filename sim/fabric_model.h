// The cluster's links as the simulator's shared resources, and the routes flows take over them.
// Built on topology::ClusterGraph: each direction of a graph Link is one resource whose capacity
// is the link's bandwidth times what the technology achieves (the same efficiencies the
// analytic collective model uses: NVLink per GPU architecture, the NIC's protocol efficiency,
// PCIe raw as the NIC's cap), and which loses TransportParams' congestion efficiency while more
// flows cross it than it carries at their demand. A flow's demand is its NIC's rate over the
// NIC's flows (NCCL spreads a NIC over channels_per_nic connections of qps_per_connection queue
// pairs each: flows_per_nic), so a switch port or a cable is overloaded with more than that many
// flows, a bundle of k cables with more than k times it; a NIC's own uplink never is (the NIC
// paces its queue pairs itself).
// Routing follows the scenario:
//  - static (D-mod-k) and ECMP: the graph's single path per flow (ECMP hashes the flow id, so two
//    flows can collide on one spine cable, as on real RoCE fabrics);
//  - adaptive: instead of splitting each flow over the S x m equal paths (sub-flows), the
//    uplinks of a leaf (and, with three tiers, of a pod) form one bundle resource with their
//    summed capacity. Under per-packet spreading each uplink carries exactly 1/(S m) of what the
//    leaf sends up, so the bundle's constraint is the same max-min problem as the sub-flows'
//    (a test checks both give the same times), with one flow instead of S m.
// Resources are created when a route first touches them, so a 16,384-GPU model holds only what
// the simulated flows cross. Units: bytes/s per direction, seconds. The model borrows the graph
// (which must outlive it) and owns its ResourceTable. Not thread-safe (routes append resources).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "models/collective_model.h"
#include "sim/task_graph.h"
#include "sim/transport_model.h"
#include "topology/cluster_graph.h"

namespace clustersim::sim {

struct FabricRoute {
  std::vector<int> resources;
  double latency_s = 0;  // one way, the sum of the graph links' latencies
};

class FabricModel {
 public:
  // scale_up_efficiency: the achievable fraction of the raw NVLink (or PCIe scale-up) bandwidth;
  // scale_up_efficiency() below gives the analytic model's figure. channels_per_nic: the flows
  // one NIC forms (flows_per_nic of the LoweringOptions), the unit of demand for congestion.
  FabricModel(const topology::ClusterGraph& graph, const TransportParams& transport,
              double scale_up_efficiency, int channels_per_nic = 2);

  const topology::ClusterGraph& graph() const { return graph_; }
  const TransportParams& transport() const { return transport_; }
  const ResourceTable& table() const { return table_; }
  // The technology of the NICs and fabric (kInfiniband, kRoce, kEthernetTcp).
  models::LinkTechnology network_technology() const;

  // A flow from one GPU to another (src != dst) under the fabric's routing. flow_id stands for
  // the flow's 5-tuple (one NCCL connection): ECMP hashes it.
  FabricRoute route(int src_gpu, int dst_gpu, std::uint64_t flow_id);
  // The per-flow rate TCP's window allows on this route (0: no cap; RDMA never caps).
  double window_cap_Bps(const FabricRoute& route) const;

  // The GPU's scale-up port toward its NVSwitch and back (NVLS). Empty without NVSwitch.
  std::vector<int> to_switch(int gpu);
  std::vector<int> from_switch(int gpu);
  // From the GPU through its NIC up to the NIC's leaf switch, and back (in-network reduction
  // starts at the leaf). REQUIRES: the cluster has a fabric.
  FabricRoute to_leaf(int gpu);
  FabricRoute from_leaf(int gpu);
  int leaf_of_gpu(int gpu) const;  // the leaf vertex of the GPU's NIC
  // One cable of the in-network aggregation tree between a leaf and the spine tier (the spine
  // picked by channel), and with three tiers between that spine and a core: what a leaf sends up
  // the tree once per channel, whatever routing the fabric uses for ordinary flows.
  std::vector<int> tree_up(int leaf_vertex, int channel, bool to_core);
  std::vector<int> tree_down(int leaf_vertex, int channel, bool from_core);

  // The resource of one direction of a graph link (created on first use).
  int link_resource(int link, bool forward);

 private:
  int bundle_resource(const topology::Link& link, bool forward);
  int gpu_port(int gpu, bool up);
  FabricRoute gpu_leaf_path(int gpu, bool up);

  const topology::ClusterGraph& graph_;
  TransportParams transport_;
  double scale_up_efficiency_ = 1;
  int channels_per_nic_ = 2;
  ResourceTable table_;
  std::vector<int> forward_;   // per graph link: resource id or -1
  std::vector<int> backward_;
  std::map<std::pair<int, int>, int> bundles_;  // (key vertex or pod key, direction) -> resource
  std::map<std::pair<int, int>, std::vector<int>> pod_spines_;  // (plane, pod) -> spine vertices
};

// The achievable fraction of the raw scale-up bandwidth the analytic collective model assumes
// for this cluster (NCCL's per-architecture NVLink figure, 20.6 of 25 GB/s per Hopper link, or
// PCIe's 12 of 15.75), read back from the model's own one-node ring estimate so that both
// engines share the constant. 1 for single-GPU nodes. Calibration fits are ignored.
double scale_up_efficiency(const models::ClusterConfig& cluster,
                           const models::CollectiveParams& params);

}  // namespace clustersim::sim
