// The parallelism search (target: 10,000 configurations per minute with the analytic model) on
// Llama 3 70B over 64 H100 (scenarios/llama3-70b-64xh100-ndr-rail.yaml) and Llama 3 405B over
// 16,384 H100 (scenarios/llama3-405b-16k-h100.yaml), on 1 and 2 threads. Each iteration is a whole
// search_layouts: enumeration with the loader's rules, the memory filter, predict_step for every
// layout that fits, the ranking. Counters per minute of wall time:
//   layouts_per_min    configurations enumerated and judged (memory, then the step if it fits)
//   predicted_per_min  configurations whose step was predicted (those that fit)
// BM_PredictStep times one predict_step of the scenario's own layout (the unit of work), and
// BM_Enumerate the enumeration alone. Run: bench_search --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "models/parallelism_search.h"
#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::models {
namespace {

const char* const kScenarios[] = {"llama3-70b-64xh100-ndr-rail.yaml", "llama3-405b-16k-h100.yaml"};

// scenarios/ beside this file's tests/bench/ (the bench has no source-dir definition of its own).
bool load(int index, benchmark::State& state, Scenario* out) {
  const std::filesystem::path dir =
      std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "scenarios";
  auto s = load_scenario_file((dir / kScenarios[index]).string());
  if (!s) {
    state.SkipWithError(s.message().c_str());
    return false;
  }
  *out = std::move(s).value();
  state.SetLabel(kScenarios[index]);
  return true;
}

void BM_Search(benchmark::State& state) {
  Scenario scenario;
  if (!load(static_cast<int>(state.range(0)), state, &scenario)) return;
  const StepParams params = default_step_params(scenario.cluster);
  SearchOptions options;
  options.threads = static_cast<int>(state.range(1));
  options.top = 10;
  SearchResult last;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    auto r = search_layouts(scenario, params, options);
    if (!r) {
      state.SkipWithError(r.message().c_str());
      return;
    }
    last = std::move(r).value();
  }
  // Wall time over all iterations (the threads' CPU time would overstate a parallel run).
  const double minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  const double iterations = static_cast<double>(state.iterations());
  state.counters["layouts_per_min"] = last.layouts * iterations / minutes;
  state.counters["predicted_per_min"] = last.evaluated * iterations / minutes;
  state.counters["layouts"] = static_cast<double>(last.layouts);
  state.counters["fitting"] = static_cast<double>(last.fitting);
  state.counters["best_step_s"] = last.top.empty() ? 0 : last.top.front().step.step_time_s;
}
BENCHMARK(BM_Search)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->ArgNames({"scenario", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_PredictStep(benchmark::State& state) {
  Scenario scenario;
  if (!load(static_cast<int>(state.range(0)), state, &scenario)) return;
  const StepParams params = default_step_params(scenario.cluster);
  for (auto _ : state) {
    auto r = predict_step(scenario, params);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_PredictStep)->Arg(0)->Arg(1)->ArgName("scenario")->Unit(benchmark::kMicrosecond);

void BM_Enumerate(benchmark::State& state) {
  Scenario scenario;
  if (!load(static_cast<int>(state.range(0)), state, &scenario)) return;
  std::size_t layouts = 0;
  for (auto _ : state) {
    const auto l = enumerate_layouts(scenario);
    layouts = l.size();
    benchmark::DoNotOptimize(l.data());
  }
  state.counters["layouts"] = static_cast<double>(layouts);
}
BENCHMARK(BM_Enumerate)->Arg(0)->Arg(1)->ArgName("scenario")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace clustersim::models
