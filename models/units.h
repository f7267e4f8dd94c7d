// Physical units at the input edge. Every quantity enters the program as a string with its unit
// ("400Gbps", "50GB/s", "2GiB", "1.5us", "989TFLOP/s", "2T") and leaves the parser as an SI double
// whose name carries the unit: bytes, bytes per second (Bps), seconds, FLOP/s, a plain count, USD.
// Bits vs bytes: a lowercase `b` is a bit, an uppercase `B` a byte ("400Gbps" = 50e9 B/s).
// Decimal prefixes (k, M, G, T, P) are powers of 1000, binary ones (Ki, Mi, Gi, Ti) of 1024.
// Bandwidths are per direction unless a caller says otherwise; the parser does not guess.
#pragma once

#include <string>
#include <string_view>

#include "models/result.h"

namespace clustersim::models {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kTiB = kGiB * 1024.0;
inline constexpr double kGB = 1e9;

// Bandwidth in bytes per second. Accepts bits (bps, Kbps, Mbps, Gbps, Tbps, Gb/s, Gbit/s) and
// bytes (B/s, KB/s, MB/s, GB/s, TB/s, GBps, KiB/s ... TiB/s). Fails on a bare number, an unknown
// unit or a negative value, naming the offending text.
Result<double> parse_bandwidth_Bps(std::string_view text);

// Size in bytes: B, KB, MB, GB, TB, PB (decimal), KiB, MiB, GiB, TiB (binary).
// With allow_bare_and_binary_shorthand (command-line sizes, nccl-tests' -b/-e convention), a bare
// number is bytes and K/M/G/T alone are binary (8G = 8 GiB).
Result<double> parse_size_bytes(std::string_view text, bool allow_bare_and_binary_shorthand = false);

// Time in seconds: ns, us (or µs), ms, s, min, h, d.
Result<double> parse_time_s(std::string_view text);

// Arithmetic rate in FLOP/s: FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s (also the ...FLOPS spelling).
Result<double> parse_flops(std::string_view text);

// A count with an optional decimal suffix: 4096, 128K, 4M, 1.5B (billion), 2T (trillion).
Result<double> parse_count(std::string_view text);

// Money in USD: "2.50", "$2.50", "2.50USD". A bare number is accepted (the unit is implied).
Result<double> parse_usd(std::string_view text);

// Power in watts: W, kW, MW.
Result<double> parse_watts(std::string_view text);

// Human output, 3-4 significant digits, chosen prefix. Parsing the output gives back the value
// within that precision.
std::string format_bandwidth(double bytes_per_s);    // "450 GB/s"
std::string format_bandwidth_bits(double bytes_per_s);  // "400 Gb/s"
std::string format_size(double bytes);               // "2 GiB", "512 KiB", "37 B" (binary)
std::string format_time(double seconds);             // "1.5 us", "12.3 s", "3.2 h", "41.7 d"
std::string format_flops(double flops_per_s);        // "989 TFLOP/s"
std::string format_count(double count);              // "2 T", "4.1 M"
std::string format_usd(double usd);                  // "$1,580,000", "$0.27"

// A number with `digits` significant digits, no trailing zeros ("1.5", "450", "0.0123").
std::string format_significant(double value, int digits = 4);

// A fraction as a percentage to 3 significant digits: 0.123 -> "12.3%", 1 -> "100%". A fraction
// under 5e-7 in size reads "0%" (rounding noise such as 1e-14 is not a figure).
std::string format_percent(double fraction);
// part / whole the same way, or "-" where whole is not positive (no share of nothing).
std::string format_percent(double part, double whole);
// A change with its sign: 0.05 -> "+5%", -0.012 -> "-1.2%", 0 -> "+0%".
std::string format_signed_percent(double fraction);

}  // namespace clustersim::models
