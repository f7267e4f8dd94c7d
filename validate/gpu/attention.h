// Our own flash attention, forward and backward (FlashAttention-2 scheme: Dao 2023,
// arXiv:2307.08691): bf16 Q, K, V, O, dO, dQ, dK, dV of shape [batch, heads, seq, head_dim],
// fp32 row statistics. Tiles stream through shared memory (cp.async, double-buffered); every
// matrix product runs on the tensor cores with mma.sync m16n8k16 (bf16 in, fp32 accumulate);
// softmax in registers. Causal masking skips the tiles above the diagonal. It calibrates the
// simulator's long-context attention term on kernels whose every instruction we know; plain
// fp32 reference kernels (one thread per row) check them.
#pragma once

#include <cuda_runtime_api.h>

namespace clustersim::validate::gpu {

struct AttentionShape {
  int batch = 1, heads = 16, seq = 4096, head_dim = 128;
  bool causal = false;
};

// The kernels' variants: 128 rows (8 warps) or 64 (4 warps) per block (query rows forward and
// for dQ, key rows for dK/dV); the k-major operand (V, dO, Q, K) read with ldmatrix.trans, or
// with two 16-bit loads per register (the plainest, the fallback).
enum class FlashVariant { kRows128Ldmatrix, kRows64Ldmatrix, kRows64Plain };
const char* to_string(FlashVariant v);
// The same with the backward's scheme: "clustersim-flash-bwd (mma.sync, two passes, ...)".
const char* backward_name(FlashVariant v);

// REQUIRES: seq a multiple of the variant's rows (128 or 64), head_dim in {64, 128}; pointers
// to device memory. When `lse` is given (batch*heads*seq floats) the kernel also writes each
// row's log-sum-exp of the scaled scores in log2 units (log2 sum_j 2^(s_ij log2(e)/sqrt(d))),
// which the backward needs. Returns the launch error, if any.
cudaError_t flash_attention_forward(const void* q, const void* k, const void* v, void* o,
                                    const AttentionShape& shape, FlashVariant variant,
                                    cudaStream_t stream, float* lse = nullptr);

// The backward's tensors: inputs q, k, v, the forward's o and lse, the incoming gradient d_o;
// delta is scratch (batch*heads*seq floats, rowsum(dO * O)); dq, dk, dv are written (bf16).
struct FlashBackwardTensors {
  const void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr, *d_o = nullptr;
  const float* lse = nullptr;
  float* delta = nullptr;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

// Three launches: delta = rowsum(dO * O); dK, dV (one block per key tile, looping over query
// tiles: P recomputed from lse, dV += P^T dO, dP^T = V dO^T, dS = P (dP - delta), dK += dS^T Q);
// dQ (one block per query tile, looping over key tiles: P and dP recomputed, dQ += dS K). The
// second pass recomputes S and dP instead of adding dQ with atomics (as Triton's fused-attention
// tutorial does): 7 matrix products of 2 s^2 d per head instead of the minimal 5.
// REQUIRES: as flash_attention_forward; lse from a forward pass over the same q, k, v.
cudaError_t flash_attention_backward(const FlashBackwardTensors& t, const AttentionShape& shape,
                                     FlashVariant variant, cudaStream_t stream);

// out (fp32, same layout) = softmax(QK^T / sqrt(d)) V, computed plainly. Slow: checks only.
cudaError_t reference_attention_forward(const void* q, const void* k, const void* v, float* out,
                                        const AttentionShape& shape, cudaStream_t stream);

// The exact gradients (fp32) of sum(O * dO) with respect to q, k, v, computed plainly from the
// bf16 inputs (O, the log-sum-exp and delta recomputed in fp32; `row_scratch` holds
// 2 * batch*heads*seq floats). Slow: checks only.
cudaError_t reference_attention_backward(const void* q, const void* k, const void* v,
                                         const void* d_o, float* dq, float* dk, float* dv,
                                         float* row_scratch, const AttentionShape& shape,
                                         cudaStream_t stream);

// Useful FLOPs of one forward pass: 4 * batch * heads * seq^2 * head_dim, halved when causal
// (the convention of the FlashAttention papers and PyTorch's benchmarks).
double attention_forward_flops(const AttentionShape& shape);
// Of one backward pass: 2.5 x the forward's (5 matrix products of 2 s^2 d against the forward's
// 2; FlashAttention-2 paper, section 4.1), whatever the kernel recomputes.
double attention_backward_flops(const AttentionShape& shape);

}  // namespace clustersim::validate::gpu
