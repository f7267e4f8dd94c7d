// Building and routing large fabrics. Target (issue 3): a 16,384-GPU three-tier fat-tree built
// with the routes of every ring neighbour in under 1 s and under 1 GB (peak RSS: run under
// /usr/bin/time -v). Also the node-level max-flow bisection and the full metrics at that size.
//   bench_topology --benchmark_filter=BM_BuildAndRouteRing/16384
#include <benchmark/benchmark.h>

#include "tests/topology/topology_fixtures.h"
#include "topology/cluster_graph.h"
#include "topology/fabric_metrics.h"

namespace clustersim::topology {
namespace {

// HGX H100 nodes, 8 NDR NICs each, three-tier fat-tree of 64-port switches: at 16,384 GPUs
// 512 leaves, 512 spines in 16 pods, 256 cores (NVIDIA DGX SuperPOD B200 RA, 64 SU row).
models::ClusterConfig fat_tree(int gpus, models::Routing routing) {
  testing::ClusterShape s;
  s.nodes = gpus / 8;
  s.tiers = 3;
  s.routing = routing;
  return testing::make_cluster(s);
}

// Builds the graph and routes every GPU to its ring successor (rank r -> r + 1 mod N).
void BM_BuildAndRouteRing(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const auto routing = static_cast<models::Routing>(state.range(1));
  const models::ClusterConfig cluster = fat_tree(gpus, routing);
  std::size_t paths = 0, hops = 0, links = 0;
  for (auto _ : state) {
    auto g = ClusterGraph::build(cluster);
    if (!g.ok()) {
      state.SkipWithError(g.message().c_str());
      return;
    }
    paths = hops = 0;
    for (int r = 0; r < gpus; ++r) {
      const std::vector<Path> p = g->routes(r, (r + 1) % gpus, static_cast<std::uint64_t>(r));
      paths += p.size();
      for (const Path& path : p) hops += path.hops.size();
    }
    links = g->links().size();
    benchmark::DoNotOptimize(paths);
  }
  state.counters["links"] = static_cast<double>(links);
  state.counters["paths"] = static_cast<double>(paths);
  state.counters["hops"] = static_cast<double>(hops);
}
BENCHMARK(BM_BuildAndRouteRing)
    ->ArgsProduct({{1024, 4096, 16384},
                   {static_cast<int>(models::Routing::kStatic),
                    static_cast<int>(models::Routing::kEcmp),
                    static_cast<int>(models::Routing::kAdaptive)}})
    ->ArgNames({"gpus", "routing"})
    ->Unit(benchmark::kMillisecond);

// Adaptive routing's compact form: per-link shares instead of every path.
void BM_RingLinkLoadsAdaptive(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  auto g = ClusterGraph::build(fat_tree(gpus, models::Routing::kAdaptive));
  std::size_t loads = 0;
  for (auto _ : state) {
    loads = 0;
    for (int r = 0; r < gpus; ++r) loads += g->link_loads(r, (r + 1) % gpus).size();
    benchmark::DoNotOptimize(loads);
  }
  state.counters["loads"] = static_cast<double>(loads);
}
BENCHMARK(BM_RingLinkLoadsAdaptive)->Arg(16384)->Unit(benchmark::kMillisecond);

// The node-level max-flow of one cut (2,048 node vertices + 1,280 switches at 16,384 GPUs).
void BM_BisectionMaxFlow(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  auto g = ClusterGraph::build(fat_tree(gpus, models::Routing::kStatic));
  std::vector<bool> half(static_cast<size_t>(g->node_count()));
  for (int n = 0; n < g->node_count(); ++n) half[n] = n < g->node_count() / 2;
  double flow = 0;
  for (auto _ : state) {
    flow = node_cut_max_flow_Bps(g.value(), half);
    benchmark::DoNotOptimize(flow);
  }
  state.counters["bisection_TBps"] = flow / 1e12;
}
BENCHMARK(BM_BisectionMaxFlow)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

// Everything `clustersim topo` computes.
void BM_AllMetrics(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  auto g = ClusterGraph::build(fat_tree(gpus, models::Routing::kAdaptive));
  for (auto _ : state) benchmark::DoNotOptimize(compute_metrics(g.value()).bisection_Bps);
}
BENCHMARK(BM_AllMetrics)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustersim::topology
