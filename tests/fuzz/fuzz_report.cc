// A verify report read back (`verify --check-report R --sign-key K FILE`): Markdown, HTML or
// JSON by the first byte, checked against a key. A report that is not ours is refused, never a
// crash; a signature never checks out under a key that did not sign it.
#include <string>

#include "fuzz_common.h"
#include "validate/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  if (size == 0) return 0;
  const validate::ReportFormat formats[] = {validate::ReportFormat::kMarkdown,
                                            validate::ReportFormat::kHtml,
                                            validate::ReportFormat::kJson};
  const validate::ReportFormat f = formats[data[0] % 3];
  const std::string text = fuzz::text_of(data + 1, size - 1);
  auto r = validate::check_report(text, f, "fuzz-key-nobody-signed-with");
  if (!r.ok()) {
    if (r.message().empty()) __builtin_trap();
    return 0;
  }
  if (r->signature_valid) __builtin_trap();  // forged without the key
  (void)validate::check_report(text, f, "");
  return 0;
}
