// Properties physics guarantees, checked on seeded random draws from the loader's own valid
// space (thousands of draws, analytic model only, about a second in all): a collective never gets
// faster with more bytes, never beats the hardware's physical floor, never slows with faster NICs;
// a step is never shorter than its FLOPs at the GPUs' peak, never slows with faster NICs; memory
// per GPU never shrinks with a longer sequence or a larger micro-batch; search never ranks a
// layout above the scenario's own unless it is faster. A failure prints the
// draw (CAPTURE) so it can be replayed.
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "models/collective_model.h"
#include "models/parallelism_search.h"
#include "models/physical_floor.h"
#include "models/scenario.h"
#include "models/step_model.h"
#include "models/transformer_model.h"

namespace clustersim::models {
namespace {

constexpr const char* kGpus[] = {"a100-sxm-80gb", "h100-sxm", "h200-sxm", "b200", "h800"};
constexpr const char* kScaleUp[] = {"nvlink3", "nvlink4", "nvlink4", "nvlink5", "nvlink4"};
constexpr const char* kNics[] = {"ib-hdr", "ib-ndr", "ib-xdr", "roce-100", "roce-200",
                                 "roce-400", "roce-800", "eth-tcp-100"};
constexpr CollectiveOp kOps[] = {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                                 CollectiveOp::kReduceScatter, CollectiveOp::kAllToAll,
                                 CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};

struct Draw {
  int gpu = 0, nic = 0, nodes = 1, gpn = 8, nics = 8, tp = 1, pp = 1, seq = 4096, mb = 1;
  int zero = 1;
  std::string model = "llama3-8b";
  std::string recompute = "none";
  bool adaptive = true;
};

std::string text(const Draw& d) {
  const bool multi = d.nodes > 1;
  const int gpus = d.nodes * d.gpn;
  const int dp = gpus / (d.tp * d.pp);
  return std::string("cluster:\n  nodes: ") + std::to_string(d.nodes) +
         "\n  node: {gpu: " + kGpus[d.gpu] + ", gpus_per_node: " + std::to_string(d.gpn) +
         ", scale_up: " + kScaleUp[d.gpu] +
         (multi ? ", nics_per_node: " + std::to_string(d.nics) + ", nic: " + kNics[d.nic] : "") +
         "}\n" +
         (multi ? std::string("  fabric: {topology: fat-tree, routing: ") +
                      (d.adaptive ? "adaptive" : "ecmp") + "}\n"
                : "") +
         "workload:\n  model: " + d.model + "\n  seq_len: " + std::to_string(d.seq) +
         "\n  global_batch: " + std::to_string(dp * d.mb * 4) +
         "\n  micro_batch: " + std::to_string(d.mb) + "\n  parallelism: {tp: " +
         std::to_string(d.tp) + ", pp: " + std::to_string(d.pp) + ", dp: " + std::to_string(dp) +
         ", sp: " + (d.tp > 1 ? "true" : "false") + ", zero: " + std::to_string(d.zero) +
         ", recompute: " + d.recompute + "}\n";
}

Draw draw(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  static constexpr const char* kModels[] = {"llama3-8b", "llama3-70b", "gpt3-175b", "llama2-7b"};
  static constexpr const char* kRecompute[] = {"none", "selective", "full"};
  Draw d;
  d.gpu = pick(5);
  d.nic = pick(8);
  d.nodes = 1 << pick(6);  // 1 .. 32
  d.gpn = 1 << pick(4);    // 1 .. 8
  d.nics = std::max(1, d.gpn >> pick(2));
  d.tp = std::min(d.gpn, 1 << pick(4));
  d.pp = std::min(d.nodes, 1 << pick(3));
  d.seq = 1024 << pick(4);
  d.mb = 1 + pick(2);
  d.zero = pick(4);
  d.model = kModels[pick(4)];
  d.recompute = kRecompute[pick(3)];
  d.adaptive = pick(2) == 0;
  return d;
}

// The draw on one line, for CAPTURE.
std::string line(const Draw& d) {
  std::string t = text(d);
  for (char& ch : t) if (ch == '\n') ch = '|';
  return t;
}

std::optional<Scenario> load(const Draw& d) {
  auto s = load_scenario_text(text(d), "property.yaml");
  if (!s) return std::nullopt;  // outside the valid space (layers not divisible, ...)
  return std::move(s).value();
}

// Calls check(draw, scenario) on every draw of `trials` from `seed` that loads, and returns how
// many did (each property requires most of them to).
template <typename Check>
int for_each_valid(unsigned seed, int trials, Check check) {
  std::mt19937 rng(seed);
  int checked = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const Draw d = draw(rng);
    const auto s = load(d);
    if (!s) continue;
    CAPTURE(line(d));
    if (check(d, *s, rng)) ++checked;
  }
  return checked;
}

TEST_SUITE("properties") {
  TEST_CASE("properties: collectives grow with bytes, slow down with nothing faster, beat no floor") {
    const int checked = for_each_valid(20261201, 3000, [](const Draw&, const Scenario& s, std::mt19937& rng) {
      const ClusterConfig& c = s.cluster;
      const int total = c.nodes * c.node.gpus_per_node;
      const int ranks = 2 + static_cast<int>(rng() % static_cast<unsigned>(std::max(1, total - 1)));
      if (ranks > total) return false;
      const CollectiveOp op = kOps[rng() % 6];
      const double size = std::ldexp(1.0, 10 + static_cast<int>(rng() % 24));  // 1 KiB .. 8 GiB
      CAPTURE(ranks);
      CAPTURE(to_string(op));
      CAPTURE(size);
      auto topo = collective_topology(c, ranks);
      REQUIRE(topo.ok());
      const auto small = estimate_collective(*topo, {op, size});
      const auto big = estimate_collective(*topo, {op, 2 * size});
      REQUIRE(small.ok());
      REQUIRE(big.ok());
      // More bytes never take less time.
      CHECK(big->time_s >= small->time_s * (1 - 1e-9));
      // Never faster than the hardware at its raw rates.
      const CollectiveFloor floor = collective_floor(floor_hardware(c, ranks), op, size);
      CHECK(small->time_s >= floor.time_s * (1 - 1e-9));
      // Twice the NIC rate never makes it slower.
      if (c.nodes > 1) {
        ClusterConfig faster = c;
        faster.node.nic.line_rate_Bps *= 2;
        auto ftopo = collective_topology(faster, ranks);
        REQUIRE(ftopo.ok());
        const auto f = estimate_collective(*ftopo, {op, size});
        REQUIRE(f.ok());
        CHECK(f->time_s <= small->time_s * (1 + 1e-9));
      }
      return true;
    });
    CHECK(checked > 1500);
  }

  TEST_CASE("properties: a step is never shorter than its FLOPs at peak nor slower on faster NICs") {
    const int checked = for_each_valid(7, 1000, [](const Draw&, const Scenario& s, std::mt19937&) {
      const auto r = predict_step(s, default_step_params(s.cluster));
      if (!r) return false;  // no micro-batch for this layout, ...
      const GpuSpec& gpu = s.cluster.node.gpu;
      CHECK(r->step_time_s * r->gpus * gpu.peak_flops(s.workload.precision) >=
            r->hardware_flops_per_step * (1 - 1e-9));
      if (s.cluster.nodes > 1) {
        Scenario faster = s;
        faster.cluster.node.nic.line_rate_Bps *= 2;
        const auto f = predict_step(faster, default_step_params(faster.cluster));
        REQUIRE(f.ok());
        CHECK(f->step_time_s <= r->step_time_s * (1 + 1e-9));
      }
      return true;
    });
    CHECK(checked > 300);
  }

  TEST_CASE("properties: search's winner is never slower than the scenario's own layout") {
    SearchOptions options;
    options.space.micro_batches = {1, 2};
    options.space.zero_stages = {1};
    options.space.recompute = {Recompute::kNone, Recompute::kFull};
    options.space.include_gpipe = false;
    options.space.max_virtual_stages = 2;
    int compared = 0;
    for_each_valid(3, 300, [&](const Draw&, const Scenario& s, std::mt19937&) {
      const auto r = search_layouts(s, default_step_params(s.cluster), options);
      if (!r || !r->own || r->own_rank == 0 || r->top.empty()) return false;
      CHECK(r->top.front().score >= r->own->score * (1 - 1e-9));
      CHECK(r->top.front().step.tokens_per_s >= r->own->step.tokens_per_s * (1 - 1e-9));
      ++compared;
      return true;
    });
    CHECK(compared > 50);
  }

  TEST_CASE("properties: memory per GPU grows with the sequence and the micro-batch") {
    const int checked = for_each_valid(11, 1000, [](const Draw& d, const Scenario& s, std::mt19937&) {
      const double base = memory_per_gpu(s.workload).total();
      Draw longer = d;
      longer.seq *= 2;
      if (const auto l = load(longer)) {
        CHECK(memory_per_gpu(l->workload).total() >= base * (1 - 1e-9));
      }
      Draw bigger = d;
      bigger.mb += 1;
      if (const auto b = load(bigger)) {
        CHECK(memory_per_gpu(b->workload).total() >= base * (1 - 1e-9));
      }
      return true;
    });
    CHECK(checked > 300);
  }
}

}  // namespace
}  // namespace clustersim::models
