// RankChannel for one process, and over MPI where the build has it (CLUSTERSIM_TOOLS_MPI, set by
// tools/CMakeLists.txt when CLUSTERSIM_WITH_MPI finds MPI). As for validate's MPI bootstrap, the
// MPI functions come from the MPI library itself (validate/mpi/mpi_library.h says why).
#include "tools/rank_channel.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "validate/bootstrap.h"

#ifdef CLUSTERSIM_TOOLS_MPI
#include <mpi.h>

#include "validate/mpi/mpi_library.h"
#endif

namespace clustersim::tools {
namespace {

class SingleProcessChannel final : public RankChannel {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void send(int, int, std::string_view) override {}
  std::optional<Message> poll() override { return std::nullopt; }
  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);
  }
};

// The world size an MPI launcher gave this process; 1 when none did.
int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) {
    if (const char* v = std::getenv(var)) return std::max(1, std::atoi(v));
  }
  return 1;
}

#ifdef CLUSTERSIM_TOOLS_MPI

struct MpiCalls {
  decltype(&MPI_Init_thread) init_thread = nullptr;
  decltype(&MPI_Initialized) initialized = nullptr;
  decltype(&MPI_Finalize) finalize = nullptr;
  decltype(&MPI_Finalized) finalized = nullptr;
  decltype(&MPI_Comm_rank) comm_rank = nullptr;
  decltype(&MPI_Comm_size) comm_size = nullptr;
  decltype(&MPI_Send) send = nullptr;
  decltype(&MPI_Iprobe) iprobe = nullptr;
  decltype(&MPI_Get_count) get_count = nullptr;
  decltype(&MPI_Recv) recv = nullptr;
};

models::Result<MpiCalls> load_mpi_calls() {
  auto lib = validate::MpiLibrary::open();
  if (!lib) return models::Error{lib.message()};
  MpiCalls c;
  lib->bind(c.init_thread, "MPI_Init_thread");
  lib->bind(c.initialized, "MPI_Initialized");
  lib->bind(c.finalize, "MPI_Finalize");
  lib->bind(c.finalized, "MPI_Finalized");
  lib->bind(c.comm_rank, "MPI_Comm_rank");
  lib->bind(c.comm_size, "MPI_Comm_size");
  lib->bind(c.send, "MPI_Send");
  lib->bind(c.iprobe, "MPI_Iprobe");
  lib->bind(c.get_count, "MPI_Get_count");
  lib->bind(c.recv, "MPI_Recv");
  if (auto st = lib->status(); !st.ok()) return models::Error{st.message()};
  return c;
}

class MpiChannel final : public RankChannel {
 public:
  explicit MpiChannel(const MpiCalls& calls) : mpi_(calls) {
    mpi_.comm_rank(MPI_COMM_WORLD, &rank_);
    mpi_.comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiChannel() override {
    int finalized = 0;
    mpi_.finalized(&finalized);
    if (!finalized) mpi_.finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void send(int to, int tag, std::string_view bytes) override {
    mpi_.send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
  }
  std::optional<Message> poll() override {
    int arrived = 0;
    MPI_Status status;
    mpi_.iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
    if (!arrived) return std::nullopt;
    int n = 0;
    mpi_.get_count(&status, MPI_CHAR, &n);
    Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(static_cast<std::size_t>(n), '\0')};
    mpi_.recv(m.bytes.data(), n, MPI_CHAR, m.from, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return m;
  }
  [[noreturn]] void abort(int exit_code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);
  }

 private:
  MpiCalls mpi_;
  int rank_ = 0;
  int size_ = 1;
};
#endif

}  // namespace

#ifdef CLUSTERSIM_TOOLS_MPI
bool rank_channel_has_mpi() { return true; }
#else
bool rank_channel_has_mpi() { return false; }
#endif

models::Result<std::unique_ptr<RankChannel>> open_rank_channel() {
  if (!validate::launched_by_mpi() || launcher_world_size() == 1) {
    return std::unique_ptr<RankChannel>(std::make_unique<SingleProcessChannel>());
  }
#ifdef CLUSTERSIM_TOOLS_MPI
  auto calls = load_mpi_calls();
  if (!calls) return models::Error{calls.message()};
  int initialized = 0;
  calls->initialized(&initialized);
  int provided = 0;
  // Only the main thread calls MPI; the rows run on other threads.
  if (!initialized && calls->init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return models::Error{"MPI_Init_thread failed"};
  }
  return std::unique_ptr<RankChannel>(std::make_unique<MpiChannel>(*calls));
#else
  return models::Error{"started as one of " + std::to_string(launcher_world_size()) +
                       " MPI ranks, but this clustersim was built without MPI "
                       "(CLUSTERSIM_WITH_MPI found none): every rank would run the whole study; "
                       "run it as one process, or rebuild with libopenmpi-dev installed"};
#endif
}

}  // namespace clustersim::tools
