// Scenario loading: every shipped file loads; each class of bad input gives one message that
// names file:line:col and the key path.
#include "models/scenario.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "models/claims.h"
#include "models/collective_model.h"
#include "tests/scratch_dir.h"

namespace clustersim::models {
namespace {

namespace fs = std::filesystem;

// A small valid scenario; tests swap one line, so line numbers below refer to this text.
constexpr const char* kBase =
    "name: t\n"                    // 1
    "cluster:\n"                   // 2
    "  nodes: 2\n"                 // 3
    "  node:\n"                    // 4
    "    gpu: h100-sxm\n"          // 5
    "    gpus_per_node: 8\n"       // 6
    "    nics_per_node: 8\n"       // 7
    "    nic: ib-ndr\n"            // 8
    "  fabric:\n"                  // 9
    "    topology: fat-tree\n"     // 10
    "workload:\n"                  // 11
    "  model: llama2-70b\n"        // 12
    "  global_batch: 64\n"         // 13
    "  parallelism:\n"             // 14
    "    tp: 8\n"                  // 15
    "    dp: 2\n";                 // 16

// kBase with the line `from` (whole line, without newline) replaced by `to` (may span lines).
std::string with(const std::string& from, const std::string& to) {
  std::string s = kBase;
  const auto at = s.find(from + "\n");
  REQUIRE_MESSAGE(at != std::string::npos, from);
  s.replace(at, from.size(), to);
  return s;
}

Result<Scenario> load(const std::string& text) { return load_scenario_text(text, "t.yaml"); }

// The error message of loading `text`; fails the test when it loads.
std::string error_of(const std::string& text) {
  auto r = load(text);
  REQUIRE_FALSE_MESSAGE(r.ok(), "expected an error for:\n" << text);
  return r.message();
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Checks that `text` starts with `prefix`, showing the whole text when it does not.
#define CHECK_PREFIX(text, prefix)                           \
  do {                                                       \
    const std::string text_ = (text);                        \
    CHECK_MESSAGE(starts_with(text_, prefix), text_);        \
  } while (0)

// A framework key whose default follows the kernels: `on` reads it. Off for the base file's
// fused kernels, on for compiled ones, off where the file sets `off_value` beside them; `typo`
// refused with `error` (file:line:col, did-you-mean).
void check_kernels_default(const std::string& key, const std::string& off_value,
                           const std::string& typo, const std::string& error,
                           bool (*on)(const FrameworkConfig&)) {
  CAPTURE(key);
  const std::string framework = "  global_batch: 64\n  framework:\n";
  auto fused = load(kBase);
  REQUIRE(fused.ok());
  CHECK_FALSE(on(fused->workload.framework));
  auto compiled = load(with("  global_batch: 64", framework + "    kernels: compiled"));
  REQUIRE(compiled.ok());
  CHECK(on(compiled->workload.framework));
  auto given = load(with("  global_batch: 64",
                         framework + "    kernels: compiled\n    " + key + ": " + off_value));
  REQUIRE(given.ok());
  CHECK_FALSE(on(given->workload.framework));
  CHECK_PREFIX(error_of(with("  global_batch: 64", framework + "    " + key + ": " + typo)),
               error);
}

// scenarios/ also holds other documents (claims files, calibration overlays): a scenario is the
// YAML file with a top-level `cluster:` key.
bool is_scenario_document(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cluster:", 0) == 0) return true;
  }
  return false;
}

TEST_SUITE("models") {
  TEST_CASE("every scenario shipped in scenarios/ and scenarios/seed/ loads") {
    int files = 0;
    for (const char* dir : {"scenarios", "scenarios/seed"}) {
      for (const auto& e : fs::directory_iterator(fs::path(CLUSTERSIM_SOURCE_DIR) / dir)) {
        if (e.path().extension() != ".yaml" || !is_scenario_document(e.path())) continue;
        CAPTURE(e.path().string());
        auto r = load_scenario_file(e.path().string());
        CHECK_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
        if (r.ok()) {
          CHECK(r->workload.parallelism.gpus() == r->cluster.total_gpus());
          CHECK(r->cluster.node.gpu.bf16_flops > 0);
          ++files;
        }
      }
    }
    CHECK(files >= 17);
  }

  TEST_CASE("the default scenario loads with SI units and key locations") {
    const std::string path = std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/default.yaml";
    auto r = load_scenario_file(path);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    const Scenario& s = *r;
    CHECK(s.name == "llama2-70b-on-32-h100");
    CHECK(s.cluster.total_gpus() == 32);
    CHECK(s.cluster.node.gpu.id == "h100-sxm");
    CHECK(s.cluster.node.nic.id == "ib-ndr");
    CHECK(s.cluster.node.injection_Bps() == doctest::Approx(8 * 50e9));
    CHECK(s.cluster.node.scale_up.per_gpu_Bps == doctest::Approx(450e9));
    CHECK(s.cluster.fabric.switch_spec.id == "quantum-2-qm9700");
    CHECK(s.cluster.fabric.switch_radix == 64);
    CHECK(s.cluster.storage.write_Bps == doctest::Approx(50e9));
    CHECK(s.workload.model.layers == 80);
    // NeMo's 70B recipe layout (scenarios/default.yaml says where it comes from).
    CHECK(s.note.find("NeMo") != std::string::npos);
    CHECK(s.workload.parallelism.tp == 4);
    CHECK(s.workload.parallelism.pp == 4);
    CHECK(s.workload.parallelism.virtual_stages == 5);
    CHECK(s.workload.parallelism.zero == 1);
    CHECK(s.workload.parallelism.recompute == Recompute::kNone);
    CHECK(s.workload.parallelism.sp);
    CHECK(s.workload.micro_batches_per_step() == 256);
    CHECK(s.workload.tokens_per_step() == doctest::Approx(512.0 * 4096));
    CHECK(s.workload.train_tokens == doctest::Approx(2e12));
    CHECK(s.cost.gpu_hour_usd == doctest::Approx(2.5));
    CHECK(s.reliability.gpu_mtbf_s == doctest::Approx(50000.0 * 3600));
    // default.yaml: line 24 is "    switch_radix: 64" (4 spaces in).
    CHECK(s.where("cluster.fabric.switch_radix") == path + ":24:5: cluster.fabric.switch_radix");
    CHECK(s.where("cluster.fabric.leaves") == path + ": cluster.fabric.leaves");
  }

  TEST_CASE("the base text loads, with defaults filled in") {
    auto r = load(kBase);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->cluster.node.scale_up.id == "nvlink4");  // default from sm_90
    CHECK(r->cluster.fabric.switch_spec.id == "quantum-2-qm9700");
    CHECK(r->cluster.fabric.switch_radix == 64);
    CHECK(r->workload.seq_len == 4096);
    CHECK(r->path == "t.yaml");
    CHECK(r->locations.at("cluster.node.gpu").to_string() == "t.yaml:5:5");
    CHECK(r->locations.at("workload.parallelism.dp").line == 16);
  }

  TEST_CASE("a GB300 NVL72 rack: one node of 72 GPUs on NVLink 5, Blackwell's NCCL tables") {
    std::string text = with("    gpu: h100-sxm", "    gpu: gb300");
    text.replace(text.find("gpus_per_node: 8"), 16, "gpus_per_node: 72");
    text.replace(text.find("nics_per_node: 8"), 16, "nics_per_node: 72");
    text.replace(text.find("dp: 2\n"), 6, "dp: 18\n");
    text.replace(text.find("global_batch: 64"), 16, "global_batch: 72");
    auto r = load(text);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->cluster.node.scale_up.id == "nvlink5");  // sm_103's family default
    CHECK(r->cluster.total_gpus() == 144);
    auto topo = collective_topology(r->cluster, 72);
    REQUIRE(topo.ok());
    CHECK(topo->gpu_arch == "sm_100");  // NCCL keys its tables by the major compute capability
    CHECK(topo->nodes == 1);            // 72 ranks on one NVLink domain
  }

  TEST_CASE("unknown key: location, path and the nearest valid key") {
    const std::string m = error_of(with("    gpus_per_node: 8", "    gpus_per_nod: 8"));
    CHECK_PREFIX(m, "t.yaml:6:5: cluster.node.gpus_per_nod: unknown key");
    CHECK(m.find("did you mean 'gpus_per_node'?") != std::string::npos);
    const std::string top = error_of(std::string(kBase) + "costs:\n  gpu_hour: 2\n");
    CHECK_PREFIX(top, "t.yaml:17:1: costs: unknown key (did you mean 'cost'?");
    // Far from every key: no suggestion, the known keys instead.
    const std::string far = error_of(with("    dp: 2", "    dp: 2\n    banana: 1"));
    CHECK_PREFIX(far, "t.yaml:17:5: workload.parallelism.banana: unknown key (known: tp,");
  }

  TEST_CASE("wrong types name what was expected") {
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: [1, 2]")),
                      "t.yaml:3:10: cluster.nodes: expected a whole number, got a list");
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: 2.5")),
                      "t.yaml:3:10: cluster.nodes: '2.5' is not a whole number");
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: two")),
                      "t.yaml:3:10: cluster.nodes: 'two' is not a count");
    CHECK_PREFIX(error_of(std::string(kBase) + "cost: 3\n"),
                 "t.yaml:17:7: cost: expected a map with keys gpu_hour, reserved_1y,");
    // An empty value is cited at its key, not at whatever follows it.
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu:")),
                 "t.yaml:5:5: cluster.node.gpu: expected a catalog id or a map with 'base:', got "
                 "nothing");
    CHECK_PREFIX(error_of(with("    topology: fat-tree", "    topology: {a: 1}")),
                 "t.yaml:10:15: cluster.fabric.topology: expected a name, got a map");
    CHECK_PREFIX(error_of(with("    tp: 8", "    tp: 8\n    sp: maybe")),
                      "t.yaml:16:9: workload.parallelism.sp: expected true or false, got 'maybe'");
  }

  TEST_CASE("bandwidths, sizes and times need units") {
    const std::string m =
        error_of(with("    topology: fat-tree", "    topology: fat-tree\n  storage:\n"
                                                 "    write_bandwidth: 50"));
    CHECK_PREFIX(m, "t.yaml:12:22: cluster.storage.write_bandwidth: '50' has no unit");
    CHECK_PREFIX(error_of(std::string(kBase) + "reliability:\n  gpu_mtbf: 50000\n"),
                      "t.yaml:18:13: reliability.gpu_mtbf: '50000' has no unit");
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu: {base: h100-sxm, hbm: 96}")),
                      "t.yaml:5:32: cluster.node.gpu.hbm: '96' has no unit");
    // With units they load, in SI.
    auto r = load(std::string(kBase) + "reliability:\n  gpu_mtbf: 50000h\n  restart_time: 10min\n");
    REQUIRE(r.ok());
    CHECK(r->reliability.gpu_mtbf_s == doctest::Approx(1.8e8));
    CHECK(r->reliability.restart_s == doctest::Approx(600));
  }

  TEST_CASE("unknown catalog ids list the known ones") {
    const std::string m = error_of(with("    gpu: h100-sxm", "    gpu: h100"));
    CHECK_PREFIX(m, "t.yaml:5:10: cluster.node.gpu: unknown gpu 'h100' (");
    CHECK(m.find("known: a100-sxm-40gb, a100-sxm-80gb") != std::string::npos);
    const std::string nic = error_of(with("    nic: ib-ndr", "    nic: ib-nrd"));
    CHECK_PREFIX(nic, "t.yaml:8:10: cluster.node.nic: unknown nic 'ib-nrd' (did you mean "
                           "'ib-ndr'?");
    CHECK_PREFIX(error_of(with("  model: llama2-70b", "  model: llama-2-70b")),
                      "t.yaml:12:10: workload.model: unknown model 'llama-2-70b' (did you mean "
                      "'llama2-70b'?");
    CHECK_PREFIX(error_of(with("    topology: fat-tree", "    topology: fat_tree")),
                      "t.yaml:10:15: cluster.fabric.topology: unknown value 'fat_tree' (did you "
                      "mean 'fat-tree'?");
  }

  TEST_CASE("activation_layout: Megatron's sbh for fused kernels, PyTorch's bsh otherwise") {
    check_kernels_default("activation_layout", "sbh", "bsx",
                          "t.yaml:15:24: workload.framework.activation_layout: unknown value "
                          "'bsx' (did you mean 'bsh'?",
                          [](const FrameworkConfig& f) { return f.batch_first_layout(); });
  }

  TEST_CASE("projections: fused for fused kernels, separate for PyTorch's") {
    check_kernels_default("projections", "fused", "seperate",
                          "t.yaml:15:18: workload.framework.projections: unknown value "
                          "'seperate' (did you mean 'separate'?",
                          [](const FrameworkConfig& f) { return f.separate_projections(); });
  }

  TEST_CASE("a gpu map overrides catalog fields") {
    auto r = load(with("    gpu: h100-sxm",
                       "    gpu: {base: h100-sxm, bf16: 900TFLOP/s, hbm: 96GiB, "
                       "hbm_bandwidth: 3TB/s, name: custom}"));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    const GpuSpec& g = r->cluster.node.gpu;
    CHECK(g.id == "h100-sxm");
    CHECK(g.name == "custom");
    CHECK(g.bf16_flops == doctest::Approx(900e12));
    CHECK(g.hbm_bytes == doctest::Approx(96 * 1024.0 * 1024 * 1024));
    CHECK(g.hbm_Bps == doctest::Approx(3e12));
    CHECK(g.fp8_flops == doctest::Approx(1979e12));  // untouched
    CHECK(g.source.find("overridden by t.yaml: name, bf16, hbm, hbm_bandwidth") !=
          std::string::npos);
    CHECK(r->locations.count("cluster.node.gpu.bf16") == 1);
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu: {bf16: 900TFLOP/s}")),
                      "t.yaml:5:10: cluster.node.gpu: an override map needs 'base: <gpu id>'");
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu: {base: h100-sxm, bf61: 1}")),
                      "t.yaml:5:27: cluster.node.gpu.bf61: unknown key (did you mean 'bf16'?");
    // The idle board's power (what a lower cap cannot take from the clock) must be under the
    // cap: the key that breaks it is named, the given idle power or the lowered cap.
    auto idle =
        load(with("    gpu: h100-sxm", "    gpu: {base: h100-sxm, tdp: 500W, idle_power: 90W}"));
    REQUIRE_MESSAGE(idle.ok(), (idle.ok() ? std::string() : idle.message()));
    CHECK(idle->cluster.node.gpu.idle_w == doctest::Approx(90));
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm",
                               "    gpu: {base: h100-sxm, idle_power: 700W}")),
                 "t.yaml:5:27: cluster.node.gpu.idle_power: the idle power (700 W) must be below "
                 "the power cap (700 W)");
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu: {base: h100-sxm, tdp: 60W}")),
                 "t.yaml:5:27: cluster.node.gpu.tdp: the idle power (71 W) must be below the "
                 "power cap (60 W)");
    // NIC overrides, e.g. a calibrated efficiency.
    auto n = load(with("    nic: ib-ndr", "    nic: {base: ib-ndr, efficiency: 0.9, latency: 2us}"));
    REQUIRE(n.ok());
    CHECK(n->cluster.node.nic.protocol_efficiency == doctest::Approx(0.9));
    CHECK(n->cluster.node.nic.latency_s == doctest::Approx(2e-6));
    CHECK_PREFIX(error_of(with("    nic: ib-ndr", "    nic: {base: ib-ndr, efficiency: 1.5}")),
                      "t.yaml:8:37: cluster.node.nic.efficiency: expected a fraction between 0 "
                      "and 1");
  }

  TEST_CASE("tp x pp x dp x cp must equal the GPU count") {
    const std::string m = error_of(with("    dp: 2", "    dp: 4"));
    CHECK_PREFIX(m, "t.yaml:14:3: workload.parallelism: tp 8 x pp 1 x dp 4 x cp 1 = 32 GPUs, "
                         "but the cluster has 16 (2 nodes x 8 gpus_per_node)");
  }

  TEST_CASE("tensor parallelism stays inside a node") {
    // 2 nodes x 4 GPUs, tp 8 x dp 1 = 8: the product is right, the TP group is not.
    std::string s = with("    gpus_per_node: 8", "    gpus_per_node: 4");
    s.replace(s.find("    dp: 2"), 9, "    dp: 1");
    CHECK_PREFIX(error_of(s), "t.yaml:15:5: workload.parallelism.tp: tp 8 exceeds "
                                   "gpus_per_node 4");
    // 2 nodes x 6 GPUs, tp 4 x dp 3 = 12: a TP group would straddle two nodes.
    std::string straddle = with("    gpus_per_node: 8", "    gpus_per_node: 6");
    straddle.replace(straddle.find("    tp: 8"), 9, "    tp: 4");
    straddle.replace(straddle.find("    dp: 2"), 9, "    dp: 3");
    straddle.replace(straddle.find("  global_batch: 64"), 18, "  global_batch: 63");
    CHECK_PREFIX(error_of(straddle), "t.yaml:15:5: workload.parallelism.tp: tp 4 does not "
                                          "divide gpus_per_node 6");
  }

  TEST_CASE("global batch divisible by dp x micro_batch") {
    CHECK_PREFIX(error_of(with("  global_batch: 64", "  global_batch: 63")),
                      "t.yaml:13:3: workload.global_batch: global_batch 63 is not divisible by "
                      "dp 2 x micro_batch 1 = 2");
    CHECK_PREFIX(
        error_of(with("  global_batch: 64", "  global_batch: 64\n  micro_batch: 3")),
        "t.yaml:13:3: workload.global_batch: global_batch 64 is not divisible by dp 2 x "
        "micro_batch 3 = 6");
  }

  TEST_CASE("layers divisible by pipeline stages (x virtual stages), or Llama 3's layout") {
    // llama2-70b has 80 layers; 2 nodes x 8: tp 8, pp 2, dp 1.
    std::string s = with("    dp: 2", "    dp: 1\n    pp: 2");
    CHECK(load(s).ok());
    std::string v = with("    dp: 2", "    dp: 1\n    pp: 2\n    pp_schedule: interleaved\n"
                                     "    virtual_stages: 3");
    CHECK_PREFIX(error_of(v), "t.yaml:17:5: workload.parallelism.pp: layers 80 are not "
                                   "divisible by pp 2 x virtual_stages 3");
    // 126 layers on 16 stages: Llama 3 405B's balanced layout, (126 + 2) / 16 = 8.
    std::string l3 = with("  model: llama2-70b", "  model: llama2-70b\n  layers: 126");
    l3.replace(l3.find("  nodes: 2"), 10, "  nodes: 16");
    l3.replace(l3.find("    dp: 2"), 9, "    dp: 1\n    pp: 16");
    auto r = load(l3);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->workload.model.layers == 126);
    CHECK(r->workload.model.name == "Llama 2 70B (modified)");
    l3.replace(l3.find("  layers: 126"), 13, "  layers: 125");
    CHECK_PREFIX(error_of(l3), "t.yaml:18:5: workload.parallelism.pp: layers 125 are not "
                                    "divisible by pp 16");
  }

  TEST_CASE("attention heads and KV heads split over tensor parallelism") {
    // 12 heads (gpt2) on tp 8.
    CHECK_PREFIX(error_of(with("  model: llama2-70b", "  model: gpt2-124m")),
                      "t.yaml:15:5: workload.parallelism.tp: heads 12 are not divisible by tp 8");
    // 64 heads, 16 KV heads on tp 8: 2 KV heads per rank, fine; 8 KV heads on tp 8: 1 each;
    // 4 KV heads on tp 8: each replicated twice, fine; 6 KV heads: neither divides.
    for (const char* kv : {"16", "8", "4", "2", "1"}) {
      CAPTURE(kv);
      CHECK(load(with("  model: llama2-70b", std::string("  model: llama2-70b\n  kv_heads: ") +
                                                 kv)).ok());
    }
    const std::string m =
        error_of(with("  model: llama2-70b", "  model: llama2-70b\n  heads: 96\n  kv_heads: 12\n"
                                             "  hidden: 12288"));
    CHECK_PREFIX(m, "t.yaml:18:5: workload.parallelism.tp: kv_heads 12 and tp 8");
    CHECK_PREFIX(error_of(with("  model: llama2-70b", "  model: llama2-70b\n  kv_heads: 6")),
                      "t.yaml:13:3: workload.kv_heads: kv_heads 6 must divide heads 64");
    CHECK_PREFIX(error_of(with("  model: llama2-70b", "  model: llama2-70b\n  hidden: 8100")),
                      "t.yaml:13:3: workload.hidden: hidden 8100 is not divisible by heads 64");
  }

  TEST_CASE("explicit dimensions instead of a preset") {
    auto r = load(with("  model: llama2-70b",
                       "  layers: 32\n  hidden: 4096\n  heads: 32\n  ffn_hidden: 11008\n"
                       "  vocab: 32000"));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->workload.model.id == "custom");
    CHECK(r->workload.model.kv_heads == 32);  // defaults to heads: no GQA
    CHECK(r->workload.model.gated_ffn);
    CHECK_PREFIX(error_of(with("  model: llama2-70b", "  layers: 32\n  hidden: 4096")),
                      "t.yaml:12:3: workload: missing key 'ffn_hidden' (give 'model: <id>'");
  }

  TEST_CASE("context parallelism splits the sequence into 2 x cp chunks") {
    std::string s = with("    dp: 2", "    dp: 1\n    cp: 2");
    s = s.replace(s.find("  global_batch: 64"), 18, "  global_batch: 64\n  seq_len: 4098");
    CHECK_PREFIX(error_of(s), "t.yaml:14:3: workload.seq_len: seq_len 4098 is not divisible "
                                   "by 2 x cp = 4");
    s.replace(s.find("4098"), 4, "128K");
    auto r = load(s);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->workload.seq_len == 128000);
    s.replace(s.find("128K"), 4, "1Mi");
    CHECK(load(s)->workload.seq_len == 1048576);
    // Sequence parallelism needs each rank's tokens divisible by tp.
    std::string sp = with("  global_batch: 64", "  global_batch: 64\n  seq_len: 4100");
    sp.replace(sp.find("    dp: 2"), 9, "    dp: 2\n    sp: true");
    CHECK_PREFIX(error_of(sp), "t.yaml:14:3: workload.seq_len: with sp, each rank's 4100 "
                                    "tokens must divide by tp 8");
  }

  TEST_CASE("several nodes need NICs") {
    CHECK_PREFIX(error_of(with("    nics_per_node: 8", "    nics_per_node: 0")),
                      "t.yaml:7:5: cluster.node.nics_per_node: 2 nodes need nics_per_node >= 1");
    std::string no_nic = with("    nic: ib-ndr", "    links_per_nic: 1");
    CHECK_PREFIX(error_of(no_nic), "t.yaml:5:5: cluster.node: missing key 'nic'");
  }

  TEST_CASE("several nodes need a fabric (no default topology); one node does not") {
    std::string no_fabric = kBase;
    const std::string fabric = "  fabric:\n    topology: fat-tree\n";
    no_fabric.erase(no_fabric.find(fabric), fabric.size());
    // Cited at the cluster map (its first key, "  nodes: 2" on line 3).
    CHECK_PREFIX(error_of(no_fabric), "t.yaml:3:3: cluster: missing key 'fabric' (2 nodes need");
    std::string one_node = no_fabric;
    one_node.replace(one_node.find("  nodes: 2"), 10, "  nodes: 1");
    one_node.replace(one_node.find("    dp: 2"), 9, "    dp: 1");
    CHECK(load(one_node).ok());
  }

  TEST_CASE("a claims: list is held to the scenario's own hardware") {
    const std::string claims =
        "claims:\n"                    // 17
        "  - id: ar\n"                 // 18
        "    says: 2 GB in 18 ms\n"    // 19
        "    kind: collective_time\n"  // 20
        "    op: all_reduce\n"         // 21
        "    size: 2GB\n"              // 22
        "    time: 18ms\n"             // 23
        "  - id: ar-one-nic\n"         // 24
        "    says: 2 GB in 18 ms on one NIC per node\n"
        "    kind: collective_time\n"
        "    nics_per_node: 1\n"
        "    free: [nics_per_node]\n"
        "    op: all_reduce\n"
        "    size: 2GB\n"
        "    time: 18ms\n";
    CHECK(load(kBase)->claims == nullptr);
    auto r = load(std::string(kBase) + claims);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    REQUIRE(r->claims != nullptr);
    REQUIRE(r->claims->size() == 2);
    const Claim& all = (*r->claims)[0];
    CHECK(all.id == "ar");
    CHECK(all.cluster.nodes == 2);
    CHECK(all.cluster.node.nics_per_node == 8);
    CHECK(all.has_workload);
    CHECK(all.hardware.find("(t.yaml)") != std::string::npos);
    // 2 nodes x 8 x 400G: each node sends S = 2 GB at 400 GB/s: 5 ms.
    CHECK(evaluate_claim(all).verdict == ClaimVerdict::kPossible);
    const Claim& one = (*r->claims)[1];
    CHECK(one.cluster.node.nics_per_node == 1);  // the claim's override; the scenario keeps 8
    CHECK(r->cluster.node.nics_per_node == 8);
    // One NIC: 2 GB at 50 GB/s = 40 ms; 3 NICs at IB's 0.94: 2 GB / (0.94 x 150 GB/s) = 14.2 ms.
    const ClaimResult v = evaluate_claim(one);
    CHECK(v.verdict == ClaimVerdict::kPossibleOnlyIf);
    CHECK(v.conditions == std::vector<std::string>{">= 3 x ib-ndr (400 Gb/s) per node"});

    SUBCASE("a bad claim cites file:line:col and the claim's key") {
      std::string no_time = std::string(kBase) + claims;
      no_time.erase(no_time.find("    time: 18ms\n"), 15);
      CHECK_PREFIX(error_of(no_time), "t.yaml:18:5: claims[0].time: missing");
      std::string bad_op = std::string(kBase) + claims;
      bad_op.replace(bad_op.find("op: all_reduce"), 14, "op: reduce_all");
      CHECK_PREFIX(error_of(bad_op), "t.yaml:21:9: claims[0].op: unknown op 'reduce_all'");
    }
    SUBCASE("the hardware is the scenario's: no scenario: or inline gpu") {
      std::string other = std::string(kBase) + claims;
      other.replace(other.find("    kind: collective_time"), 25,
                    "    kind: collective_time\n    scenario: default.yaml");
      CHECK_PREFIX(error_of(other), "t.yaml:21:15: claims[0].scenario: a claim inside a scenario");
      std::string gpu = std::string(kBase) + claims;
      gpu.replace(gpu.find("    kind: collective_time"), 25,
                  "    kind: collective_time\n    gpu: b200");
      CHECK_PREFIX(error_of(gpu), "t.yaml:18:5: claims[0]: with a scenario, override only");
    }
    SUBCASE("not a --set key") {
      CHECK_FALSE(check_scenario_key("claims").ok());
      CHECK(check_scenario_key("interference").ok());
    }
  }

  TEST_CASE("zero stage, schedules and virtual stages") {
    CHECK_PREFIX(error_of(with("    dp: 2", "    dp: 2\n    zero: 4")),
                      "t.yaml:17:11: workload.parallelism.zero: must be 0, 1, 2 or 3");
    CHECK_PREFIX(error_of(with("    dp: 2", "    dp: 2\n    virtual_stages: 2")),
                      "t.yaml:17:5: workload.parallelism.virtual_stages: virtual_stages 2 needs "
                      "pp_schedule: interleaved (got 1f1b)");
    CHECK_PREFIX(error_of(with("    dp: 2", "    dp: 2\n    pp_schedule: interleaved")),
                      "t.yaml:17:5: workload.parallelism.pp_schedule: the interleaved schedule "
                      "needs pp >= 2");
    // Megatron-LM's interleaved schedule: micro-batches per step divisible by pp.
    std::string s = with("    dp: 2", "    dp: 1\n    pp: 2\n    pp_schedule: interleaved");
    s.replace(s.find("  global_batch: 64"), 18, "  global_batch: 63");
    CHECK_PREFIX(error_of(s), "t.yaml:18:5: workload.parallelism.pp_schedule: the "
                                   "interleaved schedule needs micro-batches per step (63)");
  }

  TEST_CASE("zero, negative and out-of-range values") {
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: 0")),
                      "t.yaml:3:10: cluster.nodes: must be at least 1, got 0");
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: -2")),
                      "t.yaml:3:10: cluster.nodes: '-2': count cannot be negative");
    CHECK_PREFIX(error_of(std::string(kBase) + "cost:\n  gpu_hour: -1\n"),
                      "t.yaml:18:13: cost.gpu_hour: '-1' is not an amount in USD");
    CHECK_PREFIX(
        error_of(with("    topology: fat-tree", "    topology: fat-tree\n    oversubscription: 0.5")),
        "t.yaml:11:23: cluster.fabric.oversubscription: must be at least 1");
    auto r = load(with("    topology: fat-tree", "    topology: fat-tree\n    oversubscription: 3:1"));
    REQUIRE(r.ok());
    CHECK(r->cluster.fabric.oversubscription == 3);
    CHECK_PREFIX(error_of(std::string(kBase) + "  train_tokens: 0\n"),
                      "t.yaml:17:17: workload.train_tokens: must be greater than zero");
  }

  TEST_CASE("fabric shape keys belong to their topology") {
    CHECK_PREFIX(error_of(with("    topology: fat-tree", "    topology: fat-tree\n    tiers: 4")),
                      "t.yaml:11:5: cluster.fabric.tiers: must be 2 or 3, got 4");
    CHECK_PREFIX(error_of(with("    topology: fat-tree", "    topology: fat-tree\n    leaves: 8")),
                      "t.yaml:11:5: cluster.fabric.leaves: applies to topology: leaf-spine only");
    CHECK_PREFIX(
        error_of(with("    topology: fat-tree", "    topology: single-switch\n    tiers: 2")),
        "t.yaml:11:5: cluster.fabric.tiers: tiers applies to fat-tree and rail-optimized");
    auto r = load(with("    topology: fat-tree",
                       "    topology: leaf-spine\n    leaves: 8\n    spines: 2\n"
                       "    switch_radix: 32"));
    REQUIRE(r.ok());
    CHECK(r->cluster.fabric.leaves == 8);
    CHECK(r->cluster.fabric.switch_radix == 32);
    CHECK(r->cluster.fabric.topology == TopologyKind::kLeafSpine);
  }

  TEST_CASE("switches, in-network reduction and precision against the hardware") {
    CHECK_PREFIX(
        error_of(with("    topology: fat-tree", "    topology: fat-tree\n    switch: spectrum-4-sn5600")),
        "t.yaml:11:5: cluster.fabric.switch: switch 'spectrum-4-sn5600' (roce, 800 Gb/s ports) "
        "cannot carry nic 'ib-ndr' (infiniband, 400 Gb/s)");
    std::string roce = with("    nic: ib-ndr", "    nic: roce-400");
    roce.replace(roce.find("    topology: fat-tree"), 22,
                 "    topology: fat-tree\n    in_network_reduction: true");
    CHECK_PREFIX(error_of(roce), "t.yaml:11:5: cluster.fabric.in_network_reduction: needs an "
                                      "InfiniBand NIC with SHARP");
    std::string a100 = with("    gpu: h100-sxm", "    gpu: a100-sxm-80gb");
    a100.replace(a100.find("  global_batch: 64"), 18, "  global_batch: 64\n  precision: fp8");
    CHECK_PREFIX(error_of(a100), "t.yaml:14:3: workload.precision: a100-sxm-80gb has no fp8");
    CHECK_PREFIX(error_of(with("    gpu: h100-sxm", "    gpu: h100-pcie\n    scale_up: nvlink4")),
                      "t.yaml:6:5: cluster.node.scale_up: h100-pcie has no NVLink");
  }

  TEST_CASE("scale-up defaults from the GPU and is capped by the GPU's links") {
    auto h800 = load(with("    gpu: h100-sxm", "    gpu: h800\n    scale_up: nvlink4"));
    REQUIRE(h800.ok());
    CHECK(h800->cluster.node.scale_up.per_gpu_Bps == doctest::Approx(200e9));  // 8 links
    std::string s = with("    gpu: h100-sxm", "    gpu: rtx-4090");
    s.replace(s.find("  model: llama2-70b"), 19, "  model: llama2-7b");
    auto r = load(s);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->cluster.node.scale_up.id == "pcie4");
    auto a = load(with("    gpu: h100-sxm", "    gpu: a100-sxm-40gb"));
    REQUIRE(a.ok());
    CHECK(a->cluster.node.scale_up.id == "nvlink3");
    // A gen-4 card on a gen-5 switch runs at gen 4.
    auto capped = load(with("    gpu: h100-sxm", "    gpu: rtx-4090\n    scale_up: pcie5"));
    REQUIRE(capped.ok());
    CHECK(capped->cluster.node.scale_up.per_gpu_Bps == doctest::Approx(31.5e9).epsilon(0.001));
  }

  TEST_CASE("duplicate keys and YAML syntax errors give a location") {
    CHECK_PREFIX(error_of(with("  nodes: 2", "  nodes: 2\n  nodes: 3")),
                      "t.yaml:4:3: cluster.nodes: key given twice");
    const std::string m = error_of("cluster:\n  nodes: [1, 2\nworkload: {}\n");
    CHECK(m.find("YAML syntax error") != std::string::npos);
    CHECK_PREFIX(m, "t.yaml:");
    const std::string tab = error_of("cluster:\n  node:\n    gpu: h100\n   bad: 1\n");
    CHECK_PREFIX(tab, "t.yaml:4:");
    CHECK(tab.find("YAML syntax error") != std::string::npos);
    CHECK_PREFIX(error_of(""), "t.yaml: empty scenario");
    CHECK_PREFIX(error_of("- 1\n- 2\n"), "t.yaml:1:1: expected a map with keys name,");
    CHECK_PREFIX(error_of("name: x\n"), "t.yaml:1:1: missing key 'cluster'");
  }

  TEST_CASE("framework.sp_input_regather applies to sequence parallelism only") {
    const std::string fw = "  global_batch: 64\n  framework: {sp_input_regather: false}";
    const std::string m = error_of(with("  global_batch: 64", fw));
    CHECK_PREFIX(m, "t.yaml:14:");
    CHECK(m.find("workload.framework.sp_input_regather: applies to parallelism.sp: true") !=
          std::string::npos);
    auto r = load(with("    dp: 2", "    dp: 2\n    sp: true").replace(
        std::string(kBase).find("  global_batch: 64"), 18, fw));
    REQUIRE_MESSAGE(r.ok(), r.message());
    CHECK_FALSE(r->workload.framework.sp_input_regather);
  }

  TEST_CASE("framework.nccl_max_ctas: blocks per process group, each at least 1") {
    const std::string fw = "  global_batch: 64\n  framework: {nccl_max_ctas: {cp: 1, dp: 8, pp: 2}}";
    auto r = load(with("  global_batch: 64", fw));
    REQUIRE_MESSAGE(r.ok(), r.message());
    const auto& c = r->workload.framework.nccl_max_ctas;
    CHECK(c.cp == 1);
    CHECK(c.dp == 8);
    CHECK(c.pp == 2);
    CHECK(c.tp == 0);  // not given: NCCL's own
    CHECK(c.ep == 0);
    const std::string zero = error_of(
        with("  global_batch: 64", "  global_batch: 64\n  framework: {nccl_max_ctas: {dp: 0}}"));
    CHECK_PREFIX(zero, "t.yaml:14:");
    CHECK(zero.find("workload.framework.nccl_max_ctas.dp: must be at least 1") != std::string::npos);
    const std::string typo = error_of(
        with("  global_batch: 64", "  global_batch: 64\n  framework: {nccl_max_ctas: {dp_cp: 8}}"));
    CHECK(typo.find("workload.framework.nccl_max_ctas.dp_cp: unknown key") != std::string::npos);
  }

  TEST_CASE("framework.nccl_nvls: NCCL_NVLS_ENABLE as a framework sets it") {
    auto r =
        load(with("  global_batch: 64", "  global_batch: 64\n  framework: {nccl_nvls: false}"));
    REQUIRE_MESSAGE(r.ok(), r.message());
    CHECK_FALSE(r->workload.framework.nccl_nvls);
    auto d = load(kBase);
    REQUIRE_MESSAGE(d.ok(), d.message());
    CHECK(d->workload.framework.nccl_nvls);
  }

  TEST_CASE("framework.grad_bucket_params: a positive count of parameters") {
    auto r = load(with("  global_batch: 64",
                       "  global_batch: 64\n  framework: {grad_bucket_params: 768M}"));
    REQUIRE_MESSAGE(r.ok(), r.message());
    CHECK(r->workload.framework.grad_bucket_params == 768e6);
    const std::string zero = error_of(
        with("  global_batch: 64", "  global_batch: 64\n  framework: {grad_bucket_params: 0}"));
    CHECK(zero.find("workload.framework.grad_bucket_params") != std::string::npos);
  }

  TEST_CASE("framework.tp_overlap_input_gradients applies to tp_comm_overlap only") {
    const std::string off = "  global_batch: 64\n  framework: {tp_overlap_input_gradients: false}";
    const std::string m = error_of(with("  global_batch: 64", off));
    CHECK_PREFIX(m, "t.yaml:14:");
    CHECK(m.find("workload.framework.tp_overlap_input_gradients: applies to tp_comm_overlap: "
                 "true") != std::string::npos);
    const std::string on =
        "  global_batch: 64\n  framework: {tp_comm_overlap: true, tp_overlap_input_gradients: "
        "false}";
    auto r = load(with("  global_batch: 64", on));
    REQUIRE_MESSAGE(r.ok(), r.message());
    CHECK(r->workload.framework.tp_comm_overlap);
    CHECK_FALSE(r->workload.framework.tp_overlap_input_gradients);
    auto d = load(kBase);
    REQUIRE(d.ok());
    CHECK(d->workload.framework.tp_overlap_input_gradients);  // Transformer Engine's default
  }

  TEST_CASE("files: missing, a directory, and calibration resolved next to the scenario") {
    auto missing = load_scenario_file("/nonexistent/dir/s.yaml");
    REQUIRE_FALSE(missing.ok());
    CHECK_PREFIX(missing.message(), "/nonexistent/dir/s.yaml: cannot open scenario file (");
    auto dir = load_scenario_file(CLUSTERSIM_SOURCE_DIR);
    REQUIRE_FALSE(dir.ok());
    CHECK(dir.message().find("is a directory") != std::string::npos);

    const clustersim::testing::ScratchDir scratch("scenario_test");
    const fs::path& tmp = scratch.dir();
    fs::create_directories(tmp / "measurements");
    std::ofstream(tmp / "measurements" / "cal.yaml") << "# calibration\n";
    std::ofstream(tmp / "s.yaml") << kBase << "calibration: measurements/cal.yaml\n";
    auto r = load_scenario_file((tmp / "s.yaml").string());
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.message()));
    CHECK(r->calibration_path == (tmp / "measurements" / "cal.yaml").string());
    CHECK(r->name == "t");
    std::ofstream(tmp / "bad.yaml") << kBase << "calibration: nope.yaml\n";
    auto bad = load_scenario_file((tmp / "bad.yaml").string());
    REQUIRE_FALSE(bad.ok());
    CHECK_PREFIX(bad.message(), (tmp / "bad.yaml").string() + ":17:14: calibration: no such "
                                                                   "file");
  }

  // docs/scenario-format.md is the users' reference: every key --set accepts, at every depth,
  // is documented there in backquotes, alone or with the sections above it (`write_bandwidth`,
  // `storage.write_bandwidth` or `cluster.storage.write_bandwidth`); a section's name may appear
  // in its keys' names only (`neighbour.nodes` documents `neighbour`).
  TEST_CASE("every settable key is in docs/scenario-format.md") {
    std::ifstream in(std::string(CLUSTERSIM_SOURCE_DIR) + "/docs/scenario-format.md");
    REQUIRE(in.good());
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> pending = {""};
    int keys = 0;
    while (!pending.empty()) {
      const std::string path = pending.back();
      pending.pop_back();
      for (const std::string& key : settable_keys_under(path)) {
        const std::string dotted = path.empty() ? key : path + "." + key;
        ++keys;
        bool found = false;
        // Its suffixes from the key alone up to the whole dotted path.
        for (std::size_t at = dotted.size(); !found;) {
          at = at == 0 ? std::string::npos : dotted.rfind('.', at - 1);
          const std::string suffix = at == std::string::npos ? dotted : dotted.substr(at + 1);
          found = doc.find("`" + suffix + "`") != std::string::npos ||
                  doc.find("`" + suffix + ".") != std::string::npos;
          if (at == std::string::npos) break;
        }
        CHECK_MESSAGE(found, dotted << " is not in docs/scenario-format.md");
        CHECK(check_scenario_key(dotted).ok());
        pending.push_back(dotted);
      }
    }
    CHECK(keys > 100);  // the sections, their keys and the catalog override fields
  }

  TEST_CASE("enum names round-trip") {
    CHECK(to_string(TopologyKind::kRailOptimized) == "rail-optimized");
    CHECK(to_string(Routing::kEcmp) == "ecmp");
    CHECK(to_string(Recompute::kSelective) == "selective");
    CHECK(to_string(PipelineSchedule::k1F1B) == "1f1b");
    SourceLocation unknown{"f.yaml", 0, 0};
    CHECK(unknown.to_string() == "f.yaml");
  }
}

}  // namespace
}  // namespace clustersim::models
