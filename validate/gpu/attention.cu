#include <cuda_bf16.h>

#include <cstdint>

#include "validate/gpu/attention.h"

namespace clustersim::validate::gpu {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kTileN = 64;  // keys per streamed tile (forward, dQ)
constexpr int kPad = 8;     // bf16 elements of padding per shared-memory row (16 bytes)
// Rows per block: kWarps warps x 16 rows (64 or 128); 128 rows share each streamed tile
// between 8 warps, halving shared-memory loads per FLOP.

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
// Waits for every tile load this block issued and makes them visible to all its warps.
__device__ __forceinline__ void tiles_loaded() {
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
}

// rows x D bf16 tile from global (row stride D) to shared (row stride D + kPad).
template <int D>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, int rows) {
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
__device__ __forceinline__ uint32_t pack_bf16(bf16 lo, bf16 hi) {
  __nv_bfloat162 v(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t load_u32(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// Fragment layouts of mma.sync m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane =
// 4 g + t: A (16 x 16, row) holds rows g, g + 8 and columns 2t, 2t + 1, 2t + 8, 2t + 9; B (16 x 8,
// col) rows 2t, 2t + 1, 2t + 8, 2t + 9 of column g; C (16 x 8) rows g, g + 8, columns 2t, 2t + 1.

// The A fragment of rows [row, row + 8) and [row + 8, row + 16) (row = first row + g), columns
// [16 kk, 16 kk + 16), from a shared tile of row stride kStride.
template <int kStride>
__device__ __forceinline__ void load_a_frag(uint32_t (&a)[4], const bf16* tile, int row, int kk,
                                            int t) {
  const bf16* p0 = tile + row * kStride + kk * 16 + 2 * t;
  const bf16* p1 = p0 + 8 * kStride;
  a[0] = load_u32(p0);
  a[1] = load_u32(p1);
  a[2] = load_u32(p0 + 8);
  a[3] = load_u32(p1 + 8);
}

// All D / 16 A fragments of the 16 rows starting at `row` - g (a warp's query rows, kept in
// registers over a whole key loop).
template <int D>
__device__ __forceinline__ void load_a_rows(uint32_t (&a)[D / 16][4], const bf16* tile, int row, int t) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) load_a_frag<D + kPad>(a[kk], tile, row, kk, t);
}

// s (16 x N) += A (16 x 16, columns of block kk) B^T, B the shared tile's N rows (row stride
// kStride): one k16 step of S = Q K^T, with K's rows as the n dimension.
template <int N, int kStride>
__device__ __forceinline__ void mma_abt(float (&s)[N / 8][4], const uint32_t (&a)[4],
                                        const bf16* b_tile, int kk, int g, int t) {
#pragma unroll
  for (int nt = 0; nt < N / 8; ++nt) {
    const bf16* p = b_tile + (nt * 8 + g) * kStride + kk * 16 + 2 * t;
    mma_bf16(s[nt], a, load_u32(p), load_u32(p + 8));
  }
}

template <int N>
__device__ __forceinline__ void zero(float (&s)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
}

// The C accumulators of a 16 x N product as the A fragments of a k = N product: the
// accumulators of two adjacent 8-column tiles form one k16 A fragment.
template <int N>
__device__ __forceinline__ void pack_a(uint32_t (&pa)[N / 16][4], const float (&s)[N / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
    pa[kk][0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
    pa[kk][1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
    pa[kk][2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    pa[kk][3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// acc (16 x D) += A (16 x N, packed) B, B the shared tile's N rows x D columns (row stride D +
// kPad): O += P V, and likewise dV += P^T dO, dK += dS^T Q, dQ += dS K.
template <int D, int N, bool kLdmatrix>
__device__ __forceinline__ void mma_ab(float (&acc)[D / 8][4], const uint32_t (&pa)[N / 16][4],
                                       const bf16* b_tile, int lane) {
  constexpr int kStride = D + kPad;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk) {
    if constexpr (kLdmatrix) {
#pragma unroll
      for (int dt = 0; dt < D / 8; dt += 2) {
        // Four 8x8 matrices: rows [16kk, +8) and [16kk+8, +16) x columns [8dt, +8), [8dt+8, +16).
        const int m = lane / 8, rr = lane % 8;
        const bf16* p = b_tile + (kk * 16 + rr + (m & 1) * 8) * kStride + dt * 8 + (m >> 1) * 8;
        uint32_t b0, b1, b2, b3;
        asm volatile(
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
            : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3)
            : "r"(smem_addr(p)));
        mma_bf16(acc[dt], pa[kk], b0, b1);
        mma_bf16(acc[dt + 1], pa[kk], b2, b3);
      }
    } else {
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        const bf16* p = b_tile + (kk * 16 + 2 * t) * kStride + dt * 8 + g;
        const uint32_t b0 = pack_bf16(p[0], p[kStride]);
        const uint32_t b1 = pack_bf16(p[8 * kStride], p[9 * kStride]);
        mma_bf16(acc[dt], pa[kk], b0, b1);
      }
    }
  }
}

// Writes rows `row0`, `row0 + 8` of a 16 x D accumulator times `scale` as bf16.
template <int D>
__device__ __forceinline__ void store_rows(bf16* out, std::size_t row0, const float (&acc)[D / 8][4],
                                           float scale0, float scale1, int t) {
  bf16* o0 = out + row0 * D;
  bf16* o1 = o0 + 8 * D;
#pragma unroll
  for (int dt = 0; dt < D / 8; ++dt) {
    *reinterpret_cast<__nv_bfloat162*>(o0 + dt * 8 + 2 * t) =
        __floats2bfloat162_rn(acc[dt][0] * scale0, acc[dt][1] * scale0);
    *reinterpret_cast<__nv_bfloat162*>(o1 + dt * 8 + 2 * t) =
        __floats2bfloat162_rn(acc[dt][2] * scale1, acc[dt][3] * scale1);
  }
}

// ---- forward ----

template <int D, bool kLdmatrix, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    flash_forward_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k,
                         const bf16* __restrict__ v, bf16* __restrict__ o, float* __restrict__ lse,
                         int seq, bool causal, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kStride = D + kPad;
  constexpr int kBlockM = kWarps * 16;
  bf16* qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* ks = qs + kBlockM * kStride;     // two buffers
  bf16* vs = ks + 2 * kTileN * kStride;  // two buffers

  // Heaviest causal blocks (most key tiles) first.
  const int qb = gridDim.x - 1 - blockIdx.x;
  const std::size_t head_offset = static_cast<std::size_t>(blockIdx.y) * seq * D;
  const bf16* qg = q + head_offset + static_cast<std::size_t>(qb) * kBlockM * D;
  const bf16* kg = k + head_offset;
  const bf16* vg = v + head_offset;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int tiles = causal ? ((qb + 1) * kBlockM + kTileN - 1) / kTileN : seq / kTileN;

  load_tile<D>(qs, qg, kBlockM);
  load_tile<D>(ks, kg, kTileN);
  load_tile<D>(vs, vg, kTileN);
  tiles_loaded();

  // This warp's 16 query rows as A fragments, kept in registers for the whole loop.
  uint32_t qa[D / 16][4];
  const int r0 = warp * 16 + g;
  load_a_rows<D>(qa, qs, r0, t);

  float acc[D / 8][4];
  zero(acc);
  float row_max[2] = {-INFINITY, -INFINITY};
  float row_sum[2] = {0.f, 0.f};  // this thread's partial sums; reduced over the quad at the end
  const int q_row0 = qb * kBlockM + r0, q_row1 = q_row0 + 8;

  for (int j = 0; j < tiles; ++j) {
    const int buf = j & 1;
    const bf16* kt = ks + buf * kTileN * kStride;
    const bf16* vt = vs + buf * kTileN * kStride;
    if (j + 1 < tiles) {  // prefetch the next tile into the other buffer
      const std::size_t next = static_cast<std::size_t>(j + 1) * kTileN * D;
      load_tile<D>(ks + (buf ^ 1) * kTileN * kStride, kg + next, kTileN);
      load_tile<D>(vs + (buf ^ 1) * kTileN * kStride, vg + next, kTileN);
      cp_async_commit();
    }

    // S = Q K^T for 16 rows x 64 keys.
    float s[kTileN / 8][4];
    zero(s);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) mma_abt<kTileN, kStride>(s, qa[kk], kt, kk, g, t);

    // Scale to log2 units, mask above the diagonal, online softmax.
    const bool diagonal = causal && (j + 1) * kTileN > qb * kBlockM;  // tile crosses it
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kTileN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nt][e] * scale_log2;
        if (diagonal) {
          const int key = j * kTileN + nt * 8 + 2 * t + (e & 1);
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
    for (int nt = 0; nt < kTileN / 8; ++nt) {
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

    // O += P V.
    uint32_t pa[kTileN / 16][4];
    pack_a<kTileN>(pa, s);
    mma_ab<D, kTileN, kLdmatrix>(acc, pa, vt, lane);

    if (j + 1 < tiles) cp_async_wait_all();
    __syncthreads();  // this buffer is free, the next one is visible to every warp
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
  }
  const std::size_t row_base = static_cast<std::size_t>(blockIdx.y) * seq;
  store_rows<D>(o, row_base + q_row0, acc, 1.f / row_sum[0], 1.f / row_sum[1], t);
  if (lse != nullptr && t == 0) {
    lse[row_base + q_row0] = row_max[0] + log2f(row_sum[0]);
    lse[row_base + q_row1] = row_max[1] + log2f(row_sum[1]);
  }
}

template <class Kernel>
cudaError_t allow_smem(Kernel kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}

float scale_log2_for(int d) { return 1.4426950408889634f / sqrtf(static_cast<float>(d)); }

template <int D, bool kLdmatrix, int kWarps>
cudaError_t launch_flash(const void* q, const void* k, const void* v, void* o, float* lse,
                         const AttentionShape& s, cudaStream_t stream) {
  constexpr int kBlockM = kWarps * 16;
  constexpr int kSmem = (kBlockM + 4 * kTileN) * (D + kPad) * 2;
  if (s.seq % kBlockM != 0) return cudaErrorInvalidValue;
  auto kernel = flash_forward_kernel<D, kLdmatrix, kWarps>;
  if (cudaError_t e = allow_smem(kernel, kSmem); e != cudaSuccess) return e;
  const dim3 grid(s.seq / kBlockM, s.batch * s.heads);
  kernel<<<grid, kWarps * 32, kSmem, stream>>>(
      static_cast<const bf16*>(q), static_cast<const bf16*>(k), static_cast<const bf16*>(v),
      static_cast<bf16*>(o), lse, s.seq, s.causal, scale_log2_for(D));
  return cudaGetLastError();
}

// ---- backward ----

// delta[row] = sum_d dO[row][d] O[row][d], one warp per row.
template <int D>
__global__ void delta_kernel(const bf16* __restrict__ o, const bf16* __restrict__ d_o,
                             float* __restrict__ delta, std::size_t rows) {
  const std::size_t row = blockIdx.x * static_cast<std::size_t>(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the whole warp leaves together
  float sum = 0.f;
#pragma unroll
  for (int c = 2 * lane; c < D; c += 64) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(o + row * D + c));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(d_o + row * D + c));
    sum += a.x * b.x + a.y * b.y;
  }
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) delta[row] = sum;
}

// dK and dV of kWarps x 16 keys per block; each warp owns 16 keys and loops over the query
// tiles (kTileQ rows, double-buffered with their lse and delta), computing everything
// transposed so that every product keeps its accumulators in registers:
//   S^T = K Q^T, P^T = 2^(S^T log2(e)/sqrt(d) - lse), dV += P^T dO, dP^T = V dO^T,
//   dS^T = P^T (dP^T - delta), dK += dS^T Q; dK is scaled by 1/sqrt(d) at the end.
template <int D, bool kLdmatrix, int kWarps, int kTileQ>
__global__ void __launch_bounds__(kWarps * 32)
    flash_bwd_dkdv_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k,
                          const bf16* __restrict__ v, const bf16* __restrict__ d_o,
                          const float* __restrict__ lse, const float* __restrict__ delta,
                          bf16* __restrict__ dk, bf16* __restrict__ dv, int seq, bool causal,
                          float scale_log2, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kStride = D + kPad;
  constexpr int kBlockN = kWarps * 16;
  bf16* ks = reinterpret_cast<bf16*>(smem_raw);
  bf16* vs = ks + kBlockN * kStride;
  bf16* qs = vs + kBlockN * kStride;      // two buffers
  bf16* dos = qs + 2 * kTileQ * kStride;  // two buffers
  float* lse_s = reinterpret_cast<float*>(dos + 2 * kTileQ * kStride);  // two buffers
  float* delta_s = lse_s + 2 * kTileQ;                                   // two buffers

  const int key0 = blockIdx.x * kBlockN;  // causal: the first blocks have the most query tiles
  const std::size_t row_base = static_cast<std::size_t>(blockIdx.y) * seq;
  const bf16* qg = q + row_base * D;
  const bf16* dog = d_o + row_base * D;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int first = causal ? key0 / kTileQ : 0;  // query tiles wholly above the diagonal are skipped
  const int tiles = seq / kTileQ;
  auto load_query_tile = [&](int i, int buf) {
    const std::size_t at = static_cast<std::size_t>(i) * kTileQ;
    load_tile<D>(qs + buf * kTileQ * kStride, qg + at * D, kTileQ);
    load_tile<D>(dos + buf * kTileQ * kStride, dog + at * D, kTileQ);
    for (int r = threadIdx.x; r < kTileQ; r += blockDim.x) {
      lse_s[buf * kTileQ + r] = lse[row_base + at + r];
      delta_s[buf * kTileQ + r] = delta[row_base + at + r];
    }
  };

  load_tile<D>(ks, k + (row_base + key0) * D, kBlockN);
  load_tile<D>(vs, v + (row_base + key0) * D, kBlockN);
  load_query_tile(first, 0);
  tiles_loaded();

  float acc_dk[D / 8][4], acc_dv[D / 8][4];
  zero(acc_dk);
  zero(acc_dv);
  const int r0 = warp * 16 + g;  // this thread's key rows in the block: r0, r0 + 8
  const int key_row0 = key0 + r0, key_row1 = key_row0 + 8;

  for (int i = first; i < tiles; ++i) {
    const int buf = (i - first) & 1;
    const bf16* qt = qs + buf * kTileQ * kStride;
    const bf16* dot = dos + buf * kTileQ * kStride;
    const float* lt = lse_s + buf * kTileQ;
    const float* dlt = delta_s + buf * kTileQ;
    if (i + 1 < tiles) {
      load_query_tile(i + 1, buf ^ 1);
      cp_async_commit();
    }

    // S^T = K Q^T: 16 keys x kTileQ queries.
    float st[kTileQ / 8][4];
    zero(st);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      load_a_frag<kStride>(a, ks, r0, kk, t);
      mma_abt<kTileQ, kStride>(st, a, qt, kk, g, t);
    }
    // P^T from the forward's log-sum-exp; keys after the query are masked.
    const bool diagonal = causal && i * kTileQ < key0 + kBlockN;  // tile crosses it
#pragma unroll
    for (int nt = 0; nt < kTileQ / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = nt * 8 + 2 * t + (e & 1);
        const bool masked = diagonal && (e < 2 ? key_row0 : key_row1) > i * kTileQ + col;
        st[nt][e] = masked ? 0.f : exp2f(st[nt][e] * scale_log2 - lt[col]);
      }
    }
    // dV += P^T dO.
    uint32_t pa[kTileQ / 16][4];
    pack_a<kTileQ>(pa, st);
    mma_ab<D, kTileQ, kLdmatrix>(acc_dv, pa, dot, lane);

    // dP^T = V dO^T, then dS^T = P^T (dP^T - delta) in place.
    float dpt[kTileQ / 8][4];
    zero(dpt);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t a[4];
      load_a_frag<kStride>(a, vs, r0, kk, t);
      mma_abt<kTileQ, kStride>(dpt, a, dot, kk, g, t);
    }
#pragma unroll
    for (int nt = 0; nt < kTileQ / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) dpt[nt][e] = st[nt][e] * (dpt[nt][e] - dlt[nt * 8 + 2 * t + (e & 1)]);
    }
    // dK += dS^T Q.
    pack_a<kTileQ>(pa, dpt);
    mma_ab<D, kTileQ, kLdmatrix>(acc_dk, pa, qt, lane);

    if (i + 1 < tiles) cp_async_wait_all();
    __syncthreads();  // this buffer is free, the next one is visible to every warp
  }
  store_rows<D>(dv, row_base + key_row0, acc_dv, 1.f, 1.f, t);
  store_rows<D>(dk, row_base + key_row0, acc_dk, scale, scale, t);
}

// dQ of kWarps x 16 queries per block, looping over the key tiles as the forward does:
//   S = Q K^T, P = 2^(S log2(e)/sqrt(d) - lse), dP = dO V^T, dS = P (dP - delta), dQ += dS K;
// dQ is scaled by 1/sqrt(d) at the end.
template <int D, bool kLdmatrix, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
    flash_bwd_dq_kernel(const bf16* __restrict__ q, const bf16* __restrict__ k,
                        const bf16* __restrict__ v, const bf16* __restrict__ d_o,
                        const float* __restrict__ lse, const float* __restrict__ delta,
                        bf16* __restrict__ dq, int seq, bool causal, float scale_log2,
                        float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int kStride = D + kPad;
  constexpr int kBlockM = kWarps * 16;
  bf16* qs = reinterpret_cast<bf16*>(smem_raw);
  bf16* dos = qs + kBlockM * kStride;
  bf16* ks = dos + kBlockM * kStride;    // two buffers
  bf16* vs = ks + 2 * kTileN * kStride;  // two buffers

  const int qb = gridDim.x - 1 - blockIdx.x;  // heaviest causal blocks first
  const std::size_t row_base = static_cast<std::size_t>(blockIdx.y) * seq;
  const bf16* kg = k + row_base * D;
  const bf16* vg = v + row_base * D;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int tiles = causal ? ((qb + 1) * kBlockM + kTileN - 1) / kTileN : seq / kTileN;

  const std::size_t first_row = row_base + static_cast<std::size_t>(qb) * kBlockM;
  load_tile<D>(qs, q + first_row * D, kBlockM);
  load_tile<D>(dos, d_o + first_row * D, kBlockM);
  load_tile<D>(ks, kg, kTileN);
  load_tile<D>(vs, vg, kTileN);
  tiles_loaded();

  uint32_t qa[D / 16][4];
  const int r0 = warp * 16 + g;
  load_a_rows<D>(qa, qs, r0, t);
  const int q_row0 = qb * kBlockM + r0, q_row1 = q_row0 + 8;
  const float lse_row[2] = {lse[row_base + q_row0], lse[row_base + q_row1]};
  const float delta_row[2] = {delta[row_base + q_row0], delta[row_base + q_row1]};

  float acc[D / 8][4];
  zero(acc);
  for (int j = 0; j < tiles; ++j) {
    const int buf = j & 1;
    const bf16* kt = ks + buf * kTileN * kStride;
    const bf16* vt = vs + buf * kTileN * kStride;
    if (j + 1 < tiles) {
      const std::size_t next = static_cast<std::size_t>(j + 1) * kTileN * D;
      load_tile<D>(ks + (buf ^ 1) * kTileN * kStride, kg + next, kTileN);
      load_tile<D>(vs + (buf ^ 1) * kTileN * kStride, vg + next, kTileN);
      cp_async_commit();
    }
    float s[kTileN / 8][4], dp[kTileN / 8][4];
    zero(s);
    zero(dp);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      mma_abt<kTileN, kStride>(s, qa[kk], kt, kk, g, t);
      uint32_t a[4];
      load_a_frag<kStride>(a, dos, r0, kk, t);
      mma_abt<kTileN, kStride>(dp, a, vt, kk, g, t);
    }
    const bool diagonal = causal && (j + 1) * kTileN > qb * kBlockM;
#pragma unroll
    for (int nt = 0; nt < kTileN / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const int key = j * kTileN + nt * 8 + 2 * t + (e & 1);
        const bool masked = diagonal && key > (h == 0 ? q_row0 : q_row1);
        const float p = masked ? 0.f : exp2f(s[nt][e] * scale_log2 - lse_row[h]);
        s[nt][e] = p * (dp[nt][e] - delta_row[h]);  // dS
      }
    }
    uint32_t pa[kTileN / 16][4];
    pack_a<kTileN>(pa, s);
    mma_ab<D, kTileN, kLdmatrix>(acc, pa, kt, lane);

    if (j + 1 < tiles) cp_async_wait_all();
    __syncthreads();
  }
  store_rows<D>(dq, row_base + q_row0, acc, scale, scale, t);
}

template <int D, bool kLdmatrix, int kWarps>
cudaError_t launch_flash_backward(const FlashBackwardTensors& x, const AttentionShape& s,
                                  cudaStream_t stream) {
  constexpr int kBlock = kWarps * 16;
  constexpr int kTileQ = kWarps == 8 ? 64 : 32;  // 4 warps: two blocks fit an SM's shared memory
  constexpr int kStride = D + kPad;
  constexpr int kSmemDkdv = (2 * kBlock + 4 * kTileQ) * kStride * 2 + 4 * kTileQ * 4;
  constexpr int kSmemDq = (2 * kBlock + 4 * kTileN) * kStride * 2;
  if (s.seq % kBlock != 0 || s.seq % kTileN != 0) return cudaErrorInvalidValue;
  auto dkdv = flash_bwd_dkdv_kernel<D, kLdmatrix, kWarps, kTileQ>;
  auto dq = flash_bwd_dq_kernel<D, kLdmatrix, kWarps>;
  if (cudaError_t e = allow_smem(dkdv, kSmemDkdv); e != cudaSuccess) return e;
  if (cudaError_t e = allow_smem(dq, kSmemDq); e != cudaSuccess) return e;
  const auto* q = static_cast<const bf16*>(x.q);
  const auto* k = static_cast<const bf16*>(x.k);
  const auto* v = static_cast<const bf16*>(x.v);
  const auto* d_o = static_cast<const bf16*>(x.d_o);
  const std::size_t rows = static_cast<std::size_t>(s.batch) * s.heads * s.seq;
  delta_kernel<D><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(
      static_cast<const bf16*>(x.o), d_o, x.delta, rows);
  const float scale_log2 = scale_log2_for(D), scale = 1.f / sqrtf(static_cast<float>(D));
  const dim3 grid(s.seq / kBlock, s.batch * s.heads);
  dkdv<<<grid, kWarps * 32, kSmemDkdv, stream>>>(q, k, v, d_o, x.lse, x.delta,
                                                 static_cast<bf16*>(x.dk), static_cast<bf16*>(x.dv),
                                                 s.seq, s.causal, scale_log2, scale);
  dq<<<grid, kWarps * 32, kSmemDq, stream>>>(q, k, v, d_o, x.lse, x.delta, static_cast<bf16*>(x.dq),
                                             s.seq, s.causal, scale_log2, scale);
  return cudaGetLastError();
}

// ---- plain fp32 references (one thread per row) ----

template <int D>
__device__ float dot_bf16(const bf16* a, const bf16* b) {
  float s = 0;
  for (int d = 0; d < D; ++d) s += __bfloat162float(a[d]) * __bfloat162float(b[d]);
  return s;
}

// Row `row` of softmax(QK^T / sqrt(d)) V into out[]; returns the natural log-sum-exp.
template <int D>
__device__ float reference_row(const bf16* q, const bf16* k, const bf16* v, std::size_t base,
                               int row, int seq, bool causal, float (&out)[D]) {
  const bf16* qr = q + base + static_cast<std::size_t>(row) * D;
  const float scale = 1.f / sqrtf(static_cast<float>(D));
  const int keys = causal ? row + 1 : seq;
  float mx = -INFINITY;
  for (int j = 0; j < keys; ++j) mx = fmaxf(mx, dot_bf16<D>(qr, k + base + static_cast<std::size_t>(j) * D) * scale);
  for (int d = 0; d < D; ++d) out[d] = 0;
  float sum = 0;
  for (int j = 0; j < keys; ++j) {
    const float p = expf(dot_bf16<D>(qr, k + base + static_cast<std::size_t>(j) * D) * scale - mx);
    sum += p;
    for (int d = 0; d < D; ++d) out[d] += p * __bfloat162float(v[base + static_cast<std::size_t>(j) * D + d]);
  }
  for (int d = 0; d < D; ++d) out[d] /= sum;
  return mx + logf(sum);
}

template <int D>
__global__ void reference_kernel(const bf16* q, const bf16* k, const bf16* v, float* out, int seq,
                                 int heads_total, bool causal) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int bh = blockIdx.y;
  if (row >= seq || bh >= heads_total) return;
  const std::size_t base = static_cast<std::size_t>(bh) * seq * D;
  float acc[D];
  reference_row<D>(q, k, v, base, row, seq, causal, acc);
  for (int d = 0; d < D; ++d) out[base + static_cast<std::size_t>(row) * D + d] = acc[d];
}

// Per query row: lse, delta = dO . O, and dQ = scale sum_j P_ij (dO_i . V_j - delta_i) K_j.
template <int D>
__global__ void reference_dq_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* d_o,
                                    float* dq, float* lse, float* delta, int seq, int heads_total,
                                    bool causal) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int bh = blockIdx.y;
  if (row >= seq || bh >= heads_total) return;
  const std::size_t base = static_cast<std::size_t>(bh) * seq * D;
  const std::size_t r = static_cast<std::size_t>(bh) * seq + row;
  float acc[D];
  const float l = reference_row<D>(q, k, v, base, row, seq, causal, acc);
  const bf16* dor = d_o + base + static_cast<std::size_t>(row) * D;
  const bf16* qr = q + base + static_cast<std::size_t>(row) * D;
  float dl = 0;
  for (int d = 0; d < D; ++d) dl += __bfloat162float(dor[d]) * acc[d];
  lse[r] = l;
  delta[r] = dl;
  const float scale = 1.f / sqrtf(static_cast<float>(D));
  for (int d = 0; d < D; ++d) acc[d] = 0;
  const int keys = causal ? row + 1 : seq;
  for (int j = 0; j < keys; ++j) {
    const bf16* kj = k + base + static_cast<std::size_t>(j) * D;
    const float p = expf(dot_bf16<D>(qr, kj) * scale - l);
    const float ds = p * (dot_bf16<D>(dor, v + base + static_cast<std::size_t>(j) * D) - dl);
    for (int d = 0; d < D; ++d) acc[d] += ds * __bfloat162float(kj[d]);
  }
  for (int d = 0; d < D; ++d) dq[base + static_cast<std::size_t>(row) * D + d] = acc[d] * scale;
}

// Per key row j: dV = sum_i P_ij dO_i, dK = scale sum_i P_ij (dO_i . V_j - delta_i) Q_i.
template <int D>
__global__ void reference_dkdv_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* d_o,
                                      float* dk, float* dv, const float* lse, const float* delta,
                                      int seq, int heads_total, bool causal) {
  const int key = blockIdx.x * blockDim.x + threadIdx.x;
  const int bh = blockIdx.y;
  if (key >= seq || bh >= heads_total) return;
  const std::size_t base = static_cast<std::size_t>(bh) * seq * D;
  const bf16* kj = k + base + static_cast<std::size_t>(key) * D;
  const bf16* vj = v + base + static_cast<std::size_t>(key) * D;
  const float scale = 1.f / sqrtf(static_cast<float>(D));
  float gk[D], gv[D];
  for (int d = 0; d < D; ++d) gk[d] = gv[d] = 0;
  for (int i = causal ? key : 0; i < seq; ++i) {
    const std::size_t r = static_cast<std::size_t>(bh) * seq + i;
    const bf16* qi = q + base + static_cast<std::size_t>(i) * D;
    const bf16* doi = d_o + base + static_cast<std::size_t>(i) * D;
    const float p = expf(dot_bf16<D>(qi, kj) * scale - lse[r]);
    const float ds = p * (dot_bf16<D>(doi, vj) - delta[r]);
    for (int d = 0; d < D; ++d) {
      gv[d] += p * __bfloat162float(doi[d]);
      gk[d] += ds * __bfloat162float(qi[d]);
    }
  }
  for (int d = 0; d < D; ++d) {
    dv[base + static_cast<std::size_t>(key) * D + d] = gv[d];
    dk[base + static_cast<std::size_t>(key) * D + d] = gk[d] * scale;
  }
}

}  // namespace

cudaError_t flash_attention_forward(const void* q, const void* k, const void* v, void* o,
                                    const AttentionShape& shape, FlashVariant variant,
                                    cudaStream_t stream, float* lse) {
  switch (variant) {
    case FlashVariant::kRows128Ldmatrix:
      if (shape.head_dim == 128) return launch_flash<128, true, 8>(q, k, v, o, lse, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, true, 8>(q, k, v, o, lse, shape, stream);
      break;
    case FlashVariant::kRows64Ldmatrix:
      if (shape.head_dim == 128) return launch_flash<128, true, 4>(q, k, v, o, lse, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, true, 4>(q, k, v, o, lse, shape, stream);
      break;
    case FlashVariant::kRows64Plain:
      if (shape.head_dim == 128) return launch_flash<128, false, 4>(q, k, v, o, lse, shape, stream);
      if (shape.head_dim == 64) return launch_flash<64, false, 4>(q, k, v, o, lse, shape, stream);
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t flash_attention_backward(const FlashBackwardTensors& t, const AttentionShape& shape,
                                     FlashVariant variant, cudaStream_t stream) {
  switch (variant) {
    case FlashVariant::kRows128Ldmatrix:
      if (shape.head_dim == 128) return launch_flash_backward<128, true, 8>(t, shape, stream);
      if (shape.head_dim == 64) return launch_flash_backward<64, true, 8>(t, shape, stream);
      break;
    case FlashVariant::kRows64Ldmatrix:
      if (shape.head_dim == 128) return launch_flash_backward<128, true, 4>(t, shape, stream);
      if (shape.head_dim == 64) return launch_flash_backward<64, true, 4>(t, shape, stream);
      break;
    case FlashVariant::kRows64Plain:
      if (shape.head_dim == 128) return launch_flash_backward<128, false, 4>(t, shape, stream);
      if (shape.head_dim == 64) return launch_flash_backward<64, false, 4>(t, shape, stream);
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

const char* backward_name(FlashVariant v) {
  switch (v) {
    case FlashVariant::kRows128Ldmatrix:
      return "clustersim-flash-bwd (mma.sync, two passes, 128 rows, ldmatrix)";
    case FlashVariant::kRows64Ldmatrix:
      return "clustersim-flash-bwd (mma.sync, two passes, 64 rows, ldmatrix)";
    case FlashVariant::kRows64Plain: return "clustersim-flash-bwd (mma.sync, two passes, 64 rows)";
  }
  return "?";
}

cudaError_t reference_attention_forward(const void* q, const void* k, const void* v, float* out,
                                        const AttentionShape& s, cudaStream_t stream) {
  const dim3 grid((s.seq + 127) / 128, s.batch * s.heads);
  const auto* qq = static_cast<const bf16*>(q);
  const auto* kk = static_cast<const bf16*>(k);
  const auto* vv = static_cast<const bf16*>(v);
  if (s.head_dim == 128) {
    reference_kernel<128><<<grid, 128, 0, stream>>>(qq, kk, vv, out, s.seq, s.batch * s.heads, s.causal);
  } else if (s.head_dim == 64) {
    reference_kernel<64><<<grid, 128, 0, stream>>>(qq, kk, vv, out, s.seq, s.batch * s.heads, s.causal);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

namespace {
template <int D>
void reference_backward(const bf16* q, const bf16* k, const bf16* v, const bf16* d_o, float* dq,
                        float* dk, float* dv, float* scratch, const AttentionShape& s,
                        cudaStream_t stream) {
  const dim3 grid((s.seq + 127) / 128, s.batch * s.heads);
  const int heads = s.batch * s.heads;
  float* lse = scratch;
  float* delta = scratch + static_cast<std::size_t>(heads) * s.seq;
  reference_dq_kernel<D><<<grid, 128, 0, stream>>>(q, k, v, d_o, dq, lse, delta, s.seq, heads, s.causal);
  reference_dkdv_kernel<D><<<grid, 128, 0, stream>>>(q, k, v, d_o, dk, dv, lse, delta, s.seq, heads,
                                                     s.causal);
}
}  // namespace

cudaError_t reference_attention_backward(const void* q, const void* k, const void* v,
                                         const void* d_o, float* dq, float* dk, float* dv,
                                         float* row_scratch, const AttentionShape& s,
                                         cudaStream_t stream) {
  const auto* qq = static_cast<const bf16*>(q);
  const auto* kk = static_cast<const bf16*>(k);
  const auto* vv = static_cast<const bf16*>(v);
  const auto* dd = static_cast<const bf16*>(d_o);
  if (s.head_dim == 128) {
    reference_backward<128>(qq, kk, vv, dd, dq, dk, dv, row_scratch, s, stream);
  } else if (s.head_dim == 64) {
    reference_backward<64>(qq, kk, vv, dd, dq, dk, dv, row_scratch, s, stream);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

double attention_forward_flops(const AttentionShape& s) {
  const double full = 4.0 * s.batch * s.heads * static_cast<double>(s.seq) * s.seq * s.head_dim;
  return s.causal ? full / 2 : full;
}

double attention_backward_flops(const AttentionShape& s) { return 2.5 * attention_forward_flops(s); }

}  // namespace clustersim::validate::gpu
