// The prices and rates behind the cost of owning a cluster and of renting one: cloud GPU-hours,
// GPU servers, transceivers, storage, egress, electricity, colocation, PUE, staff, support and
// depreciation. Every figure is a row with its public source and the date of that source; where
// only an approximate figure exists the row says "approximate" and why. Units are in the names:
// USD, watts, bytes, seconds. The rows are immutable and live for the whole program.
//
// These are defaults: every one can be replaced by a scenario `cost:` key
// (docs/scenario-format.md), and prices move quickly (cloud H100 prices halved between 2023 and
// 2025), so a purchase decision should use its own quotes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clustersim::models {

// One priced figure with where it comes from.
struct PriceRow {
  std::string id;      // "colocation_kw_month", "h100-sxm.on_demand", ...
  double value = 0;    // in the unit below
  std::string unit;    // "USD per GPU-hour", "USD per kW-month", ...
  std::string source;  // publication, date, and what was derived or assumed
};

// Every row, for `clustersim report` and the documentation. Ids are unique.
const std::vector<PriceRow>& price_book();
// The row with this id, or nullptr.
const PriceRow* find_price(std::string_view id);

// Cloud rent for one GPU SKU, USD per GPU-hour.
struct CloudPrice {
  double on_demand = 0;    // specialist GPU cloud list price, pay as you go
  double reserved_1y = 0;  // committed for one year, paid whether used or not
  double reserved_3y = 0;  // committed for three years
};
// The cloud prices for a catalog GPU id (the SKUs renters meet; others scaled from the H100 by
// list price, and say so in the source of "cloud.scaled").
CloudPrice cloud_price_for(std::string_view gpu_id, double gpu_list_price_usd);

// What an 8-GPU server costs beyond its GPUs (CPUs, memory, NVSwitch baseboard, chassis, power
// supplies, local NVMe), USD per server; scaled by GPUs per node for other node sizes.
double server_base_price_usd(int gpus_per_node);

// Length classes of the fabric's cables (docs/cost.md): a node's NIC to its leaf crosses racks in
// a row (multimode optics up to ~50 m); a switch to a switch of the tier above crosses the hall
// (single-mode optics up to ~500 m).
enum class CableClass { kInRowMultimode, kAcrossHallSingleMode };
std::string_view to_string(CableClass c);

// One transceiver (a cable has two) for a port of `port_Gbps`, with its share of the fibre:
// price USD and power W.
struct TransceiverSpec {
  double price_usd = 0;
  double power_w = 0;
};
TransceiverSpec transceiver_for(CableClass c, double port_Gbps);

// A NIC port's power, W, by line rate (ConnectX-6/7/8 class).
double nic_power_w(double port_Gbps);

}  // namespace clustersim::models
