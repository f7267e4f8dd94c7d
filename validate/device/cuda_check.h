// CHECK(call) for the standalone device probes (ramp_probe.cu, overlap_probe.cu,
// wgrad_accum_probe.cu): a CUDA runtime call that fails prints file:line and the error, and
// exits 1; CHECK_BLAS(call) the same for a cuBLAS call (its status, 0 on success: the probe
// that uses it includes cublas_v2.h). Each probe is built alone (nvcc ... probe.cu); this
// header sits beside them.
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

#define CHECK_BLAS(x)                                                                     \
  do {                                                                                    \
    const int s_ = static_cast<int>(x);                                                   \
    if (s_ != 0) {                                                                        \
      std::fprintf(stderr, "%s:%d: cublas status %d\n", __FILE__, __LINE__, s_);          \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)
