// What `search` and `sweep` share: a parallel layout and its prediction as table cells and JSON,
// and a progress line on stderr for long runs. Formats only; the commands print.
#pragma once

#include <chrono>
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "models/parallelism_search.h"
#include "models/result.h"
#include "models/scenario.h"
#include "models/step_model.h"

namespace clustersim::tools {

// Table cells of a layout: tp ("8+sp"), pp ("2 1f1b", "4 x2 il", "1"), dp, cp, zero, recompute,
// micro-batch; layout_header() names them.
std::vector<std::string> layout_header();
std::vector<std::string> layout_cells(const models::Layout& layout);

// {"tp", "pp", "dp", "cp", "ep", "sp", "zero", "recompute", "pp_schedule", "virtual_stages",
//  "micro_batch"}: the scenario keys of a layout, ready to paste under workload.parallelism.
nlohmann::json layout_json(const models::Layout& layout);
// The layout as YAML to paste into the scenario ("micro_batch: 1" and a parallelism: flow map).
std::string layout_yaml(const models::Layout& layout);

// plan's "breakdown_s": {"compute", "exposed_comm": {"dp", "tp", "pp", "cp", "ep"}, "hidden_comm",
// "bubble", "optimizer"}, seconds per step.
nlohmann::json breakdown_json(const models::StepBreakdown& breakdown);

// One prediction: plan's keys (step_time_s, tokens_per_s, mfu, memory_per_gpu_bytes,
// memory_capacity_bytes, fits, breakdown_s, ...) plus the cost per million tokens (null when
// unpriced), goodput and the layout.
nlohmann::json ranked_json(const models::RankedLayout& r);

// Where the step goes: (what, seconds) for compute, exposed TP/DP/PP/CP, bubble, optimizer.
std::vector<std::pair<std::string, double>> step_parts(const models::StepResult& step);
// The steps under other draws of ECMP's hash against `step_s`, for a sentence: "1.685 min
// (-17.7%) and 1.685 min (-17.7%)".
std::string other_draws_text(const std::vector<double>& draw_steps_s, double step_s);

// "\rclustersim <command>: 1,024 / 31,104 layouts, 3 s" on stderr once a run has taken a
// second: redrawn in place on a terminal (at most 5 times a second), a line every 5 s otherwise.
// Calls arrive one at a time (SearchOptions::progress); done() ends the line.
class ProgressLine {
 public:
  explicit ProgressLine(std::string command) : command_(std::move(command)) {}
  void update(std::size_t done, std::size_t total, const char* unit);
  void done();

 private:
  using Clock = std::chrono::steady_clock;
  std::string command_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = start_;
  bool drawn_ = false;
};

}  // namespace clustersim::tools
