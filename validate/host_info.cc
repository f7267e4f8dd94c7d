#include "validate/host_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

extern char** environ;

namespace clustersim::validate {

void parse_cpuinfo(std::string_view text, std::string* model_name, bool* hypervisor) {
  model_name->clear();
  *hypervisor = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "model name" && model_name->empty()) *model_name = std::string(value);
    if (key == "flags") {
      std::istringstream words{std::string(value)};
      std::string w;
      while (words >> w) {
        if (w == "hypervisor") *hypervisor = true;
      }
    }
  }
}

HostInfo read_host_info() {
  HostInfo h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  struct utsname u {};
  if (::uname(&u) == 0) h.kernel = u.release;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::ostringstream text;
  text << cpuinfo.rdbuf();
  parse_cpuinfo(text.str(), &h.cpu_model, &h.hypervisor);
  h.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  return h;
}

std::map<std::string, std::string> capture_environment() {
  static constexpr std::string_view kPrefixes[] = {
      "NCCL_", "CUDA_", "NVIDIA_", "CUBLAS", "NVSHMEM_", "TORCH_", "UCX_", "OMPI_COMM_WORLD",
      "SLURM_JOB", "LD_LIBRARY_PATH", "CLUSTERSIM_"};
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq);
    for (std::string_view p : kPrefixes) {
      if (key.substr(0, p.size()) == p) {
        out[std::string(key)] = std::string(kv.substr(eq + 1));
        break;
      }
    }
  }
  return out;
}

std::vector<std::string> process_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> out;
  std::string arg;
  while (std::getline(in, arg, '\0')) out.push_back(arg);
  return out;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace clustersim::validate
