// equal_flows_makespan (sim/fair_share.h) against the simulator it replaces: hand-computed
// cases, then random patterns (shared resources of unequal capacity, a resource crossed twice,
// congestion efficiency past a flow count, rate caps, endless background flows) where both
// must agree to SimGrid's precision.
#include <doctest/doctest.h>

#include <random>

#include "sim/fair_share.h"
#include "sim/sim_engine.h"

namespace clustersim::sim {
namespace {

constexpr double kGB = 1e9;

double simulated(const std::vector<SimFlow>& flows, const std::vector<SimFlow>& background,
                 const ResourceTable& table) {
  TaskGraph g;
  g.add_transfer(0, flows);
  if (!background.empty()) g.add_background(background);
  auto r = run_task_graph(g, table);
  REQUIRE(r.ok());
  return r->makespan_s;
}

TEST_SUITE("sim") {
  TEST_CASE("fair share: equal flows' makespan by hand") {
    ResourceTable t;
    t.add({"a", ResourceTier::kNic, 10 * kGB});
    t.add({"b", ResourceTier::kNic, 4 * kGB});
    t.add({"c", ResourceTier::kLeafSpine, 10 * kGB, 0.5, 2});  // half its rate past 2 flows
    // Three 1 GB flows: two on a (and one of them on b), one on b alone. b's two flows get
    // 2 GB/s each: the last arrives at 0.5 s (the a-only flow runs at 8 GB/s, then faster).
    std::vector<SimFlow> f = {{{0}, 1 * kGB, 0}, {{0, 1}, 1 * kGB, 0}, {{1}, 1 * kGB, 0}};
    CHECK(*equal_flows_makespan(f, {}, t) == doctest::Approx(0.5));
    CHECK(simulated(f, {}, t) == doctest::Approx(0.5).epsilon(1e-6));
    // Three flows on c: past 2 flows it carries 5 GB/s, 1.667 each: 0.6 s.
    std::vector<SimFlow> g = {{{2}, 1 * kGB, 0}, {{2}, 1 * kGB, 0}, {{2}, 1 * kGB, 0}};
    CHECK(*equal_flows_makespan(g, {}, t) == doctest::Approx(0.6));
    // A cap below the share sets the pace: 1 GB at 0.5 GB/s.
    std::vector<SimFlow> h = {{{0}, 1 * kGB, 0.5 * kGB}, {{0}, 1 * kGB, 0}};
    CHECK(*equal_flows_makespan(h, {}, t) == doctest::Approx(2.0));
    // A background flow capped at 6 GB/s takes its 6 of a's 10 when the share is larger.
    std::vector<SimFlow> bg = {{{0}, 1e18, 6 * kGB}};
    std::vector<SimFlow> one = {{{0}, 1 * kGB, 0}};
    CHECK(*equal_flows_makespan(one, bg, t) == doctest::Approx(0.2));  // 5 GB/s each
    bg[0].max_rate_Bps = 2 * kGB;
    CHECK(*equal_flows_makespan(one, bg, t) == doctest::Approx(0.125));  // 8 GB/s left
    // Unequal bytes: not this method's case.
    std::vector<SimFlow> uneven = {{{0}, 1 * kGB, 0}, {{0}, 2 * kGB, 0}};
    CHECK_FALSE(equal_flows_makespan(uneven, {}, t).has_value());
    CHECK(*equal_flows_makespan({}, {}, t) == 0);
  }

  TEST_CASE("fair share: random patterns agree with the simulator") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 40; ++trial) {
      CAPTURE(trial);
      ResourceTable t;
      const int resources = 4 + static_cast<int>(rng() % 12);
      for (int r = 0; r < resources; ++r) {
        const double cap = (1 + rng() % 8) * 5 * kGB;
        const bool congestible = rng() % 3 == 0;
        t.add({"r" + std::to_string(r), ResourceTier::kLeafSpine, cap, congestible ? 0.6 : 1.0,
               1 + static_cast<int>(rng() % 4)});
      }
      auto route = [&] {
        std::vector<int> r;
        const int hops = 1 + static_cast<int>(rng() % 4);
        for (int h = 0; h < hops; ++h) r.push_back(static_cast<int>(rng() % resources));
        return r;  // may cross one resource twice
      };
      std::vector<SimFlow> flows, background;
      const int n = 1 + static_cast<int>(rng() % 40);
      const double bytes = (1 + rng() % 4) * 0.25 * kGB;
      for (int i = 0; i < n; ++i) {
        const double cap = rng() % 4 == 0 ? (1 + rng() % 10) * kGB : 0;
        flows.push_back({route(), bytes, cap});
      }
      for (int i = 0; i < static_cast<int>(rng() % 4); ++i) {
        background.push_back({route(), 1e18, (1 + rng() % 10) * kGB});
      }
      const auto direct = equal_flows_makespan(flows, background, t);
      REQUIRE(direct.has_value());
      CHECK(*direct == doctest::Approx(simulated(flows, background, t)).epsilon(1e-5));
    }
  }
}

}  // namespace
}  // namespace clustersim::sim
