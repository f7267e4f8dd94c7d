// The validate run as numbered steps, over a GpuBackend (one process's GPUs) and a Bootstrap
// (the other processes): 1. identity and health, 2. NCCL collective sweeps with nccl-tests'
// columns, 3. transports per peer, 4. copy bandwidths, 5. GEMM rates and the sustained burn,
// 6. attention. Rank 0 gathers every process's part, keeps the Measurement and checkpoints it
// through the MeasurementWriter after every row and section, so a run killed at any point leaves
// a valid partial file. A failing section is recorded in `errors` and the run goes on; a hung
// collective is aborted by the watchdog and ends the sweep (the communicator is gone).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/result.h"
#include "validate/bootstrap.h"
#include "validate/collective_math.h"
#include "validate/gpu_backend.h"
#include "validate/measurement.h"
#include "validate/measurement_writer.h"

namespace clustersim::validate {

struct ValidateOptions {
  // Collective sweep, nccl-tests style: -b 8 -e 8G -f 2, 2 warm-up and 20 timed launches.
  bool collectives = true;
  std::vector<CollectiveOp> ops = all_collective_ops();
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 8ull << 30;
  std::uint64_t step_factor = 2;
  int warmup_iters = 2;
  int iters = 20;
  bool check = true;               // #wrong on exactly reproducible data
  double collective_timeout_s = 120;  // watchdog per collective wait

  bool bandwidth = true;
  BandwidthRequest bandwidth_request;
  bool gemm = true;
  GemmRequest gemm_request;
  bool attention = true;
  AttentionRequest attention_request;

  std::string tool = "clustersim validate";
  std::string tool_version = "0.1.0";
  std::vector<std::string> command_line;
};

// Progress: one short line per finished step or row, for the terminal (tools/ prints it).
using ProgressFn = std::function<void(const std::string& line)>;

// Runs every enabled step. `writer` is used on rank 0 only (may be null elsewhere, or for a
// run that should write nothing). Returns the whole Measurement on rank 0 (complete), this
// process's part elsewhere. Fails only when the run cannot start (no GPU, bad options); section
// failures are recorded in Measurement::errors.
models::Result<Measurement> run_validation(const ValidateOptions& options, GpuBackend& backend,
                                           Bootstrap& bootstrap, MeasurementWriter* writer,
                                           const ProgressFn& progress);

// The settings as strings for RunInfo::options (shown in the file, so a run can be repeated).
std::map<std::string, std::string> describe_options(const ValidateOptions& options);

}  // namespace clustersim::validate
