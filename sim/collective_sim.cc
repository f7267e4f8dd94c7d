#include "sim/collective_sim.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>

#include "sim/fair_share.h"

namespace clustersim::sim {

const TierLoad* busiest_tier(const std::vector<TierLoad>& loads) {
  const TierLoad* top = nullptr;
  for (const TierLoad& t : loads) {
    if (t.max_utilisation > (top ? top->max_utilisation : 0)) top = &t;
  }
  return top;
}

std::vector<TierLoad> tier_loads(const ResourceTable& table, const std::vector<const SimFlow*>& flows,
                                 double interval_s) {
  // Bytes per resource in a flat array (the table's ids), then per tier in resource order.
  std::vector<double> bytes(table.resources.size(), 0);
  std::vector<char> seen(table.resources.size(), 0);
  std::vector<int> touched;
  for (const SimFlow* f : flows) {
    for (int r : f->route) {
      if (!seen[static_cast<size_t>(r)]) {
        seen[static_cast<size_t>(r)] = 1;
        touched.push_back(r);
      }
      bytes[static_cast<size_t>(r)] += f->bytes;
    }
  }
  std::sort(touched.begin(), touched.end());
  std::map<ResourceTier, TierLoad> tiers;
  for (int r : touched) {
    const NetResource& res = table.resources[static_cast<size_t>(r)];
    const double b = bytes[static_cast<size_t>(r)];
    TierLoad& t = tiers[res.tier];
    t.tier = res.tier;
    const double u = interval_s > 0 ? b / (res.capacity_Bps * interval_s) : 0;
    t.mean_utilisation += u;
    ++t.resources;
    if (u > t.max_utilisation || t.busiest.empty()) {
      t.max_utilisation = std::max(t.max_utilisation, u);
      t.busiest = res.name;
    }
  }
  std::vector<TierLoad> out;
  for (auto& [tier, t] : tiers) {
    t.mean_utilisation /= std::max(1, t.resources);
    out.push_back(t);
  }
  return out;
}

models::Result<PhasesRun> run_phases(std::vector<std::vector<SimFlow>>& phases,
                                     const std::vector<SimFlow>& background,
                                     const ResourceTable& table, const EngineOptions& engine) {
  const auto wall0 = std::chrono::steady_clock::now();
  PhasesRun out;
  bool direct = true;
  for (const auto& phase : phases) {
    const auto s = equal_flows_makespan(phase, background, table);
    if (!s) {
      direct = false;
      break;
    }
    out.makespan_s += *s;
  }
  if (direct) {
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    return out;
  }
  TaskGraph graph;
  std::vector<int> tasks;
  for (auto& phase : phases) {
    tasks.push_back(graph.add_transfer(0, std::move(phase)));
    if (tasks.size() > 1) graph.depend(tasks[tasks.size() - 2], tasks.back());
  }
  if (!background.empty()) graph.add_background(background);
  auto run = run_task_graph(graph, table, engine);
  for (size_t i = 0; i < phases.size(); ++i) phases[i] = graph.take_flows(tasks[i]);
  if (!run) return models::Error{run.message()};
  return PhasesRun{run->makespan_s, run->wall_s};
}

double contended_bandwidth_s(double transfer_s, double latency_s, double uncontended_bandwidth_s) {
  if (transfer_s <= uncontended_bandwidth_s) return transfer_s;
  return std::max(uncontended_bandwidth_s, transfer_s - std::max(0.0, latency_s));
}

models::Result<DesCollective> simulate_collective(FabricModel& fabric,
                                                  const models::CollectiveRequest& request,
                                                  const std::vector<Communicator>& comms,
                                                  const models::CollectiveTopology& topology,
                                                  const SimParams& params,
                                                  const std::vector<SimFlow>& background) {
  // 1. NCCL's choice of algorithm and protocol, and the latency term.
  auto est = models::estimate_collective(topology, request, params.collective);
  if (!est) return models::Error{est.message()};
  DesCollective out;
  out.analytic = *est;
  if (topology.ranks <= 1 || request.size_bytes <= 0) return out;

  // 2. The flows of every communicator, phase by phase.
  const CollectiveShape shape{request.op, est->algorithm, est->protocol, request.size_bytes,
                              request.dispatch};
  auto lowered = lower_collective(shape, comms, topology, fabric, params.collective, params.lowering);
  if (!lowered) return models::Error{lowered.message()};
  out.flows = lowered->flow_count();

  // 3. Phases in sequence, background traffic alongside.
  auto run = run_phases(lowered->phases, background, fabric.table(), params.engine);
  if (!run) return models::Error{run.message()};
  out.transfer_s = run->makespan_s;
  out.bandwidth_s = contended_bandwidth_s(out.transfer_s, est->latency_s, est->bandwidth_s);
  out.wall_s = run->wall_s;
  std::vector<const SimFlow*> flows;
  for (const auto& phase : lowered->phases)
    for (const SimFlow& f : phase) flows.push_back(&f);
  out.time_s = est->latency_s + out.bandwidth_s;
  if (out.time_s > 0) {
    out.algbw_Bps = request.size_bytes / out.time_s;
    out.busbw_Bps = out.algbw_Bps * models::bus_bandwidth_factor(request.op, topology.ranks);
  }
  out.loads = tier_loads(fabric.table(), flows, out.transfer_s);
  return out;
}

models::Result<DesCollective> simulate_collective(const topology::ClusterGraph& graph,
                                                  const models::CollectiveRequest& request,
                                                  int ranks, const SimParams& params) {
  auto topo = models::collective_topology(graph.cluster(), ranks);
  if (!topo) return models::Error{topo.message()};
  SimParams own = params;
  own.lowering.qps_per_connection = graph.cluster().fabric.qps_per_connection;
  FabricModel fabric(graph, own.transport, scale_up_efficiency(graph.cluster(), own.collective),
                     flows_per_nic(own.lowering));
  Communicator comm(static_cast<size_t>(ranks));
  std::iota(comm.begin(), comm.end(), 0);
  return simulate_collective(fabric, request, {comm}, *topo, own);
}

}  // namespace clustersim::sim
