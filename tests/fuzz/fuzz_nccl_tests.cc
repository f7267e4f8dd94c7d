// nccl-tests' own text output (`check` and `calibrate` read *_perf logs): parsed as rows, then
// as a measurement of the reference cluster, judged and compared with the analytic model.
#include "fuzz_common.h"
#include "validate/acceptance.h"
#include "validate/measurement_samples.h"
#include "validate/nccl_tests_output.h"
#include "validate/prediction_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  const std::string text = fuzz::text_of(data, size);
  (void)validate::parse_nccl_tests_output(text);
  (void)validate::is_nccl_tests_text(text);
  const models::Scenario& sc = fuzz::reference_scenario();
  auto file = validate::nccl_tests_measurement({{"all_reduce_perf.txt", text}}, sc);
  if (!file.ok()) {
    if (file.message().empty()) __builtin_trap();
    return 0;
  }
  (void)validate::run_acceptance(file->data, {});
  const auto in = validate::analytic_comparison_inputs(sc.cluster, file->data);
  (void)validate::compare_measurement(file->data, in);
  return 0;
}
