#include "validate/nvml_probe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "validate/shared_library.h"

namespace clustersim::validate {
namespace {

// The subset of nvml.h this file uses (NVML API reference, "Device Queries"); layouts as in
// nvml.h of driver 5xx. nvmlReturn_t is an enum whose NVML_SUCCESS is 0.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // device << 16 | vendor
  unsigned int pciSubSystemId;  // subsystem device << 16 | subsystem vendor
  char busId[32];
};
constexpr int kClockSm = 1, kClockMem = 2;               // nvmlClockType_t
constexpr int kEccCorrected = 0, kEccUncorrected = 1;    // nvmlMemoryErrorType_t
constexpr int kVolatileEcc = 0, kAggregateEcc = 1;       // nvmlEccCounterType_t
constexpr unsigned kMaxNvlinks = 18;                     // NVML_NVLINK_MAX_LINKS (Hopper)

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return t;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

struct NvmlProbe::Api {
  SharedLibrary lib;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*virtualization)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;

  std::string why(nvmlReturn_t r) const {
    return error_string ? error_string(r) : "NVML error " + std::to_string(r);
  }
  nvmlDevice_t device(const std::string& bus_id) const {
    nvmlDevice_t d = nullptr;
    return by_bus_id(bus_id.c_str(), &d) == kNvmlSuccess ? d : nullptr;
  }
};

NvmlProbe::NvmlProbe(std::unique_ptr<Api> api) : api_(std::move(api)) {}
NvmlProbe::~NvmlProbe() {
  if (api_ && api_->shutdown) api_->shutdown();
}

models::Result<std::unique_ptr<NvmlProbe>> NvmlProbe::load() {
  auto lib = SharedLibrary::open("NVML (libnvidia-ml.so.1, part of the NVIDIA driver)",
                                 "CLUSTERSIM_NVML_LIBRARY", {"libnvidia-ml.so.1", "libnvidia-ml.so"},
                                 "is the NVIDIA driver installed on this machine?");
  if (!lib.ok()) return models::Error{lib.message()};
  auto api = std::make_unique<Api>();
  api->lib = *lib;
  SymbolBinder b(api->lib);
  b.bind("nvmlInit_v2", &api->init);
  b.bind("nvmlShutdown", &api->shutdown);
  b.bind("nvmlErrorString", &api->error_string);
  b.bind("nvmlSystemGetDriverVersion", &api->driver_version);
  b.bind("nvmlDeviceGetHandleByPciBusId_v2", &api->by_bus_id);
  b.bind("nvmlDeviceGetName", &api->name);
  b.bind("nvmlDeviceGetUUID", &api->uuid);
  b.bind("nvmlDeviceGetPciInfo_v3", &api->pci);
  b.bind("nvmlDeviceGetMaxClockInfo", &api->max_clock);
  b.bind("nvmlDeviceGetClockInfo", &api->clock);
  b.bind("nvmlDeviceGetCurrPcieLinkGeneration", &api->pcie_gen);
  b.bind("nvmlDeviceGetMaxPcieLinkGeneration", &api->pcie_gen_max);
  b.bind("nvmlDeviceGetCurrPcieLinkWidth", &api->pcie_width);
  b.bind("nvmlDeviceGetMaxPcieLinkWidth", &api->pcie_width_max);
  b.bind("nvmlDeviceGetNvLinkState", &api->nvlink_state, false);
  b.bind("nvmlDeviceGetEccMode", &api->ecc_mode, false);
  b.bind("nvmlDeviceGetTotalEccErrors", &api->ecc_errors, false);
  b.bind("nvmlDeviceGetRemappedRows", &api->remapped_rows, false);
  // Renamed "clock event reasons" in newer drivers; the old name stays exported.
  b.bind("nvmlDeviceGetCurrentClocksEventReasons", &api->throttle, false);
  if (api->throttle == nullptr) b.bind("nvmlDeviceGetCurrentClocksThrottleReasons", &api->throttle);
  b.bind("nvmlDeviceGetVirtualizationMode", &api->virtualization, false);
  b.bind("nvmlDeviceGetMigMode", &api->mig_mode, false);
  b.bind("nvmlDeviceGetPowerUsage", &api->power, false);
  b.bind("nvmlDeviceGetTemperature", &api->temperature, false);
  if (!b.missing().empty()) {
    return models::Error{api->lib.path() + " lacks " + b.missing() + " (driver too old?)"};
  }
  if (nvmlReturn_t r = api->init(); r != kNvmlSuccess) {
    return models::Error{"nvmlInit failed: " + api->why(r)};
  }
  return std::unique_ptr<NvmlProbe>(new NvmlProbe(std::move(api)));
}

std::string NvmlProbe::driver_version() const {
  char buf[96] = {};
  return api_->driver_version(buf, sizeof buf) == kNvmlSuccess ? buf : "";
}

void NvmlProbe::describe(const std::string& bus_id, GpuInfo& g) const {
  const Api& a = *api_;
  // sysfs first: it answers even where NVML does not (and names the subsystem vendor).
  const std::string sys = "/sys/bus/pci/devices/" + lower(bus_id) + "/";
  g.pci.bus_id = bus_id;
  if (std::uint32_t v = parse_sysfs_hex(read_text(sys + "vendor")); v != 0) g.pci.vendor_id = v;
  if (std::uint32_t d = parse_sysfs_hex(read_text(sys + "device")); d != 0) g.pci.device_id = d;
  g.pci.subsystem_vendor_id = parse_sysfs_hex(read_text(sys + "subsystem_vendor"));
  g.pci.subsystem_device_id = parse_sysfs_hex(read_text(sys + "subsystem_device"));

  nvmlDevice_t d = a.device(bus_id);
  if (d == nullptr) {
    g.notes.push_back("NVML does not know the GPU at " + bus_id);
    return;
  }
  char buf[96] = {};
  if (a.name(d, buf, sizeof buf) == kNvmlSuccess) g.name = buf;
  if (a.uuid(d, buf, sizeof buf) == kNvmlSuccess) g.uuid = buf;
  nvmlPciInfo_t pci{};
  if (nvmlReturn_t r = a.pci(d, &pci); r == kNvmlSuccess) {
    g.pci.nvml_pci_device_id = pci.pciDeviceId;
    if (g.pci.vendor_id == 0) g.pci.vendor_id = pci.pciDeviceId & 0xffff;
    if (g.pci.device_id == 0) g.pci.device_id = pci.pciDeviceId >> 16;
    if (g.pci.subsystem_vendor_id == 0) g.pci.subsystem_vendor_id = pci.pciSubSystemId & 0xffff;
    if (g.pci.subsystem_device_id == 0) g.pci.subsystem_device_id = pci.pciSubSystemId >> 16;
    if ((pci.pciDeviceId >> 16) != g.pci.device_id) {
      g.notes.push_back("NVML and sysfs disagree on the PCI device id");
    }
  } else {
    g.notes.push_back("nvmlDeviceGetPciInfo: " + a.why(r));
  }
  unsigned v = 0;
  if (a.max_clock(d, kClockSm, &v) == kNvmlSuccess) g.max_sm_clock_MHz = static_cast<int>(v);
  if (a.max_clock(d, kClockMem, &v) == kNvmlSuccess) g.max_memory_clock_MHz = static_cast<int>(v);
  g.pcie_idle = sample(bus_id).pcie;
  if (a.pcie_gen_max(d, &v) == kNvmlSuccess) g.pcie_idle.gen_max = static_cast<int>(v);
  if (a.pcie_width_max(d, &v) == kNvmlSuccess) g.pcie_idle.width_max = static_cast<int>(v);
  if (g.pcie_idle.gen_max == 0) g.pcie_idle.gen_max = pcie_gen_from_speed(read_text(sys + "max_link_speed"));
  if (g.pcie_idle.width_max == 0) g.pcie_idle.width_max = std::atoi(read_text(sys + "max_link_width").c_str());
  if (a.nvlink_state) {
    for (unsigned link = 0; link < kMaxNvlinks; ++link) {
      int active = 0;
      if (a.nvlink_state(d, link, &active) != kNvmlSuccess) continue;
      ++g.nvlink_links;
      g.nvlink_active += active == 1;
    }
  }
  int cur = 0, pend = 0;
  if (a.ecc_mode && a.ecc_mode(d, &cur, &pend) == kNvmlSuccess) {
    g.ecc.supported = true;
    g.ecc.enabled = cur == 1;
    g.ecc.pending_enabled = pend == 1;
    unsigned long long n = 0;
    if (a.ecc_errors(d, kEccCorrected, kVolatileEcc, &n) == kNvmlSuccess) g.ecc.volatile_corrected = static_cast<std::int64_t>(n);
    if (a.ecc_errors(d, kEccUncorrected, kVolatileEcc, &n) == kNvmlSuccess) g.ecc.volatile_uncorrected = static_cast<std::int64_t>(n);
    if (a.ecc_errors(d, kEccCorrected, kAggregateEcc, &n) == kNvmlSuccess) g.ecc.aggregate_corrected = static_cast<std::int64_t>(n);
    if (a.ecc_errors(d, kEccUncorrected, kAggregateEcc, &n) == kNvmlSuccess) g.ecc.aggregate_uncorrected = static_cast<std::int64_t>(n);
  }
  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  if (a.remapped_rows && a.remapped_rows(d, &corr, &unc, &pending, &failure) == kNvmlSuccess) {
    g.row_remap = {true, static_cast<int>(corr), static_cast<int>(unc), pending != 0, failure != 0};
  }
  int mode = -1;
  if (a.virtualization && a.virtualization(d, &mode) == kNvmlSuccess) {
    static const char* kModes[] = {"none", "passthrough", "vgpu", "host_vgpu", "host_vsga"};
    g.virtualization = mode >= 0 && mode < 5 ? kModes[mode] : "mode " + std::to_string(mode);
  }
  unsigned mig = 0, mig_pending = 0;
  if (a.mig_mode && a.mig_mode(d, &mig, &mig_pending) == kNvmlSuccess) {
    g.mig_mode = mig == 1 ? "enabled" : "disabled";
  } else {
    g.mig_mode = "unsupported";
  }
}

HealthSample NvmlProbe::sample(const std::string& bus_id) const {
  const Api& a = *api_;
  HealthSample s;
  nvmlDevice_t d = a.device(bus_id);
  if (d == nullptr) return s;
  unsigned long long mask = 0;
  if (a.throttle(d, &mask) == kNvmlSuccess) s.throttle_mask = mask;
  unsigned v = 0;
  if (a.clock(d, kClockSm, &v) == kNvmlSuccess) s.sm_clock_MHz = static_cast<int>(v);
  if (a.clock(d, kClockMem, &v) == kNvmlSuccess) s.memory_clock_MHz = static_cast<int>(v);
  if (a.power && a.power(d, &v) == kNvmlSuccess) s.power_W = v / 1000.0;
  if (a.temperature && a.temperature(d, 0, &v) == kNvmlSuccess) s.temperature_C = static_cast<int>(v);
  if (a.pcie_gen(d, &v) == kNvmlSuccess) s.pcie.gen_current = static_cast<int>(v);
  if (a.pcie_width(d, &v) == kNvmlSuccess) s.pcie.width_current = static_cast<int>(v);
  if (a.pcie_gen_max(d, &v) == kNvmlSuccess) s.pcie.gen_max = static_cast<int>(v);
  if (a.pcie_width_max(d, &v) == kNvmlSuccess) s.pcie.width_max = static_cast<int>(v);
  return s;
}

std::vector<std::string> throttle_reason_names(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> kBits[] = {
      {0x1, "gpu_idle"},       {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},    {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},    {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const auto& [bit, name] : kBits) {
    known |= bit;
    if (mask & bit) out.push_back(name);
  }
  if (mask & ~known) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(mask & ~known));
    out.push_back(buf);
  }
  return out;
}

std::uint32_t parse_sysfs_hex(const std::string& text) {
  return static_cast<std::uint32_t>(std::strtoul(text.c_str(), nullptr, 16));
}

int pcie_gen_from_speed(const std::string& text) {
  const double gts = std::atof(text.c_str());
  static const double kSpeeds[] = {2.5, 5, 8, 16, 32, 64};
  for (int i = 0; i < 6; ++i) {
    if (gts > 0 && std::abs(gts - kSpeeds[i]) < 0.5) return i + 1;
  }
  return 0;
}

}  // namespace clustersim::validate
