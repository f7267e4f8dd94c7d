// A training run whose speed a paper, a vendor or our own measurement published: the
// `published:` section of a corpus scenario (docs/accuracy.md), and the step time its figure
// implies. Units: seconds, FLOPs, bytes. Pure functions; parsing errors cite file:line:col.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/collective_model.h"
#include "models/result.h"
#include "models/scenario.h"

namespace clustersim::models {

// What the source published.
enum class PublishedMetric {
  kStepTime,          // seconds per optimizer step
  kTokensPerSPerGpu,  // global batch x sequence per second, over the GPUs
  kTflopsPerGpu,      // FLOPs per step (counted by a FlopsConvention) per second per GPU, 1e12
  kMfu,               // the same over the GPU's dense peak in the workload precision
  // One collective on the scenario's fabric (PublishedRun::collective), not a training step:
  kBusbw,       // nccl-tests' bus bandwidth, bytes/s
  kBusbwRatio,  // its bus bandwidth over the same collective's with `versus` applied
};
std::string_view to_string(PublishedMetric m);
// Whether the metric measures one collective (the fabric alone) rather than a training step.
bool is_collective_metric(PublishedMetric m);

// How a source counted the FLOPs of a step (B global batch, s sequence, l layers, h hidden, V
// vocabulary).
enum class FlopsConvention {
  kNone,
  // Narayanan et al. 2021 eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh): GPT with a 4h MLP, full
  // (non-causal) attention, counting the forward that full recomputation repeats.
  kNarayanan,
  // Korthikanti et al. 2022 sec. 6 (model FLOPs, the MFU numerator): 72 B s l h^2 (1 + s/6h +
  // V/12lh), the same model without the recompute forward.
  kKorthikanti,
  kSixN,  // 6 N B s, N every parameter (count_parameters)
  // clustersim's model FLOPs: 3 x forward (2 x matmul weights incl. the output head, causal
  // attention 2 s h per layer), transformer_model.h FlopsPerToken::training().
  kModel,
  kModelFullAttention,  // the same with attention not halved (PaLM appendix B as written)
};
std::string_view to_string(FlopsConvention f);

// The collective a contention measurement ran, as nccl-tests runs it: one communicator over the
// first `gpus` GPUs (0: all of them), filling nodes in order, alone on the fabric.
struct PublishedCollective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  double size_bytes = 0;  // nccl-tests' size column (the whole buffer; all_gather's output)
  int gpus = 0;
  // NCCL's algorithm when the source pins it (NCCL_ALGO); auto: NCCL's tuner chooses, as the
  // analytic model does.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};

struct PublishedRun {
  std::string source;    // short id; runs with the same id form one source
  std::string citation;  // title, table or figure, row
  std::string url;       // "" when not given
  PublishedMetric metric = PublishedMetric::kStepTime;
  double value = 0;  // in the metric's unit: s, tokens/s/GPU, TFLOP/s/GPU, or a fraction
  FlopsConvention flops = FlopsConvention::kNone;  // kTflopsPerGpu and kMfu only
  double memory_per_gpu_bytes = 0;  // the peak the source reports; 0 = not published
  // What the run relied on that clustersim does not model (a schedule, a memory technique), as
  // the corpus file states it: shown beside the run's error and memory verdict. "" = nothing.
  std::string not_modelled;
  // kBusbw and kBusbwRatio only: the collective measured; for kBusbwRatio the configuration the
  // source compares it with, as --set edits of this scenario (e.g. cluster.fabric.routing=ecmp).
  PublishedCollective collective;
  std::vector<ScenarioOverride> versus;
};

// Reads the `published:` section of a scenario's YAML text (the scenario already loaded from
// it). Errors: "file:line:col: published.key: what" for a missing or unknown key, a metric
// without its value's unit, `flops` missing for tflops_per_gpu/mfu or given for another
// metric, a value that is not positive.
Result<PublishedRun> read_published_run(std::string_view yaml_text, const Scenario& scenario);

// FLOPs of one optimizer step of the scenario's workload as the convention counts them.
// REQUIRES: convention != kNone.
double convention_flops_per_step(FlopsConvention convention, const WorkloadConfig& workload);

// The step time the published figure implies on the scenario's GPUs. For a collective metric:
// kBusbw, the collective's time (size x nccl-tests' bus factor / busbw); kBusbwRatio, the ratio
// of its time to the `versus` configuration's (1 / value).
double published_step_time_s(const PublishedRun& run, const Scenario& scenario);

// The GPUs a collective metric's communicator spans (collective.gpus, or every GPU).
int published_collective_gpus(const PublishedRun& run, const Scenario& scenario);

// The kind of training run a scenario is, for comparing a prediction with the corpus runs of its
// kind: the GPU's generation (Ampere, Ada, Hopper, Blackwell; another vendor's GPU by its
// catalog id), whether the model has experts, and whether its GPUs share one node (one
// scale-up domain: no network traffic), e.g. "Hopper dense, multi-node", "Blackwell MoE, one
// node".
std::string accuracy_class(const Scenario& scenario);

}  // namespace clustersim::models
