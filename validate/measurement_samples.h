// From measurement files to what the feedback loop works on: the calibration fit's plain
// samples, the measured GPU's catalog id, the run's communicator shape, which NCCL algorithms the
// run's environment switched off, and the held-out rows of a cross-validation. Units: SI
// (seconds, bytes, FLOP/s, bytes/s); the file's _us / _GBps / TFLOP/s are converted here.
#pragma once

#include <string>
#include <vector>

#include "models/calibration_fit.h"
#include "models/scenario.h"
#include "validate/measurement.h"

namespace clustersim::validate {

// A measurement file as read, with the SHA-256 of its bytes (what reports cite).
struct MeasurementFile {
  std::string path;
  std::string sha256_hex;
  Measurement data;
};

// Reads, parses and hashes a file. Fails naming the path (unreadable, not JSON, wrong schema).
models::Result<MeasurementFile> load_measurement_file(const std::string& path);
// The same for a file's text already read.
models::Result<MeasurementFile> measurement_from_text(const std::string& path,
                                                      const std::string& text);

// A file's path and its text, read once.
struct FileText {
  std::string path;
  std::string text;
};

// Whether a file's text is nccl-tests' own output rather than a measurement file (JSON).
bool is_nccl_tests_text(std::string_view text);

// NVIDIA/nccl-tests' text output (one or several *_perf logs) as one measurement of the
// scenario's cluster: the data rows of every file (nccl_tests_output.h), the GPUs, hosts and
// ranks of the scenario (GPU ranks fill nodes in order), and NVLS marked off when the scenario's
// scale-up has no switch reduction. A table's op is its "# Collective test starting: X_perf"
// line, else the op named in its file name (all_reduce_perf.txt); its communicator is the
// "#  Rank" lines' count, else a "## ranks: N" comment, else every GPU of the cluster. Fails,
// naming the file, on a file without data lines, without an op, with a "## ranks:" that is not
// a whole number, or with more ranks than the cluster has.
models::Result<MeasurementFile> nccl_tests_measurement(const std::vector<FileText>& logs,
                                                       const models::Scenario& scenario);
// The same, reading the files.
models::Result<MeasurementFile> load_nccl_tests_files(const std::vector<std::string>& paths,
                                                      const models::Scenario& scenario);

// The catalog id of the measured GPUs: every GPU's PCI vendor and device id looked up in the
// catalog (the name is not trusted). Fails when there are no GPUs, an id is unknown, or the
// GPUs are of different models.
models::Result<std::string> measured_gpu_id(const Measurement& m);

// The cluster the file was measured on, as far as it tells: its GPU model (by PCI id), its GPU
// count, one node (the scenario loader's defaults for the rest: NVLink4 for an H200...). Fails
// for a multi-node file (it does not say what the NICs are: give a scenario) or unknown GPUs.
models::Result<models::ClusterConfig> measured_cluster(const Measurement& m);

// Nodes the first `ranks` ranks span (the hosts' rank lists; 1 when the file lists no hosts).
int nodes_of(const Measurement& m, int ranks);

// A sweep row's time in seconds: nccl-tests' out-of-place column, or in-place where only that
// was run; 0 when neither was.
double row_time_s(const CollectiveRow& row);

// NCCL algorithms (names as models::parse_collective_algorithm reads them: "nvls", "ring",
// "tree", "collnet") the run's environment turned off: NCCL_NVLS_ENABLE=0, NCCL_COLLNET_ENABLE=0,
// NCCL_ALGO=Ring (only those listed run) or NCCL_ALGO=^NVLS (those listed do not).
std::vector<std::string> nccl_disabled_algorithms(const Measurement& m);

// Which sweep rows a cross-validation holds out. Per (op, ranks) in size order:
// kEveryOther holds out the 2nd, 4th, ... size; kUpperHalf the larger half of the sizes
// (extrapolation). Indexes match m.collectives.
enum class Holdout { kNone, kEveryOther, kUpperHalf };
std::vector<bool> held_out_rows(const Measurement& m, Holdout holdout);

// The samples of several files (one GPU model), leaving out collective rows where `skip` (one
// vector per file, may be empty) is true and rows that reported wrong elements. Fails when the
// files measured different GPU models.
models::Result<models::CalibrationInput> calibration_input(
    const std::vector<MeasurementFile>& files, const std::vector<std::vector<bool>>& skip = {});

// PyTorch's scaled_dot_product_attention rows of a reference file written on the same GPU by
// validate/device/torch_reference.py ({"device": ..., "sdpa": [{seq_len, causal, direction,
// tflops}]}: bf16, batch 1, 16 heads, head dim 128; backward counted as 2.5 x forward) as
// production attention samples, and the source line for the overlay ("path sha256:... (torch
// T on DEVICE)"). Fails naming the path: unreadable, not JSON, no sdpa rows, a bad row.
struct AttentionReference {
  std::vector<models::AttentionSample> samples;
  std::string source;
};
models::Result<AttentionReference> load_attention_reference(const std::string& path);

}  // namespace clustersim::validate
