// The processes of one sweep or search run and the messages between them: this process alone, or
// the ranks of an MPI job (mpirun, or Slurm's srun) in a build with MPI (CLUSTERSIM_WITH_MPI).
// Messages are byte strings with a small integer tag, point to point, in order between two ranks.
// MPI stays behind this interface: no MPI header outside tools/rank_channel.cc. Every call comes
// from one thread (the process's main thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "models/result.h"

namespace clustersim::tools {

class RankChannel {
 public:
  struct Message {
    int from = 0;
    int tag = 0;
    std::string bytes;
  };
  virtual ~RankChannel() = default;  // MPI: MPI_Finalize
  virtual int rank() const = 0;      // this process, 0-based; rank 0 writes the output
  virtual int size() const = 0;      // processes
  // Sends `bytes` to rank `to`. Returns once the bytes may be reused (MPI_Send).
  virtual void send(int to, int tag, std::string_view bytes) = 0;
  // The next message that has arrived for this rank, from any rank; nullopt, without waiting,
  // when none has.
  virtual std::optional<Message> poll() = 0;
  // Ends this process at once with `exit_code`, stdout and stderr flushed first, without
  // MPI_Finalize: the launcher (mpirun, srun) then ends the others. (Not MPI_Abort: under
  // `mpirun --enable-recovery` Open MPI 4 can wait forever in it.)
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// Whether this binary was built with MPI.
bool rank_channel_has_mpi();

// The run's processes: MPI when an MPI launcher started this process and the build has MPI,
// else this process alone. Errors: launched as one of several ranks by a build without MPI
// (every rank would run the whole study and write the same file), or MPI_Init failing.
models::Result<std::unique_ptr<RankChannel>> open_rank_channel();

}  // namespace clustersim::tools
