// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), so that a verify report can carry the digest
// of the measurement bytes it judged and a keyed signature of its own text. Small, dependency
// free, byte-oriented; checked against the FIPS 180-2 "abc" vectors and RFC 4231's HMAC cases.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace clustersim::validate {

using Sha256Digest = std::array<std::uint8_t, 32>;

Sha256Digest sha256(std::string_view bytes);
// Lowercase hex of the digest (64 characters).
std::string sha256_hex(std::string_view bytes);
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);
std::string hmac_sha256_hex(std::string_view key, std::string_view message);
std::string to_hex(const Sha256Digest& d);

// Compares two strings in time that does not depend on where they first differ.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace clustersim::validate
