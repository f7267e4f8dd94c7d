// MPI's functions looked up in the MPI library itself (dlsym on its handle), not by plain symbol
// binding: clustersim also links SimGrid, whose SMPI exports MPI_Init & co., and the dynamic
// linker would bind the plain names to SimGrid's simulated MPI. Shared by validate's MPI
// bootstrap and the MPI rank channel of sweep and search (tools/rank_channel.cc); included only
// where the build found MPI, with CLUSTERSIM_MPI_LIBRARY naming the library it found.
#pragma once

#include <dlfcn.h>

#include <string>

#include "models/result.h"

#ifndef CLUSTERSIM_MPI_LIBRARY
#define CLUSTERSIM_MPI_LIBRARY "libmpi.so"
#endif

namespace clustersim::validate {

class MpiLibrary {
 public:
  // Opens the MPI library this binary was built against; the error names it and dlerror's why.
  static models::Result<MpiLibrary> open() {
    void* handle = ::dlopen(CLUSTERSIM_MPI_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      return models::Error{std::string("cannot load the MPI library ") + CLUSTERSIM_MPI_LIBRARY +
                           ": " + ::dlerror()};
    }
    MpiLibrary lib;
    lib.handle_ = handle;
    return lib;
  }

  // Points `fn` at the library's function `name`; one not found is remembered for status().
  template <class Fn>
  void bind(Fn*& fn, const char* name) {
    fn = reinterpret_cast<Fn*>(::dlsym(handle_, name));
    if (fn == nullptr) missing_ += std::string(missing_.empty() ? "" : ", ") + name;
  }

  // Ok, or an error naming every function bind() did not find.
  models::Status status() const {
    if (missing_.empty()) return models::Status::Ok();
    return models::Error{std::string(CLUSTERSIM_MPI_LIBRARY) + " lacks " + missing_};
  }

 private:
  MpiLibrary() = default;
  void* handle_ = nullptr;
  std::string missing_;
};

}  // namespace clustersim::validate
