// `clustersim accuracy [DIR]`: the model scored on published runs (docs/accuracy.md). Every
// scenario under DIR (default scenarios/published) with a `published:` section is predicted by
// the analytic model and the simulator; each run's published figure becomes the step time it
// implies, and the table gives both predictions, their errors, the memory verdict and the
// published memory; then the mean, median and largest |error| overall and per source, and
// leaving each source out. Exit 2 on a file that does not load, 1 when a gate
// (--max-mean-error, --max-error, --max-loso-error, --all-fit) is missed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "models/accuracy/accuracy_score.h"
#include "models/accuracy/corpus_fit.h"
#include "models/accuracy/published_run.h"
#include "models/units.h"
#include "sim/collective_sim.h"
#include "sim/step_sim.h"
#include "topology/cluster_graph.h"
#include "tools/accuracy_classes.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/layout_report.h"
#include "tools/row_journal.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_percent;
using models::format_signed_percent;
using models::format_significant;

struct AccuracyArgs {
  std::string dir = "scenarios/published";
  std::string engine = "both";
  std::string source;  // only this source's runs; "" = all
  bool json = false;
  double max_mean_error = 0;  // 0 = no gate
  double max_error = 0;
  double max_loso_error = 0;
  double max_collective_error = 0;
  bool all_fit = false;
  std::string write_classes;  // the by-kind table's file (tools/accuracy_classes.h); "" = none
  bool want_analytic() const { return engine != "des"; }
  bool want_des() const { return engine != "analytic"; }
};

// One engine's answer for a run.
struct EnginePrediction {
  bool ran = false;
  double step_s = 0;
  std::string failure;  // why it did not run
};

struct CorpusRun {
  models::Scenario scenario;
  models::StepParams params;  // the step parameters both engines and the refits start from
  double published_step_s = 0;
  EnginePrediction analytic, des;
  // The analytic step with the corpus-fitted constants refitted without this run's source, and
  // its ratio to the shipped prediction (applied to the simulator's step: 1 when no constant
  // applies).
  double left_out_analytic_s = 0;
  double left_out_ratio = 1;
  double memory_bytes = 0;            // the planner's peak per GPU, everything
  double allocator_memory_bytes = 0;  // of which PyTorch's allocator reserves (what sources publish)
  double capacity_bytes = 0;
  bool fits = false;
};

// A contention measurement: one collective on the scenario's fabric (busbw), or its ratio to the
// same collective on the fabric as `versus` edits it (busbw_ratio). Its "step" is the
// collective's time, or the ratio of the two times.
struct CollectiveRun {
  models::Scenario scenario;
  std::optional<models::Scenario> versus;  // busbw_ratio: the same file with the versus edits
  double published_s = 0;
  EnginePrediction analytic, des;
  std::string algorithm;  // NCCL's choice, as the analytic model makes it
  // The simulator's prediction with the contention constants refitted without this run's source
  // (0: none applies).
  double left_out_des = 0;
  // The simulator's prediction under kHashDraws draws of ECMP's hash (the default seed and the
  // next ones, topology::BuildOptions::ecmp_seed), sorted; empty where no fabric of the run
  // hashes. `des` is the first draw, the default seed's: one fixed draw, not the expectation.
  std::vector<double> des_draws;
};

// ECMP's hash draws scored beside the default seed's: which links collide is the luck of the
// hash, and a measurement is one draw of it.
constexpr int kHashDraws = 16;

bool hashes_flows(const CollectiveRun& r) {
  return topology::hashes_flows(r.scenario.cluster) ||
         (r.versus && topology::hashes_flows(r.versus->cluster));
}

// The draw in the middle of the sorted draws (a draw the simulator made, not an average).
double median_draw(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }

// Every *.yaml under `dir`, sorted (a stable order for the table and the goldens).
std::vector<std::string> corpus_files(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    *error = dir + ": not a directory (the corpus is scenarios/published/; run from the "
                   "repository root or give DIR)";
    return {};
  }
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".yaml") {
      out.push_back(it->path().string());
    }
  }
  if (ec) *error = dir + ": " + ec.message();
  std::sort(out.begin(), out.end());
  return out;
}

std::string published_text(const models::PublishedRun& p) {
  switch (p.metric) {
    case models::PublishedMetric::kStepTime:
      return models::format_time(p.value);
    case models::PublishedMetric::kTokensPerSPerGpu:
      return format_significant(p.value, 4) + " tok/s/GPU";
    case models::PublishedMetric::kTflopsPerGpu:
      return format_significant(p.value, 4) + " TFLOP/s (" +
             std::string(models::to_string(p.flops)) + ")";
    case models::PublishedMetric::kMfu:
      return format_percent(p.value) + " MFU (" + std::string(models::to_string(p.flops)) + ")";
    case models::PublishedMetric::kBusbw:
      return models::format_bandwidth(p.value) + " busbw";
    case models::PublishedMetric::kBusbwRatio:
      return format_significant(p.value, 3) + "x busbw";
  }
  return "?";
}

std::string prediction_text(const EnginePrediction& e, double published_s) {
  if (!e.ran) return "-";
  return models::format_time(e.step_s) + " " + format_signed_percent(e.step_s / published_s - 1);
}

models::AccuracyScore score(const std::vector<CorpusRun>& runs, bool des) {
  std::vector<models::ScoredRun> scored;
  for (const CorpusRun& r : runs) {
    const EnginePrediction& e = des ? r.des : r.analytic;
    const double step = e.ran ? e.step_s : 0;
    scored.push_back({r.scenario.name, r.scenario.published->source, r.published_step_s, step,
                      step * r.left_out_ratio, models::accuracy_class(r.scenario)});
  }
  return models::score_runs(scored);
}

// One corpus-fitted constant: its fit on every run, and without each source.
struct ConstantReport {
  const models::CorpusConstant* constant = nullptr;
  models::ConstantFit all;
  std::vector<std::pair<std::string, models::ConstantFit>> without;  // per source it applies to
};

// A constant's fit over `fit_runs` and refitted without each source it applies to; calls
// left_out(i, grid_index) for every run i of a source with the grid index fitted without it
// (none when no other source is left to fit on: the shipped value stands).
template <class LeftOut>
ConstantReport fit_report(const models::CorpusConstant& c,
                          const std::vector<models::FitRun>& fit_runs, LeftOut left_out) {
  std::vector<std::string> sources;
  for (const models::FitRun& f : fit_runs) {
    if (f.applies() && std::find(sources.begin(), sources.end(), f.source) == sources.end()) {
      sources.push_back(f.source);
    }
  }
  ConstantReport rep;
  rep.constant = &c;
  rep.all = models::fit_constant(c, fit_runs);
  for (const std::string& src : sources) {
    const models::ConstantFit without = models::fit_constant(c, fit_runs, src);
    rep.without.push_back({src, without});
    if (without.index < 0) continue;
    for (std::size_t i = 0; i < fit_runs.size(); ++i) {
      if (fit_runs[i].source == src && fit_runs[i].applies()) left_out(i, without.index);
    }
  }
  return rep;
}

// Fits every corpus constant (analytic engine) and sets each run's left-out prediction: the
// constants refitted without the run's source. REQUIRES: r.params set and r.analytic predicted
// for every run.
models::Result<std::vector<ConstantReport>> refit_constants(std::vector<CorpusRun>& runs) {
  std::vector<ConstantReport> reports;
  for (const models::CorpusConstant& c : models::corpus_constants()) {
    std::vector<models::FitRun> fit_runs;
    for (const CorpusRun& r : runs) {
      models::FitRun f{r.scenario.published->source, r.published_step_s, {}};
      if (c.applies(r.scenario)) {
        for (int i = 0; i < c.grid_size(); ++i) {
          models::StepParams p = r.params;
          c.set(r.scenario, &p, c.grid(i));
          auto step = models::predict_step(r.scenario, p);
          if (!step) return models::Error{r.scenario.path + ": " + step.message()};
          f.step_s_on_grid.push_back(step->step_time_s);
        }
      }
      fit_runs.push_back(std::move(f));
    }
    reports.push_back(fit_report(c, fit_runs, [&](std::size_t i, int index) {
      const double left_out = fit_runs[i].step_s_on_grid[static_cast<size_t>(index)];
      runs[i].left_out_ratio *= left_out / runs[i].analytic.step_s;
    }));
  }
  return reports;
}

void print_constants(const std::vector<ConstantReport>& reports) {
  for (const ConstantReport& rep : reports) {
    const models::CorpusConstant& c = *rep.constant;
    if (rep.all.runs == 0) {  // a --source selection none of whose runs the constant touches
      std::printf("Fitted on the corpus: %s = %s (no run scored here depends on it)\n\n",
                  c.name.c_str(), format_significant(c.shipped, 4).c_str());
      continue;
    }
    std::printf("Fitted on the corpus: %s = %s (the corpus's best: %s over %d runs, mean |error| "
                "%s); %s\n",
                c.name.c_str(), format_significant(c.shipped, 4).c_str(),
                format_significant(rep.all.value, 4).c_str(), rep.all.runs,
                format_percent(rep.all.mean_abs).c_str(), c.why.c_str());
    std::printf("  refitted without each source:");
    for (const auto& [src, fit] : rep.without) {
      std::printf(" %s %s;", src.c_str(),
                  fit.index < 0 ? "(nothing else)" : format_significant(fit.value, 4).c_str());
    }
    std::printf("\n\n");
  }
}

nlohmann::json stats_json(const models::ErrorStats& s) {
  return {{"runs", s.runs},           {"mean_abs_error", s.mean_abs},
          {"median_abs_error", s.median_abs}, {"p90_abs_error", s.p90_abs},
          {"max_abs_error", s.max_abs},
          {"mean_error", s.mean_signed},      {"worst", s.worst}};
}

nlohmann::json score_json(const models::AccuracyScore& s) {
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& src : s.sources) {
    nlohmann::json j = stats_json(src.stats);
    j["source"] = src.source;
    j["left_out_mean_abs_error"] = src.left_out_mean_abs;
    sources.push_back(std::move(j));
  }
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : s.classes) {
    nlohmann::json j = stats_json(c.stats);
    j["class"] = c.run_class;
    classes.push_back(std::move(j));
  }
  return {{"overall", stats_json(s.overall)},
          {"sources", sources},
          {"classes", classes},
          {"leave_one_source_out_mean_abs_error", s.leave_one_source_out_mean_abs}};
}

// `loso`: print the leave-one-source-out line (training runs: corpus-fitted constants apply).
void print_score(const char* engine, const models::AccuracyScore& s, bool loso = true) {
  std::printf("%s: %d runs, mean |error| %s, median %s, max %s (%s), mean error %s\n", engine,
              s.overall.runs, format_percent(s.overall.mean_abs).c_str(),
              format_percent(s.overall.median_abs).c_str(),
              format_percent(s.overall.max_abs).c_str(), s.overall.worst.c_str(),
              format_signed_percent(s.overall.mean_signed).c_str());
  TextTable t({"source", "runs", "mean |err|", "median", "max", "bias", "left out"},
              {TextTable::Align::kLeft, TextTable::Align::kRight, TextTable::Align::kRight,
               TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kRight,
               TextTable::Align::kRight});
  for (const auto& src : s.sources) {
    t.add_row({src.source, std::to_string(src.stats.runs), format_percent(src.stats.mean_abs),
               format_percent(src.stats.median_abs), format_percent(src.stats.max_abs),
               format_signed_percent(src.stats.mean_signed),
               format_percent(src.left_out_mean_abs)});
  }
  std::printf("%s", t.render(2).c_str());
  if (!s.classes.empty()) {
    TextTable k({"kind of run", "runs", "median", "9 in 10 within", "max", "bias", "worst"},
                {TextTable::Align::kLeft, TextTable::Align::kRight, TextTable::Align::kRight,
                 TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kRight,
                 TextTable::Align::kLeft});
    for (const auto& c : s.classes) {
      k.add_row({c.run_class, std::to_string(c.stats.runs), format_percent(c.stats.median_abs),
                 format_percent(c.stats.p90_abs), format_percent(c.stats.max_abs),
                 format_signed_percent(c.stats.mean_signed), c.stats.worst});
    }
    std::printf("\n%s", k.render(2).c_str());
  }
  if (loso) {
    std::printf("  leave one source out: mean |error| %s (each source predicted with the corpus's "
                "constants refitted without it)\n",
                format_percent(s.leave_one_source_out_mean_abs).c_str());
  }
  std::printf("\n");
}

// The gates on one engine's score; appends what was missed.
void check_gates(const AccuracyArgs& a, const char* engine, const models::AccuracyScore& s,
                 std::vector<std::string>* missed) {
  auto gate = [&](double limit, double value, const char* what) {
    if (limit > 0 && value > limit) {
      missed->push_back(std::string(engine) + ": " + what + " " + format_percent(value) +
                        " above " + format_percent(limit));
    }
  };
  gate(a.max_mean_error, s.overall.mean_abs, "mean |error|");
  gate(a.max_error, s.overall.max_abs, "max |error|");
  gate(a.max_loso_error, s.leave_one_source_out_mean_abs, "leave-one-source-out mean |error|");
}

// One engine's time for the run's collective on `scenario`'s fabric, alone on it as nccl-tests
// runs it; *algorithm gets NCCL's choice (the analytic model's).
models::Result<double> collective_time_s(const models::Scenario& scenario,
                                         const models::PublishedRun& run, bool des,
                                         std::string* algorithm,
                                         const sim::TransportParams& transport = {},
                                         std::uint64_t hash_draw = 0) {
  auto params = step_params_for(scenario, "");
  if (!params) return models::Error{params.message()};
  const int gpus = models::published_collective_gpus(run, scenario);
  const models::CollectiveRequest request{run.collective.op, run.collective.size_bytes,
                                          run.collective.algorithm};
  if (!des) {
    auto topo = models::collective_topology(scenario.cluster, gpus);
    if (!topo) return models::Error{topo.message()};
    auto e = models::estimate_collective(*topo, request, params->collective);
    if (!e) return models::Error{e.message()};
    if (algorithm) {
      *algorithm = std::string(models::to_string(e->algorithm)) + "/" +
                   std::string(models::to_string(e->protocol));
    }
    return e->time_s;
  }
  topology::BuildOptions build;
  build.ecmp_seed += hash_draw;
  auto graph = topology::ClusterGraph::build(scenario.cluster, &scenario, build);
  if (!graph) return models::Error{graph.message()};
  sim::SimParams sp;
  sp.collective = params->collective;
  sp.transport = transport;
  auto r = sim::simulate_collective(*graph, request, gpus, sp);
  if (!r) return models::Error{r.message()};
  return r->time_s;
}

// Predicts a contention measurement with one engine: the collective's time, or for a ratio its
// time over the `versus` configuration's (`versus_s` when given: already simulated).
EnginePrediction predict_collective_run(CollectiveRun& r, bool des,
                                        const sim::TransportParams& transport = {},
                                        std::uint64_t hash_draw = 0,
                                        std::optional<double> versus_s = std::nullopt) {
  const models::PublishedRun& p = *r.scenario.published;
  auto here =
      collective_time_s(r.scenario, p, des, des ? nullptr : &r.algorithm, transport, hash_draw);
  if (!here) return {false, 0, here.message()};
  if (!r.versus) return {true, *here, ""};
  if (versus_s) return {true, *here / *versus_s, ""};
  auto there = collective_time_s(*r.versus, p, des, nullptr, transport, hash_draw);
  if (!there) return {false, 0, "versus: " + there.message()};
  return {true, *here / *there, ""};
}

// The simulator's constant fitted on the contention measurements: RoCE's share of a congested
// link (sim/transport_model.h kRoceSharedEfficiency). It applies to the measurements on RoCE
// fabrics and only the simulator sees it.
const models::CorpusConstant& roce_shared_constant() {
  static const models::CorpusConstant kConstant = {
      .name = "RoCE's share of a congested link (simulator)",
      .why = "no public measurement of what ECN-based congestion control costs a congested link "
             "on a tuned RoCE fabric was found; the contention measurements (ECMP against planned "
             "paths, QP scaling) are the ones that depend on it",
      .shipped = sim::kRoceSharedEfficiency,
      .lo = 0.80,
      .hi = 1.00,
      .step = 0.01,
      .applies =
          [](const models::Scenario& s) {
            return s.cluster.node.nic.technology == models::LinkTechnology::kRoce;
          },
      .set = nullptr};
  return kConstant;
}

// Fits the contention constant on the collective runs (simulator) and sets each run's left-out
// prediction. REQUIRES: c.des predicted for every run.
models::Result<ConstantReport> refit_collective_constant(std::vector<CollectiveRun>& runs) {
  const models::CorpusConstant& c = roce_shared_constant();
  std::vector<models::FitRun> fit_runs;
  for (CollectiveRun& r : runs) {
    models::FitRun f{r.scenario.published->source, r.published_s, {}};
    if (c.applies(r.scenario) && r.des.ran) {
      for (int i = 0; i < c.grid_size(); ++i) {
        sim::TransportParams t;
        t.roce_shared_efficiency = c.grid(i);
        const EnginePrediction e = predict_collective_run(r, true, t);
        if (!e.ran) return models::Error{r.scenario.path + ": " + e.failure};
        f.step_s_on_grid.push_back(e.step_s);
      }
    }
    fit_runs.push_back(std::move(f));
  }
  return fit_report(c, fit_runs, [&](std::size_t i, int index) {
    runs[i].left_out_des = fit_runs[i].step_s_on_grid[static_cast<size_t>(index)];
  });
}

// One engine's prediction in the JSON rows: its time under `key` and its error, or why it did not
// run.
nlohmann::json engine_json(const EnginePrediction& e, double published_s, const char* key) {
  if (!e.ran) return {{key, nullptr}, {"error", nullptr}, {"failure", e.failure}};
  return {{key, e.step_s}, {"error", e.step_s / published_s - 1}};
}

std::string collective_text(const models::PublishedRun& p) {
  std::string out = std::string(models::to_string(p.collective.op)) + " " +
                    models::format_size(p.collective.size_bytes);
  if (p.collective.algorithm != models::CollectiveAlgorithm::kAuto) {
    out += " " + std::string(models::to_string(p.collective.algorithm));
  }
  if (p.metric == models::PublishedMetric::kBusbwRatio) {
    std::string v;
    for (const auto& o : p.versus) v += (v.empty() ? "" : ", ") + o.key_path + "=" + o.value;
    out += " vs " + v;
  }
  return out;
}

std::string collective_prediction_text(const models::PublishedRun& p, const EnginePrediction& e,
                                       double published) {
  if (!e.ran) return "-";
  const std::string value = p.metric == models::PublishedMetric::kBusbwRatio
                                ? format_significant(1 / e.step_s, 3) + "x"
                                : models::format_bandwidth(published / e.step_s * p.value);
  return value + " " + format_signed_percent(e.step_s / published - 1);
}

// `at_median_draw`: the simulator's runs on hashing fabrics at their median hash draw (no
// leave-one-source-out: the refit is the default draw's).
models::AccuracyScore score_collectives(const std::vector<CollectiveRun>& runs, bool des,
                                        bool at_median_draw = false) {
  std::vector<models::ScoredRun> scored;
  for (const CollectiveRun& r : runs) {
    const EnginePrediction& e = des ? r.des : r.analytic;
    double predicted = e.ran ? e.step_s : 0;
    if (des && at_median_draw && !r.des_draws.empty()) predicted = median_draw(r.des_draws);
    // No kind of run (run_class ""): a collective is not a training step `plan` would quote.
    scored.push_back({r.scenario.name, r.scenario.published->source, r.published_s, predicted,
                      des && !at_median_draw ? r.left_out_des : 0});
  }
  return models::score_runs(scored);
}

bool any_draws(const std::vector<CollectiveRun>& runs) {
  return std::any_of(runs.begin(), runs.end(),
                     [](const CollectiveRun& r) { return !r.des_draws.empty(); });
}

void print_training(const AccuracyArgs& a, const std::vector<CorpusRun>& runs,
                    const std::vector<ConstantReport>& constants,
                    const models::AccuracyScore& analytic, const models::AccuracyScore& des,
                    const std::vector<std::string>& not_fitting);
void print_collectives(const AccuracyArgs& a, const std::vector<CollectiveRun>& runs,
                       const models::AccuracyScore& analytic, const models::AccuracyScore& des,
                       const models::AccuracyScore& des_median_draw);

int run_accuracy(const AccuracyArgs& a) {
  std::string error;
  if (!a.write_classes.empty() && (!a.want_analytic() || !a.want_des() || !a.source.empty())) {
    return fail_bad_input("accuracy", "--write-classes needs both engines over the whole corpus "
                                      "(no --engine, no --source)");
  }
  const std::vector<std::string> files = corpus_files(a.dir, &error);
  if (!error.empty()) return fail_bad_input("accuracy", error);
  const bool want_analytic = a.want_analytic();
  const bool want_des = a.want_des();

  // 1. Load every run; a file that does not load, or has no published: section, is bad input.
  std::vector<CorpusRun> runs;
  std::vector<CollectiveRun> collectives;
  for (const std::string& f : files) {
    auto sc = models::load_scenario_file(f);
    if (!sc) return fail_bad_input("accuracy", sc.message());
    if (!sc->published) {
      return fail_bad_input("accuracy", f + ": no published: section (docs/accuracy.md)");
    }
    if (!a.source.empty() && sc->published->source != a.source) continue;
    if (models::is_collective_metric(sc->published->metric)) {
      CollectiveRun c;
      if (sc->published->metric == models::PublishedMetric::kBusbwRatio) {
        auto versus = models::load_scenario_file(f, sc->published->versus);
        if (!versus) return fail_bad_input("accuracy", "published.versus: " + versus.message());
        c.versus = std::move(*versus);
      }
      c.published_s = models::published_step_time_s(*sc->published, *sc);
      c.scenario = std::move(*sc);
      collectives.push_back(std::move(c));
      continue;
    }
    CorpusRun r;
    r.published_step_s = models::published_step_time_s(*sc->published, *sc);
    r.scenario = std::move(*sc);
    runs.push_back(std::move(r));
  }
  if (runs.empty() && collectives.empty()) {
    return fail_bad_input("accuracy", a.dir + ": no corpus run" +
                                          (a.source.empty() ? "" : " of source " + a.source));
  }

  // 2. Predict each with the engines asked for.
  ProgressLine progress("accuracy");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    CorpusRun& r = runs[i];
    auto params = step_params_for(r.scenario, "");
    if (!params) return fail_bad_input("accuracy", params.message());
    r.params = std::move(*params);
    auto step = models::predict_step(r.scenario, r.params);
    if (!step) return fail_bad_input("accuracy", r.scenario.path + ": " + step.message());
    r.memory_bytes = step->memory.total();
    r.allocator_memory_bytes = step->memory.allocator_bytes();
    r.capacity_bytes = step->memory_capacity_bytes;
    r.fits = step->fits;
    r.analytic = {true, step->step_time_s, ""};  // also the refit's reference (below)
    if (want_des) {
      auto sim = sim::simulate_step(r.scenario, r.params);
      if (sim) {
        r.des = {true, sim->step.step_time_s, ""};
      } else {
        r.des.failure = sim.message();
      }
    }
    progress.update(i + 1, runs.size() + collectives.size(), "runs");
  }
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    CollectiveRun& c = collectives[i];
    c.analytic = predict_collective_run(c, false);
    if (want_des) c.des = predict_collective_run(c, true);
    if (want_des && c.des.ran && hashes_flows(c)) {
      c.des_draws.push_back(c.des.step_s);
      // A versus fabric that does not hash (planned paths, adaptive routing) takes the same time
      // under every draw: simulated once.
      std::optional<double> versus_s;
      if (c.versus && !topology::hashes_flows(c.versus->cluster)) {
        auto t = collective_time_s(*c.versus, *c.scenario.published, true, nullptr);
        if (!t) return fail_bad_input("accuracy", c.scenario.path + ": versus: " + t.message());
        versus_s = *t;
      }
      for (int k = 1; k < kHashDraws; ++k) {
        const EnginePrediction e = predict_collective_run(c, true, {}, k, versus_s);
        if (!e.ran) return fail_bad_input("accuracy", c.scenario.path + ": " + e.failure);
        c.des_draws.push_back(e.step_s);
      }
      std::sort(c.des_draws.begin(), c.des_draws.end());
    }
    if (!c.analytic.ran) {
      return fail_bad_input("accuracy", c.scenario.path + ": " + c.analytic.failure);
    }
    progress.update(runs.size() + i + 1, runs.size() + collectives.size(), "runs");
  }
  progress.done();

  // 3. The constants the model fits on the corpus, refitted without each source in turn: the
  // leave-one-source-out predictions (the simulator's scaled by the analytic ratio).
  auto refit = refit_constants(runs);
  if (!refit) return fail_bad_input("accuracy", refit.message());
  std::vector<ConstantReport> constants = std::move(*refit);
  if (want_des && !collectives.empty()) {
    auto contention = refit_collective_constant(collectives);
    if (!contention) return fail_bad_input("accuracy", contention.message());
    if (contention->all.index >= 0) constants.push_back(std::move(*contention));
  }

  const models::AccuracyScore analytic = score(runs, false);
  const models::AccuracyScore des = score(runs, true);
  const models::AccuracyScore collective_analytic = score_collectives(collectives, false);
  const models::AccuracyScore collective_des = score_collectives(collectives, true);
  const models::AccuracyScore collective_des_median_draw =
      score_collectives(collectives, true, true);
  if (!a.write_classes.empty()) {
    // The table describes the whole corpus under both engines (checked above), or it would
    // mislead `plan`.
    if (runs.empty()) {
      return fail_bad_input("accuracy", "--write-classes: " + a.dir + " has no training run");
    }
    const auto st = write_file_atomically(
        a.write_classes,
        accuracy_classes_text(analytic, des, static_cast<int>(runs.size())));
    if (!st.ok()) return fail_bad_input("accuracy", st.message());
  }
  std::vector<std::string> missed;
  if (!runs.empty()) {
    if (want_analytic) check_gates(a, "analytic", analytic, &missed);
    if (want_des) check_gates(a, "des", des, &missed);
  }
  // Contention needs the simulator: the gate holds its largest error (the analytic model has
  // no contention and is printed for comparison only).
  if (a.max_collective_error > 0 && !collectives.empty()) {
    if (!want_des) {
      missed.push_back("collectives: --max-collective-error needs the simulator (--engine des "
                       "or both)");
    } else if (collective_des.overall.runs < static_cast<int>(collectives.size())) {
      missed.push_back("collectives: " +
                       std::to_string(collectives.size() - collective_des.overall.runs) +
                       " not simulated");
    } else if (collective_des.overall.max_abs > a.max_collective_error) {
      missed.push_back("collectives (des): max |error| " +
                       format_percent(collective_des.overall.max_abs) + " above " +
                       format_percent(a.max_collective_error) + " (" +
                       collective_des.overall.worst + ")");
    }
  }
  std::vector<std::string> not_fitting;
  for (const CorpusRun& r : runs) {
    if (!r.fits) not_fitting.push_back(r.scenario.name);
  }
  if (a.all_fit && !not_fitting.empty()) {
    missed.push_back(std::to_string(not_fitting.size()) + " runs do not fit in GPU memory");
  }

  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const CorpusRun& r : runs) {
      const models::PublishedRun& p = *r.scenario.published;
      nlohmann::json j = {
          {"name", r.scenario.name},
          {"file", r.scenario.path},
          {"source", p.source},
          {"citation", p.citation},
          {"gpus", r.scenario.workload.parallelism.gpus()},
          {"gpu", r.scenario.cluster.node.gpu.id},
          {"class", models::accuracy_class(r.scenario)},
          {"metric", models::to_string(p.metric)},
          {"value", p.value},
          {"published_step_time_s", r.published_step_s},
          {"memory_per_gpu_bytes", r.memory_bytes},
          {"allocator_memory_per_gpu_bytes", r.allocator_memory_bytes},
          {"memory_capacity_bytes", r.capacity_bytes},
          {"fits", r.fits},
          {"published_memory_per_gpu_bytes",
           p.memory_per_gpu_bytes > 0 ? nlohmann::json(p.memory_per_gpu_bytes) : nullptr}};
      if (p.flops != models::FlopsConvention::kNone) j["flops"] = models::to_string(p.flops);
      if (!p.not_modelled.empty()) j["not_modelled"] = p.not_modelled;
      if (want_analytic) j["analytic"] = engine_json(r.analytic, r.published_step_s, "step_time_s");
      if (want_des) j["des"] = engine_json(r.des, r.published_step_s, "step_time_s");
      rows.push_back(std::move(j));
    }
    nlohmann::json fitted = nlohmann::json::array();
    for (const ConstantReport& rep : constants) {
      nlohmann::json without = nlohmann::json::object();
      for (const auto& [src, fit] : rep.without) {
        without[src] = fit.index < 0 ? nlohmann::json(nullptr) : nlohmann::json(fit.value);
      }
      fitted.push_back({{"name", rep.constant->name},
                        {"shipped", rep.constant->shipped},
                        {"corpus_best", rep.all.value},
                        {"runs", rep.all.runs},
                        {"mean_abs_error_at_best", rep.all.mean_abs},
                        {"without_source", without}});
    }
    nlohmann::json crows = nlohmann::json::array();
    for (const CollectiveRun& c : collectives) {
      const models::PublishedRun& p = *c.scenario.published;
      nlohmann::json j = {{"name", c.scenario.name},
                          {"file", c.scenario.path},
                          {"source", p.source},
                          {"citation", p.citation},
                          {"gpus", models::published_collective_gpus(p, c.scenario)},
                          {"op", models::to_string(p.collective.op)},
                          {"size_bytes", p.collective.size_bytes},
                          {"metric", models::to_string(p.metric)},
                          {"value", p.value},
                          {"published_time_s", c.published_s},
                          {"algorithm", c.algorithm}};
      if (p.metric == models::PublishedMetric::kBusbwRatio) {
        nlohmann::json v = nlohmann::json::object();
        for (const auto& o : p.versus) v[o.key_path] = o.value;
        j["versus"] = v;
        j["published_time_s"] = nullptr;
        j["published_time_ratio"] = c.published_s;
      }
      if (!p.not_modelled.empty()) j["not_modelled"] = p.not_modelled;
      if (want_analytic) j["analytic"] = engine_json(c.analytic, c.published_s, "time_s");
      if (want_des) j["des"] = engine_json(c.des, c.published_s, "time_s");
      if (!c.des_draws.empty()) {
        const double median = median_draw(c.des_draws);
        j["des"]["hash_draws"] = {{"count", c.des_draws.size()},
                                  {"min_time_s", c.des_draws.front()},
                                  {"median_time_s", median},
                                  {"max_time_s", c.des_draws.back()},
                                  {"median_error", median / c.published_s - 1}};
      }
      crows.push_back(std::move(j));
    }
    nlohmann::json out = {{"dir", a.dir},         {"runs", rows},
                          {"collective_runs", crows}, {"gates_missed", missed},
                          {"fitted_constants", fitted}};
    if (want_analytic) out["analytic"] = score_json(analytic);
    if (want_des) out["des"] = score_json(des);
    if (!collectives.empty()) {
      if (want_analytic) out["collective_analytic"] = score_json(collective_analytic);
      if (want_des) out["collective_des"] = score_json(collective_des);
      if (any_draws(collectives)) {
        out["collective_des_median_hash_draw"] = score_json(collective_des_median_draw);
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return missed.empty() ? kExitOk : kExitCheckFailed;
  }

  if (!runs.empty()) print_training(a, runs, constants, analytic, des, not_fitting);
  if (!collectives.empty()) {
    print_collectives(a, collectives, collective_analytic, collective_des,
                      collective_des_median_draw);
  }
  for (const auto& m : missed) std::printf("GATE MISSED: %s\n", m.c_str());
  return missed.empty() ? kExitOk : kExitCheckFailed;
}

void print_training(const AccuracyArgs& a, const std::vector<CorpusRun>& runs,
                    const std::vector<ConstantReport>& constants,
                    const models::AccuracyScore& analytic, const models::AccuracyScore& des,
                    const std::vector<std::string>& not_fitting) {
  const bool want_analytic = a.want_analytic();
  const bool want_des = a.want_des();
  std::printf("Accuracy on %zu published runs (%s): error = predicted / published step time - 1 "
              "(negative: the model is too fast)\n\n",
              runs.size(), a.dir.c_str());
  std::vector<std::string> header = {"run", "source", "GPUs", "published", "step"};
  if (want_analytic) header.push_back("analytic");
  if (want_des) header.push_back("des");
  for (const char* h : {"memory", "published mem", "fits"}) header.push_back(h);
  std::vector<TextTable::Align> align(header.size(), TextTable::Align::kRight);
  align[0] = align[1] = TextTable::Align::kLeft;
  TextTable t(header, align);
  for (const CorpusRun& r : runs) {
    const models::PublishedRun& p = *r.scenario.published;
    std::vector<std::string> row = {r.scenario.name, p.source,
                                    std::to_string(r.scenario.workload.parallelism.gpus()),
                                    published_text(p), models::format_time(r.published_step_s)};
    if (want_analytic) row.push_back(prediction_text(r.analytic, r.published_step_s));
    if (want_des) row.push_back(prediction_text(r.des, r.published_step_s));
    row.push_back(models::format_size(r.memory_bytes));
    row.push_back(p.memory_per_gpu_bytes > 0
                      ? models::format_size(p.memory_per_gpu_bytes) + " " +
                            format_signed_percent(r.allocator_memory_bytes /
                                                      p.memory_per_gpu_bytes - 1)
                      : "-");
    row.push_back(r.fits ? "yes" : "NO");
    t.add_row(std::move(row));
  }
  std::printf("%s\n", t.render(2).c_str());
  for (const CorpusRun& r : runs) {
    if (want_des && !r.des.ran) {
      std::printf("  %s: not simulated: %s\n", r.scenario.name.c_str(), r.des.failure.c_str());
    }
  }
  bool heading = false;
  for (const CorpusRun& r : runs) {
    const std::string& why = r.scenario.published->not_modelled;
    if (why.empty()) continue;
    if (!heading) std::printf("Not modelled (the corpus files say what these runs relied on):\n");
    heading = true;
    std::printf("  %s: %s\n", r.scenario.name.c_str(), why.c_str());
  }
  if (heading) std::printf("\n");
  print_constants(constants);
  if (want_analytic) print_score("analytic", analytic);
  if (want_des) print_score("des", des);
  if (!not_fitting.empty()) {
    std::printf("Do not fit in GPU memory (%zu):", not_fitting.size());
    for (const auto& n : not_fitting) std::printf(" %s", n.c_str());
    std::printf("\n");
  }
}

void print_collectives(const AccuracyArgs& a, const std::vector<CollectiveRun>& runs,
                       const models::AccuracyScore& analytic, const models::AccuracyScore& des,
                       const models::AccuracyScore& des_median_draw) {
  const bool want_analytic = a.want_analytic();
  const bool want_des = a.want_des();
  std::printf("\nContention: %zu published collective measurements, each alone on its fabric as "
              "nccl-tests runs it; error = predicted / published time - 1 (a ratio: of the two "
              "times). The analytic model has no contention: only the simulator is gated.\n\n",
              runs.size());
  std::vector<std::string> header = {"run", "source", "GPUs", "collective", "published"};
  if (want_analytic) header.push_back("analytic");
  if (want_des) header.push_back("des");
  std::vector<TextTable::Align> align(header.size(), TextTable::Align::kRight);
  align[0] = align[1] = align[3] = TextTable::Align::kLeft;
  TextTable t(header, align);
  for (const CollectiveRun& c : runs) {
    const models::PublishedRun& p = *c.scenario.published;
    std::vector<std::string> row = {
        c.scenario.name, p.source,
        std::to_string(models::published_collective_gpus(p, c.scenario)),
        collective_text(p), published_text(p)};
    if (want_analytic) row.push_back(collective_prediction_text(p, c.analytic, c.published_s));
    if (want_des) row.push_back(collective_prediction_text(p, c.des, c.published_s));
    t.add_row(std::move(row));
  }
  std::printf("%s\n", t.render(2).c_str());
  for (const CollectiveRun& c : runs) {
    if (want_des && !c.des.ran) {
      std::printf("  %s: not simulated: %s\n", c.scenario.name.c_str(), c.des.failure.c_str());
    }
    const std::string& why = c.scenario.published->not_modelled;
    if (!why.empty()) std::printf("  %s: %s\n", c.scenario.name.c_str(), why.c_str());
  }
  if (any_draws(runs)) {
    std::printf("  des is the default ECMP hash seed's draw; over %d draws of the hash:\n",
                kHashDraws);
    for (const CollectiveRun& c : runs) {
      if (c.des_draws.empty()) continue;
      const models::PublishedRun& p = *c.scenario.published;
      auto text = [&](double step_s) {
        return collective_prediction_text(p, {true, step_s, ""}, c.published_s);
      };
      std::printf("  %s: median %s, from %s to %s\n", c.scenario.name.c_str(),
                  text(median_draw(c.des_draws)).c_str(), text(c.des_draws.front()).c_str(),
                  text(c.des_draws.back()).c_str());
    }
    std::printf("\n");
  }
  // No corpus-fitted constant applies to a collective: no leave-one-source-out line.
  if (want_analytic) print_score("collectives, analytic (no contention)", analytic, false);
  if (want_des) print_score("collectives, des", des, false);
  if (any_draws(runs)) {
    print_score("collectives, des at the median hash draw", des_median_draw, false);
  }
}

const bool kRegistered = register_command(
    {"accuracy", "score the model on published runs: per-run error, per source, leave one out", 75,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<AccuracyArgs>();
       sub.add_option("dir", a->dir,
                      "corpus folder, searched recursively for *.yaml (default "
                      "scenarios/published)");
       sub.add_option("--engine", a->engine, "both (default), analytic or des")
           .check_member({"both", "analytic", "des"});
       sub.add_option("--source", a->source, "only the runs of this source id");
       sub.add_flag("--json", a->json, "one JSON object: runs, per-engine scores, missed gates");
       sub.add_option("--max-mean-error", a->max_mean_error,
                      "exit 1 when an engine's mean |error| is above this fraction (0.05)")
           .check_range(0.0, 10.0);
       sub.add_option("--max-error", a->max_error,
                      "exit 1 when an engine's largest |error| is above this fraction")
           .check_range(0.0, 10.0);
       sub.add_option("--max-loso-error", a->max_loso_error,
                      "exit 1 when the leave-one-source-out mean |error| is above this fraction")
           .check_range(0.0, 10.0);
       sub.add_option("--max-collective-error", a->max_collective_error,
                      "exit 1 when the simulator's largest |error| on the contention "
                      "measurements (busbw, busbw_ratio) is above this fraction")
           .check_range(0.0, 10.0);
       sub.add_flag("--all-fit", a->all_fit, "exit 1 when a run does not fit in GPU memory");
       sub.add_option("--write-classes", a->write_classes,
                      "write the errors by kind of run (GPU generation, dense or MoE) to this "
                      "JSON file: scenarios/published/accuracy-classes.json, which `plan` "
                      "quotes (needs both engines, the whole corpus)");
       return [a] { return run_accuracy(*a); };
     },
     {"clustersim accuracy --engine analytic",
      "clustersim accuracy --source dgxc-25.04 --engine analytic"}});

}  // namespace
}  // namespace clustersim::tools
