// Matches a GPU's PCI device id (pci.ids) against the catalog, acceptance check 1, and notes
// where NVML's name, SM count or memory disagree with that catalog entry — the "is this the GPU
// I am paying for" check of the seed's checklist.
#pragma once

#include "validate/measurement.h"

namespace clustersim::validate {

// Sets g.catalog_id to the catalog GPU listing g.pci.device_id (vendor 0x10de), or leaves it
// empty with a note. Appends a note to g.notes for each disagreement: SM count different, memory
// more than 10% off the catalog capacity (NVML reports usable memory, a little below the label).
void match_catalog(GpuInfo& g);

}  // namespace clustersim::validate
