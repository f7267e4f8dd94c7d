// One optimizer step of a training job, simulated: the per-rank-class op graph (forward and
// backward per layer group and micro-batch, TP collectives inside each layer group, CP's ring
// exchange beside attention, PP sends under GPipe / 1F1B / interleaved, DP gradient buckets and
// ZeRO gathers on their own stream, the optimizer) runs on SimGrid with compute as work on the
// stages' GPUs and every transfer as flows over those GPUs' links, so overlap and contention
// between dimensions are simulated, not assumed. Units: seconds, bytes, FLOP/s.
//
// Speed through symmetry (16,384 GPUs in seconds):
//  1. Rank classes. Every data-parallel replica, TP rank and CP rank runs the same schedule, so
//     one pipeline is simulated: one GPU per stage, the stage's representative (tp = cp = dp =
//     0). Its transfers are the flows that enter or leave that GPU, on the links it owns (its
//     NVLink port, its PCIe path, its NIC's cable): there a TP all-gather and a DP reduce-
//     scatter share NVLink, DP and PP traffic share the NIC.
//  2. Patterns. What the rest of the cluster does at the same time only shows in the fabric,
//     and is the same every time a collective recurs: each distinct collective (dimension, op,
//     size, group) is simulated once on the whole fabric with every sibling group that runs it
//     concurrently (all DP groups of a stage, every pipeline's stage-boundary sends at once) and
//     any interference; its simulated time caps the representative's flows in the step graph.
//  3. Layer groups: when the graph would exceed StepSimOptions::max_tasks, consecutive layers
//     are simulated as one compute and one TP transfer (their sums).
// The analytic step model supplies the per-micro-batch compute and the list of collectives
// (models::predict_step), so both engines share every constant; the result is the analytic
// model's StepResult with the simulated times, plus what only the simulation knows.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "sim/collective_sim.h"
#include "sim/interference.h"

namespace clustersim::sim {

struct StepSimOptions {
  SimParams sim;
  // Other traffic on the fabric; none given (any() false) means the scenario's `interference:`.
  Interference interference;
  // false: the interference's nodes are placed (the enlarged fabric, our nodes where they sit
  // beside the neighbour's) but nothing of it sends: the job alone on the shared cluster, the
  // baseline against which the interference's slowdown is measured (plan reports it).
  bool interference_traffic = true;
  // How the fabric's graph is built: another ECMP hash seed (BuildOptions::ecmp_seed) draws other
  // collisions for the same flows (compare shows how much a step owes to one draw).
  topology::BuildOptions graph;
  bool trace = false;      // keep every op's timing for a Chrome trace (chrome_trace.h)
  int max_tasks = 20000;   // bound on the op graph; layers are grouped above it
  // Told each simulated collective pattern and the step graph as they finish (their
  // PatternReport line, or the graph's size), with the wall time since the start: a long
  // prediction says what it is doing (plan prints it on stderr past a few seconds).
  std::function<void(const std::string& what, double elapsed_s)> progress;
};

// One op of the simulated step, for the timeline.
struct TraceEvent {
  std::string name;      // "F mb3 c1 L4-7", "TP all_gather x4", "DP reduce_scatter 2/6", ...
  std::string category;  // "compute", "tp", "pp", "dp", "cp", "optimizer"
  int stage = 0;         // pipeline stage (one row group per stage)
  int lane = 0;          // 0 compute stream, 1 TP, 2 PP, 3 DP stream, 4 CP
  double start_s = 0;
  double duration_s = 0;
};

// One collective pattern as simulated on the whole fabric.
struct PatternReport {
  models::ParallelDim dim = models::ParallelDim::kTp;
  std::string what;  // "dp reduce_scatter 1.2 GiB on 128 GPUs (8 groups)"
  double uncontended_s = 0;  // the analytic bandwidth term
  double simulated_s = 0;    // the simulated bandwidth term with its siblings and interference
  double slowdown() const { return uncontended_s > 0 ? simulated_s / uncontended_s : 1; }
  size_t flows = 0;
  double wall_s = 0;  // host time its simulation took
  std::vector<TierLoad> loads;
};

struct DesStepResult {
  models::StepResult step;      // the analytic model's struct, times from the simulation
  models::StepResult analytic;  // the formula's answer, for comparison
  int critical_stage = 0;       // the stage whose optimizer ends last (its breakdown is reported)
  int layers_per_task = 1;      // layer grouping used
  std::vector<PatternReport> patterns;
  std::vector<TraceEvent> trace;  // empty unless StepSimOptions::trace
  size_t tasks = 0;
  size_t flows = 0;   // in the step graph and the pattern simulations together
  double wall_s = 0;  // host time of the whole prediction
};

// Predicts one step. Fails where the analytic model does (no NICs for a multi-node group, no
// micro-batch), when the cluster with the interference's extra nodes cannot be built, or when
// SimGrid fails.
models::Result<DesStepResult> simulate_step(const models::Scenario& scenario,
                                            const models::StepParams& params,
                                            const StepSimOptions& options = {});

// The step time under `draws` other draws of ECMP's hash (options.graph.ecmp_seed + 1, + 2, ...),
// in draw order: which links the flows collide on is the luck of one hash. Empty where the
// fabric does not hash (routing other than ECMP, or one node); a draw that fails to simulate is
// left out.
std::vector<double> other_hash_draw_steps_s(const models::Scenario& scenario,
                                            const models::StepParams& params, int draws,
                                            StepSimOptions options = {});
// The other draws plan and compare simulate beside the default one (each a whole step).
inline constexpr int kOtherHashDraws = 2;

}  // namespace clustersim::sim
