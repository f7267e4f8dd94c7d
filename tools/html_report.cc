#include "tools/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "validate/report.h"

namespace clustersim::tools::html {
namespace {

// A colour-blind-safe palette (Okabe and Ito 2008).
constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
constexpr int kWidth = 720;
// The fabric picture draws at most this many boxes a row and counts the rest.
constexpr int kMaxBoxes = 16;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string text_at(double x, double y, const std::string& text, const char* anchor = "start",
                    const char* extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" + extra +
         ">" + escape(text) + "</text>";
}

std::string open_svg(int height, const std::string& title) {
  return "<figure><svg class=\"chart\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\" "
         "width=\"" + std::to_string(kWidth) + "\" height=\"" + std::to_string(height) +
         "\" viewBox=\"0 0 " + std::to_string(kWidth) + " " + std::to_string(height) +
         "\"><title>" + escape(title) + "</title>";
}

std::string close_svg(const std::string& title) {
  return "</svg><figcaption>" + escape(title) + "</figcaption></figure>\n";
}

}  // namespace

std::string escape(std::string_view text) { return validate::html_escape(text); }

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<table><thead><tr>";
  for (const auto& h : header) s += "<th>" + escape(h) + "</th>";
  s += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const auto& cell : row) s += "<td>" + escape(cell) + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table>\n";
}

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_x,
                       Format x_format, Format y_format) {
  constexpr double kLeft = 90, kRight = 180, kTop = 20, kBottom = 50, kHeight = 320;
  double x0 = HUGE_VAL, x1 = -HUGE_VAL, y1 = 0;
  auto fx = [log_x](double x) { return log_x ? std::log2(x) : x; };
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, fx(x));
      x1 = std::max(x1, fx(x));
      y1 = std::max(y1, y);
    }
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  if (!(y1 > 0)) y1 = 1;
  y1 *= 1.08;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (fx(x) - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / y1 * plot_h; };
  std::string s = open_svg(static_cast<int>(kHeight), title);
  s += "<g class=\"axes\" stroke=\"#888\">";
  s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kTop + plot_h) + "\" x2=\"" +
       num(kLeft + plot_w) + "\" y2=\"" + num(kTop + plot_h) + "\"/>";
  s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(kLeft) + "\" y2=\"" +
       num(kTop + plot_h) + "\"/></g>";
  for (int i = 0; i <= 4; ++i) {  // y grid and labels
    const double y = y1 * i / 4;
    s += "<line stroke=\"#eee\" x1=\"" + num(kLeft) + "\" y1=\"" + num(py(y)) + "\" x2=\"" +
         num(kLeft + plot_w) + "\" y2=\"" + num(py(y)) + "\"/>";
    s += text_at(kLeft - 6, py(y) + 4, y_format(y), "end");
  }
  std::vector<double> xs;  // x ticks: every point's x
  for (const auto& se : series)
    for (const auto& p : se.points) xs.push_back(p.first);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const std::size_t step = std::max<std::size_t>(1, xs.size() / 8);
  for (std::size_t i = 0; i < xs.size(); i += step) {
    s += text_at(px(xs[i]), kTop + plot_h + 18, x_format(xs[i]), "middle");
  }
  s += text_at(kLeft + plot_w / 2, kHeight - 8, x_label, "middle");
  s += text_at(14, kTop + plot_h / 2, y_label, "middle",
               (" transform=\"rotate(-90 14 " + num(kTop + plot_h / 2) + ")\"").c_str());
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = kColours[i % std::size(kColours)];
    std::string pts;
    for (const auto& [x, y] : series[i].points) pts += num(px(x)) + "," + num(py(y)) + " ";
    s += "<polyline class=\"mark\" fill=\"none\" stroke-width=\"2.5\" stroke=\"" +
         std::string(colour) + "\" points=\"" + pts + "\"/>";
    for (const auto& [x, y] : series[i].points) {
      s += "<circle class=\"mark\" r=\"3.5\" fill=\"" + std::string(colour) + "\" cx=\"" +
           num(px(x)) + "\" cy=\"" + num(py(y)) + "\"/>";
    }
    const double ly = kTop + 14 + 20.0 * static_cast<double>(i);
    s += "<rect x=\"" + num(kWidth - kRight + 12) + "\" y=\"" + num(ly - 9) +
         "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/>";
    s += text_at(kWidth - kRight + 30, ly + 1, series[i].name);
  }
  return s + close_svg(title);
}

std::string bar_chart(const std::string& title, const std::vector<Bar>& bars, Format format,
                      double reference, const std::string& reference_label) {
  constexpr double kLeft = 230, kRight = 110, kTop = 14, kRow = 26;
  const double height = kTop + kRow * static_cast<double>(bars.size()) + (reference > 0 ? 34 : 14);
  double top = reference;
  for (const auto& b : bars) top = std::max(top, b.value);
  if (!(top > 0)) top = 1;
  const double plot_w = kWidth - kLeft - kRight;
  std::string s = open_svg(static_cast<int>(height), title);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = kTop + kRow * static_cast<double>(i);
    const double w = std::max(1.0, bars[i].value / top * plot_w);  // a zero still shows a tick
    s += text_at(kLeft - 8, y + 15, bars[i].label, "end");
    s += "<rect class=\"mark\" x=\"" + num(kLeft) + "\" y=\"" + num(y + 3) + "\" width=\"" +
         num(w) + "\" height=\"18\" fill=\"" + kColours[i % std::size(kColours)] + "\"/>";
    s += text_at(kLeft + w + 6, y + 16, format(bars[i].value));
  }
  if (reference > 0) {
    const double x = kLeft + reference / top * plot_w;
    const double bottom = kTop + kRow * static_cast<double>(bars.size());
    s += "<line stroke=\"#D55E00\" stroke-width=\"2\" stroke-dasharray=\"6 4\" x1=\"" + num(x) +
         "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(bottom + 4) + "\"/>";
    s += text_at(x, bottom + 22, reference_label, "middle");
  }
  return s + close_svg(title);
}

std::string fabric_picture(const std::string& title, const std::vector<Tier>& tiers, int nodes,
                           const std::string& node_label) {
  constexpr double kRowH = 80, kTop = 20;
  const double height = kTop + kRowH * static_cast<double>(tiers.size() + 1) + 10;
  std::string s = open_svg(static_cast<int>(height), title);
  // Rows from the top tier down to the nodes; each box centred in its slot.
  struct Row {
    std::string name;
    int count;
    const char* colour;
  };
  std::vector<Row> rows;
  for (auto it = tiers.rbegin(); it != tiers.rend(); ++it)
    rows.push_back({it->name, it->switches, "#0072B2"});
  rows.push_back({node_label, nodes, "#009E73"});
  auto centres = [](int count) {
    const int shown = std::min(count, kMaxBoxes);
    std::vector<double> xs;
    const double slot = (kWidth - 160.0) / shown;
    for (int i = 0; i < shown; ++i) xs.push_back(140 + slot * (i + 0.5));
    return xs;
  };
  for (std::size_t r = 0; r + 1 < rows.size(); ++r) {  // links first, under the boxes
    const auto up = centres(rows[r].count), down = centres(rows[r + 1].count);
    const double y0 = kTop + kRowH * static_cast<double>(r) + 30;
    const double y1 = kTop + kRowH * static_cast<double>(r + 1);
    for (double a : up)
      for (double b : down)
        s += "<line stroke=\"#bbb\" stroke-width=\"0.7\" x1=\"" + num(a) + "\" y1=\"" + num(y0) +
             "\" x2=\"" + num(b) + "\" y2=\"" + num(y1) + "\"/>";
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double y = kTop + kRowH * static_cast<double>(r);
    const auto xs = centres(rows[r].count);
    const double w = std::min(40.0, (kWidth - 160.0) / static_cast<double>(xs.size()) - 4);
    for (double x : xs) {
      s += "<rect class=\"mark\" x=\"" + num(x - w / 2) + "\" y=\"" + num(y) + "\" width=\"" +
           num(w) + "\" height=\"30\" rx=\"4\" fill=\"" + rows[r].colour + "\"/>";
    }
    std::string label = std::to_string(rows[r].count) + " " + rows[r].name;
    if (rows[r].count > kMaxBoxes) label += " (" + std::to_string(kMaxBoxes) + " drawn)";
    s += text_at(8, y + 20, label);
  }
  return s + close_svg(title);
}

std::string page(const std::string& title, const std::string& body, int charts_expected) {
  static constexpr const char* kStyle =
      "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
      "margin:2em auto;max-width:1000px;color:#222;line-height:1.4}"
      "h1{font-size:1.6em}h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;margin-top:2em}"
      "h3{margin-top:1.5em}table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}"
      "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}"
      "th{background:#f2f6fa}td:not(:first-child){font-variant-numeric:tabular-nums}"
      "figure{margin:1em 0}figcaption{font-size:.85em;color:#555}"
      "svg text{font-size:12px;fill:#222}.note{color:#555;font-size:.9em}"
      ".verdict{background:#f2f6fa;border-left:4px solid #009E73;padding:.5em 1em}";
  // Counts the charts that drew a visible mark: <body data-charts-drawn="N">, and says on the
  // console (an error, which the CTest looks for) when one drew nothing.
  static constexpr const char* kScript =
      "<script>(function(){var drawn=0,charts=document.querySelectorAll('svg.chart');"
      "charts.forEach(function(svg){var ok=false;svg.querySelectorAll('.mark').forEach("
      "function(m){var b=m.getBBox();if(b.width>0||b.height>0)ok=true;});"
      "if(ok)drawn++;else console.error('chart drew nothing: '+"
      "(svg.querySelector('title')||{}).textContent);});"
      "document.body.setAttribute('data-charts-drawn',String(drawn));})();</script>";
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>" + escape(title) + "</title><style>" + kStyle + "</style></head>\n"
         "<body data-charts-expected=\"" + std::to_string(charts_expected) + "\">\n" + body +
         kScript + "\n</body></html>\n";
}

}  // namespace clustersim::tools::html
