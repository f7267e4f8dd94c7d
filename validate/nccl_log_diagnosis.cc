#include "validate/nccl_log_diagnosis.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace clustersim::validate {
namespace {

std::string lower(std::string_view s) {
  std::string o(s);
  std::transform(o.begin(), o.end(), o.begin(), [](unsigned char c) { return std::tolower(c); });
  return o;
}

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

void add_distinct(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// NCCL's error codes and the phrases of a hang, as they appear in NCCL's and PyTorch's output.
const char* problem_kind(const std::string& low) {
  if (low.find("set by environment") != std::string::npos) return nullptr;  // NCCL_IB_TIMEOUT=22
  if (low.find("nccl timeout") != std::string::npos || low.find("watchdog") != std::string::npos ||
      low.find("timed out") != std::string::npos || low.find("timeout") != std::string::npos) {
    return "timeout";
  }
  for (const char* code : {"ncclinternalerror", "ncclsystemerror", "ncclunhandledcudaerror",
                           "ncclinvalidusage", "ncclinvalidargument", "ncclremoteerror",
                           "unhandled system error", "unhandled cuda error", "nccl error"}) {
    if (low.find(code) != std::string::npos) return "error";
  }
  return nullptr;
}

// Interface names that are usually not the fabric: onboard / management Ethernet, containers,
// loopback (InfiniBand IPoIB is ib*, RoCE ports are named by the NIC driver: often enp*/ens* too,
// so those only count as management when NCCL also fell back to sockets).
bool management_like(const std::string& iface) {
  for (const char* p : {"eth", "eno", "em", "bond", "docker", "virbr", "lo", "br-", "veth"}) {
    if (iface.rfind(p, 0) == 0) return true;
  }
  return false;
}
bool ethernet_like(const std::string& iface) {
  return management_like(iface) || iface.rfind("enp", 0) == 0 || iface.rfind("ens", 0) == 0;
}

// "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]..." -> "eth0".
std::string first_interface(const std::string& msg) {
  const auto at = msg.find("[0]");
  if (at == std::string::npos) return "";
  std::string rest = msg.substr(at + 3);
  return rest.substr(0, rest.find_first_of(":< "));
}

}  // namespace

NcclLogReport analyze_nccl_log(std::string_view text) {
  NcclLogReport r;
  r.summary = parse_nccl_log(text);
  r.transports = transports_per_peer(r.summary);
  for (const auto& c : r.summary.comms) r.nranks = std::max(r.nranks, c.nranks);
  std::string socket_iface;
  int line_number = 0;
  for (std::string_view rest = text; !rest.empty();) {
    const auto nl = rest.find('\n');
    const std::string_view raw = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    ++line_number;
    const std::string low = lower(raw);
    NcclLogLine l;
    const bool nccl = parse_nccl_log_line(raw, &l);
    if (const char* kind = problem_kind(low)) {
      r.problems.push_back({line_number, kind, trimmed(raw)});
    } else if (nccl && l.level != "INFO" && l.level != "TRACE") {
      r.problems.push_back({line_number, "warning", trimmed(raw)});
    }
    if (!nccl) continue;
    if (!l.host.empty()) add_distinct(r.hosts, l.host);
    const std::string& m = l.message;
    if (const auto at = m.find(" set by environment to "); at != std::string::npos) {
      std::string value = trimmed(m.substr(at + 23));
      if (!value.empty() && value.back() == '.') value.pop_back();
      r.environment[trimmed(m.substr(0, at))] = value;
    }
    if (m.rfind("NET/", 0) == 0 && m.find(" : Using ") != std::string::npos) {
      add_distinct(r.interfaces, m);
      if (m.rfind("NET/Socket", 0) == 0) socket_iface = first_interface(m);
    }
    const std::string mlow = lower(m);
    if (mlow.find("gpu direct rdma disabled") != std::string::npos) r.gdr_disabled = true;
    if (mlow.find("gpu direct rdma enabled") != std::string::npos) r.gdr_enabled = true;
    if (m.find(" coll channels") != std::string::npos) r.channel_line = m;
    // Ring order lines: "Channel 00/24 :    0   1" (no arrow): 24 channels.
    if (m.rfind("Channel ", 0) == 0 && m.find("->") == std::string::npos) {
      const auto slash = m.find('/'), colon = m.find(" :");
      if (slash != std::string::npos && colon != std::string::npos && slash < colon) {
        try {
          r.ring_channels =
              std::max(r.ring_channels, std::stoi(m.substr(slash + 1, colon - slash - 1)));
        } catch (const std::exception&) {
        }
        add_distinct(r.algorithms, "ring");
      }
    }
    if (m.rfind("Trees ", 0) == 0 || m.find("Connected all trees") != std::string::npos) {
      add_distinct(r.algorithms, "tree");
    }
  }
  // "24 coll channels, 24 collnet channels, 16 nvls channels, ...": NVLS when it has channels.
  // (NCCL prints the collnet count as the coll count whether or not CollNet runs: not evidence.)
  if (const auto at = r.channel_line.find(" nvls channels"); at != std::string::npos) {
    const auto start = r.channel_line.find_last_of(", ", at - 1);
    const std::string n = r.channel_line.substr(start == std::string::npos ? 0 : start + 1,
                                                at - (start == std::string::npos ? 0 : start + 1));
    if (!n.empty() && n != "0") add_distinct(r.algorithms, "nvls");
  }
  for (const auto& c : r.summary.connections) {
    if (c.detail.find("GDRDMA") != std::string::npos) r.gdr_enabled = true;
  }

  // The diagnosis.
  auto add = [&](const char* severity, std::string message) {
    r.findings.push_back({severity, std::move(message)});
  };
  const bool socket_conn = uses_socket_transport(r.summary);
  const bool socket_net = std::find(r.summary.networks.begin(), r.summary.networks.end(),
                                    "Socket") != r.summary.networks.end();
  const bool multi_node =
      r.hosts.size() > 1 ||
      std::any_of(r.summary.connections.begin(), r.summary.connections.end(),
                  [](const NcclConnection& c) { return c.transport.rfind("NET/", 0) == 0; });
  auto env = [&](const std::string& k) {
    auto it = r.environment.find(k);
    return it == r.environment.end() ? std::string() : it->second;
  };
  // Data over sockets: a connection through NET/Socket, or the socket network on a multi-node
  // job (one node's GPUs talk over P2P/SHM whatever the network).
  const bool data_over_sockets = socket_conn || (socket_net && multi_node);
  if (data_over_sockets) {
    add("error", "socket fallback: NCCL moves inter-node data over TCP sockets (NET/Socket)" +
                     std::string(socket_iface.empty() ? "" : " on " + socket_iface) +
                     ", at a fraction of the fabric's bandwidth. Check that the IB/RoCE devices "
                     "are visible (ibv_devinfo), NCCL_IB_DISABLE is unset, and the NCCL net "
                     "plugin loads.");
  }
  if (env("NCCL_IB_DISABLE") == "1") {
    add("error", "NCCL_IB_DISABLE=1: InfiniBand/RoCE is turned off by the environment; unset it.");
  }
  const std::string ifname = env("NCCL_SOCKET_IFNAME");
  if (!ifname.empty()) {
    std::string first = ifname;
    if (!first.empty() && (first[0] == '=' || first[0] == '^')) first.erase(0, 1);
    first = first.substr(0, first.find(','));
    if (data_over_sockets && ethernet_like(first)) {
      add("error", "NCCL_SOCKET_IFNAME=" + ifname + " picks " + first +
                       ", an Ethernet interface (the management network by its name), and NCCL "
                       "carries data over sockets on it; point it at the fabric (ib0) or leave "
                       "it to bootstrap only.");
    } else if (management_like(first)) {
      add("info", "NCCL_SOCKET_IFNAME=" + ifname + ": bootstrap traffic on " + first +
                      " (fine while data goes over IB/RoCE).");
    }
  } else if (!socket_iface.empty() && management_like(socket_iface) && data_over_sockets) {
    add("error", "NCCL chose " + socket_iface +
                     " for its sockets (no NCCL_SOCKET_IFNAME): a "
                     "management or container interface.");
  }
  if (socket_net && !data_over_sockets) {
    add("info",
        "one node: NCCL's network is Socket but carries no data; the GPUs connect "
        "directly (P2P/SHM).");
  }
  if (r.gdr_disabled && !r.gdr_enabled) {
    add("warning",
        "GPUDirect RDMA is off: network traffic bounces through host memory "
        "(load nvidia-peermem / dmabuf support, check NCCL_NET_GDR_LEVEL).");
  }
  const bool shm = std::any_of(r.summary.connections.begin(), r.summary.connections.end(),
                               [](const NcclConnection& c) { return c.transport == "SHM"; });
  if (shm) {
    add("warning",
        "SHM transport between GPUs of one node: peer-to-peer (NVLink/PCIe P2P) is "
        "unavailable or disabled (NCCL_P2P_DISABLE, ACS, a VM without P2P).");
  }
  int timeouts = 0, errors = 0;
  for (const auto& p : r.problems) {
    if (p.kind == "timeout") ++timeouts;
    if (p.kind == "error") ++errors;
  }
  if (timeouts > 0) {
    add("error", std::to_string(timeouts) +
                     " timeout / watchdog line(s): a rank stopped "
                     "participating (a hang, a dead node, mismatched collectives); the first is at "
                     "line " +
                     std::to_string(std::find_if(r.problems.begin(), r.problems.end(),
                                                 [](const auto& p) { return p.kind == "timeout"; })
                                        ->line_number) +
                     ".");
  }
  if (errors > 0) {
    add("error", std::to_string(errors) +
                     " NCCL error line(s) (e.g. ncclInternalError: often "
                     "tensors of different sizes across ranks, or a peer that died).");
  }
  if (r.summary.nccl_lines == 0)
    add("warning", "no NCCL_DEBUG output found (set NCCL_DEBUG=INFO).");
  if (std::none_of(r.findings.begin(), r.findings.end(),
                   [](const NcclLogFinding& f) { return f.severity != "info"; })) {
    add("info", "no problem found.");
  }
  std::stable_sort(r.findings.begin(), r.findings.end(), [](const auto& a, const auto& b) {
    auto rank = [](const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; };
    return rank(a.severity) < rank(b.severity);
  });
  return r;
}

}  // namespace clustersim::validate
