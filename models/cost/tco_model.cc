#include "models/cost/tco_model.h"

#include <algorithm>
#include <cmath>

#include "models/cost_model.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

namespace clustersim::models {
namespace {

constexpr double kSecondsPerYear = kHoursPerYear * 3600;
// Checkpoints the file system keeps by default, and bytes per stored training token (uint32 ids).
constexpr double kCheckpointsKept = 5;
constexpr double kBytesPerStoredToken = 4;

double book(std::string_view id) {
  const PriceRow* r = find_price(id);
  CS_ASSERT(r != nullptr, "a price the model uses is in the book");
  return r->value;
}

// The scenario's value when given, else the default.
double given_or(double value, double fallback) {
  return value == CostConfig::kNotGiven ? fallback : value;
}

}  // namespace

TcoInputs resolve_tco_inputs(const Scenario& s, double checkpoint_bytes) {
  CS_ASSERT(s.cost.present, "owning is priced only with a cost: section");
  const CostConfig& c = s.cost;
  const NodeConfig& node = s.cluster.node;
  const int gpus = s.cluster.total_gpus();
  TcoInputs in;
  in.cloud = cloud_price_for(node.gpu.id, node.gpu.list_price_usd);
  if (c.gpu_hour_usd > 0) {
    // A given on-demand price moves the reserved defaults with it.
    const double scale = c.gpu_hour_usd / in.cloud.on_demand;
    in.cloud = {c.gpu_hour_usd, in.cloud.reserved_1y * scale, in.cloud.reserved_3y * scale};
  }
  in.cloud.reserved_1y = given_or(c.reserved_1y_usd, in.cloud.reserved_1y);
  in.cloud.reserved_3y = given_or(c.reserved_3y_usd, in.cloud.reserved_3y);
  in.utilization = given_or(c.utilization, book("utilization"));
  in.server_usd = given_or(c.server_usd, node.gpus_per_node * node.gpu.list_price_usd +
                                             server_base_price_usd(node.gpus_per_node));
  in.installation_share = given_or(c.installation_share, book("installation_share"));
  in.depreciation_years =
      c.depreciation_s == CostConfig::kNotGiven ? book("depreciation_years")
                                                : c.depreciation_s / kSecondsPerYear;
  in.electricity_usd_per_kwh = given_or(c.electricity_usd_per_kwh, book("electricity_usd_per_kwh"));
  in.pue = given_or(c.pue, book("pue"));
  in.own_facility = c.facility == Facility::kOwn;
  in.facility_usd_per_kw_month =
      given_or(c.facility_usd_per_kw_month, book(in.own_facility ? "own_facility_usd_per_kw_month"
                                                                 : "colocation_usd_per_kw_month"));
  in.support_share = given_or(c.support_share, book("support_share"));
  in.staff_fte = given_or(c.staff_fte, std::max(0.25, gpus / book("staff_gpus_per_engineer")));
  in.staff_usd_per_year = given_or(c.staff_usd_per_year, book("staff_usd_per_year"));
  in.server_w_per_gpu = given_or(c.server_w_per_gpu, book("server_w_per_gpu"));
  in.storage_bytes = given_or(c.storage_bytes, kCheckpointsKept * checkpoint_bytes +
                                                   s.workload.train_tokens * kBytesPerStoredToken);
  in.storage_usd_per_tb = given_or(c.storage_usd_per_tb, book("storage_usd_per_tb"));
  in.cloud_storage_usd_per_tb_month =
      given_or(c.cloud_storage_usd_per_tb_month, book("cloud_storage_usd_per_tb_month"));
  // The trained model leaves the cloud once: its 16-bit weights, 2 of a checkpoint's 14 bytes
  // per parameter.
  in.egress_bytes = given_or(c.egress_bytes, checkpoint_bytes * 2 / 14);
  in.egress_usd_per_gb = given_or(c.egress_usd_per_gb, book("egress_usd_per_gb"));
  return in;
}

TcoResult estimate_tco(const Scenario& s, const StepResult& step, const RunCost& run,
                       const FabricBill& fabric) {
  CS_ASSERT(step.step_time_s > 0, "a step takes time");
  const NodeConfig& node = s.cluster.node;
  const double checkpoint_bytes =
      count_parameters(s.workload.model).total() * CostParams{}.checkpoint_bytes_per_param;
  TcoResult t;
  t.in = resolve_tco_inputs(s, checkpoint_bytes);
  const TcoInputs& in = t.in;
  t.gpus = step.gpus;
  const int nodes = s.cluster.nodes;

  // 1. Capital: the bill of materials at the price book's or the scenario's prices.
  auto add = [&t](std::string item, double count, double unit_usd) {
    if (count <= 0) return;
    t.capital.push_back({std::move(item), count, unit_usd, count * unit_usd});
    t.hardware_usd += count * unit_usd;
  };
  add("GPU servers (" + std::to_string(node.gpus_per_node) + " x " + node.gpu.id + ")", nodes,
      in.server_usd);
  add("NICs (" + node.nic.id + ")", fabric.nics, node.nic.price_usd);
  add("switches (" + s.cluster.fabric.switch_spec.id + ")", fabric.switches,
      s.cluster.fabric.switch_spec.price_usd);
  const TransceiverSpec mm = transceiver_for(CableClass::kInRowMultimode, fabric.nic_port_Gbps);
  const TransceiverSpec sm =
      transceiver_for(CableClass::kAcrossHallSingleMode, fabric.switch_port_Gbps);
  add("transceivers, " + std::string(to_string(CableClass::kInRowMultimode)),
      2.0 * fabric.nic_cables, mm.price_usd);
  add("transceivers, " + std::string(to_string(CableClass::kAcrossHallSingleMode)),
      2.0 * fabric.switch_cables, sm.price_usd);
  t.fabric_usd = t.hardware_usd - (nodes * in.server_usd);
  add("storage (TB)", in.storage_bytes / 1e12, in.storage_usd_per_tb);
  t.installation_usd = in.installation_share * t.hardware_usd;
  t.capital_usd = t.hardware_usd + t.installation_usd;

  // 2. Power. During a step the GPUs run at their cap for the compute share and at the
  // waiting share of it otherwise; between jobs they idle. The network is always on.
  const double tdp = node.gpu.tdp_w;
  t.compute_share = std::clamp(step.breakdown.compute_s / step.step_time_s, 0.0, 1.0);
  const double waiting = book("gpu_waiting_share");
  PowerDraw network;
  network.nics_w = fabric.nic_ports * nic_power_w(fabric.nic_port_Gbps);
  network.switches_w = fabric.switches * s.cluster.fabric.switch_spec.power_w;
  network.optics_w = 2.0 * fabric.nic_cables * mm.power_w + 2.0 * fabric.switch_cables * sm.power_w;
  t.running = t.idle = t.provisioned = network;
  t.running.gpus_w = t.gpus * tdp * (t.compute_share + waiting * (1 - t.compute_share));
  t.running.servers_w = t.gpus * in.server_w_per_gpu;
  t.idle.gpus_w = t.gpus * tdp * book("gpu_idle_share");
  t.idle.servers_w = t.running.servers_w * book("server_idle_share");
  t.provisioned.gpus_w = t.gpus * tdp;
  t.provisioned.servers_w = t.running.servers_w;
  const double u = in.utilization;
  t.average_it_w = u * t.running.total_w() + (1 - u) * t.idle.total_w();

  // 3. A year of it.
  t.depreciation_usd = t.capital_usd / in.depreciation_years;
  auto energy = [&](double it_w) {
    return it_w / 1000 * in.pue * kHoursPerYear * in.electricity_usd_per_kwh;
  };
  t.energy_usd = energy(t.average_it_w);
  t.facility_usd = t.provisioned.total_w() / 1000 * in.facility_usd_per_kw_month * 12;
  t.support_usd = in.support_share * t.capital_usd;
  t.staff_usd = in.staff_fte * in.staff_usd_per_year;

  // 4. Per GPU-hour of work.
  const double worked_gpu_hours = t.gpus * kHoursPerYear * u;
  t.owned_usd_per_gpu_hour = t.annual_usd() / worked_gpu_hours;
  t.on_demand_usd_per_gpu_hour = in.cloud.on_demand;
  t.reserved_1y_usd_per_gpu_hour = in.cloud.reserved_1y / u;
  t.reserved_3y_usd_per_gpu_hour = in.cloud.reserved_3y / u;

  // 5. Per million tokens and per run, with the hours failures cost.
  t.goodput = run.goodput;
  const double gpu_hours_per_mtok =
      run.goodput > 0 ? step.gpus * step.step_time_s / 3600 / (step.tokens_per_step / 1e6) /
                            run.goodput
                      : HUGE_VAL;
  t.owned_usd_per_million_tokens = t.owned_usd_per_gpu_hour * gpu_hours_per_mtok;
  t.on_demand_usd_per_million_tokens = t.on_demand_usd_per_gpu_hour * gpu_hours_per_mtok;
  t.reserved_1y_usd_per_million_tokens = t.reserved_1y_usd_per_gpu_hour * gpu_hours_per_mtok;
  t.reserved_3y_usd_per_million_tokens = t.reserved_3y_usd_per_gpu_hour * gpu_hours_per_mtok;
  if (run.has_run && std::isfinite(run.effective_run_time_s)) {
    t.has_run = true;
    const double hours = run.effective_run_time_s / 3600;
    t.run_months = hours / kHoursPerMonth;
    t.owned_run_usd = t.owned_usd_per_gpu_hour * t.gpus * hours;
    t.cloud_storage_usd = in.storage_bytes / 1e12 * in.cloud_storage_usd_per_tb_month * t.run_months;
    t.egress_usd = in.egress_bytes / 1e9 * in.egress_usd_per_gb;
    t.on_demand_run_usd =
        t.on_demand_usd_per_gpu_hour * t.gpus * hours + t.cloud_storage_usd + t.egress_usd;
    const double mtok = s.workload.train_tokens / 1e6;
    t.on_demand_usd_per_million_tokens = t.on_demand_run_usd / mtok;
    const double extras = (t.cloud_storage_usd + t.egress_usd) / mtok;
    t.reserved_1y_usd_per_million_tokens += extras;
    t.reserved_3y_usd_per_million_tokens += extras;
  }

  // 6. Break-even against on demand. A year owned costs F + E_idle + u (E_run - E_idle); renting
  // the worked hours costs u x G x H x price: equal at u* = (F + E_idle) / (G H p - dE).
  const double fixed = t.depreciation_usd + t.facility_usd + t.support_usd + t.staff_usd;
  const double e_idle = energy(t.idle.total_w());
  const double e_delta = energy(t.running.total_w()) - e_idle;
  const double rent_full_year = t.gpus * kHoursPerYear * in.cloud.on_demand;
  if (rent_full_year > e_delta) {
    const double u_star = (fixed + e_idle) / (rent_full_year - e_delta);
    if (u_star <= 1) t.breakeven_utilization = u_star;
  }
  const double rent_month = rent_full_year * u / 12;
  const double opex_month = t.monthly_opex_usd();
  if (rent_month > opex_month) t.breakeven_months = t.capital_usd / (rent_month - opex_month);
  return t;
}

std::string_view to_string(Sourcing s) {
  switch (s) {
    case Sourcing::kOwned: return "owned";
    case Sourcing::kOnDemand: return "on demand";
    case Sourcing::kReserved1y: return "reserved 1 y";
    case Sourcing::kReserved3y: return "reserved 3 y";
  }
  return "?";
}

double cumulative_usd(const TcoResult& t, Sourcing how, double months) {
  const double gpu_hours = t.gpus * kHoursPerMonth * months;
  switch (how) {
    case Sourcing::kOwned: return t.capital_usd + t.monthly_opex_usd() * months;
    case Sourcing::kOnDemand: return gpu_hours * t.in.utilization * t.in.cloud.on_demand;
    case Sourcing::kReserved1y: return gpu_hours * t.in.cloud.reserved_1y;
    case Sourcing::kReserved3y: return gpu_hours * t.in.cloud.reserved_3y;
  }
  return 0;
}

}  // namespace clustersim::models
