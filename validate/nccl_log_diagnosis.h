// What an NCCL_DEBUG=INFO log says about a job, in plain words (`clustersim nccl-log`): ranks,
// hosts, NCCL version, channels, the algorithms NCCL set up, environment overrides, the network
// interfaces it chose, transport per peer (NVLink/P2P, SHM, IB/RoCE, socket), GPUDirect RDMA,
// errors and timeouts (ncclInternalError, "NCCL timeout", watchdog) — and a diagnosis: socket
// fallback on a multi-node run, NCCL_SOCKET_IFNAME on a management interface, IB disabled,
// GPUDirect RDMA off, P2P off inside a node. Builds on nccl_log.h's line parser; text only.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "validate/nccl_log.h"

namespace clustersim::validate {

// A line that reports a failure: NCCL WARN/ERROR lines and, from any program, lines naming an
// NCCL error code, an NCCL timeout or a watchdog.
struct NcclLogProblem {
  int line_number = 0;
  std::string kind;  // "timeout" | "error" | "warning"
  std::string text;  // the line, trimmed
};

struct NcclLogFinding {
  std::string severity;  // "error" | "warning" | "info"
  std::string message;   // plain words: what is wrong and what to do
};

struct NcclLogReport {
  NcclLogSummary summary;            // versions, networks, connections, comm inits, WARN lines
  std::vector<std::string> hosts;    // from the line prefixes, in order of appearance
  int nranks = 0;                    // the largest communicator initialised
  int ring_channels = 0;             // "Channel 00/24 :" ring lines: 24
  std::string channel_line;          // "24 coll channels, 0 collnet channels, ..." (last seen)
  std::vector<std::string> algorithms;  // set up: "ring", "tree", "nvls"
  std::map<std::string, std::string> environment;  // "NCCL_X set by environment to Y"
  std::vector<std::string> interfaces;  // "NET/IB : Using [0]mlx5_0:1/IB ..." (the chosen devices)
  bool gdr_disabled = false;  // "GPU Direct RDMA Disabled"
  bool gdr_enabled = false;   // "GPU Direct RDMA Enabled" / a GDRDMA connection
  std::vector<TransportRecord> transports;  // per (rank, peer, detail)
  std::vector<NcclLogProblem> problems;
  std::vector<NcclLogFinding> findings;  // the diagnosis, errors first
};

NcclLogReport analyze_nccl_log(std::string_view text);

}  // namespace clustersim::validate
