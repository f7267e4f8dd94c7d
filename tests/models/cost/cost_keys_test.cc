// The scenario's cost: keys of owning vs renting: read with their units, absent ones left for the
// price book, errors at file:line:col.
#include <doctest/doctest.h>

#include <string>

#include "models/cost/tco_model.h"
#include "models/scenario.h"

using namespace clustersim::models;

namespace {

constexpr const char* kCluster =
    "name: t\n"                    // 1
    "cluster:\n"                   // 2
    "  nodes: 2\n"                 // 3
    "  node:\n"                    // 4
    "    gpu: h100-sxm\n"          // 5
    "    nics_per_node: 8\n"       // 6
    "    nic: ib-ndr\n"            // 7
    "  fabric:\n"                  // 8
    "    topology: fat-tree\n"     // 9
    "workload:\n"                  // 10
    "  model: llama2-7b\n"         // 11
    "  global_batch: 64\n"         // 12
    "  parallelism:\n"             // 13
    "    dp: 16\n"                 // 14
    "cost:\n";                     // 15

Result<Scenario> with_cost(const std::string& keys) {
  return load_scenario_text(std::string(kCluster) + keys, "t.yaml");
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("cost keys: every key read with its unit") {
    auto s = with_cost(
        "  gpu_hour: $2.50\n  reserved_1y: 1.9\n  reserved_3y: 1.4\n  utilization: 0.7\n"
        "  server_price: 280000\n  installation: 0.03\n  depreciation: 4y\n"
        "  electricity: 0.12\n  pue: 1.3\n  facility: own\n  facility_kw_month: 60\n"
        "  support: 0.1\n  staff: 1.5\n  staff_salary: 150000\n  server_power: 400W\n"
        "  storage_capacity: 100TB\n  storage_price: 250\n  cloud_storage_price: 140\n"
        "  egress: 2TB\n  egress_price: 0.05\n");
    REQUIRE_MESSAGE(s.ok(), s.message());
    const CostConfig& c = s->cost;
    CHECK(c.present);
    CHECK(c.gpu_hour_usd == doctest::Approx(2.5));
    CHECK(c.reserved_3y_usd == doctest::Approx(1.4));
    CHECK(c.utilization == doctest::Approx(0.7));
    CHECK(c.depreciation_s == doctest::Approx(4 * 365.25 * 86400).epsilon(1e-3));
    CHECK(c.pue == doctest::Approx(1.3));
    CHECK(c.facility == Facility::kOwn);
    CHECK(c.staff_fte == doctest::Approx(1.5));
    CHECK(c.server_w_per_gpu == doctest::Approx(400));
    CHECK(c.storage_bytes == doctest::Approx(100e12));
    CHECK(c.egress_bytes == doctest::Approx(2e12));
    const TcoInputs in = resolve_tco_inputs(*s, 1e12);
    CHECK(in.depreciation_years == doctest::Approx(4).epsilon(1e-3));
    CHECK(in.facility_usd_per_kw_month == doctest::Approx(60));
  }

  TEST_CASE("cost keys: absent keys are left to the price book, 0 is a value") {
    auto s = with_cost("  support: 0\n");
    REQUIRE(s.ok());
    CHECK(s->cost.support_share == 0);
    CHECK(s->cost.utilization == CostConfig::kNotGiven);
    auto none = load_scenario_text(std::string(kCluster).substr(0, std::string(kCluster).size() - 6),
                                   "t.yaml");
    REQUIRE(none.ok());
    CHECK_FALSE(none->cost.present);
  }

  TEST_CASE("cost keys: errors name the place") {
    CHECK(with_cost("  pue: 0.9\n").message() ==
          "t.yaml:16:8: cost.pue: facility power over IT power is at least 1, got 0.9");
    CHECK(with_cost("  utilization: 1.5\n").message().rfind(
              "t.yaml:16:16: cost.utilization: expected a fraction between 0 and 1", 0) == 0);
    CHECK(with_cost("  utilization: 0\n").message() ==
          "t.yaml:16:16: cost.utilization: must be greater than zero");
    CHECK(with_cost("  facility: garage\n").message().rfind(
              "t.yaml:16:13: cost.facility: unknown value 'garage'", 0) == 0);
    CHECK(with_cost("  utilisation: 0.5\n").message().rfind(
              "t.yaml:16:3: cost.utilisation: unknown key (did you mean 'utilization'?", 0) == 0);
    CHECK(with_cost("  depreciation: 5\n").message().rfind("t.yaml:16:17: cost.depreciation:", 0) ==
          0);
  }
}
