// The cluster as a graph: every GPU, NVSwitch / PCIe switch / host bridge, NIC and fabric switch
// is a vertex; every cable or on-board link a flow can cross is a full-duplex Link with its
// bandwidth per direction (bytes/s) and one-way latency (s). Routes are computed on demand from
// the regular fabric design (no all-pairs tables): O(hops) for static and ECMP, O(paths x hops)
// for adaptive; a 16,384-GPU three-tier fat-tree builds and routes its ring in ~50 ms, 24 MB. The graph owns its vertices and links, is immutable after build(), and every const
// member (route queries included) is safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"
#include "topology/fabric_design.h"

namespace clustersim::topology {

enum class VertexKind {
  kGpu,
  kNvSwitch,    // one per NVLink node: the node's NVSwitch chips as one crossbar
  kPcieSwitch,  // a PCIe switch joining GPUs to their NIC (GPU-NIC affinity)
  kHostBridge,  // the CPU root complex above the PCIe switches (one per node)
  kNic,
  kLeaf,        // fabric tier 1 (the only switch of a single-switch fabric)
  kSpine,       // fabric tier 2 (aggregation in a three-tier fat-tree)
  kCore,        // fabric tier 3
};
std::string_view to_string(VertexKind kind);

struct Vertex {
  VertexKind kind = VertexKind::kGpu;
  int node = -1;   // owning node; -1 for fabric switches
  int index = 0;   // GPU / NIC / PCIe switch index within its node; switch index within its
                   // tier and plane
  int tier = 0;    // 0 inside a node, 1 leaf, 2 spine, 3 core
  int plane = -1;  // fabric plane of a NIC or a switch; -1 for the other node parts
  int pod = -1;    // three tiers: the pod of a leaf or spine; else -1
  std::string name;  // "n3.gpu5", "n3.nic5", "p0.leaf2", "p0.pod1.spine4", "p0.core7"
};

enum class LinkKind {
  kNvlink,       // GPU <-> NVSwitch
  kPcie,         // GPU or NIC <-> PCIe switch, PCIe switch <-> host bridge
  kNicToLeaf,    // NIC <-> leaf; `bonded` parallel cables as one logical link
  kLeafToSpine,  // one cable
  kSpineToCore,  // one cable
};
std::string_view to_string(LinkKind kind);

// Full duplex: bandwidth_Bps is per direction and each direction is a separate resource; a flow
// uses a link in one direction. `src` is the end nearer the GPUs (GPU, NIC, PCIe switch, or the
// lower tier), so forward = upward. A NIC's bonded links are one Link with bonded = links_per_nic
// and bandwidth_Bps their sum; parallel switch-to-switch cables are separate Links (routing
// chooses among them as switches choose among ports).
// Latency: one-way, including the switch traversal it leads into, so that a path's latency is
// the sum of its links' (NIC<->leaf: half the NIC-to-NIC latency through one switch; switch<->
// switch: switch latency plus fibre propagation).
struct Link {
  int id = 0;
  int src = 0;  // vertex ids
  int dst = 0;
  LinkKind kind = LinkKind::kNvlink;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  int bonded = 1;  // physical cables (switch ports at each end) in this link
};

struct LinkUse {
  int link = 0;
  bool forward = true;  // true: src -> dst
};

// A path from one GPU to another. Adaptive routing returns every equal-cost shortest path with
// the fraction of the flow it carries (shares sum to 1); static and ECMP return one, share 1.
struct Path {
  std::vector<LinkUse> hops;
  double share = 1.0;
  double latency_s = 0;  // sum of the hops' link latencies
};

// The load a flow puts on one link direction: the sum of the shares of its paths that cross it.
// For adaptive routing this is the compact form of routes() (no path enumeration).
struct LinkLoad {
  int link = 0;
  bool forward = true;
  double share = 0;
};

struct BuildOptions {
  // ECMP hash seed: the same seed gives the same path for a flow, another seed another spread
  // (switch vendors salt their hash per switch; one salt for the fabric is enough here).
  std::uint64_t ecmp_seed = 0x9e3779b97f4a7c15ULL;
};

// Whether another ECMP hash seed can change where the cluster's flows go: ECMP routing across
// more than one node.
inline bool hashes_flows(const models::ClusterConfig& cluster) {
  return cluster.fabric.routing == models::Routing::kEcmp && cluster.nodes > 1;
}

class ClusterGraph {
 public:
  // Builds the node model (GPUs, NVSwitch or PCIe switches and host bridge, NICs with their
  // bonded links, GPU-NIC affinity) for every node and the fabric that design_fabric() sizes.
  // Fails like design_fabric(), and on configurations no graph can describe (no GPUs, several
  // nodes without NICs, zero bandwidths). `for_locations` (optional) gives file:line:col.
  static models::Result<ClusterGraph> build(const models::ClusterConfig& cluster,
                                            const models::Scenario* for_locations = nullptr,
                                            const BuildOptions& options = {});

  int node_count() const { return cluster_.nodes; }
  int gpus_per_node() const { return cluster_.node.gpus_per_node; }
  int nics_per_node() const { return cluster_.node.nics_per_node; }
  int gpu_count() const { return cluster_.total_gpus(); }
  int plane_count() const { return design_.planes; }

  // GPU ranks are node-major: rank = node * gpus_per_node + local index.
  // REQUIRES (all below): arguments in range (CS_ASSERT).
  int gpu_vertex(int gpu_rank) const;
  int node_of_gpu(int gpu_rank) const { return gpu_rank / gpus_per_node(); }
  // The NIC vertex a GPU sends through by default (same PCIe switch: NIC index
  // local_gpu * nics_per_node / gpus_per_node). -1 when nodes have no NICs.
  int nic_of_gpu(int gpu_rank) const;
  int nic_vertex(int node, int nic_index) const;
  int nvswitch_vertex(int node) const;   // -1 for PCIe-only nodes
  int host_bridge_vertex(int node) const;
  int plane_of_nic(int nic_index) const;  // -1 without a fabric

  const std::vector<Vertex>& vertices() const { return vertices_; }
  const std::vector<Link>& links() const { return links_; }
  // Link ids incident to a vertex (either end).
  const std::vector<int>& links_of(int vertex) const { return incident_[vertex]; }
  // The vertex at the other end of `link` from `vertex`.
  int other_end(int link, int vertex) const;

  const models::ClusterConfig& cluster() const { return cluster_; }
  const FabricDesign& design() const { return design_; }
  models::Routing routing() const { return cluster_.fabric.routing; }

  // Routes per cluster.fabric.routing (see routes_with). src_gpu != dst_gpu.
  std::vector<Path> routes(int src_gpu, int dst_gpu, std::uint64_t flow_id = 0) const;
  // Routes under an explicit policy:
  //  - kStatic: destination-based D-mod-k, as InfiniBand subnet managers route fat-trees: the
  //    up-port at tier t is floor(D / (product of the up-port counts below t)) mod (up-ports at
  //    t), D the destination NIC's index in its plane (Zahavi et al., "Optimized InfiniBand
  //    fat-tree routing for shift all-to-all communication patterns", CCPE 2010). One path.
  //  - kEcmp: the up-ports from a hash of (flow_id, src, dst, seed), as RoCE switches hash the
  //    5-tuple. One path; the same arguments and seed always give the same path.
  //  - kAdaptive: every shortest path through the fabric between the two NICs, equal shares
  //    (per-packet spreading over all up-ports, as InfiniBand adaptive routing does).
  // Inside nodes: NVLink through the NVSwitch, else PCIe through the shared PCIe switch or the
  // host bridge. Between nodes each GPU uses its own NIC; when the two NICs sit on different
  // planes the source first moves the data over NVLink (PCIe) to the GPU next to the NIC of the
  // destination's rail, as NCCL's PXN does.
  std::vector<Path> routes_with(models::Routing routing, int src_gpu, int dst_gpu,
                                std::uint64_t flow_id = 0) const;
  // Per-link-direction shares of a flow under the fabric's routing (sum over routes()), without
  // enumerating the adaptive paths: O(links the flow may touch).
  std::vector<LinkLoad> link_loads(int src_gpu, int dst_gpu, std::uint64_t flow_id = 0) const;
  // Number of paths routes() would return (adaptive: the product of the choices per hop).
  long long path_count(int src_gpu, int dst_gpu) const;

 private:
  friend class GraphLayout;  // lays the graph out (cluster_graph.cc)
  friend class Router;       // answers route queries (routing.cc)
  ClusterGraph() = default;

  models::ClusterConfig cluster_;
  FabricDesign design_;
  BuildOptions options_;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> incident_;

  // Index tables, filled by GraphLayout, that make a route query O(hops).
  int node_stride_ = 0;  // vertices per node; node n's block starts at n * node_stride_
  int pcie_switches_per_node_ = 0;
  bool has_nvswitch_ = false;
  std::vector<int> gpu_nvlink_;  // per GPU rank: GPU<->NVSwitch link (-1 without NVSwitch)
  std::vector<int> gpu_pcie_;    // per GPU rank: GPU<->PCIe switch link
  std::vector<int> nic_pcie_;    // per node * nics + nic: NIC<->PCIe switch link
  std::vector<int> nic_leaf_;    // per node * nics + nic: NIC<->leaf link (-1 without fabric)
  std::vector<NicPlacement> nic_place_;  // per node * nics + nic
  std::vector<int> pcie_host_;   // per node * switches + switch: PCIe switch<->host bridge
  int first_fabric_vertex_ = 0;  // per plane: leaves, spines (pod-major), cores (group-major)
  int first_leaf_spine_link_ = 0;  // per plane: leaf, spine of its pod, parallel cable
  int first_spine_core_link_ = 0;  // per plane: pod, spine, core of its group, parallel cable
};

}  // namespace clustersim::topology
