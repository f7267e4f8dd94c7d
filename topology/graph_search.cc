#include "topology/graph_search.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <algorithm>
#include <numeric>

namespace clustersim::topology {
namespace {

// One Boost vertex per graph vertex, one edge per Link (parallel cables stay parallel edges).
using UndirectedGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;

bool in_scope(const Vertex& v, SearchScope scope) {
  if (scope == SearchScope::kWholeGraph) return true;
  return v.kind == VertexKind::kNic || v.tier >= 1;
}

UndirectedGraph to_boost(const ClusterGraph& graph, SearchScope scope) {
  const auto& vs = graph.vertices();
  UndirectedGraph g(vs.size());
  for (const Link& l : graph.links())
    if (in_scope(vs[l.src], scope) && in_scope(vs[l.dst], scope)) boost::add_edge(l.src, l.dst, g);
  return g;
}

std::vector<int> bfs(const UndirectedGraph& g, int source) {
  std::vector<int> dist(boost::num_vertices(g), -1);
  dist[source] = 0;
  boost::breadth_first_search(
      g, boost::vertex(source, g),
      boost::visitor(boost::make_bfs_visitor(
          boost::record_distances(dist.data(), boost::on_tree_edge()))));
  return dist;
}

}  // namespace

std::vector<int> hop_distances(const ClusterGraph& graph, int source, SearchScope scope) {
  CS_ASSERT(source >= 0 && source < static_cast<int>(graph.vertices().size()), "bad vertex");
  return bfs(to_boost(graph, scope), source);
}

std::vector<std::vector<int>> hop_distances(const ClusterGraph& graph,
                                            const std::vector<int>& sources, SearchScope scope) {
  const UndirectedGraph g = to_boost(graph, scope);
  std::vector<std::vector<int>> out;
  out.reserve(sources.size());
  for (int s : sources) {
    CS_ASSERT(s >= 0 && s < static_cast<int>(graph.vertices().size()), "bad vertex");
    out.push_back(bfs(g, s));
  }
  return out;
}

double shortest_path_count(const ClusterGraph& graph, int source, int target, SearchScope scope) {
  const UndirectedGraph g = to_boost(graph, scope);
  const std::vector<int> dist = bfs(g, source);
  if (dist[target] < 0) return 0;
  // Paths into v = sum over edges (u, v) with dist[u] = dist[v] - 1 of paths into u, taken in
  // order of distance; parallel edges count once each.
  std::vector<int> order(dist.size());
  std::iota(order.begin(), order.end(), 0);
  std::erase_if(order, [&](int v) { return dist[v] < 0 || dist[v] > dist[target]; });
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dist[a] < dist[b]; });
  std::vector<double> paths(dist.size(), 0);
  paths[source] = 1;
  for (int v : order) {
    if (v == source) continue;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const int u = static_cast<int>(boost::target(*e, g));
      if (dist[u] == dist[v] - 1) paths[v] += paths[u];
    }
  }
  return paths[target];
}

}  // namespace clustersim::topology
