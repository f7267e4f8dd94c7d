// The Bootstrap over MPI (built into clustersim when CLUSTERSIM_WITH_MPI finds MPI; the
// standalone prober links no_mpi_bootstrap.cc instead, so it needs no libmpi on the node).
// The MPI functions come from the MPI library itself (validate/mpi/mpi_library.h says why).
#include <mpi.h>

#include "validate/bootstrap.h"
#include "validate/mpi/mpi_library.h"

namespace clustersim::validate {
namespace {

struct MpiApi {
  decltype(&MPI_Init) init = nullptr;
  decltype(&MPI_Initialized) initialized = nullptr;
  decltype(&MPI_Finalize) finalize = nullptr;
  decltype(&MPI_Finalized) finalized = nullptr;
  decltype(&MPI_Comm_rank) comm_rank = nullptr;
  decltype(&MPI_Comm_size) comm_size = nullptr;
  decltype(&MPI_Comm_split_type) comm_split_type = nullptr;
  decltype(&MPI_Comm_free) comm_free = nullptr;
  decltype(&MPI_Bcast) bcast = nullptr;
  decltype(&MPI_Gather) gather = nullptr;
  decltype(&MPI_Gatherv) gatherv = nullptr;
};

// Loads the table from the MPI library this binary was linked with; error names what failed.
models::Result<MpiApi> load_mpi_api() {
  auto lib = MpiLibrary::open();
  if (!lib) return models::Error{lib.message()};
  MpiApi api;
  lib->bind(api.init, "MPI_Init");
  lib->bind(api.initialized, "MPI_Initialized");
  lib->bind(api.finalize, "MPI_Finalize");
  lib->bind(api.finalized, "MPI_Finalized");
  lib->bind(api.comm_rank, "MPI_Comm_rank");
  lib->bind(api.comm_size, "MPI_Comm_size");
  lib->bind(api.comm_split_type, "MPI_Comm_split_type");
  lib->bind(api.comm_free, "MPI_Comm_free");
  lib->bind(api.bcast, "MPI_Bcast");
  lib->bind(api.gather, "MPI_Gather");
  lib->bind(api.gatherv, "MPI_Gatherv");
  if (auto st = lib->status(); !st.ok()) return models::Error{st.message()};
  return api;
}

class MpiBootstrap final : public Bootstrap {
 public:
  explicit MpiBootstrap(const MpiApi& api) : mpi_(api) {
    mpi_.comm_rank(MPI_COMM_WORLD, &rank_);
    mpi_.comm_size(MPI_COMM_WORLD, &size_);
    mpi_.comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_);
    mpi_.comm_rank(local_, &local_rank_);
    mpi_.comm_size(local_, &local_size_);
  }
  ~MpiBootstrap() override {
    mpi_.comm_free(&local_);
    int finalized = 0;
    mpi_.finalized(&finalized);
    if (!finalized) mpi_.finalize();
  }
  std::string mode() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  std::string broadcast(const std::string& data, int root) override {
    long long n = static_cast<long long>(data.size());
    mpi_.bcast(&n, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD);
    std::string out = rank_ == root ? data : std::string(static_cast<std::size_t>(n), '\0');
    mpi_.bcast(out.data(), static_cast<int>(n), MPI_CHAR, root, MPI_COMM_WORLD);
    return out;
  }

  std::vector<std::string> gather(const std::string& data, int root) override {
    int n = static_cast<int>(data.size());
    std::vector<int> sizes(rank_ == root ? size_ : 0);
    mpi_.gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, MPI_COMM_WORLD);
    std::vector<int> offsets(sizes.size());
    int total = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      offsets[i] = total;
      total += sizes[i];
    }
    std::string all(static_cast<std::size_t>(total), '\0');
    mpi_.gatherv(data.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR,
                root, MPI_COMM_WORLD);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      out.push_back(all.substr(static_cast<std::size_t>(offsets[i]),
                               static_cast<std::size_t>(sizes[i])));
    }
    return out;
  }

 private:
  MpiApi mpi_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  MPI_Comm local_ = MPI_COMM_NULL;
};

}  // namespace

bool mpi_available() { return true; }

models::Result<std::unique_ptr<Bootstrap>> make_mpi_bootstrap(int* argc, char*** argv) {
  models::Result<MpiApi> api = load_mpi_api();
  if (!api.ok()) return models::Error{api.message()};
  int initialized = 0;
  api->initialized(&initialized);
  if (!initialized && api->init(argc, argv) != MPI_SUCCESS) {
    return models::Error{"MPI_Init failed"};
  }
  return std::unique_ptr<Bootstrap>(std::make_unique<MpiBootstrap>(*api));
}

}  // namespace clustersim::validate
