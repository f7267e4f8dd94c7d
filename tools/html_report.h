// The pieces of `clustersim report`'s page: HTML escaping, tables, and charts drawn as inline SVG
// (no script library, no network: the page opens offline). Every chart is an
// <svg class="chart"> that draws at least one mark; the page's closing script counts the drawn
// charts into <body data-charts-drawn>, which the CTest reads back from a headless browser.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clustersim::tools::html {

// Text for HTML content or an attribute value: & < > " ' escaped.
std::string escape(std::string_view text);

// A table: the header cells and rows are text (escaped here).
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);

// How an axis or a label prints a value ("12.3 s", "$1.20").
using Format = std::string (*)(double);

// A line chart of several series over a shared x axis (log2 when log_x), with a legend.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_x,
                       Format x_format, Format y_format);

// Horizontal bars, one per label, each with its value printed; an optional reference (e.g. the
// GPU's memory capacity) drawn as a dashed line with its label.
struct Bar {
  std::string label;
  double value = 0;
};
std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, Format format,
                      double reference = 0, const std::string& reference_label = "");

// The fabric as tiers of switches over the nodes: one row of boxes per tier (at most 16 drawn,
// the rest counted), lines to the tier below.
struct Tier {
  std::string name;  // "leaf", "spine", "core"
  int switches = 0;
};
std::string fabric_picture(const std::string& title, const std::vector<Tier>& tiers, int nodes,
                           const std::string& node_label);

// The page: <head> with the inline style, the body, and the closing script that counts the
// charts drawn. `title` is escaped here; `body` is HTML already.
std::string page(const std::string& title, const std::string& body, int charts_expected);

}  // namespace clustersim::tools::html
