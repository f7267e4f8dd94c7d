// The GPU side of validate behind one interface, so that the orchestration (validate_runner.h),
// the MPI plumbing and the measurement file are tested without a GPU (fake_backend.h) and the
// CUDA/NCCL/cuBLAS/NVML code lives only in validate/gpu/. One backend object drives the GPUs of
// one process ("local" GPUs, indexed 0..local_gpu_count()-1); results name GPUs by that local
// index in their `rank` field and the runner turns it into the global rank.
// Not thread-safe; the runner calls it from one thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/result.h"
#include "validate/collective_math.h"
#include "validate/measurement.h"

namespace clustersim::validate {

// One timed collective placement (in-place or out-of-place) of one size on every local GPU.
struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  CollectiveShape shape;  // from collective_shape(op, size, 4, world_size): float elements
  bool in_place = false;
  int root = 0;           // broadcast root (global rank)
  int warmup_iters = 2;   // untimed launches first
  int iters = 20;         // timed back-to-back launches
  bool check = true;      // one more launch on exactly reproducible data, counted for #wrong
  double timeout_s = 60;  // watchdog: per wait, then the communicator is aborted
  std::string label;      // "all_reduce 8 GiB out-of-place", for error messages
};

struct CollectiveResult {
  double time_s = 0;        // per launch: the slowest local GPU's events / iters
  std::int64_t wrong = -1;  // mismatching elements summed over local GPUs; -1 unchecked
};

struct GemmRequest {
  std::vector<std::string> precisions = {"bf16", "fp16", "tf32", "fp8"};
  std::vector<std::array<int, 3>> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}};  // m,n,k
  double seconds_per_shape = 1.0;  // short runs: median of the iterations in this window
  double burn_seconds = 30;        // sustained bf16 on the largest shape; 0 skips it
  double sample_interval_s = 0.5;  // NVML health sampling during the burn
};

// Each copy kind: untimed copies for warmup_s (an idle GPU starts at low clocks), then timed
// batches of copies (each batch at least ~2 ms) until `seconds` and at least `iters` batches;
// the median batch is reported, with the slowest and fastest and NVML's clocks meanwhile.
struct BandwidthRequest {
  std::uint64_t hbm_bytes = 1ull << 30;   // device-to-device copy size
  std::uint64_t host_bytes = 1ull << 30;  // pinned host <-> device copy size
  std::uint64_t p2p_bytes = 1ull << 30;   // GPU <-> GPU copy size
  int iters = 10;                         // at least this many timed batches
  double warmup_s = 0.3;
  double seconds = 0.5;
};

struct AttentionRequest {
  std::vector<std::int64_t> seq_lens = {4096, 8192, 16384, 32768, 65536, 131072};
  int batch = 1, heads = 16, head_dim = 128;  // query and key/value heads (no GQA)
  bool forward = true, backward = true;  // passes to measure (backward: our kernel's gradients)
  bool causal = true, full = true;
  double seconds_per_case = 0.5;  // repeat each case for about this long (median)
  int check_seq_len = 1024;       // compared against a plain reference kernel at this length
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string name() const = 0;  // "cuda" | "fake"
  virtual int local_gpu_count() const = 0;
  virtual Versions versions() = 0;
  // Identity and idle health of every local GPU (rank/host are filled in by the runner).
  virtual std::vector<GpuInfo> identify() = 0;

  // NCCL: process 0 makes the id, every process initialises its local GPUs as ranks
  // first_rank .. first_rank + local_gpu_count() - 1 of world_size, with send and receive
  // buffers of max_buffer_bytes each (the largest CollectiveShape send/recv size to come).
  virtual models::Result<std::string> new_communicator_id() = 0;
  virtual models::Status init_communicator(const std::string& id, int world_size, int first_rank,
                                           std::uint64_t max_buffer_bytes) = 0;
  virtual models::Result<CollectiveResult> run_collective(const CollectiveRequest& request) = 0;
  // Which transport each local rank uses to each peer (from NCCL_DEBUG=INFO output).
  virtual std::vector<TransportRecord> transports() = 0;
  // Destroys the communicators (after the sweep, so GEMM runs on an idle GPU).
  virtual void close_communicator() = 0;

  // GEMM rates; the burn also records health under load (throttle reasons, PCIe link under
  // load, clocks, power, temperature) into `gpus` (this process's identify() result).
  virtual models::Result<std::vector<GemmRate>> run_gemm(const GemmRequest& request,
                                                         std::vector<GpuInfo>& gpus) = 0;
  virtual models::Result<std::vector<BandwidthRate>> run_bandwidth(
      const BandwidthRequest& request) = 0;
  virtual models::Result<std::vector<AttentionRate>> run_attention(
      const AttentionRequest& request) = 0;
};

// The CUDA backend (validate/gpu/), or an error saying that this build has no GPU support
// ("this clustersim was built without GPU support (CUDA not found)") or that a library is
// missing on this machine. `devices`: CUDA ordinals to drive (empty: all visible).
models::Result<std::unique_ptr<GpuBackend>> make_cuda_backend(const std::vector<int>& devices);

// Whether this build has the CUDA backend.
bool cuda_backend_built();

inline constexpr const char* kNoGpuSupportMessage =
    "this clustersim was built without GPU support (CUDA not found)";

}  // namespace clustersim::validate
