// The SimGrid kernel against hand-computed fluid results: fair sharing of one resource, rate
// caps, the congestion efficiency of a shared resource, latency, compute on a host, dependency
// chains, and several engines in one process (SimGrid's engine is a singleton per run).
#include <doctest/doctest.h>

#include "sim/sim_engine.h"

namespace clustersim::sim {
namespace {

constexpr double kGB = 1e9;

ResourceTable two_links(double shared_efficiency = 1.0) {
  ResourceTable t;
  t.add({"a", ResourceTier::kNic, 10 * kGB, shared_efficiency});
  t.add({"b", ResourceTier::kNic, 5 * kGB, 1.0});
  return t;
}

TEST_SUITE("sim") {
  TEST_CASE("two flows on one 10 GB/s link share it: 1 GB each takes 0.2 s") {
    ResourceTable t = two_links();
    TaskGraph g;
    g.add_transfer(0, {{{0}, 1 * kGB, 0}, {{0}, 1 * kGB, 0}});
    auto r = run_task_graph(g, t);
    REQUIRE(r.ok());
    CHECK(r->makespan_s == doctest::Approx(0.2).epsilon(1e-9));
  }

  TEST_CASE("a flow is limited by the slowest resource of its route and by its rate cap") {
    ResourceTable t = two_links();
    TaskGraph g;
    const int a = g.add_transfer(0, {{{0, 1}, 1 * kGB, 0}});     // 5 GB/s: 0.2 s
    const int b = g.add_transfer(0, {{{0}, 1 * kGB, 2 * kGB}});  // capped 2 GB/s: 0.5 s
    auto r = run_task_graph(g, t);
    REQUIRE(r.ok());
    CHECK(r->spans[a].end_s == doctest::Approx(0.2).epsilon(1e-9));
    CHECK(r->spans[b].end_s == doctest::Approx(0.5).epsilon(1e-9));
  }

  TEST_CASE("max-min fairness: the capped flow leaves its share to the other") {
    ResourceTable t = two_links();
    TaskGraph g;
    // On link a (10 GB/s): flow x capped at 2 GB/s, flow y takes the remaining 8 GB/s.
    const int y = g.add_transfer(0, {{{0}, 8 * kGB, 0}});
    g.add_transfer(0, {{{0}, 2 * kGB, 2 * kGB}});
    auto r = run_task_graph(g, t);
    REQUIRE(r.ok());
    CHECK(r->spans[y].end_s == doctest::Approx(1.0).epsilon(1e-9));
  }

  TEST_CASE("a shared resource loses its congestion efficiency only while overloaded") {
    ResourceTable t = two_links(0.5);
    TaskGraph g;
    const int one = g.add_transfer(0, {{{0}, 1 * kGB, 0}});
    auto alone = run_task_graph(g, t);
    REQUIRE(alone.ok());
    CHECK(alone->spans[one].end_s == doctest::Approx(0.1).epsilon(1e-9));
    // Two flows: 5 GB/s usable, 2.5 GB/s each: 0.4 s.
    g.add_transfer(0, {{{0}, 1 * kGB, 0}});
    auto both = run_task_graph(g, t);
    REQUIRE(both.ok());
    CHECK(both->makespan_s == doctest::Approx(0.4).epsilon(1e-9));
  }

  TEST_CASE("latency, compute and dependencies add up along the chain") {
    ResourceTable t = two_links();
    TaskGraph g(2);
    const int c0 = g.add_compute(0, 0.25);
    const int x = g.add_transfer(10e-6, {{{1}, 0.5 * kGB, 0}});  // 10 us + 0.1 s
    const int c1 = g.add_compute(1, 0.05);
    const int d = g.add_delay(1e-3);
    g.depend(c0, x);
    g.depend(x, c1);
    g.depend(c0, d);
    auto r = run_task_graph(g, t);
    REQUIRE(r.ok());
    CHECK(r->spans[x].start_s == doctest::Approx(0.25).epsilon(1e-9));
    CHECK(r->spans[x].end_s == doctest::Approx(0.35001).epsilon(1e-9));
    CHECK(r->spans[c1].end_s == doctest::Approx(0.40001).epsilon(1e-9));
    CHECK(r->spans[d].end_s == doctest::Approx(0.251).epsilon(1e-9));
    CHECK(r->makespan_s == doctest::Approx(0.40001).epsilon(1e-9));
  }

  TEST_CASE("two computes on one GPU host share it") {
    ResourceTable t;
    TaskGraph g(1);
    g.add_compute(0, 1.0);
    g.add_compute(0, 1.0);
    auto r = run_task_graph(g, t);
    REQUIRE(r.ok());
    CHECK(r->makespan_s == doctest::Approx(2.0).epsilon(1e-9));
  }

  TEST_CASE("many flows are split over workers and all complete; repeated runs agree") {
    ResourceTable t;
    std::vector<SimFlow> flows;
    for (int i = 0; i < 300; ++i) {
      t.add({"l" + std::to_string(i), ResourceTier::kNic, (1 + i % 3) * kGB, 1.0});
      flows.push_back({{i}, 1 * kGB, 0});
    }
    TaskGraph g;
    g.add_transfer(0, flows);
    auto first = run_task_graph(g, t);
    auto second = run_task_graph(g, t);
    REQUIRE(first.ok());
    REQUIRE(second.ok());
    CHECK(first->makespan_s == doctest::Approx(1.0).epsilon(1e-9));  // the 1 GB/s links
    CHECK(second->makespan_s == doctest::Approx(first->makespan_s).epsilon(1e-12));
    CHECK(first->flows == 300);
    CHECK(first->workers >= 300 / EngineOptions{}.flows_per_worker);
  }

  TEST_CASE("a flow on an unknown resource is an error, not a crash") {
    ResourceTable t = two_links();
    TaskGraph g;
    g.add_transfer(0, {{{7}, 1 * kGB, 0}});
    auto r = run_task_graph(g, t);
    CHECK_FALSE(r.ok());
  }
}

}  // namespace
}  // namespace clustersim::sim
