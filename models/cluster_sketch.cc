#include "models/cluster_sketch.h"

#include <cctype>
#include <sstream>

namespace clustersim::models {

Result<ClusterConfig> cluster_from_sketch(const ClusterSketch& s, const std::string& origin) {
  // A scenario text with a placeholder workload (plain data parallelism of the smallest catalog
  // model over every GPU) that the loader accepts for any GPU count.
  const int gpus = s.gpus_per_node * s.nodes;
  std::ostringstream y;
  y << "name: sketch\ncluster:\n  nodes: " << s.nodes << "\n  node:\n    gpu: " << s.gpu
    << "\n    gpus_per_node: " << s.gpus_per_node << "\n";
  if (!s.scale_up.empty()) y << "    scale_up: " << s.scale_up << "\n";
  if (!s.nic.empty()) {
    y << "    nic: " << s.nic << "\n    nics_per_node: " << s.nics_per_node
      << "\n    links_per_nic: " << s.links_per_nic << "\n";
    y << "  fabric:\n    topology: single-switch\n    in_network_reduction: "
      << (s.in_network_reduction ? "true" : "false") << "\n";
  }
  y << "workload:\n  model: gpt2-124m\n  seq_len: 1024\n  global_batch: " << gpus
    << "\n  micro_batch: 1\n  parallelism:\n    dp: " << gpus << "\n";
  auto sc = load_scenario_text(y.str(), origin);
  if (!sc) {
    // The loader cites line:col of the generated text, which the user never saw: drop them.
    std::string m = sc.message();
    const std::size_t at = origin.size();
    if (m.compare(0, at, origin) == 0 && at < m.size() && m[at] == ':') {
      std::size_t p = at + 1;
      while (p < m.size() && (std::isdigit(static_cast<unsigned char>(m[p])) || m[p] == ':')) ++p;
      m = origin + ": " + m.substr(p < m.size() && m[p] == ' ' ? p + 1 : p);
    }
    return Error{m};
  }
  return sc->cluster;
}

}  // namespace clustersim::models
