// Small device kernels of the validate backend: the exactly reproducible data of the collective
// checks (every value a small integer, so a float sum is exact in any order), the check that
// counts elements differing from the expected result, poison fills, and random GEMM inputs
// (uniform in [-1, 1), never zero-filled). Launchers are plain functions on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace clustersim::validate::gpu {

// v(rank, i) = ((i * 7 + rank * 13) mod 61) - 30: integers in [-30, 30]; sums over up to
// 2^18 ranks stay below 2^24, so float addition is exact whatever the order.
void fill_pattern(float* dst, std::size_t n, std::size_t first_index, int rank, cudaStream_t s);
void fill_value(float* dst, std::size_t n, float value, cudaStream_t s);

// What the output element i of a rank must hold, per collective (count = the NCCL count).
enum class CheckMode { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

// Adds to *wrong the number of elements of got[0, n) that differ from the expected value.
void count_wrong(const float* got, std::size_t n, CheckMode mode, int rank, int nranks,
                 std::size_t count, int root, unsigned long long* wrong, cudaStream_t s);

enum class RandomType { kBf16, kFp16, kFp32, kFp8E4M3 };
// Uniform values in [-1, 1) from a counter-based hash of (seed, index).
void fill_random(void* dst, std::size_t n, RandomType type, std::uint64_t seed, cudaStream_t s);

}  // namespace clustersim::validate::gpu
