#include "models/compute_model.h"

#include <doctest/doctest.h>

using namespace clustersim::models;

TEST_SUITE("models") {
  TEST_CASE("compute: default GEMM ceilings by architecture") {
    // REFERENCE.md: H100/H200 bf16 ~655 TFLOP/s sustained at 700 W; ml-engineering MAMF: A100
    // SXM 267.9 TFLOP/s.
    CHECK(default_compute_params(*find_gpu("h100-sxm")).gemm_max_efficiency ==
          doctest::Approx(655.0 / 989.0));
    CHECK(default_compute_params(*find_gpu("h200-sxm")).gemm_max_efficiency ==
          doctest::Approx(655.0 / 989.0));
    CHECK(default_compute_params(*find_gpu("a100-sxm-80gb")).gemm_max_efficiency ==
          doctest::Approx(267.9 / 312.0));
    CHECK(default_compute_params(*find_gpu("l40s")).gemm_max_efficiency == doctest::Approx(0.70));
  }

  TEST_CASE("compute: a large bf16 GEMM runs at the sustained rate") {
    const GpuSpec& h100 = *find_gpu("h100-sxm");
    const auto params = default_compute_params(h100);
    const GemmShape shape{8192, 8192, 8192};
    const auto k = gemm_time(h100, Precision::kBf16, shape, params);
    CHECK_FALSE(k.memory_bound);
    CHECK(k.flops == doctest::Approx(2.0 * 8192 * 8192 * 8192));
    // Within 0.1% of 655 TFLOP/s (the size term costs 1e9 / 1.1e12).
    CHECK(k.flops / k.time_s == doctest::Approx(655e12).epsilon(0.002));
    const auto a100 = *find_gpu("a100-sxm-80gb");
    const auto ka = gemm_time(a100, Precision::kBf16, shape, default_compute_params(a100));
    CHECK(ka.flops / ka.time_s == doctest::Approx(267.9e12).epsilon(0.002));
  }

  TEST_CASE("compute: efficiency saturates with the GEMM's work") {
    const GpuSpec& h100 = *find_gpu("h100-sxm");
    ComputeParams p;
    p.gemm_max_efficiency = 0.8;
    p.gemm_half_efficiency_flops = 2.0 * 512 * 512 * 512;
    // At w = w_half the GEMM runs at half the ceiling: 0.4 of peak.
    const auto half = gemm_time(h100, Precision::kBf16, {512, 512, 512}, p);
    CHECK_FALSE(half.memory_bound);
    CHECK(half.efficiency == doctest::Approx(0.4));
    CHECK(half.time_s == doctest::Approx(2.0 * 512 * 512 * 512 / (989e12 * 0.4)));
    const auto big = gemm_time(h100, Precision::kBf16, {16384, 16384, 16384}, p);
    CHECK(big.efficiency > 0.79);
  }

  TEST_CASE("compute: a matrix-vector product is memory-bound") {
    const GpuSpec& h100 = *find_gpu("h100-sxm");
    const auto params = default_compute_params(h100);
    const auto k = gemm_time(h100, Precision::kBf16, {1, 8192, 8192}, params);
    CHECK(k.memory_bound);
    const double bytes = (8192.0 + 8192.0 * 8192 + 8192) * 2;
    CHECK(k.bytes == doctest::Approx(bytes));
    CHECK(k.time_s == doctest::Approx(bytes / (3350e9 * 0.9)));
    const auto copy = memory_bound_time(h100, 1e9, params);
    CHECK(copy.time_s == doctest::Approx(1e9 / (3350e9 * 0.9)));
    CHECK(copy.memory_bound);
  }

  TEST_CASE("compute: attention FLOPs, causal and full, forward and backward") {
    // Per token per layer, full attention does 4 s h FLOPs forward (QK^T and AV, Narayanan et
    // al. 2021): with h = heads x head_dim.
    AttentionShape full{.batch = 1,
                        .heads = 64,
                        .kv_heads = 8,
                        .head_dim = 128,
                        .q_tokens = 4096,
                        .kv_tokens = 4096,
                        .causal = false};
    CHECK(full.forward_flops() == doctest::Approx(4.0 * 4096 * 4096 * 8192));
    AttentionShape causal = full;
    causal.causal = true;
    CHECK(causal.forward_flops() == doctest::Approx(full.forward_flops() / 2));
    const GpuSpec& h100 = *find_gpu("h100-sxm");
    const auto params = default_compute_params(h100);
    const auto fwd = attention_time(h100, Precision::kBf16, causal, false, params);
    const auto bwd = attention_time(h100, Precision::kBf16, causal, true, params);
    CHECK(bwd.flops == doctest::Approx(2.5 * fwd.flops));
    // 4K tokens: 4096 / (4096 + 512) of the 0.60 forward ceiling.
    CHECK(fwd.efficiency == doctest::Approx(0.60 * 4096 / 4608));
    CHECK(bwd.efficiency == doctest::Approx(0.45 * 4096 / 4608));
    CHECK(fwd.time_s == doctest::Approx(fwd.flops / (989e12 * 0.60 * 4096 / 4608)));
  }
}
