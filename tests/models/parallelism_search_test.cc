// The parallelism search: the enumerator yields exactly the layouts the scenario loader accepts,
// the memory filter, a small case worked by hand (Llama 3 8B on one 8 x H100 node), the same
// ranking on any number of threads, and how many GPUs a job needs.
#include "models/parallelism_search.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "models/transformer_model.h"

using namespace clustersim::models;

namespace {

std::string scenario_path(const std::string& name) {
  return std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/" + name;
}

Scenario load(const std::string& name, const std::vector<ScenarioOverride>& overrides = {}) {
  auto s = load_scenario_file(scenario_path(name), overrides);
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
  return *s;
}

// The layout as --set edits of the scenario file, every key given.
std::vector<ScenarioOverride> overrides_for(const Layout& l) {
  const ParallelismConfig& p = l.parallelism;
  const std::string par = "workload.parallelism.";
  std::vector<ScenarioOverride> out = {{par + "tp", std::to_string(p.tp)},
          {par + "pp", std::to_string(p.pp)},
          {par + "dp", std::to_string(p.dp)},
          {par + "cp", std::to_string(p.cp)},
          {par + "sp", p.sp ? "true" : "false"},
          {par + "zero", std::to_string(p.zero)},
          {par + "recompute", std::string(to_string(p.recompute))},
          {par + "pp_schedule", std::string(to_string(p.pp_schedule))},
          {par + "virtual_stages", std::to_string(p.virtual_stages)},
          {par + "ep", std::to_string(p.ep)},
          {"workload.micro_batch", std::to_string(l.micro_batch)}};
  // A layout string where no even split exists (80 layers on pp 32).
  if (p.layout.given()) out.push_back({par + "pipeline_layout", p.layout.text});
  return out;
}

auto key(const Layout& l) {
  const ParallelismConfig& p = l.parallelism;
  return std::make_tuple(p.tp, p.pp, p.dp, p.cp, p.sp, p.zero, int(p.recompute), int(p.pp_schedule),
                         p.virtual_stages, l.micro_batch);
}

SearchResult search(const Scenario& s, SearchOptions options = {}) {
  auto r = search_layouts(s, default_step_params(s.cluster), options);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.message()));
  return *r;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("search: every enumerated layout loads through the scenario loader, once") {
    for (const char* name : {"llama3-8b-8xh100.yaml", "llama3-70b-64xh100-ndr-rail.yaml"}) {
      CAPTURE(name);
      const Scenario base = load(name);
      const std::vector<Layout> layouts = enumerate_layouts(base);
      REQUIRE(layouts.size() > 100);
      std::set<decltype(key(layouts[0]))> seen;
      for (const Layout& l : layouts) CHECK(seen.insert(key(l)).second);
      // The 70B list is long: every 37th through the loader (all of them through its rules).
      const std::size_t stride = layouts.size() > 5000 ? 37 : 1;
      for (std::size_t i = 0; i < layouts.size(); i += stride) {
        CAPTURE(to_string(layouts[i]));
        auto s = load_scenario_file(scenario_path(name), overrides_for(layouts[i]));
        REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.message()));
        CHECK(layout_of(*s) == layouts[i]);
      }
      for (const Layout& l : layouts) CHECK(check_parallelism(with_layout(base, l)).ok());
    }
  }

  // Brute force through the loader on one node: every tp, pp, cp (dp fills the 8 GPUs), every
  // schedule with up to 4 virtual stages, micro-batches 1-8 and sp on and off. The enumerator
  // must list exactly the accepted ones, less the settings that do nothing (sp at tp 1, a
  // schedule at pp 1, one virtual stage under interleaved, ZeRO without dp or cp).
  TEST_CASE("search: the enumerator lists exactly what the loader accepts (one node)") {
    const std::string path = scenario_path("llama3-8b-8xh100.yaml");
    std::map<decltype(key(Layout{})), Layout> accepted;
    int tried = 0;
    for (int tp = 1; tp <= 8; ++tp)
      for (int pp = 1; pp <= 8; ++pp)
        for (int cp = 1; cp <= 8; ++cp) {
          if (8 % (tp * pp * cp) != 0) continue;  // tp x pp x dp x cp == 8 (the first rule)
          const int dp = 8 / (tp * pp * cp);
          for (PipelineSchedule sched :
               {PipelineSchedule::k1F1B, PipelineSchedule::kGpipe, PipelineSchedule::kInterleaved})
            for (int v = 1; v <= 4; ++v)
              for (int mb : {1, 2, 3, 4, 8})
                for (bool sp : {false, true}) {
                  Layout l;
                  // ZeRO over dp x cp == 1 shards nothing: listed as zero 0.
                  const int zero = dp * cp == 1 ? 0 : 3;
                  l.parallelism = {tp, pp, dp, cp, sp, zero, Recompute::kFull, sched, v};
                  l.micro_batch = mb;
                  ++tried;
                  if (!load_scenario_file(path, overrides_for(l)).ok()) continue;
                  if (sp && tp == 1) continue;
                  if (pp == 1 && (sched != PipelineSchedule::k1F1B)) continue;
                  if (sched == PipelineSchedule::kInterleaved && v == 1) continue;
                  accepted[key(l)] = l;
                }
        }
    SearchSpace space;
    space.micro_batches = {1, 2, 3, 4, 8};
    space.zero_stages = {3};
    space.recompute = {Recompute::kFull};
    space.max_virtual_stages = 4;
    std::map<decltype(key(Layout{})), Layout> listed;
    for (const Layout& l : enumerate_layouts(load("llama3-8b-8xh100.yaml"), space)) {
      listed[key(l)] = l;
    }
    MESSAGE(tried, " layouts tried, ", accepted.size(), " accepted");
    CHECK(accepted.size() > 50);
    for (const auto& [k, l] : accepted)
      CHECK_MESSAGE(listed.count(k), "not listed: " << to_string(l));
    for (const auto& [k, l] : listed)
      CHECK_MESSAGE(accepted.count(k), "not accepted: " << to_string(l));
  }

  TEST_CASE("search: settings without effect are listed once") {
    SearchSpace space;
    const auto layouts = enumerate_layouts(load("llama3-8b-8xh100.yaml"), space);
    for (const Layout& l : layouts) {
      const ParallelismConfig& p = l.parallelism;
      if (p.tp == 1) CHECK_FALSE(p.sp);
      if (p.pp == 1) CHECK(p.pp_schedule == PipelineSchedule::k1F1B);
      if (p.dp * p.cp == 1) CHECK(p.zero == 0);
      if (p.cp > 1) CHECK(8192 / p.cp >= space.min_tokens_per_cp_rank);
    }
  }

  // Llama 3 8B (8.03B parameters), 8192-token sequences, 256 per step, on one HGX H100 node.
  // By hand: model FLOPs per token 6 x 8.03e9 + attention 3 x 32 layers x 2 s h (causal)
  // = 48.2 + 6.4 = 54.6 GFLOP; 2.1M tokens per step need 1.15e17 FLOP, 14.5 s of the node's
  // 8 x 989 TFLOP/s, about 25-30 s at 50-60% of peak. Data parallelism keeps every GEMM whole
  // (8192 x 4096 x 14336 for the FFN) and hides its gradient reduce-scatter (32 GB of fp32
  // gradients, ~0.1 s over NVLink) behind the backward. tp 8 cuts each GEMM eight ways and puts
  // 4 all-reduces of s h x 2 B = 64 MiB per layer and micro-batch on the critical path: at
  // ~360 GB/s bus bandwidth ~0.33 ms each, 32 layers x 4 x 0.33 ms = 42 ms per sequence next to
  // ~113 ms of compute per sequence (8192 x 54.6 GFLOP / 8 GPUs / 495 TFLOP/s): about a third
  // more. Memory: tp 1 without ZeRO holds 16 B x 8.03e9 = 128 GB: it must shard (ZeRO).
  TEST_CASE("search: Llama 3 8B on one 8 x H100 node: data parallel with ZeRO beats tp 8") {
    const Scenario s = load("llama3-8b-8xh100.yaml");
    SearchOptions options;
    options.top = 100000;  // every fitting layout, ranked
    const SearchResult r = search(s, options);
    REQUIRE_FALSE(r.top.empty());
    const RankedLayout& best = r.top.front();
    MESSAGE("best: ", to_string(best.layout), ": ", best.step.step_time_s, " s, MFU ",
            best.step.mfu);
    CHECK(best.layout.parallelism.tp <= 2);
    CHECK(best.layout.parallelism.dp >= 4);
    CHECK(best.layout.parallelism.zero >= 1);
    CHECK(best.step.step_time_s > 14.5);  // the node's peak
    CHECK(best.step.step_time_s < 30);
    CHECK(best.step.mfu > 0.45);
    CHECK(best.step.mfu < 0.75);
    const auto tp8 = std::find_if(r.top.begin(), r.top.end(), [](const RankedLayout& x) {
      return x.layout.parallelism.tp == 8;
    });
    REQUIRE(tp8 != r.top.end());
    MESSAGE("best tp 8: ", to_string(tp8->layout), ": ", tp8->step.step_time_s, " s");
    CHECK(tp8->step.step_time_s > 1.15 * best.step.step_time_s);
    // One GPU holding the whole model without ZeRO does not fit (128 GB of weights, gradients
    // and Adam states).
    for (const RankedLayout& x : r.top) {
      const ParallelismConfig& p = x.layout.parallelism;
      CHECK_FALSE((p.tp == 1 && p.pp == 1 && p.zero == 0));
    }
    // Ranked best first, ties to the smaller memory.
    for (std::size_t i = 1; i < r.top.size(); ++i) {
      CHECK(r.top[i - 1].score >= r.top[i].score);
      if (r.top[i - 1].score == r.top[i].score) {
        CHECK(r.top[i - 1].step.memory.total() <= r.top[i].step.memory.total());
      }
    }
    // The scenario's own layout is ranked among them.
    REQUIRE(r.own.has_value());
    CHECK(r.own_rank >= 1);
    CHECK(r.top[r.own_rank - 1].score == doctest::Approx(r.own->score));
  }

  TEST_CASE("search: only layouts that fit in memory are ranked") {
    const Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    const StepParams params = default_step_params(s.cluster);
    SearchOptions options;
    options.top = 100000;
    const SearchResult r = search(s, options);
    std::size_t fitting = 0;
    for (const Layout& l : enumerate_layouts(s)) {
      fitting += memory_per_gpu(with_layout(s, l).workload, params.memory).total() <=
                 s.cluster.node.gpu.hbm_bytes;
    }
    CHECK(r.fitting == fitting);
    CHECK(r.top.size() == fitting);
    CHECK(fitting < r.layouts);  // the filter removes some
    for (const RankedLayout& x : r.top) {
      CHECK(x.step.fits);
      CHECK(x.step.memory.total() <= x.step.memory_capacity_bytes);
    }
    CHECK_FALSE(r.closest.has_value());
  }

  // Llama 3 70B on one node: weights, gradients and Adam states alone are 16 B x 70.55e9 =
  // 1.13 TB, 141 GB per GPU even fully sharded over 8: nothing fits in 80 GiB.
  TEST_CASE("search: nothing fits: the closest layout and its memory") {
    const Scenario s = load("llama3-8b-8xh100.yaml", {{"workload.model", "llama3-70b"}});
    const SearchResult r = search(s);
    CHECK(r.layouts > 0);
    CHECK(r.fitting == 0);
    CHECK(r.top.empty());
    REQUIRE(r.closest.has_value());
    CHECK(r.closest_memory.total() > 16 * 70.55e9 / 8);
    CHECK(r.closest_memory.total() > s.cluster.node.gpu.hbm_bytes);
  }

  TEST_CASE("search: threads give the same ranking as one thread") {
    const Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    SearchOptions one;
    one.top = 50;
    SearchOptions three = one;
    three.threads = 3;
    std::size_t calls = 0;
    three.progress = [&](std::size_t done, std::size_t total, std::string_view unit) {
      ++calls;
      CHECK(done <= total);
      CHECK(unit == "layouts");
    };
    const SearchResult a = search(s, one);
    const SearchResult b = search(s, three);
    CHECK(calls >= 1);
    CHECK(a.layouts == b.layouts);
    CHECK(a.fitting == b.fitting);
    REQUIRE(a.top.size() == b.top.size());
    for (std::size_t i = 0; i < a.top.size(); ++i) {
      CHECK(a.top[i].layout == b.top[i].layout);
      CHECK(a.top[i].score == b.top[i].score);
    }
    REQUIRE(a.best_other_shape.has_value());
    CHECK(a.best_other_shape->layout == b.best_other_shape->layout);
    CHECK(a.own_rank == b.own_rank);
  }

  // With a fixed global batch the tokens per step are fixed, so at one GPU count tokens/s, MFU
  // and cost per token are all functions of the step time and rank alike.
  TEST_CASE("search: objectives rank alike at one GPU count") {
    const Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    SearchOptions options;
    options.top = 20;
    const SearchResult fast = search(s, options);
    for (SearchObjective o : {SearchObjective::kMfu, SearchObjective::kCost}) {
      options.objective = o;
      const SearchResult other = search(s, options);
      REQUIRE(other.top.size() == fast.top.size());
      for (std::size_t i = 0; i < fast.top.size(); ++i) {
        CHECK(other.top[i].layout == fast.top[i].layout);
      }
    }
    SearchObjective parsed = SearchObjective::kTokensPerSecond;
    CHECK(parse_search_objective("cost", &parsed));
    CHECK(parsed == SearchObjective::kCost);
    CHECK_FALSE(parse_search_objective("speed", &parsed));
    CHECK(to_string(SearchObjective::kMfu) == "mfu");
  }

  // Llama 3 70B at 8192 tokens on H100 (80 GiB, ~1.6-2.8 GiB of it the CUDA context and NCCL):
  // 18 B x 70.55e9 = 1.27 TB of training state (bf16 weights, fp32 gradients, fp32 master and
  // Adam moments) needs at least 1.27e12 / 83e9 = 15.3 GPUs, so 8 GPUs (one node) cannot hold
  // it and 16 GPUs can, with full recompute (layer inputs of 2 s h / tp bytes) and the loss's
  // logits in what is left.
  TEST_CASE("search: how many GPUs: Llama 3 70B fits from 16 H100") {
    const Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");
    const StepParams params = default_step_params(s.cluster);
    SearchOptions options;
    options.top = 3;
    auto r = search_gpu_counts(s, params, 8, 128, options);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.message()));
    CHECK(r->smallest_fitting_gpus == 16);
    std::vector<int> counts;
    for (const auto& c : r->counts) counts.push_back(c.gpus);
    CHECK(counts == std::vector<int>{8, 16, 32, 64, 128});
    CHECK(r->counts[0].result.top.empty());
    CHECK(r->counts[0].result.closest.has_value());
    const RankedLayout& at16 = r->counts[1].result.top.front();
    CHECK(at16.layout.parallelism.recompute == Recompute::kFull);
    CHECK(at16.step.memory.total() > 1.27e12 / 16);
    // More GPUs, more tokens/s (strong scaling of a 512-sequence batch).
    for (std::size_t i = 2; i < r->counts.size(); ++i) {
      CHECK(r->counts[i].result.top.front().step.tokens_per_s >
            r->counts[i - 1].result.top.front().step.tokens_per_s);
    }
    // A range whose lower end does not fit but a count between the doublings does: 24 GPUs.
    auto r24 = search_gpu_counts(s, params, 8, 32, options);
    REQUIRE(r24.ok());
    CHECK(r24->smallest_fitting_gpus == 16);
  }

  // some_layout_fits tries only full recompute and 1F1B; the answer must be the full space's.
  TEST_CASE("search: the quick fit test agrees with every layout's memory") {
    int fits = 0;
    for (const char* name : {"seed/context-1m-1024gpu.yaml", "llama3-70b-64xh100-ndr-rail.yaml"}) {
      const Scenario base = load(name);
      const StepParams params = default_step_params(base.cluster);
      for (int nodes = 1; nodes <= 12; ++nodes) {
        CAPTURE(name);
        CAPTURE(nodes);
        const Scenario s = with_nodes(base, nodes).value();
        bool any = false;
        for (const Layout& l : enumerate_layouts(s)) {
          any = any || memory_per_gpu(with_layout(s, l).workload, params.memory).total() <=
                           s.cluster.node.gpu.hbm_bytes;
        }
        CHECK(some_layout_fits(s, params) == any);
        fits += any;
      }
    }
    CHECK(fits > 0);
    CHECK(fits < 24);  // both answers occur
  }

  TEST_CASE("search: with_nodes rescales dp and needs NICs for several nodes") {
    const Scenario s = load("llama3-70b-64xh100-ndr-rail.yaml");  // tp 8, pp 2, dp 4
    auto bigger = with_nodes(s, 16);
    REQUIRE(bigger.ok());
    CHECK(bigger->cluster.total_gpus() == 128);
    CHECK(bigger->workload.parallelism.dp == 8);
    CHECK(check_parallelism(*bigger).ok());
    auto one = with_nodes(load("llama3-8b-8xh100.yaml"), 2);
    REQUIRE_FALSE(one.ok());
    CHECK(one.message().find("need NICs") != std::string::npos);
  }

  TEST_CASE("search: a layout reads as the scenario's keys") {
    Layout l;
    l.parallelism = {8, 4, 2, 1, true, 1, Recompute::kSelective, PipelineSchedule::kInterleaved, 2};
    l.micro_batch = 2;
    CHECK(to_string(l) ==
          "tp 8+sp, pp 4 x2 interleaved, dp 2, cp 1, zero 1, recompute selective, mb 2");
    Layout m;
    CHECK(to_string(m) == "tp 1, pp 1, dp 1, cp 1, zero 0, recompute none, mb 1");
    CHECK_FALSE(l == m);
  }

  TEST_CASE("search: bad options are errors, not crashes") {
    const Scenario s = load("llama3-8b-8xh100.yaml");
    SearchOptions o;
    o.top = 0;
    CHECK_FALSE(search_layouts(s, default_step_params(s.cluster), o).ok());
    o = SearchOptions{};
    o.space.micro_batches = {0};
    CHECK_FALSE(search_layouts(s, default_step_params(s.cluster), o).ok());
  }
}

TEST_SUITE("models") {
  // Mixtral 8x22B on 256 H100: the search varies expert parallelism too (every power of two
  // dividing the 8 experts and the stage's GPUs); holding fewer experts per GPU is what fits.
  // The other axes are held to one value each (the whole space takes 100 s under the sanitizers,
  // and ep's enumeration does not depend on them).
  TEST_CASE("search: a MoE model's layouts vary ep") {
    const Scenario s = load("mixtral-8x22b-256xh100.yaml");
    SearchOptions options;
    options.top = 100000;
    options.space.micro_batches = {1};
    options.space.zero_stages = {1};
    options.space.recompute = {Recompute::kSelective};
    options.space.vary_sp = false;
    options.space.include_gpipe = false;
    options.space.max_virtual_stages = 2;
    const SearchResult r = search(s, options);
    REQUIRE_FALSE(r.top.empty());
    std::set<int> eps;
    for (const RankedLayout& x : r.top) {
      const auto& p = x.layout.parallelism;
      eps.insert(p.ep);
      CHECK(8 % p.ep == 0);
      CHECK((p.tp * p.cp * p.dp) % p.ep == 0);
      if (p.tp > 1) CHECK(p.sp);
    }
    CHECK(eps.count(8) == 1);
    CHECK(eps.size() >= 2);
    CHECK(r.top.front().layout.parallelism.ep == 8);
  }
}
