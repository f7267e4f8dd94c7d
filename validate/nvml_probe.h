// GPU identity and health through NVML (libnvidia-ml.so.1, loaded at run time from the driver)
// and sysfs (/sys/bus/pci/devices/<bus id>/): the facts of acceptance checks 1-5
// (docs/acceptance-checks.md: PCI ids, SM count, memory, clocks, PCIe link, NVLink, ECC, row
// remaps, throttle reasons, virtualization, MIG). The few NVML prototypes and structs needed are declared in
// nvml_probe.cc (no nvml.h is required to build). A query that fails leaves its field at the
// default and adds a note; only a missing libnvidia-ml is an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/result.h"
#include "validate/measurement.h"

namespace clustersim::validate {

// One reading under load.
struct HealthSample {
  std::uint64_t throttle_mask = 0;  // NVML clock event (throttle) reason bits
  int sm_clock_MHz = 0;
  int memory_clock_MHz = 0;
  double power_W = 0;
  int temperature_C = 0;
  PcieLink pcie;
};

class NvmlProbe {
 public:
  // Loads libnvidia-ml.so.1 and calls nvmlInit; the error says the driver's NVML is missing.
  static models::Result<std::unique_ptr<NvmlProbe>> load();
  ~NvmlProbe();

  std::string driver_version() const;
  // Fills what NVML and sysfs know of the GPU at `bus_id` ("0000:18:00.0"): name, uuid, PCI
  // ids, max clocks, PCIe link (idle), NVLink, ECC, row remaps, virtualization, MIG.
  void describe(const std::string& bus_id, GpuInfo& g) const;
  HealthSample sample(const std::string& bus_id) const;

  struct Api;

 private:
  explicit NvmlProbe(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

// Names of the set bits of an NVML throttle reason mask: "gpu_idle" (0x1),
// "applications_clocks" (0x2), "sw_power_cap" (0x4), "hw_slowdown" (0x8), "sync_boost" (0x10),
// "sw_thermal" (0x20), "hw_thermal" (0x40), "hw_power_brake" (0x80), "display_clocks"
// (0x100); unknown bits as "0x...". Bits from NVML's nvmlClocksEventReasons documentation.
std::vector<std::string> throttle_reason_names(std::uint64_t mask);

// PCI ids from sysfs text files ("0x10de\n"); 0 when unreadable. Exposed for tests.
std::uint32_t parse_sysfs_hex(const std::string& text);
// "32.0 GT/s PCIe" -> 5 (2.5/5/8/16/32/64 GT/s = gen 1..6); 0 when unknown.
int pcie_gen_from_speed(const std::string& text);

}  // namespace clustersim::validate
