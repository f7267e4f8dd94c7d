#include "validate/nccl_log.h"

#include <doctest/doctest.h>

using namespace clustersim::validate;

namespace {

// Lines in the format NCCL 2.2x prints with NCCL_DEBUG=INFO: a 2-node job, ranks 0-1 on node-a
// over NVLink, rank 1 -> 2 across nodes over InfiniBand, and one socket connection.
constexpr const char* kLog = R"(node-a:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node-a:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
node-a:1234:1301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>
node-a:1234:1301 [0] NCCL INFO Using network IB
node-a:1234:1301 [0] NCCL INFO comm 0x55d0c8 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc - Init START
node-a:1234:1302 [1] NCCL INFO comm 0x55d0d0 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 2a000 commId 0xabc - Init START
node-a:1234:1301 [0] NCCL INFO Channel 00/02 :    0   1   2   3
node-a:1234:1301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
node-a:1234:1301 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
node-a:1234:1302 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA
node-a:1234:1302 [1] NCCL INFO Channel 01/0 : 1[1] -> 2[0] [send] via NET/IB/0/GDRDMA
node-a:1234:1301 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/Socket/1
node-a:1234:1301 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
node-a:1234:1301 [0] NCCL INFO Connected all rings
node-a:1234:1301 [0] transport/net_ib.cc:123 NCCL WARN NET/IB : Got completion with error 12
not an NCCL line at all
node-a:1234:1301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/re)";

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("nccl log: one line split into host, pid, device, level, message") {
    NcclLogLine l;
    REQUIRE(parse_nccl_log_line(
        "node-a:1234:1301 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", &l));
    CHECK(l.host == "node-a");
    CHECK(l.pid == 1234);
    CHECK(l.cuda_dev == 3);
    CHECK(l.level == "INFO");
    CHECK(l.message == "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC");
    CHECK_FALSE(parse_nccl_log_line("all_reduce_perf: NCCLX INFO x", &l));
    CHECK_FALSE(parse_nccl_log_line("# nccl-tests header", &l));
  }

  TEST_CASE("nccl log: NCCL 2.28 names the init function before 'comm'") {
    NcclLogSummary s = parse_nccl_log(
        "vm:625:638 [1] NCCL INFO ncclCommInitRank comm 0x556b22bbcf00 rank 1 nranks 2 cudaDev 1 "
        "nvmlDev 1 busId 70 commId 0x79df - Init START\n"
        "vm:625:637 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 2 total 0.53\n");
    REQUIRE(s.comms.size() == 1);
    CHECK(s.comms[0].rank == 1);
    CHECK(s.comms[0].nranks == 2);
    CHECK(s.comms[0].cuda_dev == 1);
    CHECK(s.comms[0].bus_id == "70");
  }

  TEST_CASE("nccl log: versions, networks, connections, comms, warnings") {
    NcclLogSummary s = parse_nccl_log(kLog);
    CHECK(s.versions == std::vector<std::string>{"2.21.5+cuda12.4"});
    CHECK(s.networks == std::vector<std::string>{"IB"});
    REQUIRE(s.comms.size() == 2);
    CHECK(s.comms[1].rank == 1);
    CHECK(s.comms[1].nranks == 4);
    CHECK(s.comms[1].bus_id == "2a000");
    REQUIRE(s.warnings.size() == 1);
    CHECK(s.warnings[0].level == "WARN");
    CHECK(s.warnings[0].line_number == 15);
    // The ring-order line ("Channel 00/02 :    0   1   2   3") is not a connection.
    REQUIRE(s.connections.size() == 7);
    CHECK(s.connections[2].direction == "send");
    CHECK(s.connections[2].transport == "NET/IB");
    CHECK(s.connections[2].detail == "NET/IB/0/GDRDMA");
    CHECK(s.connections[4].direction == "receive");
    CHECK(s.connections[4].from_rank == 3);
    CHECK(s.connections[5].transport == "SHM");
    // A log cut off mid-word still parses what it has.
    CHECK(s.connections[6].detail == "P2P/CUMEM/re");
    CHECK(uses_socket_transport(s));
  }

  TEST_CASE("nccl log: transports per peer count distinct channels") {
    NcclLogSummary s = parse_nccl_log(kLog);
    std::vector<TransportRecord> t = transports_per_peer(s);
    REQUIRE(t.size() == 5);
    CHECK(t[0].rank == 0);
    CHECK(t[0].peer == 1);
    CHECK(t[0].detail == "P2P/CUMEM/re");
    CHECK(t[1].detail == "P2P/CUMEM/read");
    CHECK(t[1].channels == 2);
    CHECK(t[2].transport == "SHM");
    CHECK(t[3].rank == 1);
    CHECK(t[3].transport == "NET/IB");
    CHECK(t[3].channels == 2);
    CHECK(t[4].transport == "NET/Socket");
  }

  TEST_CASE("transport classes") {
    CHECK(transport_class("P2P/CUMEM/read") == "P2P");
    CHECK(transport_class("NET/IB/0/GDRDMA") == "NET/IB");
    CHECK(transport_class("NET/Socket/1") == "NET/Socket");
    CHECK(transport_class("NET/AWS Libfabric/0") == "NET/AWS Libfabric");
    CHECK(transport_class("SHM/direct/direct") == "SHM");
    CHECK(transport_class("CollNet") == "CollNet");
  }
}
