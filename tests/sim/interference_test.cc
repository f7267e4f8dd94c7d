// The scenario's `interference:` section (loader keys, units, errors with file:line:col) and
// where the neighbour's nodes go (after ours, or interleaved node by node).
#include <doctest/doctest.h>

#include <string>

#include "models/scenario.h"
#include "sim/interference.h"

namespace clustersim::sim {
namespace {

const char* const kBase =
    "name: interference-test\n"
    "cluster:\n"
    "  nodes: 4\n"
    "  node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, nics_per_node: 8, nic: roce-400}\n"
    "  fabric: {topology: fat-tree, tiers: 2, routing: ecmp}\n"
    "workload:\n"
    "  model: llama2-7b\n"
    "  seq_len: 4096\n"
    "  global_batch: 32\n"
    "  parallelism: {tp: 8, pp: 1, dp: 4}\n";

models::Result<models::Scenario> load(const std::string& extra) {
  return models::load_scenario_text(std::string(kBase) + extra, "interference.yaml");
}

TEST_SUITE("sim") {
  TEST_CASE("interference: a neighbour job and background traffic load from the scenario") {
    auto s = load(
        "interference:\n"
        "  neighbour: {nodes: 6, placement: interleaved, pattern: alltoall, load: 0.5}\n"
        "  background: {per_node: 20GB/s}\n"
        "  seed: 7\n");
    INFO((s.ok() ? std::string() : s.message()));
    REQUIRE(s.ok());
    const Interference& in = s->interference;
    CHECK(in.neighbour_nodes == 6);
    CHECK(in.placement == NeighbourPlacement::kInterleaved);
    CHECK(in.pattern == NeighbourPattern::kAllToAll);
    CHECK(in.neighbour_load == doctest::Approx(0.5));
    CHECK(in.background_per_node_Bps == doctest::Approx(20e9));
    CHECK(in.seed == 7);
    CHECK(in.any());
  }

  TEST_CASE("no interference section: none") {
    auto s = load("");
    REQUIRE(s.ok());
    CHECK_FALSE(s->interference.any());
  }

  TEST_CASE("interference errors name the file, line and key") {
    auto typo = load("interference:\n  neighbor: {nodes: 2}\n");
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.message().find("interference.yaml:12") != std::string::npos);
    CHECK(typo.message().find("neighbour") != std::string::npos);  // did you mean
    auto unit = load("interference:\n  background: {per_node: 20}\n");
    REQUIRE_FALSE(unit.ok());
    CHECK(unit.message().find("interference.background.per_node") != std::string::npos);
    auto load_above_one = load("interference:\n  neighbour: {nodes: 2, load: 1.5}\n");
    REQUIRE_FALSE(load_above_one.ok());
    auto placement = load("interference:\n  neighbour: {nodes: 2, placement: random}\n");
    REQUIRE_FALSE(placement.ok());
    CHECK(placement.message().find("interleaved") != std::string::npos);
  }

  TEST_CASE("the neighbour's nodes follow ours, or alternate with them") {
    Interference in;
    in.neighbour_nodes = 3;
    auto after = place_nodes(4, in);
    REQUIRE(after.ok());
    CHECK(after->total_nodes == 7);
    CHECK(after->ours == std::vector<int>{0, 1, 2, 3});
    CHECK(after->neighbour == std::vector<int>{4, 5, 6});
    in.placement = NeighbourPlacement::kInterleaved;
    auto mixed = place_nodes(4, in);
    REQUIRE(mixed.ok());
    CHECK(mixed->ours == std::vector<int>{0, 2, 4, 6});
    CHECK(mixed->neighbour == std::vector<int>{1, 3, 5});
    CHECK(mixed->physical_gpu(9, 8) == 2 * 8 + 1);  // our GPU 9: node 1 -> physical node 2
    in.neighbour_load = 0;
    CHECK_FALSE(place_nodes(4, in).ok());
  }
}

}  // namespace
}  // namespace clustersim::sim
