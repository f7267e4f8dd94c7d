// Reading a whole file into memory (the overlay, claims, measurement and report files), with an
// error that names the path. Binary-safe: the bytes are returned as they are on disk.
#pragma once

#include <string>

#include "models/result.h"

namespace clustersim::models {

// The file's bytes; an Error naming the path when it cannot be opened or read.
Result<std::string> read_text_file(const std::string& path);

}  // namespace clustersim::models
