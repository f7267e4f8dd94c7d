#include "validate/bootstrap.h"

#include <cstdlib>

namespace clustersim::validate {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

}  // namespace clustersim::validate
