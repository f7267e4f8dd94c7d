#include "models/physical_floor.h"

#include <algorithm>

#include "models/compute_model.h"
#include "models/units.h"

namespace clustersim::models {

FloorHardware floor_hardware(const ClusterConfig& cluster, int ranks) {
  FloorHardware hw;
  const int gpn = std::max(1, cluster.node.gpus_per_node);
  hw.ranks = ranks > 0 ? ranks : cluster.total_gpus();
  hw.ranks_per_node = std::min(hw.ranks, gpn);
  hw.nodes = (hw.ranks + hw.ranks_per_node - 1) / hw.ranks_per_node;
  hw.scale_up_Bps = cluster.node.scale_up.per_gpu_Bps;
  hw.switch_reduction = cluster.node.scale_up.switch_reduction;
  double nic_Bps = cluster.node.links_per_nic * cluster.node.nic.line_rate_Bps;
  const double pcie_Bps = cluster.node.gpu.pcie_Bps();
  if (pcie_Bps > 0) nic_Bps = std::min(nic_Bps, pcie_Bps);
  hw.node_network_Bps = cluster.node.nics_per_node * nic_Bps;
  hw.in_network_reduction =
      cluster.fabric.in_network_reduction && cluster.node.nic.in_network_reduction_capable;
  return hw;
}

namespace {

// Bytes one GPU must send (per direction) for the op over n ranks.
double per_gpu_bytes(CollectiveOp op, int n, double s, bool reduction_in_switch) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return (reduction_in_switch ? 1.0 : 2.0) * (n - 1) / n * s;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return double(n - 1) / n * s;
    default: return s;
  }
}

// Bytes the busiest node's NICs must carry (per direction) for the op over n ranks on N nodes,
// filled in order: g ranks each, the last one the rest. A node of k ranks receives the (n - k)/n
// of an all_gather's buffer held elsewhere (and sends as much of a reduce_scatter's), and in an
// all-to-all its k ranks send k (n - k)/n of a rank's buffer off the node. With equal nodes these
// are (N - 1)/N S and g (N - 1)/N S.
double per_node_bytes(CollectiveOp op, int nodes, int g, int n, double s, bool in_network) {
  const double share = double(nodes - 1) / nodes;
  const int last = n - (nodes - 1) * g;  // ranks on the last node (g when they divide evenly)
  switch (op) {
    case CollectiveOp::kAllReduce: return in_network ? s : 2.0 * share * s;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: return double(n - std::min(g, last)) / n * s;
    case CollectiveOp::kAllToAll: {
      auto off_node = [n](int k) { return double(k) * (n - k) / n; };
      return std::max(off_node(g), off_node(last)) * s;
    }
    default: return s;
  }
}

}  // namespace

CollectiveFloor collective_floor(const FloorHardware& hw, CollectiveOp op, double size_bytes) {
  CollectiveFloor f;
  if (hw.ranks <= 1 || size_bytes <= 0) return f;
  const int n = hw.ranks;
  // Each GPU: what it must send over its own egress (scale-up link, plus its NIC share when the
  // communicator spans nodes; any in-switch or in-network reduction lets it send half).
  const bool reduces_in_fabric = hw.switch_reduction || (hw.nodes > 1 && hw.in_network_reduction);
  const double gpu_bytes = per_gpu_bytes(op, n, size_bytes, reduces_in_fabric);
  const double gpu_Bps =
      hw.scale_up_Bps + (hw.nodes > 1 ? hw.node_network_Bps / hw.ranks_per_node : 0.0);
  const double gpu_s = gpu_Bps > 0 ? gpu_bytes / gpu_Bps : 0;
  f.bound = "scale_up";
  f.bytes_through_bound = gpu_bytes;
  f.bound_Bps = gpu_Bps;
  f.time_s = gpu_s;
  f.explanation = "each GPU sends at least " + format_size(gpu_bytes) + " over " +
                  format_bandwidth(gpu_Bps) + (hw.nodes > 1 ? " (scale-up link + its NIC share)" : "");
  if (hw.nodes > 1 && hw.node_network_Bps > 0) {
    const double node_bytes =
        per_node_bytes(op, hw.nodes, hw.ranks_per_node, n, size_bytes, hw.in_network_reduction);
    const double net_s = node_bytes / hw.node_network_Bps;
    if (net_s >= gpu_s) {
      f.bound = "network";
      f.bytes_through_bound = node_bytes;
      f.bound_Bps = hw.node_network_Bps;
      f.time_s = net_s;
      f.explanation = "each of " + std::to_string(hw.nodes) + " nodes sends at least " +
                      format_size(node_bytes) + " through its NICs at " +
                      format_bandwidth_bits(hw.node_network_Bps) +
                      (hw.in_network_reduction && op == CollectiveOp::kAllReduce
                           ? " (in-network reduction: S out, S back)"
                           : "");
    }
  }
  if (f.time_s > 0) {
    f.max_algbw_Bps = size_bytes / f.time_s;
    f.max_busbw_Bps = f.max_algbw_Bps * bus_bandwidth_factor(op, n);
  }
  return f;
}

double attention_forward_flops_per_layer(double tokens, double hidden, bool causal) {
  // One "head" as wide as the model: heads x head_dim = hidden.
  AttentionShape shape;
  shape.head_dim = hidden;
  shape.q_tokens = shape.kv_tokens = tokens;
  shape.causal = causal;
  return shape.forward_flops();
}

}  // namespace clustersim::models
