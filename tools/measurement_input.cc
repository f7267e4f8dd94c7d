#include "tools/measurement_input.h"

#include "models/scenario.h"
#include "models/text_file.h"

namespace clustersim::tools {

models::Result<std::vector<validate::MeasurementFile>> load_measurements(
    const std::vector<std::string>& paths, const std::string& scenario_path,
    const std::string& scenario_flag) {
  std::vector<validate::MeasurementFile> out;
  std::vector<validate::FileText> logs;
  for (const std::string& path : paths) {
    auto text = models::read_text_file(path);
    if (!text) return text.error();
    if (validate::is_nccl_tests_text(*text)) {
      logs.push_back({path, std::move(*text)});
      continue;
    }
    auto f = validate::measurement_from_text(path, *text);
    if (!f) return f.error();
    out.push_back(std::move(*f));
  }
  if (!logs.empty()) {
    if (scenario_path.empty()) {
      return models::Error{logs.front().path + ": nccl-tests output says nothing of the hardware it "
                           "ran on: give " + scenario_flag + " SCENARIO"};
    }
    auto sc = models::load_scenario_file(scenario_path);
    if (!sc) return sc.error();
    auto m = validate::nccl_tests_measurement(logs, *sc);
    if (!m) return m.error();
    out.push_back(std::move(*m));
  }
  return out;
}

}  // namespace clustersim::tools
