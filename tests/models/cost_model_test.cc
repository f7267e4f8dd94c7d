#include "models/cost_model.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace clustersim::models;

namespace {

// The default job's shape with a round step: 32 GPUs, 10 s per step of 1024 x 4096 tokens.
Scenario llama2_70b_on_32() {
  Scenario s;
  s.name = "cost";
  s.cluster.nodes = 4;
  s.cluster.storage.write_Bps = 50e9;
  s.workload.model = *find_model("llama2-70b");
  s.workload.seq_len = 4096;
  s.workload.global_batch = 1024;
  s.workload.train_tokens = 2e12;
  s.cost.gpu_hour_usd = 2.50;
  s.reliability.gpu_mtbf_s = 50000.0 * 3600;
  return s;
}

StepResult step_of(double step_time_s, int gpus, double tokens_per_step) {
  StepResult r;
  r.step_time_s = step_time_s;
  r.gpus = gpus;
  r.tokens_per_step = tokens_per_step;
  r.tokens_per_s = tokens_per_step / step_time_s;
  return r;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("cost: dollars per step, per million tokens and per run by hand") {
    const Scenario s = llama2_70b_on_32();
    const RunCost c = estimate_run_cost(s, step_of(10, 32, 1024.0 * 4096));
    CHECK(c.priced);
    CHECK(c.gpu_hours_per_step == doctest::Approx(32 * 10 / 3600.0));
    CHECK(c.usd_per_step == doctest::Approx(32 * 10 / 3600.0 * 2.5));
    CHECK(c.usd_per_million_tokens == doctest::Approx(c.usd_per_step / 4.194304));
    REQUIRE(c.has_run);
    CHECK(c.steps == std::ceil(2e12 / 4194304));
    CHECK(c.run_time_s == doctest::Approx(c.steps * 10));
    CHECK(c.run_usd_no_failures == doctest::Approx(c.steps * c.usd_per_step));
  }

  TEST_CASE("cost: goodput from MTBF, checkpoints at the Young/Daly interval and restarts") {
    const Scenario s = llama2_70b_on_32();
    const RunCost c = estimate_run_cost(s, step_of(10, 32, 1024.0 * 4096));
    REQUIRE(c.has_reliability);
    // 50,000 h per GPU over 32 GPUs.
    CHECK(c.cluster_mtbf_s == doctest::Approx(50000.0 * 3600 / 32));
    // 68.98B parameters x 14 bytes at 50 GB/s.
    CHECK(c.checkpoint_bytes == doctest::Approx(68976648192.0 * 14));
    CHECK(c.checkpoint_write_s == doctest::Approx(68976648192.0 * 14 / 50e9));
    CHECK(c.interval_derived);
    const double C = c.checkpoint_write_s, M = c.cluster_mtbf_s;
    CHECK(c.checkpoint_interval_s == doctest::Approx(std::sqrt(2 * C * M)));
    CHECK(c.restart_s == 600);
    const double tau = c.checkpoint_interval_s;
    CHECK(c.goodput == doctest::Approx(tau / (tau + C) * (1 - ((tau + C) / 2 + 600) / M)));
    CHECK(c.goodput == doctest::Approx(0.9973).epsilon(1e-3));
    CHECK(c.effective_run_time_s == doctest::Approx(c.run_time_s / c.goodput));
    CHECK(c.run_usd == doctest::Approx(c.run_usd_no_failures / c.goodput));
  }

  TEST_CASE("cost: the Young/Daly interval is the best one") {
    Scenario s = llama2_70b_on_32();
    s.cluster.nodes = 512;  // 4096 GPUs: failures every ~12 h
    const StepResult step = step_of(10, 4096, 1024.0 * 4096);
    const RunCost best = estimate_run_cost(s, step);
    for (double factor : {0.25, 0.5, 2.0, 4.0}) {
      s.reliability.checkpoint_interval_s = best.checkpoint_interval_s * factor;
      const RunCost other = estimate_run_cost(s, step);
      CHECK_FALSE(other.interval_derived);
      CHECK(other.goodput < best.goodput);
    }
  }

  // Llama Team 2024 sec. 3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100 (a GPU
  // MTBF of ~50,000 h), 2 TB/s checkpoint storage (sec. 3.3.1), and "higher than 90% effective
  // training time".
  TEST_CASE("cost: Llama 3 405B's reliability figures give > 90% goodput") {
    Scenario s = llama2_70b_on_32();
    s.workload.model = *find_model("llama3-405b");
    s.cluster.storage.write_Bps = 2e12;
    s.reliability.gpu_mtbf_s = 54.0 * 24 * 3600 / 419 * 16384;
    const RunCost c = estimate_run_cost(s, step_of(5.5, 16384, 16.0 * 1024 * 1024));
    CHECK(c.cluster_mtbf_s == doctest::Approx(54.0 * 24 * 3600 / 419));
    CHECK(c.goodput > 0.90);
    CHECK(c.goodput < 0.99);
  }

  TEST_CASE("cost: missing price, run length or reliability data") {
    Scenario s = llama2_70b_on_32();
    s.cost.gpu_hour_usd = 0;
    s.workload.train_tokens = 0;
    s.reliability.gpu_mtbf_s = 0;
    const RunCost c = estimate_run_cost(s, step_of(10, 32, 1024.0 * 4096));
    CHECK_FALSE(c.priced);
    CHECK(c.usd_per_step == 0);
    CHECK_FALSE(c.has_run);
    CHECK_FALSE(c.has_reliability);
    CHECK(c.goodput == 1);
  }
}
