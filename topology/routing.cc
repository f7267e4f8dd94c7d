// Route queries on the regular layout GraphLayout builds: link ids are computed from the design,
// never searched, so one query costs O(hops) (adaptive: O(paths x hops)).
#include <cstdint>
#include <vector>

#include "topology/cluster_graph.h"

namespace clustersim::topology {
namespace {

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA
// 2014): a cheap, well-mixed 64-bit hash standing in for a switch's 5-tuple hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void append_reversed(const std::vector<LinkUse>& up, std::vector<LinkUse>& out) {
  for (auto it = up.rbegin(); it != up.rend(); ++it) out.push_back({it->link, !it->forward});
}

// The up-port choices of one fabric route: spine `a` of the source pod (cable k1 up, k1d down
// into the destination leaf) and, across pods, core `c` of group a (cable k2 up, k2d down).
struct FabricChoice {
  int a = 0, k1 = 0, k1d = 0;
  int c = 0, k2 = 0, k2d = 0;
};

}  // namespace

class Router {
 public:
  explicit Router(const ClusterGraph& g) : g_(g), p_(g.design_.plane) {}

  std::vector<Path> routes(models::Routing routing, int src, int dst, std::uint64_t flow) const {
    CS_ASSERT(src >= 0 && src < g_.gpu_count() && dst >= 0 && dst < g_.gpu_count(),
              "GPU rank out of range");
    CS_ASSERT(src != dst, "a route needs two different GPUs");
    std::vector<Path> out;
    const int G = g_.gpus_per_node();
    const int na = src / G, nb = dst / G;
    if (na == nb) {
      out.emplace_back();
      out.back().hops.reserve(4);  // also keeps g++ 12's -Wstringop-overflow false positive away
      intra_node(na, src % G, dst % G, out.back().hops);
      finish(out);
      return out;
    }
    // Host parts: up from the source GPU to its NIC, down from the destination NIC.
    const int jb = affinity_nic(dst % G);
    int ja = affinity_nic(src % G);
    if (g_.plane_of_nic(ja) != g_.plane_of_nic(jb)) ja = jb;  // PXN: the destination's rail
    std::vector<LinkUse> head, tail_up;
    gpu_to_nic(na, src % G, ja, head);
    gpu_to_nic(nb, dst % G, jb, tail_up);
    const NicPlacement& x = g_.nic_place_[na * g_.nics_per_node() + ja];
    const NicPlacement& y = g_.nic_place_[nb * g_.nics_per_node() + jb];
    const int link_x = g_.nic_leaf_[na * g_.nics_per_node() + ja];
    const int link_y = g_.nic_leaf_[nb * g_.nics_per_node() + jb];

    auto emit = [&](const FabricChoice* choice, double share) {
      Path path;
      path.share = share;
      path.hops = head;
      path.hops.reserve(head.size() + tail_up.size() + 6);
      path.hops.push_back({link_x, true});
      if (choice) fabric_hops(x, y, *choice, path.hops);
      path.hops.push_back({link_y, false});
      append_reversed(tail_up, path.hops);
      out.push_back(std::move(path));
    };
    if (x.leaf == y.leaf) {
      emit(nullptr, 1.0);
    } else if (routing == models::Routing::kAdaptive) {
      const bool cross_pod = crosses_pods(x, y);
      const double share = 1.0 / static_cast<double>(fabric_path_count(x, y));
      FabricChoice ch;
      for (ch.a = 0; ch.a < p_.spines_per_pod; ++ch.a)
        for (ch.k1 = 0; ch.k1 < p_.links_per_leaf_spine; ++ch.k1)
          for (ch.k1d = 0; ch.k1d < p_.links_per_leaf_spine; ++ch.k1d) {
            if (!cross_pod) {
              emit(&ch, share);
              continue;
            }
            for (ch.c = 0; ch.c < p_.cores_per_group; ++ch.c)
              for (ch.k2 = 0; ch.k2 < p_.links_per_spine_core; ++ch.k2)
                for (ch.k2d = 0; ch.k2d < p_.links_per_spine_core; ++ch.k2d) emit(&ch, share);
          }
    } else {
      const FabricChoice ch = routing == models::Routing::kStatic ? d_mod_k(y)
                                                                  : ecmp(src, dst, flow);
      emit(&ch, 1.0);
    }
    finish(out);
    return out;
  }

  std::vector<LinkLoad> loads(models::Routing routing, int src, int dst, std::uint64_t flow) const {
    const int G = g_.gpus_per_node();
    const bool fabric_spread = routing == models::Routing::kAdaptive && src / G != dst / G;
    if (!fabric_spread) return sum_paths(routes(routing, src, dst, flow));
    // Adaptive between nodes: the host parts and the NIC links carry the whole flow; each tier
    // of the fabric splits it evenly over the cables it may take (see FabricChoice).
    std::vector<Path> one = routes(models::Routing::kStatic, src, dst, flow);
    std::vector<LinkLoad> out;
    const int jb = affinity_nic(dst % G);
    int ja = affinity_nic(src % G);
    if (g_.plane_of_nic(ja) != g_.plane_of_nic(jb)) ja = jb;
    const NicPlacement& x = g_.nic_place_[src / G * g_.nics_per_node() + ja];
    const NicPlacement& y = g_.nic_place_[dst / G * g_.nics_per_node() + jb];
    for (const LinkUse& u : one.front().hops) {
      const LinkKind kind = g_.links_[u.link].kind;
      if (kind == LinkKind::kLeafToSpine || kind == LinkKind::kSpineToCore) continue;
      out.push_back({u.link, u.forward, 1.0});
    }
    if (x.leaf == y.leaf) return out;
    const int S = p_.spines_per_pod, m1 = p_.links_per_leaf_spine;
    const int C = p_.cores_per_group, m2 = p_.links_per_spine_core;
    const bool cross_pod = crosses_pods(x, y);
    for (int a = 0; a < S; ++a)
      for (int k = 0; k < m1; ++k) {
        out.push_back({leaf_spine(x.plane, x.leaf, a, k), true, 1.0 / (S * m1)});
        out.push_back({leaf_spine(y.plane, y.leaf, a, k), false, 1.0 / (S * m1)});
      }
    if (cross_pod)
      for (int a = 0; a < S; ++a)
        for (int c = 0; c < C; ++c)
          for (int k = 0; k < m2; ++k) {
            const double share = 1.0 / (static_cast<double>(S) * C * m2);
            out.push_back({spine_core(x.plane, pod_of(x), a, c, k), true, share});
            out.push_back({spine_core(y.plane, pod_of(y), a, c, k), false, share});
          }
    return out;
  }

  long long count(models::Routing routing, int src, int dst) const {
    const int G = g_.gpus_per_node();
    if (routing != models::Routing::kAdaptive || src / G == dst / G) return 1;
    const int jb = affinity_nic(dst % G);
    int ja = affinity_nic(src % G);
    if (g_.plane_of_nic(ja) != g_.plane_of_nic(jb)) ja = jb;
    const NicPlacement& x = g_.nic_place_[src / G * g_.nics_per_node() + ja];
    const NicPlacement& y = g_.nic_place_[dst / G * g_.nics_per_node() + jb];
    return x.leaf == y.leaf ? 1 : fabric_path_count(x, y);
  }

 private:
  // The first NIC on the PCIe switch of local GPU i (NIC j sits on switch j * P / nics).
  int affinity_nic(int local_gpu) const {
    const int P = g_.pcie_switches_per_node_;
    const int sw = local_gpu * P / g_.gpus_per_node();
    return (sw * g_.nics_per_node() + P - 1) / P;
  }

  void intra_node(int node, int a, int b, std::vector<LinkUse>& hops) const {
    const int G = g_.gpus_per_node();
    const int ra = node * G + a, rb = node * G + b;
    if (g_.has_nvswitch_) {
      hops.push_back({g_.gpu_nvlink_[ra], true});
      hops.push_back({g_.gpu_nvlink_[rb], false});
      return;
    }
    const int P = g_.pcie_switches_per_node_;
    const int sa = a * P / G, sb = b * P / G;
    hops.push_back({g_.gpu_pcie_[ra], true});
    if (sa != sb) {
      hops.push_back({g_.pcie_host_[node * P + sa], true});
      hops.push_back({g_.pcie_host_[node * P + sb], false});
    }
    hops.push_back({g_.gpu_pcie_[rb], false});
  }

  // From local GPU i of `node` up to its NIC j: through the shared PCIe switch; else over NVLink
  // to the GPU beside NIC j (PXN), or, in a PCIe-only node, through the host bridge.
  void gpu_to_nic(int node, int i, int j, std::vector<LinkUse>& hops) const {
    const int G = g_.gpus_per_node(), N = g_.nics_per_node(), P = g_.pcie_switches_per_node_;
    const int si = i * P / G, sj = j * P / N;
    const int rank = node * G + i;
    const int nic_link = g_.nic_pcie_[node * N + j];
    if (si == sj) {
      hops.push_back({g_.gpu_pcie_[rank], true});
    } else if (g_.has_nvswitch_) {
      const int t = node * G + (sj * G + P - 1) / P;  // first GPU on NIC j's switch
      hops.push_back({g_.gpu_nvlink_[rank], true});
      hops.push_back({g_.gpu_nvlink_[t], false});
      hops.push_back({g_.gpu_pcie_[t], true});
    } else {
      hops.push_back({g_.gpu_pcie_[rank], true});
      hops.push_back({g_.pcie_host_[node * P + si], true});
      hops.push_back({g_.pcie_host_[node * P + sj], false});
    }
    hops.push_back({nic_link, false});
  }

  int pod_of(const NicPlacement& at) const {
    return p_.tiers == 3 ? at.leaf / p_.leaves_per_pod : 0;
  }
  bool crosses_pods(const NicPlacement& x, const NicPlacement& y) const {
    return pod_of(x) != pod_of(y);
  }
  long long fabric_path_count(const NicPlacement& x, const NicPlacement& y) const {
    const long long m1 = p_.links_per_leaf_spine, m2 = p_.links_per_spine_core;
    long long n = p_.spines_per_pod * m1 * m1;
    if (crosses_pods(x, y)) n *= p_.cores_per_group * m2 * m2;
    return n;
  }

  int leaf_spine(int plane, int leaf, int a, int k) const {
    const int per_plane = p_.leaves * p_.spines_per_pod * p_.links_per_leaf_spine;
    return g_.first_leaf_spine_link_ + plane * per_plane +
           (leaf * p_.spines_per_pod + a) * p_.links_per_leaf_spine + k;
  }
  int spine_core(int plane, int pod, int a, int c, int k) const {
    const int per_plane =
        p_.pods * p_.spines_per_pod * p_.cores_per_group * p_.links_per_spine_core;
    return g_.first_spine_core_link_ + plane * per_plane +
           ((pod * p_.spines_per_pod + a) * p_.cores_per_group + c) * p_.links_per_spine_core + k;
  }

  void fabric_hops(const NicPlacement& x, const NicPlacement& y, const FabricChoice& ch,
                   std::vector<LinkUse>& hops) const {
    hops.push_back({leaf_spine(x.plane, x.leaf, ch.a, ch.k1), true});
    if (crosses_pods(x, y)) {
      hops.push_back({spine_core(x.plane, pod_of(x), ch.a, ch.c, ch.k2), true});
      hops.push_back({spine_core(y.plane, pod_of(y), ch.a, ch.c, ch.k2d), false});
    }
    hops.push_back({leaf_spine(y.plane, y.leaf, ch.a, ch.k1d), false});
  }

  // D-mod-k: D is the destination NIC's index in its plane; tier t's up-port is
  // floor(D / (up-ports below t)) mod (up-ports at t). Up-ports of a leaf are numbered spine-
  // first (port = cable * spines + spine), so consecutive destinations take consecutive spines.
  FabricChoice d_mod_k(const NicPlacement& y) const {
    FabricChoice ch;
    const long long D = y.index;
    const int S = p_.spines_per_pod, m1 = p_.links_per_leaf_spine;
    const int u1 = S * m1;
    const int j1 = static_cast<int>(D % u1);
    ch.a = j1 % S;
    ch.k1 = ch.k1d = j1 / S;
    if (p_.tiers == 3) {
      const int C = p_.cores_per_group, u2 = C * p_.links_per_spine_core;
      const int j2 = static_cast<int>((D / u1) % u2);
      ch.c = j2 % C;
      ch.k2 = ch.k2d = j2 / C;
    }
    return ch;
  }

  FabricChoice ecmp(int src, int dst, std::uint64_t flow) const {
    FabricChoice ch;
    std::uint64_t h = mix(g_.options_.ecmp_seed ^ mix(flow ^ mix((std::uint64_t(src) << 32) |
                                                                 std::uint32_t(dst))));
    const int S = p_.spines_per_pod, m1 = p_.links_per_leaf_spine;
    const int j1 = static_cast<int>(h % static_cast<std::uint64_t>(S * m1));
    ch.a = j1 % S;
    ch.k1 = j1 / S;
    h = mix(h);
    ch.k1d = static_cast<int>(h % static_cast<std::uint64_t>(m1));
    if (p_.tiers == 3) {
      const int C = p_.cores_per_group, m2 = p_.links_per_spine_core;
      h = mix(h);
      const int j2 = static_cast<int>(h % static_cast<std::uint64_t>(C * m2));
      ch.c = j2 % C;
      ch.k2 = j2 / C;
      h = mix(h);
      ch.k2d = static_cast<int>(h % static_cast<std::uint64_t>(m2));
    }
    return ch;
  }

  void finish(std::vector<Path>& paths) const {
    for (Path& path : paths) {
      path.latency_s = 0;
      for (const LinkUse& u : path.hops) path.latency_s += g_.links_[u.link].latency_s;
    }
  }

  static std::vector<LinkLoad> sum_paths(const std::vector<Path>& paths) {
    std::vector<LinkLoad> out;
    for (const Path& path : paths)
      for (const LinkUse& u : path.hops) {
        bool merged = false;
        for (LinkLoad& l : out)
          if (l.link == u.link && l.forward == u.forward) {
            l.share += path.share;
            merged = true;
            break;
          }
        if (!merged) out.push_back({u.link, u.forward, path.share});
      }
    return out;
  }

  const ClusterGraph& g_;
  const PlaneDesign& p_;
};

std::vector<Path> ClusterGraph::routes(int src_gpu, int dst_gpu, std::uint64_t flow_id) const {
  return Router(*this).routes(routing(), src_gpu, dst_gpu, flow_id);
}

std::vector<Path> ClusterGraph::routes_with(models::Routing routing, int src_gpu, int dst_gpu,
                                            std::uint64_t flow_id) const {
  return Router(*this).routes(routing, src_gpu, dst_gpu, flow_id);
}

std::vector<LinkLoad> ClusterGraph::link_loads(int src_gpu, int dst_gpu,
                                               std::uint64_t flow_id) const {
  return Router(*this).loads(routing(), src_gpu, dst_gpu, flow_id);
}

long long ClusterGraph::path_count(int src_gpu, int dst_gpu) const {
  return Router(*this).count(routing(), src_gpu, dst_gpu);
}

}  // namespace clustersim::topology
