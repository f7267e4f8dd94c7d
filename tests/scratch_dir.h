// A scratch folder for one test case: under the system's temporary directory, named by the
// test and the process, emptied when made (a pid can repeat across runs on one machine, and a
// folder an earlier process left would be read as this test's) and removed when the test case
// ends, whatever its outcome.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace clustersim::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() /
             ("clustersim_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // a destructor must not throw
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // A file's path inside the folder.
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace clustersim::testing
