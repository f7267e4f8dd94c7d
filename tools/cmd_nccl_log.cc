// `clustersim nccl-log FILE`: reads an NCCL_DEBUG=INFO log and says what it shows — ranks,
// hosts, NCCL version, channels, algorithms, transport per peer, errors and timeouts — and what is
// wrong, in plain words (validate/nccl_log_diagnosis.h). Exit 1 when the diagnosis finds an
// error (socket fallback, IB disabled, timeouts, NCCL errors), 0 otherwise.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "models/text_file.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"
#include "validate/nccl_log_diagnosis.h"

namespace clustersim::tools {
namespace {

struct NcclLogArgs {
  std::string file;
  bool json = false;
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string o;
  for (const auto& s : v) o += (o.empty() ? "" : sep) + s;
  return o.empty() ? "-" : o;
}

nlohmann::json report_json(const validate::NcclLogReport& r, const std::string& file) {
  using nlohmann::json;
  json transports = json::array();
  for (const auto& t : r.transports) {
    transports.push_back({{"rank", t.rank}, {"peer", t.peer}, {"transport", t.transport},
                          {"detail", t.detail}, {"channels", t.channels}});
  }
  json problems = json::array();
  for (const auto& p : r.problems) {
    problems.push_back({{"line", p.line_number}, {"kind", p.kind}, {"text", p.text}});
  }
  json findings = json::array();
  for (const auto& f : r.findings) findings.push_back({{"severity", f.severity}, {"message", f.message}});
  return {{"file", file},
          {"nccl_lines", r.summary.nccl_lines},
          {"versions", r.summary.versions},
          {"hosts", r.hosts},
          {"nranks", r.nranks},
          {"communicators", r.summary.comms.size()},
          {"networks", r.summary.networks},
          {"interfaces", r.interfaces},
          {"ring_channels", r.ring_channels},
          {"channels", r.channel_line},
          {"algorithms", r.algorithms},
          {"environment", r.environment},
          {"gpudirect_rdma", r.gdr_enabled ? "enabled" : r.gdr_disabled ? "disabled" : "unknown"},
          {"transports", transports},
          {"problems", problems},
          {"findings", findings}};
}

int run_nccl_log(const NcclLogArgs& a) {
  auto text = models::read_text_file(a.file);
  if (!text) return fail_bad_input("nccl-log", text.message());
  const validate::NcclLogReport r = validate::analyze_nccl_log(*text);
  const bool error = std::any_of(r.findings.begin(), r.findings.end(),
                                 [](const auto& f) { return f.severity == "error"; });
  if (a.json) {
    std::printf("%s\n", report_json(r, a.file).dump(2).c_str());
    return error ? kExitCheckFailed : kExitOk;
  }
  std::printf("clustersim nccl-log: %s (%d NCCL lines)\n", a.file.c_str(), r.summary.nccl_lines);
  std::printf("  NCCL        %s\n", join(r.summary.versions).c_str());
  std::printf("  hosts       %zu: %s\n", r.hosts.size(), join(r.hosts).c_str());
  std::printf("  ranks       %d (largest communicator; %zu initialised)\n", r.nranks,
              r.summary.comms.size());
  std::printf("  network     %s\n", join(r.summary.networks).c_str());
  for (const auto& i : r.interfaces) std::printf("              %s\n", i.c_str());
  std::printf("  channels    %d ring channels%s%s\n", r.ring_channels,
              r.channel_line.empty() ? "" : "; ", r.channel_line.c_str());
  std::printf("  algorithms  %s (set up)\n", join(r.algorithms).c_str());
  std::printf("  GPUDirect   %s\n", r.gdr_enabled ? "RDMA enabled" : r.gdr_disabled ? "RDMA disabled" : "-");
  if (!r.environment.empty()) {
    std::printf("  environment ");
    bool first = true;
    for (const auto& [k, v] : r.environment) {
      std::printf("%s%s=%s\n", first ? "" : "              ", k.c_str(), v.c_str());
      first = false;
    }
  }
  if (!r.transports.empty()) {
    TextTable t({"rank", "peer", "transport", "detail", "channels"},
                {TextTable::Align::kRight, TextTable::Align::kRight, TextTable::Align::kLeft,
                 TextTable::Align::kLeft, TextTable::Align::kRight});
    for (const auto& x : r.transports) {
      t.add_row({std::to_string(x.rank), std::to_string(x.peer), x.transport, x.detail,
                 std::to_string(x.channels)});
    }
    std::printf("\nTransport per peer\n%s", t.render(2).c_str());
  }
  if (!r.problems.empty()) {
    std::printf("\nErrors, timeouts and warnings\n");
    for (const auto& p : r.problems) {
      std::printf("  line %d [%s] %s\n", p.line_number, p.kind.c_str(), p.text.c_str());
    }
  }
  std::printf("\nDiagnosis\n");
  for (const auto& f : r.findings) std::printf("  %-7s %s\n", f.severity.c_str(), f.message.c_str());
  return error ? kExitCheckFailed : kExitOk;
}

const bool kRegistered = register_command(
    {"nccl-log", "read an NCCL_DEBUG=INFO log: transports per peer, channels, errors, diagnosis",
     73, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<NcclLogArgs>();
       sub.add_option("log", a->file, "NCCL_DEBUG=INFO output (a capture or NCCL_DEBUG_FILE)")
           .required();
       sub.add_flag("--json", a->json, "one JSON object");
       return [a] { return run_nccl_log(*a); };
     },
     {"clustersim nccl-log scenarios/measurements/nccl-debug-info-2xh200.log",
      "clustersim nccl-log scenarios/measurements/nccl-debug-info-2xh200.log --json"}});

}  // namespace
}  // namespace clustersim::tools
