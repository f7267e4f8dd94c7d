// `clustersim search [SCENARIO]`: the best parallel layout for the scenario's model on its
// cluster (or on --gpus N), ranked by the analytic model, optionally re-ranked by the simulator
// (--refine-des K), with why the winner wins; and with --gpus-range MIN:MAX how many GPUs the job
// needs (the smallest whole-node count at which a layout fits) and the best layout per count.
// Under mpirun or srun the --refine-des simulations spread over the ranks (tools/distributed_rows.h)
// and rank 0 prints; --journal FILE keeps each finished simulation, which --resume does not redo.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/parallelism_search.h"
#include "models/step_model.h"
#include "models/text_file.h"
#include "models/units.h"
#include "sim/step_sim.h"
#include "tools/accuracy_classes.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/distributed_rows.h"
#include "tools/layout_report.h"
#include "tools/range_option.h"
#include "tools/rank_channel.h"
#include "tools/row_journal.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_count;
using models::format_percent;
using models::format_significant;
using models::format_size;
using models::format_time;
using models::format_usd;
using Align = TextTable::Align;

struct SearchArgs {
  std::string scenario;
  std::vector<std::string> sets;  // --set KEY=VALUE
  std::string calibration;
  int gpus = 0;            // 0: the scenario's cluster
  std::string gpus_range;  // "MIN:MAX"
  int top = 10;
  std::string objective = "tokens_per_s";
  int refine_des = 0;
  bool json = false;
  int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<int> micro_batches = {1, 2, 4, 8};
  int max_virtual_stages = 8;
  std::string journal;      // --refine-des: keep each finished simulation here
  bool resume = false;      // simulate only the layouts the journal lacks
  std::string row_timeout;  // "": no limit on one simulation
};

// A prediction as the output prints it. A simulated one is made where it ran, and travels (from
// a worker rank, or through the journal) as its text form: every way of running prints it alike.
struct Prediction {
  models::Layout layout;
  double score = 0;
  double step_time_s = 0;
  std::vector<std::string> figures;  // step, tokens/s, MFU, memory, cost
  std::vector<std::pair<std::string, double>> parts;  // step_parts()
  std::string memory;                                 // memory_cell()
  std::vector<std::string> advice;                    // step_advice() of the layout
  nlohmann::json json;                                // ranked_json()
};

// A ranked layout and, after --refine-des, its simulated step.
struct Candidate {
  models::RankedLayout analytic;
  std::optional<Prediction> des;
  std::string des_error;
  std::size_t analytic_rank = 0;  // 1-based
};

// "$1.23" or "0.45 GPU-h": the cost per million tokens.
std::string cost_cell(const models::RankedLayout& r) {
  return r.usd_per_million_tokens > 0
             ? format_usd(r.usd_per_million_tokens)
             : format_significant(r.gpu_hours_per_million_tokens, 3) + " GPU-h";
}

std::string memory_cell(const models::StepResult& s) {
  return format_size(s.memory.total()) + " (" +
         format_percent(s.memory.total(), s.memory_capacity_bytes) + ")";
}

// The cells after the layout's: step, tokens/s, MFU, memory, cost.
std::vector<std::string> figures(const models::RankedLayout& r) {
  return {format_time(r.step.step_time_s), format_count(r.step.tokens_per_s),
          format_percent(r.step.mfu), memory_cell(r.step), cost_cell(r)};
}

Prediction prediction(const models::Scenario& scenario, const models::RankedLayout& r) {
  return {r.layout,
          r.score,
          r.step.step_time_s,
          figures(r),
          step_parts(r.step),
          memory_cell(r.step),
          models::step_advice(with_layout(scenario, r.layout), r.step),
          ranked_json(r)};
}

// The simulated prediction the output prints, or the analytic one.
Prediction decisive(const models::Scenario& scenario, const Candidate& c) {
  return c.des ? *c.des : prediction(scenario, c.analytic);
}

// A simulation's outcome as one line: {"ok": true, "prediction": {...}} or {"ok": false, "error"}.
std::string encode(const models::Layout& layout, const std::optional<Prediction>& p,
                   const std::string& error) {
  nlohmann::json j = {{"layout", models::to_string(layout)}, {"ok", p.has_value()}};
  if (!p) {
    j["error"] = error;
    return j.dump();
  }
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& [what, s] : p->parts) parts.push_back({what, s});
  j["prediction"] = {{"score", p->score},   {"step_time_s", p->step_time_s},
                     {"figures", p->figures}, {"parts", parts},
                     {"memory", p->memory}, {"advice", p->advice},
                     {"json", p->json}};
  return j.dump();
}

// The outcome back from encode()'s text: false when it does not read.
bool decode(const std::string& text, const models::Layout& layout, std::optional<Prediction>* p,
            std::string* error) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  try {
    if (!j.at("ok").get<bool>()) {
      *p = std::nullopt;
      *error = j.at("error").get<std::string>();
      return true;
    }
    const nlohmann::json& q = j.at("prediction");
    Prediction out{layout, q.at("score").get<double>(), q.at("step_time_s").get<double>(),
                   q.at("figures").get<std::vector<std::string>>(), {},
                   q.at("memory").get<std::string>(), q.at("advice").get<std::vector<std::string>>(),
                   q.at("json")};
    for (const auto& part : q.at("parts")) {
      out.parts.emplace_back(part.at(0).get<std::string>(), part.at(1).get<double>());
    }
    *p = std::move(out);
    error->clear();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void print_header(const models::Scenario& s, const char* what) {
  const auto& c = s.cluster;
  const auto& w = s.workload;
  std::printf("%s for %s (%s)\n", what, s.name.c_str(), s.path.c_str());
  std::printf("  cluster   %d x %d %s on %s", c.nodes, c.node.gpus_per_node, c.node.gpu.id.c_str(),
              c.node.scale_up.id.c_str());
  if (c.node.nics_per_node > 0) {
    std::printf(", %d x %s per node, %s", c.node.nics_per_node, c.node.nic.id.c_str(),
                std::string(models::to_string(c.fabric.topology)).c_str());
  }
  std::printf("\n  workload  %s (%s parameters), seq %d, %d sequences per step (%s tokens), %s\n",
              w.model.id.c_str(), format_count(models::count_parameters(w.model).total()).c_str(),
              w.seq_len, w.global_batch, format_count(w.tokens_per_step()).c_str(),
              std::string(models::to_string(w.precision)).c_str());
}

const char* objective_words(models::SearchObjective o) {
  switch (o) {
    case models::SearchObjective::kTokensPerSecond:
      return "tokens/s (fastest)";
    case models::SearchObjective::kCost:
      return "cost per million useful tokens (cheapest)";
    case models::SearchObjective::kMfu:
      return "MFU (best use of each GPU)";
  }
  return "?";
}

void print_searched(const models::SearchResult& r, double wall_s, int threads) {
  std::printf(
      "  searched  %s valid layouts (tp x pp x dp x cp x ep x sp x zero x recompute x micro-batch x "
      "schedule), %s fit in memory; %s on %d thread%s (%s layouts/min)\n",
      format_count(double(r.layouts)).c_str(), format_count(double(r.fitting)).c_str(),
      format_time(wall_s).c_str(), threads, threads == 1 ? "" : "s",
      format_count(wall_s > 0 ? r.layouts / wall_s * 60 : 0).c_str());
  if (r.failed > 0) {
    std::printf("  %zu fitting layouts could not be predicted, e.g. %s\n", r.failed,
                r.first_error.c_str());
  }
}

// Where the winner's step goes next to the alternatives (all from one engine), and what would
// still help it.
void print_why(const Prediction& best, const Prediction* other_shape, const Prediction* own,
               const char* engine) {
  struct Column {
    std::string name;
    const Prediction* p;
  };
  std::vector<Column> cols = {{"#1", &best}};
  if (other_shape != nullptr) cols.push_back({"best other shape", other_shape});
  if (own != nullptr && !(own->layout == best.layout)) cols.push_back({"scenario's own", own});
  std::printf("\nWhy #1 wins: where each step goes (%s)\n", engine);
  for (std::size_t c = 1; c < cols.size(); ++c) {
    std::printf("  %-17s %s\n", (cols[c].name + ":").c_str(),
                models::to_string(cols[c].p->layout).c_str());
  }
  std::vector<std::string> header = {"per step"};
  std::vector<Align> align = {Align::kLeft};
  for (const auto& c : cols) {
    header.push_back(c.name);
    align.push_back(Align::kRight);
  }
  TextTable t(header, align);
  const auto& best_parts = best.parts;
  for (std::size_t i = 0; i < best_parts.size(); ++i) {
    std::vector<std::string> row = {best_parts[i].first};
    bool any = false;
    for (const auto& c : cols) {
      const double s = c.p->parts[i].second;
      any = any || s > 0;
      row.push_back(s > 0 ? format_time(s) + " " + format_percent(s, c.p->step_time_s) : "-");
    }
    if (any) t.add_row(row);
  }
  t.add_separator();
  std::vector<std::string> step_row = {"step"};
  std::vector<std::string> mem_row = {"memory per GPU"};
  for (const auto& c : cols) {
    step_row.push_back(format_time(c.p->step_time_s));
    mem_row.push_back(c.p->memory);
  }
  t.add_row(step_row);
  t.add_row(mem_row);
  std::printf("%s", t.render(2).c_str());
  // The largest single difference against each alternative, in words.
  for (std::size_t c = 1; c < cols.size(); ++c) {
    const auto& theirs = cols[c].p->parts;
    std::size_t k = 0;
    for (std::size_t i = 1; i < best_parts.size(); ++i) {
      if (theirs[i].second - best_parts[i].second > theirs[k].second - best_parts[k].second) k = i;
    }
    const double gain = cols[c].p->step_time_s / best.step_time_s - 1;
    if (gain <= 0) continue;
    std::printf("  #1 is %s faster than the %s layout, most of it in %s (%s -> %s)\n",
                format_percent(gain).c_str(), cols[c].name.c_str(), best_parts[k].first.c_str(),
                format_time(theirs[k].second).c_str(), format_time(best_parts[k].second).c_str());
  }
  for (const auto& line : best.advice) {
    std::printf("  ! #1 still loses time: %s\n", line.c_str());
  }
}

// One layout through the simulator, with a line on stderr (each takes 0.1-2 s): its outcome as
// encode() writes it.
std::string simulate(const models::Scenario& scenario, const models::StepParams& params,
                     const models::Layout& layout, models::SearchObjective objective,
                     const std::string& what) {
  const models::Scenario s = with_layout(scenario, layout);
  const auto start = std::chrono::steady_clock::now();
  auto sim = sim::simulate_step(s, params);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "clustersim search: simulated %s (%s) in %s\n", what.c_str(),
               models::to_string(layout).c_str(), format_time(wall_s).c_str());
  if (!sim) return encode(layout, std::nullopt, sim.message());
  return encode(layout, prediction(s, models::rank_step(s, sim->step, objective)), "");
}

// What --refine-des simulates: the first k candidates ("1/k", ...), then the best other shape and
// the scenario's own layout where they are not among them (the why-table compares like with
// like), each with its name on the progress lines.
struct LayoutToSimulate {
  models::Layout layout;
  std::string what;
};
std::vector<LayoutToSimulate> layouts_to_simulate(const models::SearchResult& r, std::size_t k) {
  std::vector<LayoutToSimulate> out;
  k = std::min(k, r.top.size());
  for (std::size_t i = 0; i < k; ++i) {
    out.push_back({r.top[i].layout, std::to_string(i + 1) + "/" + std::to_string(k)});
  }
  const std::pair<const std::optional<models::RankedLayout>*, const char*> extras[] = {
      {&r.best_other_shape, "best other shape"}, {&r.own, "scenario's own"}};
  for (const auto& [extra, what] : extras) {
    if (*extra && std::none_of(out.begin(), out.end(), [&](const LayoutToSimulate& l) {
          return l.layout == (*extra)->layout;
        })) {
      out.push_back({(*extra)->layout, what});
    }
  }
  return out;
}

struct Simulated {
  std::optional<Prediction> prediction;
  std::string error;
};

// Everything that decides the simulations' results: a journal resumes only the search it was
// written by.
std::string search_fingerprint(const SearchArgs& a, const models::Scenario& scenario) {
  std::vector<std::string> parts = {kToolVersion, "search", a.scenario,
                                    a.scenario.empty() ? std::string(kEmbeddedDefaultScenario) : "",
                                    a.calibration, a.objective, std::to_string(a.gpus),
                                    std::to_string(a.refine_des), std::to_string(a.top),
                                    std::to_string(a.max_virtual_stages)};
  for (const std::string& path : {a.scenario, a.calibration.empty() ? scenario.calibration_path
                                                                      : a.calibration}) {
    if (path.empty()) continue;
    auto text = models::read_text_file(path);
    parts.push_back(text ? *text : text.message());
  }
  for (int mb : a.micro_batches) parts.push_back(std::to_string(mb));
  parts.insert(parts.end(), a.sets.begin(), a.sets.end());
  return study_fingerprint(parts);
}

// Simulates `layouts` over the ranks (one at a time in each: SimGrid runs one engine per
// process), through the journal where --journal gives one. Every rank calls it; rank 0 gets every
// outcome, the others nothing. Bad input: the journal.
models::Result<std::vector<Simulated>> simulate_layouts(
    RankChannel& ranks, const SearchArgs& a, const models::Scenario& scenario,
    const models::StepParams& params, models::SearchObjective objective, double row_timeout_s,
    const std::vector<LayoutToSimulate>& layouts) {
  std::vector<std::optional<Simulated>> done(layouts.size());
  auto take = [&](std::size_t i, const std::string& text) {
    Simulated out;
    if (!decode(text, layouts[i].layout, &out.prediction, &out.error)) return false;
    done[i] = std::move(out);
    return true;
  };
  RowStudy study;
  study.command = "search";
  study.rows = layouts.size();
  study.threads = 1;
  study.isolate = true;
  study.row_timeout_s = row_timeout_s;
  study.journal = a.journal;
  std::optional<JournalWriter> journal;
  if (ranks.rank() == 0) {
    auto opened = open_study_journal(
        a.journal, a.resume, {"search", layouts.size(), search_fingerprint(a, scenario)}, take);
    if (!opened) {
      release_ranks(ranks);
      return models::Error{"--journal " + opened.message()};
    }
    journal = std::move(opened).value();
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      if (!done[i]) study.todo.push_back(i);
    }
  }
  study.describe = [&](std::size_t i) {
    return "layout " + std::to_string(i + 1) + " (" + models::to_string(layouts[i].layout) + ")";
  };
  study.evaluate = [&](std::size_t i) {
    return simulate(scenario, params, layouts[i].layout, objective, layouts[i].what);
  };
  study.finished = [&](std::size_t i, const std::string& text) -> models::Status {
    if (!take(i, text)) return models::Error{study.describe(i) + ": unreadable result: " + text};
    if (journal) return journal->append(i, text);
    return models::Status::Ok();
  };
  run_rows(ranks, study);
  std::vector<Simulated> out;
  if (ranks.rank() != 0) return out;
  if (journal) {
    if (auto st = journal->remove(); !st) std::fprintf(stderr, "clustersim search: %s\n", st.message().c_str());
  }
  for (auto& d : done) out.push_back(std::move(*d));
  return out;
}

// --gpus-range ends above ten million GPUs are typos, not clusters.
constexpr double kMaxRangeGpus = 1e7;
// When nothing fits, the suggested --gpus-range reaches 16x the GPUs searched (four doublings).
constexpr int kMoreGpusHintFactor = 16;

// Parses "MIN:MAX" into whole-node GPU counts.
models::Status parse_range(const std::string& text, int gpus_per_node, int* min_gpus,
                           int* max_gpus) {
  auto gpu_count = [](std::string_view t) -> models::Result<double> {
    auto v = models::parse_count(t);
    if (!v || *v < 1 || *v != std::floor(*v) || *v > kMaxRangeGpus) {
      return models::Error{"not a GPU count"};
    }
    return *v;
  };
  auto range = parse_min_max(text, gpu_count);
  if (!range) {
    return models::Error{"--gpus-range: '" + text + "': expected MIN:MAX GPUs, e.g. 64:1024"};
  }
  *min_gpus = static_cast<int>(range->min);
  *max_gpus = static_cast<int>(range->max);
  if (*min_gpus % gpus_per_node != 0 || *max_gpus % gpus_per_node != 0) {
    return models::Error{"--gpus-range: " + text + ": both ends must be whole nodes of " +
                         std::to_string(gpus_per_node) + " GPUs"};
  }
  return models::Status::Ok();
}

// Every rank runs the analytic search (the same ranking everywhere); the --refine-des
// simulations spread over the ranks; rank 0 prints.
int run_one_count(RankChannel& ranks, const SearchArgs& a, const models::Scenario& scenario,
                  const models::StepParams& params, const models::SearchOptions& options,
                  ProgressLine& progress, double row_timeout_s) {
  const bool writer = ranks.rank() == 0;
  const auto start = std::chrono::steady_clock::now();
  auto searched = models::search_layouts(scenario, params, options);
  progress.done();
  if (!searched) return writer ? fail_bad_input("search", searched.message()) : kExitBadInput;
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const models::SearchResult& r = *searched;
  std::vector<Candidate> ranked;
  for (std::size_t i = 0; i < r.top.size(); ++i) ranked.push_back({r.top[i], {}, {}, i + 1});
  // The simulated outcome of each layout --refine-des simulated.
  std::vector<std::pair<models::Layout, Simulated>> simulated;
  if (a.refine_des > 0) {
    const std::vector<LayoutToSimulate> layouts = layouts_to_simulate(r, a.refine_des);
    auto outcomes = simulate_layouts(ranks, a, scenario, params, options.objective,
                                     row_timeout_s, layouts);
    if (!outcomes) return writer ? fail_bad_input("search", outcomes.message()) : kExitBadInput;
    if (!writer) return kExitOk;
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      simulated.emplace_back(layouts[i].layout, (*outcomes)[i]);
    }
    // The first K re-ranked: simulated ones first by their simulated score, then the rest in
    // analytic order.
    const std::size_t k = std::min<std::size_t>(a.refine_des, ranked.size());
    for (std::size_t i = 0; i < k; ++i) {
      ranked[i].des = simulated[i].second.prediction;
      ranked[i].des_error = simulated[i].second.error;
    }
    std::stable_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k),
                     [](const Candidate& x, const Candidate& y) {
                       if (x.des.has_value() != y.des.has_value()) return x.des.has_value();
                       return x.des && y.des && x.des->score > y.des->score;
                     });
  }
  if (!writer) return kExitOk;
  ranked.resize(std::min<std::size_t>(ranked.size(), a.top));

  if (a.json) {
    nlohmann::json top = nlohmann::json::array();
    for (const Candidate& c : ranked) {
      nlohmann::json j = ranked_json(c.analytic);
      j["analytic_rank"] = c.analytic_rank;
      if (c.des) j["des"] = c.des->json;
      if (!c.des_error.empty()) j["des_error"] = c.des_error;
      top.push_back(j);
    }
    nlohmann::json out = {
        {"scenario", scenario.name},
        {"gpus", r.gpus},
        {"objective", models::to_string(options.objective)},
        {"engine", a.refine_des > 0 ? "analytic+des" : "analytic"},
        {"layouts", r.layouts},
        {"fitting", r.fitting},
        {"failed", r.failed},
        {"wall_s", wall_s},
        {"layouts_per_minute", wall_s > 0 ? r.layouts / wall_s * 60 : 0.0},
        {"threads", options.threads},
        {"top", top},
        {"best_other_shape",
         r.best_other_shape ? ranked_json(*r.best_other_shape) : nlohmann::json(nullptr)},
        {"own", r.own ? ranked_json(*r.own) : nlohmann::json(nullptr)},
        {"own_rank", r.own_rank > 0 ? nlohmann::json(r.own_rank) : nlohmann::json(nullptr)},
    };
    if (r.closest) {
      out["closest"] = {{"layout", layout_json(*r.closest)},
                        {"memory_per_gpu_bytes", r.closest_memory.total()},
                        {"memory_capacity_bytes", scenario.cluster.node.gpu.hbm_bytes}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

  print_header(scenario, "Parallelism search");
  print_searched(r, wall_s, options.threads);
  std::printf("  objective %s; analytic model%s\n\n", objective_words(options.objective),
              a.refine_des > 0 ? ", the first ones re-ranked by the simulator" : "");
  if (r.layouts == 0) {
    std::printf(
        "No layout divides %d GPUs for this job: tp must divide the %d GPUs per node and "
        "the heads, pp x virtual stages the layers, dp x micro-batch the global batch of "
        "%d, 2 x cp the sequence.\n",
        r.gpus, scenario.cluster.node.gpus_per_node, scenario.workload.global_batch);
    return kExitOk;
  }
  if (ranked.empty()) {
    const double capacity = scenario.cluster.node.gpu.hbm_bytes;
    std::printf("Nothing fits in %s per GPU on %d GPUs.\n", format_size(capacity).c_str(), r.gpus);
    if (r.closest) {
      std::printf(
          "  closest: %s needs %s per GPU (weights %s, gradients %s, optimizer %s, "
          "activations %s)\n",
          models::to_string(*r.closest).c_str(), format_size(r.closest_memory.total()).c_str(),
          format_size(r.closest_memory.weights_bytes).c_str(),
          format_size(r.closest_memory.gradients_bytes).c_str(),
          format_size(r.closest_memory.optimizer_bytes).c_str(),
          format_size(r.closest_memory.activations_bytes).c_str());
    }
    std::printf("  more GPUs: clustersim search %s --gpus-range %d:%d\n", scenario.path.c_str(),
                r.gpus, r.gpus * kMoreGpusHintFactor);
    return kExitOk;
  }

  const std::string memory_header = "memory of " + format_size(scenario.cluster.node.gpu.hbm_bytes);
  std::vector<std::string> header =
      concat(concat({"#"}, layout_header()), {a.refine_des > 0 ? "simulated step" : "step",
                                              "tokens/s", "MFU", memory_header, "per M tokens"});
  std::vector<Align> align(header.size(), Align::kRight);
  align[1 + 5] = Align::kLeft;  // recompute
  if (a.refine_des > 0) {
    header.insert(header.end(), {"analytic step", "sim/analytic", "analytic #"});
    align.resize(header.size(), Align::kRight);
  }
  TextTable t(header, align);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const Candidate& c = ranked[i];
    std::vector<std::string> row = concat(
        concat({std::to_string(i + 1)}, layout_cells(c.analytic.layout)),
        c.des ? c.des->figures : figures(c.analytic));
    if (a.refine_des > 0) {
      if (!c.des) row[1 + layout_header().size()] = "not simulated";
      row.insert(row.end(), {format_time(c.analytic.step.step_time_s),
                             c.des ? format_significant(
                                         c.des->step_time_s / c.analytic.step.step_time_s, 3)
                                   : "-",
                             std::to_string(c.analytic_rank)});
    }
    t.add_row(row);
  }
  if (r.own) {
    t.add_separator();
    std::vector<std::string> row =
        concat(concat({r.own_rank > 0 ? "own #" + std::to_string(r.own_rank) : "own"},
                      layout_cells(r.own->layout)),
               figures(*r.own));
    if (a.refine_des > 0) {  // the analytic figures: move the step to its column
      row.resize(header.size());
      row[header.size() - 3] = row[1 + layout_header().size()];
      row[1 + layout_header().size()] = "-";
    }
    t.add_row(row);
  }
  std::printf("%s", t.render(2).c_str());
  if (r.own && r.own_rank == 0) {
    std::printf("  (own: the scenario's layout does not fit in memory)\n");
  }
  for (const Candidate& c : ranked) {
    if (!c.des_error.empty()) {
      std::printf("  not simulated (%s): %s\n", models::to_string(c.analytic.layout).c_str(),
                  c.des_error.c_str());
    }
  }
  // The why-table compares like with like: with --refine-des, the alternatives simulated too
  // (a layout that failed to simulate is left out).
  std::optional<Prediction> other;
  std::optional<Prediction> own;
  if (r.best_other_shape) other = prediction(scenario, *r.best_other_shape);
  if (r.own) own = prediction(scenario, *r.own);
  const bool refined = ranked.front().des.has_value();
  if (refined) {
    auto simulated_as = [&](const std::optional<Prediction>& alternative) {
      std::optional<Prediction> out;
      for (const auto& [layout, outcome] : simulated) {
        if (alternative && layout == alternative->layout) out = outcome.prediction;
      }
      return out;
    };
    other = simulated_as(other);
    own = simulated_as(own);
  }
  print_why(decisive(scenario, ranked.front()), other ? &*other : nullptr, own ? &*own : nullptr,
            refined ? "simulated" : "analytic model");
  std::printf("\nUse it (under workload:)\n  %s\n",
              [&] {
                std::string y = layout_yaml(ranked.front().analytic.layout);
                for (std::size_t p = y.find('\n'); p != std::string::npos;
                     p = y.find('\n', p + 1)) {
                  y.insert(p + 1, "  ");
                }
                return y;
              }()
                  .c_str());
  std::printf("\n%s\n", wrap_text("Accuracy: " + kind_accuracy_line(scenario, refined), 100,
                                  "  ", "    ")
                            .c_str());
  return kExitOk;
}

int run_range(const SearchArgs& a, const models::Scenario& scenario,
              const models::StepParams& params, const models::SearchOptions& options,
              ProgressLine& progress, int min_gpus, int max_gpus) {
  const auto start = std::chrono::steady_clock::now();
  auto searched = models::search_gpu_counts(scenario, params, min_gpus, max_gpus, options);
  progress.done();
  if (!searched) return fail_bad_input("search", searched.message());
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const models::ScalingSearch& s = *searched;
  // The best count by the objective.
  const models::GpuCountSearch* best = nullptr;
  for (const auto& c : s.counts) {
    if (!c.result.top.empty() &&
        (best == nullptr || c.result.top.front().score > best->result.top.front().score)) {
      best = &c;
    }
  }
  const int gpn = scenario.cluster.node.gpus_per_node;

  if (a.json) {
    nlohmann::json counts = nlohmann::json::array();
    for (const auto& c : s.counts) {
      nlohmann::json j = {{"gpus", c.gpus},
                          {"nodes", c.gpus / gpn},
                          {"layouts", c.result.layouts},
                          {"fitting", c.result.fitting},
                          {"best", c.result.top.empty() ? nlohmann::json(nullptr)
                                                        : ranked_json(c.result.top.front())}};
      if (c.result.closest) {
        j["closest"] = {{"layout", layout_json(*c.result.closest)},
                        {"memory_per_gpu_bytes", c.result.closest_memory.total()}};
      }
      counts.push_back(j);
    }
    nlohmann::json out = {
        {"scenario", scenario.name},
        {"objective", models::to_string(options.objective)},
        {"engine", "analytic"},
        {"min_gpus", min_gpus},
        {"max_gpus", max_gpus},
        {"smallest_fitting_gpus", s.smallest_fitting_gpus > 0
                                      ? nlohmann::json(s.smallest_fitting_gpus)
                                      : nlohmann::json(nullptr)},
        {"best_gpus", best ? nlohmann::json(best->gpus) : nlohmann::json(nullptr)},
        {"memory_capacity_bytes", scenario.cluster.node.gpu.hbm_bytes},
        {"wall_s", wall_s},
        {"counts", counts},
    };
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

  print_header(scenario, "How many GPUs");
  std::printf("  range     %d to %d GPUs in whole nodes of %d; objective %s; %s\n\n", min_gpus,
              max_gpus, gpn, objective_words(options.objective), format_time(wall_s).c_str());
  const double capacity = scenario.cluster.node.gpu.hbm_bytes;
  if (s.smallest_fitting_gpus == 0) {
    std::printf("Nothing fits in %s per GPU anywhere from %d to %d GPUs.\n",
                format_size(capacity).c_str(), min_gpus, max_gpus);
  } else if (s.smallest_fitting_gpus == min_gpus) {
    std::printf("It fits already at %d GPUs, the bottom of the range (%s per GPU).\n", min_gpus,
                format_size(capacity).c_str());
  } else {
    std::printf("Smallest count that fits in %s per GPU: %d GPUs (%d nodes).\n",
                format_size(capacity).c_str(), s.smallest_fitting_gpus,
                s.smallest_fitting_gpus / gpn);
  }
  std::vector<std::string> header = concat(concat({"GPUs", "fit"}, layout_header()),
                                           {"step", "tokens/s", "MFU", "memory", "per M tokens"});
  std::vector<Align> align(header.size(), Align::kRight);
  align[2 + 5] = Align::kLeft;
  TextTable t(header, align);
  for (const auto& c : s.counts) {
    const std::string fit =
        std::to_string(c.result.fitting) + "/" + std::to_string(c.result.layouts);
    std::vector<std::string> row = {std::to_string(c.gpus) + (best == &c ? " *" : ""), fit};
    if (c.result.top.empty()) {
      row = concat(row, std::vector<std::string>(layout_header().size(), "-"));
      const std::string closest =
          c.result.closest ? "min " + format_size(c.result.closest_memory.total()) : "-";
      row = concat(row, {"-", "-", "-", closest, "-"});
    } else {
      row = concat(concat(row, layout_cells(c.result.top.front().layout)),
                   figures(c.result.top.front()));
    }
    t.add_row(row);
  }
  std::printf("\nBest layout per GPU count (fit: layouts that fit / valid layouts)\n%s",
              t.render(2).c_str());
  if (best != nullptr) {
    std::printf("  * best by %s: %d GPUs, %s\n", objective_words(options.objective), best->gpus,
                models::to_string(best->result.top.front().layout).c_str());
  }
  return kExitOk;
}

int run_search(const SearchArgs& a) {
  auto channel = open_rank_channel();
  if (!channel) return fail_bad_input("search", channel.message());
  RankChannel& ranks = **channel;
  // Every rank checks the input alike; rank 0 alone says what is wrong.
  auto bad = [&](const std::string& message) {
    return ranks.rank() == 0 ? fail_bad_input("search", message) : kExitBadInput;
  };
  // The search replaces the layout: a scenario whose own layout is invalid (or not given) for
  // its cluster is still searched.
  auto overrides = parse_set_options(a.sets);
  if (!overrides) return bad(overrides.message());
  auto loaded = load_scenario_or_default(a.scenario, *overrides, /*check_layout=*/a.scenario.empty());
  if (!loaded) return bad(loaded.message());
  models::Scenario scenario = std::move(loaded).value();
  auto params = step_params_for(scenario, a.calibration);
  if (!params) return bad(params.message());

  models::SearchOptions options;
  if (!models::parse_search_objective(a.objective, &options.objective)) {
    return bad(
                          "--objective: '" + a.objective + "' (tokens_per_s, cost or mfu)");
  }
  if (a.top < 1) return bad("--top: must be at least 1");
  if (a.threads < 1) return bad("--threads: must be at least 1");
  if (a.refine_des < 0) return bad("--refine-des: must be 0 or more");
  for (int mb : a.micro_batches) {
    if (mb < 1) return bad("--micro-batches: sizes must be at least 1");
  }
  if (a.max_virtual_stages < 1) {
    return bad("--max-virtual-stages: must be at least 1");
  }
  if (!a.journal.empty() && a.refine_des == 0) {
    return bad("--journal keeps the --refine-des simulations: give --refine-des K too");
  }
  if (a.resume && a.journal.empty()) return bad("--resume: give the --journal FILE to resume from");
  auto row_timeout_s = parse_row_timeout(a.row_timeout);
  if (!row_timeout_s) return bad(row_timeout_s.message());
  options.top = std::max(a.top, a.refine_des);
  options.threads = a.threads;
  options.space.micro_batches = a.micro_batches;
  options.space.max_virtual_stages = a.max_virtual_stages;
  ProgressLine progress("search");
  if (ranks.rank() == 0) {
    options.progress = [&progress](std::size_t done, std::size_t total, std::string_view unit) {
      progress.update(done, total, std::string(unit).c_str());
    };
  }
  const int gpn = scenario.cluster.node.gpus_per_node;

  if (!a.gpus_range.empty()) {
    if (a.refine_des > 0) {
      return bad(
                            "--refine-des works on one GPU count (--gpus or the "
                            "scenario's), not with --gpus-range");
    }
    int min_gpus = 0;
    int max_gpus = 0;
    if (auto st = parse_range(a.gpus_range, gpn, &min_gpus, &max_gpus); !st) {
      return bad(st.message());
    }
    // Only --refine-des spreads over ranks: the others have nothing to do.
    if (ranks.rank() != 0) return kExitOk;
    return run_range(a, scenario, *params, options, progress, min_gpus, max_gpus);
  }
  if (a.gpus != 0) {
    if (a.gpus < 0 || a.gpus % gpn != 0) {
      return bad("--gpus " + std::to_string(a.gpus) + ": whole nodes of " +
                                          std::to_string(gpn) + " GPUs");
    }
    auto resized = models::with_nodes(scenario, a.gpus / gpn);
    if (!resized) return bad(resized.message());
    scenario = std::move(resized).value();
  }
  if (ranks.rank() != 0 && a.refine_des == 0) return kExitOk;
  return run_one_count(ranks, a, scenario, *params, options, progress, *row_timeout_s);
}

const bool kRegistered = register_command(
    {"search", "best parallel layout for a model on a cluster, and how many GPUs it needs", 40,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<SearchArgs>();
       sub.add_option("scenario", a->scenario,
                      "scenario YAML: its model, sequence, batch and cluster (default: the "
                      "embedded one); its own layout is ranked too");
       auto gpus = sub.add_option("--gpus", a->gpus,
                                   "search on N GPUs of the scenario's nodes (whole nodes)");
       sub.add_option("--gpus-range", a->gpus_range,
                      "MIN:MAX GPUs: the smallest whole-node count at which a layout fits, and "
                      "the best layout at MIN, doubling, MAX and that count")
           .excludes(gpus);
       sub.add_option("--top", a->top, "layouts listed (default 10)");
       sub.add_option("--objective", a->objective,
                      "tokens_per_s (default), cost (per million useful tokens) or mfu; they "
                      "rank alike at one GPU count and differ across counts");
       sub.add_option("--refine-des", a->refine_des,
                      "re-rank the best K layouts with the simulator (about 0.1-2 s each)");
       sub.add_flag("--json", a->json, "one JSON object");
       sub.add_option("--threads", a->threads,
                      "evaluation threads (default: the machine's cores); same ranking for any");
       sub.add_option("--set", a->sets, "KEY=VALUE: set a dotted scenario key before loading (as sweep --set, one value; repeatable), e.g. cluster.nodes=16");
       sub.add_option("--calibration", a->calibration,
                      "calibration overlay (clustersim calibrate); default: the scenario's");
       sub.add_option("--micro-batches", a->micro_batches,
                      "micro-batch sizes to try, comma-separated (default 1,2,4,8; the "
                      "scenario's own is added)")
           .delimiter(',');
       sub.add_option("--max-virtual-stages", a->max_virtual_stages,
                      "interleaved schedule: model chunks per stage to try, 2..N (default 8)");
       sub.add_option("--journal", a->journal,
                      "--refine-des: append each finished simulation to FILE (removed once the "
                      "search has printed)");
       sub.add_flag("--resume", a->resume, "simulate only the layouts the --journal lacks");
       sub.add_option("--row-timeout", a->row_timeout,
                      "stop the run (exit 4) when one simulation takes longer than this, e.g. 5min");
       return [a] { return run_search(*a); };
     },
     {"clustersim search",
      "clustersim search --gpus-range 16:128 --objective cost",
      "mpirun -np 4 clustersim search scenarios/llama3-405b-16k-h100.yaml --refine-des 8 --journal refine.journal --resume"}});

}  // namespace
}  // namespace clustersim::tools
