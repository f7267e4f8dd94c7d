// Our own flash-attention forward pass (FlashAttention-2 scheme: Dao 2023, arXiv:2307.08691):
// bf16 Q, K, V, O of shape [batch, heads, seq, head_dim], one thread block per 64 query rows,
// 64-key tiles streamed through shared memory (cp.async, double-buffered), S = QK^T and O = PV
// on the tensor cores with mma.sync m16n8k16 (bf16 in, fp32 accumulate), online softmax in
// registers. Causal masking skips the tiles above the diagonal. It calibrates the simulator's
// long-context attention term on a kernel whose every instruction we know; the reference
// kernel (plain fp32, one thread per query row) checks it.
#pragma once

#include <cuda_runtime_api.h>

namespace clustersim::validate::gpu {

struct AttentionShape {
  int batch = 1, heads = 16, seq = 4096, head_dim = 128;
  bool causal = false;
};

// The kernel's variants: 128 query rows (8 warps) or 64 (4 warps) per block; V fragments read
// with ldmatrix.trans, or with two 16-bit loads per register (the plainest, the fallback).
enum class FlashVariant { kRows128Ldmatrix, kRows64Ldmatrix, kRows64Plain };
const char* to_string(FlashVariant v);

// REQUIRES: seq a multiple of the variant's rows (128 or 64), head_dim in {64, 128}; pointers
// to device memory. Returns the launch error, if any.
cudaError_t flash_attention_forward(const void* q, const void* k, const void* v, void* o,
                                    const AttentionShape& shape, FlashVariant variant,
                                    cudaStream_t stream);

// out (fp32, same layout) = softmax(QK^T / sqrt(d)) V, computed plainly. Slow: checks only.
cudaError_t reference_attention_forward(const void* q, const void* k, const void* v, float* out,
                                        const AttentionShape& shape, cudaStream_t stream);

// Useful FLOPs of one forward pass: 4 * batch * heads * seq^2 * head_dim, halved when causal
// (the convention of the FlashAttention papers and PyTorch's benchmarks).
double attention_forward_flops(const AttentionShape& shape);

}  // namespace clustersim::validate::gpu
