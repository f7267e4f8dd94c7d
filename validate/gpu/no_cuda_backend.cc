// Builds without CUDA: the backend factory says so plainly.
#include "validate/gpu_backend.h"

namespace clustersim::validate {

bool cuda_backend_built() { return false; }

models::Result<std::unique_ptr<GpuBackend>> make_cuda_backend(const std::vector<int>&) {
  return models::Error{kNoGpuSupportMessage};
}

}  // namespace clustersim::validate
