// A GpuBackend without a GPU, for tests of the runner, the MPI plumbing, the measurement file
// and the CLI: collectives "take" latency + bytes x busbw-factor / bandwidth (so busbw tends to
// link_GBps), GEMM and copies report fixed rates, and it can be told to hang on one collective
// (the watchdog must abort it) or to report wrong elements. Sleeps for real only when asked.
#pragma once

#include <string>

#include "validate/gpu_backend.h"

namespace clustersim::validate {

struct FakeBackendOptions {
  int gpus = 1;                 // local GPUs this process pretends to drive
  double link_GBps = 100;       // bus bandwidth the collectives reach at large sizes
  double latency_us = 10;       // per collective launch
  std::int64_t wrong_elements = 0;  // reported by every checked collective
  std::string hang_op;          // hang on this op ("all_reduce") ...
  std::uint64_t hang_size_bytes = 0;  // ... at this size column (0: any size)
  double sleep_per_collective_s = 0;  // real wall time spent in each run_collective
  double gemm_tflops = 700;
  std::string gpu_name = "Fake GPU";
};

class FakeBackend final : public GpuBackend {
 public:
  explicit FakeBackend(FakeBackendOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "fake"; }
  int local_gpu_count() const override { return options_.gpus; }
  Versions versions() override;
  std::vector<GpuInfo> identify() override;
  models::Result<std::string> new_communicator_id() override;
  models::Status init_communicator(const std::string& id, int world_size, int first_rank,
                                   std::uint64_t max_buffer_bytes) override;
  models::Result<CollectiveResult> run_collective(const CollectiveRequest& request) override;
  std::vector<TransportRecord> transports() override;
  void close_communicator() override { initialized_ = false; }
  models::Result<std::vector<GemmRate>> run_gemm(const GemmRequest& request,
                                                 std::vector<GpuInfo>& gpus) override;
  models::Result<std::vector<BandwidthRate>> run_bandwidth(
      const BandwidthRequest& request) override;
  models::Result<std::vector<AttentionRate>> run_attention(
      const AttentionRequest& request) override;

  bool aborted() const { return aborted_; }

 private:
  FakeBackendOptions options_;
  bool initialized_ = false;
  bool aborted_ = false;
  int world_size_ = 0;
  int first_rank_ = 0;
};

// Parses "gpus=2,link_GBps=150,hang_op=all_reduce,hang_size=1048576,sleep=0.01,wrong=3" (the
// CLI's --fake option). Fails naming the unknown key or the bad value.
models::Result<FakeBackendOptions> parse_fake_backend_options(const std::string& spec);

}  // namespace clustersim::validate
