// One NCCL collective simulated on the cluster's fabric: NCCL's choice of algorithm and protocol
// and the latency term come from the analytic model (the same tuner decides in reality); the
// bandwidth term is the simulated time of the collective's flows (collective_lowering.h) with
// every sibling group that runs at the same time and any background traffic sharing the links.
// Units: bytes, seconds, bytes per second. Sequential (SimGrid, see sim_engine.h).
#pragma once

#include <string>
#include <vector>

#include "models/collective_model.h"
#include "models/result.h"
#include "sim/collective_lowering.h"
#include "sim/fabric_model.h"
#include "sim/sim_engine.h"
#include "sim/transport_model.h"
#include "topology/cluster_graph.h"

namespace clustersim::sim {

// Every knob of the simulator, each with its default and source in its own header.
struct SimParams {
  models::CollectiveParams collective;  // shared with the analytic model
  TransportParams transport;
  LoweringOptions lowering;
  EngineOptions engine;
};

// Phases of flows run one after the other (each phase's flows all together) beside
// `background`'s endless flows: how long they took and the host time the answer cost. Each
// phase's makespan comes from the first max-min level where every flow of every phase carries
// its phase's bytes (fair_share.h: exact), else the simulator runs them all (the phases are
// lent to its graph and handed back unchanged).
struct PhasesRun {
  double makespan_s = 0;
  double wall_s = 0;
};
models::Result<PhasesRun> run_phases(std::vector<std::vector<SimFlow>>& phases,
                                     const std::vector<SimFlow>& background,
                                     const ResourceTable& table, const EngineOptions& engine);

// How loaded one tier of the fabric was during a simulated interval.
struct TierLoad {
  ResourceTier tier = ResourceTier::kNic;
  int resources = 0;         // resources of this tier that carried traffic
  double mean_utilisation = 0;  // bytes / (capacity x interval), averaged over them
  double max_utilisation = 0;   // the busiest one
  std::string busiest;          // its name
};

// Utilisation per tier of the flows' bytes over `interval_s`, tiers in enum order, only tiers
// with traffic. A resource near 1 was saturated for the whole interval.
std::vector<TierLoad> tier_loads(const ResourceTable& table, const std::vector<const SimFlow*>& flows,
                                 double interval_s);
// The tier whose busiest link was the most utilised; nullptr when no link carried traffic.
const TierLoad* busiest_tier(const std::vector<TierLoad>& loads);

// The bandwidth term of a collective whose flows took `transfer_s` on the fabric, given the
// analytic model's latency and (uncontended) bandwidth terms. NCCL's latency term is time in
// which a collective's links are not all busy: the pipeline's fill and drain along the ring or
// tree and each step's hand-shakes. A link that collisions or other traffic overload stays busy
// through it, its flows' bytes queued behind one another, so congestion first fills that idle
// time and lengthens the collective only beyond it: the collective takes the longer of its
// uncontended time (latency + bandwidth) and its contended transfer, never latency + contended
// transfer: a collision hides in a latency-bound collective (Tolly #225112's ECMP ring on 64 H20
// "close" to planned paths at small sizes; at 64 MiB the latency is two fifths of the ring's
// time) and costs its whole fluid share in a bandwidth-bound one (docs/collectives.md).
// Uncontended (transfer_s at most the analytic bandwidth term) it returns transfer_s.
double contended_bandwidth_s(double transfer_s, double latency_s, double uncontended_bandwidth_s);

struct DesCollective {
  models::CollectiveEstimate analytic;  // NCCL's choice, the latency term and the formula's time
  double transfer_s = 0;   // simulated: from the first flow's start to the last flow's end
  // The bandwidth term: transfer_s, less what of the latency term its congestion fills
  // (contended_bandwidth_s); transfer_s itself when the flows met no contention.
  double bandwidth_s = 0;
  double time_s = 0;       // analytic latency + bandwidth term
  double algbw_Bps = 0;    // nccl-tests' definitions, on time_s
  double busbw_Bps = 0;
  size_t flows = 0;
  double wall_s = 0;       // host time of the simulation
  std::vector<TierLoad> loads;
};

// The collective on explicit communicators that run it at the same time (all the same size);
// `topology` is the analytic view of one of them (collective_topology / parallel_group_topology),
// which picks the algorithm and protocol unless the request fixes them. Extra flows (background
// traffic, another job) run alongside and are never waited for.
models::Result<DesCollective> simulate_collective(FabricModel& fabric,
                                                  const models::CollectiveRequest& request,
                                                  const std::vector<Communicator>& comms,
                                                  const models::CollectiveTopology& topology,
                                                  const SimParams& params,
                                                  const std::vector<SimFlow>& background = {});

// nccl-tests' layout: one communicator over the first `ranks` GPUs, alone on the cluster.
models::Result<DesCollective> simulate_collective(const topology::ClusterGraph& graph,
                                                  const models::CollectiveRequest& request,
                                                  int ranks, const SimParams& params);

}  // namespace clustersim::sim
