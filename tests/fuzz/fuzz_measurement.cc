// The measurement file (JSON, `clustersim validate`'s output, judged by `verify` and `check`):
// parsed, judged by the acceptance checks, rendered as every report format (each read back by
// `verify --check-report`) and compared with the analytic model as `check` does. Judging a
// hostile file must never crash, and a report must carry the digest of exactly these bytes.
#include "fuzz_common.h"
#include "validate/acceptance.h"
#include "validate/measurement_samples.h"
#include "validate/prediction_check.h"
#include "validate/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  auto file = validate::measurement_from_text("fuzz.json", fuzz::text_of(data, size));
  if (!file.ok()) {
    if (file.message().empty()) __builtin_trap();
    return 0;
  }
  const validate::Measurement& m = file->data;
  const validate::AcceptanceResult r = validate::run_acceptance(m, {});
  validate::ReportMeta meta;
  meta.measurement_path = file->path;
  meta.measurement_sha256 = file->sha256_hex;
  for (auto f : {validate::ReportFormat::kMarkdown, validate::ReportFormat::kHtml,
                 validate::ReportFormat::kJson}) {
    const std::string report = validate::sign_report(validate::render_report(r, meta, f), f, "k");
    auto back = validate::check_report(report, f, "k");
    if (!back.ok() || !back->signature_valid || back->measurement_sha256 != file->sha256_hex) {
      __builtin_trap();  // a report that does not read back as what it judged
    }
  }
  if (auto cluster = validate::measured_cluster(m); cluster.ok()) {
    const auto in = validate::analytic_comparison_inputs(*cluster, m);
    (void)validate::compare_measurement(m, in);
  }
  return 0;
}
