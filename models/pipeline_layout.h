// Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout,
// PipelineParallelLayerLayout in megatron/core/transformer/pipeline_parallel_layer_layout.py):
// which layers each model chunk holds, for layouts that no even split gives (DeepSeek-V3's 61
// layers over 16 chunks: "Et*4|(t*4|)*14tmL").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clustersim::models {

// A parsed layout: the string as given, the decoder layers of each model chunk in model order
// (chunk i runs on pipeline stage i mod pp as its virtual stage i / pp), and the
// multi-token-prediction layers, all in the last chunk. Empty: no layout given.
struct PipelineLayout {
  std::string text;
  std::vector<int> chunk_layers;
  int mtp_layers = 0;
  bool given() const { return !chunk_layers.empty(); }
  bool operator==(const PipelineLayout&) const = default;
};

// Parses Megatron-Core's grammar: commas are cosmetic; "(...)*n" repeats a group (no nesting)
// and "x*n" one character; "|" ends a chunk; E is the embedding, t a decoder layer, m a
// multi-token-prediction layer, L the output head and loss. As Megatron-Core checks it: E once,
// first, and L once, last; no decoder layer after an m. Beyond it: every m in the last chunk
// (Megatron's standalone MTP stage is not modelled). On bad input returns false with `error`
// saying why; `out` is left as it was.
bool parse_pipeline_layout(std::string_view text, PipelineLayout* out, std::string* error);

// A layout string for `layers` decoder layers over `chunks` model chunks when no even split
// exists (DeepSeek-V3's 61 layers): layers / chunks each, the remainder one more on each of the
// first chunks (the embedding's side: the last carries the output head, the loss and the
// `mtp_layers` multi-token-prediction layers). E.g. 61 over 4: "Et*16|t*15|t*15|t*15mL".
// REQUIRES: 1 <= chunks <= layers, mtp_layers >= 0.
std::string balanced_pipeline_layout(int layers, int chunks, int mtp_layers);

}  // namespace clustersim::models
