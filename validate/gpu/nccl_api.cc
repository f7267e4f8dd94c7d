#include "validate/gpu/nccl_api.h"

namespace clustersim::validate::gpu {

std::string NcclApi::version() const {
  int code = 0;
  if (get_version == nullptr || get_version(&code) != ncclSuccess) return "";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

models::Result<NcclApi> load_nccl() {
  auto lib = SharedLibrary::open(
      "NCCL (libnccl.so.2, needed for the collective sweep)", "CLUSTERSIM_NCCL_LIBRARY",
      {"libnccl.so.2", "libnccl.so"},
      "install NCCL (e.g. the libnccl2 package, or pip's nvidia-nccl-cu13, whose "
      "site-packages/nvidia/nccl/lib you add to LD_LIBRARY_PATH)");
  if (!lib.ok()) return models::Error{lib.message()};
  NcclApi api;
  api.lib = *lib;
  SymbolBinder b(api.lib);
  b.bind("ncclGetVersion", &api.get_version);
  b.bind("ncclGetUniqueId", &api.get_unique_id);
  b.bind("ncclCommInitRank", &api.comm_init_rank);
  b.bind("ncclCommDestroy", &api.comm_destroy);
  b.bind("ncclCommAbort", &api.comm_abort);
  b.bind("ncclCommGetAsyncError", &api.comm_get_async_error);
  b.bind("ncclGetErrorString", &api.error_string);
  b.bind("ncclGroupStart", &api.group_start);
  b.bind("ncclGroupEnd", &api.group_end);
  b.bind("ncclAllReduce", &api.all_reduce);
  b.bind("ncclAllGather", &api.all_gather);
  b.bind("ncclReduceScatter", &api.reduce_scatter);
  b.bind("ncclBroadcast", &api.broadcast);
  b.bind("ncclSend", &api.send);
  b.bind("ncclRecv", &api.recv);
  b.bind("ncclMemAlloc", &api.mem_alloc, false);
  b.bind("ncclMemFree", &api.mem_free, false);
  if (api.mem_alloc == nullptr || api.mem_free == nullptr) api.mem_alloc = nullptr;
  if (!b.missing().empty()) {
    return models::Error{api.lib.path() + " lacks " + b.missing() + " (NCCL older than 2.7?)"};
  }
  return api;
}

}  // namespace clustersim::validate::gpu
