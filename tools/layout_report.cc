#include "tools/layout_report.h"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/cost_model.h"
#include "models/units.h"

namespace clustersim::tools {

std::vector<std::string> layout_header() {
  return {"tp", "pp", "dp", "cp", "ep", "zero", "recompute", "mb"};
}

std::vector<std::string> layout_cells(const models::Layout& layout) {
  const models::ParallelismConfig& p = layout.parallelism;
  std::string pp = std::to_string(p.pp);
  if (p.pp > 1) {
    pp += p.pp_schedule == models::PipelineSchedule::kInterleaved
              ? " x" + std::to_string(p.virtual_stages) + " il"
              : " " + std::string(models::to_string(p.pp_schedule));
    if (p.layout.given()) pp += " uneven";  // a layout string (layout_yaml gives it)
  }
  return {std::to_string(p.tp) + (p.sp ? "+sp" : ""),
          pp,
          std::to_string(p.dp),
          std::to_string(p.cp),
          std::to_string(p.ep),
          std::to_string(p.zero),
          std::string(models::to_string(p.recompute)),
          std::to_string(layout.micro_batch)};
}

nlohmann::json layout_json(const models::Layout& layout) {
  const models::ParallelismConfig& p = layout.parallelism;
  nlohmann::json j = {{"tp", p.tp},
                      {"pp", p.pp},
                      {"dp", p.dp},
                      {"cp", p.cp},
                      {"ep", p.ep},
                      {"etp", p.etp},
                      {"sp", p.sp},
                      {"zero", p.zero},
                      {"recompute", models::to_string(p.recompute)},
                      {"pp_schedule", models::to_string(p.pp_schedule)},
                      {"virtual_stages", p.virtual_stages},
                      {"micro_batch", layout.micro_batch}};
  // Only where one was given or generated: the object reads back as a parallelism map.
  if (p.layout.given()) j["pipeline_layout"] = p.layout.text;
  return j;
}

std::string layout_yaml(const models::Layout& layout) {
  const models::ParallelismConfig& p = layout.parallelism;
  std::string s = "micro_batch: " + std::to_string(layout.micro_batch) +
                  "\nparallelism: {tp: " + std::to_string(p.tp) + ", pp: " + std::to_string(p.pp) +
                  ", dp: " + std::to_string(p.dp) + ", cp: " + std::to_string(p.cp) +
                  ", sp: " + (p.sp ? "true" : "false") + ", zero: " + std::to_string(p.zero) +
                  ", recompute: " + std::string(models::to_string(p.recompute)) +
                  ", pp_schedule: " + std::string(models::to_string(p.pp_schedule));
  if (p.virtual_stages > 1) s += ", virtual_stages: " + std::to_string(p.virtual_stages);
  if (p.ep > 1) s += ", ep: " + std::to_string(p.ep);
  if (p.etp > 1) s += ", etp: " + std::to_string(p.etp);
  if (p.layout.given()) s += ", pipeline_layout: \"" + p.layout.text + "\"";
  return s + "}";
}

std::vector<std::pair<std::string, double>> step_parts(const models::StepResult& step) {
  const models::StepBreakdown& b = step.breakdown;
  return {{"compute", b.compute_s},       {"exposed TP", b.tp.exposed_s},
          {"exposed DP", b.dp.exposed_s}, {"exposed PP", b.pp.exposed_s},
          {"exposed CP", b.cp.exposed_s}, {"exposed EP", b.ep.exposed_s},
          {"pipeline bubble", b.bubble_s}, {"optimizer", b.optimizer_s}};
}

nlohmann::json breakdown_json(const models::StepBreakdown& b) {
  nlohmann::json exposed = {{"dp", b.dp.exposed_s},
                            {"tp", b.tp.exposed_s},
                            {"pp", b.pp.exposed_s},
                            {"cp", b.cp.exposed_s},
                            {"ep", b.ep.exposed_s}};
  return {{"compute", b.compute_s},
          {"host_wait", b.host_wait_s},
          {"exposed_comm", exposed},
          {"hidden_comm", b.hidden_comm_s()},
          {"bubble", b.bubble_s},
          {"optimizer", b.optimizer_s}};
}

nlohmann::json ranked_json(const models::RankedLayout& r) {
  const models::StepResult& s = r.step;
  return {{"layout", layout_json(r.layout)},
          {"label", models::to_string(r.layout)},
          {"gpus", s.gpus},
          {"micro_batches", s.micro_batches},
          {"step_time_s", s.step_time_s},
          {"tokens_per_s", s.tokens_per_s},
          {"model_tflops_per_gpu", s.model_tflops_per_gpu},
          {"mfu", s.mfu},
          {"memory_per_gpu_bytes", s.memory.total()},
          {"memory_capacity_bytes", s.memory_capacity_bytes},
          {"fits", s.fits},
          {"breakdown_s", breakdown_json(s.breakdown)},
          {"gpu_hours_per_million_tokens", r.gpu_hours_per_million_tokens},
          {"usd_per_million_tokens", r.usd_per_million_tokens > 0
                                         ? nlohmann::json(r.usd_per_million_tokens)
                                         : nlohmann::json(nullptr)},
          {"goodput", r.goodput},
          {"score", r.score}};
}

void ProgressLine::update(std::size_t done, std::size_t total, const char* unit) {
  const Clock::time_point now = Clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  const bool tty = isatty(STDERR_FILENO) != 0;
  const double since_s = std::chrono::duration<double>(now - last_).count();
  if (elapsed_s < 1 || since_s < (tty ? 0.2 : 5.0)) return;
  last_ = now;
  const std::string text = "clustersim " + command_ + ": " + std::to_string(done) + " / " +
                           std::to_string(total) + " " + unit + ", " +
                           models::format_time(elapsed_s);
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", text.c_str());
  drawn_ = tty;
}

void ProgressLine::done() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

std::string other_draws_text(const std::vector<double>& draw_steps_s, double step_s) {
  std::string out;
  for (double t : draw_steps_s) {
    out += std::string(out.empty() ? "" : " and ") + models::format_time(t) + " (" +
           models::format_signed_percent(t / step_s - 1) + ")";
  }
  return out;
}

}  // namespace clustersim::tools
