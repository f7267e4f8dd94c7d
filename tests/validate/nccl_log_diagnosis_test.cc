// nccl-log's reading and diagnosis on hand-written excerpts (tests/data/nccl-logs/) and, when
// committed, the real log captured on the device machine.
#include "validate/nccl_log_diagnosis.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "models/text_file.h"

using namespace clustersim::validate;

namespace {

NcclLogReport analyze(const std::string& name) {
  auto text = clustersim::models::read_text_file(std::string(CLUSTERSIM_SOURCE_DIR) +
                                                 "/tests/data/nccl-logs/" + name);
  REQUIRE_MESSAGE(text.ok(), text.message());
  return analyze_nccl_log(*text);
}

bool has(const NcclLogReport& r, const std::string& severity, const std::string& words) {
  for (const auto& f : r.findings) {
    if (f.severity == severity && f.message.find(words) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("nccl-log: a healthy 2-node InfiniBand job") {
    const NcclLogReport r = analyze("ib-gdr-2node.log");
    CHECK(r.hosts == std::vector<std::string>{"node-a", "node-b"});
    CHECK(r.nranks == 4);
    CHECK(r.summary.versions == std::vector<std::string>{"2.21.5+cuda12.4"});
    CHECK(r.ring_channels == 2);
    CHECK(r.algorithms == std::vector<std::string>{"ring", "tree"});
    CHECK(r.gdr_enabled);
    CHECK(r.problems.empty());
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].message == "no problem found.");
    CHECK(r.channel_line.find("2 coll channels") == 0);
    bool ib = false;
    for (const auto& t : r.transports) ib |= t.transport == "NET/IB";
    CHECK(ib);
  }

  TEST_CASE("nccl-log: socket fallback with IB disabled and the management interface") {
    const NcclLogReport r = analyze("socket-fallback.log");
    CHECK(r.environment.at("NCCL_IB_DISABLE") == "1");
    CHECK(r.environment.at("NCCL_SOCKET_IFNAME") == "eth0");
    CHECK(has(r, "error", "socket fallback"));
    CHECK(has(r, "error", "NCCL_IB_DISABLE=1"));
    CHECK(has(r, "error", "NCCL_SOCKET_IFNAME=eth0 picks eth0"));
    CHECK(r.findings[0].severity == "error");
  }

  TEST_CASE("nccl-log: GPUDirect RDMA off, SHM inside a node, timeouts and errors") {
    CHECK(has(analyze("gdr-disabled.log"), "warning", "GPUDirect RDMA is off"));
    const NcclLogReport shm = analyze("single-node-shm.log");
    CHECK(has(shm, "warning", "SHM transport"));
    CHECK(shm.hosts.size() == 1);
    const NcclLogReport t = analyze("timeout-watchdog.log");
    CHECK(has(t, "error", "timeout / watchdog"));
    CHECK(has(t, "error", "NCCL error line"));
    // NCCL_IB_TIMEOUT in the environment is a setting, not a timeout.
    for (const auto& p : t.problems) CHECK(p.text.find("NCCL_IB_TIMEOUT") == std::string::npos);
    bool watchdog = false, warn = false;
    for (const auto& p : t.problems) {
      watchdog |= p.kind == "timeout" && p.line_number == 8;
      warn |= p.kind == "warning" && p.text.find("NCCL WARN") != std::string::npos;
    }
    CHECK(watchdog);
    CHECK(warn);
  }

  TEST_CASE("nccl-log: the real log from the device machine, when committed") {
    const std::string path =
        std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/measurements/nccl-debug-info-2xh200.log";
    if (!std::filesystem::exists(path)) return;
    auto text = clustersim::models::read_text_file(path);
    REQUIRE(text.ok());
    const NcclLogReport r = analyze_nccl_log(*text);
    CHECK(r.summary.nccl_lines > 0);
    CHECK_FALSE(r.summary.versions.empty());
    CHECK(r.nranks == 2);
    CHECK_FALSE(r.transports.empty());
    for (const auto& t : r.transports) CHECK(t.transport == "P2P");  // one NVLink node
    // The VM has no IB: NCCL's network is Socket on eth0, which carries nothing on one node.
    for (const auto& f : r.findings) CHECK(f.severity != "error");
    CHECK(has(r, "info", "carries no data"));
  }
}
