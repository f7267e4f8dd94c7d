#include "sim/fabric_model.h"

#include <algorithm>

#include "models/units.h"

namespace clustersim::sim {

using topology::Link;
using topology::LinkKind;
using topology::Vertex;
using topology::VertexKind;

FabricModel::FabricModel(const topology::ClusterGraph& graph, const TransportParams& transport,
                         double scale_up_efficiency, int channels_per_nic)
    : graph_(graph),
      transport_(transport),
      scale_up_efficiency_(scale_up_efficiency),
      channels_per_nic_(std::max(1, channels_per_nic)),
      forward_(graph.links().size(), -1),
      backward_(graph.links().size(), -1) {}

models::LinkTechnology FabricModel::network_technology() const {
  return graph_.cluster().node.nic.technology;
}

int FabricModel::link_resource(int link, bool forward) {
  int& slot = forward ? forward_[link] : backward_[link];
  if (slot >= 0) return slot;
  const Link& l = graph_.links()[link];
  const auto& vs = graph_.vertices();
  const models::NodeConfig& node = graph_.cluster().node;
  NetResource r;
  r.name = forward ? vs[l.src].name + ">" + vs[l.dst].name : vs[l.dst].name + ">" + vs[l.src].name;
  r.capacity_Bps = l.bandwidth_Bps;
  switch (l.kind) {
    case LinkKind::kNvlink:
      r.tier = ResourceTier::kScaleUp;
      r.capacity_Bps *= scale_up_efficiency_;
      break;
    case LinkKind::kPcie:
      // GPUDirect RDMA crosses PCIe at its raw rate (the analytic NIC cap); on PCIe-only nodes
      // PCIe is also the scale-up fabric and runs at NCCL's PCIe figure.
      r.tier = ResourceTier::kPcie;
      if (node.scale_up.technology == models::LinkTechnology::kPcie) {
        r.capacity_Bps *= scale_up_efficiency_;
      }
      break;
    case LinkKind::kNicToLeaf:
    case LinkKind::kLeafToSpine:
    case LinkKind::kSpineToCore:
      r.tier = l.kind == LinkKind::kNicToLeaf     ? ResourceTier::kNic
               : l.kind == LinkKind::kLeafToSpine ? ResourceTier::kLeafSpine
                                                  : ResourceTier::kSpineCore;
      // A NIC's own cable runs at what its host side reaches; a switch-to-switch link loses only
      // the headers, and keeps the rest for flows that collide on it (wire_efficiency).
      r.capacity_Bps *= l.kind == LinkKind::kNicToLeaf ? node.nic.protocol_efficiency
                                                       : switch_link_efficiency(node.nic);
      // A NIC's uplink carries only what the NIC schedules itself: never congested.
      if (l.kind != LinkKind::kNicToLeaf || !forward) {
        r.shared_efficiency = shared_link_efficiency(node.nic.technology, transport_);
        r.congestion_flows = channels_per_nic_;
      }
      break;
  }
  slot = table_.add(std::move(r));
  return slot;
}

// Adaptive routing: a leaf's uplinks (up or down) or a pod's spine-to-core links as one bundle.
int FabricModel::bundle_resource(const Link& link, bool forward) {
  const auto& vs = graph_.vertices();
  const Vertex& lower = vs[link.src];  // the leaf of a leaf-spine cable, the spine of a spine-core
  const bool leaf_tier = link.kind == LinkKind::kLeafToSpine;
  // Keys: a leaf by its vertex id; a pod by -(1 + plane * 65536 + pod) so the two never meet.
  const int key = leaf_tier ? link.src : -(1 + lower.plane * 65536 + lower.pod);
  const auto found = bundles_.find({key, forward ? 1 : 0});
  if (found != bundles_.end()) return found->second;
  double raw = 0;
  int cables = 0;
  if (leaf_tier) {
    for (int id : graph_.links_of(link.src)) {
      const Link& l = graph_.links()[id];
      if (l.kind == LinkKind::kLeafToSpine && l.src == link.src) {
        raw += l.bandwidth_Bps;
        ++cables;
      }
    }
  } else {
    auto& spines = pod_spines_[{lower.plane, lower.pod}];
    if (spines.empty()) {
      for (size_t v = 0; v < vs.size(); ++v) {
        if (vs[v].kind == VertexKind::kSpine && vs[v].plane == lower.plane &&
            vs[v].pod == lower.pod) {
          spines.push_back(static_cast<int>(v));
        }
      }
    }
    for (int s : spines)
      for (int id : graph_.links_of(s)) {
        const Link& l = graph_.links()[id];
        if (l.kind == LinkKind::kSpineToCore && l.src == s) {
          raw += l.bandwidth_Bps;
          ++cables;
        }
      }
  }
  const models::NicSpec& nic = graph_.cluster().node.nic;
  NetResource r;
  r.name = (leaf_tier ? lower.name
                      : "p" + std::to_string(lower.plane) + ".pod" +
                            std::to_string(std::max(0, lower.pod))) +
           (forward ? " uplinks" : " downlinks") + " (" + std::to_string(cables) + " cables)";
  r.tier = leaf_tier ? ResourceTier::kLeafSpine : ResourceTier::kSpineCore;
  r.capacity_Bps = raw * switch_link_efficiency(nic);
  r.shared_efficiency = shared_link_efficiency(nic.technology, transport_);
  r.congestion_flows = channels_per_nic_ * std::max(1, cables);
  const int id = table_.add(std::move(r));
  bundles_[{key, forward ? 1 : 0}] = id;
  return id;
}

FabricRoute FabricModel::route(int src_gpu, int dst_gpu, std::uint64_t flow_id) {
  const models::Routing routing = graph_.routing();
  const bool adaptive = routing == models::Routing::kAdaptive;
  // Adaptive: the D-mod-k path's host parts and NIC cables, bundles for the switch tiers.
  const auto paths =
      graph_.routes_with(adaptive ? models::Routing::kStatic : routing, src_gpu, dst_gpu, flow_id);
  CS_ASSERT(paths.size() == 1, "static and ECMP routing give one path");
  FabricRoute out;
  out.latency_s = paths.front().latency_s;
  out.resources.reserve(paths.front().hops.size());
  for (const topology::LinkUse& hop : paths.front().hops) {
    const Link& l = graph_.links()[hop.link];
    const bool switch_tier = l.kind == LinkKind::kLeafToSpine || l.kind == LinkKind::kSpineToCore;
    out.resources.push_back(adaptive && switch_tier ? bundle_resource(l, hop.forward)
                                                    : link_resource(hop.link, hop.forward));
  }
  return out;
}

double FabricModel::window_cap_Bps(const FabricRoute& route) const {
  return window_rate_cap_Bps(network_technology(), route.latency_s, transport_);
}

int FabricModel::gpu_port(int gpu, bool up) {
  const int v = graph_.gpu_vertex(gpu);
  for (int id : graph_.links_of(v)) {
    if (graph_.links()[id].kind == LinkKind::kNvlink) return link_resource(id, up);
  }
  return -1;
}

std::vector<int> FabricModel::to_switch(int gpu) {
  const int r = gpu_port(gpu, true);
  return r < 0 ? std::vector<int>{} : std::vector<int>{r};
}

std::vector<int> FabricModel::from_switch(int gpu) {
  const int r = gpu_port(gpu, false);
  return r < 0 ? std::vector<int>{} : std::vector<int>{r};
}

FabricRoute FabricModel::gpu_leaf_path(int gpu, bool up) {
  const int G = graph_.gpus_per_node();
  CS_ASSERT(graph_.node_count() > 1 && graph_.plane_count() > 0, "no fabric to reach a leaf on");
  // The GPU's way to its NIC and leaf is the head of any route to another node on its rail.
  const int other = (gpu + G) % graph_.gpu_count();
  const auto paths = graph_.routes_with(models::Routing::kStatic, gpu, other, 0);
  FabricRoute out;
  for (const topology::LinkUse& hop : paths.front().hops) {
    const Link& l = graph_.links()[hop.link];
    out.resources.push_back(link_resource(hop.link, up ? hop.forward : !hop.forward));
    out.latency_s += l.latency_s;
    if (l.kind == LinkKind::kNicToLeaf) break;
  }
  if (!up) std::reverse(out.resources.begin(), out.resources.end());
  return out;
}

FabricRoute FabricModel::to_leaf(int gpu) { return gpu_leaf_path(gpu, true); }
FabricRoute FabricModel::from_leaf(int gpu) { return gpu_leaf_path(gpu, false); }

int FabricModel::leaf_of_gpu(int gpu) const {
  const int nic = graph_.nic_of_gpu(gpu);
  for (int id : graph_.links_of(nic)) {
    if (graph_.links()[id].kind == LinkKind::kNicToLeaf) return graph_.other_end(id, nic);
  }
  return -1;
}

namespace {

// The links of `kind` whose lower end is `vertex`, in id order.
std::vector<int> uplinks(const topology::ClusterGraph& g, int vertex, LinkKind kind) {
  std::vector<int> out;
  for (int id : g.links_of(vertex)) {
    if (g.links()[id].kind == kind && g.links()[id].src == vertex) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<int> FabricModel::tree_up(int leaf_vertex, int channel, bool to_core) {
  std::vector<int> out;
  const auto up = uplinks(graph_, leaf_vertex, LinkKind::kLeafToSpine);
  if (up.empty()) return out;
  const int cable = up[static_cast<size_t>(channel) % up.size()];
  out.push_back(link_resource(cable, true));
  if (to_core) {
    const auto core = uplinks(graph_, graph_.links()[cable].dst, LinkKind::kSpineToCore);
    if (!core.empty())
      out.push_back(link_resource(core[static_cast<size_t>(channel) % core.size()], true));
  }
  return out;
}

std::vector<int> FabricModel::tree_down(int leaf_vertex, int channel, bool from_core) {
  std::vector<int> out;
  const auto up = uplinks(graph_, leaf_vertex, LinkKind::kLeafToSpine);
  if (up.empty()) return out;
  const int cable = up[static_cast<size_t>(channel) % up.size()];
  if (from_core) {
    const auto core = uplinks(graph_, graph_.links()[cable].dst, LinkKind::kSpineToCore);
    if (!core.empty())
      out.push_back(link_resource(core[static_cast<size_t>(channel) % core.size()], false));
  }
  out.push_back(link_resource(cable, false));
  return out;
}

double scale_up_efficiency(const models::ClusterConfig& cluster,
                           const models::CollectiveParams& params) {
  const int g = cluster.node.gpus_per_node;
  const double raw = cluster.node.scale_up.per_gpu_Bps;
  if (g < 2 || raw <= 0) return 1.0;
  auto topo = models::collective_topology(cluster, g);
  if (!topo) return 1.0;
  const models::CollectiveParams uncalibrated = models::uncalibrated(params);
  const double bytes = models::kGiB;
  auto est = models::estimate_collective(
      *topo,
      {models::CollectiveOp::kAllReduce, bytes, models::CollectiveAlgorithm::kRing,
       models::CollectiveProtocol::kSimple},
      uncalibrated);
  if (!est || est->bandwidth_s <= 0) return 1.0;
  const double bus_Bps =
      bytes * models::bus_bandwidth_factor(models::CollectiveOp::kAllReduce, g) / est->bandwidth_s;
  return bus_Bps / raw;
}

}  // namespace clustersim::sim
