// The CUDA backend of `clustersim validate`: NCCL sweeps with nccl-tests' semantics, cuBLASLt
// GEMM rates and the sustained burn with NVML health sampling, copy bandwidths, and our flash
// attention kernels (forward and backward). NCCL, cuBLASLt and NVML are loaded at run time
// (nccl_api.h, cublaslt_api.h, nvml_probe.h); the CUDA runtime is linked statically. One object drives the GPUs of one
// process; every CUDA call is checked and a failure becomes an Error naming the call.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "validate/gpu/attention.h"
#include "validate/gpu/cublaslt_api.h"
#include "validate/gpu/kernels.h"
#include "validate/gpu/nccl_api.h"
#include "validate/gpu_backend.h"
#include "validate/nccl_log.h"
#include "validate/nvml_probe.h"
#include "validate/watchdog.h"

namespace clustersim::validate {
namespace gpu {
namespace {

using models::Error;
using models::Result;
using models::Status;

Error cuda_error(cudaError_t e, const char* call, int line) {
  return Error{std::string("validate/gpu/cuda_backend.cc:") + std::to_string(line) + ": " + call +
               ": " + cudaGetErrorString(e)};
}
#define CS_CUDA(call)                                                    \
  do {                                                                   \
    if (cudaError_t e_ = (call); e_ != cudaSuccess) return cuda_error(e_, #call, __LINE__); \
  } while (0)

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Device memory that frees itself (cudaMalloc, or NCCL's allocator for collective buffers).
struct DeviceBuffer {
  void* ptr = nullptr;
  int device = -1;
  decltype(&ncclMemFree) nccl_free = nullptr;  // set when ncclMemAlloc made it
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr != nullptr) {
      cudaSetDevice(device);
      if (nccl_free != nullptr) {
        nccl_free(ptr);
      } else {
        cudaFree(ptr);
      }
    }
    ptr = nullptr;
    nccl_free = nullptr;
  }
  Status allocate(int dev, std::size_t bytes) {
    reset();
    device = dev;
    CS_CUDA(cudaSetDevice(dev));
    CS_CUDA(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 256)));
    return Status::Ok();
  }
  // With ncclMemAlloc where the loaded NCCL has it (2.19+), as nccl-tests allocates its send and
  // receive buffers; cudaMalloc otherwise.
  Status allocate_for_nccl(int dev, std::size_t bytes, const NcclApi& nccl) {
    if (nccl.mem_alloc == nullptr) return allocate(dev, bytes);
    reset();
    device = dev;
    CS_CUDA(cudaSetDevice(dev));
    if (ncclResult_t r = nccl.mem_alloc(&ptr, std::max<std::size_t>(bytes, 256)); r != ncclSuccess) {
      ptr = nullptr;
      return Error{std::string("ncclMemAlloc(") + std::to_string(bytes) + " bytes): " + nccl.error_string(r)};
    }
    nccl_free = nccl.mem_free;
    return Status::Ok();
  }
  template <class T> T* as() const { return static_cast<T*>(ptr); }
  char* bytes() const { return static_cast<char*>(ptr); }
};

// Times `launch` with CUDA events: returns seconds per call of the median batch, running
// batches of `per_batch` calls until `seconds` of batches (at least min_batches) are done.
// All batch times (s per call) go to *samples when given.
Result<double> time_batches(cudaStream_t s, const std::function<Status()>& launch, int per_batch,
                            double seconds, int min_batches, std::vector<double>* samples) {
  cudaEvent_t start, stop;
  CS_CUDA(cudaEventCreate(&start));
  CS_CUDA(cudaEventCreate(&stop));
  std::vector<double> per_call;
  double total = 0;
  Status failed;
  while (static_cast<int>(per_call.size()) < min_batches || total < seconds) {
    if (cudaError_t e = cudaEventRecord(start, s); e != cudaSuccess) {
      failed = cuda_error(e, "cudaEventRecord", __LINE__);
      break;
    }
    for (int i = 0; i < per_batch && failed.ok(); ++i) failed = launch();
    if (cudaError_t e = cudaEventRecord(stop, s); e != cudaSuccess && failed.ok()) {
      failed = cuda_error(e, "cudaEventRecord", __LINE__);
    }
    if (cudaError_t e = cudaEventSynchronize(stop); e != cudaSuccess && failed.ok()) {
      failed = cuda_error(e, "cudaEventSynchronize", __LINE__);
    }
    if (!failed.ok()) break;
    float ms = 0;
    if (cudaError_t e = cudaEventElapsedTime(&ms, start, stop); e != cudaSuccess) {
      failed = cuda_error(e, "cudaEventElapsedTime", __LINE__);
      break;
    }
    per_call.push_back(ms * 1e-3 / per_batch);
    total += ms * 1e-3;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!failed.ok()) return Error{failed.message()};
  if (samples) *samples = per_call;
  return median(per_call);
}

struct LocalGpu {
  int device = 0;
  std::string bus_id;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  DeviceBuffer send, recv, counter;
  cudaEvent_t start = nullptr, stop = nullptr;
};

class CudaBackend final : public GpuBackend {
 public:
  CudaBackend(std::vector<int> devices, std::unique_ptr<NvmlProbe> nvml, std::string nvml_error,
              std::string nccl_debug_file)
      : nvml_(std::move(nvml)), nvml_error_(std::move(nvml_error)),
        nccl_debug_file_(std::move(nccl_debug_file)) {
    gpus_ = std::vector<LocalGpu>(devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
      gpus_[i].device = devices[i];
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, devices[i]) == cudaSuccess) gpus_[i].bus_id = bus;
    }
  }
  ~CudaBackend() override { close_communicator(); }

  std::string name() const override { return "cuda"; }
  int local_gpu_count() const override { return static_cast<int>(gpus_.size()); }

  Versions versions() override {
    Versions v;
    if (nvml_) v.driver = nvml_->driver_version();
    cudaDriverGetVersion(&v.cuda_driver);
    cudaRuntimeGetVersion(&v.cuda_runtime);
    if (ensure_nccl().ok()) {
      v.nccl = nccl_->version();
      v.nccl_library = nccl_->lib.path();
    }
    if (ensure_cublas().ok()) v.cublas = cublas_->version() + " (" + cublas_->lib.path() + ")";
    return v;
  }

  std::vector<GpuInfo> identify() override {
    std::vector<GpuInfo> out;
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      GpuInfo g;
      g.cuda_index = static_cast<int>(i);
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, gpus_[i].device) == cudaSuccess) {
        g.name = p.name;
        g.sm_count = p.multiProcessorCount;
        g.memory_bytes = p.totalGlobalMem;
        g.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
      }
      if (nvml_) {
        nvml_->describe(gpus_[i].bus_id, g);
      } else {
        g.notes.push_back(nvml_error_);
        g.pci.bus_id = gpus_[i].bus_id;
      }
      g.notes.push_back("CUDA device " + std::to_string(gpus_[i].device));
      out.push_back(std::move(g));
    }
    return out;
  }

  Result<std::string> new_communicator_id() override {
    if (Status s = ensure_nccl(); !s.ok()) return Error{s.message()};
    ncclUniqueId id;
    if (ncclResult_t r = nccl_->get_unique_id(&id); r != ncclSuccess) {
      return Error{std::string("ncclGetUniqueId: ") + nccl_->error_string(r)};
    }
    return std::string(id.internal, sizeof id.internal);
  }

  Status init_communicator(const std::string& id, int world_size, int first_rank,
                           std::uint64_t max_buffer_bytes) override {
    if (Status s = ensure_nccl(); !s.ok()) return s;
    if (id.size() != sizeof(ncclUniqueId::internal)) return Error{"bad NCCL unique id size"};
    ncclUniqueId uid;
    std::memcpy(uid.internal, id.data(), id.size());
    world_size_ = world_size;
    first_rank_ = first_rank;
    buffer_bytes_ = max_buffer_bytes;
    aborted_ = false;
    for (LocalGpu& g : gpus_) {
      CS_CUDA(cudaSetDevice(g.device));
      CS_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
      CS_CUDA(cudaEventCreate(&g.start));
      CS_CUDA(cudaEventCreate(&g.stop));
      if (Status s = g.send.allocate_for_nccl(g.device, max_buffer_bytes, *nccl_); !s.ok()) return s;
      if (Status s = g.recv.allocate_for_nccl(g.device, max_buffer_bytes, *nccl_); !s.ok()) return s;
      if (Status s = g.counter.allocate(g.device, sizeof(unsigned long long)); !s.ok()) return s;
    }
    nccl_->group_start();
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      cudaSetDevice(gpus_[i].device);
      nccl_->comm_init_rank(&gpus_[i].comm, world_size, uid, first_rank + static_cast<int>(i));
    }
    if (ncclResult_t r = nccl_->group_end(); r != ncclSuccess) {
      return Error{std::string("ncclCommInitRank: ") + nccl_->error_string(r)};
    }
    comms_ready_ = true;
    return Status::Ok();
  }

  Result<CollectiveResult> run_collective(const CollectiveRequest& req) override {
    if (!comms_ready_) return Error{req.label + ": no communicator"};
    if (aborted_) return Error{req.label + ": the communicator was aborted earlier"};
    // 1. Warm-up, then `iters` timed launches between events on every local stream. Launch i
    //    uses the buffers shifted by i mod (buffer / size) sizes, as nccl-tests' startColl does.
    for (int i = 0; i < req.warmup_iters; ++i) {
      if (Status s = launch(req, i); !s.ok()) return Error{s.message()};
    }
    if (Status s = wait(req); !s.ok()) return Error{s.message()};
    for (LocalGpu& g : gpus_) {
      cudaSetDevice(g.device);
      cudaEventRecord(g.start, g.stream);
    }
    for (int i = 0; i < req.iters; ++i) {
      if (Status s = launch(req, i); !s.ok()) return Error{s.message()};
    }
    for (LocalGpu& g : gpus_) {
      cudaSetDevice(g.device);
      cudaEventRecord(g.stop, g.stream);
    }
    if (Status s = wait(req); !s.ok()) return Error{s.message()};
    CollectiveResult r;
    for (LocalGpu& g : gpus_) {
      float ms = 0;
      CS_CUDA(cudaEventElapsedTime(&ms, g.start, g.stop));
      r.time_s = std::max(r.time_s, ms * 1e-3 / req.iters);
    }
    // 2. One more launch on exact data, then count wrong elements on the GPU.
    if (req.check) {
      for (std::size_t i = 0; i < gpus_.size(); ++i) {
        if (Status s = prepare_check(req, i); !s.ok()) return Error{s.message()};
      }
      if (Status s = launch(req, 0); !s.ok()) return Error{s.message()};
      if (Status s = wait(req); !s.ok()) return Error{s.message()};
      r.wrong = 0;
      for (std::size_t i = 0; i < gpus_.size(); ++i) {
        Result<std::int64_t> w = count_wrong_on(req, i);
        if (!w.ok()) return Error{w.message()};
        r.wrong += *w;
      }
    }
    return r;
  }

  std::vector<TransportRecord> transports() override {
    if (nccl_debug_file_.empty()) return {};
    std::ifstream in(nccl_debug_file_);
    std::ostringstream text;
    text << in.rdbuf();
    return transports_per_peer(parse_nccl_log(text.str()));
  }

  void close_communicator() override {
    for (LocalGpu& g : gpus_) {
      cudaSetDevice(g.device);
      if (g.comm != nullptr && nccl_) {
        if (aborted_) {
          nccl_->comm_abort(g.comm);
        } else {
          nccl_->comm_destroy(g.comm);
        }
      }
      g.comm = nullptr;
      if (g.stream) cudaStreamDestroy(g.stream);
      if (g.start) cudaEventDestroy(g.start);
      if (g.stop) cudaEventDestroy(g.stop);
      g.stream = nullptr;
      g.start = g.stop = nullptr;
      g.send.reset();
      g.recv.reset();
      g.counter.reset();
    }
    comms_ready_ = false;
  }

  Result<std::vector<BandwidthRate>> run_bandwidth(const BandwidthRequest& req) override;
  Result<std::vector<GemmRate>> run_gemm(const GemmRequest& req,
                                         std::vector<GpuInfo>& gpus) override;
  Result<std::vector<AttentionRate>> run_attention(const AttentionRequest& req) override;

 private:
  Status ensure_nccl() {
    if (nccl_) return Status::Ok();
    Result<NcclApi> api = load_nccl();
    if (!api.ok()) return Error{api.message()};
    nccl_ = *api;
    return Status::Ok();
  }
  Status ensure_cublas() {
    if (cublas_) return Status::Ok();
    Result<CublasLtApi> api = load_cublaslt();
    if (!api.ok()) return Error{api.message()};
    cublas_ = *api;
    return Status::Ok();
  }

  // Enqueues launch number `iter` of one collective on every local GPU (one NCCL group). Its
  // buffers start `iter mod steps` sizes in, steps = buffer / size (nccl-tests' startColl:
  // "change offset for each iteration so that we avoid cache effects"); in place, rank r sends
  // from / receives into its slot of the receive buffer (nccl-tests' *InplaceOffset).
  Status launch(const CollectiveRequest& req, int iter) {
    const NcclApi& n = *nccl_;
    const CollectiveShape& sh = req.shape;
    const std::size_t chunk = sh.count * sizeof(float);
    const std::size_t total = std::max(sh.send_bytes, sh.recv_bytes);
    const std::size_t steps = total > 0 ? std::max<std::size_t>(buffer_bytes_ / total, 1) : 1;
    const std::size_t shift = total * (static_cast<std::size_t>(iter) % steps);
    n.group_start();
    for (std::size_t i = 0; i < gpus_.size(); ++i) {
      LocalGpu& g = gpus_[i];
      const int rank = first_rank_ + static_cast<int>(i);
      cudaSetDevice(g.device);
      char* sptr = req.in_place ? g.recv.bytes() + shift + rank * sh.in_place_send_offset_bytes
                                : g.send.bytes() + shift;
      char* rptr = g.recv.bytes() + shift + (req.in_place ? rank * sh.in_place_recv_offset_bytes : 0);
      ncclResult_t r = ncclSuccess;
      switch (req.op) {
        case CollectiveOp::kAllReduce:
          r = n.all_reduce(sptr, rptr, sh.count, ncclFloat, ncclSum, g.comm, g.stream);
          break;
        case CollectiveOp::kAllGather:
          r = n.all_gather(sptr, rptr, sh.count, ncclFloat, g.comm, g.stream);
          break;
        case CollectiveOp::kReduceScatter:
          r = n.reduce_scatter(sptr, rptr, sh.count, ncclFloat, ncclSum, g.comm, g.stream);
          break;
        case CollectiveOp::kBroadcast:
          r = n.broadcast(sptr, rptr, sh.count, ncclFloat, req.root, g.comm, g.stream);
          break;
        case CollectiveOp::kAllToAll:  // grouped send/recv, as nccl-tests before ncclAlltoAll
          n.group_start();
          for (int p = 0; p < world_size_ && r == ncclSuccess; ++p) {
            r = n.send(sptr + p * chunk, sh.count, ncclFloat, p, g.comm, g.stream);
            if (r == ncclSuccess) r = n.recv(rptr + p * chunk, sh.count, ncclFloat, p, g.comm, g.stream);
          }
          if (ncclResult_t e = n.group_end(); r == ncclSuccess) r = e;
          break;
        case CollectiveOp::kSendRecv:
          n.group_start();
          r = n.send(sptr, sh.count, ncclFloat, (rank + 1) % world_size_, g.comm, g.stream);
          if (r == ncclSuccess) {
            r = n.recv(rptr, sh.count, ncclFloat, (rank - 1 + world_size_) % world_size_, g.comm, g.stream);
          }
          if (ncclResult_t e = n.group_end(); r == ncclSuccess) r = e;
          break;
      }
      if (r != ncclSuccess) {
        n.group_end();
        return Error{req.label + ": " + n.error_string(r)};
      }
    }
    if (ncclResult_t r = n.group_end(); r != ncclSuccess) {
      return Error{req.label + ": ncclGroupEnd: " + n.error_string(r)};
    }
    return Status::Ok();
  }

  // Waits for every local stream under the watchdog (nccl-tests' testStreamSynchronize).
  Status wait(const CollectiveRequest& req) {
    auto poll = [&]() -> PollResult {
      bool all_done = true;
      for (LocalGpu& g : gpus_) {
        cudaSetDevice(g.device);
        cudaError_t e = cudaStreamQuery(g.stream);
        if (e == cudaErrorNotReady) {
          all_done = false;
          ncclResult_t async = ncclSuccess;
          nccl_->comm_get_async_error(g.comm, &async);
          if (async != ncclSuccess) return {PollState::kFailed, nccl_->error_string(async)};
        } else if (e != cudaSuccess) {
          return {PollState::kFailed, cudaGetErrorString(e)};
        }
      }
      return {all_done ? PollState::kDone : PollState::kPending, ""};
    };
    auto abort = [&] {
      aborted_ = true;
      for (LocalGpu& g : gpus_) nccl_->comm_abort(g.comm);
      for (LocalGpu& g : gpus_) g.comm = nullptr;
    };
    return wait_with_watchdog(poll, abort, req.timeout_s, req.label, 0);
  }

  // Poisons the output and writes the exact inputs of GPU i for the check launch.
  Status prepare_check(const CollectiveRequest& req, std::size_t i) {
    LocalGpu& g = gpus_[i];
    const CollectiveShape& sh = req.shape;
    const int rank = first_rank_ + static_cast<int>(i);
    CS_CUDA(cudaSetDevice(g.device));
    const float nan = std::nanf("");
    float* recv = g.recv.as<float>();
    const std::size_t send_elems = sh.send_bytes / sizeof(float);
    const std::size_t recv_elems = sh.recv_bytes / sizeof(float);
    if (!req.in_place) {
      fill_value(recv, recv_elems, nan, g.stream);
      fill_pattern(g.send.as<float>(), send_elems, 0, rank, g.stream);
    } else {
      fill_value(recv, std::max(send_elems, recv_elems), nan, g.stream);
      if (req.op == CollectiveOp::kAllGather) {
        fill_pattern(recv + rank * sh.count, sh.count, 0, rank, g.stream);
      } else {
        fill_pattern(recv, send_elems, 0, rank, g.stream);
      }
    }
    CS_CUDA(cudaMemsetAsync(g.counter.ptr, 0, sizeof(unsigned long long), g.stream));
    CS_CUDA(cudaGetLastError());
    CS_CUDA(cudaStreamSynchronize(g.stream));
    return Status::Ok();
  }

  Result<std::int64_t> count_wrong_on(const CollectiveRequest& req, std::size_t i) {
    LocalGpu& g = gpus_[i];
    const CollectiveShape& sh = req.shape;
    const int rank = first_rank_ + static_cast<int>(i);
    CS_CUDA(cudaSetDevice(g.device));
    const float* out = g.recv.as<float>();
    std::size_t n = sh.recv_bytes / sizeof(float);
    if (req.in_place && req.op == CollectiveOp::kReduceScatter) out += rank * sh.count;
    CheckMode mode = CheckMode::kAllReduce;
    switch (req.op) {
      case CollectiveOp::kAllReduce: mode = CheckMode::kAllReduce; break;
      case CollectiveOp::kAllGather: mode = CheckMode::kAllGather; break;
      case CollectiveOp::kReduceScatter: mode = CheckMode::kReduceScatter; break;
      case CollectiveOp::kAllToAll: mode = CheckMode::kAllToAll; break;
      case CollectiveOp::kBroadcast: mode = CheckMode::kBroadcast; break;
      case CollectiveOp::kSendRecv: mode = CheckMode::kSendRecv; break;
    }
    count_wrong(out, n, mode, rank, world_size_, sh.count, req.root,
                g.counter.as<unsigned long long>(), g.stream);
    CS_CUDA(cudaGetLastError());
    unsigned long long wrong = 0;
    CS_CUDA(cudaMemcpyAsync(&wrong, g.counter.ptr, sizeof wrong, cudaMemcpyDeviceToHost, g.stream));
    CS_CUDA(cudaStreamSynchronize(g.stream));
    return static_cast<std::int64_t>(wrong);
  }

  std::vector<LocalGpu> gpus_;
  std::unique_ptr<NvmlProbe> nvml_;
  std::string nvml_error_;
  std::string nccl_debug_file_;
  std::optional<NcclApi> nccl_;
  std::optional<CublasLtApi> cublas_;
  int world_size_ = 0, first_rank_ = 0;
  std::uint64_t buffer_bytes_ = 0;  // each send and receive buffer
  bool comms_ready_ = false, aborted_ = false;
};

// ---- copy bandwidth ----

// Times one kind of copy: untimed copies for req.warmup_s (an idle GPU starts at low clocks; one
// copy right after other work read 11% low once, validate/NOTES.md), then batches of at least
// ~2 ms of copies until req.seconds and req.iters batches; NVML samples `bus_id` meanwhile.
// `counted_bytes` per copy over the median batch's time per copy gives r.GBps.
Result<BandwidthRate> time_copy(const std::function<Status()>& copy, cudaStream_t st,
                                const BandwidthRequest& req, double counted_bytes,
                                const NvmlProbe* nvml, const std::string& bus_id, BandwidthRate r) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const Clock::time_point warm_start = Clock::now();
  double one_copy_s = 0;
  do {
    const Clock::time_point t = Clock::now();
    if (Status s = copy(); !s.ok()) return Error{s.message()};
    CS_CUDA(cudaStreamSynchronize(st));
    one_copy_s = since(t);
  } while (since(warm_start) < req.warmup_s);
  r.warmup_s = since(warm_start);
  r.copies_per_batch = std::max(1, static_cast<int>(std::ceil(2e-3 / std::max(one_copy_s, 1e-7))));

  std::atomic<bool> stop{false};
  std::vector<HealthSample> samples;
  std::thread sampler;
  if (nvml != nullptr) {
    sampler = std::thread([&] {
      while (!stop) {
        samples.push_back(nvml->sample(bus_id));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  std::vector<double> batches;
  Result<double> t = time_batches(st, copy, r.copies_per_batch, req.seconds, std::max(req.iters, 1), &batches);
  stop = true;
  if (sampler.joinable()) sampler.join();
  if (!t.ok()) return Error{t.message()};
  const auto [fastest, slowest] = std::minmax_element(batches.begin(), batches.end());
  r.GBps = counted_bytes / *t / 1e9;
  r.GBps_min = counted_bytes / *slowest / 1e9;
  r.GBps_max = counted_bytes / *fastest / 1e9;
  r.batches = static_cast<int>(batches.size());
  std::uint64_t mask = 0;
  for (const HealthSample& h : samples) {
    mask |= h.throttle_mask;
    if (h.sm_clock_MHz > 0 && (r.sm_clock_min_MHz == 0 || h.sm_clock_MHz < r.sm_clock_min_MHz)) {
      r.sm_clock_min_MHz = h.sm_clock_MHz;
    }
    if (h.memory_clock_MHz > 0 && (r.memory_clock_min_MHz == 0 || h.memory_clock_MHz < r.memory_clock_min_MHz)) {
      r.memory_clock_min_MHz = h.memory_clock_MHz;
    }
  }
  r.throttle_reasons = throttle_reason_names(mask);
  return r;
}

BandwidthRate copy_kind(int rank, const char* kind, int peer, std::uint64_t bytes) {
  BandwidthRate r;
  r.rank = rank;
  r.kind = kind;
  r.peer = peer;
  r.bytes = bytes;
  return r;
}

Result<std::vector<BandwidthRate>> CudaBackend::run_bandwidth(const BandwidthRequest& req) {
  std::vector<BandwidthRate> out;
  const NvmlProbe* nvml = nvml_.get();
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const int dev = gpus_[i].device;
    const int rank = static_cast<int>(i);
    DeviceBuffer a, b;
    if (Status s = a.allocate(dev, req.hbm_bytes); !s.ok()) return Error{s.message()};
    if (Status s = b.allocate(dev, req.hbm_bytes); !s.ok()) return Error{s.message()};
    cudaStream_t st;
    CS_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    fill_random(a.ptr, req.hbm_bytes / 4, RandomType::kFp32, 1, st);
    auto copy_d2d = [&]() -> Status {
      CS_CUDA(cudaMemcpyAsync(b.ptr, a.ptr, req.hbm_bytes, cudaMemcpyDeviceToDevice, st));
      return Status::Ok();
    };
    Result<BandwidthRate> hbm = time_copy(copy_d2d, st, req, 2.0 * req.hbm_bytes, nvml, gpus_[i].bus_id,
                                          copy_kind(rank, "hbm_copy", -1, req.hbm_bytes));
    if (!hbm.ok()) return Error{hbm.message()};
    out.push_back(*hbm);

    void* host = nullptr;
    CS_CUDA(cudaMallocHost(&host, req.host_bytes));
    std::memset(host, 1, req.host_bytes);
    const std::uint64_t host_copy = std::min<std::uint64_t>(req.host_bytes, req.hbm_bytes);
    for (bool to_device : {true, false}) {
      auto copy = [&]() -> Status {
        CS_CUDA(cudaMemcpyAsync(to_device ? a.ptr : host, to_device ? host : a.ptr, host_copy,
                                to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, st));
        return Status::Ok();
      };
      Result<BandwidthRate> h = time_copy(copy, st, req, static_cast<double>(host_copy), nvml, gpus_[i].bus_id,
                                          copy_kind(rank, to_device ? "h2d" : "d2h", -1, host_copy));
      if (!h.ok()) {
        cudaFreeHost(host);
        return Error{h.message()};
      }
      out.push_back(*h);
    }
    cudaFreeHost(host);
    cudaStreamDestroy(st);
  }
  // Peer to peer between every ordered pair of local GPUs, one way and both ways at once.
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    for (std::size_t j = 0; j < gpus_.size(); ++j) {
      if (i == j) continue;
      const int di = gpus_[i].device, dj = gpus_[j].device;
      int can = 0;
      cudaDeviceCanAccessPeer(&can, di, dj);
      if (!can) continue;
      cudaSetDevice(di);
      cudaDeviceEnablePeerAccess(dj, 0);
      cudaSetDevice(dj);
      cudaDeviceEnablePeerAccess(di, 0);
      cudaGetLastError();  // "already enabled" is fine
      DeviceBuffer src_i, dst_j, src_j, dst_i;
      for (auto [buf, dev] : {std::pair{&src_i, di}, {&dst_j, dj}, {&src_j, dj}, {&dst_i, di}}) {
        if (Status s = buf->allocate(dev, req.p2p_bytes); !s.ok()) return Error{s.message()};
      }
      cudaStream_t si, sj;
      cudaSetDevice(di);
      CS_CUDA(cudaStreamCreateWithFlags(&si, cudaStreamNonBlocking));
      cudaSetDevice(dj);
      CS_CUDA(cudaStreamCreateWithFlags(&sj, cudaStreamNonBlocking));
      auto one_way = [&]() -> Status {
        CS_CUDA(cudaMemcpyPeerAsync(dst_j.ptr, dj, src_i.ptr, di, req.p2p_bytes, si));
        return Status::Ok();
      };
      cudaSetDevice(di);  // the timing events must belong to si's device
      Result<BandwidthRate> t1 =
          time_copy(one_way, si, req, static_cast<double>(req.p2p_bytes), nvml, gpus_[i].bus_id,
                    copy_kind(static_cast<int>(i), "p2p", static_cast<int>(j), req.p2p_bytes));
      if (!t1.ok()) return Error{t1.message()};
      out.push_back(*t1);
      if (i < j) {
        // Both directions at once: sj waits for an event on si, so both copies start together.
        cudaEvent_t go, done_j;
        cudaSetDevice(di);
        cudaEventCreate(&go);
        cudaSetDevice(dj);
        cudaEventCreate(&done_j);
        auto both = [&]() -> Status {
          cudaSetDevice(di);
          CS_CUDA(cudaEventRecord(go, si));
          cudaSetDevice(dj);
          CS_CUDA(cudaStreamWaitEvent(sj, go, 0));
          CS_CUDA(cudaMemcpyPeerAsync(dst_i.ptr, di, src_j.ptr, dj, req.p2p_bytes, sj));
          CS_CUDA(cudaEventRecord(done_j, sj));
          cudaSetDevice(di);
          CS_CUDA(cudaMemcpyPeerAsync(dst_j.ptr, dj, src_i.ptr, di, req.p2p_bytes, si));
          CS_CUDA(cudaStreamWaitEvent(si, done_j, 0));
          return Status::Ok();
        };
        cudaSetDevice(di);
        Result<BandwidthRate> t2 = time_copy(
            both, si, req, 2.0 * req.p2p_bytes, nvml, gpus_[i].bus_id,
            copy_kind(static_cast<int>(i), "p2p_bidirectional", static_cast<int>(j), req.p2p_bytes));
        if (!t2.ok()) return Error{t2.message()};
        out.push_back(*t2);
        cudaEventDestroy(go);
        cudaEventDestroy(done_j);
      }
      cudaStreamDestroy(si);
      cudaStreamDestroy(sj);
    }
  }
  return out;
}

// ---- GEMM ----

struct GemmTypes {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  RandomType random;
  std::size_t ab_bytes, cd_bytes;
};

std::optional<GemmTypes> gemm_types(const std::string& p) {
  if (p == "bf16") return GemmTypes{CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, RandomType::kBf16, 2, 2};
  if (p == "fp16") return GemmTypes{CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, RandomType::kFp16, 2, 2};
  if (p == "tf32") return GemmTypes{CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, RandomType::kFp32, 4, 4};
  if (p == "fp8") return GemmTypes{CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, RandomType::kFp8E4M3, 1, 2};
  return std::nullopt;
}

// One D = A^T B plan (column-major, TN) with cuBLASLt's first heuristic algorithm.
class GemmPlan {
 public:
  GemmPlan(const CublasLtApi& api, cublasLtHandle_t h) : api_(api), handle_(h) {}
  ~GemmPlan() {
    if (pref_) api_.pref_destroy(pref_);
    for (auto* l : {a_, b_, d_}) {
      if (l) api_.layout_destroy(l);
    }
    if (op_) api_.desc_destroy(op_);
  }
  Status init(const GemmTypes& t, int m, int n, int k, std::size_t workspace_bytes) {
    auto ok = [&](cublasStatus_t s, const char* what) -> Status {
      if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
      return Error{std::string(what) + " failed with cublasStatus " + std::to_string(s)};
    };
    if (Status s = ok(api_.desc_create(&op_, t.compute, CUDA_R_32F), "cublasLtMatmulDescCreate"); !s.ok()) return s;
    const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    api_.desc_set(op_, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a);
    api_.desc_set(op_, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b);
    if (Status s = ok(api_.layout_create(&a_, t.ab, k, m, k), "layout A"); !s.ok()) return s;
    if (Status s = ok(api_.layout_create(&b_, t.ab, k, n, k), "layout B"); !s.ok()) return s;
    if (Status s = ok(api_.layout_create(&d_, t.cd, m, n, m), "layout D"); !s.ok()) return s;
    if (Status s = ok(api_.pref_create(&pref_), "preference"); !s.ok()) return s;
    const std::uint64_t ws = workspace_bytes;
    api_.pref_set(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    int found = 0;
    cublasStatus_t s = api_.heuristic(handle_, op_, a_, b_, d_, d_, pref_, 1, &algo_, &found);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      return Error{"cuBLASLt has no algorithm for this precision and shape (status " +
                   std::to_string(s) + ")"};
    }
    workspace_bytes_ = workspace_bytes;
    return Status::Ok();
  }
  Status run(const void* a, const void* b, void* d, void* workspace, cudaStream_t st) {
    const float alpha = 1.f, beta = 0.f;
    cublasStatus_t s = api_.matmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_,
                                   &algo_.algo, workspace, workspace_bytes_, st);
    if (s != CUBLAS_STATUS_SUCCESS) return Error{"cublasLtMatmul: status " + std::to_string(s)};
    return Status::Ok();
  }

 private:
  const CublasLtApi& api_;
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  std::size_t workspace_bytes_ = 0;
};

// Everything one GPU's GEMM thread measures; `burning` tells the sampler when to record.
struct GemmWork {
  int local = 0, device = 0;
  std::vector<GemmRate> rates;
  std::string error;
  std::atomic<bool> burning{false};
};

void gemm_on_gpu(const CublasLtApi& api, const GemmRequest& req, GemmWork& w) {
  auto fail = [&](const std::string& m) { w.error = "gpu " + std::to_string(w.local) + ": " + m; };
  if (cudaSetDevice(w.device) != cudaSuccess) return fail("cudaSetDevice failed");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, w.device);
  const bool has_fp8 = prop.major * 10 + prop.minor >= 89;
  cublasLtHandle_t h = nullptr;
  if (api.create(&h) != CUBLAS_STATUS_SUCCESS) return fail("cublasLtCreate failed");
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  constexpr std::size_t kWorkspace = 64ull << 20;
  DeviceBuffer ws, a, b, d;
  std::size_t max_elems_ab = 0, max_elems_d = 0;
  for (const auto& s : req.shapes) {
    max_elems_ab = std::max(max_elems_ab, static_cast<std::size_t>(std::max(s[0], s[1])) * s[2]);
    max_elems_d = std::max(max_elems_d, static_cast<std::size_t>(s[0]) * s[1]);
  }
  if (!ws.allocate(w.device, kWorkspace).ok() || !a.allocate(w.device, max_elems_ab * 4).ok() ||
      !b.allocate(w.device, max_elems_ab * 4).ok() || !d.allocate(w.device, max_elems_d * 4).ok()) {
    api.destroy(h);
    return fail("cannot allocate GEMM buffers");
  }
  auto measure = [&](const std::string& precision, const std::array<int, 3>& s, bool burn,
                     double seconds) -> std::string {
    const std::optional<GemmTypes> t = gemm_types(precision);
    if (!t) return "unknown precision " + precision;
    fill_random(a.ptr, max_elems_ab, t->random, 11, st);
    fill_random(b.ptr, max_elems_ab, t->random, 12, st);
    GemmPlan plan(api, h);
    if (Status init = plan.init(*t, s[0], s[1], s[2], kWorkspace); !init.ok()) return init.message();
    auto launch = [&]() { return plan.run(a.ptr, b.ptr, d.ptr, ws.ptr, st); };
    // Warm-up, and a batch size of about 20 ms so launch gaps vanish.
    for (int i = 0; i < 3; ++i) {
      if (Status r = launch(); !r.ok()) return r.message();
    }
    Result<double> one = time_batches(st, launch, 1, 0, 3, nullptr);
    if (!one.ok()) return one.message();
    const int per_batch = std::max(1, static_cast<int>(0.02 / std::max(*one, 1e-7)));
    std::vector<double> batches;
    if (burn) w.burning = true;
    Result<double> med = time_batches(st, launch, per_batch, seconds, 3, &batches);
    w.burning = false;
    if (!med.ok()) return med.message();
    const double flops = 2.0 * s[0] * s[1] * s[2];
    GemmRate r;
    r.rank = w.local;
    r.precision = precision;
    r.m = s[0];
    r.n = s[1];
    r.k = s[2];
    r.sustained = burn;
    r.iterations = static_cast<std::int64_t>(batches.size()) * per_batch;
    double total = 0, slowest = 0;
    for (double x : batches) {
      total += x * per_batch;
      slowest = std::max(slowest, x);
    }
    r.seconds = total;
    r.tflops = burn ? flops * r.iterations / total / 1e12 : flops / *med / 1e12;
    r.tflops_min = flops / slowest / 1e12;
    w.rates.push_back(r);
    return "";
  };
  for (const std::string& p : req.precisions) {
    if (p == "fp8" && !has_fp8) continue;  // cuBLASLt fp8 needs compute capability 8.9+
    for (const auto& s : req.shapes) {
      if (std::string e = measure(p, s, false, req.seconds_per_shape); !e.empty()) {
        fail(p + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
             std::to_string(s[2]) + ": " + e);
        break;
      }
    }
  }
  if (req.burn_seconds > 0 && w.error.empty()) {
    std::array<int, 3> largest = req.shapes.front();
    for (const auto& s : req.shapes) {
      if (1.0 * s[0] * s[1] * s[2] > 1.0 * largest[0] * largest[1] * largest[2]) largest = s;
    }
    if (std::string e = measure("bf16", largest, true, req.burn_seconds); !e.empty()) {
      fail("bf16 burn: " + e);
    }
  }
  cudaStreamDestroy(st);
  api.destroy(h);
}

Result<std::vector<GemmRate>> CudaBackend::run_gemm(const GemmRequest& req,
                                                    std::vector<GpuInfo>& gpus) {
  if (Status s = ensure_cublas(); !s.ok()) return Error{s.message()};
  std::vector<std::unique_ptr<GemmWork>> work;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto w = std::make_unique<GemmWork>();
    w->local = static_cast<int>(i);
    w->device = gpus_[i].device;
    work.push_back(std::move(w));
  }
  // NVML sampler: health under load while each GPU burns.
  std::atomic<bool> stop{false};
  std::vector<std::vector<HealthSample>> samples(gpus_.size());
  std::thread sampler([&] {
    while (!stop) {
      for (std::size_t i = 0; i < gpus_.size() && nvml_; ++i) {
        if (work[i]->burning) samples[i].push_back(nvml_->sample(gpus_[i].bus_id));
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(req.sample_interval_s, 0.05)));
    }
  });
  std::vector<std::thread> threads;
  for (auto& w : work) threads.emplace_back([&, wp = w.get()] { gemm_on_gpu(*cublas_, req, *wp); });
  for (auto& t : threads) t.join();
  stop = true;
  sampler.join();

  std::vector<GemmRate> out;
  std::string errors;
  for (std::size_t i = 0; i < work.size(); ++i) {
    out.insert(out.end(), work[i]->rates.begin(), work[i]->rates.end());
    if (!work[i]->error.empty()) errors += (errors.empty() ? "" : "; ") + work[i]->error;
    if (i >= gpus.size() || samples[i].empty()) continue;
    GpuInfo& g = gpus[i];
    for (const HealthSample& s : samples[i]) {
      g.throttle_mask_during_burn |= s.throttle_mask;
      if (s.sm_clock_MHz > 0 && (g.sm_clock_during_burn_MHz == 0 || s.sm_clock_MHz < g.sm_clock_during_burn_MHz)) {
        g.sm_clock_during_burn_MHz = s.sm_clock_MHz;
      }
      g.max_power_during_burn_W = std::max(g.max_power_during_burn_W, s.power_W);
      g.max_temperature_during_burn_C = std::max(g.max_temperature_during_burn_C, s.temperature_C);
    }
    g.pcie_under_load = samples[i].back().pcie;
    g.throttle_reasons_during_burn = throttle_reason_names(g.throttle_mask_during_burn);
    g.notes.push_back(std::to_string(samples[i].size()) + " NVML samples during the GEMM burn");
  }
  if (!errors.empty() && out.empty()) return Error{errors};
  if (!errors.empty()) {
    // Keep what was measured; the error goes to the notes of this process's first GPU.
    if (!gpus.empty()) gpus[0].notes.push_back("gemm: " + errors);
  }
  return out;
}

// ---- attention ----

float bf16_to_float(std::uint16_t x) {
  const std::uint32_t bits = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// ||got - want|| / ||want|| of a bf16 device tensor against an fp32 device reference; 1e30 when
// got holds a non-finite element (outputs are poisoned with NaN first: an unwritten one shows).
Result<double> relative_error(const void* got_bf16, const float* want_f32, std::size_t n,
                              cudaStream_t st) {
  std::vector<std::uint16_t> got(n);
  std::vector<float> want(n);
  CS_CUDA(cudaMemcpyAsync(got.data(), got_bf16, n * 2, cudaMemcpyDeviceToHost, st));
  CS_CUDA(cudaMemcpyAsync(want.data(), want_f32, n * 4, cudaMemcpyDeviceToHost, st));
  CS_CUDA(cudaStreamSynchronize(st));
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = bf16_to_float(got[i]), y = want[i];
    if (!std::isfinite(x)) return 1e30;
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// The tensors of one attention problem on one GPU: random bf16 inputs (uniform in [-1, 1), a
// fresh seed per problem), the forward's outputs and, with `backward`, dO and the gradients.
struct AttentionBuffers {
  DeviceBuffer q, k, v, o, lse, d_o, delta, dq, dk, dv;
  std::size_t elems = 0;

  Status allocate(int dev, const AttentionShape& s, bool backward, std::uint64_t seed,
                  cudaStream_t st) {
    const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * s.seq;
    elems = rows * s.head_dim;
    for (DeviceBuffer* b : {&q, &k, &v, &o}) {
      if (Status a = b->allocate(dev, elems * 2); !a.ok()) return a;
    }
    if (Status a = lse.allocate(dev, rows * 4); !a.ok()) return a;
    if (backward) {
      for (DeviceBuffer* b : {&d_o, &dq, &dk, &dv}) {
        if (Status a = b->allocate(dev, elems * 2); !a.ok()) return a;
      }
      if (Status a = delta.allocate(dev, rows * 4); !a.ok()) return a;
    }
    fill_random(q.ptr, elems, RandomType::kBf16, seed, st);
    fill_random(k.ptr, elems, RandomType::kBf16, seed + 1, st);
    fill_random(v.ptr, elems, RandomType::kBf16, seed + 2, st);
    if (backward) fill_random(d_o.ptr, elems, RandomType::kBf16, seed + 3, st);
    CS_CUDA(cudaGetLastError());
    return Status::Ok();
  }
  FlashBackwardTensors tensors() {
    FlashBackwardTensors t;
    t.q = q.ptr;
    t.k = k.ptr;
    t.v = v.ptr;
    t.o = o.ptr;
    t.d_o = d_o.ptr;
    t.lse = lse.as<float>();
    t.delta = delta.as<float>();
    t.dq = dq.ptr;
    t.dk = dk.ptr;
    t.dv = dv.ptr;
    return t;
  }
};

// One mask's check problem (batch 1, 2 heads, check_seq_len) with its fp32 reference outputs,
// computed once and compared with every variant.
struct AttentionCheck {
  AttentionShape shape;
  AttentionBuffers in;
  DeviceBuffer ref_o, ref_dq, ref_dk, ref_dv, scratch;

  Status prepare(int dev, const AttentionShape& s, bool backward, std::uint64_t seed, cudaStream_t st) {
    shape = s;
    if (Status a = in.allocate(dev, s, backward, seed, st); !a.ok()) return a;
    const std::size_t n = in.elems;
    if (Status a = ref_o.allocate(dev, n * 4); !a.ok()) return a;
    CS_CUDA(reference_attention_forward(in.q.ptr, in.k.ptr, in.v.ptr, ref_o.as<float>(), s, st));
    if (backward) {
      for (DeviceBuffer* b : {&ref_dq, &ref_dk, &ref_dv}) {
        if (Status a = b->allocate(dev, n * 4); !a.ok()) return a;
      }
      if (Status a = scratch.allocate(dev, 2 * n / s.head_dim * 4); !a.ok()) return a;
      CS_CUDA(reference_attention_backward(in.q.ptr, in.k.ptr, in.v.ptr, in.d_o.ptr, ref_dq.as<float>(),
                                           ref_dk.as<float>(), ref_dv.as<float>(), scratch.as<float>(),
                                           s, st));
    }
    CS_CUDA(cudaStreamSynchronize(st));
    return Status::Ok();
  }

  // Relative errors of `variant`: [0] the forward's O, [1] the backward's worst of dQ, dK, dV
  // (-1 without backward), each output poisoned with NaN before its kernel runs.
  Result<std::array<double, 2>> errors(FlashVariant variant, bool backward, cudaStream_t st) {
    const std::size_t n = in.elems;
    std::array<double, 2> e{-1, -1};
    CS_CUDA(cudaMemsetAsync(in.o.ptr, 0xff, n * 2, st));
    CS_CUDA(flash_attention_forward(in.q.ptr, in.k.ptr, in.v.ptr, in.o.ptr, shape, variant, st,
                                    in.lse.as<float>()));
    Result<double> fwd = relative_error(in.o.ptr, ref_o.as<float>(), n, st);
    if (!fwd.ok()) return Error{fwd.message()};
    e[0] = *fwd;
    if (!backward) return e;
    for (DeviceBuffer* b : {&in.dq, &in.dk, &in.dv}) CS_CUDA(cudaMemsetAsync(b->ptr, 0xff, n * 2, st));
    CS_CUDA(flash_attention_backward(in.tensors(), shape, variant, st));
    e[1] = 0;
    for (auto [got, want] : {std::pair{&in.dq, &ref_dq}, {&in.dk, &ref_dk}, {&in.dv, &ref_dv}}) {
      Result<double> r = relative_error(got->ptr, want->as<float>(), n, st);
      if (!r.ok()) return Error{r.message()};
      e[1] = std::max(e[1], *r);
    }
    return e;
  }
};

// Median seconds per call of `launch` over about `seconds` (at least 3 calls) after one untimed.
Result<double> time_launches(const std::function<cudaError_t()>& launch, cudaStream_t st, double seconds) {
  auto run = [&]() -> Status {
    CS_CUDA(launch());
    return Status::Ok();
  };
  if (Status warm = run(); !warm.ok()) return Error{warm.message()};
  return time_batches(st, run, 1, seconds, 3, nullptr);
}

struct OwnedStream {
  cudaStream_t stream = nullptr;
  ~OwnedStream() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

struct AttentionWork {
  int local = 0, device = 0;
  std::vector<AttentionRate> rates;
  std::string error;
};

void attention_on_gpu(const AttentionRequest& req, AttentionWork& w) {
  auto fail = [&](const std::string& m) { w.error = "gpu " + std::to_string(w.local) + ": " + m; };
  cudaSetDevice(w.device);
  OwnedStream owned;
  if (cudaError_t e = cudaStreamCreateWithFlags(&owned.stream, cudaStreamNonBlocking); e != cudaSuccess) {
    return fail(std::string("cudaStreamCreate: ") + cudaGetErrorString(e));
  }
  cudaStream_t st = owned.stream;
  std::int64_t max_seq = 0;
  bool all_128 = req.check_seq_len % 128 == 0;
  for (std::int64_t s : req.seq_lens) {
    max_seq = std::max(max_seq, s);
    all_128 = all_128 && s % 128 == 0;
  }
  const bool backward = req.backward;
  // 1. Correctness of each variant, both masks, forward and backward, against the fp32
  //    references on fresh random data; of the variants within tolerance, the fastest at a
  //    mid-size sequence is used for the sweep, chosen for each pass.
  constexpr double kTolerance = 2e-2;  // bf16 P, dS and outputs: METHOD.md expects 1e-3 .. 1e-2
  AttentionCheck checks[2];
  for (int causal = 0; causal < 2; ++causal) {
    AttentionShape s{1, 2, req.check_seq_len, req.head_dim, causal == 1};
    if (Status p = checks[causal].prepare(w.device, s, backward, 41 + 10 * causal, st); !p.ok()) {
      return fail("attention reference: " + p.message());
    }
  }
  AttentionBuffers big;
  const AttentionShape largest{req.batch, req.heads, static_cast<int>(max_seq), req.head_dim, false};
  if (Status a = big.allocate(w.device, largest, backward, 31, st); !a.ok()) return fail(a.message());
  const AttentionShape probe{req.batch, req.heads, static_cast<int>(std::min<std::int64_t>(max_seq, 16384)),
                             req.head_dim, false};
  // Seconds per call of pass 0 (forward) or 1 (backward, after a forward pass of
  // `forward_variant` that leaves O and lse) of `variant` on the sweep buffers.
  auto time_pass = [&](int pass, FlashVariant variant, FlashVariant forward_variant,
                       const AttentionShape& s, double seconds) -> Result<double> {
    if (pass == 1) {
      CS_CUDA(flash_attention_forward(big.q.ptr, big.k.ptr, big.v.ptr, big.o.ptr, s, forward_variant, st,
                                      big.lse.as<float>()));
    }
    return time_launches(
        [&] {
          return pass == 0 ? flash_attention_forward(big.q.ptr, big.k.ptr, big.v.ptr, big.o.ptr, s, variant, st)
                           : flash_attention_backward(big.tensors(), s, variant, st);
        },
        st, seconds);
  };
  struct Best {
    std::optional<FlashVariant> variant;
    double time_s = 0;
    double error[2] = {-1, -1};  // full, causal
  } best[2];                     // forward, backward
  std::string rejected;
  for (FlashVariant variant : {FlashVariant::kRows128Ldmatrix, FlashVariant::kRows64Ldmatrix,
                               FlashVariant::kRows64Plain}) {
    if (variant == FlashVariant::kRows128Ldmatrix && !all_128) continue;
    double err[2][2];  // [pass][mask]
    for (int causal = 0; causal < 2; ++causal) {
      Result<std::array<double, 2>> e = checks[causal].errors(variant, backward, st);
      if (!e.ok()) return fail(e.message());
      err[0][causal] = (*e)[0];
      err[1][causal] = (*e)[1];
    }
    for (int pass = 0; pass < (backward ? 2 : 1); ++pass) {
      const bool ok = err[0][0] < kTolerance && err[0][1] < kTolerance &&
                      (pass == 0 || (err[1][0] < kTolerance && err[1][1] < kTolerance));
      if (!ok) {
        rejected += std::string(rejected.empty() ? "" : "; ") + (pass ? backward_name(variant) : to_string(variant)) +
                    ": relative error " + std::to_string(err[pass][0]) + " / " + std::to_string(err[pass][1]);
        continue;
      }
      Result<double> t = time_pass(pass, variant, variant, probe, 0);
      if (!t.ok()) return fail(t.message());
      if (!best[pass].variant || *t < best[pass].time_s) {
        best[pass].variant = variant;
        best[pass].time_s = *t;
        best[pass].error[0] = err[pass][0];
        best[pass].error[1] = err[pass][1];
      }
    }
  }
  if (!best[0].variant) return fail("flash attention is wrong in every variant: " + rejected);
  if (backward && !best[1].variant) return fail("flash attention backward is wrong in every variant: " + rejected);
  // 2. The sweep on random data: forward rows, then backward rows (each after a forward pass
  //    that leaves O and lse).
  for (int pass = 0; pass < (backward ? 2 : 1); ++pass) {
    if (pass == 0 && !req.forward) continue;
    const FlashVariant variant = *best[pass].variant;
    for (std::int64_t seq : req.seq_lens) {
      for (int causal = 0; causal < 2; ++causal) {
        if ((causal && !req.causal) || (!causal && !req.full)) continue;
        AttentionShape s{req.batch, req.heads, static_cast<int>(seq), req.head_dim, causal == 1};
        Result<double> t = time_pass(pass, variant, *best[0].variant, s, req.seconds_per_case);
        if (!t.ok()) return fail(t.message());
        AttentionRate r;
        r.rank = w.local;
        r.implementation = pass == 0 ? to_string(variant) : backward_name(variant);
        r.direction = pass == 0 ? "forward" : "backward";
        r.causal = causal == 1;
        r.batch = req.batch;
        r.heads = req.heads;
        r.head_dim = req.head_dim;
        r.seq_len = seq;
        r.time_ms = *t * 1e3;
        r.tflops = (pass == 0 ? attention_forward_flops(s) : attention_backward_flops(s)) / *t / 1e12;
        r.max_rel_error = best[pass].error[causal];
        r.flops_convention = pass == 0 ? "4bhs^2d" : "2.5x forward";
        w.rates.push_back(r);
      }
    }
  }
}

Result<std::vector<AttentionRate>> CudaBackend::run_attention(const AttentionRequest& req) {
  for (std::int64_t s : req.seq_lens) {
    if (s % 64 != 0) return Error{"attention: sequence length " + std::to_string(s) + " is not a multiple of 64"};
  }
  std::vector<std::unique_ptr<AttentionWork>> work;
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto w = std::make_unique<AttentionWork>();
    w->local = static_cast<int>(i);
    w->device = gpus_[i].device;
    threads.emplace_back([&req, wp = w.get()] { attention_on_gpu(req, *wp); });
    work.push_back(std::move(w));
  }
  for (auto& t : threads) t.join();
  std::vector<AttentionRate> out;
  std::string errors;
  for (auto& w : work) {
    out.insert(out.end(), w->rates.begin(), w->rates.end());
    if (!w->error.empty()) errors += (errors.empty() ? "" : "; ") + w->error;
  }
  if (!errors.empty()) return Error{errors};
  return out;
}

}  // namespace
}  // namespace gpu

bool cuda_backend_built() { return true; }

models::Result<std::unique_ptr<GpuBackend>> make_cuda_backend(const std::vector<int>& devices) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    return models::Error{std::string("no usable NVIDIA GPU: cudaGetDeviceCount: ") +
                         (e == cudaSuccess ? "0 devices" : cudaGetErrorString(e))};
  }
  std::vector<int> use = devices;
  if (use.empty()) {
    for (int i = 0; i < count; ++i) use.push_back(i);
  }
  for (int d : use) {
    if (d < 0 || d >= count) {
      return models::Error{"GPU " + std::to_string(d) + " does not exist (" + std::to_string(count) +
                           " visible)"};
    }
  }
  // NCCL_DEBUG=INFO into a file of ours, unless the user chose NCCL_DEBUG: the transport
  // lines come from there. NCCL reads these at its first call, which is still to come.
  std::string debug_file;
  if (std::getenv("NCCL_DEBUG") == nullptr) {
    const char* tmp = std::getenv("TMPDIR");
    debug_file = std::string(tmp && *tmp ? tmp : "/tmp") + "/clustersim-nccl-debug." +
                 std::to_string(::getpid()) + ".log";
    ::setenv("NCCL_DEBUG", "INFO", 1);
    ::setenv("NCCL_DEBUG_FILE", debug_file.c_str(), 1);
  } else if (const char* f = std::getenv("NCCL_DEBUG_FILE"); f != nullptr && std::strchr(f, '%') == nullptr) {
    debug_file = f;
  }
  auto nvml = NvmlProbe::load();
  std::string nvml_error = nvml.ok() ? "" : nvml.message();
  return std::unique_ptr<GpuBackend>(std::make_unique<gpu::CudaBackend>(
      use, nvml.ok() ? std::move(*nvml) : nullptr, nvml_error, debug_file));
}

}  // namespace clustersim::validate
