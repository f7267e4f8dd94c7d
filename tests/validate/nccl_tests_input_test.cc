// nccl-tests' own text output as a measurement of a scenario's cluster: the op from the log or
// its file name, the communicator from its Rank lines, a "## ranks:" comment or the cluster, the
// scenario's GPUs and hosts, NVLS off where the scenario's switch cannot reduce, and the errors.
#include <doctest/doctest.h>


#include <filesystem>
#include <fstream>
#include <string>

#include "validate/measurement_samples.h"
#include "tests/scratch_dir.h"

using namespace clustersim;
using clustersim::testing::ScratchDir;
using namespace clustersim::validate;

namespace {

// Two 8 x H100 nodes over InfiniBand, NVLink SHARP off.
constexpr const char* kCluster =
    "name: two-nodes\n"
    "cluster:\n"
    "  nodes: 2\n"
    "  node: {gpu: h100-sxm, gpus_per_node: 8, nics_per_node: 8, nic: ib-ndr,\n"
    "         scale_up: {base: nvlink4, switch_reduction: false}}\n"
    "  fabric: {topology: fat-tree}\n"
    "workload: {model: llama3-8b, global_batch: 16, parallelism: {dp: 16}}\n";

constexpr const char* kTable =
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time"
    "   algbw   busbw  #wrong\n"
    "     1048576        262144     float     sum      -1    50.00   20.97   39.32       0    51.00"
    "   20.56   38.55       0\n"
    "     2097152        524288     float     sum      -1    60.00   34.95   65.54       0    61.00"
    "   34.38   64.46       0\n";

// Files written into a scratch folder of the test case's own.
struct Files {
  ScratchDir scratch{"nccl_input"};
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = scratch.path(name);
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("nccl-tests logs: op, ranks and the scenario's cluster") {
    auto sc = models::load_scenario_text(kCluster, "two-nodes.yaml");
    REQUIRE_MESSAGE(sc.ok(), sc.message());
    Files f;
    // The op from the file name, the communicator from the cluster (16 GPUs).
    const std::string a = f.write("all_reduce_perf.txt", kTable);
    // The op from the log's own header, the communicator from a comment.
    const std::string b = f.write("run2.txt", std::string("## ranks: 8\n"
                                                          "# Collective test starting: "
                                                          "reduce_scatter_perf\n") +
                                                  kTable);
    auto m = load_nccl_tests_files({a, b}, *sc);
    REQUIRE_MESSAGE(m.ok(), m.message());
    REQUIRE(m->data.collectives.size() == 4);
    CHECK(m->data.collectives[0].op == "all_reduce");
    CHECK(m->data.collectives[0].ranks == 16);
    CHECK(m->data.collectives[0].size_bytes == 1048576);
    CHECK(row_time_s(m->data.collectives[0]) == doctest::Approx(50.5e-6));
    CHECK(m->data.collectives[2].op == "reduce_scatter");
    CHECK(m->data.collectives[2].ranks == 8);
    CHECK(m->path == a + " + " + b);
    CHECK(m->sha256_hex.size() == 64);
    // The cluster's GPUs (the catalog's PCI id) and hosts: 16 ranks over 2 nodes.
    CHECK(measured_gpu_id(m->data).value() == "h100-sxm");
    CHECK(m->data.hosts.size() == 2);
    CHECK(nodes_of(m->data, 16) == 2);
    CHECK(nodes_of(m->data, 8) == 1);
    // No in-switch reduction in the scenario: the run had NVLS off.
    CHECK(nccl_disabled_algorithms(m->data) == std::vector<std::string>{"nvls"});
    CHECK(is_nccl_tests_text(kTable));
    CHECK_FALSE(is_nccl_tests_text("  {\"schema\": 1}"));
  }

  TEST_CASE("nccl-tests logs: what cannot be read is an error naming the file") {
    auto sc = models::load_scenario_text(kCluster, "two-nodes.yaml");
    REQUIRE(sc.ok());
    Files f;
    const std::string no_op = f.write("run.txt", kTable);
    auto r = load_nccl_tests_files({no_op}, *sc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find(no_op + ": which collective?") != std::string::npos);
    const std::string empty = f.write("all_gather_perf.txt", "# nothing measured\n");
    r = load_nccl_tests_files({empty}, *sc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message() == empty + ": no nccl-tests data line");
    const std::string garbled = f.write("all_gather_perf.txt", std::string("## ranks: 8x\n") + kTable);
    r = load_nccl_tests_files({garbled}, *sc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message() == garbled + ": '## ranks:' needs a whole number of ranks");
    const std::string big = f.write("all_gather_perf.txt", std::string("## ranks: 32\n") + kTable);
    r = load_nccl_tests_files({big}, *sc);
    REQUIRE_FALSE(r.ok());
    CHECK(r.message().find("32 ranks, but the scenario's cluster has 16 GPUs") !=
          std::string::npos);
  }
}
