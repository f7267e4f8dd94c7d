// The cost of owning against renting, every term checked by hand (the arithmetic is in the
// comments) on a small cluster whose every cost key is given in round numbers.
#include "models/cost/tco_model.h"

#include <doctest/doctest.h>

#include "models/cost_model.h"
#include "models/scenario.h"
#include "models/step_model.h"

using namespace clustersim::models;

namespace {

constexpr double kSecondsPerYear = kHoursPerYear * 3600;

// 2 nodes x 8 H100 (700 W, $30,000) with 8 ib-ndr NICs each ($2,000), one Quantum-2 switch
// ($33,000, 750 W); every cost key given.
Scenario two_nodes() {
  Scenario s;
  s.cluster.nodes = 2;
  s.cluster.node.gpu = *find_gpu("h100-sxm");
  s.cluster.node.gpus_per_node = 8;
  s.cluster.node.nic = *find_nic("ib-ndr");
  s.cluster.node.nics_per_node = 8;
  s.cluster.fabric.switch_spec = *find_switch("quantum-2-qm9700");
  s.workload.model = *find_model("llama2-7b");
  s.workload.train_tokens = 1e10;
  CostConfig& c = s.cost;
  c.present = true;
  c.gpu_hour_usd = 2;
  c.reserved_1y_usd = 1.5;
  c.reserved_3y_usd = 1;
  c.utilization = 0.5;
  c.server_usd = 250000;
  c.installation_share = 0.04;
  c.depreciation_s = 4 * kSecondsPerYear;
  c.electricity_usd_per_kwh = 0.1;
  c.pue = 1.5;
  c.facility_usd_per_kw_month = 200;
  c.support_share = 0.1;
  c.staff_fte = 0.5;
  c.staff_usd_per_year = 200000;
  c.server_w_per_gpu = 300;
  c.storage_bytes = 10e12;
  c.storage_usd_per_tb = 100;
  c.cloud_storage_usd_per_tb_month = 150;
  c.egress_bytes = 1e12;
  c.egress_usd_per_gb = 0.05;
  return s;
}

FabricBill one_switch() {
  FabricBill b;
  b.nics = 16;
  b.nic_ports = 16;
  b.nic_port_Gbps = 400;
  b.switches = 1;
  b.switch_port_Gbps = 400;
  b.nic_cables = 16;
  return b;
}

// 10 s steps of a million tokens, 8 s of them computing; a run of 1,000 hours at goodput 0.9.
StepResult step_of() {
  StepResult r;
  r.gpus = 16;
  r.step_time_s = 10;
  r.tokens_per_step = 1e6;
  r.breakdown.compute_s = 8;
  return r;
}
RunCost run_of() {
  RunCost c;
  c.goodput = 0.9;
  c.has_run = true;
  c.effective_run_time_s = 1000 * 3600.0;
  return c;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("tco: capital, power, a year, per GPU-hour, per token and per run by hand") {
    const TcoResult t = estimate_tco(two_nodes(), step_of(), run_of(), one_switch());
    // Capital: servers 2 x 250,000; NICs 16 x 2,000; one switch 33,000; 32 multimode
    // transceivers at 400 x $1.75 = $700; storage 10 TB x $100.
    REQUIRE(t.capital.size() == 5);
    CHECK(t.capital[0].total_usd == doctest::Approx(500000));
    CHECK(t.capital[1].total_usd == doctest::Approx(32000));
    CHECK(t.capital[2].total_usd == doctest::Approx(33000));
    CHECK(t.capital[3].count == 32);
    CHECK(t.capital[3].unit_usd == doctest::Approx(700));
    CHECK(t.capital[4].total_usd == doctest::Approx(1000));
    CHECK(t.hardware_usd == doctest::Approx(588400));
    CHECK(t.fabric_usd == doctest::Approx(87400));
    CHECK(t.installation_usd == doctest::Approx(23536));  // 4%
    CHECK(t.capital_usd == doctest::Approx(611936));
    // Power. Network always on: NICs 16 x 25 W, switch 750 W, optics 32 x 400 x 0.02 W = 256 W.
    CHECK(t.running.nics_w == doctest::Approx(400));
    CHECK(t.running.optics_w == doctest::Approx(256));
    // GPUs: 16 x 700 x (0.8 + 0.3 x 0.2) = 9,632 W running, 1,120 W idle; servers 4,800 / 2,400.
    CHECK(t.compute_share == doctest::Approx(0.8));
    CHECK(t.running.gpus_w == doctest::Approx(9632));
    CHECK(t.running.total_w() == doctest::Approx(15838));
    CHECK(t.idle.total_w() == doctest::Approx(4926));
    CHECK(t.provisioned.total_w() == doctest::Approx(17406));
    CHECK(t.average_it_w == doctest::Approx(10382));
    // A year: 611,936 / 4; 10.382 kW x 1.5 x 8,766 h x $0.1; 17.406 kW x $200 x 12; 10%; 0.5 x
    // 200,000.
    CHECK(t.depreciation_usd == doctest::Approx(152984));
    CHECK(t.energy_usd == doctest::Approx(13651.29).epsilon(1e-6));
    CHECK(t.facility_usd == doctest::Approx(41774.4));
    CHECK(t.support_usd == doctest::Approx(61193.6));
    CHECK(t.staff_usd == doctest::Approx(100000));
    CHECK(t.annual_usd() == doctest::Approx(369603.29).epsilon(1e-6));
    // Per GPU-hour worked: 369,603.29 / (16 x 8,766 x 0.5); reserved paid every hour: / 0.5.
    CHECK(t.owned_usd_per_gpu_hour == doctest::Approx(369603.29 / 70128).epsilon(1e-6));
    CHECK(t.on_demand_usd_per_gpu_hour == doctest::Approx(2));
    CHECK(t.reserved_1y_usd_per_gpu_hour == doctest::Approx(3));
    CHECK(t.reserved_3y_usd_per_gpu_hour == doctest::Approx(2));
    // Per million tokens: 16 x 10 / 3600 GPU-hours per million tokens / goodput 0.9.
    const double gpu_hours_per_mtok = 16 * 10 / 3600.0 / 0.9;
    CHECK(t.owned_usd_per_million_tokens ==
          doctest::Approx(369603.29 / 70128 * gpu_hours_per_mtok).epsilon(1e-6));
    // The run: 1,000 h = 1.3689 months; storage 10 TB x $150 x months; egress 1,000 GB x $0.05.
    CHECK(t.run_months == doctest::Approx(1000 / 730.5));
    CHECK(t.cloud_storage_usd == doctest::Approx(1500 * 1000 / 730.5));
    CHECK(t.egress_usd == doctest::Approx(50));
    CHECK(t.on_demand_run_usd == doctest::Approx(32000 + 1500 * 1000 / 730.5 + 50));
    CHECK(t.owned_run_usd == doctest::Approx(369603.29 / 70128 * 16000).epsilon(1e-6));
    CHECK(t.on_demand_usd_per_million_tokens == doctest::Approx(t.on_demand_run_usd / 1e4));
    // At $2 on demand renting wins: u* = (355,952 + 6,477.20) / (280,512 - 14,348.19) > 1, and
    // running costs alone (18,051.6 a month) exceed the rent of the worked hours (11,688).
    CHECK(t.breakeven_utilization == -1);
    CHECK(t.breakeven_months == -1);
    // Cash after a year: capital + 12 months of running; rent 16 x 730.5 x 12 x 0.5 x $2.
    CHECK(cumulative_usd(t, Sourcing::kOwned, 12) == doctest::Approx(611936 + 216619.29));
    CHECK(cumulative_usd(t, Sourcing::kOnDemand, 12) == doctest::Approx(140256));
    CHECK(cumulative_usd(t, Sourcing::kReserved1y, 12) == doctest::Approx(16 * 8766 * 1.5));
  }

  TEST_CASE("tco: break-even utilization and months against a hyperscaler's price") {
    Scenario s = two_nodes();
    s.cost.gpu_hour_usd = 10;
    const TcoResult t = estimate_tco(s, step_of(), run_of(), one_switch());
    // u* = 362,429.2 / (16 x 8,766 x 10 - 14,348.19) = 0.26108.
    CHECK(t.breakeven_utilization == doctest::Approx(362429.2 / 1388211.81).epsilon(1e-5));
    // At 0.5: 611,936 / (58,440 - 18,051.61) = 15.15 months.
    CHECK(t.breakeven_months == doctest::Approx(611936 / (58440 - 18051.6075)).epsilon(1e-5));
  }

  TEST_CASE("tco: the price book fills what the scenario leaves out") {
    Scenario s = two_nodes();
    const bool present = true;
    s.cost = CostConfig{};
    s.cost.present = present;
    const TcoInputs in = resolve_tco_inputs(s, 1e12);
    CHECK(in.cloud.on_demand == doctest::Approx(2.99));
    CHECK(in.cloud.reserved_1y == doctest::Approx(2.99 * 0.63));
    CHECK(in.cloud.reserved_3y == doctest::Approx(2.99 * 0.45));
    CHECK(in.utilization == doctest::Approx(0.8));
    CHECK(in.server_usd == doctest::Approx(8 * 30000 + 30000));
    CHECK(in.depreciation_years == doctest::Approx(5));
    CHECK(in.pue == doctest::Approx(1.58));
    CHECK(in.electricity_usd_per_kwh == doctest::Approx(0.0806));
    CHECK(in.facility_usd_per_kw_month == doctest::Approx(184.06));
    CHECK(in.staff_fte == doctest::Approx(0.25));  // 16 GPUs / 512, at least a quarter
    // Five checkpoints and the tokens at 4 bytes; the weights (2 of 14 bytes) leave once.
    CHECK(in.storage_bytes == doctest::Approx(5e12 + 4e10));
    CHECK(in.egress_bytes == doctest::Approx(1e12 / 7));
    SUBCASE("an own facility costs its build, not colocation rent") {
      s.cost.facility = Facility::kOwn;
      CHECK(resolve_tco_inputs(s, 1e12).facility_usd_per_kw_month == doctest::Approx(56));
    }
    SUBCASE("a given on-demand price moves the reserved defaults with it") {
      s.cost.gpu_hour_usd = 2.5;
      const TcoInputs g = resolve_tco_inputs(s, 1e12);
      CHECK(g.cloud.on_demand == doctest::Approx(2.5));
      CHECK(g.cloud.reserved_1y == doctest::Approx(2.5 * 0.63));
    }
    SUBCASE("other GPUs rent at the H100's price scaled by list price") {
      s.cluster.node.gpu = *find_gpu("h200-sxm");
      CHECK(resolve_tco_inputs(s, 1e12).cloud.on_demand == doctest::Approx(2.99 * 35000 / 30000));
    }
  }

  TEST_CASE("price book: every row has a source, and the ids are unique") {
    for (const PriceRow& r : price_book()) {
      CAPTURE(r.id);
      CHECK(!r.source.empty());
      CHECK(!r.unit.empty());
      CHECK(find_price(r.id) == &r);
    }
    CHECK(transceiver_for(CableClass::kAcrossHallSingleMode, 400).price_usd ==
          doctest::Approx(1040));
    CHECK(nic_power_w(200) == doctest::Approx(19));
  }
}
