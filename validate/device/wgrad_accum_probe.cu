// What does accumulating a weight gradient into an fp32 buffer cost the GEMM that computes it?
// Megatron-LM / Megatron-Core with Transformer Engine (gradient_accumulation_fusion, on by
// default) compute each linear's weight gradient dW = dY^T X straight into the parameter's
// main_grad: a cuBLASLt GEMM with bf16 operands, an fp32 C = D and beta = 1, which reads and
// writes 8 bytes per weight element where a plain bf16 GEMM writes 2. With grad_reduce_in_fp32
// off the buffer is bf16 (read 2, write 2). Whether those bytes cost time depends on how much of
// the epilogue the kernel hides behind the next tile's main loop, which this probe measures.
// For each weight-gradient shape (M x N weight, K tokens) it times, interleaved over rounds:
//   bf16      D bf16, beta 0 (a GEMM that starts a fresh gradient)
//   fp32_acc  C = D fp32, beta 1 (main_grad in fp32, Megatron's default for bf16 training)
//   bf16_acc  C = D bf16, beta 1 (main_grad in bf16)
// through cublasGemmEx (CUBLAS_COMPUTE_32F; cuBLAS picks its kernels through cuBLASLt's
// heuristics, as Transformer Engine's general_gemm does), A = dY^T taken transposed from a
// token-major [K x M] buffer and B = X from a token-major [K x N] one, as the weight gradient's
// operands are laid out in training. Prints one JSON object: per shape and case the median time
// of one GEMM (CUDA events over a timed loop), TFLOP/s, and the ratio to bf16.
// Build: nvcc -O3 -arch=sm_90 -o wgrad_accum_probe wgrad_accum_probe.cu -lcublas
// Run:   ./wgrad_accum_probe [seconds_per_case=0.25] [rounds=3]
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_check.h"

namespace {

struct Shape {
  const char* what;
  int m, n, k;  // weight M x N (out x in), K tokens
};

// Weight-gradient shapes of training layouts (per GPU, tokens of one micro-batch after SP's
// gather): GPT 1.7B (h 2048, TP 1, 4096 tokens), Llama 3 70B at TP 4 (8192 tokens), and a token
// sweep over one 8192 x 8192 weight.
const Shape kShapes[] = {
    {"gpt1.7b qkv", 6144, 2048, 4096},   {"gpt1.7b proj", 2048, 2048, 4096},
    {"gpt1.7b fc1", 8192, 2048, 4096},   {"gpt1.7b fc2", 2048, 8192, 4096},
    {"llama70b-tp4 qkv", 2560, 8192, 8192}, {"llama70b-tp4 fc1", 14336, 8192, 8192},
    {"llama70b-tp4 fc2", 8192, 7168, 8192}, {"sweep", 8192, 8192, 1024},
    {"sweep", 8192, 8192, 2048},         {"sweep", 8192, 8192, 4096},
    {"sweep", 8192, 8192, 8192},         {"sweep", 8192, 8192, 16384},
};

enum Case { kBf16, kFp32Acc, kBf16Acc, kCases };
const char* kCaseNames[] = {"bf16", "fp32_acc", "bf16_acc"};

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u + seed;
    x ^= x >> 13;
    p[i] = __float2bfloat16((float(x & 0xffff) / 65536.0f - 0.5f) * 0.1f);
  }
}

double time_case(cublasHandle_t h, const Shape& s, Case c, const __nv_bfloat16* dy,
                 const __nv_bfloat16* x, void* d32, void* d16, double seconds) {
  const float alpha = 1.0f;
  const float beta = c == kBf16 ? 0.0f : 1.0f;
  void* d = c == kFp32Acc ? d32 : d16;
  const cudaDataType dt = c == kFp32Acc ? CUDA_R_32F : CUDA_R_16BF;
  // Column-major: D[M x N] = A[M x K] B[K x N]; A is dY^T read from dY stored [K x M] token-major
  // (column-major M x K with ld M: op N), B is X stored [K x N] token-major (column-major N x K
  // with ld N: op T).
  auto run = [&] {
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, s.m, s.n, s.k, &alpha, dy, CUDA_R_16BF,
                            s.m, x, CUDA_R_16BF, s.n, &beta, d, dt, s.m, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; ++i) run();
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  // Size the loop to about `seconds`, then time five loops and keep the median.
  CHECK(cudaEventRecord(a));
  run();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float once_ms = 0;
  CHECK(cudaEventElapsedTime(&once_ms, a, b));
  const int reps = std::max(5, int(seconds * 1e3 / 5 / std::max(once_ms, 1e-3f)));
  std::vector<double> per;
  for (int t = 0; t < 5; ++t) {
    CHECK(cudaEventRecord(a));
    for (int i = 0; i < reps; ++i) run();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    per.push_back(ms * 1e-3 / reps);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 0.25;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (!(seconds > 0) || rounds < 1) {
    std::fprintf(stderr, "usage: %s [seconds_per_case>0] [rounds>=1]\n", argv[0]);
    return 2;
  }
  size_t max_dy = 0, max_x = 0, max_w = 0;
  for (const Shape& s : kShapes) {
    max_dy = std::max(max_dy, size_t(s.k) * s.m);
    max_x = std::max(max_x, size_t(s.k) * s.n);
    max_w = std::max(max_w, size_t(s.m) * s.n);
  }
  __nv_bfloat16 *dy = nullptr, *x = nullptr;
  void *d32 = nullptr, *d16 = nullptr;
  CHECK(cudaMalloc(&dy, max_dy * 2));
  CHECK(cudaMalloc(&x, max_x * 2));
  CHECK(cudaMalloc(&d32, max_w * 4));
  CHECK(cudaMalloc(&d16, max_w * 2));
  fill<<<1024, 256>>>(dy, max_dy, 1);
  fill<<<1024, 256>>>(x, max_x, 2);
  CHECK(cudaMemset(d32, 0, max_w * 4));
  CHECK(cudaMemset(d16, 0, max_w * 2));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));

  const size_t n_shapes = sizeof(kShapes) / sizeof(kShapes[0]);
  std::vector<std::vector<std::vector<double>>> t(
      n_shapes, std::vector<std::vector<double>>(kCases));
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n_shapes; ++i) {
      for (int c = 0; c < kCases; ++c) {
        t[i][c].push_back(time_case(h, kShapes[i], Case(c), dy, x, d32, d16, seconds));
      }
    }
  }
  std::printf("{\"gpu\": \"%s\", \"sms\": %d, \"seconds_per_case\": %g, \"rounds\": %d, \"rows\": [\n",
              prop.name, prop.multiProcessorCount, seconds, rounds);
  for (size_t i = 0; i < n_shapes; ++i) {
    const Shape& s = kShapes[i];
    double med[kCases];
    for (int c = 0; c < kCases; ++c) {
      auto v = t[i][c];
      std::sort(v.begin(), v.end());
      med[c] = v[v.size() / 2];
    }
    const double flops = 2.0 * s.m * s.n * s.k;
    std::printf("  {\"what\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d", s.what, s.m, s.n, s.k);
    for (int c = 0; c < kCases; ++c) {
      std::printf(", \"%s_s\": %.6e, \"%s_tflops\": %.1f", kCaseNames[c], med[c], kCaseNames[c],
                  flops / med[c] / 1e12);
    }
    std::printf(", \"fp32_acc_over_bf16\": %.4f, \"bf16_acc_over_bf16\": %.4f}%s\n",
                med[kFp32Acc] / med[kBf16], med[kBf16Acc] / med[kBf16],
                i + 1 < n_shapes ? "," : "");
  }
  std::printf("]}\n");
  CHECK_BLAS(cublasDestroy(h));
  return 0;
}
