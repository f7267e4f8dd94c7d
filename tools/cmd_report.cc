// `clustersim report [SCENARIO...] -o report.html`: one self-contained HTML page a team can read
// together: for each scenario the plan's summary, where the step goes, memory per GPU against its
// capacity, the scaling curve, owning against renting over time, and the fabric; with several
// scenarios, the comparison and the fabric ladder. Every chart is inline SVG (no network needed
// to open the page) and every figure is also in a table. Text from the user's files is escaped.
// The page is written atomically: on bad input nothing is written.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/cost_model.h"
#include "models/step_model.h"
#include "models/units.h"
#include "sim/step_sim.h"
#include "tools/accuracy_classes.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/html_report.h"
#include "tools/row_journal.h"
#include "tools/scenario_input.h"
#include "tools/tco_report.h"
#include "tools/weak_scaling.h"
#include "topology/cluster_graph.h"
#include "topology/fabric_metrics.h"

namespace clustersim::tools {
namespace {

using models::format_count;
using models::format_percent;
using models::format_size;
using models::format_time;
using models::format_usd;

struct ReportArgs {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;
  std::string out;
  std::string engine = "analytic";
};

// One scenario, planned.
struct Planned {
  models::Scenario scenario;
  models::StepResult step;
  models::RunCost cost;
  std::optional<Ownership> ownership;
  std::vector<std::pair<int, double>> scaling;  // (GPUs, tokens/s), analytic
  std::optional<topology::FabricMetrics> fabric;
  std::string fabric_problem;
  bool des = false;  // the step is the simulator's
};

models::Result<Planned> plan_one(const std::string& path,
                                 const std::vector<models::ScenarioOverride>& overrides,
                                 bool des) {
  auto s = load_scenario_or_default(path, overrides);
  if (!s) return models::Error{s.message()};
  Planned p;
  p.scenario = std::move(s).value();
  p.des = des;
  auto params = step_params_for(p.scenario, "");
  if (!params) return models::Error{params.message()};
  // The simulator runs the analytic model first and returns its answer beside its own.
  models::StepResult analytic;
  if (des) {
    auto simulated = sim::simulate_step(p.scenario, *params);
    if (!simulated) return models::Error{p.scenario.path + ": " + simulated.message()};
    p.step = simulated->step;
    analytic = simulated->analytic;
  } else {
    auto step = models::predict_step(p.scenario, *params);
    if (!step) return models::Error{p.scenario.path + ": " + step.message()};
    p.step = analytic = *step;
  }
  p.cost = models::estimate_run_cost(p.scenario, p.step);
  if (p.scenario.cost.present) p.ownership = estimate_ownership(p.scenario, p.step, p.cost);
  // The scaling curve: the analytic model at 1/4 to 4 x the nodes (weak scaling).
  for (double f : {0.25, 0.5, 1.0, 2.0, 4.0}) {
    if (f == 1.0) {
      p.scaling.emplace_back(analytic.gpus, analytic.tokens_per_s);
      continue;
    }
    auto sized = scaled(p.scenario, f);
    if (!sized) continue;
    auto r = models::predict_step(*sized, *params);
    if (r) p.scaling.emplace_back(r->gpus, r->tokens_per_s);
  }
  if (p.scenario.cluster.nodes > 1) {
    auto graph = topology::ClusterGraph::build(p.scenario.cluster, &p.scenario);
    if (graph) {
      p.fabric = topology::compute_metrics(*graph);
    } else {
      p.fabric_problem = graph.message();
    }
  }
  return p;
}

std::string fmt_time(double s) { return format_time(s); }
std::string fmt_size(double b) { return format_size(b); }
std::string fmt_usd(double v) { return format_usd(v); }
std::string fmt_usd_fine(double v) { return usd_fine(v); }
std::string fmt_count(double v) { return format_count(v); }
std::string fmt_gpus(double v) { return std::to_string(static_cast<long long>(std::llround(v))); }
std::string fmt_months(double m) { return models::format_significant(m, 3) + " mo"; }

// The sections of one scenario. `charts` counts the charts drawn.
std::string scenario_section(const Planned& p, const std::string& anchor, int* charts) {
  const models::Scenario& s = p.scenario;
  const models::StepResult& r = p.step;
  const auto& b = r.breakdown;
  std::string h = "<h2 id=\"" + anchor + "\">" + html::escape(s.name) + "</h2>\n";
  h += "<p class=\"note\">" + html::escape(s.path) +
       (s.note.empty() ? "" : " &mdash; " + html::escape(s.note)) + "</p>\n";

  // 1. Summary.
  std::vector<std::vector<std::string>> summary = {
      {"cluster", std::to_string(r.gpus) + " GPUs: " + std::to_string(s.cluster.nodes) + " nodes x " +
                      std::to_string(s.cluster.node.gpus_per_node) + " " + s.cluster.node.gpu.id +
                      (s.cluster.node.nics_per_node > 0
                           ? ", " + std::to_string(s.cluster.node.nics_per_node) + " x " +
                                 s.cluster.node.nic.id + " per node"
                           : std::string())},
      {"workload", s.workload.model.id + ", " + std::to_string(s.workload.seq_len) +
                       " tokens x " + std::to_string(s.workload.global_batch) + " sequences"},
      {"step time", format_time(r.step_time_s)},
      {"tokens/s", format_count(r.tokens_per_s) + " (" + format_count(r.tokens_per_s / r.gpus) +
                       " per GPU)"},
      {"MFU", format_percent(r.mfu)},
      {"accuracy", kind_accuracy_line(s, p.des)},
      {"memory per GPU", format_size(r.memory.total()) + " of " +
                             format_size(r.memory_capacity_bytes) +
                             (r.fits ? " (fits)" : " (DOES NOT FIT)")},
  };
  if (p.cost.priced) {
    summary.push_back({"cost per M tokens (cost.gpu_hour)", usd_fine(p.cost.usd_per_million_tokens)});
  }
  if (p.cost.has_run) {
    summary.push_back({"whole run", format_time(p.cost.effective_run_time_s) + " at goodput " +
                                        format_percent(p.cost.goodput)});
  }
  if (p.ownership) {
    const auto& t = p.ownership->tco;
    summary.push_back({"owned $/M tokens", usd_fine(t.owned_usd_per_million_tokens)});
    summary.push_back({"rented on demand $/M tokens", usd_fine(t.on_demand_usd_per_million_tokens)});
  }
  h += "<h3>Summary</h3>\n" + html::table({"figure", "value"}, summary);

  // 2. Where the step goes.
  std::vector<html::Bar> parts = {{"compute", b.compute_s},
                                  {"exposed TP comm", b.tp.exposed_s},
                                  {"exposed DP comm", b.dp.exposed_s},
                                  {"exposed PP comm", b.pp.exposed_s},
                                  {"exposed CP comm", b.cp.exposed_s}};
  if (b.ep.total_s > 0) parts.push_back({"exposed EP comm", b.ep.exposed_s});
  parts.push_back({"pipeline bubble", b.bubble_s});
  parts.push_back({"optimizer", b.optimizer_s});
  h += "<h3>Where the step goes</h3>\n" +
       html::bar_chart("Step time breakdown of " + s.name + " (" + format_time(r.step_time_s) +
                           " per step)",
                       parts, fmt_time);
  ++*charts;
  std::vector<std::vector<std::string>> rows;
  for (const auto& part : parts) {
    rows.push_back({part.label, format_time(part.value), format_percent(part.value, r.step_time_s)});
  }
  rows.push_back({"step", format_time(r.step_time_s), "100%"});
  h += html::table({"per step", "time", "share"}, rows);

  // 3. Memory per GPU against its capacity.
  const auto& m = r.memory;
  const std::vector<html::Bar> mem = {{"weights", m.weights_bytes},
                                      {"gradients", m.gradients_bytes},
                                      {"optimizer", m.optimizer_bytes},
                                      {"activations", m.activations_bytes},
                                      {"logits", m.logits_bytes},
                                      {"gathered weights", m.gathered_weights_bytes},
                                      {"context + NCCL", m.outside_allocator_bytes},
                                      {"total", m.total()}};
  h += "<h3>Memory per GPU</h3>\n" +
       html::bar_chart("Memory per GPU of " + s.name + " against its capacity", mem, fmt_size,
                       r.memory_capacity_bytes, "capacity " + format_size(r.memory_capacity_bytes));
  ++*charts;
  rows.clear();
  for (const auto& part : mem) rows.push_back({part.label, format_size(part.value)});
  rows.push_back({"capacity", format_size(r.memory_capacity_bytes)});
  h += html::table({"busiest GPU", "bytes"}, rows);

  // 4. Scaling.
  if (!p.scaling.empty()) {
    html::Series series{s.name, {}};
    rows.clear();
    for (const auto& [g, tps] : p.scaling) {
      series.points.emplace_back(g, tps);
      rows.push_back({std::to_string(g), format_count(tps), format_count(tps / g)});
    }
    h += "<h3>Scaling</h3>\n<p class=\"note\">The same layout grown and shrunk by whole nodes, "
         "the batch per pipeline kept (weak scaling); analytic model.</p>\n" +
         html::line_chart("Tokens/s against GPUs, " + s.name, "GPUs", "tokens/s", {series}, true,
                          fmt_gpus, fmt_count) +
         html::table({"GPUs", "tokens/s", "per GPU"}, rows);
    ++*charts;
  }

  // 5. Owning against renting over time.
  if (p.ownership) {
    const auto& t = p.ownership->tco;
    const double horizon = std::max(12.0, std::ceil(t.in.depreciation_years * 12));
    std::vector<html::Series> lines;
    for (auto how : {models::Sourcing::kOwned, models::Sourcing::kOnDemand,
                     models::Sourcing::kReserved1y, models::Sourcing::kReserved3y}) {
      html::Series line{std::string(models::to_string(how)), {}};
      for (double mo = 0; mo <= horizon + 1e-9; mo += horizon / 20) {
        line.points.emplace_back(mo, models::cumulative_usd(t, how, mo));
      }
      lines.push_back(std::move(line));
    }
    h += "<h3>Owning vs renting over time</h3>\n<p class=\"verdict\">" +
         html::escape(breakeven_line(t)) + "</p>\n" +
         html::line_chart("Cash spent, owning vs renting the same worked hours, " + s.name,
                          "months", "USD", lines, false, fmt_months, fmt_usd);
    ++*charts;
    rows.clear();
    for (int year = 1; year <= static_cast<int>(horizon / 12); ++year) {
      std::vector<std::string> row{std::to_string(year)};
      for (const auto& line : lines) {
        row.push_back(format_usd(models::cumulative_usd(
            t, static_cast<models::Sourcing>(&line - lines.data()), year * 12.0)));
      }
      rows.push_back(row);
    }
    h += html::table({"after year", "owned", "on demand", "reserved 1 y", "reserved 3 y"}, rows);
    rows.clear();
    for (const auto& c : t.capital) {
      rows.push_back({c.item, models::format_significant(c.count, 4), format_usd(c.unit_usd),
                      format_usd(c.total_usd)});
    }
    rows.push_back({"installation", "", "", format_usd(t.installation_usd)});
    rows.push_back({"capital", "", "", format_usd(t.capital_usd)});
    h += html::table({"capital", "count", "each", "total"}, rows);
    h += html::table(
        {"a year owned", "USD"},
        {{"depreciation", format_usd(t.depreciation_usd)},
         {"energy", format_usd(t.energy_usd)},
         {t.in.own_facility ? "own facility" : "colocation", format_usd(t.facility_usd)},
         {"support", format_usd(t.support_usd)},
         {"staff", format_usd(t.staff_usd)},
         {"total", format_usd(t.annual_usd())},
         {"per GPU-hour worked (owned)", usd_fine(t.owned_usd_per_gpu_hour)},
         {"per GPU-hour on demand", usd_fine(t.on_demand_usd_per_gpu_hour)},
         {"per GPU-hour worked, reserved 1 y / 3 y",
          usd_fine(t.reserved_1y_usd_per_gpu_hour) + " / " +
              usd_fine(t.reserved_3y_usd_per_gpu_hour)}});
  }

  // 6. The fabric.
  if (p.fabric && !p.fabric->tiers.empty()) {
    const auto& f = *p.fabric;
    std::vector<html::Tier> tiers;
    rows.clear();
    for (const auto& t : f.tiers) {
      tiers.push_back({t.name, t.switches});
      rows.push_back({t.name, std::to_string(t.switches), std::to_string(t.ports_used) + " of " +
                                                               std::to_string(t.ports)});
    }
    h += "<h3>Fabric</h3>\n" +
         html::fabric_picture("Fabric of " + s.name + ": " +
                                  std::string(models::to_string(s.cluster.fabric.topology)) + ", " +
                                  s.cluster.fabric.switch_spec.id,
                              tiers, s.cluster.nodes, "nodes");
    ++*charts;
    rows.push_back({"cables (transceivers)", std::to_string(f.cables),
                    std::to_string(f.transceivers)});
    rows.push_back({"bisection", models::format_bandwidth(f.bisection_Bps), ""});
    h += html::table({"tier", "switches", "ports used"}, rows);
  } else if (!p.fabric_problem.empty()) {
    h += "<h3>Fabric</h3>\n<p class=\"note\">" + html::escape(p.fabric_problem) + "</p>\n";
  }
  return h;
}

std::string comparison_section(const std::vector<Planned>& ps, int* charts) {
  std::string h = "<h2 id=\"comparison\">Comparison</h2>\n";
  std::vector<html::Bar> speed;
  std::vector<html::Bar> owned;
  std::vector<std::vector<std::string>> rows;
  std::vector<LadderEntry> entries;
  for (const auto& p : ps) {
    speed.push_back({p.scenario.name, p.step.tokens_per_s});
    std::vector<std::string> row{p.scenario.name, std::to_string(p.step.gpus),
                                 p.scenario.cluster.node.nics_per_node > 0
                                     ? p.scenario.cluster.node.nic.id
                                     : std::string("-"),
                                 format_time(p.step.step_time_s), format_count(p.step.tokens_per_s),
                                 format_percent(p.step.mfu)};
    if (p.ownership) {
      const auto& t = p.ownership->tco;
      owned.push_back({p.scenario.name, t.owned_usd_per_million_tokens});
      row.push_back(format_usd(t.fabric_usd));
      row.push_back(usd_fine(t.owned_usd_per_million_tokens));
      row.push_back(usd_fine(t.on_demand_usd_per_million_tokens));
      entries.push_back({p.scenario.name, p.scenario.cluster.node.nic.id, p.step.gpus,
                         p.scenario.cluster.node.gpus_per_node, p.step.step_time_s, &t});
    } else {
      row.insert(row.end(), {"-", "-", "-"});
    }
    rows.push_back(row);
  }
  h += html::bar_chart("Tokens/s of each design", speed, fmt_count);
  ++*charts;
  if (!owned.empty()) {
    h += html::bar_chart("Owned cost per million tokens, fabric priced in", owned, fmt_usd_fine);
    ++*charts;
  }
  h += html::table({"design", "GPUs", "NIC", "step", "tokens/s", "MFU", "fabric price",
                    "owned $/M tok", "on demand $/M tok"},
                   rows);
  if (const auto rungs = fabric_ladder(entries); !rungs.empty()) {
    const LadderTable lt = ladder_table(entries, rungs);
    h += "<h3>Fabric ladder</h3>\n<p class=\"verdict\">" +
         html::escape(ladder_verdict(entries, rungs)) + "</p>\n" + html::table(lt.header, lt.rows);
  }
  return h;
}

std::string sources_section() {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : models::price_book()) {
    rows.push_back({r.id, models::format_significant(r.value, 6), r.unit, r.source});
  }
  return "<h2 id=\"prices\">Prices and their sources</h2>\n<p class=\"note\">Defaults of the "
         "cost: keys; a scenario overrides any of them (docs/cost.md).</p>\n" +
         html::table({"id", "value", "unit", "source"}, rows);
}

int run_report(const ReportArgs& a) {
  const std::string cmd = "report";
  if (a.out.empty()) return fail_bad_input(cmd, "-o FILE.html: where to write the page");
  auto overrides = parse_set_options(a.sets);
  if (!overrides) return fail_bad_input(cmd, overrides.message());
  const std::vector<std::string> paths = a.scenarios.empty() ? std::vector<std::string>{""}
                                                             : a.scenarios;
  std::vector<Planned> planned;
  for (const auto& path : paths) {
    auto p = plan_one(path, *overrides, a.engine == "des");
    if (!p) return fail_bad_input(cmd, p.message());
    planned.push_back(std::move(p).value());
  }
  int charts = 0;
  std::string body = "<h1>clustersim report</h1>\n<p class=\"note\">" + std::string(kToolVersion) +
                     "; step times from the " +
                     (a.engine == "des" ? "discrete-event simulation" : "analytic model") +
                     ". Scenarios:</p>\n<ul>";
  for (std::size_t i = 0; i < planned.size(); ++i) {
    body += "<li><a href=\"#s" + std::to_string(i) + "\">" + html::escape(planned[i].scenario.name) +
            "</a></li>";
  }
  body += "</ul>\n";
  if (planned.size() > 1) body += comparison_section(planned, &charts);
  for (std::size_t i = 0; i < planned.size(); ++i) {
    body += scenario_section(planned[i], "s" + std::to_string(i), &charts);
  }
  body += sources_section();
  std::string title = "clustersim report: " + planned.front().scenario.name;
  if (planned.size() > 1) title += " and " + std::to_string(planned.size() - 1) + " more";
  const auto written = write_file_atomically(a.out, html::page(title, body, charts));
  if (!written.ok()) return fail_bad_input(cmd, "-o " + a.out + ": " + written.message());
  std::printf("Report of %zu scenario%s (%d charts) written to %s\n", planned.size(),
              planned.size() == 1 ? "" : "s", charts, a.out.c_str());
  return kExitOk;
}

const bool kRegistered = register_command(
    {"report",
     "one self-contained HTML page: plan, step and memory charts, scaling, owning vs renting, "
     "fabric, comparison",
     45, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<ReportArgs>();
       sub.add_option("scenarios", a->scenarios,
                      "scenario YAML files (default: the embedded 4-node H100 scenario)");
       sub.add_option("-o,--output", a->out, "the HTML file to write (atomically)");
       sub.add_option("--set", a->sets,
                      "KEY=VALUE: set a dotted scenario key in every scenario before loading (as "
                      "sweep --set, one value; repeatable), e.g. cost.utilization=0.6");
       sub.add_option("--engine", a->engine,
                      "analytic (default: the formulas) or des (the SimGrid simulation)")
           .check_member({"analytic", "des"});
       return [a] { return run_report(*a); };
     },
     {"clustersim report -o /tmp/clustersim-report.html",
      "clustersim report scenarios/tco/ladder-04n-roce200.yaml scenarios/tco/ladder-04n-ndr.yaml "
      "-o /tmp/clustersim-ladder.html",
      "clustersim report scenarios/tco/h100-128-owned-vs-rented-year.yaml --set "
      "cost.utilization=0.6 -o /tmp/clustersim-tco.html"}});

}  // namespace
}  // namespace clustersim::tools
