// The NCCL debug log (NCCL_DEBUG=INFO output, `clustersim nccl-log`): parsed line by line and
// diagnosed.
#include "fuzz_common.h"
#include "validate/nccl_log.h"
#include "validate/nccl_log_diagnosis.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace clustersim;
  const std::string text = fuzz::text_of(data, size);
  const validate::NcclLogReport r = validate::analyze_nccl_log(text);
  (void)validate::transports_per_peer(r.summary);
  (void)validate::uses_socket_transport(r.summary);
  return 0;
}
