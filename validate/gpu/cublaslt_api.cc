#include "validate/gpu/cublaslt_api.h"

namespace clustersim::validate::gpu {

std::string CublasLtApi::version() const {
  if (get_version == nullptr) return "";
  const std::size_t v = get_version();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

models::Result<CublasLtApi> load_cublaslt() {
  auto lib = SharedLibrary::open(
      "cuBLASLt (libcublasLt.so, needed for the GEMM rates)", "CLUSTERSIM_CUBLASLT_LIBRARY",
      {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
      "install cuBLAS (the CUDA toolkit's lib64, or pip's nvidia-cublas, whose "
      "site-packages/nvidia/cublas/lib you add to LD_LIBRARY_PATH)");
  if (!lib.ok()) return models::Error{lib.message()};
  CublasLtApi api;
  api.lib = *lib;
  SymbolBinder b(api.lib);
  b.bind("cublasLtCreate", &api.create);
  b.bind("cublasLtDestroy", &api.destroy);
  b.bind("cublasLtGetVersion", &api.get_version);
  b.bind("cublasLtMatmulDescCreate", &api.desc_create);
  b.bind("cublasLtMatmulDescDestroy", &api.desc_destroy);
  b.bind("cublasLtMatmulDescSetAttribute", &api.desc_set);
  b.bind("cublasLtMatrixLayoutCreate", &api.layout_create);
  b.bind("cublasLtMatrixLayoutDestroy", &api.layout_destroy);
  b.bind("cublasLtMatmulPreferenceCreate", &api.pref_create);
  b.bind("cublasLtMatmulPreferenceDestroy", &api.pref_destroy);
  b.bind("cublasLtMatmulPreferenceSetAttribute", &api.pref_set);
  b.bind("cublasLtMatmulAlgoGetHeuristic", &api.heuristic);
  b.bind("cublasLtMatmul", &api.matmul);
  if (!b.missing().empty()) return models::Error{api.lib.path() + " lacks " + b.missing()};
  return api;
}

}  // namespace clustersim::validate::gpu
