#include <cuda_bf16.h>

#include <cstdint>

#include "validate/gpu/attention.h"

namespace clustersim::validate::gpu {
namespace {

constexpr int kBlockN = 64;   // keys per tile
constexpr int kPad = 8;       // bf16 elements of padding per shared-memory row (16 bytes)
// Query rows per block: kWarps warps x 16 rows (64 or 128); 128 rows share each K/V tile
// between 8 warps, halving shared-memory loads per FLOP.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// rows x D bf16 tile from global (row stride D) to shared (row stride D + kPad).
template <int D>
__device__ __forceinline__ void load_tile(__nv_bfloat16* dst, const __nv_bfloat16* src, int rows) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int c = threadIdx.x; c < rows * kChunks; c += blockDim.x) {
    const int r = c / kChunks, col = (c % kChunks) * 8;
    cp_async_16(dst + r * (D + kPad) + col, src + static_cast<std::size_t>(r) * D + col);
  }
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t pack_bf16(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  __nv_bfloat162 v(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t load_u32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

template <int D, bool kLdmatrix, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                         const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ o,
                         int seq, bool causal, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kStride = D + kPad;
  constexpr int kBlockM = kWarps * 16;
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* ks = qs + kBlockM * kStride;     // two buffers
  __nv_bfloat16* vs = ks + 2 * kBlockN * kStride;  // two buffers

  // Heaviest causal blocks (most key tiles) first.
  const int qb = gridDim.x - 1 - blockIdx.x;
  const std::size_t head_offset = static_cast<std::size_t>(blockIdx.y) * seq * D;
  const __nv_bfloat16* qg = q + head_offset + static_cast<std::size_t>(qb) * kBlockM * D;
  const __nv_bfloat16* kg = k + head_offset;
  const __nv_bfloat16* vg = v + head_offset;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int tiles = causal ? ((qb + 1) * kBlockM + kBlockN - 1) / kBlockN : seq / kBlockN;

  load_tile<D>(qs, qg, kBlockM);
  load_tile<D>(ks, kg, kBlockN);
  load_tile<D>(vs, vg, kBlockN);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  // This warp's 16 query rows as A fragments, kept in registers for the whole loop.
  uint32_t qa[D / 16][4];
  const int r0 = warp * 16 + g;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const __nv_bfloat16* p0 = qs + r0 * kStride + kk * 16 + 2 * t;
    const __nv_bfloat16* p1 = p0 + 8 * kStride;
    qa[kk][0] = load_u32(p0);
    qa[kk][1] = load_u32(p1);
    qa[kk][2] = load_u32(p0 + 8);
    qa[kk][3] = load_u32(p1 + 8);
  }

  float acc[D / 8][4];
#pragma unroll
  for (int i = 0; i < D / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this thread's partial sums; reduced over the quad at the end
  const int q_row0 = qb * kBlockM + r0, q_row1 = q_row0 + 8;

  for (int j = 0; j < tiles; ++j) {
    const int buf = j & 1;
    const __nv_bfloat16* kt = ks + buf * kBlockN * kStride;
    const __nv_bfloat16* vt = vs + buf * kBlockN * kStride;
    if (j + 1 < tiles) {  // prefetch the next tile into the other buffer
      const std::size_t next = static_cast<std::size_t>(j + 1) * kBlockN * D;
      load_tile<D>(ks + (buf ^ 1) * kBlockN * kStride, kg + next, kBlockN);
      load_tile<D>(vs + (buf ^ 1) * kBlockN * kStride, vg + next, kBlockN);
      cp_async_commit();
    }

    // S = Q K^T for 16 rows x 64 keys.
    float s[kBlockN / 8][4];
#pragma unroll
    for (int nt = 0; nt < kBlockN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int nt = 0; nt < kBlockN / 8; ++nt) {
        const __nv_bfloat16* kp = kt + (nt * 8 + g) * kStride + kk * 16 + 2 * t;
        mma_bf16(s[nt], qa[kk], load_u32(kp), load_u32(kp + 8));
      }
    }

    // Scale to log2 units, mask above the diagonal, online softmax.
    const bool diagonal = causal && (j + 1) * kBlockN > qb * kBlockM;  // tile crosses it
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kBlockN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nt][e] * scale_log2;
        if (diagonal) {
          const int key = j * kBlockN + nt * 8 + 2 * t + (e & 1);
          if (key > (e < 2 ? q_row0 : q_row1)) x = -INFINITY;
        }
        s[nt][e] = x;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], x);
      }
    }
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
      const float new_max = fmaxf(row_max[h], tile_max[h]);
      alpha[h] = exp2f(row_max[h] - new_max);  // 0 on the first tile (max was -inf)
      row_max[h] = new_max;
      row_sum[h] *= alpha[h];
    }
#pragma unroll
    for (int nt = 0; nt < kBlockN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(s[nt][e] - row_max[e / 2]);
        s[nt][e] = p;
        row_sum[e / 2] += p;
      }
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      acc[dt][0] *= alpha[0];
      acc[dt][1] *= alpha[0];
      acc[dt][2] *= alpha[1];
      acc[dt][3] *= alpha[1];
    }

    // O += P V: the S accumulators of two adjacent 8-key tiles form one k16 A fragment.
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]),
                              pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
      if constexpr (kLdmatrix) {
#pragma unroll
        for (int dt = 0; dt < D / 8; dt += 2) {
          // Four 8x8 matrices: keys [16kk, +8) and [16kk+8, +16) x dims [8dt, +8), [8dt+8, +16).
          const int m = lane / 8, rr = lane % 8;
          const __nv_bfloat16* p = vt + (kk * 16 + rr + (m & 1) * 8) * kStride + dt * 8 + (m >> 1) * 8;
          uint32_t b0, b1, b2, b3;
          asm volatile(
              "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
              : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
              : "r"(smem_addr(p)));
          mma_bf16(acc[dt], pa, b0, b1);
          mma_bf16(acc[dt + 1], pa, b2, b3);
        }
      } else {
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          const __nv_bfloat16* p = vt + (kk * 16 + 2 * t) * kStride + dt * 8 + g;
          const uint32_t b0 = pack_bf16(p[0], p[kStride]);
          const uint32_t b1 = pack_bf16(p[8 * kStride], p[9 * kStride]);
          mma_bf16(acc[dt], pa, b0, b1);
        }
      }
    }

    if (j + 1 < tiles) cp_async_wait_all();
    __syncthreads();  // this buffer is free, the next one is visible to every warp
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
  }
  const float inv0 = 1.f / row_sum[0], inv1 = 1.f / row_sum[1];
  __nv_bfloat16* o0 = o + head_offset + static_cast<std::size_t>(q_row0) * D;
  __nv_bfloat16* o1 = o + head_offset + static_cast<std::size_t>(q_row1) * D;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    *reinterpret_cast<__nv_bfloat162*>(o0 + dt * 8 + 2 * t) =
        __floats2bfloat162_rn(acc[dt][0] * inv0, acc[dt][1] * inv0);
    *reinterpret_cast<__nv_bfloat162*>(o1 + dt * 8 + 2 * t) =
        __floats2bfloat162_rn(acc[dt][2] * inv1, acc[dt][3] * inv1);
  }
}

template <int D, bool kLdmatrix, int kWarps>
cudaError_t launch_flash(const void* q, const void* k, const void* v, void* o,
                         const AttentionShape& s, cudaStream_t stream) {
  constexpr int kBlockM = kWarps * 16;
  constexpr int kSmem = (kBlockM + 4 * kBlockN) * (D + kPad) * 2;
  if (s.seq % kBlockM != 0) return cudaErrorInvalidValue;
  auto kernel = flash_forward_kernel<D, kLdmatrix, kWarps>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (e != cudaSuccess) return e;
  const dim3 grid(s.seq / kBlockM, s.batch * s.heads);
  const float scale_log2 = 1.4426950408889634f / sqrtf(static_cast<float>(D));
  kernel<<<grid, kWarps * 32, kSmem, stream>>>(
      static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
      static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), s.seq, s.causal,
      scale_log2);
  return cudaGetLastError();
}

template <int D>
__global__ void reference_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k,
                                 const __nv_bfloat16* v, float* out, int seq, int heads_total,
                                 bool causal) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int bh = blockIdx.y;
  if (row >= seq || bh >= heads_total) return;
  const std::size_t base = static_cast<std::size_t>(bh) * seq * D;
  const __nv_bfloat16* qr = q + base + static_cast<std::size_t>(row) * D;
  const float scale = 1.f / sqrtf(static_cast<float>(D));
  const int keys = causal ? row + 1 : seq;
  float mx = -INFINITY;
  for (int j = 0; j < keys; ++j) {
    float dot = 0;
    for (int d = 0; d < D; ++d) dot += __bfloat162float(qr[d]) * __bfloat162float(k[base + static_cast<std::size_t>(j) * D + d]);
    mx = fmaxf(mx, dot * scale);
  }
  float acc[D];
  for (int d = 0; d < D; ++d) acc[d] = 0;
  float sum = 0;
  for (int j = 0; j < keys; ++j) {
    float dot = 0;
    for (int d = 0; d < D; ++d) dot += __bfloat162float(qr[d]) * __bfloat162float(k[base + static_cast<std::size_t>(j) * D + d]);
    const float p = expf(dot * scale - mx);
    sum += p;
    for (int d = 0; d < D; ++d) acc[d] += p * __bfloat162float(v[base + static_cast<std::size_t>(j) * D + d]);
  }
  for (int d = 0; d < D; ++d) out[base + static_cast<std::size_t>(row) * D + d] = acc[d] / sum;
}

}  // namespace

cudaError_t flash_attention_forward(const void* q, const void* k, const void* v, void* o,
                                    const AttentionShape& shape, FlashVariant variant,
                                    cudaStream_t stream) {
  switch (variant) {
    case FlashVariant::kRows128Ldmatrix:
      if (shape.head_dim == 128) return launch_flash<128, true, 8>(q, k, v, o, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, true, 8>(q, k, v, o, shape, stream);
      break;
    case FlashVariant::kRows64Ldmatrix:
      if (shape.head_dim == 128) return launch_flash<128, true, 4>(q, k, v, o, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, true, 4>(q, k, v, o, shape, stream);
      break;
    case FlashVariant::kRows64Plain:
      if (shape.head_dim == 128) return launch_flash<128, false, 4>(q, k, v, o, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, false, 4>(q, k, v, o, shape, stream);
      break;
  }
  return cudaErrorInvalidValue;
}

const char* to_string(FlashVariant v) {
  switch (v) {
    case FlashVariant::kRows128Ldmatrix: return "clustersim-flash (mma.sync, 128 rows, ldmatrix)";
    case FlashVariant::kRows64Ldmatrix: return "clustersim-flash (mma.sync, 64 rows, ldmatrix)";
    case FlashVariant::kRows64Plain: return "clustersim-flash (mma.sync, 64 rows)";
  }
  return "?";
}

cudaError_t reference_attention_forward(const void* q, const void* k, const void* v, float* out,
                                        const AttentionShape& s, cudaStream_t stream) {
  const dim3 grid((s.seq + 127) / 128, s.batch * s.heads);
  const auto* qq = static_cast<const __nv_bfloat16*>(q);
  const auto* kk = static_cast<const __nv_bfloat16*>(k);
  const auto* vv = static_cast<const __nv_bfloat16*>(v);
  if (s.head_dim == 128) {
    reference_kernel<128><<<grid, 128, 0, stream>>>(qq, kk, vv, out, s.seq, s.batch * s.heads, s.causal);
  } else if (s.head_dim == 64) {
    reference_kernel<64><<<grid, 128, 0, stream>>>(qq, kk, vv, out, s.seq, s.batch * s.heads, s.causal);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

double attention_forward_flops(const AttentionShape& s) {
  const double full = 4.0 * s.batch * s.heads * static_cast<double>(s.seq) * s.seq * s.head_dim;
  return s.causal ? full / 2 : full;
}

}  // namespace clustersim::validate::gpu
