// What a measurement file records about the machine and the process around the GPUs: host name,
// kernel, CPU model and whether it is a virtual machine (/proc/cpuinfo's "hypervisor" flag), the
// environment variables that change NCCL / CUDA behaviour, and a UTC timestamp. Linux only.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "validate/measurement.h"

namespace clustersim::validate {

// This host (ranks left empty: the runner fills them).
HostInfo read_host_info();

// Parses /proc/cpuinfo text: the first "model name" and whether any "flags" line has
// "hypervisor". Exposed for tests.
void parse_cpuinfo(std::string_view text, std::string* model_name, bool* hypervisor);

// The variables of this process whose names start with NCCL_, CUDA_, NVIDIA_, CUBLAS,
// NVSHMEM_, TORCH_, UCX_, OMPI_COMM_WORLD, SLURM_JOB or are LD_LIBRARY_PATH.
std::map<std::string, std::string> capture_environment();

// This process's argv as /proc/self/cmdline holds it (empty where that cannot be read).
std::vector<std::string> process_command_line();

// "2026-11-30T12:34:56Z"
std::string utc_now_iso8601();

}  // namespace clustersim::validate
