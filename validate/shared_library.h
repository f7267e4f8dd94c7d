// A shared library loaded at run time (dlopen), so that the prober runs on a node that has a
// driver but maybe no NCCL or cuBLAS installed, and says clearly which library is missing and
// how to point at it instead of failing to start. Owns the handle (dlclose when destroyed is
// skipped on purpose: NCCL and CUDA libraries keep threads that outlive their last call).
#pragma once

#include <string>
#include <vector>

#include "models/result.h"

namespace clustersim::validate {

class SharedLibrary {
 public:
  // Tries `env_var`'s value first (a path; ignored when unset or empty), then each candidate
  // name in order (found through LD_LIBRARY_PATH and the system's search path). The error says
  // what the library is for, every name tried with dlerror()'s reason, and `hint`.
  static models::Result<SharedLibrary> open(const std::string& what, const std::string& env_var,
                                            const std::vector<std::string>& candidates,
                                            const std::string& hint);

  // The address of `name`, or nullptr.
  void* symbol(const char* name) const;
  // The file actually loaded (resolved through the dynamic linker's map).
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// Resolves every symbol of a table in one go: `bind(name, &fn)` stores the address and records
// names not found; missing() lists them ("ncclSend, ncclRecv").
class SymbolBinder {
 public:
  explicit SymbolBinder(const SharedLibrary& lib) : lib_(lib) {}
  template <class Fn>
  void bind(const char* name, Fn* fn, bool required = true) {
    *fn = reinterpret_cast<Fn>(lib_.symbol(name));
    if (*fn == nullptr && required) missing_ += (missing_.empty() ? "" : ", ") + std::string(name);
  }
  const std::string& missing() const { return missing_; }

 private:
  const SharedLibrary& lib_;
  std::string missing_;
};

}  // namespace clustersim::validate
