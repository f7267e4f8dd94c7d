// How much does a collective running beside compute slow that compute? A collective kernel holds
// a few SMs (NCCL: one block per channel, 16-32 on NVLink) and moves bytes through HBM while a
// GEMM or a memory-bound kernel runs on the other SMs. This probe runs a foreground loop (a
// cuBLAS bf16 GEMM 8192^3 on random data, or a memory-bound copy over all SMs) alone and beside
// a background kernel launched first on another stream: `blocks` persistent blocks of 512
// threads that only spin on a stop flag (the SMs alone), or copy a 1 GiB buffer round and round
// at full speed or throttled (SMs + HBM traffic as a collective's), and reports the foreground's
// time per launch, its slowdown over alone, and the background's bytes per second (read + write).
// The step model's overlap_compute_slowdown (models/step_model.h) is the slowdown per second of
// concurrent communication: here the background runs for the whole foreground loop, so the
// foreground's slowdown is that figure for this kind of background.
// The copy-engine cases (ce-*) move the same kind of bytes without any SM: a host thread keeps
// 256 MiB device-to-device copies queued on the background stream, plain cudaMemcpyAsync
// (ce-memcpy: the driver picks the engine) or cudaMemcpyBatchAsync with
// cudaMemcpyFlagPreferOverlapWithCompute (ce-batch: a copy engine asked for, as Transformer
// Engine's userbuffers and NCCL's copy-engine collectives use one), until the foreground ends.
// Build: nvcc -O3 -arch=sm_90 -o overlap_probe overlap_probe.cu -lcublas
// Run:   ./overlap_probe [seconds_per_case=1.0]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.h"

// Background: each block copies its slice of src to dst over and over (copy) or only polls the
// flag (spin), until *stop; it counts 16-byte words copied. ns > 0 sleeps that long per round
// of 4 x 512 words to throttle the rate.
__global__ void background(const int4* __restrict__ src, int4* __restrict__ dst, size_t n,
                           int copy, unsigned ns, volatile int* stop, volatile int* started,
                           unsigned long long* words) {
  if (threadIdx.x == 0) atomicAdd((int*)started, 1);
  const size_t per_block = (n + gridDim.x - 1) / gridDim.x;
  const size_t begin = per_block * blockIdx.x;
  const size_t end = begin + per_block < n ? begin + per_block : n;
  unsigned long long done = 0;
  size_t i = begin + threadIdx.x;
  __shared__ int halt;
  for (;;) {
    // One thread reads the flag (host memory, over PCIe) per round.
    if (threadIdx.x == 0) halt = *stop;
    __syncthreads();
    if (halt) break;
    if (copy) {
      for (int r = 0; r < 16; ++r) {
        int4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const size_t j = i + u * blockDim.x;
          v[u] = j < end ? src[j] : make_int4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const size_t j = i + u * blockDim.x;
          if (j < end) {
            dst[j] = v[u];
            ++done;
          }
        }
        i += 4 * blockDim.x;
        if (i >= end) i = begin + threadIdx.x;
      }
      if (ns) __nanosleep(ns);
    } else {
      __nanosleep(2000);
    }
    __syncthreads();
  }
  atomicAdd(words, done);
}

// Foreground memory-bound kernel: a copy over every SM.
__global__ void fg_copy(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void fill(int4* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = (unsigned(i) * 2654435761u) ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    // bf16 pairs with random mantissas and exponents near 1 (no inf/nan): 0x3f80 | low bits.
    const unsigned a = 0x3c003c00u | (x & 0x03ff03ffu) | ((x & 0x80008000u));
    p[i] = make_int4(int(a), int(a ^ 0x01230123u), int(a ^ 0x02100210u), int(a ^ 0x00ff00ffu));
  }
}

struct Case {
  std::string name;
  int blocks;   // 0: alone (or a copy-engine case)
  int copy;     // 1 copy, 0 spin
  unsigned ns;  // throttle
  int engine = 0;  // 1: cudaMemcpyAsync D2D, 2: cudaMemcpyBatchAsync preferring a copy engine
};

// Copy-engine background: 256 MiB copies kept queued (at most 4 in flight) on `stream` until
// *stop; returns the bytes copied and, through seconds, the time from the first copy's start to
// the last one's end (events on the stream).
struct EngineCopies {
  double bytes = 0;
  double seconds = 0;
};
EngineCopies engine_copies(int engine, void* dst, const void* src, cudaStream_t stream,
                           volatile int* stop, volatile int* started) {
  const size_t chunk = size_t(256) << 20;
  std::vector<cudaEvent_t> done(4);
  for (auto& e : done) CHECK(cudaEventCreate(&e));
  cudaEvent_t first, last;
  CHECK(cudaEventCreate(&first));
  CHECK(cudaEventCreate(&last));
  CHECK(cudaEventRecord(first, stream));
  long issued = 0;
  while (!*stop) {
    if (issued >= 4) CHECK(cudaEventSynchronize(done[issued % 4]));
    if (engine == 1) {
      CHECK(cudaMemcpyAsync(dst, src, chunk, cudaMemcpyDeviceToDevice, stream));
    } else {
      void* dsts[1] = {dst};
      const void* srcs[1] = {src};
      size_t sizes[1] = {chunk};
      cudaMemcpyAttributes attr = {};
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      attr.srcLocHint.type = cudaMemLocationTypeDevice;
      attr.srcLocHint.id = 0;
      attr.dstLocHint.type = cudaMemLocationTypeDevice;
      attr.dstLocHint.id = 0;
      attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
      size_t attr_idx[1] = {0};
      CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, attr_idx, 1, stream));
    }
    CHECK(cudaEventRecord(done[issued % 4], stream));
    ++issued;
    if (issued == 2) *started = 1;
  }
  CHECK(cudaEventRecord(last, stream));
  CHECK(cudaEventSynchronize(last));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, first, last));
  for (auto& e : done) CHECK(cudaEventDestroy(e));
  CHECK(cudaEventDestroy(first));
  CHECK(cudaEventDestroy(last));
  return {double(issued) * chunk, ms * 1e-3};
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int N = 8192;
  const size_t mat = size_t(N) * N;  // bf16 elements
  __nv_bfloat16 *A, *B, *C;
  CHECK(cudaMalloc(&A, mat * 2));
  CHECK(cudaMalloc(&B, mat * 2));
  CHECK(cudaMalloc(&C, mat * 2));
  const size_t bg_words = (1ull << 30) / 16, fg_words = (1ull << 30) / 16;
  int4 *bg_src, *bg_dst, *fg_src, *fg_dst;
  CHECK(cudaMalloc(&bg_src, bg_words * 16));
  CHECK(cudaMalloc(&bg_dst, bg_words * 16));
  CHECK(cudaMalloc(&fg_src, fg_words * 16));
  CHECK(cudaMalloc(&fg_dst, fg_words * 16));
  fill<<<1024, 256>>>((int4*)A, mat * 2 / 16, 1);
  fill<<<1024, 256>>>((int4*)B, mat * 2 / 16, 2);
  fill<<<1024, 256>>>(bg_src, bg_words, 3);
  fill<<<1024, 256>>>(fg_src, fg_words, 4);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  int *stop, *started;
  CHECK(cudaHostAlloc(&stop, sizeof(int), cudaHostAllocMapped));
  CHECK(cudaHostAlloc(&started, sizeof(int), cudaHostAllocMapped));
  int *d_stop, *d_started;
  CHECK(cudaHostGetDevicePointer(&d_stop, stop, 0));
  CHECK(cudaHostGetDevicePointer(&d_started, started, 0));
  unsigned long long* words;
  CHECK(cudaMalloc(&words, sizeof(unsigned long long)));

  cudaStream_t fg, bg;
  CHECK(cudaStreamCreateWithFlags(&fg, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&bg, cudaStreamNonBlocking));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, fg));
  const float one = 1, zero = 0;
  auto gemm = [&] {
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, CUDA_R_16BF, N, B,
                            CUDA_R_16BF, N, &zero, C, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  };
  auto copy = [&] { fg_copy<<<sms * 4, 512, 0, fg>>>(fg_src, fg_dst, fg_words); };
  cudaEvent_t e0, e1, b0, b1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  CHECK(cudaEventCreate(&b0));
  CHECK(cudaEventCreate(&b1));

  // Launches per case from a warm-up: about `seconds` of foreground work.
  auto per_launch = [&](auto&& f) {
    for (int i = 0; i < 5; ++i) f();
    CHECK(cudaStreamSynchronize(fg));
    CHECK(cudaEventRecord(e0, fg));
    for (int i = 0; i < 20; ++i) f();
    CHECK(cudaEventRecord(e1, fg));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / 20;
  };
  struct Fg {
    std::string name;
    std::function<void()> run;
    double flops_or_bytes;
    int launches;
  };
  std::vector<Fg> fgs = {{"gemm8192", gemm, 2.0 * N * N * N, 0},
                         {"copy1GiB", copy, 2.0 * fg_words * 16, 0}};
  for (Fg& f : fgs) {
    const double ms = per_launch(f.run);
    f.launches = std::max(20, int(seconds * 1e3 / ms));
  }

  const std::vector<Case> cases = {
      {"alone", 0, 0, 0},          {"spin16", 16, 0, 0},      {"copy16", 16, 1, 0},
      {"copy16-slow", 16, 1, 28000}, {"spin32", 32, 0, 0},      {"copy32", 32, 1, 0},
      {"copy32-slow", 32, 1, 30000}, {"ce-memcpy", 0, 0, 0, 1},  {"ce-batch", 0, 0, 0, 2},
      {"alone-again", 0, 0, 0},
  };
  std::printf("# %d SMs; foreground launches: gemm %d, copy %d; background blocks of 512 threads\n",
              sms, fgs[0].launches, fgs[1].launches);
  std::printf("%-10s %-12s %7s %12s %10s %10s %12s\n", "fg", "case", "blocks", "ms/launch",
              "rate", "slowdown", "bg GB/s");
  for (const Fg& f : fgs) {
    double alone_ms = 0;
    for (const Case& c : cases) {
      *stop = 0;
      *started = 0;
      CHECK(cudaMemset(words, 0, sizeof(unsigned long long)));
      CHECK(cudaDeviceSynchronize());
      EngineCopies ce;
      std::thread engine;
      if (c.engine > 0) {
        engine = std::thread([&] { ce = engine_copies(c.engine, bg_dst, bg_src, bg, stop, started); });
        while (*(volatile int*)started == 0) std::this_thread::yield();
      }
      if (c.blocks > 0) {
        CHECK(cudaEventRecord(b0, bg));
        background<<<c.blocks, 512, 0, bg>>>(bg_src, bg_dst, bg_words, c.copy, c.ns, d_stop,
                                             d_started, words);
        CHECK(cudaGetLastError());
        while (*(volatile int*)started < c.blocks) std::this_thread::yield();
      }
      CHECK(cudaEventRecord(e0, fg));
      for (int i = 0; i < f.launches; ++i) f.run();
      CHECK(cudaEventRecord(e1, fg));
      CHECK(cudaEventSynchronize(e1));
      *(volatile int*)stop = 1;
      double bg_GBps = 0;
      if (c.engine > 0) {
        engine.join();
        bg_GBps = 2.0 * ce.bytes / ce.seconds / 1e9;
      }
      if (c.blocks > 0) {
        CHECK(cudaEventRecord(b1, bg));
        CHECK(cudaEventSynchronize(b1));
        unsigned long long w = 0;
        CHECK(cudaMemcpy(&w, words, sizeof(w), cudaMemcpyDeviceToHost));
        float bms = 0;
        CHECK(cudaEventElapsedTime(&bms, b0, b1));
        bg_GBps = 2.0 * w * 16 / (bms * 1e-3) / 1e9;
      }
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      const double per = ms / f.launches;
      if (c.name == "alone") alone_ms = per;
      const double rate = f.flops_or_bytes / (per * 1e-3) / 1e12;  // TFLOP/s or TB/s
      std::printf("%-10s %-12s %7d %12.4f %10.2f %10.4f %12.1f\n", f.name.c_str(), c.name.c_str(),
                  c.blocks, per, rate, per / alone_ms - 1, bg_GBps);
      std::fflush(stdout);
    }
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
