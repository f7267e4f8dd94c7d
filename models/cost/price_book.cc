#include "models/cost/price_book.h"

#include <algorithm>

#include "models/result.h"

// One table, each row citing where its number comes from and when. Prices are US list or street
// prices in USD; "approximate" marks figures without a public list price.
namespace clustersim::models {
namespace {

std::vector<PriceRow> make_price_book() {
  return {
      // --- Renting ---
      {"h100-sxm.on_demand", 2.99, "USD per GPU-hour",
       "Lambda on-demand 8 x H100 SXM, $2.99 per GPU-hour (lambdalabs.com GPU cloud pricing, "
       "2024). For scale: CoreWeave HGX H100 $4.76 (2024); hyperscalers on demand before June "
       "2025: AWS p5.48xlarge $98.32/h = $12.29 per GPU-hour (The Next Platform, 2023-07-27), "
       "GCP a3-highgpu-8g $88.49/h = $11.06, Azure ND96isr H100 v5 about $98/h (approximate); "
       "AWS cut P5 on-demand prices by up to 45% in June 2025"},
      {"h100-sxm.reserved_1y", 2.99 * 0.63, "USD per GPU-hour",
       "approximate: 0.63 of on-demand, GCP's 1-year committed-use price for accelerator VMs "
       "(Cyclenerd/google-cloud-pricing-cost-calculator pricing.yml, generated 2026-02-12: "
       "a2-highgpu-1g month_1y / month = 0.63); specialist clouds quote reserved H100 at "
       "$1.85-2.49 (2024-2025)"},
      {"h100-sxm.reserved_3y", 2.99 * 0.45, "USD per GPU-hour",
       "approximate: GCP's 3-year commitment is 0.35 of on-demand on the same list and AWS EC2 "
       "Instance Savings Plans save up to 72% (aws.amazon.com/savingsplans/faqs, 2025); "
       "specialist clouds discount less from a lower list price: 0.45 taken"},
      {"a100-sxm-80gb.on_demand", 1.79, "USD per GPU-hour",
       "Lambda on-demand 8 x A100 SXM 80GB, $1.79 per GPU-hour (2024); reserved at the H100's "
       "ratios (0.63, 0.45)"},
      {"cloud.scaled", 2.99, "USD per GPU-hour of an H100",
       "other GPUs: the H100's prices scaled by catalog list price (an approximation: "
       "AWS EC2 Capacity Blocks priced an H200 at 1.10 of an H100, $5.408 vs $4.916 per "
       "GPU-hour, rates in force to 2025-01-01)"},
      {"cloud_storage_usd_per_tb_month", 145, "USD per TB-month",
       "AWS FSx for Lustre persistent SSD, 125 MB/s per TiB, us-east-1: $0.145 per GB-month "
       "(aws.amazon.com/fsx/lustre/pricing, 2024)"},
      {"egress_usd_per_gb", 0.09, "USD per GB",
       "AWS data transfer out to the internet, first 10 TB a month: $0.09 per GB "
       "(aws.amazon.com/ec2/pricing/on-demand, 2024; $0.05-0.085 in the larger tiers)"},

      // --- Owning: capital ---
      {"server_base_8gpu", 30000, "USD per 8-GPU server, GPUs and NICs apart",
       "approximate: SemiAnalysis, 'AI Server Cost Analysis - Memory Is The Biggest Loser' "
       "(2023-05): a DGX H100 sells for about $270,000; less 8 x $30,000 GPUs (the catalog's "
       "H100 price) leaves $30,000 for CPUs, 2 TB of memory, the NVSwitch baseboard, chassis, "
       "power supplies and NVMe (their non-GPU bill of materials totals $32,010, as Epoch AI's "
       "training-cost-trends notebook sums it); a Thinkmate HGX H100 quote with 8 x 400G NICs "
       "read $317,000 (2024-08, web.archive.org)"},
      {"installation_share", 0.05, "fraction of the hardware",
       "approximate: rack and stack, cabling, burn-in and acceptance by an integrator; no public "
       "rate card, a few percent of the hardware is the usual quote"},
      {"optics.multimode_usd_per_gbps", 1.75, "USD per Gb/s of port rate, per transceiver",
       "approximate: third-party 400G OSFP/QSFP112 SR4 multimode modules list at $600-800 "
       "(fs.com, 2024; NVIDIA's own about twice that): $700 for 400G, with its share of a "
       "~30 m fibre; 100G-800G scaled by rate"},
      {"optics.singlemode_usd_per_gbps", 2.6, "USD per Gb/s of port rate, per transceiver",
       "approximate: third-party 400G DR4 single-mode modules list at $900-1,200 (fs.com, "
       "2024): $1,040 for 400G with its share of a ~100-500 m fibre"},
      {"optics.multimode_w_per_gbps", 0.02, "W per Gb/s, per transceiver",
       "approximate: 400G SR4 modules are specified at 8 W or less (QSFP112/OSFP datasheets); "
       "800G twin-port OSFP at ~15-17 W"},
      {"optics.singlemode_w_per_gbps", 0.03, "W per Gb/s, per transceiver",
       "approximate: 400G DR4 modules are specified at about 10-12 W"},
      {"nic_w_per_port.400g", 25, "W per NIC port",
       "approximate: NVIDIA ConnectX-7 400G adapters draw about 25 W typical (product brief "
       "lists the maximum by form factor); 100G 15 W, 200G 19 W, 800G 35 W, scaled alike"},
      {"storage_usd_per_tb", 200, "USD per usable TB",
       "approximate: all-flash parallel file systems (VAST, DDN, WEKA appliances) sell at "
       "roughly $150-300 per usable TB (2024 press and analyst estimates; no public list price)"},

      // --- Owning: running ---
      {"electricity_usd_per_kwh", 0.0806, "USD per kWh",
       "U.S. EIA, average retail price to industrial customers in 2023: 8.06 cents per kWh "
       "(Electric Power Annual 2023, 2024-10-17; commercial customers paid about 12.7)"},
      {"pue", 1.58, "facility power / IT power",
       "Uptime Institute Global Data Center Survey 2023 (2023-07): industry average PUE 1.58, "
       "flat at 1.55-1.59 since 2020; hyperscale and purpose-built AI halls reach 1.1-1.3"},
      {"colocation_usd_per_kw_month", 184.06, "USD per kW-month of IT capacity",
       "CBRE, North America Data Center Trends H2 2024 (2025-02-26): average monthly asking rate "
       "for a 250-500 kW requirement in primary markets, $184.06 per kW (H2 2023: $163.44); "
       "energy metered on top"},
      {"own_facility_usd_per_kw_month", 56, "USD per kW-month of IT capacity",
       "approximate: building a data hall costs about $10 per watt of IT capacity (industry "
       "estimates of $8-12 per W, 2023-2024; no single public figure), depreciated over 15 "
       "years = $56 per kW-month, before its upkeep"},
      {"gpu_idle_share", 0.1, "of TDP",
       "approximate: an idle H100 SXM draws about 70 W of its 700 W (nvidia-smi on idle HGX "
       "nodes; no datasheet figure)"},
      {"gpu_waiting_share", 0.3, "of TDP",
       "while a GPU waits on communication or a pipeline bubble it runs memory-bound kernels at "
       "0.3 of a GEMM's power (docs/modelling.md, 'Power cap', fitted on two measured H200 "
       "steps)"},
      {"server_w_per_gpu", 350, "W per GPU",
       "approximate: the DGX H100 datasheet's 10.2 kW maximum less 8 x 700 W of GPUs leaves "
       "4.6 kW (575 W per GPU) for CPUs, memory, NVSwitch, fans and power-supply losses at full "
       "fan speed; about 60% of that under a training load"},
      {"server_idle_share", 0.5, "of its load power",
       "approximate: CPUs idle and fans slow when the GPUs do; half the load power"},
      {"depreciation_years", 5, "years",
       "Amazon 2024 Form 10-K (2025-02): servers depreciated over 5 years from 2025, down from "
       "6; Microsoft and Alphabet use 6, CoreWeave 6 for GPU servers; 5 taken"},
      {"support_share", 0.08, "fraction of the capital a year",
       "approximate: vendor hardware support and software subscriptions run at 8-12% of the "
       "hardware price a year (industry rule of thumb; NVIDIA quotes DGX support per system)"},
      {"staff_usd_per_year", 178000, "USD per full-time engineer a year",
       "U.S. BLS Occupational Employment and Wage Statistics, May 2023: computer network "
       "architects (15-1241) median $126,900 a year; x 1.4 for benefits and overhead (BLS "
       "Employer Costs for Employee Compensation: benefits ~30% of compensation)"},
      {"staff_gpus_per_engineer", 512, "GPUs per full-time engineer",
       "assumption: one engineer looks after about 64 nodes of 8 GPUs (hardware, fabric, "
       "scheduler, failures); at least a quarter of an engineer"},
      {"utilization", 0.8, "of the hours",
       "assumption: the share of hours an owned cluster does paid work; Llama 3's 16K-GPU run "
       "kept over 90% effective training time (Llama Team 2024, sec. 3.3.4) but a team's "
       "cluster waits between jobs"},
  };
}

}  // namespace

const std::vector<PriceRow>& price_book() {
  static const std::vector<PriceRow> kRows = make_price_book();
  return kRows;
}

const PriceRow* find_price(std::string_view id) {
  for (const PriceRow& r : price_book()) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

namespace {
double price(std::string_view id) {
  const PriceRow* r = find_price(id);
  CS_ASSERT(r != nullptr, "a price the model uses is in the book");
  return r->value;
}
}  // namespace

CloudPrice cloud_price_for(std::string_view gpu_id, double gpu_list_price_usd) {
  const double h100 = price("h100-sxm.on_demand");
  const double r1 = price("h100-sxm.reserved_1y") / h100;
  const double r3 = price("h100-sxm.reserved_3y") / h100;
  double od = h100;
  if (gpu_id == "a100-sxm-80gb") {
    od = price("a100-sxm-80gb.on_demand");
  } else if (gpu_id != "h100-sxm" && gpu_list_price_usd > 0) {
    constexpr double kH100ListUsd = 30000;  // the catalog's h100-sxm price
    od = h100 * gpu_list_price_usd / kH100ListUsd;
  }
  return {od, od * r1, od * r3};
}

double server_base_price_usd(int gpus_per_node) {
  return price("server_base_8gpu") * gpus_per_node / 8.0;
}

std::string_view to_string(CableClass c) {
  return c == CableClass::kInRowMultimode ? "in-row multimode (NIC to leaf, up to ~50 m)"
                                          : "across-hall single-mode (switch to switch, ~500 m)";
}

TransceiverSpec transceiver_for(CableClass c, double port_Gbps) {
  const bool mm = c == CableClass::kInRowMultimode;
  return {port_Gbps * price(mm ? "optics.multimode_usd_per_gbps" : "optics.singlemode_usd_per_gbps"),
          port_Gbps * price(mm ? "optics.multimode_w_per_gbps" : "optics.singlemode_w_per_gbps")};
}

double nic_power_w(double port_Gbps) {
  // 15 W at 100G, 19 at 200G, 25 at 400G, 35 at 800G: a fixed part plus one growing with rate,
  // anchored on the 400G row.
  const double at_400 = price("nic_w_per_port.400g");
  if (port_Gbps <= 100) return at_400 * 0.6;
  if (port_Gbps <= 200) return at_400 * 0.76;
  if (port_Gbps <= 400) return at_400;
  return at_400 * 1.4;
}

}  // namespace clustersim::models
