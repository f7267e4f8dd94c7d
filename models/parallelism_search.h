// The best parallel layout of a scenario's training job on its cluster, and how many GPUs the job
// needs: enumerates tp x pp x dp x cp x sp x zero x recompute x micro_batch x pipeline schedule
// (with virtual stages), keeps what the scenario loader accepts (check_parallelism) and what fits
// in GPU memory, and ranks it with the analytic step model (predict_step). Units: seconds, bytes,
// tokens/s, USD. Pure and thread-safe: a search reads its arguments and returns values; with
// threads > 1 it evaluates on std::threads of its own and joins them before it returns.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"
#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::models {

// What a search varies. Every field gives its default; the loader's rules bound the rest
// (tp divides gpus_per_node and the heads, pp x virtual_stages divides the layers, ...).
struct SearchSpace {
  // micro_batch sizes tried (each must divide global_batch / dp); the scenario's own is added.
  // Larger micro-batches run GEMMs closer to peak but hold more activations and give the
  // pipeline fewer micro-batches to fill its bubble.
  std::vector<int> micro_batches = {1, 2, 4, 8};
  std::vector<int> zero_stages = {0, 1, 2, 3};  // only 0 where dp x cp == 1 (nothing to shard)
  std::vector<Recompute> recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  // sp both off and on for tp > 1 (off only when false: sp then follows the scenario for tp > 1).
  bool vary_sp = true;
  // pp > 1: 1f1b, gpipe (same bubble, more activation memory: never better, kept so that the
  // ranking shows it) and interleaved with 2..max_virtual_stages model chunks per stage.
  bool include_gpipe = true;
  int max_virtual_stages = 8;
  // Context parallelism down to this many tokens per rank (seq_len / cp). Ring attention hides
  // each K/V step behind attention over the rank's s/cp queries: compute grows as (s/cp)^2 and
  // traffic as s/cp, so short chunks expose the ring, and GEMMs of a few hundred rows run far
  // from peak. 1 lifts the bound.
  int min_tokens_per_cp_rank = 512;
};

// One candidate: the parallelism and micro-batch size the scenario would be given.
struct Layout {
  ParallelismConfig parallelism;
  int micro_batch = 1;
  bool operator==(const Layout&) const = default;  // every field, as they are added
};

// "tp 8+sp, pp 2 1f1b, dp 4, cp 1, zero 1, recompute selective, mb 1" (interleaved: "pp 4 x2
// interleaved").
std::string to_string(const Layout& layout);

// What the ranking maximises. At one GPU count and a fixed global batch all three order layouts
// alike (tokens per step are fixed, so each is a function of the step time); across GPU counts
// they differ: more GPUs raise tokens/s but lower MFU and raise the cost per token.
enum class SearchObjective {
  kTokensPerSecond,  // fastest
  kCost,             // cheapest per token: USD per million tokens (GPU-hours when unpriced)
  kMfu,              // best use of each GPU
};
std::string_view to_string(SearchObjective o);
// "tokens_per_s", "cost", "mfu"; false (and *out unchanged) for another name.
bool parse_search_objective(std::string_view name, SearchObjective* out);

// The scenario with `layout` in place of its own (nothing else changes; not re-validated).
Scenario with_layout(const Scenario& base, const Layout& layout);
Layout layout_of(const Scenario& scenario);

// The scenario on `nodes` nodes of the same kind, its own layout's data parallelism rescaled to
// the new GPU count where it divides (else left for check_parallelism to reject). Fails when
// nodes > 1 and the node has no NIC. REQUIRES: nodes >= 1.
Result<Scenario> with_nodes(const Scenario& base, int nodes);

// Every layout of base's workload on base's cluster that loading would accept, in a fixed order
// (tp, cp, pp, schedule, virtual stages, micro_batch, sp, zero, recompute ascending). Layouts
// that differ only in a setting that has no effect are listed once (zero where dp x cp == 1,
// sp where tp == 1, the schedule where pp == 1).
std::vector<Layout> enumerate_layouts(const Scenario& base, const SearchSpace& space = {});

// One evaluated layout.
struct RankedLayout {
  Layout layout;
  StepResult step;
  double gpu_hours_per_million_tokens = 0;
  double usd_per_million_tokens = 0;  // 0 when the scenario has no cost.gpu_hour
  double goodput = 1;  // useful share of paid time under failures (1 without reliability data)
  // The objective, larger is better: tokens/s, MFU, or for cost minus the GPU-hours per million
  // useful tokens (gpu_hours_per_million_tokens / goodput).
  double score = 0;
};

// The cost figures and score of one prediction of `scenario` (analytic, or a simulated step).
// REQUIRES: step.step_time_s > 0.
RankedLayout rank_step(const Scenario& scenario, const StepResult& step, SearchObjective objective);

struct SearchOptions {
  SearchSpace space;
  SearchObjective objective = SearchObjective::kTokensPerSecond;
  int top = 10;     // ranked layouts returned
  int threads = 1;  // evaluation threads; the ranking does not depend on it
  // Called now and then with (done, total, what is counted: "layouts", or "GPU counts" while
  // search_gpu_counts looks for the smallest count that fits), one call at a time, from the
  // calling thread or a worker. May be empty.
  std::function<void(std::size_t done, std::size_t total, std::string_view unit)> progress;
};

struct SearchResult {
  int gpus = 0;
  std::size_t layouts = 0;    // enumerated (all valid)
  std::size_t fitting = 0;    // of them, within GPU memory
  std::size_t evaluated = 0;  // step predicted (the fitting ones)
  std::size_t failed = 0;     // predictions that failed (first_error says why)
  std::string first_error;
  // Fitting layouts, best first: score, then less memory, then enumeration order.
  std::vector<RankedLayout> top;
  // The best fitting layout whose shape (tp, pp, dp, cp) differs from the best's: what the
  // winner's shape beats, beyond its settings (zero, recompute, sp, micro-batch, schedule).
  std::optional<RankedLayout> best_other_shape;
  // The scenario's own layout (when it passes check_parallelism and predicts): its prediction,
  // and when it fits its place in the ranking (1 = best: 1 + the enumerated layouts strictly
  // better than it); own_rank 0 when it does not fit.
  std::optional<RankedLayout> own;
  std::size_t own_rank = 0;
  // When nothing fits: the layout that needs the least memory (step not predicted: memory only).
  std::optional<Layout> closest;
  MemoryBreakdown closest_memory;
};

// Searches base's cluster as given. Fails only when base's own layout cannot be predicted for a
// reason other than memory (e.g. a multi-node group without NICs); layouts whose prediction
// fails are counted in `failed`, not returned.
Result<SearchResult> search_layouts(const Scenario& base, const StepParams& params,
                                    const SearchOptions& options);

// True when some enumerated layout fits in memory on `scenario`'s cluster (memory model only,
// no step prediction: cheap enough to scan every node count). Only full recompute (when the
// space has it) and 1F1B are tried: they hold the least activations of any setting of a shape,
// and every pp the other schedules accept 1F1B accepts, so the answer is the full space's.
bool some_layout_fits(const Scenario& scenario, const StepParams& params,
                      const SearchSpace& space = {});

// "How many GPUs for this job": the same nodes at counts from min_gpus to max_gpus.
struct GpuCountSearch {
  int gpus = 0;
  SearchResult result;
};
struct ScalingSearch {
  // The smallest whole-node GPU count in the range at which some layout fits (0: none does):
  // every count is tried (memory model only), on options.threads threads.
  int smallest_fitting_gpus = 0;
  // Searched counts: min_gpus doubling up to max_gpus, max_gpus, and the smallest fitting count.
  std::vector<GpuCountSearch> counts;
};

// REQUIRES: 0 < min_gpus <= max_gpus, both multiples of base's gpus_per_node.
Result<ScalingSearch> search_gpu_counts(const Scenario& base, const StepParams& params,
                                        int min_gpus, int max_gpus, const SearchOptions& options);

// Runs body(i, worker) for every i in [0, count) on min(threads, count) std::threads (inline when
// that is one), each thread taking the next unclaimed i; worker in [0, threads) names the thread,
// for state of its own. Returns when every body has returned. body must be safe to run
// concurrently with itself. (The search's threads; also the sweep's rows.)
void parallel_for(std::size_t count, int threads,
                  const std::function<void(std::size_t i, int worker)>& body);

}  // namespace clustersim::models
