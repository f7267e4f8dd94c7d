// Does a kernel that only a few thread blocks run (as NCCL runs a collective: one block per
// channel) move bytes at a rate that depends on how many bytes it moves? NCCL's all_reduce,
// all_gather, reduce_scatter and 16-channel sendrecv on 2 x H200 run 10-20% below their large-
// size rate between 2 MiB and 512 MiB (scenarios/measurements/nccl-tests-2gpu.txt), while
// broadcast, which the links bound, does not. This probe times a device-to-device copy by
// `blocks` blocks of 512 threads, nccl-tests' way (one warm-up launch, then `iters` back-to-back
// launches between two host clock reads and a synchronize, divided by iters), at each size
// 1 MiB .. max, after an idle gap like nccl-tests' validation between sizes, and again with no
// gap (a busy GPU). One line per (blocks, gap, size): bytes, microseconds, GB/s (read + write).
// Build: nvcc -O3 -arch=sm_90 -o ramp_probe ramp_probe.cu
// Run:   ./ramp_probe [max_bytes=8G] [iters=20]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "cuda_check.h"

// Each block copies a contiguous part, 16 bytes per thread per iteration, 4 in flight.
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t begin = per_block * blockIdx.x;
  const size_t end = begin + per_block < n ? begin + per_block : n;
  for (size_t i = begin + threadIdx.x; i < end; i += 4 * blockDim.x) {
    int4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const size_t j = i + u * blockDim.x;
      if (j < end) v[u] = src[j];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const size_t j = i + u * blockDim.x;
      if (j < end) dst[j] = v[u];
    }
  }
}

__global__ void fill_kernel(int4* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    p[i] = make_int4(int(x), int(x * 7u), int(x * 13u), int(x * 17u));
  }
}

int main(int argc, char** argv) {
  const size_t max_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (8ull << 30);
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  int4 *src = nullptr, *dst = nullptr;
  CHECK(cudaMalloc(&src, max_bytes));
  CHECK(cudaMalloc(&dst, max_bytes));
  fill_kernel<<<1024, 256>>>(src, max_bytes / 16, 12345u);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  // Correctness once: the copy of the largest size matches its source.
  copy_kernel<<<24, 512>>>(src, dst, max_bytes / 16);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  {
    std::vector<int4> a(1 << 16), b(1 << 16);
    const size_t off = (max_bytes / 16) - a.size();
    CHECK(cudaMemcpy(a.data(), src + off, a.size() * 16, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(b.data(), dst + off, b.size() * 16, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].x != b[i].x || a[i].w != b[i].w) {
        std::fprintf(stderr, "copy wrong at %zu\n", i);
        return 1;
      }
  }
  std::printf("# blocks gap_ms bytes time_us GBps\n");
  for (int blocks : {16, 24, 32, 132}) {
    for (int gap_ms : {20, 0}) {
      for (size_t bytes = 1 << 20; bytes <= max_bytes; bytes *= 2) {
        const size_t n = bytes / 16;
        if (gap_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
        copy_kernel<<<blocks, 512>>>(src, dst, n);  // warm-up, as nccl-tests' one
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i) copy_kernel<<<blocks, 512>>>(src, dst, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
            iters;
        std::printf("%d %d %zu %.2f %.1f\n", blocks, gap_ms, bytes, us, 2.0 * bytes / us / 1e3);
      }
    }
  }
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  return 0;
}
