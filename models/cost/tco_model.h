// Buy or rent: the total cost of owning a GPU cluster against renting the same GPUs, for one
// training job. Owning = capital (GPU servers, NICs, switches, optics by length class, storage,
// installation) written off over the depreciation years, plus power drawn by the plan itself
// (GPUs at the step's compute share, servers, NICs, switches, transceivers) x PUE x $/kWh, the
// facility per kW of IT capacity (colocation rent or an own hall's build cost), support as a
// share of capital and staff. Renting = cloud $/GPU-hour on demand or reserved 1 y / 3 y, plus
// cloud storage and egress. The goodput of failures and checkpoints (models/cost_model.h) applies
// to both: each pays for the hours lost. Units: USD, W, bytes, seconds; "GPU-hour" is an hour of
// one GPU. docs/cost.md gives the formulas; models/cost/price_book.h the defaults' sources.
// Pure functions over plain structs.
#pragma once

#include <string>
#include <vector>

#include "models/cost/price_book.h"

namespace clustersim::models {

struct Scenario;
struct StepResult;
struct RunCost;

// The fabric as bought: what `clustersim topo` counts (tools fill it from topology/'s
// FabricMetrics; models/ does not see the graph). All zero for one node without a fabric.
struct FabricBill {
  int nic_ports = 0;        // NIC links (bonded links each count)
  double nic_port_Gbps = 0;
  int nics = 0;             // adapters, at the catalog NIC price
  int switches = 0;
  double switch_port_Gbps = 0;
  int nic_cables = 0;       // NIC to leaf: in-row multimode
  int switch_cables = 0;    // switch to switch: across-hall single-mode
};

// One line of the capital bill.
struct CapitalLine {
  std::string item;   // "GPU servers (8 x h100-sxm)", "NICs (ib-ndr)", ...
  double count = 0;
  double unit_usd = 0;
  double total_usd = 0;
};

// Electrical power of the IT equipment, W.
struct PowerDraw {
  double gpus_w = 0;
  double servers_w = 0;  // CPUs, memory, fans, NVSwitch, power-supply losses
  double nics_w = 0;
  double switches_w = 0;
  double optics_w = 0;
  double total_w() const { return gpus_w + servers_w + nics_w + switches_w + optics_w; }
};

// The scenario's cost keys with the price book's defaults filled in.
struct TcoInputs {
  CloudPrice cloud;               // USD per GPU-hour
  double utilization = 0;         // of the hours, (0, 1]
  double server_usd = 0;          // one server with its GPUs, NICs apart
  double installation_share = 0;  // of the hardware
  double depreciation_years = 0;
  double electricity_usd_per_kwh = 0;
  double pue = 1;
  bool own_facility = false;
  double facility_usd_per_kw_month = 0;
  double support_share = 0;  // of the capital a year
  double staff_fte = 0;
  double staff_usd_per_year = 0;
  double server_w_per_gpu = 0;
  double storage_bytes = 0;
  double storage_usd_per_tb = 0;
  double cloud_storage_usd_per_tb_month = 0;
  double egress_bytes = 0;
  double egress_usd_per_gb = 0;
};

// Hours in a year and a month (365.25 days).
inline constexpr double kHoursPerYear = 8766;
inline constexpr double kHoursPerMonth = kHoursPerYear / 12;

struct TcoResult {
  TcoInputs in;
  int gpus = 0;

  // Capital, USD: the lines, then installation, then the total with it.
  std::vector<CapitalLine> capital;
  double hardware_usd = 0;      // the lines summed
  double installation_usd = 0;  // installation_share x hardware
  double capital_usd = 0;       // hardware + installation
  double fabric_usd = 0;        // of the hardware: NICs, switches and optics

  // Power, W. running: during the job's steps; idle: between jobs; provisioned: the capacity
  // the facility must hold (GPUs at their TDP).
  double compute_share = 0;  // of the step, the GPUs at their power cap (breakdown.compute_s)
  PowerDraw running, idle, provisioned;
  double average_it_w = 0;  // utilization x running + (1 - utilization) x idle

  // A year of ownership, USD.
  double depreciation_usd = 0;  // capital / depreciation years
  double energy_usd = 0;        // average IT kW x PUE x hours x $/kWh
  double facility_usd = 0;      // provisioned kW x $/kW-month x 12
  double support_usd = 0;       // support share x capital
  double staff_usd = 0;         // engineers x salary
  double annual_usd() const {
    return depreciation_usd + energy_usd + facility_usd + support_usd + staff_usd;
  }
  double monthly_opex_usd() const {
    return (energy_usd + facility_usd + support_usd + staff_usd) / 12;
  }

  // USD per GPU-hour of work: owned = a year's cost over the GPU-hours worked in it; reserved
  // capacity is paid every hour, so per hour worked it is the price / utilization.
  double owned_usd_per_gpu_hour = 0;
  double on_demand_usd_per_gpu_hour = 0;
  double reserved_1y_usd_per_gpu_hour = 0;
  double reserved_3y_usd_per_gpu_hour = 0;

  // Per million tokens, with the goodput applied (the hours failures cost are paid for).
  double goodput = 1;
  double owned_usd_per_million_tokens = 0;
  double on_demand_usd_per_million_tokens = 0;  // GPU-hours + cloud storage + egress
  double reserved_1y_usd_per_million_tokens = 0;
  double reserved_3y_usd_per_million_tokens = 0;

  // The whole run (workload.train_tokens); has_run = false without it.
  bool has_run = false;
  double run_months = 0;  // effective run time (with failures), months
  double owned_run_usd = 0;
  double on_demand_run_usd = 0;  // GPUs + storage + egress
  double cloud_storage_usd = 0;  // storage_bytes for run_months
  double egress_usd = 0;

  // Break-even against on-demand. breakeven_utilization: the utilization at which an owned
  // GPU-hour of work costs the on-demand price (power idles with the GPUs); -1 when owning costs
  // more even fully used. breakeven_months: months after which owning (capital up front, then
  // running costs) has cost less in cash than renting the same worked hours on demand; -1 when
  // renting stays cheaper.
  double breakeven_utilization = -1;
  double breakeven_months = -1;
};

// Fills the cost keys with the price book's defaults for this cluster and job. REQUIRES:
// scenario.cost.present.
TcoInputs resolve_tco_inputs(const Scenario& scenario, double checkpoint_bytes);

// The whole estimate. `run` carries the goodput, the run length and the checkpoint size
// (estimate_run_cost). REQUIRES: scenario.cost.present, step.step_time_s > 0.
TcoResult estimate_tco(const Scenario& scenario, const StepResult& step, const RunCost& run,
                       const FabricBill& fabric);

// Cash spent after `months` of owning (capital at month 0, then running costs) and of renting
// the same worked hours: on demand (utilization x hours), or reserved (every hour).
enum class Sourcing { kOwned, kOnDemand, kReserved1y, kReserved3y };
std::string_view to_string(Sourcing s);
double cumulative_usd(const TcoResult& tco, Sourcing how, double months);

}  // namespace clustersim::models
