#include "models/text_file.h"

#include <fstream>
#include <sstream>

namespace clustersim::models {

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open the file"};
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return s.str();
}

}  // namespace clustersim::models
