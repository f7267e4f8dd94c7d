// The scenario loader with --set overrides: leading lines "#set KEY=VALUE" become overrides
// (as `clustersim sweep --set`), the rest is the YAML document. A scenario that loads is then
// predicted by the analytic model (memory, compute, collectives, step) when it is small enough
// to answer in well under a second.
#include <cmath>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "models/accuracy/published_run.h"
#include "models/step_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  std::string text = fuzz::text_of(data, size);
  std::vector<models::ScenarioOverride> overrides;
  while (text.rfind("#set ", 0) == 0 && overrides.size() < 4) {
    const size_t eol = text.find('\n');
    const std::string line = text.substr(5, eol == std::string::npos ? std::string::npos : eol - 5);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) overrides.push_back({line.substr(0, eq), line.substr(eq + 1)});
    text = eol == std::string::npos ? std::string() : text.substr(eol + 1);
  }
  auto s = models::load_scenario_text(text, "fuzz.yaml", overrides);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();  // every refusal says why
    return 0;
  }
  const models::Scenario& sc = s.value();
  // A published figure that loads implies a positive, finite time (or ratio).
  if (sc.published) {
    const double t = models::published_step_time_s(*sc.published, sc);
    if (!(t > 0) || t == HUGE_VAL) __builtin_trap();
  }
  if (sc.cluster.total_gpus() <= 65536 && sc.workload.model.layers <= 1024) {
    (void)models::predict_step(sc, models::default_step_params(sc.cluster));
  }
  return 0;
}
