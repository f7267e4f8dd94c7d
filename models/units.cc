#include "models/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace clustersim::models {
namespace {

struct UnitFactor {
  std::string_view suffix;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "400 Gbps" into 400 and "Gbps". Fails when there is no leading number.
Result<std::pair<double, std::string_view>> split_number(std::string_view text,
                                                        std::string_view what) {
  std::string_view s = trim(text);
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) {
    return Error{"'" + std::string(text) + "' is not a " + std::string(what) +
                 ": expected a number followed by a unit"};
  }
  if (!std::isfinite(value)) return Error{"'" + std::string(text) + "' is not finite"};
  if (value < 0) return Error{"'" + std::string(text) + "': " + std::string(what) + " cannot be negative"};
  return std::pair<double, std::string_view>{value, trim(std::string_view(ptr, end - ptr))};
}

template <std::size_t N>
Result<double> scaled(std::string_view text, std::string_view what,
                      const std::array<UnitFactor, N>& units, std::string_view examples,
                      bool bare_ok = false) {
  auto parsed = split_number(text, what);
  if (!parsed) return parsed.error();
  auto [value, unit] = *parsed;
  if (unit.empty()) {
    if (bare_ok) return value;
    return Error{"'" + std::string(text) + "' has no unit: a " + std::string(what) +
                 " needs one (" + std::string(examples) + ")"};
  }
  for (const auto& u : units) {
    if (u.suffix == unit) return value * u.factor;
  }
  return Error{"'" + std::string(text) + "': unknown " + std::string(what) + " unit '" +
               std::string(unit) + "' (" + std::string(examples) + ")"};
}

constexpr std::array<UnitFactor, 44> kBandwidthUnits{{
    // bits per second
    {"bps", 1.0 / 8}, {"b/s", 1.0 / 8}, {"bit/s", 1.0 / 8},
    {"Kbps", 1e3 / 8}, {"kbps", 1e3 / 8}, {"Kb/s", 1e3 / 8}, {"kb/s", 1e3 / 8}, {"Kbit/s", 1e3 / 8},
    {"Mbps", 1e6 / 8}, {"Mb/s", 1e6 / 8}, {"Mbit/s", 1e6 / 8},
    {"Gbps", 1e9 / 8}, {"Gb/s", 1e9 / 8}, {"Gbit/s", 1e9 / 8},
    {"Tbps", 1e12 / 8}, {"Tb/s", 1e12 / 8}, {"Tbit/s", 1e12 / 8},
    // bytes per second
    {"B/s", 1}, {"Bps", 1},
    {"KB/s", 1e3}, {"kB/s", 1e3}, {"KBps", 1e3},
    {"MB/s", 1e6}, {"MBps", 1e6},
    {"GB/s", 1e9}, {"GBps", 1e9},
    {"TB/s", 1e12}, {"TBps", 1e12},
    {"PB/s", 1e15},
    {"KiB/s", kKiB}, {"MiB/s", kMiB}, {"GiB/s", kGiB}, {"TiB/s", kTiB},
    {"KiBps", kKiB}, {"MiBps", kMiB}, {"GiBps", kGiB}, {"TiBps", kTiB},
    {"Kibps", kKiB / 8}, {"Mibps", kMiB / 8}, {"Gibps", kGiB / 8},
    {"Kib/s", kKiB / 8}, {"Mib/s", kMiB / 8}, {"Gib/s", kGiB / 8}, {"Tib/s", kTiB / 8},
}};

constexpr std::array<UnitFactor, 14> kSizeUnits{{
    {"B", 1}, {"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
    {"KiB", kKiB}, {"MiB", kMiB}, {"GiB", kGiB}, {"TiB", kTiB}, {"PiB", kTiB * 1024},
    {"bytes", 1}, {"byte", 1},
}};

constexpr std::array<UnitFactor, 8> kSizeShorthand{{
    {"K", kKiB}, {"k", kKiB}, {"M", kMiB}, {"G", kGiB}, {"T", kTiB},
    {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
}};

constexpr std::array<UnitFactor, 14> kTimeUnits{{
    {"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"sec", 1},
    {"min", 60}, {"h", 3600}, {"hr", 3600}, {"hours", 3600}, {"d", 86400}, {"days", 86400},
    {"y", 365.25 * 86400}, {"years", 365.25 * 86400},
}};

constexpr std::array<UnitFactor, 10> kFlopsUnits{{
    {"FLOP/s", 1}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}, {"EFLOP/s", 1e18},
    {"FLOPS", 1}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"EFLOPS", 1e18},
}};

constexpr std::array<UnitFactor, 9> kCountUnits{{
    {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"B", 1e9}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15},
    {"Ki", kKiB}, {"Mi", kMiB},
}};

constexpr std::array<UnitFactor, 3> kPowerUnits{{{"W", 1}, {"kW", 1e3}, {"MW", 1e6}}};

}  // namespace

Result<double> parse_bandwidth_Bps(std::string_view text) {
  return scaled(text, "bandwidth", kBandwidthUnits, "e.g. 400Gbps, 50GB/s, 25GiB/s");
}

Result<double> parse_size_bytes(std::string_view text, bool allow_bare_and_binary_shorthand) {
  if (allow_bare_and_binary_shorthand) {
    auto r = scaled(text, "size", kSizeUnits, "e.g. 8, 64K, 8G, 2GiB", true);
    if (r) return r;
    auto s = scaled(text, "size", kSizeShorthand, "e.g. 8, 64K, 8G, 2GiB", true);
    if (s) return s;
    return r;
  }
  return scaled(text, "size", kSizeUnits, "e.g. 2GiB, 80GB, 512MiB");
}

Result<double> parse_time_s(std::string_view text) {
  return scaled(text, "time", kTimeUnits, "e.g. 1.5us, 18ms, 2h, 50000h");
}

Result<double> parse_flops(std::string_view text) {
  return scaled(text, "rate", kFlopsUnits, "e.g. 989TFLOP/s, 67TFLOPS");
}

Result<double> parse_count(std::string_view text) {
  return scaled(text, "count", kCountUnits, "e.g. 4096, 128K, 4M, 2T", true);
}

Result<double> parse_usd(std::string_view text) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '$') s.remove_prefix(1);
  if (s.size() >= 3 && s.substr(s.size() - 3) == "USD") s.remove_suffix(3);
  auto parsed = split_number(s, "price");
  if (!parsed) return Error{"'" + std::string(text) + "' is not an amount in USD (e.g. 2.50, $2.50)"};
  if (!parsed->second.empty()) {
    return Error{"'" + std::string(text) + "': unexpected '" + std::string(parsed->second) +
                 "' after the amount (e.g. 2.50, $2.50)"};
  }
  return parsed->first;
}

Result<double> parse_watts(std::string_view text) {
  return scaled(text, "power", kPowerUnits, "e.g. 700W, 10.2kW");
}

std::string format_significant(double value, int digits) {
  if (value == 0) return "0";
  char buf[64];
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(value))));
  const int decimals = std::max(0, digits - 1 - magnitude);
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

namespace {

// `percent` (already x100) to 3 significant digits, below 5e-5 in size "0%".
std::string percent_text(double percent) {
  return std::fabs(percent) < 5e-5 ? "0%" : format_significant(percent, 3) + "%";
}

}  // namespace

std::string format_percent(double fraction) { return percent_text(100 * fraction); }

std::string format_percent(double part, double whole) {
  return whole > 0 ? percent_text(100 * part / whole) : "-";
}

std::string format_signed_percent(double fraction) {
  return (fraction >= 0 ? "+" : "") + format_percent(fraction);
}

namespace {

struct Prefix {
  double factor;
  const char* unit;
};

template <std::size_t N>
std::string with_prefix(double value, const std::array<Prefix, N>& ladder) {
  // ladder is ordered from the largest factor down; the last entry is the base unit.
  for (const auto& p : ladder) {
    if (std::fabs(value) >= p.factor * 0.9995 || &p == &ladder.back()) {
      return format_significant(value / p.factor) + " " + p.unit;
    }
  }
  return format_significant(value);
}

}  // namespace

std::string format_bandwidth(double bytes_per_s) {
  static constexpr std::array<Prefix, 5> kLadder{
      {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1, "B/s"}}};
  return with_prefix(bytes_per_s, kLadder);
}

std::string format_bandwidth_bits(double bytes_per_s) {
  static constexpr std::array<Prefix, 5> kLadder{
      {{1e12, "Tb/s"}, {1e9, "Gb/s"}, {1e6, "Mb/s"}, {1e3, "Kb/s"}, {1, "b/s"}}};
  return with_prefix(bytes_per_s * 8, kLadder);
}

std::string format_size(double bytes) {
  static constexpr std::array<Prefix, 5> kLadder{
      {{kTiB, "TiB"}, {kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}, {1, "B"}}};
  return with_prefix(bytes, kLadder);
}

std::string format_time(double seconds) {
  static constexpr std::array<Prefix, 8> kLadder{{{365.25 * 86400, "y"},
                                                  {86400, "d"},
                                                  {3600, "h"},
                                                  {60, "min"},
                                                  {1, "s"},
                                                  {1e-3, "ms"},
                                                  {1e-6, "us"},
                                                  {1e-9, "ns"}}};
  // Under a picosecond is the residue of subtracting two times (no modelled time is that
  // short): "0 ns", not "0.0000003331 ns".
  if (std::fabs(seconds) < 1e-12) return "0 ns";
  return with_prefix(seconds, kLadder);
}

std::string format_flops(double flops_per_s) {
  static constexpr std::array<Prefix, 5> kLadder{{{1e18, "EFLOP/s"},
                                                  {1e15, "PFLOP/s"},
                                                  {1e12, "TFLOP/s"},
                                                  {1e9, "GFLOP/s"},
                                                  {1, "FLOP/s"}}};
  return with_prefix(flops_per_s, kLadder);
}

std::string format_count(double count) {
  static constexpr std::array<Prefix, 5> kLadder{
      {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}, {1, ""}}};
  std::string s = with_prefix(count, kLadder);
  if (!s.empty() && s.back() == ' ') s.pop_back();
  // "4.1 M" -> "4.1M": counts print as they are typed in a scenario.
  if (auto sp = s.find(' '); sp != std::string::npos) s.erase(sp, 1);
  return s;
}

std::string format_usd(double usd) {
  char buf[64];
  if (std::fabs(usd) >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", usd);
    std::string digits = buf;
    std::string out;
    const bool neg = digits.front() == '-';
    if (neg) digits.erase(0, 1);
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
      out += digits[i];
    }
    return (neg ? "-$" : "$") + out;
  }
  if (std::fabs(usd) >= 0.01 || usd == 0) {
    std::snprintf(buf, sizeof buf, "$%.2f", usd);
  } else {
    return "$" + format_significant(usd, 3);
  }
  return buf;
}

}  // namespace clustersim::models
