// Time of the kernels a training step runs on one GPU, as a roofline: the slower of FLOPs over
// the achievable tensor rate and bytes over the achievable HBM bandwidth. The achievable rate
// rises with a kernel's size (small GEMMs do not fill the GPU) toward a per-architecture ceiling.
// Units: FLOPs, bytes, seconds, FLOP/s. Pure functions; the parameters are a plain struct that a
// calibration overlay replaces (validate measures GEMM and attention rates on the real GPU).
#pragma once

#include <string_view>

#include "models/catalog.h"

namespace clustersim::models {

// Efficiencies are fractions of the GPU's dense peak for the precision (GpuSpec::peak_flops).
// How long tensor-core kernels must run back to back before a timed region reads the power
// cap's clock (ComputeParams::sustained_clock) rather than the full one: a GPU settles at its cap
// within a fraction of a second. Validate's GEMM rows (the median of ~50 batches of 20 ms over
// 1 s, the shapes back to back) measure within 3% of the 30 s burn that follows in every
// committed H200 probe file (bf16 8192^3: 672-691 TFLOP/s in 1 s, 667-676 burned;
// scenarios/measurements/h200-2gpu.json, call7/h200-2gpu.json, h200-1gpu.json) where sub-second
// runs reach 788 (torch.matmul, docs/modelling.md); call 8's rows of 0.5 s fit an in-tile 0.713
// (scenarios/measurements/call8/h200-1gpu-shapes.json), call 9's capped 0.72 rather than the
// full clock's 0.834. The median batch of a run this long comes after the clock has settled.
inline constexpr double kPowerCapSettledRunS = 0.5;
// Whether a timed GEMM region ran at the power cap's clock: a burn, or `seconds` of back-to-back
// work at least kPowerCapSettledRunS (0: not recorded, read as a short run at full clock).
inline bool at_power_cap(bool burn, double seconds) {
  return burn || seconds >= kPowerCapSettledRunS;
}

struct ComputeParams {
  // Tensor-core efficiency inside a GEMM tile at the GPU's full clock: what a GEMM whose tiles
  // fill every SM in whole waves, with a long reduction, reaches in a short run
  // (gemm_time() takes the shape's quantisation off it, power_clock() the power cap).
  // Hopper (H100/H200) bf16: 0.834, torch.matmul 8192^3 at 788 TFLOP/s on one H200 in a short
  // run (device notes, 2026-10; an H100 reaches 792, ml-engineering MAMF) over this model's
  // 0.955 for that shape on 132 SMs. Ampere (A100) bf16/fp16: kAmpereGemmMaxEfficiency, fitted
  // on the corpus (below). Others: 0.70, an assumption.
  // default_compute_params() fills this from the GPU's architecture; calibration replaces it.
  double gemm_max_efficiency = 0.70;
  // The clock a GPU settles at, over its full clock, when tensor-core kernels run back to back
  // at its power cap. H100/H200: 0.863, call 9's 124-shape sweep at 700 W fits an in-tile 0.72
  // (scenarios/measurements/call9/kernel-shapes.json) against 0.834 at full clock. A100: 0.966,
  // 258 TFLOP/s for torch.matmul 8192^3 on random data at 400 W (H. He, "Strangely, matrix
  // multiplications on GPUs run faster when given predictable data", 2024) against MAMF's
  // 267.9. 1 (no cap reached) for others, an assumption.
  // It holds at the SKU's datasheet TDP (H100/H200 SXM 700 W, A100 SXM 400 W), at which its
  // peak is quoted. A GPU run at a lower cap (a scenario's tdp override, e.g. Meta's H100s at
  // 500 W) settles lower: default_compute_params() scales the clock by ((tdp - idle) /
  // (datasheet tdp - idle))^(1 / power_exponent), the law power_clock() uses, with the board's
  // measured idle power (GpuSpec::idle_w) kept out of the share the clock sets.
  double sustained_clock = 1.0;
  // Chips of one SKU do not settle at one clock under one cap: manufacturing variation moves
  // each chip's power at a given clock, and power management holds each at its own. Sinha et
  // al., "Not All GPUs Are Created Equal: Characterizing Variability in Large-Scale,
  // Accelerator-Rich Systems" (SC22, arXiv:2208.11035), timed SGEMM and other kernels on over
  // 90% of the GPUs of five clusters (V100: Summit, Vortex, Longhorn, Frontera; MI60: Corona):
  // 8% average performance variation (22% at most) between GPUs of one SKU, outliers (up to
  // 1.5x the median's time) apart. Read as the spread from the fastest to the slowest
  // non-outlier GPU, about +-2.7 standard deviations of a normal (a box plot's whiskers), the
  // standard deviation of a chip's sustained clock is 1.5%. A synchronous job waits for its
  // slowest GPU at every collective, so n GPUs run at sustained_clock x (1 - clock_spread x
  // expected_max_standard_normal(n)) (step_model.cc): 2.1% below the mean chip on 8 GPUs, 4.9%
  // on 1,024, 6.0% on 16,384; nothing on one GPU, and nothing on a kernel mix that stays under
  // the cap. An assumption for the chips of today (the measurement is of 2018-2020 GPUs).
  double clock_spread = 0.015;
  // How a step's kernel mix sets its clock: power ~ clock^power_exponent (dynamic power f V^2,
  // the voltage rising with the clock), and a memory-bound kernel draws memory_power_ratio of a
  // tensor-core kernel's power at the same clock. With a share g of the busy time in tensor-core
  // kernels, the cap holds when (g + (1 - g) r) x^a <= sustained_clock^-a, so the clock ratio
  // is x = min(1, sustained_clock / (g + (1 - g) r)^(1/a)). 2.5 and 0.3 put the GEMMs of call
  // 9's two H200 training steps at 726 TFLOP/s (compiled, 81% tensor-core time; measured 743)
  // and 786 (eager, 59%; measured 784).
  double power_exponent = 2.5;
  double memory_power_ratio = 0.3;
  // A tile's prologue and epilogue (loading its first operands, writing its output) cost about
  // as much as this many steps of its reduction: a tile of reduction k takes time in proportion
  // to k + gemm_k_overhead. 128 fits the 124 GEMM shapes of 40 us or longer in
  // scenarios/measurements/call9/kernel-shapes.json to 3.2% RMS, 17% worst (with the tile menu
  // of compute_model.cc).
  double gemm_k_overhead = 128;
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
  // The ceilings above are at head dim 128. Each attention score also costs work off the
  // tensor cores at the rate of the SMs' special-function units (an exponential, and the fp32 ->
  // bf16 conversions of the probabilities, and backward of their gradients: 16 per clock per SM
  // on sm_80-sm_100, CUDA C Programming Guide's arithmetic-instruction throughput table) beside
  // 4 x head_dim matmul FLOPs forward (10 x backward): a narrower head has less matmul to hide
  // it behind. The exposed part of that work per score, in exponentials, forward and backward,
  // from cuDNN's flash kernels behind PyTorch's SDPA on an H200 at 32K-128K tokens
  // (scenarios/measurements/call13/sdpa-head-dims.json): head dim 64 runs at 0.787 of head dim
  // 128's rate forward (455 vs 579 TFLOP/s), 0.780 backward (416 vs 533), which these give.
  // (At full clock; at_clock keeps the ratio: the exponentials slow with the clock as the
  // matmuls do.)
  double attention_fwd_exp_exposed = 0.792;
  double attention_bwd_exp_exposed = 2.20;
  // The tensor FLOPs per exponential (at peak) of the GPU the two ceilings above hold for at head
  // dim 128; 0: this GPU's own. A GPU with more tensor FLOPs per special-function exponential
  // than that pays the exposed exponentials' difference at head dim 128 too. Blackwell (sm_100)
  // takes Hopper's measured ceilings with Hopper's 256: its tensor cores doubled and its
  // exponentials did not (512 FLOPs each), which Blackwell Ultra's doubled exponentials (256
  // again) undo.
  double attention_ceiling_flops_per_exp = 0;
  // FlashAttention-2's kernels (workload.framework.attention: flash2) against the ceilings above,
  // forward and backward: FA2 is written for Ampere's mma.sync tensor-core instructions and uses
  // neither Hopper's warpgroup MMA nor TMA. On an H200 (torch 2.11, scenarios/measurements/
  // call26), SDPA forced to its flash backend ran causal attention at head dim 128, 8K-32K
  // tokens, at 0.580-0.590 of the cuDNN kernels' rate forward and 0.583-0.597 backward, each at
  // its own clock under the 700 W cap (FA2 342.7 TFLOP/s forward at 32K, cuDNN 591.0), which
  // these give. At head dim 64 the ratio measured 0.62-0.66: the exposed exponentials above
  // weigh less against FA2's slower matmuls, which the head-width factor reproduces (0.64).
  // 1 where FA2 is the native kernel (Ampere, the default). Blackwell takes Hopper's ratio,
  // unmeasured (its legacy MMA path is no faster relative to its peak).
  double flash2_fwd_ratio = 1.0;
  double flash2_bwd_ratio = 1.0;
  // FlashAttention's first release (flash-attn 1.0.x, workload.framework.attention: flash1)
  // against FlashAttention-2, both passes, on every GPU: Dao, "FlashAttention-2: Faster Attention
  // with Better Parallelism and Work Partitioning" (arXiv 2307.08691, 2023), on an A100: "around
  // 2x speedup compared to FlashAttention" (FlashAttention at 25-40% of the peak, FlashAttention-2
  // at 50-73%), from fewer non-matmul FLOPs, parallelism over the sequence and split-Q warps, none
  // of them tied to Ampere: FA1's kernels use the same mma.sync instructions on Hopper.
  double flash1_over_flash2 = 0.5;
  // Dropout of the attention probabilities inside a flash kernel: a random number drawn per
  // score (Philox) and the mask applied, forward and again in the backward, work off the tensor
  // cores, in SM clock cycles per score (the matmuls take 4 x head_dim FLOPs per score forward,
  // 10 x head_dim backward, at the GPU's tensor FLOPs per clock and SM). On an H100 (torch
  // 2.11, scenarios/measurements/call36), SDPA at dropout 0.1 against none, head dim 128, 12-32
  // heads, 4K-8K tokens, causal and full: cuDNN's kernels took 2.015x the time forward (median,
  // 1.90-2.11) and 1.203x backward (1.14-1.30), which these give against the ceilings above;
  // FlashAttention-2's 1.217x and 1.091x (flash2_*_dropout_cycles). The native kernel's are the
  // cuDNN ones on Hopper and Blackwell (Blackwell unmeasured), FlashAttention-2's on Ampere.
  double attention_fwd_dropout_cycles = 0.185;
  double attention_bwd_dropout_cycles = 0.099;
  double flash2_fwd_dropout_cycles = 0.068;
  double flash2_bwd_dropout_cycles = 0.075;
  // A weight-gradient GEMM that accumulates into the parameter's persistent gradient buffer
  // (Megatron-LM / Megatron-Core with Transformer Engine: gradient_accumulation_fusion, the
  // GEMM's C = D = main_grad with beta 1) reads and writes that buffer where a fresh bf16 GEMM
  // only writes: 6 more bytes per weight element into fp32 main_grad (read 4 + write 4 - 2), 2
  // into a bf16 one. This fraction of those bytes' time at the HBM rate is added to the GEMM:
  // on an H100 (device call 38, scenarios/measurements/call38/wgrad-accum.json,
  // validate/device/wgrad_accum_probe.cu, cublasGemmEx bf16 operands), 12 weight-gradient
  // shapes of 2048-14336 x 2048-8192 weights over 1,024-16,384 tokens, each timed fresh in bf16,
  // accumulated into fp32 and into bf16: least squares over the 24 differences 0.53 (the fp32
  // cases' median 0.58); fp32 accumulation cost 1.44x at 1,024 tokens, 1.09-1.11x at 4,096,
  // 1.02-1.06x at 8,192 and 1.01x at 16,384. The epilogue is only partly hidden behind the
  // next tile's main loop.
  double wgrad_accumulate_exposed = 0.53;
  // Achievable fraction of the HBM datasheet bandwidth: a 1 GiB device-to-device copy on one
  // H200 ran at 4.23 TB/s of its 4.8 (scenarios/measurements/h200-1gpu.json, hbm_copy; 4.20 in
  // h200-2gpu.json), 0.88.
  double hbm_efficiency = 0.90;
  // A memory-bound GEMM as cuBLAS streams it, against a device copy's rate (hbm_efficiency):
  // device call 40 (scenarios/measurements/call40, one H100, where the copy rate is 3.0 TB/s):
  // Llama 3 8B's K and V GEMMs at TP 8 over 98,304 tokens, forward (reading the 805 MB input),
  // data gradient (writing an 805 MB output) and weight gradient (reading both operands), fit
  // by least squares: operands read at 2.71 TB/s (0.90 of it), the output written at 2.49
  // (0.82); the three within 1.4%.
  double gemm_read_share = 0.90;
  double gemm_write_share = 0.82;
  // The fraction the fused memory-bound kernels of a layer reach (norms, softmax, dropout with
  // its random numbers, activations, residual adds: row reductions and mixed work, not plain
  // copies): torch's fused rms_norm ran at 3.18-3.49 TB/s of the H200's 4.8 at 64M-256M
  // elements in call 9's sweep (scenarios/measurements/call9/kernel-shapes.json), 0.73.
  double elementwise_efficiency = 0.73;
  // One kind of PyTorch eager elementwise kernel: the fraction of the H200's HBM bandwidth it
  // reaches there, and the share of its time there that scales with the SMs rather than with the
  // HBM (eager_bandwidth_Bps carries both to another GPU).
  struct EagerRate {
    double fraction = 1;
    double sm_bound = 0;
  };
  // PyTorch's eager elementwise kernels by kind. Fractions: device call 24 timed each alone on
  // an H200 at 16,384 tokens by 2048, 4096 and 5632 (scenarios/measurements/call24/
  // eager-ops.json; means of the three widths, TB/s of 4.8). SM-bound shares: device call 27
  // timed them again with MPS giving the process 100, 50 and 25% of the SMs
  // (scenarios/measurements/call27): the time per byte fits a + b / (share of SMs) within 8%
  // for most ops (22% worst), and b / (a + b) at all SMs is the share given (means over the
  // kind's ops and widths). A bf16 -> fp32 cast, a mixed-dtype add, GELU, LayerNorm and the
  // copies of strided or transposed views slow in proportion to the SMs taken away (0.8-0.9):
  // they are limited by what each SM keeps in flight, not by the HBM; a contiguous fp32 add or a
  // down-cast barely slows (0.1-0.2). The eager op list (layer_model.cc) charges each of its
  // terms its kind's rate.
  struct EagerRates {
    EagerRate cast_down{0.785, 0.16};     // fp32 -> bf16 copy: 3.48-3.92 TB/s
    EagerRate cast_up{0.395, 0.86};       // bf16 -> fp32 copy: 1.80-1.97 (call 9's "to_fp32":
                                          // 2.06-2.11)
    EagerRate mixed{0.545, 0.88};         // fp32 + bf16 into fp32: 2.57-2.70
    EagerRate same{0.76, 0.36};           // same-dtype contiguous add, multiply, SiLU (and its
                                          // backward), subtraction, bf16 and fp32: 3.05-4.11
                                          // (fp32 adds 0.04-0.12 SM-bound, SiLU 0.57-0.90)
    EagerRate gelu{0.555, 0.86};          // GELU forward: 2.53-2.76
    EagerRate gelu_backward{0.64, 0.88};  // 2.86-3.27
    EagerRate rms_norm{0.58, 0.44};       // torch's fused rms_norm forward, fp32 or bf16:
                                          // 2.45-3.23
    EagerRate layer_norm{0.44, 0.80};     // LayerNorm forward in bf16: 1.74-2.34
    EagerRate norm_backward{0.425, 0.26}; // rms_norm's backward, fp32 or bf16: 1.83-2.19
    EagerRate layout{0.275, 0.84};        // transposing copies and strided views' copies:
                                          // 1.20-1.42
    EagerRate strided{0.19, 0.84};        // a strided bf16 view times a broadcast fp32 table
                                          // (rotary's halves times cos or sin): 0.87-0.96
    EagerRate cat{0.68, 0.19};            // concatenation of contiguous halves: 2.81-3.49
    EagerRate memcpy{0.44, 0};            // device-to-device cudaMemcpy (FSDP2's copies out of
                                          // the gathered buffer): 9.8 ms a step for 18-22 GB in
                                          // call 23's profile (scenarios/measurements/call23),
                                          // 1.9-2.3 TB/s; its SM share was not measured
  };
  EagerRates eager;
  // torch.compile's elementwise kernels under autocast, as a share of the same step's eager
  // elementwise GPU time: device call 14 profiled eager and compiled steps of three models on one
  // H200 (scenarios/measurements/call14): 11.84 / 31.55 ms (134M), 46.99 / 161.59 (1.4B), 61.17 /
  // 189.82 (4.3B): 0.375, 0.291, 0.322, mean 0.33. Inductor fuses the ops but keeps autocast's
  // fp32 residual stream, and its fused SwiGLU and norm backward kernels run at 2.0-4.3 TB/s.
  double compiled_elementwise_share = 0.33;
  // FP8 GEMMs (e4m3/e5m2 operands, per-tensor scales) reach this fraction of the in-tile
  // efficiency bf16 GEMMs reach (gemm_max_efficiency), each of its own peak (fp8_gemm_params;
  // a calibration with both precisions replaces it): call 8 on one H200, cuBLAS at the 700 W
  // cap (scenarios/measurements/call8/h200-1gpu-shapes.json), fp8 1224.6 TFLOP/s of 1979 at
  // 8192^3 and 1222.2 at 16384^3 against bf16's 678.9 and 684.1 of 989, with the tile's fixed
  // time at fp8's peak (gemm_k_overhead(gpu, p)): 0.915, 0.900.
  double fp8_gemm_ratio = 0.91;
  // Blockwise-scaled FP8 GEMMs (1 x 128 activation tiles, 128 x 128 weight blocks, partial sums
  // promoted to fp32 every 128 of the reduction: DeepSeek-V3's recipe, DeepGEMM) pay a larger
  // fixed cost per output tile than per-tensor scaling (in steps at the fp8 peak, 3x per-tensor
  // fp8's 256): the tile model with this gemm_k_overhead (and the same in-tile rate) puts
  // DeepGEMM's ten published H800 shapes (deepseek-ai/DeepGEMM README of 2025-02-25, "Normal
  // GEMMs for dense models" M 4096 and the contiguous grouped ones, 590-1358 TFLOP/s) within
  // 3.3%, 1.9% RMS (the least RMS, in steps of 16).
  double blockwise_fp8_k_overhead = 768;
  // NVFP4 GEMMs (E2M1 operands, an E4M3 scale per 16, Blackwell's block-scaled tensor cores)
  // reach this fraction of the in-tile efficiency bf16 GEMMs reach, each of its own peak
  // (fp4_gemm_params): cuBLAS on a B200 (torchao's bench_matmul.py, pytorch/ao PR #2427, 2025),
  // nvfp4 5.50 and 5.37 PFLOP/s of 9 at 6144^3 and 8192^3 against bf16's 1.45 and 1.42 of
  // 2.25 in the same run: 0.946 both, all of it the tile's fixed time at the fp4 peak
  // (gemm_k_overhead(gpu, p), 4 x bf16's): the in-tile ratio is 1.00 (1.006, 0.989). MXFP8 has
  // no such measurement: its block scales are applied in the tensor core at the fp8 rate, so it
  // takes fp8_gemm_ratio. Blackwell Ultra: kBlackwellUltraFp4GemmRatio.
  double fp4_gemm_ratio = 1.0;
};

// Ampere's in-tile GEMM efficiency at full clock: fitted on the accuracy corpus's A100 runs
// (models/accuracy/corpus_fit.h, cross-validated leaving each source out by `clustersim
// accuracy`). Public microbenchmarks reach higher (ml-engineering MAMF: 267.9 of 312 TFLOP/s,
// 0.87 in-tile, on their best shape), training runs do not.
inline constexpr double kAmpereGemmMaxEfficiency = 0.76;
// What an A100 GEMM microbenchmark reaches in a tile at full clock: ml-engineering MAMF's 267.9
// of 312 TFLOP/s on its best shape (CUDA 12.1), ~0.985 of which the shape allows.
inline constexpr double kAmpereMicrobenchmarkGemmEfficiency = 0.87;

// Blackwell's clock under back-to-back tensor-core load, over the B200's full clock (1.856 GHz:
// 2.25 PFLOP/s bf16 dense on 148 SMs x 8192 FLOP/clock), at the HGX B200's 1,000 W: fitted on the
// accuracy corpus's Blackwell runs in bf16 or per-tensor fp8 (models/accuracy/corpus_fit.h; no
// public B200 clock-under-load measurement was found). The other Blackwell SKUs follow from it by
// blackwell_sustained_clock.
inline constexpr double kBlackwellSustainedClock = 0.91;
// Blackwell Ultra's (sm_103: B300, GB300) NVFP4 GEMMs: the fraction of the in-tile rate at its
// datasheet NVFP4 peak (15 PFLOP/s dense on GB300, 13.5 on HGX B300: 1.5x Blackwell's per SM and
// clock) that they reach, where a B200 reaches all of its own (fp4_gemm_ratio 1.0). No NVFP4 GEMM
// measurement on Blackwell Ultra was found; fitted on the accuracy corpus's Blackwell Ultra NVFP4
// runs (models/accuracy/corpus_fit.h: six runs of three sources, refitted without each
// 0.675-0.705; 0.68 before the Blackwell clock moved to 0.92 with the gradient buckets' NCCL
// calls, 0.635 before it moved to 0.91 with the context-parallel exchange's charge, 0.64 after
// it, 0.68 since NVFP4's casts take their amax pass). At 0.68 a GB300's NVFP4 GEMM runs about as
// fast as a GB200's at its 10 PFLOP/s: Megatron-Bridge's
// 405B on 256 GPUs gains 1.35-1.41x over FP8 on GB300 as 1.37-1.38x on GB200, where the datasheet
// peaks (3x against 2x) would give GB300 1.9x. Whether the power cap or the operand feed holds
// the tensor cores back is not separated: a power-only term (NVFP4 GEMMs drawing more at one
// clock) was tried and fits worse, moving the GEMM-heavy 405B rows three times as far as the 8B.
inline constexpr double kBlackwellUltraFp4GemmRatio = 0.68;
// The clock under tensor load, over the SKU's own full clock, of a Blackwell SKU (sm_100 family:
// B200, GB200, GB300) given the B200's: the SKUs share the SM (power per SM ~ clock^power_exponent,
// the law power_clock() uses) and differ in their power cap per SM and the full clock their
// datasheet quotes: clock = b200_clock x ((tdp / SMs) / (1000 W / 148))^(1 / power_exponent) x
// (B200 full clock / the SKU's full clock), at most 1. GB200 (1,200 W, 148 SMs, 2.06 GHz): 0.968 x
// the B200's; GB300 (1,400 W, 160 SMs, 1.91 GHz): 1.079 x; HGX B300 (1,100 W, 160 SMs, 1.72
// GHz): 1.089 x. `gpu` is the datasheet entry.
double blackwell_sustained_clock(const GpuSpec& gpu, double b200_clock,
                                 double power_exponent = ComputeParams{}.power_exponent);

// The catalog entry of the GPU's SKU (its datasheet: an overridden entry keeps its id), or the
// GPU itself where the id is not in the catalog.
const GpuSpec& datasheet_of(const GpuSpec& gpu);
// What a tdp below the SKU's datasheet cap leaves of the clock under tensor load: ((tdp - idle)
// / (datasheet tdp - idle))^(1 / power_exponent), idle the board's measured idle power
// (GpuSpec::idle_w, 0 where not measured); 1 at or above the cap.
double tdp_clock_factor(const GpuSpec& gpu, double power_exponent);

// The in-tile rate at full clock a GEMM microbenchmark reaches on this GPU (what an acceptance
// burn is held to): Hopper 0.834 (as gemm_max_efficiency), Ampere
// kAmpereMicrobenchmarkGemmEfficiency, others 0.70.
double microbenchmark_gemm_efficiency(const GpuSpec& gpu);

// The defaults for this GPU (the architecture picks gemm_max_efficiency and sustained_clock,
// see above).
ComputeParams default_compute_params(const GpuSpec& gpu);

// The expected largest of n independent standard normal draws: 0 for n = 1, 1/sqrt(pi) for 2,
// 1.42 for 8, 3.24 for 1,000, 3.97 for 16,384 (how many standard deviations the slowest of n chips sits from
// their mean; ComputeParams::clock_spread). REQUIRES: n >= 1.
double expected_max_standard_normal(int n);

// The clock ratio (1 = full clock) at which a step whose GPU-busy time is `tensor_share` in
// tensor-core kernels (GEMMs, attention) runs under the power cap (see sustained_clock).
double power_clock(double tensor_share, const ComputeParams& params);

// A tile's prologue and epilogue (its first operand loads, its 16-bit output written) take the
// same time whatever its operands' precision, so in reduction steps at a faster peak they count
// as more: gemm_k_overhead x peak(p) / peak(bf16) for the quantized precisions (fp8 2x, NVFP4
// 4-6x); the others keep gemm_k_overhead.
double gemm_k_overhead(const GpuSpec& gpu, Precision p, const ComputeParams& params);
// `params` for FP8 GEMMs on `gpu`: the in-tile efficiency times fp8_gemm_ratio, the tile's fixed
// cost gemm_k_overhead(gpu, fp8); blockwise scaling takes blockwise_fp8_k_overhead instead.
ComputeParams fp8_gemm_params(const GpuSpec& gpu, const ComputeParams& params,
                              bool blockwise = false);
// Where default_compute_params(gpu) takes the in-tile ratio of `p`'s GEMMs from
// (fp8_gemm_ratio, fp4_gemm_ratio), for reports: a measurement or the accuracy corpus. `mxfp8`:
// block-scaled FP8, which takes per-tensor FP8's ratio unmeasured. REQUIRES: quantized(p).
std::string_view quantized_gemm_ratio_source(const GpuSpec& gpu, Precision p, bool mxfp8);
// `params` for NVFP4 GEMMs on `gpu`: the in-tile efficiency times fp4_gemm_ratio, the tile's
// fixed cost gemm_k_overhead(gpu, fp4).
ComputeParams fp4_gemm_params(const GpuSpec& gpu, const ComputeParams& params);
// `params` for GEMMs in precision `p` on `gpu`: fp8_gemm_params (with `blockwise`) or
// fp4_gemm_params for the quantized precisions, `params` itself for the others.
ComputeParams gemm_params(const GpuSpec& gpu, Precision p, const ComputeParams& params,
                          bool blockwise = false);
// The bandwidth (bytes/s) a kind of eager kernel reaches on `gpu`: its time per byte on the H200
// (1 / (fraction x 4.8 TB/s)) split into the part that scales with the HBM's bandwidth, 1 -
// sm_bound of it, and the part that scales with the number of SMs (what each SM keeps in
// flight over the memory's latency, not its clock), at most what a copy reaches
// (hbm_efficiency). On the H200 itself: fraction x 4.8 TB/s. A GPU without an SM count keeps the
// H200's for that part.
double eager_bandwidth_Bps(const GpuSpec& gpu, const ComputeParams::EagerRate& rate,
                           const ComputeParams& params);
// `params` for FlashAttention-2's kernels (framework.attention: flash2): the attention ceilings
// times flash2_fwd_ratio / flash2_bwd_ratio.
ComputeParams flash2_params(const ComputeParams& params);
// The same for FlashAttention 1 (flash1_over_flash2 of FlashAttention-2's ceilings, its dropout).
ComputeParams flash1_params(const ComputeParams& params);

// The clock flash attention runs at in a step whose kernel mix holds `clock`: at most the
// sustained one, since its kernels draw the power cap by themselves (device calls 12-23: their
// GPU time in 23 profiled H200 steps).
double attention_clock(const ComputeParams& params, double clock);

// `params` with the tensor-core rates scaled to that clock (GEMMs) or to attention_clock
// (attention ceilings); memory-bound kernels keep their rate (HBM does not slow with the SM
// clock).
ComputeParams at_clock(const ComputeParams& params, double clock);

// C[m x n] = A[m x k] B[k x n], every operand in the given precision; `batch` independent
// products of that shape in one launch (a batched GEMM: attention's QK^T and AV per head).
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;
  double flops() const { return 2 * m * n * k * batch; }
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
  // Sliding-window attention: each query sees at most this many keys (0: all of them).
  double window = 0;
  // Dropout of the attention probabilities (0: none): ComputeParams::attention_*_dropout_cycles.
  double dropout = 0;
  // The keys a query's row of scores spans, what the kernel's rate ramps with: kv_tokens, or
  // the window when it is shorter.
  double key_span() const { return window > 0 && window < kv_tokens ? window : kv_tokens; }
  // QK^T and AV: 2 matmuls of 2 * q * head_dim FLOPs per head for each key a query sees
  // (attention_keys_per_query).
  double forward_flops() const;
};

// The keys a query's scores are computed against, on average over a sequence of `keys`: all of
// them, half when causal; with a sliding window (tokens, 0: none) at most the window (each
// query of a long sequence sees the whole window; the first window's shorter rows are not
// counted apart). The one count of attention's FLOPs: kernel times and the FLOPs per token.
double attention_keys_per_query(double keys, double window, bool causal);

struct KernelTime {
  double time_s = 0;
  double flops = 0;
  double bytes = 0;           // HBM traffic
  double efficiency = 0;      // achieved FLOP/s over peak
  bool memory_bound = false;  // bytes, not FLOPs, set the time
};

// One GEMM, as cuBLAS-like kernels run it: the output cut into tiles (the best of 128 x 256,
// 256 x 128, 128 x 128, 64 x 128, 128 x 64, smaller tiles reusing operands less), the reduction
// optionally split (split-K, up to 8 ways while each split keeps >= 256), tiles issued in waves
// of one per SM (GpuSpec::sm_count); each tile takes (k + gemm_k_overhead) steps at the in-tile
// rate gemm_max_efficiency x peak / SMs. The roofline against the operands' HBM traffic bounds
// it from below. REQUIRES: the GPU has a nonzero peak for the precision.
KernelTime gemm_time(const GpuSpec& gpu, Precision precision, const GemmShape& shape,
                     const ComputeParams& params);
// The fraction of the in-tile rate that the shape's tiles, waves and reduction length allow
// (1 for a huge, well-divided GEMM; 0.3 for 2048 x 768 x 768 on 132 SMs).
double gemm_shape_efficiency(const GpuSpec& gpu, const GemmShape& shape,
                             const ComputeParams& params);
// Flash attention forward, or backward (2.5x the forward FLOPs: five matmuls to the forward's
// two, recomputing the scores, FlashAttention-2 section 3.1.2). In fp8 (Transformer Engine's FP8
// attention) the matmuls reach the 16-bit kernels' fraction of the fp8 peak and the softmax's
// exponentials keep their rate, so they weigh twice as much: on an H100 at head dim 128 the
// forward runs 1.57x the 16-bit one, at head dim 256 1.73x (FlashAttention-3, Shah et al. 2024:
// up to 740 TFLOP/s in FP16, close to 1.2 PFLOP/s in FP8, 1.6x).
KernelTime attention_time(const GpuSpec& gpu, Precision precision, const AttentionShape& shape,
                          bool backward, const ComputeParams& params);
// A memory-bound kernel: bytes read plus written over the achievable HBM bandwidth (copy-like
// streams: the optimizer, gradient buffers).
KernelTime memory_bound_time(const GpuSpec& gpu, double bytes, const ComputeParams& params);
// The same for a layer's fused elementwise kernels (norms, softmax, dropout, activations,
// residual adds), at elementwise_efficiency of the datasheet bandwidth.
KernelTime elementwise_time(const GpuSpec& gpu, double bytes, const ComputeParams& params);

}  // namespace clustersim::models
