#include "sim/chrome_trace.h"

// clang-format off
#include <xbt/base.h>  // SG_BEGIN_DECL, which simgrid/version.h needs first
#include <simgrid/version.h>
// clang-format on

#include <nlohmann/json.hpp>
#include <set>

namespace clustersim::sim {

std::string chrome_trace_json(const DesStepResult& result, const std::string& scenario_name) {
  static const char* const kLanes[] = {"compute", "TP", "PP", "DP", "CP", "EP"};
  nlohmann::json events = nlohmann::json::array();
  std::set<int> stages;
  for (const TraceEvent& e : result.trace) {
    stages.insert(e.stage);
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_s * 1e6},
                      {"dur", e.duration_s * 1e6},
                      {"pid", e.stage},
                      {"tid", e.lane}});
  }
  for (int s : stages) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"args", {{"name", "stage " + std::to_string(s)}}}});
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", s}, {"args", {{"sort_index", s}}}});
    for (int lane = 0; lane < 6; ++lane) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", s},
                        {"tid", lane},
                        {"args", {{"name", kLanes[lane]}}}});
    }
  }
  nlohmann::json doc = {{"traceEvents", events},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"scenario", scenario_name},
                          {"step_time_s", result.step.step_time_s},
                          {"critical_stage", result.critical_stage},
                          {"engine", "clustersim des (" SIMGRID_VERSION_STRING ")"}}}};
  return doc.dump();
}

}  // namespace clustersim::sim
