// cuBLASLt's functions as a table loaded at run time from libcublasLt.so (types from
// cublasLt.h), and one GEMM "plan": D = A^T B in a given precision with the heuristic's first
// algorithm, the layout (TN, column-major) that cuBLASLt's fp8 path requires.
#pragma once

#include <cublasLt.h>

#include <string>

#include "models/result.h"
#include "validate/shared_library.h"

namespace clustersim::validate::gpu {

struct CublasLtApi {
  SharedLibrary lib;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetVersion) get_version = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;

  std::string version() const;  // "13.0.0" from cublasLtGetVersion (major*10000+minor*100+patch)
};

// Loads libcublasLt.so.13 (or .12; CLUSTERSIM_CUBLASLT_LIBRARY overrides).
models::Result<CublasLtApi> load_cublaslt();

}  // namespace clustersim::validate::gpu
