#include "topology/cluster_graph.h"

#include <string>

#include "models/catalog.h"
#include "models/units.h"

namespace clustersim::topology {
namespace {

// Light in fibre travels at c / 1.47 (refractive index of silica): 4.9 ns per metre.
constexpr double kFibreDelaySPerM = 1.47 / 299'792'458.0;
// Assumed cable runs (no floor plan is given): leaf to spine within a row of racks, spine to
// core across the hall. They add 0.15 us and 0.49 us, small next to NIC and switch latency.
constexpr double kLeafSpineCableM = 30;
constexpr double kSpineCoreCableM = 100;

std::string node_part(int node, const char* what, int index) {
  return "n" + std::to_string(node) + "." + what + std::to_string(index);
}

}  // namespace

std::string_view to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::kGpu: return "gpu";
    case VertexKind::kNvSwitch: return "nvswitch";
    case VertexKind::kPcieSwitch: return "pcie-switch";
    case VertexKind::kHostBridge: return "host-bridge";
    case VertexKind::kNic: return "nic";
    case VertexKind::kLeaf: return "leaf";
    case VertexKind::kSpine: return "spine";
    case VertexKind::kCore: return "core";
  }
  return "?";
}

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlink: return "nvlink";
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kNicToLeaf: return "nic-leaf";
    case LinkKind::kLeafToSpine: return "leaf-spine";
    case LinkKind::kSpineToCore: return "spine-core";
  }
  return "?";
}

// Lays out the vertices and links in the fixed order the index tables describe:
//   1. per node: GPUs, NVSwitch (NVLink nodes), PCIe switches, host bridge, NICs;
//   2. per plane: leaves, spines (pod by pod), cores (group by group);
// links: node-internal links node by node, NIC<->leaf links, then per plane the leaf<->spine
// cables (leaf, spine of its pod, parallel cable) and the spine<->core cables (pod, spine,
// core of its group, parallel cable). Routing computes link ids from this order.
class GraphLayout {
 public:
  GraphLayout(ClusterGraph& g, const models::Scenario* scenario) : g_(g), scenario_(scenario) {}

  models::Status lay_out() {
    const models::NodeConfig& node = g_.cluster_.node;
    if (node.scale_up.per_gpu_Bps <= 0)
      return models::Error{where("cluster.node.scale_up") + "scale-up '" + node.scale_up.id +
                           "' has no bandwidth"};
    if (pcie_Bps() <= 0)
      return models::Error{where("cluster.node.gpu") + "GPU '" + node.gpu.id +
                           "' has no PCIe generation"};
    lay_out_nodes();
    lay_out_fabric();
    return models::Status::Ok();
  }

 private:
  std::string where(const std::string& key) const {
    return (scenario_ ? scenario_->where(key) : key) + ": ";
  }

  int add_vertex(VertexKind kind, int node, int index, int tier, int plane, int pod,
                 std::string name) {
    g_.vertices_.push_back(Vertex{kind, node, index, tier, plane, pod, std::move(name)});
    g_.incident_.emplace_back();
    return static_cast<int>(g_.vertices_.size()) - 1;
  }

  int add_link(int src, int dst, LinkKind kind, double bandwidth_Bps, double latency_s,
               int bonded = 1) {
    const int id = static_cast<int>(g_.links_.size());
    g_.links_.push_back(Link{id, src, dst, kind, bandwidth_Bps, latency_s, bonded});
    g_.incident_[src].push_back(id);
    g_.incident_[dst].push_back(id);
    return id;
  }

  // The GPU's PCIe host link per direction; NICs and PCIe switch uplinks are taken to be of the
  // same generation and width (x16), as in HGX/DGX boards.
  double pcie_Bps() const {
    const models::NodeConfig& node = g_.cluster_.node;
    if (node.scale_up.technology == models::LinkTechnology::kPcie) return node.scale_up.per_gpu_Bps;
    return node.gpu.pcie_Bps();
  }
  // One PCIe hop (device to switch): half the catalog's device-switch-device latency.
  double pcie_hop_latency_s() const {
    const models::NodeConfig& node = g_.cluster_.node;
    if (node.scale_up.technology == models::LinkTechnology::kPcie)
      return node.scale_up.latency_s / 2;
    const models::ScaleUpSpec* pcie =
        models::find_scale_up("pcie" + std::to_string(node.gpu.pcie_gen));
    if (pcie == nullptr) pcie = models::find_scale_up("pcie5");
    return pcie ? pcie->latency_s / 2 : 0;
  }

  void lay_out_nodes() {
    const models::ClusterConfig& c = g_.cluster_;
    const int G = c.node.gpus_per_node;
    const int N = c.node.nics_per_node;
    const int P = std::max(1, std::min(N, G));  // PCIe switches: one per NIC, at most one per GPU
    const bool nv = c.node.scale_up.technology == models::LinkTechnology::kNvlink;
    g_.has_nvswitch_ = nv;
    g_.pcie_switches_per_node_ = P;
    g_.node_stride_ = G + (nv ? 1 : 0) + P + 1 + N;
    const double pcie = pcie_Bps();
    const double pcie_lat = pcie_hop_latency_s();
    const double nvlink = c.node.scale_up.per_gpu_Bps;
    const double nvlink_lat = c.node.scale_up.latency_s / 2;

    g_.gpu_nvlink_.assign(static_cast<size_t>(c.total_gpus()), -1);
    g_.gpu_pcie_.resize(static_cast<size_t>(c.total_gpus()));
    g_.nic_pcie_.resize(static_cast<size_t>(c.nodes) * N);
    g_.pcie_host_.resize(static_cast<size_t>(c.nodes) * P);
    g_.vertices_.reserve(static_cast<size_t>(c.nodes) * g_.node_stride_);
    g_.incident_.reserve(static_cast<size_t>(c.nodes) * g_.node_stride_);

    for (int n = 0; n < c.nodes; ++n) {
      const int gpu0 = static_cast<int>(g_.vertices_.size());
      for (int i = 0; i < G; ++i)
        add_vertex(VertexKind::kGpu, n, i, 0, -1, -1, node_part(n, "gpu", i));
      const int nvs = nv ? add_vertex(VertexKind::kNvSwitch, n, 0, 0, -1, -1,
                                      "n" + std::to_string(n) + ".nvswitch")
                         : -1;
      const int sw0 = static_cast<int>(g_.vertices_.size());
      for (int s = 0; s < P; ++s)
        add_vertex(VertexKind::kPcieSwitch, n, s, 0, -1, -1, node_part(n, "pcie", s));
      const int host = add_vertex(VertexKind::kHostBridge, n, 0, 0, -1, -1,
                                  "n" + std::to_string(n) + ".host");
      const int nic0 = static_cast<int>(g_.vertices_.size());
      for (int j = 0; j < N; ++j) {
        const int plane = g_.design_.planes > 0 ? j / static_cast<int>(g_.design_.plane.rails.size())
                                                : -1;
        add_vertex(VertexKind::kNic, n, j, 0, plane, -1, node_part(n, "nic", j));
      }
      for (int i = 0; i < G; ++i) {
        const int rank = n * G + i;
        if (nv) g_.gpu_nvlink_[rank] = add_link(gpu0 + i, nvs, LinkKind::kNvlink, nvlink, nvlink_lat);
        g_.gpu_pcie_[rank] = add_link(gpu0 + i, sw0 + i * P / G, LinkKind::kPcie, pcie, pcie_lat);
      }
      for (int j = 0; j < N; ++j)
        g_.nic_pcie_[n * N + j] = add_link(nic0 + j, sw0 + j * P / N, LinkKind::kPcie, pcie, pcie_lat);
      for (int s = 0; s < P; ++s)
        g_.pcie_host_[n * P + s] = add_link(sw0 + s, host, LinkKind::kPcie, pcie, pcie_lat);
    }
  }

  void lay_out_fabric() {
    const models::ClusterConfig& c = g_.cluster_;
    const FabricDesign& d = g_.design_;
    g_.first_fabric_vertex_ = static_cast<int>(g_.vertices_.size());
    if (d.planes == 0) return;
    const PlaneDesign& p = d.plane;
    const int N = c.node.nics_per_node;
    const double sw_lat = c.fabric.switch_spec.latency_s;

    // 1. Switches, plane by plane.
    for (int plane = 0; plane < d.planes; ++plane) {
      const std::string pre = "p" + std::to_string(plane) + ".";
      for (int l = 0; l < p.leaves; ++l)
        add_vertex(VertexKind::kLeaf, -1, l, 1, plane, p.tiers == 3 ? l / p.leaves_per_pod : -1,
                   pre + "leaf" + std::to_string(l));
      if (p.tiers >= 2)
        for (int pod = 0; pod < p.pods; ++pod)
          for (int j = 0; j < p.spines_per_pod; ++j)
            add_vertex(VertexKind::kSpine, -1, pod * p.spines_per_pod + j, 2, plane,
                       p.tiers == 3 ? pod : -1,
                       pre + (p.tiers == 3 ? "pod" + std::to_string(pod) + "." : "") + "spine" +
                           std::to_string(j));
      for (int k = 0; k < p.cores(); ++k)
        add_vertex(VertexKind::kCore, -1, k, 3, plane, -1, pre + "core" + std::to_string(k));
    }

    // 2. NIC <-> leaf: the NIC's bonded links as one link. Half the NIC-to-NIC latency through
    // one switch on each side, so that NIC -> leaf -> NIC adds up to the catalog figure.
    const int L = c.node.links_per_nic;
    g_.nic_leaf_.resize(static_cast<size_t>(c.nodes) * N);
    g_.nic_place_.resize(static_cast<size_t>(c.nodes) * N);
    for (int n = 0; n < c.nodes; ++n)
      for (int j = 0; j < N; ++j) {
        const NicPlacement at = place_nic(d, N, n, j);
        g_.nic_place_[n * N + j] = at;
        const int nic = n * g_.node_stride_ + g_.node_stride_ - N + j;
        g_.nic_leaf_[n * N + j] = add_link(nic, leaf_vertex(at.plane, at.leaf), LinkKind::kNicToLeaf,
                                           L * d.nic_link_Bps, c.node.nic.latency_s / 2, L);
      }

    // 3. Leaf <-> spine and spine <-> core cables: switch latency plus fibre.
    const double ls_lat = sw_lat + kLeafSpineCableM * kFibreDelaySPerM;
    const double sc_lat = sw_lat + kSpineCoreCableM * kFibreDelaySPerM;
    g_.first_leaf_spine_link_ = static_cast<int>(g_.links_.size());
    if (p.tiers >= 2)
      for (int plane = 0; plane < d.planes; ++plane)
        for (int l = 0; l < p.leaves; ++l) {
          const int pod = l / p.leaves_per_pod;
          for (int j = 0; j < p.spines_per_pod; ++j)
            for (int k = 0; k < p.links_per_leaf_spine; ++k)
              add_link(leaf_vertex(plane, l), spine_vertex(plane, pod, j), LinkKind::kLeafToSpine,
                       d.port_Bps, ls_lat);
        }
    g_.first_spine_core_link_ = static_cast<int>(g_.links_.size());
    if (p.tiers == 3)
      for (int plane = 0; plane < d.planes; ++plane)
        for (int pod = 0; pod < p.pods; ++pod)
          for (int a = 0; a < p.spines_per_pod; ++a)
            for (int k = 0; k < p.cores_per_group; ++k)
              for (int m = 0; m < p.links_per_spine_core; ++m)
                add_link(spine_vertex(plane, pod, a), core_vertex(plane, a, k),
                         LinkKind::kSpineToCore, d.port_Bps, sc_lat);
  }

  int plane_block() const { return g_.design_.plane.switches(); }
  int leaf_vertex(int plane, int leaf) const {
    return g_.first_fabric_vertex_ + plane * plane_block() + leaf;
  }
  int spine_vertex(int plane, int pod, int j) const {
    const PlaneDesign& p = g_.design_.plane;
    return g_.first_fabric_vertex_ + plane * plane_block() + p.leaves + pod * p.spines_per_pod + j;
  }
  int core_vertex(int plane, int group, int k) const {
    const PlaneDesign& p = g_.design_.plane;
    return g_.first_fabric_vertex_ + plane * plane_block() + p.leaves + p.spines() +
           group * p.cores_per_group + k;
  }

  ClusterGraph& g_;
  const models::Scenario* scenario_;
};

models::Result<ClusterGraph> ClusterGraph::build(const models::ClusterConfig& cluster,
                                                 const models::Scenario* for_locations,
                                                 const BuildOptions& options) {
  models::Result<FabricDesign> design = design_fabric(cluster, for_locations);
  if (!design.ok()) return design.error();
  ClusterGraph g;
  g.cluster_ = cluster;
  g.design_ = std::move(design).value();
  g.options_ = options;
  const models::NodeConfig& node = cluster.node;
  // Physics first: a NIC cannot move more than its PCIe host link carries.
  const double nic_Bps = node.links_per_nic * g.design_.nic_link_Bps;
  if (node.nics_per_node > 0 && node.gpu.pcie_Bps() > 0 && nic_Bps > node.gpu.pcie_Bps() * 1.0001)
    g.design_.notes.push_back(
        "each NIC's " + std::to_string(node.links_per_nic) + " bonded links carry " +
        models::format_bandwidth(nic_Bps) + " but its PCIe Gen" +
        std::to_string(node.gpu.pcie_gen) + " x16 host link only " +
        models::format_bandwidth(node.gpu.pcie_Bps()) + ": the NIC is capped there");
  GraphLayout layout(g, for_locations);
  models::Status st = layout.lay_out();
  if (!st.ok()) return models::Error{st.message()};
  return g;
}

int ClusterGraph::gpu_vertex(int gpu_rank) const {
  CS_ASSERT(gpu_rank >= 0 && gpu_rank < gpu_count(), "GPU rank out of range");
  return node_of_gpu(gpu_rank) * node_stride_ + gpu_rank % gpus_per_node();
}

int ClusterGraph::nic_vertex(int node, int nic_index) const {
  CS_ASSERT(node >= 0 && node < node_count(), "node out of range");
  CS_ASSERT(nic_index >= 0 && nic_index < nics_per_node(), "NIC index out of range");
  return node * node_stride_ + node_stride_ - nics_per_node() + nic_index;
}

int ClusterGraph::nic_of_gpu(int gpu_rank) const {
  if (nics_per_node() == 0) return -1;
  const int local = gpu_rank % gpus_per_node();
  const int P = pcie_switches_per_node_;
  const int sw = local * P / gpus_per_node();
  // The first NIC on the GPU's PCIe switch (NIC j sits on switch j * P / nics).
  const int nic = (sw * nics_per_node() + P - 1) / P;
  return nic_vertex(node_of_gpu(gpu_rank), nic);
}

int ClusterGraph::nvswitch_vertex(int node) const {
  CS_ASSERT(node >= 0 && node < node_count(), "node out of range");
  return has_nvswitch_ ? node * node_stride_ + gpus_per_node() : -1;
}

int ClusterGraph::host_bridge_vertex(int node) const {
  CS_ASSERT(node >= 0 && node < node_count(), "node out of range");
  return node * node_stride_ + node_stride_ - nics_per_node() - 1;
}

int ClusterGraph::plane_of_nic(int nic_index) const {
  if (design_.planes == 0) return -1;
  return nic_index / static_cast<int>(design_.plane.rails.size());
}

int ClusterGraph::other_end(int link, int vertex) const {
  const Link& l = links_[link];
  CS_ASSERT(l.src == vertex || l.dst == vertex, "vertex is not an end of the link");
  return l.src == vertex ? l.dst : l.src;
}

}  // namespace clustersim::topology
