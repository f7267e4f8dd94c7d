#include "topology/fabric_metrics.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <algorithm>
#include <limits>

#include "topology/graph_search.h"

namespace clustersim::topology {
namespace {

// A flow network for boost::push_relabel_max_flow: every directed edge has a paired reverse edge
// (capacity 0 unless the reverse direction is a real link direction of its own).
using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, double,
                    boost::property<boost::edge_residual_capacity_t, double,
                                    boost::property<boost::edge_reverse_t,
                                                    Traits::edge_descriptor>>>>;

class FlowNetwork {
 public:
  explicit FlowNetwork(int vertices) : g_(static_cast<size_t>(vertices)) {}

  // A full-duplex link: capacity each way, each direction the other's reverse edge.
  void add_duplex(int a, int b, double capacity) { add_pair(a, b, capacity, capacity); }
  void add_one_way(int a, int b, double capacity) { add_pair(a, b, capacity, 0); }

  double max_flow(int source, int sink) {
    return boost::push_relabel_max_flow(g_, boost::vertex(source, g_), boost::vertex(sink, g_));
  }

 private:
  void add_pair(int a, int b, double forward, double backward) {
    auto cap = boost::get(boost::edge_capacity, g_);
    auto rev = boost::get(boost::edge_reverse, g_);
    const auto e = boost::add_edge(a, b, g_).first;
    const auto r = boost::add_edge(b, a, g_).first;
    cap[e] = forward;
    cap[r] = backward;
    rev[e] = r;
    rev[r] = e;
  }
  FlowGraph g_;
};

bool is_switch(const Vertex& v) { return v.tier >= 1; }

TierMetrics tier_metrics(const ClusterGraph& graph, VertexKind kind, const char* name) {
  TierMetrics t;
  t.name = name;
  const int radix = graph.design().radix;
  for (size_t v = 0; v < graph.vertices().size(); ++v) {
    if (graph.vertices()[v].kind != kind) continue;
    ++t.switches;
    double down_Bps = 0, up_Bps = 0;
    for (int id : graph.links_of(static_cast<int>(v))) {
      const Link& l = graph.links()[id];
      const bool down = l.dst == static_cast<int>(v);  // links point upward
      (down ? t.downlinks : t.uplinks) += l.bonded;
      (down ? down_Bps : up_Bps) += l.bandwidth_Bps;
    }
    if (up_Bps > 0) t.oversubscription = std::max(t.oversubscription, down_Bps / up_Bps);
  }
  t.ports = t.switches * radix;
  t.ports_used = t.downlinks + t.uplinks;
  return t;
}

// Closed form of the contiguous-halves cut for the regular designs: the senders' injection,
// divided by the leaf oversubscription when it exceeds 1; -1 when the cut does not fall on a
// leaf boundary (then leaf-local traffic makes the formula wrong).
double closed_form_bisection_Bps(const ClusterGraph& graph) {
  const FabricDesign& d = graph.design();
  const int half = graph.node_count() / 2;
  const double node_Bps = graph.nics_per_node() * graph.cluster().node.links_per_nic *
                          d.nic_link_Bps;
  if (d.planes == 0) return -1;
  const PlaneDesign& p = d.plane;
  if (p.tiers >= 2 && p.leaves_per_node == 0 && half % p.nodes_per_leaf != 0) return -1;
  return half * node_Bps / std::max(1.0, d.leaf_oversubscription);
}

void add_latencies(const ClusterGraph& graph, FabricMetrics& m) {
  const int G = graph.gpus_per_node();
  if (G > 1)
    m.intra_node_latency_s =
        graph.routes_with(models::Routing::kStatic, 0, 1).front().latency_s;
  // Every equal-cost path of a regular fabric has the same latency: the static route stands for
  // all of them. Sources: the first GPU of the first node and the last GPU of the last node.
  std::vector<double> all;
  for (int src : {0, graph.gpu_count() - 1}) {
    for (int dst = 0; dst < graph.gpu_count(); ++dst) {
      if (dst == src) continue;
      all.push_back(graph.routes_with(models::Routing::kStatic, src, dst).front().latency_s);
    }
    if (graph.gpu_count() == 1) break;
  }
  if (all.empty()) return;
  m.worst_latency_s = *std::max_element(all.begin(), all.end());
  std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
  m.typical_latency_s = all[all.size() / 2];
}

void add_diameter(const ClusterGraph& graph, FabricMetrics& m) {
  const int G = graph.gpus_per_node();
  std::vector<int> sources;
  for (int node : {0, graph.node_count() - 1})
    for (int i = 0; i < G; ++i) sources.push_back(graph.gpu_vertex(node * G + i));
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  for (const std::vector<int>& dist : hop_distances(graph, sources))
    for (int r = 0; r < graph.gpu_count(); ++r)
      m.diameter_hops = std::max(m.diameter_hops, dist[graph.gpu_vertex(r)]);
}

}  // namespace

double node_cut_max_flow_Bps(const ClusterGraph& graph, const std::vector<bool>& in_first_half) {
  CS_ASSERT(static_cast<int>(in_first_half.size()) == graph.node_count(), "one entry per node");
  // Vertices: one per node, then the fabric switches, then source and sink.
  const auto& vs = graph.vertices();
  std::vector<int> id(vs.size(), -1);
  int next = graph.node_count();
  for (size_t v = 0; v < vs.size(); ++v)
    if (is_switch(vs[v])) id[v] = next++;
  const int source = next++, sink = next++;
  FlowNetwork net(next);
  double total = 0;
  for (const Link& l : graph.links()) {
    const Vertex& a = vs[l.src];
    const Vertex& b = vs[l.dst];
    if (l.kind == LinkKind::kNicToLeaf) {
      net.add_duplex(a.node, id[l.dst], l.bandwidth_Bps);
      total += l.bandwidth_Bps;
    } else if (is_switch(a) && is_switch(b)) {
      net.add_duplex(id[l.src], id[l.dst], l.bandwidth_Bps);
    }
  }
  const double unlimited = 2 * total + 1;
  for (int n = 0; n < graph.node_count(); ++n) {
    if (in_first_half[n])
      net.add_one_way(source, n, unlimited);
    else
      net.add_one_way(n, sink, unlimited);
  }
  return net.max_flow(source, sink);
}

FabricMetrics count_hardware(const ClusterGraph& graph) {
  FabricMetrics m;
  const FabricDesign& d = graph.design();
  const models::ClusterConfig& c = graph.cluster();
  m.nodes = graph.node_count();
  m.gpus = graph.gpu_count();
  m.nics = m.nodes * graph.nics_per_node();
  m.planes = d.planes;
  m.nic_cost_usd = m.nics * c.node.nic.price_usd;
  if (d.planes == 0) return m;
  m.tiers.push_back(tier_metrics(graph, VertexKind::kLeaf, "leaf"));
  if (d.plane.tiers >= 2) m.tiers.push_back(tier_metrics(graph, VertexKind::kSpine, "spine"));
  if (d.plane.tiers >= 3) m.tiers.push_back(tier_metrics(graph, VertexKind::kCore, "core"));
  m.tiers.back().oversubscription = 0;  // the top tier has no uplinks
  for (const TierMetrics& t : m.tiers) {
    m.switches += t.switches;
    m.switch_ports += t.ports;
    m.switch_ports_used += t.ports_used;
    m.cables += t.downlinks;  // each cable counted once, at its upper end
  }
  m.transceivers = 2 * m.cables;
  m.switch_cost_usd = m.switches * c.fabric.switch_spec.price_usd;
  m.cable_cost_usd = m.cables * c.node.nic.cable_price_usd;
  return m;
}

FabricMetrics compute_metrics(const ClusterGraph& graph) {
  // 1. Counts per tier; latencies and diameter.
  FabricMetrics m = count_hardware(graph);
  add_latencies(graph, m);
  add_diameter(graph, m);
  const FabricDesign& d = graph.design();
  const models::ClusterConfig& c = graph.cluster();
  if (d.planes == 0) return m;

  // 2. Bisection by max-flow, node level, two cuts: contiguous halves and even/odd nodes.
  m.injection_Bps = m.nics * c.node.links_per_nic * d.nic_link_Bps;
  if (m.nodes >= 2) {
    std::vector<bool> halves(m.nodes), alternate(m.nodes);
    for (int n = 0; n < m.nodes; ++n) {
      halves[n] = n < m.nodes / 2;
      alternate[n] = n % 2 == 0;
    }
    m.bisection_Bps = std::min(node_cut_max_flow_Bps(graph, halves),
                               node_cut_max_flow_Bps(graph, alternate));
    m.bisection_closed_form_Bps = closed_form_bisection_Bps(graph);
  }
  return m;
}

}  // namespace clustersim::topology
