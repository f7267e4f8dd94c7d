#include "validate/measurement_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace clustersim::validate {

models::Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto sys_error = [&](const std::string& what, const std::string& p) {
    return models::Error{p + ": " + what + ": " + std::strerror(errno)};
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("cannot create", tmp);
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;  // a signal (e.g. the SIGINT that stops a run) came in
      models::Status s = sys_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    written += static_cast<std::size_t>(n);
  }
  // fsync so that a crash of the whole node after the rename cannot leave an empty file.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    models::Status s = sys_error("cannot flush", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::close(fd) != 0) return sys_error("cannot close", tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    models::Status s = sys_error("cannot rename " + tmp + " to", path);
    ::unlink(tmp.c_str());
    return s;
  }
  return models::Status::Ok();
}

MeasurementWriter::MeasurementWriter(std::string final_path) : final_path_(std::move(final_path)) {}

models::Status MeasurementWriter::checkpoint(const Measurement& m) {
  return write_file_atomically(partial_path(), to_json_text(m));
}

models::Status MeasurementWriter::finish(Measurement& m) {
  m.complete = true;
  // The complete text goes to the partial name first, and one rename then moves it to the final
  // name: at no moment are both files there (writing the final file and then removing the
  // partial one left both to a kill between the two). A kill between the write and the rename
  // leaves "<path>.partial" holding the complete measurement, "complete": true.
  models::Status s = write_file_atomically(partial_path(), to_json_text(m));
  if (!s.ok()) return s;
  if (std::rename(partial_path().c_str(), final_path_.c_str()) != 0) {
    return models::Error{partial_path() + ": cannot rename to " + final_path_ + ": " +
                         std::strerror(errno)};
  }
  return models::Status::Ok();
}

}  // namespace clustersim::validate
