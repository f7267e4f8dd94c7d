// The collectives a validate sweep runs and nccl-tests' arithmetic for them: which element
// count each rank passes to NCCL for a given "size" column, and how algbw and busbw follow from
// the measured time. Sizes are bytes, times seconds, bandwidths GB/s (1e9 bytes per second),
// exactly as NVIDIA/nccl-tests src/*.cu (GetCollByteCount, GetBw) and doc/PERFORMANCE.md define
// them, so a row here can be diffed against an nccl-tests line of the same size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "models/result.h"

namespace clustersim::validate {

enum class CollectiveOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

// "all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv" (the
// nccl-tests program names without "_perf").
std::string_view to_string(CollectiveOp op);
// Accepts the names above (and "all_to_all"); false for anything else.
bool parse_collective_op(std::string_view name, CollectiveOp* out);
// All six, in the order a sweep runs them.
const std::vector<CollectiveOp>& all_collective_ops();

// The buffers of one collective call on one rank, for the nccl-tests "size" column S and n
// ranks of elements of elt_bytes each. Per nccl-tests: all_gather / reduce_scatter / alltoall
// round the per-rank count down to a 16-byte multiple, so size_bytes may be below S (and 0 for
// tiny S on many ranks); all_reduce / broadcast / sendrecv use S / elt_bytes.
struct CollectiveShape {
  std::size_t count = 0;       // the count argument passed to NCCL (per-rank count for ag/rs)
  std::size_t send_bytes = 0;  // bytes each rank sends from
  std::size_t recv_bytes = 0;  // bytes each rank receives into
  std::size_t size_bytes = 0;  // the size column: max(send_bytes, recv_bytes)
  // In place, rank r passes sendbuff = recvbuff + r * in_place_send_offset_bytes and
  // recvbuff + r * in_place_recv_offset_bytes (nccl-tests' send/recvInplaceOffset).
  std::size_t in_place_send_offset_bytes = 0;
  std::size_t in_place_recv_offset_bytes = 0;
};
// REQUIRES: elt_bytes in {1, 2, 4, 8}, ranks >= 1.
CollectiveShape collective_shape(CollectiveOp op, std::size_t size_bytes, std::size_t elt_bytes,
                                 int ranks);

// busbw / algbw: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n; broadcast
// and sendrecv 1 (nccl-tests doc/PERFORMANCE.md). REQUIRES: ranks >= 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

// algbw in GB/s = size_bytes / time_s / 1e9, with size_bytes the shape's size column.
// REQUIRES: time_s > 0.
double algbw_GBps(std::size_t size_bytes, double time_s);

// Sizes min, min*factor, ... up to and including max (nccl-tests -b/-e/-f). Fails when
// min == 0, min > max or factor < 2, naming the offending value.
models::Result<std::vector<std::size_t>> size_sweep(std::size_t min_bytes, std::size_t max_bytes,
                                                    std::size_t factor);

}  // namespace clustersim::validate
