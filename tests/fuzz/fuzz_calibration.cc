// The calibration overlay (`--calibration FILE`, written by `clustersim calibrate`): loaded, then
// applied to the reference cluster's collective and compute parameters.
#include "fuzz_common.h"
#include "models/calibration.h"
#include "models/step_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  auto c = models::load_calibration_text(fuzz::text_of(data, size), "fuzz-calibration.yaml");
  if (!c.ok()) {
    if (c.message().empty()) __builtin_trap();
    return 0;
  }
  const models::Scenario& sc = fuzz::reference_scenario();
  models::StepParams params = models::default_step_params(sc.cluster);
  if (models::apply_calibration(*c, sc.cluster, sc.workload.precision, &params).ok()) {
    (void)models::predict_step(sc, params);
  }
  (void)models::to_yaml_text(*c);
  return 0;
}
