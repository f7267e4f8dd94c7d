// A cluster from a few facts — GPU model, GPUs per node, nodes, NICs — for the commands that
// have no scenario file: `check` on a measurement file (one node of the measured GPUs) and the
// claims checker's inline hardware. It goes through the scenario loader, so that every default
// (scale-up link by architecture, switch for the NIC, capping) is the loader's own.
#pragma once

#include <string>

#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::models {

struct ClusterSketch {
  std::string gpu;        // catalog id, required
  int gpus_per_node = 1;
  int nodes = 1;
  std::string scale_up;   // "" = the loader's default for the GPU
  std::string nic;        // "" = none (one node only)
  int nics_per_node = 0;
  int links_per_nic = 1;
  bool in_network_reduction = false;
};

// The cluster the sketch describes. Fails with the loader's message (naming the field) on an
// unknown id or an impossible combination; `origin` names where the sketch came from.
Result<ClusterConfig> cluster_from_sketch(const ClusterSketch& sketch, const std::string& origin);

}  // namespace clustersim::models
