#include "topology/dot_export.h"

#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "models/units.h"

namespace clustersim::topology {
namespace {

// Above this many switches a per-switch picture stops being readable: fold to one box per tier.
constexpr int kMaxDrawnSwitches = 100;

const char* shape_of(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu: return "box";
    case VertexKind::kNic: return "cds";
    case VertexKind::kLeaf:
    case VertexKind::kSpine:
    case VertexKind::kCore: return "box3d";
    default: return "ellipse";
  }
}

const char* colour_of(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu: return "palegreen";
    case VertexKind::kNic: return "lightyellow";
    case VertexKind::kLeaf: return "lightblue";
    case VertexKind::kSpine: return "lightsalmon";
    case VertexKind::kCore: return "plum";
    default: return "white";
  }
}

std::string bw(double Bps) { return models::format_bandwidth_bits(Bps); }

void header(std::ostringstream& out, const ClusterGraph& g) {
  out << "graph cluster {\n"
      << "  graph [rankdir=BT, splines=line, ranksep=1.2, fontname=\"Helvetica\", labelloc=t, label=\""
      << g.node_count() << " nodes x " << g.gpus_per_node() << " GPUs, "
      << models::to_string(g.cluster().fabric.topology) << ", " << g.plane_count()
      << " plane(s)\"];\n"
      << "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=8];\n";
}

void draw_full(std::ostringstream& out, const ClusterGraph& g) {
  for (size_t v = 0; v < g.vertices().size(); ++v) {
    const Vertex& x = g.vertices()[v];
    out << "  v" << v << " [label=\"" << x.name << "\", shape=" << shape_of(x.kind)
        << ", fillcolor=" << colour_of(x.kind) << "];\n";
  }
  for (const Link& l : g.links()) {
    out << "  v" << l.src << " -- v" << l.dst << " [label=\"" << to_string(l.kind) << " "
        << bw(l.bandwidth_Bps) << (l.bonded > 1 ? " (" + std::to_string(l.bonded) + " bonded)" : "")
        << "\"];\n";
  }
}

// Invisible edges between neighbours of one rank keep them left to right in index order.
void keep_in_order(std::ostringstream& out, const char* prefix, const std::vector<int>& ids) {
  for (size_t i = 1; i < ids.size(); ++i)
    out << "  " << prefix << ids[i - 1] << " -- " << prefix << ids[i] << " [style=invis];\n";
}

// The nodes under one leaf, as the label of their box.
std::string hosts_label(const ClusterGraph& g, int first_node, int last_node, int nics) {
  std::ostringstream s;
  s << "n" << first_node;
  if (last_node > first_node) s << "-n" << last_node;
  s << "\\n" << (last_node - first_node + 1) * g.gpus_per_node() << " GPUs, " << nics << " NICs";
  return s.str();
}

void draw_per_switch(std::ostringstream& out, const ClusterGraph& g) {
  const auto& vs = g.vertices();
  // 1. Switches, one rank per tier.
  std::map<int, std::vector<int>> by_tier;
  for (size_t v = 0; v < vs.size(); ++v)
    if (vs[v].tier >= 1) by_tier[vs[v].tier].push_back(static_cast<int>(v));
  for (const auto& [tier, members] : by_tier) {
    out << "  { rank=same;";
    for (int v : members)
      out << " v" << v << " [label=\"" << vs[v].name << "\", shape=" << shape_of(vs[v].kind)
          << ", fillcolor=" << colour_of(vs[v].kind) << "];";
    out << " }\n";
    keep_in_order(out, "v", members);
  }
  // 2. One box per leaf for the nodes cabled to it; NIC links bundled.
  struct Bundle {
    int first_node = -1, last_node = -1, nics = 0, cables = 0;
    double Bps = 0;
  };
  std::map<int, Bundle> hosts;  // by leaf vertex
  std::map<std::pair<int, int>, Bundle> cables;  // switch pairs
  for (const Link& l : g.links()) {
    if (l.kind == LinkKind::kNicToLeaf) {
      Bundle& b = hosts[l.dst];
      const int node = vs[l.src].node;
      if (b.first_node < 0 || node < b.first_node) b.first_node = node;
      b.last_node = std::max(b.last_node, node);
      ++b.nics;
      b.cables += l.bonded;
      b.Bps += l.bandwidth_Bps;
    } else if (vs[l.src].tier >= 1) {
      Bundle& b = cables[{l.src, l.dst}];
      ++b.cables;
      b.Bps += l.bandwidth_Bps;
    }
  }
  out << "  { rank=same;";
  std::vector<int> leaves;
  for (const auto& [leaf, b] : hosts) {
    out << " h" << leaf << " [label=\"" << hosts_label(g, b.first_node, b.last_node, b.nics)
        << "\", shape=box, fillcolor=palegreen];";
    leaves.push_back(leaf);
  }
  out << " }\n";
  keep_in_order(out, "h", leaves);
  for (const auto& [leaf, b] : hosts)
    out << "  h" << leaf << " -- v" << leaf << " [label=\"" << b.cables << " x "
        << bw(b.Bps / b.cables) << "\"];\n";
  // Switch-to-switch bundles: when every bundle between two tiers is alike (the regular
  // designs), say it once in a legend instead of on every line.
  auto bundle_label = [](const Bundle& b) {
    return (b.cables > 1 ? std::to_string(b.cables) + " x " : "") + bw(b.Bps / b.cables);
  };
  std::map<int, std::set<std::string>> labels_by_tier;  // by the lower end's tier
  for (const auto& [ends, b] : cables) labels_by_tier[vs[ends.first].tier].insert(bundle_label(b));
  std::string legend;
  for (const auto& [tier, labels] : labels_by_tier)
    if (labels.size() == 1)
      legend += std::string(tier == 1 ? "leaf-spine" : "spine-core") + ": " + *labels.begin() +
                " per line\\l";
  for (const auto& [ends, b] : cables) {
    out << "  v" << ends.first << " -- v" << ends.second;
    if (labels_by_tier[vs[ends.first].tier].size() > 1) out << " [label=\"" << bundle_label(b) << "\"]";
    out << ";\n";
  }
  if (!legend.empty())
    out << "  legend [shape=note, fillcolor=white, label=\"" << legend << "\"];\n";
}

void draw_per_tier(std::ostringstream& out, const ClusterGraph& g) {
  const FabricDesign& d = g.design();
  const PlaneDesign& p = d.plane;
  const char* names[] = {"", "leaves", "spines", "cores"};
  const int counts[] = {0, p.leaves, p.spines(), p.cores()};
  const char* colours[] = {"", "lightblue", "lightsalmon", "plum"};
  out << "  hosts [label=\"" << g.node_count() << " nodes\\n" << g.gpu_count() << " GPUs, "
      << g.node_count() * g.nics_per_node() << " NICs\", shape=box, fillcolor=palegreen];\n";
  for (int plane = 0; plane < d.planes; ++plane) {
    for (int t = 1; t <= p.tiers; ++t)
      out << "  p" << plane << "t" << t << " [label=\"plane " << plane << "\\n" << counts[t]
          << " " << names[t] << " x " << d.radix << " ports"
          << (t <= 2 && p.tiers == 3 ? " in " + std::to_string(p.pods) + " pods" : "")
          << "\", shape=box3d, fillcolor=" << colours[t] << "];\n";
    const long long nic_cables = static_cast<long long>(g.node_count()) * p.rails.size() *
                                 g.cluster().node.links_per_nic;
    out << "  hosts -- p" << plane << "t1 [label=\"" << nic_cables << " x " << bw(d.nic_link_Bps)
        << "\"];\n";
    if (p.tiers >= 2)
      out << "  p" << plane << "t1 -- p" << plane << "t2 [label=\""
          << static_cast<long long>(p.leaves) * p.uplinks_per_leaf << " x " << bw(d.port_Bps)
          << "\"];\n";
    if (p.tiers >= 3)
      out << "  p" << plane << "t2 -- p" << plane << "t3 [label=\""
          << static_cast<long long>(p.spines()) * p.uplinks_per_spine << " x " << bw(d.port_Bps)
          << "\"];\n";
  }
}

}  // namespace

std::string to_dot(const ClusterGraph& graph, DotDetail detail) {
  std::ostringstream out;
  header(out, graph);
  const int switches = graph.plane_count() * graph.design().plane.switches();
  if (detail == DotDetail::kFull || graph.plane_count() == 0)  // a lone node: draw it whole
    draw_full(out, graph);
  else if (switches <= kMaxDrawnSwitches)
    draw_per_switch(out, graph);
  else
    draw_per_tier(out, graph);
  out << "}\n";
  return out.str();
}

}  // namespace clustersim::topology
