// Builds without MPI (and the standalone prober): say so instead of pretending to be one rank.
#include "validate/bootstrap.h"

namespace clustersim::validate {

bool mpi_available() { return false; }

models::Result<std::unique_ptr<Bootstrap>> make_mpi_bootstrap(int*, char***) {
  return models::Error{
      "started under an MPI launcher, but this build has no MPI support (CLUSTERSIM_WITH_MPI did "
      "not find MPI); run one process per node without mpirun, or rebuild with MPI"};
}

}  // namespace clustersim::validate
