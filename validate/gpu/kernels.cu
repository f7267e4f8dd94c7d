#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "validate/gpu/kernels.h"

namespace clustersim::validate::gpu {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 * 16 ? (blocks == 0 ? 1 : blocks) : 65536 * 16);
}

__device__ __forceinline__ float pattern(int rank, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13) % 61) - 30);
}

__global__ void fill_pattern_kernel(float* dst, std::size_t n, std::size_t first, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = pattern(rank, first + i);
  }
}

__global__ void fill_value_kernel(float* dst, std::size_t n, float value) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

__global__ void count_wrong_kernel(const float* got, std::size_t n, CheckMode mode, int rank,
                                   int nranks, std::size_t count, int root,
                                   unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float expected = 0;
    switch (mode) {
      case CheckMode::kAllReduce:
        for (int r = 0; r < nranks; ++r) expected += pattern(r, i);
        break;
      case CheckMode::kAllGather:  // chunk j comes from rank j's element i % count
        expected = pattern(static_cast<int>(i / count), i % count);
        break;
      case CheckMode::kReduceScatter:  // this rank's share of everyone's input
        for (int r = 0; r < nranks; ++r) expected += pattern(r, rank * count + i);
        break;
      case CheckMode::kAllToAll:  // chunk p is rank p's chunk for this rank
        expected = pattern(static_cast<int>(i / count), rank * count + i % count);
        break;
      case CheckMode::kBroadcast:
        expected = pattern(root, i);
        break;
      case CheckMode::kSendRecv:  // from the previous rank in the ring
        expected = pattern((rank - 1 + nranks) % nranks, i);
        break;
    }
    local += got[i] != expected;  // NaN poison never equals
  }
  // One atomic per warp.
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffu, local, off);
  if ((threadIdx.x & 31) == 0 && local != 0) atomicAdd(wrong, local);
}

__device__ __forceinline__ float uniform(std::uint64_t seed, std::size_t i) {
  // splitmix64 of (seed, i) -> 24 random bits -> [-1, 1)
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill_random_kernel(void* dst, std::size_t n, RandomType type, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = uniform(seed, i);
    switch (type) {
      case RandomType::kBf16: static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16(v); break;
      case RandomType::kFp16: static_cast<__half*>(dst)[i] = __float2half(v); break;
      case RandomType::kFp32: static_cast<float*>(dst)[i] = v; break;
      case RandomType::kFp8E4M3: static_cast<__nv_fp8_e4m3*>(dst)[i] = __nv_fp8_e4m3(v); break;
    }
  }
}

}  // namespace

void fill_pattern(float* dst, std::size_t n, std::size_t first_index, int rank, cudaStream_t s) {
  fill_pattern_kernel<<<grid_for(n), kThreads, 0, s>>>(dst, n, first_index, rank);
}

void fill_value(float* dst, std::size_t n, float value, cudaStream_t s) {
  fill_value_kernel<<<grid_for(n), kThreads, 0, s>>>(dst, n, value);
}

void count_wrong(const float* got, std::size_t n, CheckMode mode, int rank, int nranks,
                 std::size_t count, int root, unsigned long long* wrong, cudaStream_t s) {
  count_wrong_kernel<<<grid_for(n), kThreads, 0, s>>>(got, n, mode, rank, nranks, count, root,
                                                      wrong);
}

void fill_random(void* dst, std::size_t n, RandomType type, std::uint64_t seed, cudaStream_t s) {
  fill_random_kernel<<<grid_for(n), kThreads, 0, s>>>(dst, n, type, seed);
}

}  // namespace clustersim::validate::gpu
