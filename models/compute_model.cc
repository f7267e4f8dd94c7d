#include "models/compute_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "models/result.h"

namespace clustersim::models {
namespace {

double checked_peak(const GpuSpec& gpu, Precision precision) {
  const double peak = gpu.peak_flops(precision);
  CS_ASSERT(peak > 0, gpu.id + " has no " + std::string(to_string(precision)) + " peak");
  return peak;
}

// Time of `flops` at `efficiency` of `peak` and `bytes` at the achievable HBM rate: the roofline.
KernelTime roofline(const GpuSpec& gpu, double peak, double flops, double bytes, double efficiency,
                    const ComputeParams& params) {
  CS_ASSERT(gpu.hbm_Bps > 0, gpu.id + " has no memory bandwidth");
  KernelTime k;
  k.flops = flops;
  k.bytes = bytes;
  const double compute_s = flops > 0 ? flops / (peak * efficiency) : 0;
  const double memory_s = bytes / (gpu.hbm_Bps * params.hbm_efficiency);
  k.memory_bound = memory_s > compute_s;
  k.time_s = std::max(compute_s, memory_s);
  k.efficiency = k.time_s > 0 && peak > 0 ? flops / k.time_s / peak : 0;
  return k;
}

}  // namespace

// Hopper's clock under tensor load and its flash attention's measured fractions of peak at that
// clock (default_compute_params below); its dense bf16 tensor FLOPs per exponential (4096 per
// clock and SM against 16 exponentials: tensor_flops_per_exponential).
constexpr double kHopperSustainedClock = 0.863;
constexpr double kHopperAttentionFwd = 0.592, kHopperAttentionBwd = 0.556;
constexpr double kHopperFlopsPerExponential = 4096.0 / 16;
// FlashAttention-2 against cuDNN on the H200 (ComputeParams::flash2_fwd_ratio).
constexpr double kHopperFlash2Fwd = 0.585, kHopperFlash2Bwd = 0.590;

// Hopper's measured attention kernels at full clock: cuDNN's ceilings (the measured figures over
// the sustained clock they ran at) and FlashAttention-2's fraction of them.
void set_hopper_attention(ComputeParams* p) {
  p->attention_fwd_max_efficiency = kHopperAttentionFwd / kHopperSustainedClock;
  p->attention_bwd_max_efficiency = kHopperAttentionBwd / kHopperSustainedClock;
  p->flash2_fwd_ratio = kHopperFlash2Fwd;
  p->flash2_bwd_ratio = kHopperFlash2Bwd;
}

ComputeParams default_compute_params(const GpuSpec& gpu) {
  ComputeParams p;
  if (gpu.arch == "sm_90") {
    p.gemm_max_efficiency = 0.834;
    p.sustained_clock = kHopperSustainedClock;
    // cuDNN's flash kernels behind PyTorch's SDPA (and Transformer Engine) on an H200, causal,
    // 4K-256K tokens: `calibrate --attention-reference scenarios/measurements/call8/
    // torch-shapes.json` fits forward 0.592 of peak, backward 0.556. (Its half-efficiency
    // length, 1797 tokens, is that run's: one sequence of 16 heads fills the GPU late; call 9's
    // training steps, 2 x 16 heads at 8K, reached 0.60 forward, so the default ramp is kept.)
    // That sweep ran power-capped at about the sustained clock (call 13's smi-sdpa.csv:
    // 1550-1900 MHz at 690 W on long sequences), and the step model applies its own clock on
    // top: the ceilings are the measured figures over the sustained clock.
    set_hopper_attention(&p);
  }
  if (gpu.arch == "sm_80") {
    p.gemm_max_efficiency = kAmpereGemmMaxEfficiency;
    p.sustained_clock = 0.966;
    // FlashAttention-2 is Ampere's native flash kernel.
    p.attention_fwd_dropout_cycles = p.flash2_fwd_dropout_cycles;
    p.attention_bwd_dropout_cycles = p.flash2_bwd_dropout_cycles;
  }
  if (arch_family(gpu.arch) == "sm_100") {
    p.sustained_clock = blackwell_sustained_clock(datasheet_of(gpu), kBlackwellSustainedClock,
                                                  p.power_exponent);
    // Hopper's measured attention ceilings at full clock (above), paid at Blackwell's own rate
    // of exponentials (attention_ceiling_flops_per_exp).
    set_hopper_attention(&p);
    p.attention_ceiling_flops_per_exp = kHopperFlopsPerExponential;
    if (blackwell_ultra(gpu.arch)) p.fp4_gemm_ratio = kBlackwellUltraFp4GemmRatio;
  }
  // The SKU's datasheet cap is the reference (its peak is quoted at it); a scenario that lowers
  // the GPU's tdp lowers the clock its tensor cores sustain.
  p.sustained_clock *= tdp_clock_factor(gpu, p.power_exponent);
  return p;
}

const GpuSpec& datasheet_of(const GpuSpec& gpu) {
  const GpuSpec* datasheet = find_gpu(gpu.id);
  return datasheet != nullptr ? *datasheet : gpu;
}

double tdp_clock_factor(const GpuSpec& gpu, double power_exponent) {
  const GpuSpec& datasheet = datasheet_of(gpu);
  if (gpu.tdp_w <= 0 || gpu.tdp_w >= datasheet.tdp_w) return 1;
  // The idle board's power stays whatever the clock: the cap's cut comes out of the rest (the
  // scenario loader refuses an idle power at or above the cap).
  CS_ASSERT(gpu.idle_w >= 0 && gpu.idle_w < gpu.tdp_w, gpu.id + ": idle power below the cap");
  return std::pow((gpu.tdp_w - gpu.idle_w) / (datasheet.tdp_w - gpu.idle_w), 1 / power_exponent);
}

double blackwell_sustained_clock(const GpuSpec& gpu, double b200_clock, double power_exponent) {
  static const GpuSpec& b200 = *find_gpu("b200");  // the reference: 1,000 W, 148 SMs
  if (gpu.sm_count <= 0 || gpu.tdp_w <= 0 || gpu.bf16_flops <= 0) return b200_clock;
  const double power_per_sm = (gpu.tdp_w / gpu.sm_count) / (b200.tdp_w / b200.sm_count);
  // Full clocks in proportion to the dense bf16 peak per SM.
  const double full_clock = (gpu.bf16_flops / gpu.sm_count) / (b200.bf16_flops / b200.sm_count);
  return std::min(1.0, b200_clock * std::pow(power_per_sm, 1 / power_exponent) / full_clock);
}

double microbenchmark_gemm_efficiency(const GpuSpec& gpu) {
  if (gpu.arch == "sm_80") return kAmpereMicrobenchmarkGemmEfficiency;
  return default_compute_params(gpu).gemm_max_efficiency;
}

double expected_max_standard_normal(int n) {
  CS_ASSERT(n >= 1, "the largest of " + std::to_string(n) + " draws");
  if (n == 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by the midpoint rule on [-8, 9] in steps
  // of 0.005 (error below 1e-6 up to a million draws); a search times thousands of layouts of a
  // few job sizes, so each size is integrated once per thread.
  thread_local std::vector<std::pair<int, double>> cache;
  for (const auto& [size, value] : cache) {
    if (size == n) return value;
  }
  constexpr double kStep = 0.005;
  const double inv_sqrt_2pi = 1 / std::sqrt(2 * std::numbers::pi);
  double sum = 0;
  for (double x = -8 + kStep / 2; x < 9; x += kStep) {
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    if (cdf <= 0) continue;
    sum += x * n * inv_sqrt_2pi * std::exp(-0.5 * x * x + (n - 1) * std::log(cdf)) * kStep;
  }
  if (cache.size() >= 64) cache.clear();
  cache.emplace_back(n, sum);
  return sum;
}

double power_clock(double tensor_share, const ComputeParams& params) {
  const double g = std::clamp(tensor_share, 0.0, 1.0);
  const double load = g + (1 - g) * params.memory_power_ratio;
  if (load <= 0) return 1;
  return std::min(1.0, params.sustained_clock / std::pow(load, 1 / params.power_exponent));
}

double gemm_k_overhead(const GpuSpec& gpu, Precision p, const ComputeParams& params) {
  const double base = gpu.peak_flops(Precision::kBf16);
  if (!quantized(p) || base <= 0 || gpu.peak_flops(p) <= 0) return params.gemm_k_overhead;
  return params.gemm_k_overhead * gpu.peak_flops(p) / base;
}

ComputeParams fp8_gemm_params(const GpuSpec& gpu, const ComputeParams& params, bool blockwise) {
  ComputeParams p = params;
  p.gemm_max_efficiency *= params.fp8_gemm_ratio;
  p.gemm_k_overhead = blockwise ? params.blockwise_fp8_k_overhead
                                : gemm_k_overhead(gpu, Precision::kFp8, params);
  return p;
}

std::string_view quantized_gemm_ratio_source(const GpuSpec& gpu, Precision p, bool mxfp8) {
  if (p == Precision::kFp4) {
    return blackwell_ultra(gpu.arch)
               ? "fitted on the accuracy corpus: no Blackwell Ultra NVFP4 GEMM measurement is "
                 "published"
               : "cuBLAS measured on a B200";
  }
  return mxfp8 ? "per-tensor FP8's, cuBLAS measured on an H200; MXFP8's own is not measured"
               : "cuBLAS measured on an H200";
}

ComputeParams fp4_gemm_params(const GpuSpec& gpu, const ComputeParams& params) {
  ComputeParams p = params;
  p.gemm_max_efficiency *= params.fp4_gemm_ratio;
  p.gemm_k_overhead = gemm_k_overhead(gpu, Precision::kFp4, params);
  return p;
}

double eager_bandwidth_Bps(const GpuSpec& gpu, const ComputeParams::EagerRate& rate,
                           const ComputeParams& params) {
  static const GpuSpec& h200 = *find_gpu("h200-sxm");  // where call 24 and call 27 ran
  CS_ASSERT(gpu.hbm_Bps > 0 && rate.fraction > 0, gpu.id + ": an eager kernel's bandwidth");
  const double sms = gpu.sm_count > 0 ? gpu.sm_count : h200.sm_count;
  const double reference_s = 1 / (rate.fraction * h200.hbm_Bps);  // per byte on the H200
  const double per_byte_s = reference_s * ((1 - rate.sm_bound) * h200.hbm_Bps / gpu.hbm_Bps +
                                           rate.sm_bound * h200.sm_count / sms);
  return std::min(1 / per_byte_s, params.hbm_efficiency * gpu.hbm_Bps);
}

ComputeParams flash2_params(const ComputeParams& params) {
  ComputeParams p = params;
  p.attention_fwd_max_efficiency *= params.flash2_fwd_ratio;
  p.attention_bwd_max_efficiency *= params.flash2_bwd_ratio;
  p.attention_fwd_dropout_cycles = params.flash2_fwd_dropout_cycles;
  p.attention_bwd_dropout_cycles = params.flash2_bwd_dropout_cycles;
  return p;
}

ComputeParams flash1_params(const ComputeParams& params) {
  ComputeParams p = flash2_params(params);
  p.attention_fwd_max_efficiency *= params.flash1_over_flash2;
  p.attention_bwd_max_efficiency *= params.flash1_over_flash2;
  return p;
}

ComputeParams gemm_params(const GpuSpec& gpu, Precision p, const ComputeParams& params,
                          bool blockwise) {
  if (p == Precision::kFp8) return fp8_gemm_params(gpu, params, blockwise);
  if (p == Precision::kFp4) return fp4_gemm_params(gpu, params);
  return params;
}

double attention_clock(const ComputeParams& params, double clock) {
  return std::min(clock, params.sustained_clock);
}

ComputeParams at_clock(const ComputeParams& params, double clock) {
  ComputeParams p = params;
  p.gemm_max_efficiency *= clock;
  const double attention = attention_clock(params, clock);
  p.attention_fwd_max_efficiency *= attention;
  p.attention_bwd_max_efficiency *= attention;
  // The exposed exponentials are counted against the (now clocked) ceiling: they slow with the
  // clock too, so their weight against it stays the same.
  if (attention > 0) {
    p.attention_fwd_exp_exposed /= attention;
    p.attention_bwd_exp_exposed /= attention;
    p.attention_fwd_dropout_cycles /= attention;
    p.attention_bwd_dropout_cycles /= attention;
    p.flash2_fwd_dropout_cycles /= attention;
    p.flash2_bwd_dropout_cycles /= attention;
  }
  return p;
}

double gemm_shape_efficiency(const GpuSpec& gpu, const GemmShape& shape,
                             const ComputeParams& params) {
  // Output tiles (rows x columns) cuBLAS chooses among on Ampere and Hopper, with the in-tile
  // efficiency of each relative to the largest (smaller tiles load more operand bytes per
  // FLOP): fitted with gemm_k_overhead on scenarios/measurements/call9/kernel-shapes.json.
  struct Tile {
    double rows, cols, efficiency;
  };
  static constexpr Tile kTiles[] = {
      {128, 256, 1.0}, {256, 128, 1.0}, {128, 128, 0.95}, {64, 128, 0.6}, {128, 64, 0.6}};
  constexpr int kMaxSplits = 8;
  constexpr double kMinSplitK = 256;
  const double sms = gpu.sm_count > 0 ? gpu.sm_count : 1;
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) return 1;
  const double ideal = shape.m * shape.n * shape.k * shape.batch;  // in tile-step units x SM
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles =
        std::ceil(shape.m / t.rows) * std::ceil(shape.n / t.cols) * shape.batch;
    for (int s = 1; s <= kMaxSplits; ++s) {
      if (s > 1 && shape.k / s < kMinSplitK) break;
      const double waves = std::ceil(tiles * s / sms);
      const double cost = waves * sms * t.rows * t.cols * (shape.k / s + params.gemm_k_overhead) /
                          t.efficiency;
      best = std::max(best, ideal / cost);
    }
  }
  return best;
}

double attention_keys_per_query(double keys, double window, bool causal) {
  const double full = causal ? 0.5 * keys : keys;
  return window > 0 ? std::min(window, full) : full;
}

double AttentionShape::forward_flops() const {
  return 2 * 2 * batch * heads * q_tokens * attention_keys_per_query(kv_tokens, window, causal) *
         head_dim;
}

KernelTime gemm_time(const GpuSpec& gpu, Precision precision, const GemmShape& shape,
                     const ComputeParams& params) {
  const double flops = shape.flops();
  const double efficiency = params.gemm_max_efficiency * gemm_shape_efficiency(gpu, shape, params);
  // The operands in `precision`; a quantized GEMM (FP8, FP4) writes its output in 16 bits, as
  // training's forward and gradient GEMMs do (Transformer Engine, torchao: bf16 out). Device
  // call 40 (scenarios/measurements/call40): an e4m3 data gradient of 98,304 x 4096 from 128
  // columns, 0.34 ms on an H100, the time of its bf16 twin: the output's write. Reads and the
  // write run below a copy's rate (gemm_read_share, gemm_write_share): `bytes` is what a copy
  // would move in the same time.
  const double out_bytes = quantized(precision) ? 2 : bytes_per_element(precision);
  const double read = (shape.m * shape.k + shape.k * shape.n) * bytes_per_element(precision);
  const double written = shape.m * shape.n * out_bytes;
  const double bytes =
      (read / params.gemm_read_share + written / params.gemm_write_share) * shape.batch;
  return roofline(gpu, checked_peak(gpu, precision), flops, bytes, efficiency, params);
}

namespace {

// Dense bf16 tensor FLOPs per special-function exponential, per clock and SM: tensor cores
// 2048 FLOP/clock/SM on Ampere (A100: 312 TFLOP/s = 108 SMs x 1.41 GHz x 2048), 4096 on Hopper,
// 8192 on Blackwell; 16 exponentials per clock per SM on each (CUDA C Programming Guide,
// arithmetic instructions), 32 on Blackwell Ultra (sm_103: twice Blackwell's special-function
// throughput for exponentials, 10.7 T/s on 160 SMs; NVIDIA, "Inside NVIDIA Blackwell Ultra").
double tensor_flops_per_clock(const GpuSpec& gpu) {
  if (gpu.arch == "sm_80" || gpu.arch == "sm_86" || gpu.arch == "sm_89") return 2048.0;
  if (arch_family(gpu.arch) == "sm_100") return 8192.0;
  return 4096.0;
}

double tensor_flops_per_exponential(const GpuSpec& gpu) {
  return tensor_flops_per_clock(gpu) / (blackwell_ultra(gpu.arch) ? 32.0 : 16.0);
}

// The attention matmuls' FLOPs per score: 4 x head_dim forward (QK^T and AV), 10 x head_dim
// backward (it recomputes the probabilities).
double flops_per_score(double head_dim, bool backward) {
  return (backward ? 10.0 : 4.0) * std::max(1.0, head_dim);
}

// `tensor_rate`: the matmuls' peak over the 16-bit one (FP8 attention: 2), which the
// exponentials do not share.
double attention_head_dim_factor(const GpuSpec& gpu, double head_dim, bool backward,
                                 double tensor_rate, const ComputeParams& params) {
  // Exponential time over matmul time at peak: one exponential per score.
  const double exp_ratio =
      tensor_rate * tensor_flops_per_exponential(gpu) / flops_per_score(head_dim, backward);
  const double reference = params.attention_ceiling_flops_per_exp > 0
                               ? params.attention_ceiling_flops_per_exp
                               : tensor_flops_per_exponential(gpu);
  const double exp_ratio_128 = reference / flops_per_score(128, backward);
  const double exposed =
      backward ? params.attention_bwd_exp_exposed : params.attention_fwd_exp_exposed;
  const double ceiling =
      backward ? params.attention_bwd_max_efficiency : params.attention_fwd_max_efficiency;
  // time / FLOPs at peak = 1 / ceiling at head dim 128; the exposed exponentials add or take
  // away their difference at another width.
  const double inverse = 1 / ceiling + exposed * (exp_ratio - exp_ratio_128);
  return inverse > 0 ? 1 / (ceiling * inverse) : 1;
}

}  // namespace

KernelTime attention_time(const GpuSpec& gpu, Precision precision, const AttentionShape& shape,
                          bool backward, const ComputeParams& params) {
  const double flops = shape.forward_flops() * (backward ? 2.5 : 1.0);
  // FP8 attention takes the 16-bit kernels' in-tile ceiling at its own peak; its exponentials
  // weigh twice as much against the faster matmuls.
  const bool quantized = precision == Precision::kFp8 || precision == Precision::kFp4;
  const double tensor_rate =
      quantized ? checked_peak(gpu, precision) / checked_peak(gpu, Precision::kBf16) : 1.0;
  double ceiling =
      (backward ? params.attention_bwd_max_efficiency : params.attention_fwd_max_efficiency) *
      attention_head_dim_factor(gpu, shape.head_dim, backward, tensor_rate, params);
  if (shape.dropout > 0 && ceiling > 0) {
    // The dropout's cycles per score against the matmuls' per score, at peak.
    const double cycles =
        backward ? params.attention_bwd_dropout_cycles : params.attention_fwd_dropout_cycles;
    ceiling = 1 / (1 / ceiling + tensor_rate * tensor_flops_per_clock(gpu) * cycles /
                                     flops_per_score(shape.head_dim, backward));
  }
  const double efficiency =
      ceiling * shape.key_span() / (shape.key_span() + params.attention_half_efficiency_kv_tokens);
  // Q and O (query heads), K and V (kv heads) read once, O written; backward moves each twice
  // (inputs and their gradients).
  const double elements = shape.batch * shape.head_dim *
                          (2 * shape.q_tokens * shape.heads + 2 * shape.kv_tokens * shape.kv_heads);
  const double bytes = elements * bytes_per_element(precision) * (backward ? 2 : 1);
  return roofline(gpu, checked_peak(gpu, precision), flops, bytes, efficiency, params);
}

KernelTime memory_bound_time(const GpuSpec& gpu, double bytes, const ComputeParams& params) {
  return roofline(gpu, 0, 0, bytes, 0, params);
}

KernelTime elementwise_time(const GpuSpec& gpu, double bytes, const ComputeParams& params) {
  ComputeParams p = params;
  p.hbm_efficiency = params.elementwise_efficiency;
  return roofline(gpu, 0, 0, bytes, 0, p);
}

}  // namespace clustersim::models
