// The discrete-event engine at scale (issues 4 and 11). Targets on the 2-core machine: one
// training-step prediction of a Llama-3-405B-like job (TP 8, PP 16 interleaved, RoCE 400G on a
// three-tier ECMP fat-tree of 128-port switches, as Llama Team 2024 sec. 3.3, or on a
// rail-optimized fabric) in under 1 s at 1,024 GPUs, 2 s at 16,384, 5 s at 65,536 and 10 s and
// 4 GB at 131,072, growing no faster than the GPU count; and one 2 GiB all_reduce over every
// GPU with the contention of its ECMP fabric.
// Peak RSS: run one argument at a time under /usr/bin/time -v, e.g.
//   /usr/bin/time -v bench_sim --benchmark_filter='BM_StepPrediction/16384'
// Each iteration builds everything from the scenario (graph, patterns, op graph, SimGrid run).
#include <benchmark/benchmark.h>

#include <string>

#include "models/scenario.h"
#include "models/step_model.h"
#include "models/units.h"
#include "sim/collective_sim.h"
#include "sim/step_sim.h"

namespace clustersim::sim {
namespace {

// scenarios/llama3-405b-16k-h100.yaml at `gpus` GPUs: DP shrinks with the cluster, each
// pipeline keeps its 16 micro-batches per step (global batch 16 x dp).
std::string llama3_405b(int gpus, const std::string& topology = "fat-tree") {
  const int nodes = gpus / 8;
  const int dp = gpus / (8 * 16);
  return "name: llama3-405b-like-" + std::to_string(gpus) + "\n"
         "cluster:\n"
         "  nodes: " + std::to_string(nodes) + "\n"
         "  node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, nics_per_node: 8,"
         " nic: roce-400, links_per_nic: 1}\n"
         "  fabric: {topology: " + topology + ", tiers: 3, switch: spectrum-4-sn5600-2x400g,"
         " oversubscription: 1.0, routing: ecmp}\n"
         "workload:\n"
         "  model: llama3-405b\n"
         "  seq_len: 8192\n"
         "  global_batch: " + std::to_string(16 * dp) + "\n"
         "  micro_batch: 1\n"
         "  precision: bf16\n"
         "  parallelism: {tp: 8, pp: 16, dp: " + std::to_string(dp) + ", cp: 1, sp: true,"
         " zero: 1, recompute: none, pp_schedule: interleaved, virtual_stages: 2}\n";
}

// Fails the benchmark (false) when the scenario does not load.
bool load(int gpus, benchmark::State& state, models::Scenario* out,
          const std::string& topology = "fat-tree") {
  auto s = models::load_scenario_text(llama3_405b(gpus, topology), "<bench>");
  if (!s) {
    state.SkipWithError(s.message().c_str());
    return false;
  }
  *out = std::move(s).value();
  return true;
}

void step_prediction(benchmark::State& state, const std::string& topology) {
  const int gpus = static_cast<int>(state.range(0));
  models::Scenario scenario;
  if (!load(gpus, state, &scenario, topology)) return;
  const models::StepParams params = models::default_step_params(scenario.cluster);
  DesStepResult last;
  for (auto _ : state) {
    auto r = simulate_step(scenario, params);
    if (!r) {
      state.SkipWithError(r.message().c_str());
      return;
    }
    last = std::move(r).value();
  }
  state.counters["step_s"] = last.step.step_time_s;
  state.counters["analytic_step_s"] = last.analytic.step_time_s;
  state.counters["mfu"] = last.step.mfu;
  state.counters["tasks"] = static_cast<double>(last.tasks);
  state.counters["flows"] = static_cast<double>(last.flows);
}
void BM_StepPrediction(benchmark::State& state) { step_prediction(state, "fat-tree"); }
void BM_StepPredictionRail(benchmark::State& state) { step_prediction(state, "rail-optimized"); }
BENCHMARK(BM_StepPrediction)->RangeMultiplier(4)->Range(1024, 65536)->Arg(131072)
    ->ArgName("gpus")->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_StepPredictionRail)->Arg(16384)->Arg(65536)->Arg(131072)->ArgName("gpus")
    ->Unit(benchmark::kMillisecond)->Iterations(1);

// One communicator over every GPU (nccl-tests' layout), NCCL's choice of algorithm; the NVLink
// segments are simulated on one node (LoweringOptions::sample_intra_node), every NIC and cable
// of the fabric on all of them.
void BM_AllReduce2GiB(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  models::Scenario scenario;
  if (!load(gpus, state, &scenario)) return;
  SimParams params;
  params.lowering.sample_intra_node = true;
  DesCollective last;
  for (auto _ : state) {
    auto graph = topology::ClusterGraph::build(scenario.cluster);
    if (!graph) {
      state.SkipWithError(graph.message().c_str());
      return;
    }
    auto r = simulate_collective(*graph, {models::CollectiveOp::kAllReduce, 2 * models::kGiB},
                                 gpus, params);
    if (!r) {
      state.SkipWithError(r.message().c_str());
      return;
    }
    last = std::move(r).value();
  }
  state.counters["time_ms"] = last.time_s * 1e3;
  state.counters["analytic_ms"] = last.analytic.time_s * 1e3;
  state.counters["busbw_GBps"] = last.busbw_Bps / 1e9;
  state.counters["flows"] = static_cast<double>(last.flows);
  state.SetLabel(std::string(models::to_string(last.analytic.algorithm)));
}
BENCHMARK(BM_AllReduce2GiB)->Arg(1024)->Arg(4096)->Arg(16384)->ArgName("gpus")
    ->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace clustersim::sim
