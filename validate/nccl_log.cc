#include "validate/nccl_log.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

namespace clustersim::validate {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' ||
                        s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool to_int(std::string_view s, int* out, int base = 10) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

void add_distinct(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

// "0[0]" or "8[18000]" -> rank 0 / 8 (the bracket holds the device or bus id).
bool parse_rank_token(std::string_view tok, int* rank) {
  const auto open = tok.find('[');
  return to_int(open == std::string_view::npos ? tok : tok.substr(0, open), rank);
}

// "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA" (also "Channel 00 : ..." and
// "Channel 00/24 :    0   1", the ring order line, which has no "->" and is rejected).
bool parse_connection(std::string_view msg, NcclConnection* c) {
  if (msg.substr(0, 8) != "Channel ") return false;
  const auto colon = msg.find(" : ");
  const auto arrow = msg.find(" -> ");
  const auto via = msg.find(" via ");
  if (colon == std::string_view::npos || arrow == std::string_view::npos ||
      via == std::string_view::npos || !(colon < arrow && arrow < via)) {
    return false;
  }
  std::string_view chan = msg.substr(8, colon - 8);
  chan = chan.substr(0, chan.find('/'));
  if (!to_int(chan, &c->channel)) return false;
  if (!parse_rank_token(trim(msg.substr(colon + 3, arrow - colon - 3)), &c->from_rank)) {
    return false;
  }
  std::string_view to = trim(msg.substr(arrow + 4, via - arrow - 4));
  if (const auto dir = to.find(" ["); dir != std::string_view::npos) {
    std::string_view d = to.substr(dir + 2);
    c->direction = std::string(d.substr(0, d.find(']')));
    to = to.substr(0, dir);
  }
  if (!parse_rank_token(to, &c->to_rank)) return false;
  std::string_view detail = trim(msg.substr(via + 5));
  detail = detail.substr(0, detail.find(' '));
  if (detail.empty()) return false;
  c->detail = std::string(detail);
  c->transport = transport_class(detail);
  return true;
}

// "comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x.. - Init START";
// NCCL 2.2x puts the function first: "ncclCommInitRank comm 0x55d0 rank 0 nranks 2 ...".
bool parse_comm_init(std::string_view msg, NcclCommInit* c) {
  if (msg.find(" nranks ") == std::string_view::npos ||
      msg.find("Init START") == std::string_view::npos) {
    return false;
  }
  const auto comm = msg.find("comm ");
  if (comm == std::string_view::npos || (comm != 0 && msg[comm - 1] != ' ')) return false;
  msg = msg.substr(comm);
  auto value_after = [&](std::string_view key) -> std::string_view {
    const auto at = msg.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = msg.substr(at + key.size());
    return rest.substr(0, rest.find(' '));
  };
  c->bus_id = std::string(value_after(" busId "));
  return to_int(value_after(" rank "), &c->rank) && to_int(value_after(" nranks "), &c->nranks) &&
         (value_after(" cudaDev ").empty() || to_int(value_after(" cudaDev "), &c->cuda_dev));
}

}  // namespace

bool parse_nccl_log_line(std::string_view line, NcclLogLine* out) {
  line = trim(line);
  static constexpr std::string_view kLevels[] = {"INFO", "WARN", "ERROR", "ABORT", "TRACE"};
  std::size_t at = std::string_view::npos;
  std::string_view level;
  for (std::string_view l : kLevels) {
    const std::string key = "NCCL " + std::string(l);
    std::size_t pos = line.find(key);
    // The level word must end there ("NCCL INFO" not "NCCL INFOX").
    while (pos != std::string_view::npos && pos + key.size() < line.size() &&
           line[pos + key.size()] != ' ') {
      pos = line.find(key, pos + 1);
    }
    if (pos != std::string_view::npos && pos < at) {
      at = pos;
      level = l;
    }
  }
  if (at == std::string_view::npos) return false;
  NcclLogLine r;
  r.level = std::string(level);
  r.message = std::string(trim(line.substr(at + 5 + level.size())));
  // Prefix "host:pid:tid [dev] " (WARN lines may add "file.cc:123 " before "NCCL WARN").
  std::string_view prefix = trim(line.substr(0, at));
  if (const auto open = prefix.find(" ["); open != std::string_view::npos) {
    std::string_view who = prefix.substr(0, open);
    std::string_view dev = prefix.substr(open + 2);
    to_int(dev.substr(0, dev.find(']')), &r.cuda_dev);
    // Host names have no ':'; the last two ':'-fields are pid and tid.
    const auto last = who.rfind(':');
    if (last != std::string_view::npos) {
      const auto mid = who.rfind(':', last - 1);
      if (mid != std::string_view::npos && mid < last) {
        r.host = std::string(who.substr(0, mid));
        to_int(who.substr(mid + 1, last - mid - 1), &r.pid);
      }
    }
  }
  *out = std::move(r);
  return true;
}

NcclLogSummary parse_nccl_log(std::string_view text) {
  NcclLogSummary s;
  int line_number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_number;
    NcclLogLine l;
    if (!parse_nccl_log_line(line, &l)) continue;
    l.line_number = line_number;
    ++s.nccl_lines;
    if (l.level != "INFO" && l.level != "TRACE") {
      s.warnings.push_back(l);
      continue;
    }
    const std::string_view msg = l.message;
    if (msg.substr(0, 13) == "NCCL version ") {
      std::string_view v = trim(msg.substr(13));
      add_distinct(s.versions, std::string(v.substr(0, v.find(' '))));
    } else if (msg.substr(0, 14) == "Using network ") {
      std::string_view n = trim(msg.substr(14));
      add_distinct(s.networks, std::string(n.substr(0, n.find(' '))));
    } else {
      NcclConnection c;
      NcclCommInit ci;
      if (parse_connection(msg, &c)) {
        c.line_number = line_number;
        c.host = l.host;
        c.pid = l.pid;
        s.connections.push_back(std::move(c));
      } else if (parse_comm_init(msg, &ci)) {
        ci.line_number = line_number;
        ci.host = l.host;
        s.comms.push_back(std::move(ci));
      }
    }
  }
  return s;
}

std::string transport_class(std::string_view via_detail) {
  const auto slash = via_detail.find('/');
  const std::string_view first = via_detail.substr(0, slash);
  if (first == "NET" && slash != std::string_view::npos) {
    std::string_view rest = via_detail.substr(slash + 1);
    return "NET/" + std::string(rest.substr(0, rest.find('/')));
  }
  return std::string(first);
}

std::vector<TransportRecord> transports_per_peer(const NcclLogSummary& summary) {
  // A connection is identified by (channel, from, to, detail, direction); the same line can
  // appear twice when a log holds several communicators of the same ranks, so count channels
  // distinctly per (rank, peer, detail).
  std::map<std::tuple<int, int, std::string>, std::vector<int>> channels;
  for (const NcclConnection& c : summary.connections) {
    auto& v = channels[{c.from_rank, c.to_rank, c.detail}];
    if (std::find(v.begin(), v.end(), c.channel) == v.end()) v.push_back(c.channel);
  }
  std::vector<TransportRecord> out;
  for (const auto& [key, chans] : channels) {
    TransportRecord r;
    r.rank = std::get<0>(key);
    r.peer = std::get<1>(key);
    r.detail = std::get<2>(key);
    r.transport = transport_class(r.detail);
    r.channels = static_cast<int>(chans.size());
    out.push_back(std::move(r));
  }
  return out;
}

bool uses_socket_transport(const NcclLogSummary& summary) {
  return std::any_of(summary.connections.begin(), summary.connections.end(),
                     [](const NcclConnection& c) { return c.transport == "NET/Socket"; });
}

}  // namespace clustersim::validate
