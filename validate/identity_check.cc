#include "validate/identity_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/catalog.h"
#include "models/units.h"

namespace clustersim::validate {

void match_catalog(GpuInfo& g) {
  // The catalog entry follows from the PCI id alone: whatever the file says it is is dropped.
  g.catalog_id.clear();
  char hex[16];
  std::snprintf(hex, sizeof hex, "0x%04x", g.pci.device_id);
  if (g.pci.vendor_id != 0x10de) {
    g.notes.push_back("PCI vendor is not NVIDIA (0x10de); no catalog match attempted");
    return;
  }
  const models::GpuSpec* spec = nullptr;
  for (const models::GpuSpec& s : models::gpu_catalog()) {
    if (std::find(s.pci_device_ids.begin(), s.pci_device_ids.end(), g.pci.device_id) !=
        s.pci_device_ids.end()) {
      spec = &s;
      break;
    }
  }
  if (spec == nullptr) {
    g.notes.push_back(std::string("PCI device id ") + hex + " is not in the catalog");
    return;
  }
  g.catalog_id = spec->id;
  if (spec->sm_count > 0 && g.sm_count > 0 && spec->sm_count != g.sm_count) {
    g.notes.push_back("catalog " + spec->id + " has " + std::to_string(spec->sm_count) +
                      " SMs, this GPU reports " + std::to_string(g.sm_count));
  }
  if (spec->hbm_bytes > 0 && g.memory_bytes > 0) {
    const double ratio = static_cast<double>(g.memory_bytes) / spec->hbm_bytes;
    if (std::fabs(ratio - 1.0) > 0.10) {
      g.notes.push_back("catalog " + spec->id + " has " + models::format_size(spec->hbm_bytes) +
                        ", this GPU reports " +
                        models::format_size(static_cast<double>(g.memory_bytes)));
    }
  }
}

}  // namespace clustersim::validate
