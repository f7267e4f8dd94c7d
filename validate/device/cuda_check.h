// CHECK(call) for the standalone device probes (ramp_probe.cu, overlap_probe.cu,
// wgrad_accum_probe.cu): a CUDA runtime call that fails prints file:line and the error, and
// exits 1. Each probe is built
// alone (nvcc ... probe.cu); this header sits beside them.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
