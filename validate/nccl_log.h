// Reads NCCL_DEBUG=INFO output (a terminal capture or an NCCL_DEBUG_FILE) and extracts what a
// cluster check needs: NCCL versions, the networks NCCL chose ("IB", "Socket"), every channel
// connection "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" with its transport, the
// communicators initialised, and WARN lines. Pure text processing: no NCCL needed. Lines that
// are not NCCL's are skipped; a log cut off mid-line parses up to the cut.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "validate/measurement.h"

namespace clustersim::validate {

// "hostname:pid:tid [cudaDev] NCCL INFO message" split into its parts.
struct NcclLogLine {
  int line_number = 0;  // 1-based in the text
  std::string host;
  int pid = -1;
  int cuda_dev = -1;
  std::string level;    // "INFO" | "WARN" | "ERROR" | "ABORT" | "TRACE"
  std::string message;  // everything after the level word, trimmed
};

// One channel connection between two ranks, as NCCL logs it while connecting rings and trees.
struct NcclConnection {
  int line_number = 0;
  std::string host;
  int pid = -1;
  int channel = -1;
  int from_rank = -1, to_rank = -1;
  std::string direction;  // "send" | "receive" | "" (intra-node lines carry none)
  std::string transport;  // class: "P2P" | "SHM" | "NET/IB" | "NET/Socket" | "NET/<plugin>" | ...
  std::string detail;     // the whole "via" word: "P2P/CUMEM/read", "NET/IB/0/GDRDMA"
};

struct NcclCommInit {
  int line_number = 0;
  std::string host;
  int rank = -1, nranks = -1, cuda_dev = -1;
  std::string bus_id;  // as logged ("18000")
};

struct NcclLogSummary {
  std::vector<std::string> versions;  // distinct "2.28.9+cuda13.0"
  std::vector<std::string> networks;  // distinct "IB", "Socket" from "Using network X"
  std::vector<NcclConnection> connections;
  std::vector<NcclCommInit> comms;
  std::vector<NcclLogLine> warnings;  // WARN / ERROR / ABORT lines
  int nccl_lines = 0;                 // lines recognised as NCCL output
};

// Splits one line; false when it is not an "... NCCL <LEVEL> ..." line.
bool parse_nccl_log_line(std::string_view line, NcclLogLine* out);

// Parses a whole log.
NcclLogSummary parse_nccl_log(std::string_view text);

// The transport class of a "via" word: "P2P/CUMEM/read" -> "P2P", "NET/IB/0/GDRDMA" -> "NET/IB",
// "NET/Socket/1" -> "NET/Socket", "SHM/direct/direct" -> "SHM".
std::string transport_class(std::string_view via_detail);

// One record per (rank, peer, detail) with the number of channels that use it, sorted by rank,
// peer, detail. Send and receive lines of the same connection count once each side logs them.
std::vector<TransportRecord> transports_per_peer(const NcclLogSummary& summary);

// True when any connection goes over NET/Socket: on a multi-node job that is the "NCCL fell
// back to TCP" failure (acceptance check 9, docs/acceptance-checks.md).
bool uses_socket_transport(const NcclLogSummary& summary);

}  // namespace clustersim::validate
