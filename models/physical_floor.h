// The physical floor of a figure: the least time (or the most bandwidth, FLOP/s, tokens/s) the
// hardware allows at its raw datasheet rates — no protocol overhead, no latency, perfect
// overlap, the best algorithm there is. A measured or claimed figure beyond it is impossible
// (docs/modelling.md, "Physical floors"); one near it is suspicious. Units: bytes, seconds, bytes/s per
// direction, FLOP, FLOP/s. Pure functions.
#pragma once

#include <string>

#include "models/collective_model.h"
#include "models/scenario.h"

namespace clustersim::models {

// The hardware a collective runs on, at raw rates.
struct FloorHardware {
  int ranks = 1;           // GPUs in the communicator
  int ranks_per_node = 1;
  int nodes = 1;
  double scale_up_Bps = 0;      // per GPU per direction (NVLink or PCIe), raw
  bool switch_reduction = false;  // the node's switch reduces (NVLS)
  // Per node per direction through all its NICs: NICs x links x line rate, each NIC capped at
  // the PCIe x16 link it sits on (eight bonded 200G links cannot leave one Gen5 NIC faster than
  // ~63 GB/s).
  double node_network_Bps = 0;
  bool in_network_reduction = false;  // SHARP: the switches reduce
};

// The communicator of the first `ranks` GPUs of `cluster` (nodes filled in order), at raw rates.
// ranks 0 = every GPU of the cluster.
FloorHardware floor_hardware(const ClusterConfig& cluster, int ranks = 0);

struct CollectiveFloor {
  double time_s = 0;        // the least time for the collective
  double max_algbw_Bps = 0;  // size / time_s
  double max_busbw_Bps = 0;  // algbw x nccl-tests' busbw factor
  // What binds: "network" (each node's NICs) or "scale_up" (each GPU's NVLink/PCIe).
  std::string bound;
  double bytes_through_bound = 0;  // bytes each node (network) or each GPU (scale_up) must send
  double bound_Bps = 0;            // the rate they go at
  std::string explanation;  // "each node sends 2(N-1)/N x 2 GB = 3 GB through 50 GB/s"
};

// The least time `op` of nccl-tests size `size_bytes` can take on `hw`. Bytes each GPU must send
// (at least; Patarasuk & Yuan 2009 for all_reduce): all_reduce 2(n-1)/n S, or (n-1)/n S where a
// switch reduces; all_gather, reduce_scatter, alltoall (n-1)/n S; broadcast, reduce, sendrecv S.
// Across N nodes each node's NICs carry: all_reduce 2(N-1)/N S, or S with in-network reduction
// (each node sends its S to the switches once and gets the result once: half a ring's
// 2(N-1)/N x S for large N); all_gather, reduce_scatter (N-1)/N S; alltoall g (N-1)/N S
// (nodes of g ranks; a last node holding k < g: the busiest node's (n - k)/n S and k (n - k)/n
// S instead); broadcast, reduce, sendrecv S. The GPU's own egress in a multi-node job is its scale-up link
// plus its share of the node's NICs. One rank or zero bytes: time 0.
CollectiveFloor collective_floor(const FloorHardware& hw, CollectiveOp op, double size_bytes);

// Forward FLOPs of dense attention (QK^T and AV) over `tokens` at model width `hidden` for one
// layer: 4 s^2 h, halved when causal (1M tokens at h = 16384, causal: 3.3e16).
double attention_forward_flops_per_layer(double tokens, double hidden, bool causal);

}  // namespace clustersim::models
