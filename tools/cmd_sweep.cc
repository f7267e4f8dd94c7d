// `clustersim sweep SCENARIO --set key=v1,v2 [--set ...]`: a grid over scenario parameters. Each
// combination of the --set values is applied to the scenario's YAML at its dotted key (the
// loader then validates it as it validates a file, errors naming the --set), and planned with
// the analytic model (or the simulator, --engine des; or the best layout per row, --search). One
// row per combination: the key figures, or why that combination is invalid (not fatal). --csv
// FILE writes the rows for a spreadsheet; --threads evaluates analytic rows in parallel. Under
// mpirun or srun the rows spread over the ranks (tools/distributed_rows.h) and rank 0 writes the
// output, byte for byte as one process would; every finished row goes to a journal next to the
// output (tools/row_journal.h), from which --resume reruns only the missing rows.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models/cost_model.h"
#include "models/parallelism_search.h"
#include "models/step_model.h"
#include "models/text_file.h"
#include "models/units.h"
#include "sim/step_sim.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/distributed_rows.h"
#include "tools/layout_report.h"
#include "tools/rank_channel.h"
#include "tools/row_journal.h"
#include "tools/scenario_input.h"
#include "tools/tco_report.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_count;
using models::format_significant;
using models::format_size;
using models::format_time;
using Align = TextTable::Align;

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string engine = "analytic";
  bool json = false;
  std::string csv;
  std::string calibration;
  bool search = false;
  int threads = std::max(1u, std::thread::hardware_concurrency());
  std::string journal;      // "" : FILE.journal beside --csv FILE, else none
  bool resume = false;      // run only the rows the journal lacks
  std::string row_timeout;  // "" : no limit
  // The table shows the owned cost per million tokens: the scenario has a cost: section or the
  // sweep varies a cost key (set once the base scenario is read).
  bool owned_column = false;
};

// One --set: its keys (several joined by '+' vary together) and its values, in the order given:
// values[i][k] is the i-th value of keys[k].
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
};

// One combination and what became of it.
struct Row {
  std::vector<std::string> values;                           // one per key of every axis, in order
  std::vector<std::pair<std::string, std::string>> derived;  // keys the sweep filled in
  std::optional<models::RankedLayout> result;
  // Owning vs renting for the row's step, where its scenario has a cost: section.
  std::optional<Ownership> ownership;
  double analytic_step_s = 0;  // --engine des: the formula's step, for comparison
  std::string error;
};

models::Result<std::vector<Axis>> parse_axes(const std::vector<std::string>& sets) {
  std::vector<Axis> axes;
  std::vector<std::string> swept;  // every key so far
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return models::Error{"--set " + s + ": expected key=v1,v2,... (e.g. cluster.nodes=8,16)"};
    }
    Axis a;
    a.keys = split_values(s.substr(0, eq), '+');
    if (auto st = check_set_keys(s, a.keys, &swept); !st.ok()) return models::Error{st.message()};
    for (const std::string& value : split_values(s.substr(eq + 1), ',')) {
      std::vector<std::string> parts =
          a.keys.size() > 1 ? split_values(value, '+') : std::vector<std::string>{value};
      if (parts.size() != a.keys.size()) {
        return models::Error{"--set " + s + ": '" + value + "' gives " +
                             std::to_string(parts.size()) + " values for " +
                             std::to_string(a.keys.size()) + " keys (join them with +)"};
      }
      for (const auto& v : parts) {
        if (v.empty()) return models::Error{"--set " + s + ": an empty value in the list"};
      }
      a.values.push_back(std::move(parts));
    }
    axes.push_back(std::move(a));
  }
  if (axes.empty()) return models::Error{"give at least one --set key=v1,v2,..."};
  return axes;
}

std::vector<std::string> all_keys(const std::vector<Axis>& axes) {
  std::vector<std::string> keys;
  for (const Axis& ax : axes) keys.insert(keys.end(), ax.keys.begin(), ax.keys.end());
  return keys;
}

// The calibration overlay read once for every row: --calibration FILE, else the base scenario's
// calibration: key, else none. A row whose own calibration: key names another file reads that.
struct SweepCalibration {
  std::string path;  // "" = none
  models::Result<std::optional<models::Calibration>> overlay = std::optional<models::Calibration>();
};

// The step parameters of one row's scenario, from the overlay already read where it is the
// row's (each row still checks the GPU it was measured on against its own cluster).
models::Result<models::StepParams> row_step_params(const SweepArgs& a,
                                                   const SweepCalibration& calibration,
                                                   const models::Scenario& s) {
  const std::string& path = a.calibration.empty() ? s.calibration_path : a.calibration;
  if (path != calibration.path) return step_params_for(s, a.calibration);
  if (!calibration.overlay) return models::Error{calibration.overlay.message()};
  return step_params_with(s, *calibration.overlay);
}

// Loads and plans one combination; `planned` receives the scenario the row planned (its
// overrides and layout applied) when it has a result.
Row plan_row(const SweepArgs& a, const std::string& text, const models::Scenario& base,
             const SweepCalibration& calibration, const std::vector<Axis>& axes,
             const std::vector<std::size_t>& pick, models::Scenario* planned) {
  Row row;
  std::vector<models::ScenarioOverride> overrides;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    for (std::size_t k = 0; k < axes[i].keys.size(); ++k) {
      row.values.push_back(axes[i].values[pick[i]][k]);
      overrides.push_back({axes[i].keys[k], axes[i].values[pick[i]][k]});
    }
  }
  if (!a.search) {
    if (auto dp = derived_dp(base, overrides)) {
      overrides.push_back({"workload.parallelism.dp", std::to_string(*dp)});
      row.derived.push_back({"workload.parallelism.dp", std::to_string(*dp)});
    }
  }
  // The search replaces the layout: one that no longer divides is not this row's error.
  auto loaded = models::load_scenario_text(text, base.path, overrides, /*check_layout=*/!a.search);
  if (!loaded) {
    row.error = loaded.message();
    return row;
  }
  models::Scenario s = std::move(loaded).value();
  auto params = row_step_params(a, calibration, s);
  if (!params) {
    row.error = params.message();
    return row;
  }
  constexpr models::SearchObjective kObjective = models::SearchObjective::kTokensPerSecond;
  std::optional<models::RankedLayout> analytic;  // the analytic prediction, once made
  if (a.search) {
    models::SearchOptions options;
    options.top = 1;
    options.objective = kObjective;
    auto best = models::search_layouts(s, *params, options);
    if (!best) {
      row.error = best.message();
      return row;
    }
    if (best->top.empty()) {
      row.error = "no layout fits in memory (" + std::to_string(best->layouts) + " tried)";
      return row;
    }
    // The search ranked its winner with predict_step and rank_step as below: no second pass.
    analytic = std::move(best->top.front());
    s = with_layout(s, analytic->layout);
  }
  if (a.engine == "des") {
    // The simulator runs the analytic model first and returns its answer beside its own.
    auto sim = sim::simulate_step(s, *params);
    if (!sim) {
      // Where the analytic model is what failed, say so as the analytic engine does.
      auto step = analytic ? models::Result<models::StepResult>(analytic->step)
                           : models::predict_step(s, *params);
      row.error = step ? "simulation: " + sim.message() : s.path + ": " + step.message();
      return row;
    }
    row.analytic_step_s = sim->analytic.step_time_s;
    row.result = models::rank_step(s, sim->step, kObjective);
    *planned = std::move(s);
    return row;
  }
  if (!analytic) {
    auto step = models::predict_step(s, *params);
    if (!step) {
      row.error = s.path + ": " + step.message();
      return row;
    }
    analytic = models::rank_step(s, *step, kObjective);
  }
  row.analytic_step_s = analytic->step.step_time_s;
  row.result = std::move(analytic);
  *planned = std::move(s);
  return row;
}

// Loads and plans one combination (thread-safe for the analytic engine), with the cost of owning
// against renting where the row's scenario prices it (cost: section; --set cost.* varies it).
Row evaluate_row(const SweepArgs& a, const std::string& text, const models::Scenario& base,
                 const SweepCalibration& calibration, const std::vector<Axis>& axes,
                 const std::vector<std::size_t>& pick) {
  models::Scenario planned;
  Row row = plan_row(a, text, base, calibration, axes, pick, &planned);
  if (row.result && planned.cost.present) {
    const models::StepResult& step = row.result->step;
    const models::RunCost run = models::estimate_run_cost(planned, step, models::CostParams{});
    row.ownership = estimate_ownership(planned, step, run);
  }
  return row;
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char ch : v) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The CSV columns after the swept keys'.
const std::vector<std::string>& csv_figure_columns() {
  static const std::vector<std::string> kColumns = {
      "gpus",         "tp",           "pp",           "dp",
      "cp",           "sp",           "zero",         "recompute",
      "pp_schedule",  "virtual_stages", "micro_batch", "step_time_s",
      "tokens_per_s", "mfu",          "memory_per_gpu_bytes", "memory_capacity_bytes",
      "fits",         "usd_per_million_tokens", "gpu_hours_per_million_tokens", "compute_s",
      "exposed_tp_s", "exposed_dp_s", "exposed_pp_s", "exposed_cp_s",
      "bubble_s",     "optimizer_s",  "owned_usd_per_million_tokens",
      "on_demand_usd_per_million_tokens", "reserved_1y_usd_per_million_tokens",
      "reserved_3y_usd_per_million_tokens", "breakeven_utilization", "derived", "error"};
  return kColumns;
}

// What the outputs print of one row, made where the row ran: the table's and the CSV's cells and
// the row's --json object. Its text form (one line of JSON) is the row's journal record and the
// message a worker rank sends to rank 0, so that every way of running a row prints it alike.
struct RowOutput {
  std::vector<std::string> table;
  std::vector<std::string> csv;
  nlohmann::json json;
  bool ok = false;
  bool derived = false;  // dp followed the GPU count
  std::string error;
};

std::string encode(const RowOutput& o) {
  return nlohmann::json{{"table", o.table}, {"csv", o.csv},         {"json", o.json},
                        {"ok", o.ok},       {"derived", o.derived}, {"error", o.error}}
      .dump();
}

std::optional<RowOutput> decode(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  try {
    return RowOutput{j.at("table").get<std::vector<std::string>>(),
                     j.at("csv").get<std::vector<std::string>>(), j.at("json"),
                     j.at("ok").get<bool>(), j.at("derived").get<bool>(),
                     j.at("error").get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> csv_cells(const Row& r, std::size_t columns) {
  std::vector<std::string> cells = r.values;
  std::string derived;
  for (const auto& [k, v] : r.derived) derived += (derived.empty() ? "" : " ") + k + "=" + v;
  if (r.result) {
    const models::StepResult& s = r.result->step;
    const models::ParallelismConfig& p = r.result->layout.parallelism;
    const models::StepBreakdown& b = s.breakdown;
    for (const std::string& c :
         {std::to_string(s.gpus),
          std::to_string(p.tp),
          std::to_string(p.pp),
          std::to_string(p.dp),
          std::to_string(p.cp),
          std::string(p.sp ? "true" : "false"),
          std::to_string(p.zero),
          std::string(models::to_string(p.recompute)),
          std::string(models::to_string(p.pp_schedule)),
          std::to_string(p.virtual_stages),
          std::to_string(r.result->layout.micro_batch),
          number(s.step_time_s),
          number(s.tokens_per_s),
          number(s.mfu),
          number(s.memory.total()),
          number(s.memory_capacity_bytes),
          std::string(s.fits ? "true" : "false"),
          r.result->usd_per_million_tokens > 0 ? number(r.result->usd_per_million_tokens) : "",
          number(r.result->gpu_hours_per_million_tokens),
          number(b.compute_s),
          number(b.tp.exposed_s),
          number(b.dp.exposed_s),
          number(b.pp.exposed_s),
          number(b.cp.exposed_s),
          number(b.bubble_s),
          number(b.optimizer_s)}) {
      cells.push_back(c);
    }
    // Owning vs renting: empty without a cost: section; a break-even never reached is empty.
    const models::TcoResult* tco = r.ownership ? &r.ownership->tco : nullptr;
    const auto money = [&](double models::TcoResult::*field) {
      return tco != nullptr ? number(tco->*field) : std::string();
    };
    cells.push_back(money(&models::TcoResult::owned_usd_per_million_tokens));
    cells.push_back(money(&models::TcoResult::on_demand_usd_per_million_tokens));
    cells.push_back(money(&models::TcoResult::reserved_1y_usd_per_million_tokens));
    cells.push_back(money(&models::TcoResult::reserved_3y_usd_per_million_tokens));
    cells.push_back(tco != nullptr && tco->breakeven_utilization >= 0
                        ? number(tco->breakeven_utilization)
                        : std::string());
  } else {
    cells.resize(columns - 2);
  }
  cells.push_back(derived);
  cells.push_back(r.error);
  return cells;
}

std::vector<std::string> table_cells(const SweepArgs& a, const models::Scenario& base,
                                     const Row& r, std::size_t columns) {
  std::vector<std::string> cells = r.values;
  if (r.result) {
    const models::StepResult& s = r.result->step;
    cells.push_back(std::to_string(s.gpus));
    cells.push_back(format_time(s.step_time_s));
    cells.push_back(format_count(s.tokens_per_s));
    cells.push_back(models::format_percent(s.mfu));
    cells.push_back(format_size(s.memory.total()) + (s.fits ? "" : " (does not fit)"));
    cells.push_back(models::format_percent(s.breakdown.exposed_comm_s(), s.step_time_s));
    cells.push_back(r.result->usd_per_million_tokens > 0
                        ? models::format_usd(r.result->usd_per_million_tokens)
                        : format_significant(r.result->gpu_hours_per_million_tokens, 3) + " GPU-h");
    if (a.owned_column) {
      cells.push_back(r.ownership ? usd_fine(r.ownership->tco.owned_usd_per_million_tokens) : "-");
    }
    if (a.engine == "des") {
      cells.push_back(format_significant(s.step_time_s / r.analytic_step_s, 3));
    }
    cells.push_back(models::to_string(r.result->layout));
  } else {
    cells.resize(columns - 1, "-");
    // The title names the file: "file:12:5: key: ..." reads "12:5: key: ...".
    std::string why = r.error;
    if (why.rfind(base.path + ":", 0) == 0) why = why.substr(base.path.size() + 1);
    if (!why.empty() && why[0] == ' ') why.erase(0, 1);
    cells.push_back("invalid: " + why);
  }
  return cells;
}

nlohmann::json row_json(const SweepArgs& a, const std::vector<std::string>& keys, const Row& r) {
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t i = 0; i < keys.size(); ++i) values[keys[i]] = r.values[i];
  nlohmann::json j = r.result ? ranked_json(*r.result) : nlohmann::json::object();
  j["values"] = values;
  j["ok"] = r.result.has_value();
  j["error"] = r.result ? nlohmann::json(nullptr) : nlohmann::json(r.error);
  nlohmann::json derived = nlohmann::json::object();
  for (const auto& [k, v] : r.derived) derived[k] = v;
  j["derived"] = derived;
  if (r.result && a.engine == "des") j["analytic_step_time_s"] = r.analytic_step_s;
  if (r.ownership) j["ownership"] = ownership_json(*r.ownership);
  return j;
}

// Column names: each key's last part, or the whole key where two last parts collide.
std::vector<std::string> axis_names(const std::vector<Axis>& axes) {
  const std::vector<std::string> keys = all_keys(axes);
  std::vector<std::string> names;
  for (const std::string& key : keys) names.push_back(key.substr(key.rfind('.') + 1));
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::count(names.begin(), names.end(), names[i]) > 1) names[i] = keys[i];
  }
  return names;
}

std::vector<std::string> table_header(const SweepArgs& a, const std::vector<Axis>& axes) {
  std::vector<std::string> header = axis_names(axes);
  for (const char* h :
       {"GPUs", "step", "tokens/s", "MFU", "memory", "exposed comm", "per M tokens"}) {
    header.push_back(h);
  }
  if (a.owned_column) header.push_back("owned");
  if (a.engine == "des") header.push_back("sim/analytic");
  header.push_back("layout / why invalid");
  return header;
}

RowOutput row_output(const SweepArgs& a, const models::Scenario& base,
                     const std::vector<Axis>& axes, const Row& r) {
  const std::vector<std::string> keys = all_keys(axes);
  return {table_cells(a, base, r, table_header(a, axes).size()),
          csv_cells(r, keys.size() + csv_figure_columns().size()),
          row_json(a, keys, r),
          r.result.has_value(),
          !r.derived.empty(),
          r.error};
}

std::string csv_text(const std::vector<Axis>& axes, const std::vector<RowOutput>& rows) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csv_field(cells[i]);
    out += "\n";
  };
  std::vector<std::string> header = all_keys(axes);
  header.insert(header.end(), csv_figure_columns().begin(), csv_figure_columns().end());
  line(header);
  for (const RowOutput& r : rows) line(r.csv);
  return out;
}

void print_table(const SweepArgs& a, const models::Scenario& base, const std::vector<Axis>& axes,
                 const std::vector<RowOutput>& rows, double wall_s) {
  std::printf("Sweep of %s (%s): %zu combinations, %s model%s, %s\n", base.name.c_str(),
              base.path.c_str(), rows.size(),
              a.engine == "des" ? "simulated by the discrete-event" : "analytic",
              a.search ? ", best layout per row (search)" : "", format_time(wall_s).c_str());
  const std::vector<std::string> header = table_header(a, axes);
  std::vector<Align> align(header.size(), Align::kRight);
  align.back() = Align::kLeft;
  TextTable t(header, align);
  std::size_t invalid = 0;
  bool derived = false;
  for (const RowOutput& r : rows) {
    invalid += !r.ok;
    derived = derived || r.derived;
    t.add_row(r.table);
  }
  std::printf("%s", t.render(2).c_str());
  if (derived) {
    std::printf(
        "  dp follows the GPU count where a row changes nodes, gpus_per_node, tp, pp or cp "
        "(dp = GPUs / (tp x pp x cp)); --set workload.parallelism.dp=... fixes it\n");
  }
  if (invalid > 0) std::printf("  %zu of %zu combinations invalid\n", invalid, rows.size());
}

nlohmann::json rows_json(const SweepArgs& a, const models::Scenario& base,
                         const std::vector<Axis>& axes, const std::vector<RowOutput>& rows) {
  nlohmann::json out_rows = nlohmann::json::array();
  std::size_t valid = 0;
  for (const RowOutput& r : rows) {
    valid += r.ok;
    out_rows.push_back(r.json);
  }
  return {{"scenario", base.name},       {"engine", a.engine}, {"search", a.search},
          {"keys", all_keys(axes)},      {"combinations", rows.size()},
          {"valid", valid},              {"rows", out_rows}};
}

// "row 7 (cluster.nodes=16, workload.seq_len=8192)": a row in the fault messages.
std::string describe_row(const std::vector<Axis>& axes, const std::vector<std::size_t>& pick,
                         std::size_t row) {
  std::string values;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    for (std::size_t k = 0; k < axes[i].keys.size(); ++k) {
      values += (values.empty() ? "" : ", ") + axes[i].keys[k] + "=" + axes[i].values[pick[i]][k];
    }
  }
  return "row " + std::to_string(row + 1) + " (" + values + ")";
}

// Everything that decides the rows' results: a journal resumes only the study it was written by.
std::string sweep_fingerprint(const SweepArgs& a, const std::string& text,
                              const SweepCalibration& calibration) {
  std::vector<std::string> parts = {kToolVersion, "sweep", a.scenario, text, a.engine,
                                    a.search ? "search" : "", calibration.path};
  if (!calibration.path.empty()) {
    auto overlay = models::read_text_file(calibration.path);
    parts.push_back(overlay ? *overlay : overlay.message());
  }
  parts.insert(parts.end(), a.sets.begin(), a.sets.end());
  return study_fingerprint(parts);
}

int run_sweep(SweepArgs a) {
  auto channel = open_rank_channel();
  if (!channel) return fail_bad_input("sweep", channel.message());
  RankChannel& ranks = **channel;
  // Every rank checks the input alike; rank 0 alone says what is wrong.
  const bool writer = ranks.rank() == 0;
  auto bad = [&](const std::string& message) {
    return writer ? fail_bad_input("sweep", message) : kExitBadInput;
  };
  if (a.threads < 1) return bad("--threads: must be at least 1");
  auto row_timeout_s = parse_row_timeout(a.row_timeout);
  if (!row_timeout_s) return bad(row_timeout_s.message());
  const std::string journal = !a.journal.empty() ? a.journal
                              : !a.csv.empty()   ? a.csv + ".journal"
                                                 : "";
  if (a.resume && journal.empty()) {
    return bad("--resume: needs the journal of a --csv FILE run (FILE.journal) or --journal FILE");
  }
  auto axes = parse_axes(a.sets);
  if (!axes) return bad(axes.message());
  // One read: the base scenario and every row load from the same text.
  std::error_code ec;
  if (std::filesystem::is_directory(a.scenario, ec)) {
    return bad(a.scenario + ": is a directory, not a scenario file");
  }
  auto text = models::read_text_file(a.scenario);
  if (!text) return bad(text.message());
  auto base = models::load_scenario_text(*text, a.scenario, {}, /*check_layout=*/!a.search);
  if (!base) return bad(base.message());
  a.owned_column = base->cost.present;
  for (const Axis& ax : *axes) {
    for (const std::string& key : ax.keys) a.owned_column |= key.rfind("cost.", 0) == 0;
  }
  SweepCalibration calibration;
  calibration.path = a.calibration.empty() ? base->calibration_path : a.calibration;
  calibration.overlay = load_calibration_or_none(calibration.path);

  // The grid, last --set varying fastest.
  std::vector<std::vector<std::size_t>> picks = {{}};
  for (const Axis& ax : *axes) {
    std::vector<std::vector<std::size_t>> next;
    for (const auto& p : picks) {
      for (std::size_t v = 0; v < ax.values.size(); ++v) {
        next.push_back(p);
        next.back().push_back(v);
      }
    }
    picks = std::move(next);
  }
  std::vector<std::optional<RowOutput>> outputs(picks.size());
  std::optional<JournalWriter> journal_writer;
  RowStudy study;
  study.command = "sweep";
  study.rows = picks.size();
  if (writer) {
    const JournalHeader header{"sweep", picks.size(), sweep_fingerprint(a, *text, calibration)};
    auto opened = open_study_journal(journal, a.resume, header,
                                     [&](std::size_t row, const std::string& payload) {
                                       outputs[row] = decode(payload);
                                       return outputs[row].has_value();
                                     });
    if (!opened) {
      release_ranks(ranks);
      return bad((a.journal.empty() ? "--csv " : "--journal ") + opened.message());
    }
    journal_writer = std::move(opened).value();
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i]) study.todo.push_back(i);
    }
  }
  // SimGrid runs one engine per process: simulated rows go one at a time in each rank.
  study.threads = a.engine == "des" ? 1 : a.threads;
  study.isolate = a.engine == "des";
  study.row_timeout_s = *row_timeout_s;
  study.journal = journal;
  study.describe = [&](std::size_t i) { return describe_row(*axes, picks[i], i); };
  study.evaluate = [&](std::size_t i) {
    return encode(
        row_output(a, *base, *axes, evaluate_row(a, *text, *base, calibration, *axes, picks[i])));
  };
  study.finished = [&](std::size_t i, const std::string& result) -> models::Status {
    outputs[i] = decode(result);
    if (!outputs[i]) return models::Error{study.describe(i) + ": unreadable result: " + result};
    if (journal_writer) return journal_writer->append(i, result);
    return models::Status::Ok();
  };
  const auto start = std::chrono::steady_clock::now();
  run_rows(ranks, study);
  if (!writer) return kExitOk;
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<RowOutput> rows;
  for (auto& o : outputs) rows.push_back(std::move(*o));

  if (!a.csv.empty()) {
    if (auto st = write_file_atomically(a.csv, csv_text(*axes, rows)); !st) {
      return fail_bad_input("sweep", "--csv " + st.message());
    }
  }
  if (a.json) {
    std::printf("%s\n", rows_json(a, *base, *axes, rows).dump(2).c_str());
  } else {
    print_table(a, *base, *axes, rows, wall_s);
    if (!a.csv.empty()) std::printf("  rows written to %s\n", a.csv.c_str());
  }
  // The output is complete and in place: the journal has done its work.
  if (journal_writer) {
    if (auto st = journal_writer->remove(); !st) std::fprintf(stderr, "clustersim sweep: %s\n", st.message().c_str());
  }
  const bool any_valid = std::any_of(rows.begin(), rows.end(), [](const RowOutput& r) { return r.ok; });
  if (!any_valid) {
    return fail_bad_input("sweep", "no combination is valid; the first: " + rows.front().error);
  }
  return kExitOk;
}

const bool kRegistered = register_command(
    {"sweep", "grid over scenario parameters (--set key=v1,v2): one planned row per combination",
     35, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<SweepArgs>();
       sub.add_option("scenario", a->scenario, "scenario YAML to vary").required();
       sub.add_option("--set", a->sets,
                      "KEY=V1,V2,...: a dotted scenario key (cluster.nodes, cluster.node.nic, "
                      "cluster.fabric.oversubscription, workload.seq_len, "
                      "workload.parallelism.tp, cluster.node.gpu.hbm, ...) and its values; "
                      "repeat for a grid. Keys joined by + vary together: "
                      "cluster.node.nic+cluster.fabric.switch=ib-ndr+quantum-2-qm9700,"
                      "roce-400+spectrum-4-sn5600-2x400g")
           .required()
           .take_all();
       sub.add_option("--engine", a->engine, "analytic (default) or des (the simulator)")
           .check_member({"analytic", "des"});
       sub.add_flag("--json", a->json, "one JSON object with a row per combination");
       sub.add_option("--csv", a->csv, "also write the rows to FILE as CSV");
       sub.add_option("--threads", a->threads,
                      "rows evaluated at once with the analytic engine (default: the cores)");
       sub.add_option("--calibration", a->calibration,
                      "calibration overlay (clustersim calibrate); default: the scenario's");
       sub.add_flag("--search", a->search,
                    "plan each row with its best layout (clustersim search, by tokens/s)");
       sub.add_option("--journal", a->journal,
                      "append every finished row to FILE as it completes (default with --csv: "
                      "the CSV's name + .journal; removed once the output is written)");
       sub.add_flag("--resume", a->resume,
                    "run only the rows the journal lacks (after a killed or failed run)");
       sub.add_option("--row-timeout", a->row_timeout,
                      "stop the run (exit 4) when one row takes longer than this, e.g. 10min");
       return [a] { return run_sweep(*a); };
     },
     {"clustersim sweep scenarios/llama3-70b-64xh100-ndr-rail.yaml --set cluster.nodes=4,8,16 --engine analytic",
      "clustersim sweep scenarios/llama3-70b-64xh100-ndr-rail.yaml --set cluster.node.nic=ib-ndr,roce-400 --set workload.seq_len=4096,8192 --engine analytic --json",
      "mpirun -np 8 clustersim sweep scenarios/llama3-405b-16k-h100.yaml --set cluster.fabric.oversubscription=1,2,4,8 --set workload.seq_len=4096,8192,16384,32768 --engine des --threads 1 --csv study.csv --resume"}});

}  // namespace
}  // namespace clustersim::tools
