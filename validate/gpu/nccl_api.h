// NCCL's functions as a table loaded at run time from libnccl.so.2 (types from nccl.h; the
// prober has no link-time dependency on NCCL, so a node without it gets a clear message).
#pragma once

#include <nccl.h>

#include <string>

#include "models/result.h"
#include "validate/shared_library.h"

namespace clustersim::validate::gpu {

struct NcclApi {
  SharedLibrary lib;
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclCommGetAsyncError) comm_get_async_error = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  // NCCL 2.19+ (nullptr before): the allocator nccl-tests uses for its buffers.
  decltype(&ncclMemAlloc) mem_alloc = nullptr;
  decltype(&ncclMemFree) mem_free = nullptr;

  // "2.28.9" from ncclGetVersion's code (major * 10000 + minor * 100 + patch since 2.9).
  std::string version() const;
};

// Loads libnccl.so.2 (CLUSTERSIM_NCCL_LIBRARY overrides); the error explains where to get it.
models::Result<NcclApi> load_nccl();

}  // namespace clustersim::validate::gpu
