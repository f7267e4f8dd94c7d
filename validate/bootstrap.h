// How the processes of one validate run find each other. A single process (driving every local
// GPU) needs no plumbing; under mpirun each rank drives one GPU and rank 0's ncclUniqueId is
// broadcast with MPI_Bcast, results gathered to rank 0 (validate/mpi/mpi_bootstrap.cc). Messages
// are byte strings (JSON text or an ncclUniqueId); every call is collective: all processes call
// it in the same order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/result.h"

namespace clustersim::validate {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual std::string mode() const = 0;  // "single-process" | "mpi"
  virtual int rank() const = 0;          // this process, 0-based
  virtual int size() const = 0;          // processes
  virtual int local_rank() const = 0;    // among the processes on this host
  virtual int local_size() const = 0;
  // Returns root's `data` on every process.
  virtual std::string broadcast(const std::string& data, int root) = 0;
  // On root: every process's `data` in rank order; elsewhere: empty.
  virtual std::vector<std::string> gather(const std::string& data, int root) = 0;
};

// One process, no communication.
class SingleProcessBootstrap final : public Bootstrap {
 public:
  std::string mode() const override { return "single-process"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  std::string broadcast(const std::string& data, int) override { return data; }
  std::vector<std::string> gather(const std::string& data, int) override { return {data}; }
};

// True when the environment says an MPI launcher started this process (Open MPI's
// OMPI_COMM_WORLD_SIZE, PMI_SIZE / PMIX_RANK of MPICH, Intel MPI and Slurm's PMI).
bool launched_by_mpi();

// Whether this binary was built with MPI (CLUSTERSIM_WITH_MPI found it).
bool mpi_available();

// MPI_Init and a Bootstrap over MPI_COMM_WORLD (MPI_Finalize when destroyed). Fails when the
// binary has no MPI built in, saying so.
models::Result<std::unique_ptr<Bootstrap>> make_mpi_bootstrap(int* argc, char*** argv);

}  // namespace clustersim::validate
