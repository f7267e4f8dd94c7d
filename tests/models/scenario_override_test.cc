// Scenario overrides (`clustersim sweep --set key=value`), the key-path check, and the layout
// rules shared between the loader and the parallelism search (check_parallelism).
#include <doctest/doctest.h>

#include <string>

#include "models/scenario.h"

namespace clustersim::models {
namespace {

// Line numbers in the messages below refer to this text.
// Flow maps on lines 4 and 5: overrides reach into them too.
constexpr const char* kBase =
    "name: t\n"                                                                   // 1
    "cluster:\n"                                                                  // 2
    "  nodes: 2\n"                                                                // 3
    "  node: {gpu: h100-sxm, gpus_per_node: 8, nics_per_node: 8, nic: ib-ndr}\n"  // 4
    "  fabric: {topology: fat-tree, tiers: 2}\n"                                  // 5
    "workload:\n"                                                                 // 6
    "  model: llama2-70b\n"                                                       // 7
    "  global_batch: 64\n"                                                        // 8
    "  parallelism:\n"                                                            // 9
    "    tp: 8\n"                                                                 // 10
    "    dp: 2\n";                                                                // 11

Result<Scenario> load(const std::vector<ScenarioOverride>& overrides, bool check_layout = true) {
  return load_scenario_text(kBase, "t.yaml", overrides, check_layout);
}

std::string error_of(const std::vector<ScenarioOverride>& overrides) {
  auto r = load(overrides);
  REQUIRE_FALSE(r.ok());
  return r.message();
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

}  // namespace

TEST_SUITE("models") {
  TEST_CASE("override: replaces a value the file gives and cites the --set") {
    auto s = load({{"cluster.nodes", "4"}, {"workload.parallelism.dp", "4"}});
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(s->cluster.nodes == 4);
    CHECK(s->workload.parallelism.dp == 4);
    CHECK(s->cluster.total_gpus() == 32);
    CHECK(s->where("cluster.nodes") == "--set cluster.nodes=4: cluster.nodes");
    // Keys the overrides left alone keep their place in the file.
    CHECK(s->where("cluster.node.gpus_per_node") == "t.yaml:4:25: cluster.node.gpus_per_node");
  }

  TEST_CASE("override: adds keys and sections the file leaves out, inside flow maps too") {
    auto s = load({{"cost.gpu_hour", "3.5"},
                   {"cluster.fabric.oversubscription", "2:1"},
                   {"workload.parallelism.sp", "true"}});
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(s->cost.gpu_hour_usd == 3.5);
    CHECK(s->cluster.fabric.oversubscription == 2.0);
    CHECK(s->cluster.fabric.tiers == 2);  // the flow map's other key stays
    CHECK(s->workload.parallelism.sp);
    CHECK(s->where("cost") == "--set cost.gpu_hour=3.5: cost");
  }

  TEST_CASE("override: a catalog id becomes the base of a field override") {
    auto s = load({{"cluster.node.gpu.hbm", "96GiB"}});
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(s->cluster.node.gpu.id == "h100-sxm");
    CHECK(s->cluster.node.gpu.hbm_bytes == 96.0 * 1024 * 1024 * 1024);
    CHECK(s->cluster.node.gpu.bf16_flops == 989e12);  // the rest from the catalog
    // A whole map as the value.
    auto b = load({{"cluster.node.nic", "{base: ib-ndr, efficiency: 0.8}"}});
    REQUIRE_MESSAGE(b.ok(), b.message());
    CHECK(b->cluster.node.nic.protocol_efficiency == 0.8);
  }

  TEST_CASE("override: errors name the --set, the key and what is wrong") {
    CHECK(starts_with(error_of({{"cluster.nodes", "abc"}}),
                      "--set cluster.nodes=abc: cluster.nodes: "));
    const std::string typo = error_of({{"cluster.nodez", "2"}});
    CHECK(
        starts_with(typo, "--set cluster.nodez=2: cluster.nodez: unknown key 'nodez' in cluster"));
    CHECK(typo.find("did you mean 'nodes'") != std::string::npos);
    CHECK(starts_with(error_of({{"cluster.nodes.x", "1"}}),
                      "--set cluster.nodes.x=1: cluster.nodes.x: cluster.nodes takes a value"));
    CHECK(starts_with(error_of({{"cluster.node.gpu", "{base: h100-sxm"}}),
                      "--set cluster.node.gpu={base: h100-sxm: YAML syntax error in the value"));
    CHECK(starts_with(error_of({{"cluster.node.nic", "ib-nrd"}}),
                      "--set cluster.node.nic=ib-nrd: cluster.node.nic: unknown nic 'ib-nrd'"));
    // A rule between keys cites the overridden key when it is the one to change...
    CHECK(
        starts_with(error_of({{"workload.parallelism.tp", "16"}, {"workload.parallelism.dp", "1"}}),
                    "--set workload.parallelism.tp=16: workload.parallelism.tp: tp 16 exceeds "
                    "gpus_per_node 8"));
    // ... and the file's key when that one is.
    CHECK(starts_with(error_of({{"cluster.nodes", "4"}}),
                      "t.yaml:9:3: workload.parallelism: tp 8 x pp 1 x dp 2 x cp 1 = 16 GPUs, "
                      "but the cluster has 32"));
  }

  TEST_CASE("override: check_layout false loads a layout that no longer divides") {
    auto s = load({{"cluster.nodes", "4"}}, /*check_layout=*/false);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(s->cluster.total_gpus() == 32);
    CHECK_FALSE(check_parallelism(*s).ok());
    // Everything else is still checked.
    auto bad = load({{"cluster.nodes", "abc"}}, false);
    CHECK_FALSE(bad.ok());
  }

  TEST_CASE("check_scenario_key: known paths, typos and paths through values") {
    for (const char* ok : {"cluster.nodes", "cluster.node.nic", "cluster.node.gpu.hbm",
                           "cluster.fabric.switch.radix", "workload.parallelism.tp",
                           "workload.seq_len", "interference.neighbour.load", "cost", "name"}) {
      CAPTURE(ok);
      CHECK(check_scenario_key(ok).ok());
    }
    const Status typo = check_scenario_key("workload.parallelism.tpp");
    CHECK(starts_with(typo.message(),
                      "workload.parallelism.tpp: unknown key 'tpp' in "
                      "workload.parallelism (did you mean 'tp'?"));
    CHECK(starts_with(check_scenario_key("clustr.nodes").message(),
                      "clustr.nodes: unknown key 'clustr' at the top (did you mean 'cluster'?"));
    CHECK(starts_with(check_scenario_key("workload.seq_len.x").message(),
                      "workload.seq_len.x: workload.seq_len takes a value, not keys"));
    CHECK_FALSE(check_scenario_key("").ok());
    CHECK_FALSE(check_scenario_key("cluster..nodes").ok());
  }

  TEST_CASE("check_parallelism gives the loader's message for the same layout") {
    auto s = load({});
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(check_parallelism(*s).ok());
    Scenario edited = *s;
    edited.workload.parallelism.tp = 16;
    edited.workload.parallelism.dp = 1;
    const std::string from_code = check_parallelism(edited).message();
    const std::string from_file =
        error_of({{"workload.parallelism.tp", "16"}, {"workload.parallelism.dp", "1"}});
    CHECK(from_code ==
          "t.yaml:10:5: workload.parallelism.tp: tp 16 exceeds gpus_per_node 8: "
          "tensor parallelism must stay inside one node's scale-up domain");
    // The same rule and words; only where the 3 came from differs.
    CHECK(from_file.substr(from_file.find(": workload")) ==
          from_code.substr(from_code.find(": workload")));
    edited = *s;
    edited.workload.micro_batch = 3;
    CHECK(starts_with(check_parallelism(edited).message(),
                      "t.yaml:8:3: workload.global_batch: global_batch 64 is not divisible by "
                      "dp 2 x micro_batch 3"));
  }
}

}  // namespace clustersim::models
