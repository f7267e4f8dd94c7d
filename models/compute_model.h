// Time of the kernels a training step runs on one GPU, as a roofline: the slower of FLOPs over
// the achievable tensor rate and bytes over the achievable HBM bandwidth. The achievable rate
// rises with a kernel's size (small GEMMs do not fill the GPU) toward a per-architecture ceiling.
// Units: FLOPs, bytes, seconds, FLOP/s. Pure functions; the parameters are a plain struct that a
// calibration overlay replaces (validate measures GEMM and attention rates on the real GPU).
#pragma once

#include "models/catalog.h"

namespace clustersim::models {

// Efficiencies are fractions of the GPU's dense peak for the precision (GpuSpec::peak_flops).
struct ComputeParams {
  // The best large GEMM's sustained fraction of peak. H100/H200 bf16: ~655 TFLOP/s sustained at
  // the 700 W cap of 989 = 0.662 (REFERENCE.md; short runs reach 780-795, 0.80, ml-engineering
  // MAMF). A100: 267.9 of 312 = 0.859 (ml-engineering MAMF table, CUDA 12.1). Others: 0.70, an
  // assumption. default_compute_params() fills this from the GPU's architecture.
  double gemm_max_efficiency = 0.70;
  // Work (FLOPs = 2mnk) at which a GEMM reaches half the ceiling: efficiency = max * w / (w +
  // w_half). 1e9 puts a 1024^3 GEMM (2.1 GFLOP) at 0.68 of the ceiling and anything above
  // 4096^3 within 1%: an assumption in line with cuBLAS sweeps; calibrate per GPU.
  double gemm_half_efficiency_flops = 1e9;
  // Flash attention's fraction of peak at long sequence. Forward: FlashAttention-2 reaches ~35%
  // of H100 bf16 peak, FlashAttention-3 ~75% (Shah et al. 2024, fwd, head dim 128); backward
  // runs ~1.5-2x slower per FLOP (Dao 2023, Shah et al. 2024). Defaults sit between the two
  // generations, as Megatron/Transformer Engine (cuDNN fused attention) deliver.
  double attention_fwd_max_efficiency = 0.60;
  double attention_bwd_max_efficiency = 0.45;
  // Key/value length (per head) at which attention reaches half its ceiling: FlashAttention-2's
  // causal forward (Dao 2023, Fig. 4-5) runs at ~0.5 / 0.7 / 0.8 / 0.9 of its 16K rate at
  // 512 / 1K / 2K / 4K tokens, which kv / (kv + 512) matches.
  double attention_half_efficiency_kv_tokens = 512;
  // Achievable fraction of the HBM datasheet bandwidth: H200 device copy ~4.3 of 4.8 TB/s
  // (REFERENCE.md).
  double hbm_efficiency = 0.90;
};

// The defaults for this GPU (the architecture picks gemm_max_efficiency, see above).
ComputeParams default_compute_params(const GpuSpec& gpu);

// C[m x n] = A[m x k] B[k x n], every operand in the given precision.
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double flops() const { return 2 * m * n * k; }
};

// Flash attention over `batch` sequences: `heads` query heads of `head_dim`, `q_tokens` queries
// against `kv_tokens` keys (equal without context parallelism), `kv_heads` key/value heads.
// Causal attention does half the work of full attention.
struct AttentionShape {
  double batch = 1;
  double heads = 1;
  double kv_heads = 1;
  double head_dim = 128;
  double q_tokens = 0;
  double kv_tokens = 0;
  bool causal = true;
  // QK^T and AV: 2 matmuls of 2 * q * kv * head_dim FLOPs per head (halved when causal).
  double forward_flops() const;
};

struct KernelTime {
  double time_s = 0;
  double flops = 0;
  double bytes = 0;           // HBM traffic
  double efficiency = 0;      // achieved FLOP/s over peak
  bool memory_bound = false;  // bytes, not FLOPs, set the time
};

// One GEMM. REQUIRES: the GPU has a nonzero peak for the precision.
KernelTime gemm_time(const GpuSpec& gpu, Precision precision, const GemmShape& shape,
                     const ComputeParams& params);
// Flash attention forward, or backward (2.5x the forward FLOPs: five matmuls to the forward's
// two, recomputing the scores, FlashAttention-2 section 3.1.2).
KernelTime attention_time(const GpuSpec& gpu, Precision precision, const AttentionShape& shape,
                          bool backward, const ComputeParams& params);
// A memory-bound kernel (norms, activations, residual adds, the optimizer): bytes read plus
// written over the achievable HBM bandwidth.
KernelTime memory_bound_time(const GpuSpec& gpu, double bytes, const ComputeParams& params);

}  // namespace clustersim::models
