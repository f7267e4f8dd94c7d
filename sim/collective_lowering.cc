#include "sim/collective_lowering.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

namespace clustersim::sim {
namespace {

using models::CollectiveAlgorithm;
using models::CollectiveOp;
using models::CollectiveProtocol;

// The members of a communicator grouped by node, nodes in order of first appearance.
std::vector<std::vector<int>> by_node(const Communicator& comm, int gpus_per_node) {
  std::vector<std::vector<int>> out;
  std::map<int, size_t> index;
  for (int gpu : comm) {
    const int node = gpu / gpus_per_node;
    auto [it, inserted] = index.try_emplace(node, out.size());
    if (inserted) out.emplace_back();
    out[it->second].push_back(gpu);
  }
  return out;
}

// splitmix64: distinct, reproducible connection ids for the ECMP hash.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Lowering {
 public:
  Lowering(const CollectiveShape& shape, const models::CollectiveTopology& topo,
           FabricModel& fabric, const models::CollectiveParams& params,
           const LoweringOptions& options)
      : shape_(shape),
        topo_(topo),
        fabric_(fabric),
        params_(params),
        options_(options),
        gpn_(fabric.graph().gpus_per_node()),
        wire_(protocol_factor(shape, topo, params)) {}

  models::Status lower(const std::vector<Communicator>& comms, LoweredCollective* out) {
    out_ = out;
    for (size_t c = 0; c < comms.size(); ++c) {
      comm_index_ = c;
      if (comms[c].size() < 2 || shape_.size_bytes <= 0) continue;
      if (auto s = lower_one(comms[c]); !s) return s;
    }
    return models::Status::Ok();
  }

 private:
  std::vector<SimFlow>& phase(size_t i) {
    if (out_->phases.size() <= i) out_->phases.resize(i + 1);
    return out_->phases[i];
  }

  // A GPU-to-GPU flow; `edge` makes the connection id unique within the collective; `cap` (> 0)
  // bounds its rate (NCCL's channels for a p2p peer).
  void flow(size_t ph, int src, int dst, double bytes, std::uint64_t edge, double cap = 0) {
    if (src == dst || bytes <= 0) return;
    const int qps = src / gpn_ == dst / gpn_ ? 1 : std::max(1, options_.qps_per_connection);
    for (int q = 0; q < qps; ++q) {
      const std::uint64_t id =
          mix(mix(comm_index_ * 0x100000001ULL + edge) ^ static_cast<std::uint64_t>(shape_.op) ^
              (std::uint64_t(q) << 40));
      FabricRoute r = fabric_.route(src, dst, id);
      double rate = fabric_.window_cap_Bps(r);
      if (cap > 0) rate = rate > 0 ? std::min(rate, cap / qps) : cap / qps;
      phase(ph).push_back({std::move(r.resources), bytes / qps, rate});
    }
  }
  void flow_on(size_t ph, std::vector<int> route, double bytes, double cap = 0) {
    if (route.empty() || bytes <= 0) return;
    phase(ph).push_back({std::move(route), bytes, cap});
  }

  models::Status lower_one(const Communicator& comm) {
    const auto nodes = by_node(comm, gpn_);
    switch (shape_.algorithm) {
      case CollectiveAlgorithm::kRing:
        if (shape_.op == CollectiveOp::kAllToAll || shape_.op == CollectiveOp::kSendRecv) {
          return models::Error{"ring cannot run " + std::string(to_string(shape_.op))};
        }
        // Each edge also runs no faster than its channels copy (the analytic ring's channel
        // bound, in wire bytes): on one node, and across nodes where a block cap cuts them.
        ring(comm, nodes, 0, ring_bytes(comm.size()),
             models::ring_channel_bus_Bps(topo_, params_, shape_.op) * wire_);
        return models::Status::Ok();
      case CollectiveAlgorithm::kTree:
        return tree(nodes);
      case CollectiveAlgorithm::kNvls:
        return nvls(nodes);
      case CollectiveAlgorithm::kCollNet:
        return collnet(nodes);
      case CollectiveAlgorithm::kHierarchical:
        return hierarchical(nodes);
      case CollectiveAlgorithm::kP2p:
        return p2p(comm, nodes);
      case CollectiveAlgorithm::kAuto:
        break;
    }
    return models::Error{"lowering needs a resolved algorithm"};
  }

  bool chain_op() const {
    return shape_.op == CollectiveOp::kBroadcast || shape_.op == CollectiveOp::kReduce;
  }
  // Bytes over every ring edge: the bus factor times the size, on the wire.
  double ring_bytes(size_t n) const {
    return models::bus_bandwidth_factor(shape_.op, static_cast<int>(n)) * shape_.size_bytes * wire_;
  }

  // Distinct NICs the GPUs of one node use (their affinity NICs).
  int nics_used(const std::vector<int>& members) const {
    std::vector<int> nics;
    for (int gpu : members) nics.push_back(fabric_.graph().nic_of_gpu(gpu));
    std::sort(nics.begin(), nics.end());
    const int count = static_cast<int>(std::unique(nics.begin(), nics.end()) - nics.begin());
    // A channel leaves the node through one NIC: no more NICs than channels.
    return params_.max_channels > 0 ? std::min(count, params_.max_channels) : count;
  }
  // Where the channels of a multi-node ring (per_entry 1) or tree (per_entry 2: one channel per
  // tree sharing a head) enter each node: one local-rank offset per entry point, channels_per_nic
  // channels per NIC in use. With a NIC per GPU the entries rotate over every GPU (a multiple of
  // g of them); with fewer NICs they are spread g / entries apart, so that the exits (the GPU
  // before each entry) fall evenly on the NICs.
  std::vector<int> entry_offsets(const std::vector<std::vector<int>>& nodes, int per_entry) const {
    const int g = static_cast<int>(nodes.front().size());
    const int k = std::max(1, nics_used(nodes.front()));
    int channels = std::max(1, options_.channels_per_nic) * k;
    if (params_.max_channels > 0) channels = std::min(channels, params_.max_channels);
    const int want = std::max(1, (channels + per_entry - 1) / per_entry);
    std::vector<int> out;
    if (want >= g) {
      const int n = g * ((want + g - 1) / g);
      for (int i = 0; i < n; ++i) out.push_back(i % g);
      return out;
    }
    int n = want;
    while (g % n != 0) ++n;  // a divisor of g: evenly spaced entries
    for (int i = 0; i < n; ++i) out.push_back(i * (g / n));
    return out;
  }
  bool keep_intra(size_t node_index) const {
    return !options_.sample_intra_node || node_index == 0;
  }

  // Ring over the communicator (also a chain for broadcast/reduce, without the edge into the
  // root). `bytes_per_edge` is the whole collective's volume on each edge; `copy_cap` (> 0), the
  // ring's channels' copy bound, bounds each edge's rate on one node and each channel's share
  // of it across nodes.
  void ring(const Communicator& comm, const std::vector<std::vector<int>>& nodes, size_t ph,
            double bytes_per_edge, double copy_cap = 0) {
    const int root = comm.front();
    const bool chain = chain_op();
    if (nodes.size() == 1) {
      const auto& m = nodes.front();
      for (size_t i = 0; i < m.size(); ++i) {
        const int dst = m[(i + 1) % m.size()];
        if (chain && dst == root) continue;
        flow(ph, m[i], dst, bytes_per_edge, i, copy_cap);
      }
      return;
    }
    const auto offsets = entry_offsets(nodes, 1);
    const int C = static_cast<int>(offsets.size());
    const double bytes = bytes_per_edge / C;
    const double channel_cap = copy_cap > 0 ? copy_cap / C : 0;  // each channel's share
    const int N = static_cast<int>(nodes.size());
    // Channel c enters node j at local rank offset(c) - j: each exit (the GPU before the entry)
    // sends to the same local rank of the next node, on its rail.
    auto entry = [&](int c, int j) {
      const int g = static_cast<int>(nodes[j].size());
      return ((offsets[c] - j) % g + g) % g;
    };
    std::uint64_t edge = 0;
    for (int c = 0; c < C; ++c) {
      for (int j = 0; j < N; ++j) {
        const auto& m = nodes[j];
        const int g = static_cast<int>(m.size());
        const int e = entry(c, j);
        for (int t = 0; t + 1 < g; ++t) {
          const int dst = m[(e + t + 1) % g];
          ++edge;
          if (!keep_intra(j) || (chain && dst == root)) continue;
          flow(ph, m[(e + t) % g], dst, bytes, edge, channel_cap);
        }
        const auto& next = nodes[(j + 1) % N];
        const int dst = next[entry(c, (j + 1) % N)];
        ++edge;
        if (chain && dst == root) continue;
        flow(ph, m[(e + g - 1) % g], dst, bytes, edge, channel_cap);
      }
    }
  }

  // Inter-node double binary tree between the head GPUs of each node: every edge carries
  // `bytes` up and `bytes` down. Channel c uses tree c % 2 and head heads[c / 2].
  void node_tree(const std::vector<std::vector<int>>& nodes, const std::vector<int>& heads,
                 double bytes, size_t ph) {
    const int N = static_cast<int>(nodes.size());
    const int C = 2 * static_cast<int>(heads.size());
    std::uint64_t edge = 1u << 20;
    for (int c = 0; c < C; ++c) {
      for (int j = 0; j < N; ++j) {
        const int p = dtree_parent(N, j, c % 2);
        if (p < 0) continue;
        const auto& a = nodes[j];
        const auto& b = nodes[p];
        const int ha = a[static_cast<size_t>(heads[c / 2]) % a.size()];
        const int hb = b[static_cast<size_t>(heads[c / 2]) % b.size()];
        flow(ph, ha, hb, bytes, ++edge);
        flow(ph, hb, ha, bytes, ++edge);
      }
    }
  }

  // NCCL's tree (all_reduce): a chain inside each node (up to the head, then back down), the
  // double binary tree across nodes. Each edge moves S/C each way.
  models::Status tree(const std::vector<std::vector<int>>& nodes) {
    if (shape_.op != CollectiveOp::kAllReduce) {
      return models::Error{"algorithm tree cannot run " + std::string(to_string(shape_.op))};
    }
    const std::vector<int> heads =
        nodes.size() == 1 ? std::vector<int>{0} : entry_offsets(nodes, 2);
    const int C = nodes.size() == 1 ? 1 : 2 * static_cast<int>(heads.size());
    const double bytes = shape_.size_bytes * wire_ / params_.tree_efficiency / C;
    std::uint64_t edge = 0;
    for (int c = 0; c < C; ++c) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        const auto& m = nodes[j];
        const size_t g = m.size();
        const size_t h = nodes.size() == 1 ? 0 : static_cast<size_t>(heads[c / 2]) % g;
        for (size_t t = 0; t + 1 < g; ++t) {
          const int up = m[(h + t) % g], down = m[(h + t + 1) % g];
          edge += 2;
          if (!keep_intra(j)) continue;
          flow(0, down, up, bytes, edge);
          flow(0, up, down, bytes, edge + 1);
        }
      }
    }
    if (nodes.size() > 1) node_tree(nodes, heads, bytes, 0);
    return models::Status::Ok();
  }

  // Each GPU's port to the NVSwitch: `up` bytes toward the switch, `down` back.
  void nvls_ports(const std::vector<int>& members, double up, double down, size_t ph) {
    const double scale = wire_ / params_.nvls_efficiency;
    for (int gpu : members) {
      flow_on(ph, fabric_.to_switch(gpu), up * scale);
      flow_on(ph, fabric_.from_switch(gpu), down * scale);
    }
  }

  models::Status nvls(const std::vector<std::vector<int>>& nodes) {
    if (!topo_.switch_reduction || fabric_.to_switch(nodes.front().front()).empty()) {
      return models::Error{"algorithm nvls needs an NVSwitch with NVLink SHARP"};
    }
    const double S = shape_.size_bytes;
    if (nodes.size() == 1) {
      const double g = static_cast<double>(nodes.front().size());
      switch (shape_.op) {
        case CollectiveOp::kAllReduce:
          nvls_ports(nodes.front(), S * (1 + 1 / g), S * (1 + 1 / g), 0);
          break;
        case CollectiveOp::kAllGather:
          nvls_ports(nodes.front(), S / g, S, 0);
          break;
        case CollectiveOp::kReduceScatter:
          nvls_ports(nodes.front(), S, S / g, 0);
          break;
        default:
          return models::Error{"algorithm nvls cannot run " + std::string(to_string(shape_.op))};
      }
      return models::Status::Ok();
    }
    if (shape_.op != CollectiveOp::kAllReduce) {
      return models::Error{"nvls across nodes runs all_reduce only"};
    }
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (!keep_intra(j)) continue;
      const double g = static_cast<double>(nodes[j].size());
      nvls_ports(nodes[j], S * (1 + 1 / g), S * (1 + 1 / g), 0);
    }
    const auto heads = entry_offsets(nodes, 2);
    node_tree(nodes, heads, S * wire_ / (2 * heads.size()), 0);
    return models::Status::Ok();
  }

  // In-network reduction: each channel's head GPU sends S/C to its leaf and receives S/C; the
  // leaves exchange one stream per channel along the aggregation tree.
  models::Status collnet(const std::vector<std::vector<int>>& nodes) {
    if (shape_.op != CollectiveOp::kAllReduce || nodes.size() < 2) {
      return models::Error{"collnet runs all_reduce across nodes"};
    }
    if (!topo_.in_network_reduction) {
      return models::Error{"the fabric has no in-network reduction"};
    }
    const double S = shape_.size_bytes;
    for (size_t j = 0; j < nodes.size(); ++j) {
      const auto& m = nodes[j];
      const double g = static_cast<double>(m.size());
      if (m.size() < 2 || !keep_intra(j)) continue;
      if (topo_.switch_reduction && !fabric_.to_switch(m.front()).empty()) {
        nvls_ports(m, S * (1 + 1 / g), S * (1 + 1 / g), 0);
      } else {
        // CollNet-Direct: reduce-scatter and all-gather over NVLink, 2(g-1)/g S per GPU.
        ring(m, {m}, 0, 2 * (g - 1) / g * S * wire_);
      }
    }
    const int C = std::max(1, options_.channels_per_nic) * std::max(1, nics_used(nodes.front()));
    const double bytes = S * wire_ / params_.collnet_efficiency / C;
    for (int c = 0; c < C; ++c) {
      std::map<int, int> leaves;  // leaf vertex -> pod
      for (const auto& m : nodes) {
        const int head = m[static_cast<size_t>(c) % m.size()];
        FabricRoute up = fabric_.to_leaf(head);
        FabricRoute down = fabric_.from_leaf(head);
        const double cap_up = fabric_.window_cap_Bps(up), cap_down = fabric_.window_cap_Bps(down);
        flow_on(0, std::move(up.resources), bytes, cap_up);
        flow_on(0, std::move(down.resources), bytes, cap_down);
        const int leaf = fabric_.leaf_of_gpu(head);
        leaves[leaf] = fabric_.graph().vertices()[leaf].pod;
      }
      if (leaves.size() < 2) continue;
      std::vector<int> distinct;
      for (const auto& [leaf, pod] : leaves) distinct.push_back(pod);
      std::sort(distinct.begin(), distinct.end());
      const bool cross_pod = std::unique(distinct.begin(), distinct.end()) - distinct.begin() > 1;
      for (const auto& [leaf, pod] : leaves) {
        flow_on(0, fabric_.tree_up(leaf, c, cross_pod), bytes);
        flow_on(0, fabric_.tree_down(leaf, c, cross_pod), bytes);
      }
    }
    return models::Status::Ok();
  }

  // Three phases: NVLink ring reduce-scatter, a ring per rail across nodes, NVLink all-gather
  // (all_gather: rails then NVLink; reduce_scatter: NVLink then rails).
  models::Status hierarchical(const std::vector<std::vector<int>>& nodes) {
    const CollectiveOp op = shape_.op;
    if (op != CollectiveOp::kAllReduce && op != CollectiveOp::kAllGather &&
        op != CollectiveOp::kReduceScatter) {
      return models::Error{"hierarchical runs all_reduce, all_gather and reduce_scatter"};
    }
    if (nodes.size() < 2) return models::Error{"hierarchical needs more than one node"};
    const double S = shape_.size_bytes * wire_;
    const size_t g = nodes.front().size();
    const double N = static_cast<double>(nodes.size());
    const double intra = (g - 1.0) / g * S;
    const double inter = (op == CollectiveOp::kAllReduce ? 2.0 : 1.0) * (N - 1) / N * S / g;
    auto intra_phase = [&](size_t ph) {
      if (g < 2) return;
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (keep_intra(j)) ring(nodes[j], {nodes[j]}, ph, intra);
      }
    };
    auto rails_phase = [&](size_t ph) {
      const int per_rail = std::max(1, options_.channels_per_nic);
      for (size_t i = 0; i < g; ++i) {
        std::vector<int> rail;
        for (const auto& m : nodes) rail.push_back(m[i % m.size()]);
        for (int c = 0; c < per_rail; ++c) {
          for (size_t j = 0; j < rail.size(); ++j) {
            flow(ph, rail[j], rail[(j + 1) % rail.size()], inter / per_rail,
                 (i * 64 + c) * 1000003ULL + j);
          }
        }
      }
    };
    size_t ph = 0;
    if (op != CollectiveOp::kAllGather) intra_phase(ph++);
    rails_phase(ph++);
    if (op != CollectiveOp::kReduceScatter) intra_phase(ph++);
    return models::Status::Ok();
  }

  models::Status p2p(const Communicator& comm, const std::vector<std::vector<int>>& nodes) {
    const double S = shape_.size_bytes * wire_;
    const size_t n = comm.size();
    // Inside a node a peer gets what NCCL's channels for its bytes copy (the analytic p2p cap).
    auto intra_cap = [&](double per_peer_payload) {
      return models::p2p_peer_channel_cap_Bps(topo_, params_, per_peer_payload) * wire_;
    };
    if (shape_.op == CollectiveOp::kSendRecv) {
      // Across nodes NCCL spreads a peer's traffic over several connections (channels).
      const int C = std::max(1, options_.channels_per_nic);
      const double cap = intra_cap(shape_.size_bytes);
      for (size_t r = 0; r < n; ++r) {
        const int src = comm[r], dst = comm[(r + 1) % n];
        const bool inside = src / gpn_ == dst / gpn_;
        const int k = inside ? 1 : C;
        for (int c = 0; c < k; ++c) {
          flow(0, src, dst, S / k, r * 64 + static_cast<size_t>(c), inside ? cap : 0);
        }
      }
      return models::Status::Ok();
    }
    if (shape_.op != CollectiveOp::kAllToAll) {
      return models::Error{"p2p runs alltoall and sendrecv"};
    }
    const double share = S / static_cast<double>(n);
    const double cap = intra_cap(shape_.size_bytes / static_cast<double>(n));
    std::uint64_t edge = 0;
    // A dispatcher that sends a token once per GPU (rank_share) moves that share of the copies
    // inside a node.
    const double in_node = share * shape_.dispatch.rank_share;
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (!keep_intra(j)) continue;
      for (int a : nodes[j])
        for (int b : nodes[j]) flow(0, a, b, in_node, ++edge, cap);
    }
    const size_t N = nodes.size();
    if (N < 2) return models::Status::Ok();
    const size_t g = nodes.front().size();
    // Shifts d = 1 .. N-1; above the budget an evenly spread sample, each scaled up.
    const size_t budget = static_cast<size_t>(std::max(1, options_.max_alltoall_flows));
    const size_t shifts = std::min(N - 1, std::max<size_t>(1, budget / (N * g)));
    const double scale = static_cast<double>(N - 1) / static_cast<double>(shifts);
    for (size_t k = 0; k < shifts; ++k) {
      const size_t d = 1 + k * (N - 1) / shifts;
      for (size_t j = 0; j < N; ++j) {
        const auto& a = nodes[j];
        const auto& b = nodes[(j + d) % N];
        for (size_t i = 0; i < a.size(); ++i) {
          const int to = b[i % b.size()];
          flow(0, a[i], to,
               share * static_cast<double>(b.size()) * scale * shape_.dispatch.network_share,
               ++edge);
          // A hierarchical dispatcher: the receiving GPU forwards the copies for its node's
          // other GPUs over the scale-up links.
          if (shape_.dispatch.forward_in_node) {
            for (int m : b) {
              if (m != to) flow(0, to, m, in_node * scale, ++edge, cap);
            }
          }
        }
      }
    }
    return models::Status::Ok();
  }

  const CollectiveShape& shape_;
  const models::CollectiveTopology& topo_;
  FabricModel& fabric_;
  const models::CollectiveParams& params_;
  const LoweringOptions& options_;
  const int gpn_;
  const double wire_;  // protocol factor: bytes on the wire per byte of payload
  LoweredCollective* out_ = nullptr;
  std::uint64_t comm_index_ = 0;
};

// One step of NCCL's btree (src/graph/trees.cc, ncclGetBtree): the parent of `rank`.
int btree_parent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  for (; bit < n; bit <<= 1) {
    if (bit & rank) break;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  return up;
}

}  // namespace

size_t LoweredCollective::flow_count() const {
  size_t n = 0;
  for (const auto& p : phases) n += p.size();
  return n;
}

int dtree_parent(int n, int rank, int tree) {
  if (tree == 0) return btree_parent(n, rank);
  if (n % 2 == 1) {  // odd: the second tree is the first shifted by one
    const int u = btree_parent(n, (rank - 1 + n) % n);
    return u < 0 ? -1 : (u + 1) % n;
  }
  const int u = btree_parent(n, n - 1 - rank);  // even: mirrored
  return u < 0 ? -1 : n - 1 - u;
}

double protocol_factor(const CollectiveShape& shape, const models::CollectiveTopology& topology,
                       const models::CollectiveParams& params) {
  if (shape.size_bytes <= 0 ||
      (shape.protocol == CollectiveProtocol::kSimple && !models::is_calibrated(params))) {
    return 1.0;
  }
  auto with = models::estimate_collective(
      topology, {shape.op, shape.size_bytes, shape.algorithm, shape.protocol}, params);
  auto simple = models::estimate_collective(
      topology, {shape.op, shape.size_bytes, shape.algorithm, CollectiveProtocol::kSimple},
      models::uncalibrated(params));
  if (!with || !simple || simple->bandwidth_s <= 0) return 1.0;
  return with->bandwidth_s / simple->bandwidth_s;
}

models::Result<LoweredCollective> lower_collective(const CollectiveShape& shape,
                                                   const std::vector<Communicator>& comms,
                                                   const models::CollectiveTopology& topology,
                                                   FabricModel& fabric,
                                                   const models::CollectiveParams& params,
                                                   const LoweringOptions& options) {
  CS_ASSERT(
      shape.algorithm != CollectiveAlgorithm::kAuto && shape.protocol != CollectiveProtocol::kAuto,
      "lower a resolved algorithm and protocol");
  for (const auto& c : comms) {
    for (int gpu : c) {
      if (gpu < 0 || gpu >= fabric.graph().gpu_count()) {
        return models::Error{"communicator member " + std::to_string(gpu) + " outside the " +
                             std::to_string(fabric.graph().gpu_count()) + " GPUs"};
      }
    }
  }
  LoweredCollective out;
  Lowering lowering(shape, topology, fabric, params, options);
  if (auto s = lowering.lower(comms, &out); !s) return models::Error{s.message()};
  return out;
}

}  // namespace clustersim::sim
