#include "validate/collective_math.h"

#include <algorithm>
#include <string>

namespace clustersim::validate {

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "alltoall";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kSendRecv: return "sendrecv";
  }
  return "?";
}

bool parse_collective_op(std::string_view name, CollectiveOp* out) {
  for (CollectiveOp op : all_collective_ops()) {
    if (name == to_string(op)) {
      *out = op;
      return true;
    }
  }
  if (name == "all_to_all") {
    *out = CollectiveOp::kAllToAll;
    return true;
  }
  return false;
}

const std::vector<CollectiveOp>& all_collective_ops() {
  static const std::vector<CollectiveOp> kOps = {
      CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
      CollectiveOp::kAllToAll,  CollectiveOp::kBroadcast, CollectiveOp::kSendRecv};
  return kOps;
}

CollectiveShape collective_shape(CollectiveOp op, std::size_t size_bytes, std::size_t elt_bytes,
                                 int ranks) {
  CS_ASSERT(elt_bytes == 1 || elt_bytes == 2 || elt_bytes == 4 || elt_bytes == 8,
            "element size " + std::to_string(elt_bytes));
  CS_ASSERT(ranks >= 1, "ranks " + std::to_string(ranks));
  const std::size_t n = static_cast<std::size_t>(ranks);
  const std::size_t count = size_bytes / elt_bytes;
  // nccl-tests: base = (count / nranks) & ~(16 / eltSize - 1), a 16-byte multiple per rank.
  const std::size_t base = (count / n) & ~(16 / elt_bytes - 1);
  CollectiveShape s;
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      s.count = count;
      s.send_bytes = s.recv_bytes = count * elt_bytes;
      break;
    case CollectiveOp::kAllGather:
      s.count = base;
      s.send_bytes = base * elt_bytes;
      s.recv_bytes = base * n * elt_bytes;
      s.in_place_send_offset_bytes = base * elt_bytes;  // rank r sends from its own slot
      break;
    case CollectiveOp::kReduceScatter:
      s.count = base;
      s.send_bytes = base * n * elt_bytes;
      s.recv_bytes = base * elt_bytes;
      s.in_place_recv_offset_bytes = base * elt_bytes;  // rank r receives into its own slot
      break;
    case CollectiveOp::kAllToAll:
      s.count = base;  // elements exchanged with each peer
      s.send_bytes = s.recv_bytes = base * n * elt_bytes;
      break;
  }
  s.size_bytes = std::max(s.send_bytes, s.recv_bytes);
  return s;
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  CS_ASSERT(ranks >= 1, "ranks " + std::to_string(ranks));
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv: return 1.0;
  }
  return 1.0;
}

double algbw_GBps(std::size_t size_bytes, double time_s) {
  CS_ASSERT(time_s > 0, "time " + std::to_string(time_s));
  return static_cast<double>(size_bytes) / time_s / 1e9;
}

models::Result<std::vector<std::size_t>> size_sweep(std::size_t min_bytes, std::size_t max_bytes,
                                                    std::size_t factor) {
  if (min_bytes == 0) return models::Error{"size sweep: minimum size must be at least 1 byte"};
  if (min_bytes > max_bytes) {
    return models::Error{"size sweep: minimum " + std::to_string(min_bytes) +
                         " bytes is above maximum " + std::to_string(max_bytes)};
  }
  if (factor < 2) {
    return models::Error{"size sweep: step factor " + std::to_string(factor) +
                         " must be at least 2"};
  }
  std::vector<std::size_t> sizes;
  for (std::size_t s = min_bytes; s <= max_bytes; s *= factor) {
    sizes.push_back(s);
    if (s > max_bytes / factor) break;  // the next step would overflow or pass max
  }
  return sizes;
}

}  // namespace clustersim::validate
