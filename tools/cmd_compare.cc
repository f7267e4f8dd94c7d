// `clustersim compare A.yaml B.yaml [...]`: several designs side by side (the seed's question:
// RoCE or InfiniBand for the same cluster?). For each: step time, tokens/s, MFU, where the step
// goes (compute, exposed communication per dimension, bubble), memory, cost; with the simulator
// (default) also which fabric tiers the step's collectives saturate and how much contention
// slowed them. Then the differences against the first design and why, and with --plot a scaling
// plot (tokens/s against GPUs, each design grown and shrunk by whole nodes at the same per-
// pipeline batch) drawn by gnuplot into a PNG or SVG.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/cost_model.h"
#include "models/step_model.h"
#include "models/units.h"
#include "sim/step_sim.h"
#include "sim/transport_model.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/layout_report.h"
#include "tools/scenario_input.h"
#include "tools/tco_report.h"
#include "tools/weak_scaling.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_percent;
using models::format_significant;
using models::format_time;
using Align = TextTable::Align;

// Thresholds of the report (what it calls saturated, contended, a reason), and the plot's reach.
// A link loaded to within 2% of its saturation point counts as saturated: its utilisation is its
// bytes over capacity x the pattern's whole interval, so even the bottleneck reads a little under.
constexpr double kSaturatedFraction = 0.98;
// A step component that moved by under 1% of the baseline's step is not a reason.
constexpr double kReasonShareOfStep = 0.01;
// A pattern under 1% slower than uncontended had no collision worth naming.
constexpr double kCollisionSlowdown = 1.01;
// Patterns slowed by more than 5% by contention are listed with their busiest link.
constexpr double kContendedSlowdown = 1.05;
// The scaling plot's largest point: beyond 32,768 GPUs one simulated point costs more than a plot
// is worth.
constexpr int kMaxScalingGpus = 32768;

struct CompareArgs {
  std::vector<std::string> scenarios;
  std::vector<std::string> sets;  // --set KEY=VALUE, applied to every design
  std::string engine = "des";
  std::string plot;
  bool json = false;
};

// The same design simulated with one fabric setting changed: what a user could switch on their
// fabric instead of buying another.
struct WhatIf {
  std::string setting;  // "NCCL_IB_QPS_PER_CONNECTION=4", "adaptive routing"
  double step_time_s = 0;
  double worst_slowdown = 1;  // the most contended pattern's simulated / uncontended time
};

// One design evaluated by one engine.
struct Design {
  models::Scenario scenario;
  models::StepParams params;
  models::StepResult step;
  std::optional<sim::DesStepResult> des;
  models::RunCost cost;
  std::optional<Ownership> ownership;  // with a cost: section: owning vs renting, fabric priced
  std::vector<std::pair<int, double>> scaling;  // (GPUs, tokens/s)
  std::vector<WhatIf> what_ifs;  // fabric settings that would change the step (ECMP collisions)
  // The same design under other draws of ECMP's hash (seeds 1, 2, ...): how much of the
  // collisions' cost is the luck of one hash.
  std::vector<double> other_hash_steps_s;
};


models::Result<models::StepResult> evaluate(const models::Scenario& s, const models::StepParams& p,
                                            bool des, std::optional<sim::DesStepResult>* out) {
  if (!des) return models::predict_step(s, p);
  auto r = sim::simulate_step(s, p);
  if (!r) return models::Error{r.message()};
  models::StepResult step = r->step;
  if (out) *out = std::move(r).value();
  return step;
}

models::Result<Design> load_design(const std::string& path,
                                   const std::vector<models::ScenarioOverride>& overrides,
                                   bool des) {
  auto s = load_scenario_or_default(path, overrides);
  if (!s) return models::Error{s.message()};
  Design d;
  d.scenario = std::move(s).value();
  auto params = step_params_for(d.scenario, /*calibration_flag=*/"");
  if (!params) return models::Error{params.message()};
  d.params = std::move(params).value();
  auto step = evaluate(d.scenario, d.params, des, &d.des);
  if (!step) return models::Error{d.scenario.path + ": " + step.message()};
  d.step = std::move(step).value();
  d.cost = models::estimate_run_cost(d.scenario, d.step);
  if (d.scenario.cost.present) d.ownership = estimate_ownership(d.scenario, d.step, d.cost);
  return d;
}

// The designs as fabric-ladder entries (tools/tco_report.h): those with a cost: section.
std::vector<LadderEntry> ladder_entries(const std::vector<Design>& ds) {
  std::vector<LadderEntry> out;
  for (const auto& d : ds) {
    if (d.ownership) {
      out.push_back({d.scenario.name, d.scenario.cluster.node.nic.id, d.step.gpus,
                     d.scenario.cluster.node.gpus_per_node, d.step.step_time_s,
                     &d.ownership->tco});
    }
  }
  return out;
}

void print_ladder(const std::vector<LadderEntry>& entries, std::size_t width) {
  const auto rungs = fabric_ladder(entries);
  if (rungs.empty()) return;
  std::printf("%s", wrap_text("Fabric ladder: what a million tokens costs on an owned cluster, "
                              "each fabric's price in its capital; premium: the dearer fabric's "
                              "extra cost, and its share of the cheaper cluster's capital; "
                              "step: its step time against the cheaper's; last $/M tok: the change it makes",
                              width, "", "  ")
                        .c_str());
  const LadderTable lt = ladder_table(entries, rungs);
  TextTable t(lt.header, {Align::kRight, Align::kLeft, Align::kRight, Align::kLeft, Align::kRight,
                          Align::kRight, Align::kRight, Align::kRight, Align::kLeft});
  for (const auto& row : lt.rows) t.add_row(row);
  const std::string text = t.render(2);
  if (widest_line(text) <= width) {
    std::printf("%s", text.c_str());
  } else {  // too wide for the terminal: a line per rung
    for (const auto& row : lt.rows) {
      std::printf("%s", wrap_text(row[0] + " GPUs: " + row[3] + " vs " + row[1] + ": " + row[4] +
                                      " vs " + row[2] + " per M tokens (" + row[7] +
                                      "), premium " + row[5] + ", step " + row[6] +
                                      "; pays: " + row[8],
                                  width, "  ", "    ")
                            .c_str());
    }
  }
  std::printf("%s", wrap_text(ladder_verdict(entries, rungs), width, "  ", "  ").c_str());
  std::printf("\n");
}

void compute_scaling(Design& d, bool des) {
  for (double f : {0.125, 0.25, 0.5, 1.0, 2.0}) {
    auto s = scaled(d.scenario, f);
    if (!s || s->cluster.total_gpus() > kMaxScalingGpus) continue;
    if (f == 1.0) {
      d.scaling.push_back({d.step.gpus, d.step.tokens_per_s});
      continue;
    }
    auto step = evaluate(*s, d.params, des, nullptr);
    if (step) d.scaling.push_back({step->gpus, step->tokens_per_s});
  }
}

double worst_slowdown(const sim::DesStepResult& r) {
  double worst = 1;
  for (const auto& p : r.patterns) worst = std::max(worst, p.slowdown());
  return worst;
}

// Under ECMP with flows colliding (a pattern more than kCollisionSlowdown slower than
// uncontended), the step again with more queue pairs per connection (each QP its own flow for the
// hash: Meta's QP scaling, Gangidi et al., SIGCOMM 2024, sec. 5) and with adaptive routing
// (InfiniBand AR, Spectrum-X, flowlet switching: every path of a leaf used), each simulated.
void compute_what_ifs(Design& d) {
  if (!d.des || d.scenario.cluster.fabric.routing != models::Routing::kEcmp ||
      worst_slowdown(*d.des) <= kCollisionSlowdown) {
    return;
  }
  // Progress on stderr: each what-if is a whole simulation (tens of seconds at 16K GPUs).
  std::fprintf(stderr,
               "clustersim compare: %s: ECMP collisions; simulating the same fabric with more "
               "queue pairs and with adaptive routing\n",
               d.scenario.name.c_str());
  auto add = [&](const std::string& setting, const models::Scenario& s) {
    auto r = sim::simulate_step(s, d.params);
    if (r) {
      d.what_ifs.push_back({setting, r->step.step_time_s, worst_slowdown(*r)});
    } else {
      std::fprintf(stderr, "clustersim compare: %s with %s: not simulated (%s)\n",
                   d.scenario.name.c_str(), setting.c_str(), r.message().c_str());
    }
  };
  for (int qps : {4, 16}) {
    if (qps <= d.scenario.cluster.fabric.qps_per_connection) continue;
    models::Scenario s = d.scenario;
    s.cluster.fabric.qps_per_connection = qps;
    add("NCCL_IB_QPS_PER_CONNECTION=" + std::to_string(qps) + " (qps_per_connection: " +
            std::to_string(qps) + ")",
        s);
  }
  models::Scenario s = d.scenario;
  s.cluster.fabric.routing = models::Routing::kAdaptive;
  add("adaptive routing (routing: adaptive)", s);
  d.other_hash_steps_s = sim::other_hash_draw_steps_s(d.scenario, d.params, sim::kOtherHashDraws);
}

// One line per what-if: the setting, the step it gives and its change.
std::vector<std::string> what_if_lines(const Design& d) {
  std::vector<std::string> out;
  for (const auto& w : d.what_ifs) {
    out.push_back(w.setting + ": step " + format_time(w.step_time_s) + " (" +
                  models::format_signed_percent(w.step_time_s / d.step.step_time_s - 1) +
                  "), worst contention " + format_significant(w.worst_slowdown, 3) + "x");
  }
  return out;
}

// The network in a table cell: the NICs; network_line has the rates, switches and routing.
std::string short_network_line(const models::Scenario& s) {
  const auto& n = s.cluster.node;
  if (n.nics_per_node == 0) return "one node";
  return std::to_string(n.nics_per_node) + " x " + n.nic.id;
}

std::string network_line(const models::Scenario& s) {
  const auto& n = s.cluster.node;
  const auto& f = s.cluster.fabric;
  if (n.nics_per_node == 0) return "one node, no fabric";
  std::string out = std::to_string(n.nics_per_node) + " x " + n.nic.id + " (" +
                    models::format_bandwidth_bits(n.nic.line_rate_Bps * n.links_per_nic) + ", " +
                    format_percent(n.nic.protocol_efficiency) + ")";
  out += ", " + f.switch_spec.id + " (" + std::to_string(f.switch_radix) + " ports), " +
         std::string(models::to_string(f.topology));
  if (f.topology == models::TopologyKind::kFatTree) out += " " + std::to_string(f.tiers) + "-tier";
  out += ", " + std::string(models::to_string(f.routing));
  if (f.routing == models::Routing::kEcmp || f.qps_per_connection > 1) {
    out += " (" + std::to_string(f.qps_per_connection) + " QP" +
           (f.qps_per_connection > 1 ? "s" : "") + "/connection)";
  }
  if (f.oversubscription > 1) out += ", " + format_significant(f.oversubscription, 3) + ":1";
  if (f.in_network_reduction) out += ", SHARP";
  return out;
}

// The share of its capacity a link of this tier keeps while flows share it, as the simulator
// models it (sim/transport_model.h, default parameters as simulate_step uses them): the NIC's
// technology on the NIC cables and switch links (InfiniBand and RoCE 100%, TCP 75%), all of it
// inside the node. A link loaded to that share was saturated.
double saturation_point(const Design& d, sim::ResourceTier tier) {
  if (tier == sim::ResourceTier::kScaleUp || tier == sim::ResourceTier::kPcie) return 1.0;
  return sim::shared_link_efficiency(d.scenario.cluster.node.nic.technology,
                                     sim::TransportParams{});
}
bool saturated(const Design& d, const sim::TierLoad& t) {
  return t.max_utilisation >= kSaturatedFraction * saturation_point(d, t.tier);
}

// ECMP collisions in one pattern: under ECMP routing, a switch-to-switch tier whose busiest link
// was saturated while the tier's links averaged less than two thirds of that: the hash put
// several flows on some links and left others idle (adaptive routing spreads them). The tier, or
// nullptr.
const sim::TierLoad* ecmp_collisions(const Design& d, const sim::PatternReport& p) {
  if (d.scenario.cluster.fabric.routing != models::Routing::kEcmp) return nullptr;
  const sim::TierLoad* worst = nullptr;
  for (const auto& t : p.loads) {
    const bool switch_tier =
        t.tier == sim::ResourceTier::kLeafSpine || t.tier == sim::ResourceTier::kSpineCore;
    if (switch_tier && saturated(d, t) && t.mean_utilisation < t.max_utilisation * 2 / 3 &&
        (!worst || t.max_utilisation > worst->max_utilisation)) {
      worst = &t;
    }
  }
  return worst;
}

// The busiest resource of each tier over the step's collective patterns.
std::vector<sim::TierLoad> busiest_tiers(const sim::DesStepResult& r) {
  std::vector<sim::TierLoad> out;
  for (const auto& p : r.patterns)
    for (const auto& t : p.loads) {
      auto it =
          std::find_if(out.begin(), out.end(), [&](const auto& o) { return o.tier == t.tier; });
      if (it == out.end()) {
        out.push_back(t);
      } else if (t.max_utilisation > it->max_utilisation) {
        *it = t;
      }
    }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tier < b.tier; });
  return out;
}

// The highest utilisation of any link of these tiers over the step's patterns (0 unsimulated).
double tier_utilisation(const Design& d, std::initializer_list<sim::ResourceTier> tiers) {
  double u = 0;
  if (!d.des) return u;
  for (const auto& t : busiest_tiers(*d.des)) {
    if (std::find(tiers.begin(), tiers.end(), t.tier) != tiers.end()) {
      u = std::max(u, t.max_utilisation);
    }
  }
  return u;
}

// The tiers whose busiest link saturated ("none"), for the table; saturation_line has them all.
std::string saturated_tiers(const Design& d) {
  if (!d.des) return "-";
  std::string out;
  for (const auto& t : busiest_tiers(*d.des)) {
    if (!saturated(d, t)) continue;
    if (!out.empty()) out += ", ";
    out += sim::to_string(t.tier);
  }
  return out.empty() ? "none" : out;
}

std::string saturation_line(const Design& d) {
  if (!d.des) return "-";
  std::string out;
  for (const auto& t : busiest_tiers(*d.des)) {
    if (!out.empty()) out += ", ";
    out += std::string(sim::to_string(t.tier)) + " " + format_percent(t.max_utilisation) +
           (saturated(d, t) ? " (sat.)" : "");
  }
  return out.empty() ? "-" : out;
}

// What slowed one design's collectives: each pattern that ran well over its uncontended time
// and why (ECMP collisions, or its busiest link), then the simulated fabric settings behind
// ECMP collisions. `prefix` names the design when it is not the one compared against.
void contention_lines(const Design& d, const std::string& prefix, std::vector<std::string>* out) {
  if (d.des) {
    for (const auto& p : d.des->patterns) {
      if (p.slowdown() > kContendedSlowdown) {
        std::string busiest;
        double u = 0;
        if (const sim::TierLoad* t = sim::busiest_tier(p.loads)) {
          busiest = std::string(sim::to_string(t->tier)) + " " + t->busiest;
          u = t->max_utilisation;
        }
        std::string line =
            p.what + " ran " + format_significant(p.slowdown(), 3) + "x its uncontended time";
        if (const sim::TierLoad* c = ecmp_collisions(d, p)) {
          line += ": ECMP collisions: the hash put several flows on some " +
                  std::string(sim::to_string(c->tier)) +
                  " links while others carried little (busiest " + c->busiest + " saturated at " +
                  format_percent(c->max_utilisation) + ", mean " +
                  format_percent(c->mean_utilisation) + " over the " +
                  std::to_string(c->resources) + " links that carried traffic)";
        } else {
          line += " (busiest: " + busiest + " at " + format_percent(u) + ")";
        }
        out->push_back(prefix + line);
      }
    }
  }
  if (!d.what_ifs.empty()) {
    out->push_back(prefix + "behind the collisions: ECMP hashes each of NCCL's connections (" +
                   std::to_string(d.scenario.cluster.fabric.qps_per_connection) +
                   " queue pair(s) each) onto one path; on the same fabric:");
    for (auto& line : what_if_lines(d)) out->push_back("  " + line);
    const std::string others = other_draws_text(d.other_hash_steps_s, d.step.step_time_s);
    out->push_back(prefix + "how sure: one ECMP hash of the flows" +
                   (others.empty() ? std::string("; other hashes collide more or less")
                                   : "; two other hashes of the same fabric give steps of " +
                                         others) +
                   "; published measurements of ECMP against collision-free paths lost 9-19% of "
                   "the bus bandwidth where this simulator, on that fabric, loses 20-27% on its "
                   "luckiest hash and 40-45% on its median one (docs/collectives.md, "
                   "contention)");
  }
}

// Why `b` differs from the baseline `a`: the step components that moved, largest first, with
// what in the designs explains them.
std::vector<std::string> reasons(const Design& a, const Design& b) {
  std::vector<std::pair<double, std::string>> moved;
  const auto& x = a.step.breakdown;
  const auto& y = b.step.breakdown;
  const double base = a.step.step_time_s;
  auto consider = [&](const char* what, double va, double vb) {
    const double delta = vb - va;
    if (std::abs(delta) > kReasonShareOfStep * base) {
      moved.push_back({std::abs(delta), std::string(what) + " " + (delta > 0 ? "+" : "-") +
                                            format_time(std::abs(delta)) + " (" + format_time(va) +
                                            " -> " + format_time(vb) + ")"});
    }
  };
  consider("compute", x.compute_s, y.compute_s);
  consider("exposed DP communication", x.dp.exposed_s, y.dp.exposed_s);
  consider("exposed TP communication", x.tp.exposed_s, y.tp.exposed_s);
  consider("exposed PP communication", x.pp.exposed_s, y.pp.exposed_s);
  consider("exposed CP communication", x.cp.exposed_s, y.cp.exposed_s);
  consider("exposed EP communication (MoE all-to-all)", x.ep.exposed_s, y.ep.exposed_s);
  consider("pipeline bubble", x.bubble_s, y.bubble_s);
  consider("optimizer", x.optimizer_s, y.optimizer_s);
  std::sort(moved.begin(), moved.end(),
            [](const auto& p, const auto& q) { return p.first > q.first; });
  std::vector<std::string> out;
  for (auto& m : moved) out.push_back(std::move(m.second));

  const auto pa = a.scenario.workload.precision;
  const auto pb = b.scenario.workload.precision;
  if (pa != pb) {
    out.push_back("precision: " + std::string(models::to_string(pa)) + " vs " +
                  std::string(models::to_string(pb)) +
                  (models::quantized(pa) || models::quantized(pb)
                       ? " (fp8, fp4: weight GEMMs at that peak, attention and the head in bf16, "
                         "casts added; MFU above is against each design's own peak, the bf16 "
                         "row compares them)"
                       : std::string()));
  }
  const auto& na = a.scenario.cluster.node;
  const auto& nb = b.scenario.cluster.node;
  if (na.nic.id != nb.nic.id || na.nics_per_node != nb.nics_per_node ||
      na.links_per_nic != nb.links_per_nic) {
    out.push_back("network: " + network_line(a.scenario) + " vs " + network_line(b.scenario));
    if (na.nic.protocol_efficiency != nb.nic.protocol_efficiency) {
      std::string line = "uncontended, the NICs deliver " +
                         format_percent(na.nic.protocol_efficiency) + " vs " +
                         format_percent(nb.nic.protocol_efficiency) +
                         " of line rate (catalog protocol efficiency)";
      // RoCE against InfiniBand: the one published side-by-side measurement (Tolly #225107, the
      // corpus's contention/tolly-225107-*.yaml: bus bandwidth ratios 1.0048 and 1.0254).
      using models::LinkTechnology;
      const auto& [roce, ib] = na.nic.technology == LinkTechnology::kRoce ? std::tie(na, nb)
                                                                          : std::tie(nb, na);
      if (roce.nic.technology == LinkTechnology::kRoce &&
          ib.nic.technology == LinkTechnology::kInfiniband) {
        const double gap = roce.nic.protocol_efficiency / ib.nic.protocol_efficiency - 1;
        line += "; on the same 64 H20 a collision-free RoCE fabric was measured level with "
                "InfiniBand (all_reduce +0.5%, alltoall +2.5% bus bandwidth, Tolly #225107), "
                "where these efficiencies give RoCE " +
                format_percent(std::abs(gap)) + (gap < 0 ? " less" : " more") +
                " (docs/collectives.md, contention)";
      }
      out.push_back(line);
    }
    // A technology whose congestion control loses link capacity under contention (TCP; RoCE
    // only where a calibration says so: sim/transport_model.h kRoceSharedEfficiency).
    auto lossy = [](const models::NodeConfig& n) {
      return sim::shared_link_efficiency(n.nic.technology, sim::TransportParams{}) < 1;
    };
    // The lossy side of the pair (against InfiniBand), if one is.
    const Design* l = lossy(nb) ? &b : lossy(na) ? &a : nullptr;
    if (nb.nic.technology != na.nic.technology && l != nullptr && l->des) {
      const auto tech = l->scenario.cluster.node.nic.technology;
      out.push_back(
          worst_slowdown(*l->des) > kCollisionSlowdown
              ? std::string(models::to_string(tech)) +
                    " loses link capacity where flows collide (congestion control under incast "
                    "and ECMP collisions; InfiniBand's credit flow control does not): see below"
              : "no flows collide on this fabric (" +
                    std::string(models::to_string(l->scenario.cluster.fabric.routing)) +
                    " routing, no overloaded port), so " + std::string(models::to_string(tech)) +
                    "'s congestion loss does not arise: only the protocol efficiency differs");
    }
  } else if (network_line(a.scenario) != network_line(b.scenario)) {
    out.push_back("fabric: " + network_line(a.scenario) + " vs " + network_line(b.scenario));
    if (moved.empty() && a.des && b.des) {
      // Same NICs, another fabric, and nothing moved: say why rather than print nothing.
      auto busiest_switch_tier = [](const Design& d) {
        return tier_utilisation(d, {sim::ResourceTier::kLeafSpine, sim::ResourceTier::kSpineCore});
      };
      out.push_back("no step component moved by " + format_percent(kReasonShareOfStep) +
                    ": neither fabric slowed the collectives below what the NICs carry (busiest "
                    "switch-to-switch link " + format_percent(busiest_switch_tier(a)) + " vs " +
                    format_percent(busiest_switch_tier(b)) +
                    ": a link loaded at the rate of the NICs feeding it is full, not a "
                    "bottleneck; NCCL keeps cross-node traffic on rails, PXN for all-to-all)");
    }
  }
  const auto& fa = a.scenario.cluster.fabric;
  const auto& fb = b.scenario.cluster.fabric;
  if (fa.switch_radix != fb.switch_radix && a.des && b.des) {
    auto leaf_spine = [](const Design& d) {
      return tier_utilisation(d, {sim::ResourceTier::kLeafSpine});
    };
    out.push_back("switches of " + std::to_string(fa.switch_radix) + " vs " +
                  std::to_string(fb.switch_radix) +
                  " ports: fewer nodes share a leaf with smaller switches, so more traffic "
                  "crosses the leaf uplinks (busiest leaf-spine link " +
                  format_percent(leaf_spine(a)) + " vs " + format_percent(leaf_spine(b)) + ")");
  }
  contention_lines(b, "", &out);
  // The baseline's own ECMP collisions explain a faster second design just as well.
  if (!a.what_ifs.empty()) contention_lines(a, "in " + a.scenario.name + ": ", &out);
  return out;
}

// The prefix every design's name shares, up to and including its last '-' ("" for one design
// or none): the table's columns drop it to stay narrow.
std::string common_name_prefix(const std::vector<Design>& ds) {
  if (ds.size() < 2) return "";
  std::string prefix = ds.front().scenario.name;
  for (const auto& d : ds) {
    std::size_t n = 0;
    while (n < prefix.size() && n < d.scenario.name.size() && prefix[n] == d.scenario.name[n]) ++n;
    prefix.resize(n);
  }
  const auto dash = prefix.rfind('-');
  prefix.resize(dash == std::string::npos ? 0 : dash + 1);
  // Keep a name whole if the prefix is all of it.
  for (const auto& d : ds) {
    if (d.scenario.name.size() == prefix.size()) return "";
  }
  return prefix;
}

// The comparison table over designs [begin, end): short cells; the long network and link
// descriptions go below it (print_table).
std::string table_text(const std::vector<Design>& all, std::size_t begin, std::size_t end,
                       bool des) {
  const std::vector<Design> ds(all.begin() + begin, all.begin() + end);
  const std::size_t cut = common_name_prefix(all).size();
  std::vector<std::string> header = {""};
  for (const auto& d : ds) header.push_back(d.scenario.name.substr(cut));
  TextTable t(header, [&] {
    std::vector<Align> a = {Align::kLeft};
    a.resize(header.size(), Align::kRight);
    return a;
  }());
  auto row = [&](const std::string& what, auto&& cell) {
    std::vector<std::string> r = {what};
    for (const auto& d : ds) r.push_back(cell(d));
    t.add_row(r);
  };
  row("GPUs", [](const Design& d) { return std::to_string(d.step.gpus); });
  row("network*", [](const Design& d) { return short_network_line(d.scenario); });
  t.add_separator();
  row("step time", [](const Design& d) { return format_time(d.step.step_time_s); });
  row("tokens/s", [](const Design& d) { return models::format_count(d.step.tokens_per_s); });
  row("tokens/s per GPU",
      [](const Design& d) { return models::format_count(d.step.tokens_per_s / d.step.gpus); });
  // MFU against each design's own precision's peak, named; beside it against the bf16 peak
  // when a design trains in another precision (fp8's peak is twice bf16's on Hopper).
  const bool mixed_peaks = std::any_of(ds.begin(), ds.end(), [](const Design& d) {
    return d.scenario.workload.precision != models::Precision::kBf16;
  });
  row("MFU", [&](const Design& d) {
    return format_percent(d.step.mfu) +
           (mixed_peaks ? " of " + std::string(models::to_string(d.scenario.workload.precision)) +
                              " peak"
                        : std::string());
  });
  if (mixed_peaks) {
    row("MFU of the bf16 peak", [](const Design& d) { return format_percent(d.step.mfu_bf16); });
  }
  row("precision",
      [](const Design& d) { return std::string(models::to_string(d.scenario.workload.precision)); });
  t.add_separator();
  row("compute", [](const Design& d) { return format_time(d.step.breakdown.compute_s); });
  row("exposed TP", [](const Design& d) { return format_time(d.step.breakdown.tp.exposed_s); });
  row("exposed DP", [](const Design& d) { return format_time(d.step.breakdown.dp.exposed_s); });
  row("exposed PP", [](const Design& d) { return format_time(d.step.breakdown.pp.exposed_s); });
  row("exposed CP", [](const Design& d) { return format_time(d.step.breakdown.cp.exposed_s); });
  if (std::any_of(ds.begin(), ds.end(), [](const Design& d) { return d.step.breakdown.ep.total_s > 0; })) {
    row("exposed EP", [](const Design& d) { return format_time(d.step.breakdown.ep.exposed_s); });
  }
  row("hidden communication",
      [](const Design& d) { return format_time(d.step.breakdown.hidden_comm_s()); });
  row("pipeline bubble", [](const Design& d) { return format_time(d.step.breakdown.bubble_s); });
  row("optimizer", [](const Design& d) { return format_time(d.step.breakdown.optimizer_s); });
  if (des) {
    t.add_separator();
    row("saturated links*", [](const Design& d) { return saturated_tiers(d); });
    row("worst contention",
        [](const Design& d) { return format_significant(worst_slowdown(*d.des), 3) + "x"; });
  }
  t.add_separator();
  row("memory per GPU", [](const Design& d) {
    return models::format_size(d.step.memory.total()) + (d.step.fits ? "" : " (no fit)");
  });
  row("cost per step", [](const Design& d) {
    return d.cost.priced ? models::format_usd(d.cost.usd_per_step) : std::string("-");
  });
  row("cost per M tokens", [](const Design& d) {
    return d.cost.priced ? models::format_usd(d.cost.usd_per_million_tokens) : std::string("-");
  });
  if (std::any_of(ds.begin(), ds.end(), [](const Design& d) { return d.ownership.has_value(); })) {
    auto owned = [&](const char* what, auto figure) {
      row(what, [figure](const Design& d) {
        return d.ownership ? figure(d.ownership->tco) : std::string("-");
      });
    };
    owned("fabric price", [](const models::TcoResult& o) { return models::format_usd(o.fabric_usd); });
    owned("capital", [](const models::TcoResult& o) { return models::format_usd(o.capital_usd); });
    owned("owned $/GPU-hour", [](const models::TcoResult& o) {
      return models::format_usd(o.owned_usd_per_gpu_hour);
    });
    owned("owned $/M tokens", [](const models::TcoResult& o) {
      return models::format_usd(o.owned_usd_per_million_tokens);
    });
    owned("on demand $/M tokens", [](const models::TcoResult& o) {
      return models::format_usd(o.on_demand_usd_per_million_tokens);
    });
  }
  row("whole run", [](const Design& d) {
    return d.cost.priced && d.cost.has_run ? models::format_usd(d.cost.run_usd) + " in " +
                                                 format_time(d.cost.effective_run_time_s)
                                           : std::string("-");
  });
  return t.render(2);
}

// The table in blocks of as many designs as fit `columns` (at least one a block), then each
// design's network and, simulated, its busiest link per tier.
void print_table(const std::vector<Design>& ds, bool des, int columns) {
  if (const std::string prefix = common_name_prefix(ds); !prefix.empty()) {
    std::printf("  (designs named %s...)\n", prefix.c_str());
  }
  for (std::size_t begin = 0; begin < ds.size();) {
    std::size_t end = ds.size();
    std::string text = table_text(ds, begin, end, des);
    while (end > begin + 1 && widest_line(text) > static_cast<std::size_t>(columns)) {
      text = table_text(ds, begin, --end, des);
    }
    std::printf("%s%s", begin > 0 ? "\n" : "", text.c_str());
    begin = end;
  }
  const auto width = static_cast<std::size_t>(columns);
  for (const auto& d : ds) {
    std::printf("%s", wrap_text("* network of " + d.scenario.name + ": " + network_line(d.scenario),
                                width, "  ", "      ").c_str());
  }
  if (des) {
    for (const auto& d : ds) {
      std::printf("%s", wrap_text("* busiest link per tier of " + d.scenario.name + ": " +
                                      saturation_line(d),
                                  width, "  ", "      ").c_str());
    }
    std::printf("%s", wrap_text("* busiest link: the utilisation of the busiest link of each "
                                "tier while the step's collectives run; sat.: saturated (100%, or "
                                "on a shared RoCE / TCP link what congestion control leaves of "
                                "it: " +
                                    format_percent(sim::shared_link_efficiency(
                                        models::LinkTechnology::kRoce, {})) +
                                    " / " +
                                    format_percent(sim::shared_link_efficiency(
                                        models::LinkTechnology::kEthernetTcp, {})) +
                                    ")",
                                width, "  ", "      ")
                          .c_str());
  }
  std::printf("\n");
}

// `text` as a gnuplot single-quoted string: a quote inside is doubled ('it''s'), the only escape
// such strings have.
std::string gnuplot_quoted(const std::string& text) {
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

// gnuplot from stdin; the data inline. Returns "" or what went wrong.
std::string draw_plot(const std::vector<Design>& ds, const std::string& file) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return "gnuplot not found: install it (apt-get install gnuplot-nox) to draw --plot " + file;
  }
  const bool svg = file.size() > 4 && file.substr(file.size() - 4) == ".svg";
  std::string script = svg ? "set terminal svg size 900,600 dynamic enhanced\n"
                           : "set terminal pngcairo size 900,600 enhanced\n";
  script += "set output " + gnuplot_quoted(file) + "\n";
  script += "set title 'Weak scaling: tokens/s against GPUs (same per-pipeline batch)'\n";
  script += "set xlabel 'GPUs'\nset ylabel 'tokens/s'\nset logscale xy 2\nset grid\n";
  script += "set key left top\nset format y '%.0s%c'\n";
  std::string plots;
  for (size_t i = 0; i < ds.size(); ++i) {
    script += "$d" + std::to_string(i) + " << EOD\n";
    for (const auto& [gpus, tps] : ds[i].scaling) {
      script += std::to_string(gpus) + " " + format_significant(tps, 8) + "\n";
    }
    script += "EOD\n";
    std::string title = ds[i].scenario.name;
    std::replace(title.begin(), title.end(), '\'', ' ');
    std::replace(title.begin(), title.end(), '_', '-');
    plots += (i ? ", " : "plot ") + std::string("$d") + std::to_string(i) +
             " using 1:2 with linespoints lw 2 pt 7 title '" + title + "'";
  }
  script += plots + "\n";
  FILE* p = popen("gnuplot 2>&1", "w");
  if (p == nullptr) return "could not start gnuplot";
  std::fwrite(script.data(), 1, script.size(), p);
  const int status = pclose(p);
  if (status == -1) return "gnuplot could not be waited for writing " + file;
  if (WIFSIGNALED(status)) {
    return "gnuplot killed by signal " + std::to_string(WTERMSIG(status)) + " writing " + file;
  }
  if (WEXITSTATUS(status) != 0) {
    return "gnuplot failed (exit " + std::to_string(WEXITSTATUS(status)) + ") writing " + file;
  }
  return "";
}

nlohmann::json design_json(const Design& d) {
  const auto& b = d.step.breakdown;
  nlohmann::json j = {
      {"scenario", d.scenario.name},
      {"path", d.scenario.path},
      {"gpus", d.step.gpus},
      {"network", network_line(d.scenario)},
      {"step_time_s", d.step.step_time_s},
      {"tokens_per_s", d.step.tokens_per_s},
      {"mfu", d.step.mfu},
      {"mfu_bf16_peak", d.step.mfu_bf16},
      {"precision", models::to_string(d.scenario.workload.precision)},
      {"memory_per_gpu_bytes", d.step.memory.total()},
      {"fits", d.step.fits},
      {"breakdown_s", breakdown_json(b)},
      {"cost",
       {{"usd_per_step", d.cost.priced ? nlohmann::json(d.cost.usd_per_step) : nlohmann::json()},
        {"usd_per_million_tokens",
         d.cost.priced ? nlohmann::json(d.cost.usd_per_million_tokens) : nlohmann::json()},
        {"run_usd",
         d.cost.priced && d.cost.has_run ? nlohmann::json(d.cost.run_usd) : nlohmann::json()}}},
  };
  if (d.ownership) j["ownership"] = ownership_json(*d.ownership);
  if (d.des) {
    nlohmann::json patterns = nlohmann::json::array();
    for (const auto& p : d.des->patterns) {
      nlohmann::json tiers = nlohmann::json::array();
      for (const auto& t : p.loads) {
        tiers.push_back({{"tier", sim::to_string(t.tier)},
                         {"max_utilisation", t.max_utilisation},
                         {"mean_utilisation", t.mean_utilisation},
                         {"links", t.resources},
                         {"saturated", saturated(d, t)},
                         {"busiest", t.busiest}});
      }
      patterns.push_back({{"what", p.what},
                          {"uncontended_s", p.uncontended_s},
                          {"simulated_s", p.simulated_s},
                          {"slowdown", p.slowdown()},
                          {"ecmp_collisions", ecmp_collisions(d, p) != nullptr},
                          {"tiers", tiers}});
    }
    j["fabric"] = {{"patterns", patterns}, {"critical_stage", d.des->critical_stage}};
    nlohmann::json what_if = nlohmann::json::array();
    for (const auto& w : d.what_ifs) {
      what_if.push_back({{"setting", w.setting},
                         {"step_time_s", w.step_time_s},
                         {"step_time_ratio", w.step_time_s / d.step.step_time_s},
                         {"worst_slowdown", w.worst_slowdown}});
    }
    j["fabric"]["what_if"] = what_if;
    j["fabric"]["other_ecmp_hash_step_time_s"] = d.other_hash_steps_s;
    j["analytic_step_time_s"] = d.des->analytic.step_time_s;
  }
  if (!d.scaling.empty()) {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& [g, t] : d.scaling) pts.push_back({{"gpus", g}, {"tokens_per_s", t}});
    j["scaling"] = pts;
  }
  return j;
}

int run_compare(const CompareArgs& a) {
  const std::string cmd = "compare";
  if (a.scenarios.size() < 2) return fail_bad_input(cmd, "give at least two scenarios to compare");
  if (!a.plot.empty()) {
    const auto dot = a.plot.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : a.plot.substr(dot);
    if (ext != ".png" && ext != ".svg") {
      return fail_bad_input(cmd, "--plot " + a.plot + ": the file must end in .png or .svg");
    }
    if (a.plot.find_first_of("\n\r") != std::string::npos) {
      return fail_bad_input(cmd, "--plot: a file name with a line break cannot go to gnuplot");
    }
  }
  const bool des = a.engine == "des";
  auto overrides = parse_set_options(a.sets);
  if (!overrides) return fail_bad_input(cmd, overrides.message());
  std::vector<Design> ds;
  for (const auto& path : a.scenarios) {
    auto d = load_design(path, *overrides, des);
    if (!d) return fail_bad_input(cmd, d.message());
    ds.push_back(std::move(d).value());
  }
  if (!a.plot.empty())
    for (auto& d : ds) compute_scaling(d, des);
  for (auto& d : ds) compute_what_ifs(d);

  std::string plot_error;
  if (!a.plot.empty()) plot_error = draw_plot(ds, a.plot);

  if (a.json) {
    nlohmann::json out = {{"engine", a.engine},
                          {"designs", nlohmann::json::array()},
                          {"differences", nlohmann::json::array()}};
    for (const auto& d : ds) out["designs"].push_back(design_json(d));
    for (size_t i = 1; i < ds.size(); ++i) {
      out["differences"].push_back(
          {{"design", ds[i].scenario.name},
           {"baseline", ds[0].scenario.name},
           {"step_time_ratio", ds[i].step.step_time_s / ds[0].step.step_time_s},
           {"tokens_per_s_ratio", ds[i].step.tokens_per_s / ds[0].step.tokens_per_s},
           {"reasons", reasons(ds[0], ds[i])}});
    }
    const auto entries = ladder_entries(ds);
    if (const auto rungs = fabric_ladder(entries); !rungs.empty()) {
      out["fabric_ladder"] = ladder_json(entries, rungs);
      out["fabric_ladder_verdict"] = ladder_verdict(entries, rungs);
    }
    if (!a.plot.empty())
      out["plot"] = plot_error.empty() ? nlohmann::json(a.plot) : nlohmann::json();
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    const int columns = output_columns();
    const auto width = static_cast<std::size_t>(columns);
    std::printf("%s", wrap_text(std::string("Comparison (") +
                                    (des ? "discrete-event simulation on SimGrid: contention, "
                                           "overlap and pipeline simulated)"
                                         : "analytic model: no contention between flows)"),
                                width, "", "  ")
                          .c_str());
    print_table(ds, des, columns);
    for (size_t i = 1; i < ds.size(); ++i) {
      const double r = ds[i].step.step_time_s / ds[0].step.step_time_s;
      const std::string headline =
          ds[i].scenario.name + " vs " + ds[0].scenario.name + ": step " +
          models::format_signed_percent(r - 1) + ", tokens/s " +
          models::format_signed_percent(ds[i].step.tokens_per_s / ds[0].step.tokens_per_s - 1);
      std::printf("%s", wrap_text(headline, width, "", "  ").c_str());
      for (const auto& why : reasons(ds[0], ds[i])) {
        // Lines that begin with two spaces belong to the reason above them.
        const std::string text =
            why.rfind("  ", 0) == 0 ? wrap_text(why.substr(2), width, "      ", "        ")
                                    : wrap_text(why, width, "  - ", "    ");
        std::printf("%s", text.c_str());
      }
      std::printf("\n");
    }
    print_ladder(ladder_entries(ds), width);
    if (!a.plot.empty() && plot_error.empty()) {
      std::printf("Scaling plot (tokens/s against GPUs) written to %s\n", a.plot.c_str());
    }
  }
  if (!plot_error.empty()) {
    std::fprintf(stderr, "clustersim compare: %s\n", plot_error.c_str());
    return kExitBadInput;
  }
  return kExitOk;
}

const bool kRegistered = register_command(
    {"compare", "several designs side by side (e.g. RoCE vs InfiniBand): step, cost, why", 40,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<CompareArgs>();
       sub.add_option("scenarios", a->scenarios, "two or more scenario YAML files").required();
       sub.add_option("--set", a->sets,
                      "KEY=VALUE: set a dotted scenario key in every design before loading (as "
                      "sweep --set, one value; repeatable), e.g. workload.seq_len=8192");
       sub.add_option("--engine", a->engine, "des (simulated, default) or analytic")
           .check_member({"des", "analytic"});
       sub.add_option(
           "--plot", a->plot,
           "write a scaling plot (tokens/s vs GPUs) with gnuplot to FILE.png or FILE.svg");
       sub.add_flag("--json", a->json, "one JSON object instead of the table");
       return [a] { return run_compare(*a); };
     },
     {"clustersim compare scenarios/ib-256gpu.yaml scenarios/roce-256gpu-ecmp.yaml",
      "clustersim compare scenarios/seed/interconnect-200gbe-roce.yaml scenarios/seed/interconnect-400g-ib.yaml --engine analytic"}});

}  // namespace
}  // namespace clustersim::tools
