#include "validate/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/units.h"
#include "validate/sha256.h"

namespace clustersim::validate {
namespace {

constexpr std::string_view kSignatureMarker = "<!-- clustersim-signature hmac-sha256 ";
constexpr std::string_view kDigestMarker = "<!-- clustersim-measurement-sha256 ";
constexpr std::string_view kReportSchema = "clustersim.verify-report/1";
// The checks' heading: each row's last column names its threshold's public source.
constexpr std::string_view kChecksHeading =
    "thresholds and their public sources: clustersim's docs/acceptance-checks.md";

std::string md_cell(std::string_view s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|') o += "\\|";
    else if (ch == '\n') o += ' ';
    else o += ch;
  }
  return o;
}

std::string num(double v, const char* fmt = "%.1f") {
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string expectation_text(const AcceptanceExpectation& e, const AcceptanceResult& r) {
  std::string s = (e.gpus > 0 ? std::to_string(e.gpus) : std::to_string(r.gpus)) + " x " +
                  (e.sku.empty() ? r.sku + " (from the PCI ids)" : e.sku);
  if (e.nics_per_node > 0) {
    s += ", " + std::to_string(e.nics_per_node) + " x " + (e.nic.empty() ? "ib-ndr" : e.nic) +
         " per node";
  }
  return s;
}

std::string counts_text(const AcceptanceResult& r) {
  return std::to_string(r.count(CheckStatus::kPass)) + " pass, " +
         std::to_string(r.count(CheckStatus::kWarn)) + " warn, " +
         std::to_string(r.count(CheckStatus::kFail)) + " fail, " +
         std::to_string(r.count(CheckStatus::kSkip)) + " skipped (not measured)";
}

nlohmann::json report_json(const AcceptanceResult& r, const ReportMeta& meta) {
  using nlohmann::json;
  json j;
  j["schema"] = kReportSchema;
  j["measurement"] = {{"path", meta.measurement_path},
                      {"sha256", meta.measurement_sha256},
                      {"measured_utc", meta.measured_utc},
                      {"hosts", meta.hosts}};
  j["tool"] = meta.tool_version;
  j["sku"] = r.sku;
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["expected"] = expectation_text(meta.expect, r);
  j["verdict"] = overall_verdict(r);
  j["counts"] = {{"pass", r.count(CheckStatus::kPass)},
                 {"warn", r.count(CheckStatus::kWarn)},
                 {"fail", r.count(CheckStatus::kFail)},
                 {"skip", r.count(CheckStatus::kSkip)}};
  json checks = json::array();
  for (const auto& c : r.checks) {
    checks.push_back({{"number", c.number},
                      {"id", c.id},
                      {"title", c.title},
                      {"status", to_string(c.status)},
                      {"measured", c.measured},
                      {"threshold", c.threshold},
                      {"why", c.why},
                      {"source", c.source}});
  }
  j["checks"] = checks;
  json curve = json::array();
  for (const auto& p : r.all_reduce_curve) {
    curve.push_back({{"size_bytes", p.size_bytes},
                     {"busbw_GBps", p.measured_Bps / 1e9},
                     {"expected_busbw_GBps", p.expected_Bps / 1e9}});
  }
  j["all_reduce"] = {{"ranks", r.all_reduce_ranks},
                     {"threshold_busbw_GBps", r.all_reduce_threshold_Bps / 1e9},
                     {"rows", curve}};
  return j;
}

}  // namespace

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

models::Result<ReportFormat> report_format_for(const std::string& path) {
  auto ends = [&](std::string_view e) {
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".md") || ends(".markdown")) return ReportFormat::kMarkdown;
  if (ends(".html") || ends(".htm")) return ReportFormat::kHtml;
  if (ends(".json")) return ReportFormat::kJson;
  return models::Error{path + ": a report is .md, .html or .json"};
}

std::string_view overall_verdict(const AcceptanceResult& r) {
  if (r.any_failed()) return "FAIL";
  return r.count(CheckStatus::kWarn) > 0 ? "WARN" : "PASS";
}

std::string busbw_plot_svg(const AcceptanceResult& r) {
  const auto& pts = r.all_reduce_curve;
  // Sizes on a log axis: a curve without them (none, or a size of 0 bytes) is not drawn.
  if (pts.empty() || !(pts.front().size_bytes > 0) || !std::isfinite(pts.back().size_bytes)) {
    return "";
  }
  // Plot area: x = log2(size), y = busbw in GB/s from 0.
  const double W = 720, H = 360, L = 70, R = 20, T = 30, B = 50;
  double x0 = std::log2(pts.front().size_bytes), x1 = std::log2(pts.back().size_bytes);
  if (x1 <= x0) x1 = x0 + 1;
  double ymax = r.all_reduce_threshold_Bps;
  for (const auto& p : pts) ymax = std::max({ymax, p.measured_Bps, p.expected_Bps});
  ymax = ymax / 1e9 * 1.1;
  const double step = ymax > 400 ? 100 : ymax > 100 ? 50 : ymax > 20 ? 10 : 2;
  ymax = std::ceil(ymax / step) * step;
  auto X = [&](double size) { return L + (std::log2(size) - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double Bps) { return H - B - Bps / 1e9 / ymax * (H - T - B); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << W << "\" height=\"" << H << "\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">all_reduce "
    << "busbw over size, " << r.all_reduce_ranks << " GPUs (measured vs model)</text>\n";
  for (double y = 0; y <= ymax + 1e-9; y += step) {
    s << "<line x1=\"" << L << "\" y1=\"" << num(Y(y * 1e9)) << "\" x2=\"" << W - R << "\" y2=\""
      << num(Y(y * 1e9)) << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << L - 6 << "\" y=\"" << num(Y(y * 1e9) + 4) << "\" text-anchor=\"end\">"
      << num(y, "%.0f") << "</text>\n";
  }
  const int first = static_cast<int>(std::ceil(x0)), last = static_cast<int>(std::floor(x1));
  const int tick = std::max(1, (last - first) / 8);
  for (int e = first; e <= last; e += tick) {
    const double xs = X(std::ldexp(1.0, e));
    s << "<line x1=\"" << num(xs) << "\" y1=\"" << H - B << "\" x2=\"" << num(xs) << "\" y2=\""
      << H - B + 4 << "\" stroke=\"black\"/>\n";
    s << "<text x=\"" << num(xs) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << html_escape(models::format_size(std::ldexp(1.0, e))) << "</text>\n";
  }
  s << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"black\"/>\n<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L
    << "\" y2=\"" << H - B << "\" stroke=\"black\"/>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12
    << "\" text-anchor=\"middle\">message size (nccl-tests size column)</text>\n";
  s << "<text x=\"16\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
    << (T + H - B) / 2 << ")\">busbw (GB/s)</text>\n";
  auto polyline = [&](auto value, const char* style) {
    s << "<polyline fill=\"none\" " << style << " points=\"";
    for (const auto& p : pts) {
      if (value(p) > 0) s << num(X(p.size_bytes)) << "," << num(Y(value(p))) << " ";
    }
    s << "\"/>\n";
  };
  polyline([](const BusbwPoint& p) { return p.expected_Bps; },
           "stroke=\"#888\" stroke-width=\"2\" stroke-dasharray=\"6,4\"");
  polyline([](const BusbwPoint& p) { return p.measured_Bps; }, "stroke=\"#1f77b4\" stroke-width=\"2\"");
  for (const auto& p : pts) {
    s << "<circle cx=\"" << num(X(p.size_bytes)) << "\" cy=\"" << num(Y(p.measured_Bps))
      << "\" r=\"2.5\" fill=\"#1f77b4\"/>\n";
  }
  if (r.all_reduce_threshold_Bps > 0) {
    const double ty = Y(r.all_reduce_threshold_Bps);
    s << "<line x1=\"" << L << "\" y1=\"" << num(ty) << "\" x2=\"" << W - R << "\" y2=\"" << num(ty)
      << "\" stroke=\"#d62728\" stroke-dasharray=\"2,3\"/>\n";
  }
  // Legend.
  const double lx = L + 12, ly = T + 8;
  s << "<line x1=\"" << lx << "\" y1=\"" << ly << "\" x2=\"" << lx + 24 << "\" y2=\"" << ly
    << "\" stroke=\"#1f77b4\" stroke-width=\"2\"/><text x=\"" << lx + 30 << "\" y=\"" << ly + 4
    << "\">measured</text>\n";
  s << "<line x1=\"" << lx << "\" y1=\"" << ly + 16 << "\" x2=\"" << lx + 24 << "\" y2=\""
    << ly + 16 << "\" stroke=\"#888\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/><text x=\""
    << lx + 30 << "\" y=\"" << ly + 20 << "\">model (expected hardware)</text>\n";
  if (r.all_reduce_threshold_Bps > 0) {
    s << "<line x1=\"" << lx << "\" y1=\"" << ly + 32 << "\" x2=\"" << lx + 24 << "\" y2=\""
      << ly + 32 << "\" stroke=\"#d62728\" stroke-dasharray=\"2,3\"/><text x=\"" << lx + 30
      << "\" y=\"" << ly + 36 << "\">acceptance threshold (check 8, >= 8 GiB)</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_report(const AcceptanceResult& r, const ReportMeta& meta, ReportFormat format) {
  if (format == ReportFormat::kJson) return report_json(r, meta).dump(2) + "\n";
  std::ostringstream o;
  const std::string verdict(overall_verdict(r));
  const std::string expected = expectation_text(meta.expect, r);
  const std::string svg = busbw_plot_svg(r);
  if (format == ReportFormat::kMarkdown) {
    o << kDigestMarker << meta.measurement_sha256 << " -->\n";
    o << "# clustersim verify report\n\n";
    o << "**Verdict: " << verdict << "** (" << counts_text(r) << ")\n\n";
    o << "- Measurement file: `" << meta.measurement_path << "`\n";
    o << "- SHA-256 of the measurement file: `" << meta.measurement_sha256 << "`\n";
    o << "- Measured: " << meta.measured_utc << " on " << meta.hosts << "\n";
    o << "- Judged against: " << expected << "\n";
    o << "- Tool: " << meta.tool_version << "\n\n";
    o << "## Checks (" << kChecksHeading << ")\n\n";
    o << "| # | check | status | measured | threshold | why | source |\n";
    o << "|---|---|---|---|---|---|---|\n";
    for (const auto& c : r.checks) {
      o << "| " << c.number << " | " << md_cell(c.title) << " (`" << c.id << "`) | **"
        << to_string(c.status) << "** | " << md_cell(c.measured) << " | "
        << md_cell(c.threshold) << " | " << md_cell(c.why) << " | " << md_cell(c.source)
        << " |\n";
    }
    if (!r.all_reduce_curve.empty()) {
      o << "\n## all_reduce busbw over size (" << r.all_reduce_ranks << " GPUs)\n\n";
      o << "| size | measured busbw (GB/s) | model busbw (GB/s) |\n|---:|---:|---:|\n";
      for (const auto& p : r.all_reduce_curve) {
        o << "| " << models::format_size(p.size_bytes) << " | " << num(p.measured_Bps / 1e9, "%.2f")
          << " | " << (p.expected_Bps > 0 ? num(p.expected_Bps / 1e9, "%.2f") : "-") << " |\n";
      }
      o << "\n" << svg;
    }
    return o.str();
  }
  // HTML.
  o << "<!DOCTYPE html>\n" << kDigestMarker << meta.measurement_sha256 << " -->\n";
  o << "<html><head><meta charset=\"utf-8\"><title>clustersim verify: " << verdict
    << "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:75em}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 6px;"
       "vertical-align:top;font-size:13px}.PASS{background:#dfd}.WARN{background:#ffd}"
       ".FAIL{background:#fdd}.SKIP{background:#eee}code{font-size:12px}</style></head><body>\n";
  o << "<h1>clustersim verify report</h1>\n<p class=\"" << verdict << "\"><b>Verdict: " << verdict
    << "</b> (" << counts_text(r) << ")</p>\n<ul>\n";
  o << "<li>Measurement file: <code>" << html_escape(meta.measurement_path) << "</code></li>\n";
  o << "<li>SHA-256 of the measurement file: <code>" << meta.measurement_sha256 << "</code></li>\n";
  o << "<li>Measured: " << html_escape(meta.measured_utc) << " on " << html_escape(meta.hosts)
    << "</li>\n<li>Judged against: " << html_escape(expected) << "</li>\n<li>Tool: "
    << html_escape(meta.tool_version) << "</li>\n</ul>\n";
  o << "<h2>Checks (" << kChecksHeading << ")</h2>\n<table>\n"
       "<tr><th>#</th><th>check</th><th>status</th><th>measured</th><th>threshold</th>"
       "<th>why</th><th>source</th></tr>\n";
  for (const auto& c : r.checks) {
    const std::string st(to_string(c.status));
    o << "<tr><td>" << c.number << "</td><td>" << html_escape(c.title) << " (<code>" << c.id
      << "</code>)</td><td class=\"" << st << "\"><b>" << st << "</b></td><td>"
      << html_escape(c.measured) << "</td><td>" << html_escape(c.threshold) << "</td><td>"
      << html_escape(c.why) << "</td><td>" << html_escape(c.source) << "</td></tr>\n";
  }
  o << "</table>\n";
  if (!svg.empty()) o << "<h2>all_reduce busbw over size</h2>\n" << svg;
  o << "</body></html>\n";
  return o.str();
}

std::string sign_report(const std::string& report, ReportFormat format, std::string_view key) {
  if (format == ReportFormat::kJson) {
    nlohmann::json j = nlohmann::json::parse(report);
    j.erase("signature");
    const std::string mac = hmac_sha256_hex(key, j.dump(2));
    j["signature"] = {{"algorithm", "hmac-sha256"},
                      {"covers", "this JSON without its signature, dumped with 2-space indent"},
                      {"value", mac}};
    return j.dump(2) + "\n";
  }
  return report + std::string(kSignatureMarker) + hmac_sha256_hex(key, report) + " -->\n";
}

models::Result<ReportCheck> check_report(const std::string& report, ReportFormat format,
                                         std::string_view key) {
  ReportCheck out;
  if (format == ReportFormat::kJson) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(report);
    } catch (const nlohmann::json::exception& e) {
      return models::Error{std::string("not JSON: ") + e.what()};
    }
    if (!j.is_object() || j.value("schema", "") != kReportSchema) {
      return models::Error{"not a clustersim verify report (schema " + std::string(kReportSchema) + ")"};
    }
    // A report edited into other shapes (a string where an object was, a number for the
    // digest) is not one of ours: refused, never a throw.
    try {
      out.measurement_sha256 = j.at("measurement").value("sha256", "");
      if (j.contains("signature")) {
        out.has_signature = true;
        const std::string value = j["signature"].value("value", "");
        j.erase("signature");
        out.signature_valid =
            !key.empty() && constant_time_equal(value, hmac_sha256_hex(key, j.dump(2)));
      }
    } catch (const nlohmann::json::exception& e) {
      return models::Error{std::string("not a clustersim verify report: ") + e.what()};
    }
    return out;
  }
  const auto d = report.find(kDigestMarker);
  if (d == std::string::npos) return models::Error{"not a clustersim verify report"};
  out.measurement_sha256 = report.substr(d + kDigestMarker.size(), 64);
  const auto s = report.rfind(kSignatureMarker);
  if (s != std::string::npos && (s == 0 || report[s - 1] == '\n')) {
    out.has_signature = true;
    const std::string value = report.substr(s + kSignatureMarker.size(), 64);
    // The signature line must be the last: bytes after it would be unsigned.
    const auto end = report.find('\n', s);
    const bool last = end == std::string::npos || end + 1 == report.size();
    out.signature_valid = last && !key.empty() &&
                          constant_time_equal(value, hmac_sha256_hex(key, report.substr(0, s)));
  }
  return out;
}

}  // namespace clustersim::validate
