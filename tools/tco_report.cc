#include "tools/tco_report.h"

#include <algorithm>
#include <cmath>

#include "models/cost_model.h"
#include "models/scenario.h"
#include "models/units.h"

namespace clustersim::tools {

using models::format_percent;
using models::format_significant;
using models::format_usd;

Ownership estimate_ownership(const models::Scenario& scenario, const models::StepResult& step,
                             const models::RunCost& run) {
  Ownership o;
  o.fabric = count_fabric(scenario);
  o.tco = models::estimate_tco(scenario, step, run, o.fabric.bill);
  return o;
}

namespace {
std::string kw(double w) { return format_significant(w / 1000, 3) + " kW"; }
}  // namespace

std::string usd_fine(double usd) {
  return usd < 10 ? "$" + format_significant(usd, 3) : format_usd(usd);
}

std::string breakeven_line(const models::TcoResult& t) {
  std::string s;
  if (t.breakeven_utilization < 0) {
    s = "renting on demand stays cheaper than owning even fully used";
  } else {
    s = "owning beats renting on demand above " + format_percent(t.breakeven_utilization) +
        " utilization";
  }
  if (t.breakeven_months > 0) {
    s += "; at " + format_percent(t.in.utilization) + " it pays back in " +
         format_significant(t.breakeven_months, 3) + " months (written off over " +
         format_significant(t.in.depreciation_years * 12, 3) + ")";
  } else {
    s += "; at " + format_percent(t.in.utilization) + " owning never pays back";
  }
  return s;
}

std::string ownership_text(const Ownership& o) {
  const models::TcoResult& t = o.tco;
  const models::TcoInputs& in = t.in;
  std::string s = "Owning vs renting (cost: keys and their sources: docs/cost.md)\n";
  auto line = [&s](const char* what, const std::string& text) {
    char head[32];
    std::snprintf(head, sizeof head, "  %-17s", what);
    s += head + text + "\n";
  };
  double servers = 0;
  double storage = 0;
  for (const auto& c : t.capital) {
    if (c.item.rfind("GPU servers", 0) == 0) servers = c.total_usd;
    if (c.item.rfind("storage", 0) == 0) storage = c.total_usd;
  }
  line("capital", format_usd(t.capital_usd) + ": servers " + format_usd(servers) +
                      ", fabric " + format_usd(t.fabric_usd) + " (NICs, switches, optics), storage " +
                      format_usd(storage) + ", installation " + format_usd(t.installation_usd));
  if (!o.fabric.problem.empty()) {
    line("", "(the fabric cannot be built as given: switches and optics not priced)");
  }
  line("power", "running " + kw(t.running.total_w()) + " IT (GPUs at their cap " +
                    format_percent(t.compute_share) + " of the step), idle " +
                    kw(t.idle.total_w()) + "; average " + kw(t.average_it_w) + " at " +
                    format_percent(in.utilization) + " utilization, PUE " +
                    format_significant(in.pue, 3) + ", $" +
                    format_significant(in.electricity_usd_per_kwh, 3) +
                    "/kWh");
  line("a year owned",
       format_usd(t.annual_usd()) + ": depreciation " + format_usd(t.depreciation_usd) + " (" +
           format_significant(in.depreciation_years, 3) + " y), energy " +
           format_usd(t.energy_usd) + ", " + (in.own_facility ? "own facility " : "colocation ") +
           format_usd(t.facility_usd) + " (" + kw(t.provisioned.total_w()) + " at " +
           format_usd(in.facility_usd_per_kw_month) + "/kW-month), support " +
           format_usd(t.support_usd) + ", staff " + format_usd(t.staff_usd) + " (" +
           format_significant(in.staff_fte, 2) + " engineers)");
  line("per GPU-hour", "owned " + usd_fine(t.owned_usd_per_gpu_hour) + "; rented on demand " +
                           usd_fine(t.on_demand_usd_per_gpu_hour) + ", reserved 1 y " +
                           usd_fine(t.reserved_1y_usd_per_gpu_hour) + ", 3 y " +
                           usd_fine(t.reserved_3y_usd_per_gpu_hour) + " (per hour worked at " +
                           format_percent(in.utilization) + ")");
  line("per M tokens", "owned " + usd_fine(t.owned_usd_per_million_tokens) + ", on demand " +
                           usd_fine(t.on_demand_usd_per_million_tokens) + ", reserved 1 y " +
                           usd_fine(t.reserved_1y_usd_per_million_tokens) + ", 3 y " +
                           usd_fine(t.reserved_3y_usd_per_million_tokens) + " (goodput " +
                           format_percent(t.goodput) + " applied to each)");
  if (t.has_run) {
    line("the run", "owned " + format_usd(t.owned_run_usd) + ", on demand " +
                        format_usd(t.on_demand_run_usd) + " (cloud storage " +
                        format_usd(t.cloud_storage_usd) + ", egress " + format_usd(t.egress_usd) +
                        ") over " + format_significant(t.run_months, 3) + " months");
  }
  line("break-even", breakeven_line(t));
  return s + "\n";
}

nlohmann::json ownership_json(const Ownership& o) {
  const models::TcoResult& t = o.tco;
  const models::TcoInputs& in = t.in;
  nlohmann::json capital = nlohmann::json::array();
  for (const auto& c : t.capital) {
    capital.push_back(
        {{"item", c.item}, {"count", c.count}, {"unit_usd", c.unit_usd}, {"total_usd", c.total_usd}});
  }
  auto power = [](const models::PowerDraw& p) {
    return nlohmann::json{{"gpus_w", p.gpus_w},         {"servers_w", p.servers_w},
                          {"nics_w", p.nics_w},         {"switches_w", p.switches_w},
                          {"optics_w", p.optics_w},     {"total_w", p.total_w()}};
  };
  auto or_null = [](double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"inputs",
       {{"on_demand_usd_per_gpu_hour", in.cloud.on_demand},
        {"reserved_1y_usd_per_gpu_hour", in.cloud.reserved_1y},
        {"reserved_3y_usd_per_gpu_hour", in.cloud.reserved_3y},
        {"utilization", in.utilization},
        {"server_usd", in.server_usd},
        {"installation_share", in.installation_share},
        {"depreciation_years", in.depreciation_years},
        {"electricity_usd_per_kwh", in.electricity_usd_per_kwh},
        {"pue", in.pue},
        {"facility", in.own_facility ? "own" : "colocation"},
        {"facility_usd_per_kw_month", in.facility_usd_per_kw_month},
        {"support_share", in.support_share},
        {"staff_fte", in.staff_fte},
        {"staff_usd_per_year", in.staff_usd_per_year},
        {"server_w_per_gpu", in.server_w_per_gpu},
        {"storage_bytes", in.storage_bytes},
        {"storage_usd_per_tb", in.storage_usd_per_tb},
        {"cloud_storage_usd_per_tb_month", in.cloud_storage_usd_per_tb_month},
        {"egress_bytes", in.egress_bytes},
        {"egress_usd_per_gb", in.egress_usd_per_gb}}},
      {"capital", capital},
      {"hardware_usd", t.hardware_usd},
      {"fabric_usd", t.fabric_usd},
      {"installation_usd", t.installation_usd},
      {"capital_usd", t.capital_usd},
      {"compute_share", t.compute_share},
      {"power_running", power(t.running)},
      {"power_idle", power(t.idle)},
      {"power_provisioned", power(t.provisioned)},
      {"average_it_w", t.average_it_w},
      {"annual_usd",
       {{"depreciation", t.depreciation_usd},
        {"energy", t.energy_usd},
        {"facility", t.facility_usd},
        {"support", t.support_usd},
        {"staff", t.staff_usd},
        {"total", t.annual_usd()}}},
      {"usd_per_gpu_hour",
       {{"owned", t.owned_usd_per_gpu_hour},
        {"on_demand", t.on_demand_usd_per_gpu_hour},
        {"reserved_1y", t.reserved_1y_usd_per_gpu_hour},
        {"reserved_3y", t.reserved_3y_usd_per_gpu_hour}}},
      {"usd_per_million_tokens",
       {{"owned", t.owned_usd_per_million_tokens},
        {"on_demand", t.on_demand_usd_per_million_tokens},
        {"reserved_1y", t.reserved_1y_usd_per_million_tokens},
        {"reserved_3y", t.reserved_3y_usd_per_million_tokens}}},
      {"goodput", t.goodput},
      {"breakeven_utilization", or_null(t.breakeven_utilization)},
      {"breakeven_months", or_null(t.breakeven_months)},
  };
  if (t.has_run) {
    j["run"] = {{"months", t.run_months},
                {"owned_usd", t.owned_run_usd},
                {"on_demand_usd", t.on_demand_run_usd},
                {"cloud_storage_usd", t.cloud_storage_usd},
                {"egress_usd", t.egress_usd}};
  }
  if (!o.fabric.problem.empty()) j["fabric_problem"] = o.fabric.problem;
  return j;
}

std::vector<LadderRung> fabric_ladder(const std::vector<LadderEntry>& es) {
  std::vector<int> sizes;
  for (const auto& e : es) sizes.push_back(e.gpus);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<LadderRung> rungs;
  for (int gpus : sizes) {
    std::vector<std::size_t> group;
    for (std::size_t i = 0; i < es.size(); ++i) {
      if (es[i].gpus == gpus) group.push_back(i);
    }
    if (group.size() < 2) continue;
    const std::size_t base = *std::min_element(group.begin(), group.end(), [&](auto a, auto b) {
      return es[a].tco->fabric_usd < es[b].tco->fabric_usd;
    });
    const models::TcoResult& c = *es[base].tco;
    for (std::size_t i : group) {
      if (i == base) continue;
      const models::TcoResult& e = *es[i].tco;
      rungs.push_back({gpus, base, i, e.fabric_usd - c.fabric_usd,
                       (e.fabric_usd - c.fabric_usd) / c.capital_usd,
                       es[base].step_time_s / es[i].step_time_s - 1,
                       1 - e.owned_usd_per_million_tokens / c.owned_usd_per_million_tokens});
    }
  }
  return rungs;
}

std::string ladder_verdict(const std::vector<LadderEntry>& es, const std::vector<LadderRung>& rungs) {
  if (rungs.empty()) return "";
  // The smallest size from which every larger rung pays too.
  int from = -1;
  for (auto it = rungs.rbegin(); it != rungs.rend() && it->pays(); ++it) from = it->gpus;
  std::string s;
  if (from < 0) {
    s = "the dearer fabric does not pay for itself at any size compared (up to " +
        std::to_string(rungs.back().gpus) + " GPUs)";
  } else if (from == rungs.front().gpus) {
    s = "the dearer fabric pays for itself at every size compared";
  } else {
    s = "the dearer fabric pays for itself from " + std::to_string(from) + " GPUs (" +
        std::to_string(from / es[rungs.front().cheaper].gpus_per_node) + " nodes) on";
  }
  return s + ": it pays where the step time it saves outweighs the share of the cluster's cost "
             "it adds (its NICs, switches and optics, with their power, support and "
             "installation)";
}

LadderTable ladder_table(const std::vector<LadderEntry>& es, const std::vector<LadderRung>& rungs) {
  LadderTable t;
  // Narrow enough for an 80-column terminal: the premium in thousands and as a share of capital.
  t.header = {"GPUs",    "cheaper", "$/M tok", "dearer", "$/M tok",
              "premium", "step",    "$/M tok", "pays?"};
  for (const auto& r : rungs) {
    const auto& c = *es[r.cheaper].tco;
    const auto& e = *es[r.dearer].tco;
    t.rows.push_back({std::to_string(r.gpus), es[r.cheaper].fabric,
                      usd_fine(c.owned_usd_per_million_tokens), es[r.dearer].fabric,
                      usd_fine(e.owned_usd_per_million_tokens),
                      "$" + format_significant(r.fabric_premium_usd / 1000, 3) + "K, " +
                          format_percent(r.capital_share),
                      // The dearer's step time against the cheaper's: + slower, - faster.
                      models::format_signed_percent(1 / (1 + r.speedup) - 1),
                      models::format_signed_percent(-r.owned_saving), r.pays() ? "yes" : "no"});
  }
  return t;
}

nlohmann::json ladder_json(const std::vector<LadderEntry>& es, const std::vector<LadderRung>& rungs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rungs) {
    out.push_back({{"gpus", r.gpus},
                   {"cheaper", es[r.cheaper].name},
                   {"dearer", es[r.dearer].name},
                   {"fabric_premium_usd", r.fabric_premium_usd},
                   {"capital_share", r.capital_share},
                   {"speedup", r.speedup},
                   {"owned_saving", r.owned_saving},
                   {"pays", r.pays()}});
  }
  return out;
}

}  // namespace clustersim::tools
