// The verify report: the acceptance verdict as Markdown, HTML (tables and an inline SVG plot of
// measured vs expected all_reduce busbw over size) or JSON. Every report carries the SHA-256 of
// the measurement file bytes it judged; signed with a key it ends with an HMAC-SHA256 of its own
// text, so that an edited report (or one moved onto other measurements) can be told from a real
// one. Rendering is deterministic: the same inputs give the same bytes.
#pragma once

#include <string>
#include <string_view>

#include "models/result.h"
#include "validate/acceptance.h"

namespace clustersim::validate {

enum class ReportFormat { kMarkdown, kHtml, kJson };

// By the file's extension: .md / .markdown, .html / .htm, .json. Fails on anything else.
models::Result<ReportFormat> report_format_for(const std::string& path);

struct ReportMeta {
  std::string measurement_path;
  std::string measurement_sha256;  // hex of the file's bytes
  std::string measured_utc;        // when the run finished (the file's own time)
  std::string hosts;               // "gpu-node-1, gpu-node-2"
  std::string tool_version;        // "clustersim 0.1.0"
  AcceptanceExpectation expect;
};

// "PASS" when every check passed or was skipped, "WARN" with a warning, "FAIL" with a failure.
std::string_view overall_verdict(const AcceptanceResult& r);

// Text for HTML content or an attribute value: & < > " ' escaped (the reports here and
// `clustersim report`'s page).
std::string html_escape(std::string_view s);

// The report, unsigned.
std::string render_report(const AcceptanceResult& r, const ReportMeta& meta, ReportFormat format);

// The SVG plot alone (also embedded in the HTML and Markdown reports).
std::string busbw_plot_svg(const AcceptanceResult& r);

// Appends (Markdown, HTML: a final comment line) or adds (JSON: a "signature" member, over the
// JSON dumped without it) the HMAC-SHA256 of the report under `key`.
std::string sign_report(const std::string& report, ReportFormat format, std::string_view key);

struct ReportCheck {
  bool has_signature = false;
  bool signature_valid = false;
  std::string measurement_sha256;  // as the report states it
};

// Reads a report back: its measurement digest, and whether its signature matches `key` (an
// empty key checks nothing). Fails when the text is not a clustersim report.
models::Result<ReportCheck> check_report(const std::string& report, ReportFormat format,
                                         std::string_view key);

}  // namespace clustersim::validate
