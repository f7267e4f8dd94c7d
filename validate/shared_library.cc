#include "validate/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>

namespace clustersim::validate {

models::Result<SharedLibrary> SharedLibrary::open(const std::string& what,
                                                  const std::string& env_var,
                                                  const std::vector<std::string>& candidates,
                                                  const std::string& hint) {
  std::vector<std::string> names;
  if (const char* forced = std::getenv(env_var.c_str()); forced != nullptr && *forced != '\0') {
    names.push_back(forced);
  }
  names.insert(names.end(), candidates.begin(), candidates.end());
  std::string tried;
  for (const std::string& name : names) {
    void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = ::dlerror();
      tried += "\n  " + name + ": " + (why ? why : "not found");
      continue;
    }
    SharedLibrary lib;
    lib.handle_ = h;
    lib.path_ = name;
    struct link_map* map = nullptr;
    if (::dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      lib.path_ = map->l_name;
    }
    return lib;
  }
  return models::Error{"cannot load " + what + "; tried:" + tried + "\n  " + hint +
                       (env_var.empty() ? "" : " (or set " + env_var + " to its path)")};
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ == nullptr ? nullptr : ::dlsym(handle_, name);
}

}  // namespace clustersim::validate
