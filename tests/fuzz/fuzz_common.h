// Shared pieces of the libFuzzer targets (one per input surface, tests/fuzz/README.md): the
// input as text, and a fixed scenario for the surfaces that judge against a cluster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "models/scenario.h"

namespace clustersim::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Two nodes of 8 H100 on NDR InfiniBand: the cluster claims, nccl-tests text and calibration
// overlays are read against.
inline const models::Scenario& reference_scenario() {
  static const models::Scenario s = [] {
    auto r = models::load_scenario_text(
        "cluster:\n"
        "  nodes: 2\n"
        "  node: {gpu: h100-sxm, gpus_per_node: 8, scale_up: nvlink4, nics_per_node: 8,"
        " nic: ib-ndr}\n"
        "  fabric: {topology: fat-tree, tiers: 2}\n"
        "workload:\n"
        "  model: llama3-8b\n"
        "  seq_len: 4096\n"
        "  global_batch: 16\n"
        "  parallelism: {tp: 8, dp: 2}\n",
        "fuzz-reference.yaml");
    if (!r.ok()) __builtin_trap();
    return std::move(r).value();
  }();
  return s;
}

}  // namespace clustersim::fuzz
