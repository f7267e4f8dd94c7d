// Claims: the claims file (`verify --claims FILE`) when the first byte is even, a one-line
// `--claim` text on the reference cluster when it is odd; every claim read is then judged.
#include <string>

#include "fuzz_common.h"
#include "models/claims.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  if (size == 0) return 0;
  const std::string text = fuzz::text_of(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    // Beside the seed claims, so that their `scenario:` paths resolve.
    auto claims = models::load_claims_text(
        text, std::string(CLUSTERSIM_SOURCE_DIR) + "/scenarios/seed/fuzz-claims.yaml");
    if (!claims.ok()) {
      if (claims.message().empty()) __builtin_trap();
      return 0;
    }
    for (const auto& c : *claims) (void)models::evaluate_claim(c);
  } else {
    auto c = models::parse_claim_line(text, fuzz::reference_scenario().cluster, "fuzz cluster");
    if (!c.ok()) {
      if (c.message().empty()) __builtin_trap();
      return 0;
    }
    (void)models::evaluate_claim(*c);
  }
  return 0;
}
