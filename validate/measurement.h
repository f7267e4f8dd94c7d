// The measurement file (schema "clustersim.measurements/1", docs/measurement-schema.md): what
// `clustersim validate` measured on one node or one MPI job — host, GPUs with identity and
// health, versions, how it was run, every collective sweep row with nccl-tests' columns, device
// rates (GEMM, HBM, host link, peer-to-peer, attention), NCCL transports per peer, and errors.
// Units are in the field names: bytes, microseconds (_us), GB/s = 1e9 B/s (_GBps), TFLOP/s,
// MHz. Plain value types; the JSON text is produced and parsed in measurement.cc only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/result.h"

namespace clustersim::validate {

inline constexpr std::string_view kMeasurementSchema = "clustersim.measurements/1";

struct HostInfo {
  std::string hostname;
  std::string kernel;     // uname -r
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cpus = 0;
  bool hypervisor = false;  // the "hypervisor" cpu flag: this host is a virtual machine
  std::vector<int> ranks;   // the global ranks whose GPUs live on this host
};

struct PciIdentity {
  std::string bus_id;              // "00000000:18:00.0"
  std::uint32_t vendor_id = 0;     // 0x10de
  std::uint32_t device_id = 0;     // 0x2335 for an H200 SXM
  std::uint32_t subsystem_vendor_id = 0;
  std::uint32_t subsystem_device_id = 0;
  std::uint32_t nvml_pci_device_id = 0;  // NVML's device << 16 | vendor, e.g. 0x233510DE
};

struct PcieLink {
  int gen_current = 0, gen_max = 0;
  int width_current = 0, width_max = 0;
};

struct EccState {
  bool supported = false;
  bool enabled = false, pending_enabled = false;
  std::int64_t volatile_corrected = -1, volatile_uncorrected = -1;    // -1: not reported
  std::int64_t aggregate_corrected = -1, aggregate_uncorrected = -1;
};

struct RowRemapState {
  bool supported = false;
  int corrected_rows = 0, uncorrected_rows = 0;
  bool pending = false, failure = false;
};

// One GPU as NVML, sysfs and the CUDA runtime describe it. Empty / 0 / -1 where a source did
// not answer; `notes` says which query failed and why.
struct GpuInfo {
  int rank = 0;          // global rank that drives it
  std::string host;      // hostname
  int cuda_index = 0;    // CUDA device ordinal in its process
  std::string name;      // "NVIDIA H200"
  std::string uuid;
  std::string catalog_id;  // the catalog GPU whose PCI device id matches ("" if none)
  PciIdentity pci;
  std::string compute_capability;  // "9.0"
  int sm_count = 0;
  std::uint64_t memory_bytes = 0;
  int max_sm_clock_MHz = 0, max_memory_clock_MHz = 0;
  PcieLink pcie_idle;        // read before any load
  PcieLink pcie_under_load;  // read during the GEMM burn
  int nvlink_links = 0, nvlink_active = 0;  // links NVML knows of, and those active
  EccState ecc;
  RowRemapState row_remap;
  std::string virtualization;  // "none" | "passthrough" | "vgpu" | "host_vgpu" | ...
  std::string mig_mode;        // "disabled" | "enabled" | "unsupported"
  // NVML throttle (clock event) reasons seen while the GEMM burn ran: bit names, and the OR
  // of the raw bit masks sampled.
  std::vector<std::string> throttle_reasons_during_burn;
  std::uint64_t throttle_mask_during_burn = 0;
  int sm_clock_during_burn_MHz = 0;  // lowest sampled during the burn
  double max_power_during_burn_W = 0;
  int max_temperature_during_burn_C = 0;
  std::vector<std::string> notes;
};

struct Versions {
  std::string driver;          // "580.159.04"
  int cuda_driver = 0;         // cudaDriverGetVersion, e.g. 13000
  int cuda_runtime = 0;        // cudaRuntimeGetVersion
  std::string nccl;            // "2.28.9" (as the loaded library reports it)
  std::string nccl_library;    // path of the loaded libnccl
  std::string cublas;          // "13.0.0"
};

struct RunInfo {
  std::vector<std::string> command_line;
  std::map<std::string, std::string> environment;  // NCCL_*, CUDA_VISIBLE_DEVICES, ...
  std::string mode;            // "single-process" | "mpi"
  int world_size = 0;          // NCCL ranks (GPUs) in the communicator
  int processes = 1;
  std::string backend;         // "cuda" | "fake"
  std::map<std::string, std::string> options;  // the settings the run used
  std::string started_utc, finished_utc;  // ISO 8601
  double wall_time_s = 0;
};

// One placement (out-of-place or in-place) of one sweep row: nccl-tests' time/algbw/busbw/#wrong.
struct CollectiveTiming {
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::int64_t wrong = -1;  // elements that differ from the exact expected result; -1 unchecked
};

struct CollectiveRow {
  std::string op;  // to_string(CollectiveOp)
  int ranks = 0;
  std::uint64_t size_bytes = 0;  // nccl-tests' size column
  std::uint64_t count = 0;       // nccl-tests' count column
  std::string type;              // "float"
  std::string redop;             // "sum", or "none" for data movement
  int root = -1;                 // broadcast root, -1 where none
  CollectiveTiming out_of_place, in_place;
  // GPUs one host thread drove, launching their kernels one after another each iteration
  // (nccl-tests' "nGpus"; 0: not known, or one per thread as `clustersim validate` runs).
  int gpus_per_thread = 0;
};

struct GemmRate {
  int rank = 0;
  std::string precision;  // "bf16" | "fp16" | "tf32" | "fp8"
  int m = 0, n = 0, k = 0;
  bool sustained = false;  // a burn of `seconds`, not a short median
  double seconds = 0;      // measured wall time of the timed region
  std::int64_t iterations = 0;
  double tflops = 0;       // 2mnk * iterations / seconds / 1e12 (median for short runs)
  double tflops_min = 0;   // slowest window of the burn, shows thermal / power drop
};

// HBM copy, pinned host<->device and peer-to-peer bandwidth: the median of timed batches of
// copies after a time-based warm-up, with the spread and the GPU's clocks while they ran.
struct BandwidthRate {
  int rank = 0;
  std::string kind;   // "hbm_copy" | "h2d" | "d2h" | "p2p" | "p2p_bidirectional"
  int peer = -1;      // the other GPU for p2p
  std::uint64_t bytes = 0;  // per transfer
  double GBps = 0;    // hbm_copy counts bytes read + written; others bytes moved one way (bidir: both)
  // Added with the warm-up (absent in older files: 0 / empty).
  double GBps_min = 0, GBps_max = 0;  // the slowest and fastest batch
  int batches = 0;                    // timed batches (the median is over these)
  int copies_per_batch = 0;
  double warmup_s = 0;                // untimed copies first, for this long
  int sm_clock_min_MHz = 0;           // lowest NVML SM / memory clock sampled while timed; 0 unknown
  int memory_clock_min_MHz = 0;
  std::vector<std::string> throttle_reasons;  // NVML clock-event reasons seen while timed
};

struct AttentionRate {
  int rank = 0;
  std::string implementation;  // "clustersim-flash" | "torch-sdpa" | ...
  std::string direction;       // "forward" | "backward"
  bool causal = false;
  int batch = 0, heads = 0, head_dim = 0;
  std::int64_t seq_len = 0;
  double time_ms = 0;
  double tflops = 0;           // useful FLOPs (causal counts half; backward 2.5 x forward) / time
  double max_rel_error = -1;   // vs. a reference at a small size; -1 not checked (backward: the
                               // largest of dQ, dK, dV)
  // How `tflops` counts: "4bhs^2d" (forward) or "2.5x forward" (backward). Absent in older files.
  std::string flops_convention;
};

// Which transport NCCL chose between two ranks on one channel, from NCCL_DEBUG=INFO.
struct TransportRecord {
  int rank = 0, peer = 0;
  std::string transport;  // "P2P" | "SHM" | "NET/IB" | "NET/Socket" | "COLLNET" | ...
  std::string detail;     // "P2P/CUMEM/read"
  int channels = 0;       // channels seen using it
};

struct SectionError {
  std::string section;  // "collectives", "gemm", ...
  std::string message;
};

struct Measurement {
  std::string schema = std::string(kMeasurementSchema);
  bool complete = false;  // true only once every section finished (or failed with an error)
  std::string tool;       // "clustersim validate" | "clustersim-probe"
  std::string tool_version;
  RunInfo run;
  std::vector<HostInfo> hosts;
  Versions versions;
  std::vector<GpuInfo> gpus;
  std::vector<CollectiveRow> collectives;
  std::vector<GemmRate> gemm;
  std::vector<BandwidthRate> bandwidth;
  std::vector<AttentionRate> attention;
  std::vector<TransportRecord> transports;
  std::vector<std::string> sections_done;  // in the order they finished
  std::vector<SectionError> errors;
};

// The JSON text of `m` (pretty-printed, two-space indent, trailing newline).
std::string to_json_text(const Measurement& m);

// Parses a measurement file's text. `source` names it in errors ("h200.json: ..."). Fails on
// invalid JSON (with line and column), a missing or other schema, or a field of the wrong type,
// naming the JSON path. Unknown keys are kept out (a newer minor writer may add fields).
models::Result<Measurement> parse_measurement(std::string_view text, std::string_view source);

// Reads and parses a file.
models::Result<Measurement> read_measurement_file(const std::string& path);

// Appends the per-rank parts of `part` (hosts, gpus, rates, transports, errors) to `into`:
// how rank 0 merges what the other ranks measured (each sends its part as JSON text).
void append_rank_parts(Measurement& into, const Measurement& part);

}  // namespace clustersim::validate
