#include "models/parallelism_search.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "models/cost_model.h"
#include "models/integer_math.h"
#include "models/pipeline_layout.h"
#include "models/transformer_model.h"

namespace clustersim::models {

std::string to_string(const Layout& layout) {
  const ParallelismConfig& p = layout.parallelism;
  std::string s =
      "tp " + std::to_string(p.tp) + (p.sp ? "+sp" : "") + ", pp " + std::to_string(p.pp);
  if (p.pp > 1) {
    s += p.pp_schedule == PipelineSchedule::kInterleaved
             ? " x" + std::to_string(p.virtual_stages) + " interleaved"
             : " " + std::string(to_string(p.pp_schedule));
  }
  return s + ", dp " + std::to_string(p.dp) + ", cp " + std::to_string(p.cp) +
         (p.ep > 1 ? ", ep " + std::to_string(p.ep) : std::string()) + ", zero " +
         std::to_string(p.zero) + ", recompute " + std::string(to_string(p.recompute)) + ", mb " +
         std::to_string(layout.micro_batch);
}

std::string_view to_string(SearchObjective o) {
  switch (o) {
    case SearchObjective::kTokensPerSecond:
      return "tokens_per_s";
    case SearchObjective::kCost:
      return "cost";
    case SearchObjective::kMfu:
      return "mfu";
  }
  return "?";
}

bool parse_search_objective(std::string_view name, SearchObjective* out) {
  for (auto o :
       {SearchObjective::kTokensPerSecond, SearchObjective::kCost, SearchObjective::kMfu}) {
    if (name == to_string(o)) {
      *out = o;
      return true;
    }
  }
  return false;
}

Scenario with_layout(const Scenario& base, const Layout& layout) {
  Scenario s = base;
  s.workload.parallelism = layout.parallelism;
  s.workload.micro_batch = layout.micro_batch;
  return s;
}

Layout layout_of(const Scenario& scenario) {
  return {scenario.workload.parallelism, scenario.workload.micro_batch};
}

Result<Scenario> with_nodes(const Scenario& base, int nodes) {
  CS_ASSERT(nodes >= 1, "a cluster has nodes");
  const NodeConfig& n = base.cluster.node;
  if (nodes > 1 && (n.nics_per_node == 0 || n.nic.id.empty())) {
    return Error{base.where("cluster.node") + ": " + std::to_string(nodes) +
                 " nodes need NICs, and this node has none (give cluster.node.nic and "
                 "nics_per_node)"};
  }
  Scenario s = base;
  s.cluster.nodes = nodes;
  ParallelismConfig& p = s.workload.parallelism;
  const int model_parallel = p.tp * p.pp * p.cp;
  if (s.cluster.total_gpus() % model_parallel == 0) p.dp = s.cluster.total_gpus() / model_parallel;
  return s;
}

namespace {

// Calls visit(layout) for every accepted layout, in enumeration order, until visit returns
// false. Validity is checked once per shape (zero and recompute are not part of the rules).
template <class Visit>
void for_each_layout(const Scenario& base, const SearchSpace& space, Visit&& visit) {
  const int gpus = base.cluster.total_gpus();
  const WorkloadConfig& w = base.workload;
  std::vector<int> micro_batches = space.micro_batches;
  micro_batches.push_back(w.micro_batch);
  std::sort(micro_batches.begin(), micro_batches.end());
  micro_batches.erase(std::unique(micro_batches.begin(), micro_batches.end()), micro_batches.end());
  struct Schedule {
    PipelineSchedule kind;
    int virtual_stages;
  };
  Scenario probe = base;  // the shape under test; check_parallelism cites its keys
  for (int tp : divisors(base.cluster.node.gpus_per_node)) {  // divides gpus too
    const int rest = gpus / tp;
    for (int cp : divisors(rest)) {
      if (cp > 1 && w.seq_len / cp < space.min_tokens_per_cp_rank) continue;
      for (int pp : divisors(rest / cp)) {
        const int dp = rest / cp / pp;
        std::vector<Schedule> schedules = {{PipelineSchedule::k1F1B, 1}};
        if (pp > 1) {
          if (space.include_gpipe) schedules.push_back({PipelineSchedule::kGpipe, 1});
          for (int v = 2; v <= space.max_virtual_stages; ++v) {
            schedules.push_back({PipelineSchedule::kInterleaved, v});
          }
        }
        std::vector<int> zero_stages = space.zero_stages;
        if (dp * cp == 1) zero_stages = {0};
        std::vector<bool> sp_options = {false};
        if (tp > 1)
          sp_options =
              space.vary_sp ? std::vector<bool>{false, true} : std::vector<bool>{w.parallelism.sp};
        for (const Schedule& sched : schedules) {
          for (int mb : micro_batches) {
            for (bool sp : sp_options) {
              // Expert parallelism (MoE models): every power of two that divides the experts
              // and the stage's tp x cp x dp GPUs; 1 for a dense model.
              std::vector<int> eps = {1};
              if (w.model.moe.enabled()) {
                for (int ep = 2; ep <= w.model.moe.experts && ep <= tp * cp * dp; ep *= 2) {
                  if (w.model.moe.experts % ep == 0 && (tp * cp * dp) % ep == 0) eps.push_back(ep);
                }
              }
              for (int ep : eps) {
                ParallelismConfig& p = probe.workload.parallelism;
                p = ParallelismConfig{};
                p.tp = tp;
                p.pp = pp;
                p.dp = dp;
                p.cp = cp;
                p.ep = ep;
                p.sp = sp;
                p.pp_schedule = sched.kind;
                p.virtual_stages = sched.virtual_stages;
                probe.workload.micro_batch = mb;
                // A model whose layers split over no pipeline of pp stages (DeepSeek-V3's 61)
                // gets Megatron-Core's layout string with the remainder on the first chunks.
                const int layers = w.model.layers, chunks = pp * sched.virtual_stages;
                if (pp > 1 && layers % pp != 0 && (layers + 2) % pp != 0 && chunks <= layers) {
                  const std::string text =
                      balanced_pipeline_layout(layers, chunks, w.model.mtp_layers);
                  std::string why;
                  const bool parsed = parse_pipeline_layout(text, &p.layout, &why);
                  CS_ASSERT(parsed, why.c_str());
                }
                if (!check_parallelism(probe).ok()) continue;
                for (int zero : zero_stages) {
                  for (Recompute rc : space.recompute) {
                    p.zero = zero;
                    p.recompute = rc;
                    if (!visit(layout_of(probe))) return;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

bool fits_in_memory(const WorkloadConfig& w, const GpuSpec& gpu, const MemoryParams& params,
                    double* bytes) {
  *bytes = memory_per_gpu(w, params).total();
  return *bytes <= gpu.hbm_bytes;  // predict_step's criterion (StepResult::fits)
}

// The objective (larger is better) and the cost figures of one prediction.
void score(const Scenario& s, const StepResult& step, SearchObjective objective,
           RankedLayout* out) {
  CS_ASSERT(step.step_time_s > 0, "a step takes time");
  const RunCost cost = estimate_run_cost(s, step);
  const double million_tokens = step.tokens_per_step / 1e6;
  out->gpu_hours_per_million_tokens = cost.gpu_hours_per_step / million_tokens;
  out->usd_per_million_tokens = cost.priced ? cost.usd_per_million_tokens : 0;
  out->goodput = cost.goodput;
  switch (objective) {
    case SearchObjective::kTokensPerSecond:
      out->score = step.tokens_per_s;
      break;
    case SearchObjective::kMfu:
      out->score = step.mfu;
      break;
    case SearchObjective::kCost:
      // Failures cost the work lost since the last checkpoint and the restart: per useful
      // token the paid GPU-hours grow as 1 / goodput (cost_model.h).
      out->score = cost.goodput > 0 ? -out->gpu_hours_per_million_tokens / cost.goodput : -HUGE_VAL;
      break;
  }
}

// What the ranking needs of one layout.
struct Record {
  double score = 0;
  double memory_bytes = 0;
  bool fits = false;
  bool ok = false;  // predicted
};

// Best first: score, then less memory, then enumeration order (deterministic for any threads).
struct Better {
  const std::vector<Record>* records;
  bool operator()(std::size_t a, std::size_t b) const {
    const Record& x = (*records)[a];
    const Record& y = (*records)[b];
    if (x.score != y.score) return x.score > y.score;
    if (x.memory_bytes != y.memory_bytes) return x.memory_bytes < y.memory_bytes;
    return a < b;
  }
};

Result<RankedLayout> evaluate(const Scenario& s, const StepParams& params,
                              SearchObjective objective) {
  auto step = predict_step(s, params);
  if (!step) return Error{step.message()};
  return rank_step(s, *step, objective);
}

bool same_shape(const Layout& a, const Layout& b) {
  const ParallelismConfig& p = a.parallelism;
  const ParallelismConfig& q = b.parallelism;
  return p.tp == q.tp && p.pp == q.pp && p.dp == q.dp && p.cp == q.cp;
}

Status check_options(const SearchOptions& o) {
  if (o.top < 1) return Error{"top: must be at least 1, got " + std::to_string(o.top)};
  if (o.threads < 1) return Error{"threads: must be at least 1, got " + std::to_string(o.threads)};
  const SearchSpace& s = o.space;
  for (int mb : s.micro_batches) {
    if (mb < 1) return Error{"micro_batches: must be at least 1, got " + std::to_string(mb)};
  }
  for (int z : s.zero_stages) {
    if (z < 0 || z > 3) return Error{"zero_stages: 0 to 3, got " + std::to_string(z)};
  }
  if (s.zero_stages.empty() || s.recompute.empty()) {
    return Error{"zero_stages and recompute: give at least one value each"};
  }
  if (s.max_virtual_stages < 1 || s.min_tokens_per_cp_rank < 1) {
    return Error{"max_virtual_stages and min_tokens_per_cp_rank: must be at least 1"};
  }
  return Status::Ok();
}

}  // namespace

RankedLayout rank_step(const Scenario& scenario, const StepResult& step,
                       SearchObjective objective) {
  RankedLayout r;
  r.layout = layout_of(scenario);
  r.step = step;
  score(scenario, step, objective, &r);
  return r;
}

std::vector<Layout> enumerate_layouts(const Scenario& base, const SearchSpace& space) {
  std::vector<Layout> out;
  for_each_layout(base, space, [&](const Layout& l) {
    out.push_back(l);
    return true;
  });
  return out;
}

bool some_layout_fits(const Scenario& scenario, const StepParams& params,
                      const SearchSpace& space) {
  SearchSpace least = space;
  const auto& rc = space.recompute;
  if (std::find(rc.begin(), rc.end(), Recompute::kFull) != rc.end())
    least.recompute = {Recompute::kFull};
  least.include_gpipe = false;
  least.max_virtual_stages = 1;
  bool found = false;
  Scenario probe = scenario;
  for_each_layout(scenario, least, [&](const Layout& l) {
    probe.workload.parallelism = l.parallelism;
    probe.workload.micro_batch = l.micro_batch;
    double bytes = 0;
    found = fits_in_memory(probe.workload, scenario.cluster.node.gpu, params.memory, &bytes);
    return !found;
  });
  return found;
}

Result<SearchResult> search_layouts(const Scenario& base, const StepParams& params,
                                    const SearchOptions& options) {
  if (Status st = check_options(options); !st.ok()) return Error{st.message()};
  SearchResult result;
  result.gpus = base.cluster.total_gpus();
  const std::vector<Layout> layouts = enumerate_layouts(base, options.space);
  result.layouts = layouts.size();
  std::vector<Record> records(layouts.size());

  // 1. Memory, then the step of each layout that fits, on `threads` threads taking the next
  //    unclaimed layout. Each thread edits its own copy of the scenario.
  std::atomic<std::size_t> done{0};
  std::mutex progress_mutex;
  std::mutex error_mutex;
  std::size_t first_error_index = layouts.size();
  const GpuSpec& gpu = base.cluster.node.gpu;
  std::vector<Scenario> probes(std::max(1, options.threads), base);
  parallel_for(layouts.size(), options.threads, [&](std::size_t i, int worker) {
    Scenario& probe = probes[worker];
    probe.workload.parallelism = layouts[i].parallelism;
    probe.workload.micro_batch = layouts[i].micro_batch;
    Record& r = records[i];
    r.fits = fits_in_memory(probe.workload, gpu, params.memory, &r.memory_bytes);
    if (r.fits) {
      auto step = predict_step(probe, params);
      if (step) {
        RankedLayout scored;
        score(probe, *step, options.objective, &scored);
        r.score = scored.score;
        r.ok = true;
      } else {
        std::lock_guard lock(error_mutex);
        if (i < first_error_index) {
          first_error_index = i;
          result.first_error = to_string(layouts[i]) + ": " + step.message();
        }
      }
    }
    const std::size_t n = ++done;
    if (options.progress && n % 1024 == 0) {
      std::unique_lock lock(progress_mutex, std::try_to_lock);
      if (lock.owns_lock()) options.progress(n, layouts.size(), "layouts");
    }
  });
  if (options.progress) options.progress(layouts.size(), layouts.size(), "layouts");

  // 2. Rank what fits and was predicted.
  std::vector<std::size_t> ranked;
  for (std::size_t i = 0; i < records.size(); ++i) {
    result.fitting += records[i].fits;
    if (records[i].fits && !records[i].ok) ++result.failed;
    if (records[i].ok) ranked.push_back(i);
  }
  result.evaluated = result.fitting;
  const std::size_t top = std::min<std::size_t>(options.top, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + top, ranked.end(), Better{&records});
  for (std::size_t k = 0; k < top; ++k) {
    auto r = evaluate(with_layout(base, layouts[ranked[k]]), params, options.objective);
    CS_ASSERT(r.ok(), "a layout predicted once predicts again");
    result.top.push_back(std::move(r).value());
  }
  if (!ranked.empty()) {
    const Better better{&records};
    std::optional<std::size_t> other;
    for (std::size_t i : ranked) {
      if (!same_shape(layouts[i], layouts[ranked[0]]) && (!other || better(i, *other))) other = i;
    }
    if (other) {
      auto r = evaluate(with_layout(base, layouts[*other]), params, options.objective);
      CS_ASSERT(r.ok(), "a layout predicted once predicts again");
      result.best_other_shape = std::move(r).value();
    }
  }

  // 3. The scenario's own layout, where it stands.
  if (check_parallelism(base).ok()) {
    auto own = evaluate(base, params, options.objective);
    if (own) {
      if (own->step.fits) {
        result.own_rank = 1;
        for (std::size_t i : ranked) result.own_rank += records[i].score > own->score;
      }
      result.own = std::move(own).value();
    }
  }

  // 4. Nothing fits: the layout closest to fitting.
  if (result.fitting == 0 && !layouts.empty()) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < records.size(); ++i) {
      if (records[i].memory_bytes < records[best].memory_bytes) best = i;
    }
    result.closest = layouts[best];
    result.closest_memory =
        memory_per_gpu(with_layout(base, layouts[best]).workload, params.memory);
  }
  return result;
}

Result<ScalingSearch> search_gpu_counts(const Scenario& base, const StepParams& params,
                                        int min_gpus, int max_gpus, const SearchOptions& options) {
  const int gpn = base.cluster.node.gpus_per_node;
  CS_ASSERT(min_gpus > 0 && min_gpus <= max_gpus && min_gpus % gpn == 0 && max_gpus % gpn == 0,
            "a range of whole nodes");
  if (Status st = check_options(options); !st.ok()) return Error{st.message()};
  const int min_nodes = min_gpus / gpn;
  const int max_nodes = max_gpus / gpn;
  ScalingSearch out;

  // 1. The smallest count that fits: every whole node count, memory model only, on threads
  //    that take the next count up and stop past the smallest fitting one found so far.
  if (auto s = with_nodes(base, max_nodes); !s) return Error{s.message()};
  std::atomic<int> smallest{max_nodes + 1};
  std::atomic<std::size_t> scanned{0};
  std::mutex progress_mutex;
  const std::size_t total = static_cast<std::size_t>(max_nodes - min_nodes + 1);
  parallel_for(total, options.threads, [&](std::size_t i, int) {
    const int nodes = min_nodes + static_cast<int>(i);
    if (nodes < smallest &&
        some_layout_fits(with_nodes(base, nodes).value(), params, options.space)) {
      int seen = smallest.load();
      while (nodes < seen && !smallest.compare_exchange_weak(seen, nodes)) {
      }
    }
    const std::size_t n = ++scanned;
    if (options.progress) {
      std::lock_guard lock(progress_mutex);
      options.progress(n, total, "GPU counts");
    }
  });
  if (smallest <= max_nodes) out.smallest_fitting_gpus = smallest * gpn;

  // 2. Full searches at doubling counts, the top of the range and the smallest that fits.
  std::vector<int> node_counts;
  for (long n = min_nodes; n <= max_nodes; n *= 2) node_counts.push_back(static_cast<int>(n));
  node_counts.push_back(max_nodes);
  if (out.smallest_fitting_gpus > 0) node_counts.push_back(out.smallest_fitting_gpus / gpn);
  std::sort(node_counts.begin(), node_counts.end());
  node_counts.erase(std::unique(node_counts.begin(), node_counts.end()), node_counts.end());
  for (int nodes : node_counts) {
    auto s = with_nodes(base, nodes);
    if (!s) return Error{s.message()};
    auto r = search_layouts(*s, params, options);
    if (!r) return Error{r.message()};
    out.counts.push_back({nodes * gpn, std::move(r).value()});
  }
  return out;
}

void parallel_for(std::size_t count, int threads,
                  const std::function<void(std::size_t i, int worker)>& body) {
  const int n = static_cast<int>(
      std::min<std::size_t>(std::max(1, threads), std::max<std::size_t>(1, count)));
  std::atomic<std::size_t> next{0};
  auto work = [&](int worker) {
    for (std::size_t i = next++; i < count; i = next++) body(i, worker);
  };
  if (n == 1) {
    work(0);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) pool.emplace_back(work, t);
  for (auto& t : pool) t.join();
}

}  // namespace clustersim::models
