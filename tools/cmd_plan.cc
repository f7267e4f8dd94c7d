// `clustersim plan [SCENARIO]`: the main job. Predicts one training step of the scenario's
// workload on its cluster with the analytic models (step time, tokens/s, TFLOP/s, MFU, memory
// per GPU against capacity, time and communication breakdown), then the cost, run time and
// goodput, and states the assumptions behind the numbers. --json prints the keys that
// docs/scenario-format.md lists.
// With an `interference:` section the simulator runs the step twice, with the neighbour and
// background traffic and without, and reports the slowdown ("interference" in JSON).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/accuracy/published_run.h"
#include "models/cost_model.h"
#include "models/layer_model.h"
#include "models/step_model.h"
#include "models/units.h"
#include "sim/chrome_trace.h"
#include "sim/step_sim.h"
#include "tools/accuracy_classes.h"
#include "tools/calibration_option.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/layout_report.h"
#include "tools/scenario_input.h"
#include "tools/tco_report.h"
#include "tools/text_table.h"

namespace clustersim::tools {
namespace {

using models::format_bandwidth;
using models::format_count;
using models::format_flops;
using models::format_percent;
using models::format_significant;
using models::format_size;
using models::format_time;
using models::format_usd;
using Align = TextTable::Align;

struct PlanArgs {
  std::string scenario;
  std::vector<std::string> sets;  // --set KEY=VALUE
  std::string calibration;  // overlay file; "" = the scenario's calibration: key, if any
  bool json = false;
  // "des": the simulator (sim/step_sim.h); "analytic": the formulas (models/step_model.h);
  // "auto" (default): des, or analytic with a stated reason when the simulation cannot run
  // (a fabric that cannot be cabled still gets a plan, and the reason why the fabric fails).
  std::string engine = "auto";
  std::string trace;  // des: Chrome trace JSON of the simulated step
};

// A number, or JSON null where the input needed for it was not given.
nlohmann::json or_null(bool known, double value) {
  return known && std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

// The scenario's `interference:` section in words: "neighbour job of 32 nodes (interleaved with
// ours), alltoall at 80% of its NICs; background 20 GB/s per node (seed 7)".
std::string interference_what(const models::InterferenceConfig& in) {
  std::string s;
  if (in.neighbour_nodes > 0) {
    s = "neighbour job of " + std::to_string(in.neighbour_nodes) + " nodes (" +
        (in.placement == models::NeighbourPlacement::kAfter ? "after ours"
                                                            : "interleaved with ours") +
        "), " + std::string(models::to_string(in.pattern)) + " at " +
        format_percent(in.neighbour_load) + " of its NICs";
  }
  if (in.background_per_node_Bps > 0) {
    if (!s.empty()) s += "; ";
    s += "background " + format_bandwidth(in.background_per_node_Bps) + " per node (seed " +
         std::to_string(in.seed) + ")";
  }
  return s;
}

// What the interference costs the simulated step: the same step simulated twice on the same
// fabric with our nodes in the same places, once with the neighbour and background traffic
// sending and once with them silent.
struct InterferenceEffect {
  std::string what;  // interference_what()
  models::StepResult alone;
  double step_s_with = 0;
  double slowdown() const { return step_s_with / alone.step_time_s; }
  double added_s() const { return step_s_with - alone.step_time_s; }
};
constexpr const char* kInterferenceBaseline =
    "alone: the same fabric and node placement with the neighbour idle and no background traffic";
constexpr const char* kInterferenceIgnored =
    "the analytic model has no contention and ignores the scenario's interference: section; "
    "--engine des simulates it";

void print_interference(const InterferenceEffect& e) {
  const auto& a = e.alone.breakdown;
  std::printf("Interference: %s\n", e.what.c_str());
  std::printf("  step alone %s, with it %s: %sx slower (+%s)\n",
              format_time(e.alone.step_time_s).c_str(), format_time(e.step_s_with).c_str(),
              format_significant(e.slowdown(), 4).c_str(), format_time(e.added_s()).c_str());
  std::printf("  exposed communication alone: tp %s, dp %s, pp %s, cp %s\n",
              format_time(a.tp.exposed_s).c_str(), format_time(a.dp.exposed_s).c_str(),
              format_time(a.pp.exposed_s).c_str(), format_time(a.cp.exposed_s).c_str());
  std::printf("  (%s)\n\n", kInterferenceBaseline);
}

nlohmann::json interference_json(const InterferenceEffect& e) {
  return {{"what", e.what},
          {"simulated", true},
          {"step_s_alone", e.alone.step_time_s},
          {"step_s_with", e.step_s_with},
          {"slowdown", e.slowdown()},
          {"added_s", e.added_s()},
          {"breakdown_s_alone", breakdown_json(e.alone.breakdown)},
          {"baseline", kInterferenceBaseline}};
}

std::string parallelism_line(const models::WorkloadConfig& w, int micro_batches) {
  const auto& p = w.parallelism;
  std::string s = "tp " + std::to_string(p.tp) + (p.sp ? " (+sp)" : "") + ", pp " +
                  std::to_string(p.pp) + " " + std::string(models::to_string(p.pp_schedule));
  if (p.pp_schedule == models::PipelineSchedule::kInterleaved) {
    s += " x" + std::to_string(p.virtual_stages);
  }
  if (p.layout.given()) s += " (layout " + p.layout.text + ")";
  s += ", dp " + std::to_string(p.dp) + ", cp " + std::to_string(p.cp) +
       (p.ep > 1 ? ", ep " + std::to_string(p.ep) : std::string()) +
       (p.etp > 1 ? ", etp " + std::to_string(p.etp) : std::string()) + ", zero " +
       std::to_string(p.zero) + ", recompute " + std::string(models::to_string(p.recompute)) +
       "; micro-batches per step: " + std::to_string(micro_batches) + " of " +
       std::to_string(w.micro_batch) + (w.micro_batch == 1 ? " sequence" : " sequences");
  return s;
}

void print_header(const models::Scenario& s, const models::StepResult& r,
                  const char* engine = "analytic model", const std::string& calibration = "") {
  const auto& c = s.cluster;
  const auto& n = c.node;
  const auto& w = s.workload;
  std::printf("Plan for %s (%s): %s\n", s.name.c_str(), s.path.c_str(), engine);
  if (!s.note.empty()) std::printf("  note      %s\n", s.note.c_str());
  std::printf("  cluster   %d GPUs: %d nodes x %d %s on %s", r.gpus, c.nodes, n.gpus_per_node,
              n.gpu.id.c_str(), n.scale_up.id.c_str());
  if (n.nics_per_node > 0) {
    std::printf(
        ", %d x %s%s per node, %s", n.nics_per_node, n.nic.id.c_str(),
        n.links_per_nic > 1 ? (" (" + std::to_string(n.links_per_nic) + " links)").c_str() : "",
        std::string(models::to_string(c.fabric.topology)).c_str());
  }
  const auto pc = models::count_parameters(w.model);
  const std::string params =
      format_count(pc.total()) + " parameters" +
      (w.model.moe.enabled() ? ", " + format_count(pc.active()) + " active: " +
                                   std::to_string(w.model.moe.experts) + " experts, top " +
                                   std::to_string(w.model.moe.top_k)
                             : std::string());
  std::printf("\n  workload  %s (%s), seq %d, %d sequences = %s tokens per step, %s\n",
              w.model.id.c_str(), params.c_str(),
              w.seq_len, w.global_batch, format_count(r.tokens_per_step).c_str(),
              std::string(models::to_string(w.precision)).c_str());
  std::printf("  parallel  %s\n", parallelism_line(w, r.micro_batches).c_str());
  if (!calibration.empty()) {
    std::printf("  calibrated by %s (its collective, GEMM, attention and memory rates replace the "
                "model's where it measured them)\n",
                calibration.c_str());
  }
  std::printf("\n");
}

void print_step(const models::StepResult& r, models::Precision precision) {
  const std::string precision_name(models::to_string(precision));
  std::printf("Step\n");
  std::printf("  step time        %s\n", format_time(r.step_time_s).c_str());
  std::printf("  tokens/s         %s (%s per GPU)\n", format_count(r.tokens_per_s).c_str(),
              format_count(r.tokens_per_s / r.gpus).c_str());
  std::printf("  TFLOP/s per GPU  %s model, %s hardware (with recompute), peak %s\n",
              format_significant(r.model_tflops_per_gpu, 4).c_str(),
              format_significant(r.hardware_tflops_per_gpu, 4).c_str(),
              format_flops(r.peak_flops).c_str());
  if (r.mfu_bf16 > 0 && std::abs(r.mfu_bf16 - r.mfu) > 1e-9) {
    std::printf("  MFU              %s of the %s peak (%s of the bf16 peak)\n\n",
                format_percent(r.mfu).c_str(), precision_name.c_str(),
                format_percent(r.mfu_bf16).c_str());
  } else {
    std::printf("  MFU              %s\n\n", format_percent(r.mfu).c_str());
  }
}

const char* peak_moment_text(models::MemoryBreakdown::Moment moment) {
  using Moment = models::MemoryBreakdown::Moment;
  switch (moment) {
    case Moment::kForwardEnd:
      return "the forward's end, the loss computed";
    case Moment::kLossBackward:
      return "the loss's backward";
    case Moment::kRecompute:
      return "a layer recomputed in the backward, the loss's tensors freed";
    case Moment::kGradients:
      return "the backward's end, every gradient allocated";
  }
  return "?";
}

// Columns a wrapped note of the text report fills (its tables run about this wide).
constexpr std::size_t kNoteColumns = 100;

void print_memory(const models::Scenario& s, const models::StepResult& r,
                  const models::StepParams& params) {
  const auto& m = r.memory;
  std::printf("Memory per GPU (busiest stage %d): %s of %s: %s\n", m.stage,
              format_size(m.total()).c_str(), format_size(r.memory_capacity_bytes).c_str(),
              r.fits ? "fits" : "DOES NOT FIT");
  TextTable t({"weights", "gradients", "optimizer", "activations", "logits", "weight copies",
               "context + NCCL"},
              std::vector<Align>(7, Align::kRight));
  t.add_row({format_size(m.weights_bytes), format_size(m.gradients_bytes),
             format_size(m.optimizer_bytes), format_size(m.activations_bytes),
             format_size(m.logits_bytes), format_size(m.gathered_weights_bytes),
             format_size(m.outside_allocator_bytes)});
  std::printf("%s", t.render(2).c_str());
  std::printf("  (each kind at its own peak; the total is the busiest moment: %s)\n",
              peak_moment_text(m.peak_moment()));
  std::printf("  PyTorch's allocator may reserve %s more (its cache, given back under pressure): "
              "%s reserved at the peak\n",
              format_size(m.allocator_cache_bytes()).c_str(),
              format_size(m.allocator_bytes()).c_str());
  if (r.allocator_at_capacity()) {
    std::printf("%s", wrap_text("! more than the GPU holds: the allocator will free its cache and "
                                "retry allocations, each retry synchronising the device. Not in "
                                "the step time: on one H100 at capacity, 16-40 retries a run "
                                "moved steps by -15% to +23% (scenarios/measurements/call46). "
                                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or a smaller "
                                "micro_batch keeps clear of it.",
                                kNoteColumns, "  ", "    ")
                          .c_str());
  }
  if (!r.fits) {
    if (s.published) {
      // A published run that trained on these GPUs: say what let it fit that the model lacks.
      const std::string why = s.published->not_modelled.empty()
                                  ? "not named in the file (its published.not_modelled)"
                                  : s.published->not_modelled;
      std::printf("%s", wrap_text("This layout ran as published (" + s.published->source +
                                      "): it fits only with what the model does not have: " +
                                      why,
                                  kNoteColumns, "  ", "    ")
                            .c_str());
    }
    std::printf("  To fit, change one of (memory per GPU after the change):\n");
    for (const auto& a :
         models::memory_advice(s.workload, m, r.memory_capacity_bytes, params.memory)) {
      std::printf("    - %s\n", a.c_str());
    }
  }
  std::printf("\n");
}

void print_breakdown(const models::StepResult& r) {
  const auto& b = r.breakdown;
  const double step = r.step_time_s;
  TextTable t({"per step", "time", "share"}, {Align::kLeft, Align::kRight, Align::kRight});
  auto row = [&](const char* what, double s) {
    if (s > 0) {
      t.add_row({what, format_time(s), format_percent(s, step)});
    } else {
      t.add_row({what, "-", "-"});
    }
  };
  row("compute (forward + backward)", b.compute_s);
  if (b.overlap_interference_s > 0) {
    row("  of it: slowed by hidden comm", b.overlap_interference_s);
  }
  if (b.host_wait_s > 0) row("  of it: GPU waiting for the host (MoE layers)", b.host_wait_s);
  row("exposed TP communication", b.tp.exposed_s);
  row("exposed DP communication", b.dp.exposed_s);
  row("exposed PP communication", b.pp.exposed_s);
  row("exposed CP communication", b.cp.exposed_s);
  if (b.ep.total_s > 0) row("exposed EP communication (MoE all-to-all)", b.ep.exposed_s);
  row("pipeline bubble", b.bubble_s);
  row("optimizer", b.optimizer_s);
  t.add_separator();
  row("step", step);
  t.add_row({"hidden (overlapped) communication", format_time(b.hidden_comm_s()), ""});
  std::printf(
      "Time breakdown (one micro-batch on the busiest stage: forward %s, backward %s)\n%s\n",
      format_time(r.forward_s).c_str(), format_time(r.backward_s).c_str(), t.render(2).c_str());
}

void print_comms(const models::StepResult& r) {
  if (r.comms.empty()) {
    std::printf("Communication: none (one GPU per model replica and no data parallelism)\n\n");
    return;
  }
  TextTable t({"dim", "collective", "what", "size", "GPUs", "per step", "algorithm", "each",
               "busbw", "total"},
              {Align::kLeft, Align::kLeft, Align::kLeft, Align::kRight, Align::kRight,
               Align::kRight, Align::kLeft, Align::kRight, Align::kRight, Align::kRight});
  for (const auto& c : r.comms) {
    const auto& e = c.estimate;
    t.add_row({std::string(models::to_string(c.call.dim)),
               std::string(models::to_string(c.call.op)), c.call.what,
               format_size(c.call.size_bytes), std::to_string(c.call.group_size),
               format_significant(c.calls_per_step, 4),
               std::string(models::to_string(e.algorithm)) + "/" +
                   std::string(models::to_string(e.protocol)),
               format_time(e.time_s), format_bandwidth(e.busbw_Bps), format_time(c.total_s())});
  }
  const auto& b = r.breakdown;
  const std::string ep = b.ep.total_s > 0 ? ", ep " + format_time(b.ep.exposed_s) + " of " +
                                                 format_time(b.ep.total_s)
                                           : std::string();
  std::printf(
      "Communication per step (exposed of total: tp %s of %s, dp %s of %s, pp %s of %s, "
      "cp %s of %s%s)\n%s\n",
      format_time(b.tp.exposed_s).c_str(), format_time(b.tp.total_s).c_str(),
      format_time(b.dp.exposed_s).c_str(), format_time(b.dp.total_s).c_str(),
      format_time(b.pp.exposed_s).c_str(), format_time(b.pp.total_s).c_str(),
      format_time(b.cp.exposed_s).c_str(), format_time(b.cp.total_s).c_str(), ep.c_str(),
      t.render(2).c_str());
}

void print_cost(const models::Scenario& s, const models::RunCost& c) {
  std::printf("Cost\n");
  if (c.priced) {
    std::printf("  %s per GPU-hour: %s per step, %s per million tokens\n",
                format_usd(c.gpu_hour_usd).c_str(), format_usd(c.usd_per_step).c_str(),
                format_usd(c.usd_per_million_tokens).c_str());
  } else {
    // A step of a few GPUs lasts seconds: "0.2137 GPU-seconds", not "0.00005937 GPU-hours".
    const bool hours = c.gpu_hours_per_step >= 0.01;
    std::printf("  no price (cost.gpu_hour): %s GPU-%s per step\n",
                format_significant(c.gpu_hours_per_step * (hours ? 1 : 3600), 4).c_str(),
                hours ? "hours" : "seconds");
  }
  if (!c.has_run) {
    std::printf("  no run length (workload.train_tokens): no whole-run figures\n\n");
    return;
  }
  std::printf("  run of %s tokens: %s steps, %s without failures, %s GPU-hours%s\n",
              format_count(s.workload.train_tokens).c_str(), format_count(c.steps).c_str(),
              format_time(c.run_time_s).c_str(), format_count(c.gpu_hours).c_str(),
              c.priced ? (", " + format_usd(c.run_usd_no_failures)).c_str() : "");
  if (!c.has_reliability) {
    std::printf("  no reliability data (reliability.gpu_mtbf): goodput not estimated\n\n");
    return;
  }
  std::printf("  failures: cluster MTBF %s (GPU MTBF / %d GPUs)\n",
              format_time(c.cluster_mtbf_s).c_str(),
              static_cast<int>(s.workload.parallelism.gpus()));
  if (c.checkpoint_write_s > 0) {
    std::printf("  checkpoint %s written in %s every %s (%s), restart %s\n",
                format_size(c.checkpoint_bytes).c_str(), format_time(c.checkpoint_write_s).c_str(),
                format_time(c.checkpoint_interval_s).c_str(),
                c.interval_derived ? "Young/Daly optimum" : "scenario",
                format_time(c.restart_s).c_str());
  } else {
    std::printf("  no storage.write_bandwidth: checkpoint cost not counted; restart %s\n",
                format_time(c.restart_s).c_str());
  }
  if (c.goodput > 0) {
    std::printf("  goodput %s: effective run time %s%s\n\n", format_percent(c.goodput).c_str(),
                format_time(c.effective_run_time_s).c_str(),
                c.priced ? (", cost " + format_usd(c.run_usd)).c_str() : "");
  } else {
    std::printf(
        "  goodput 0: failures come faster than checkpoints and restarts: the run never "
        "finishes\n\n");
  }
}

void print_assumptions(const models::GpuSpec& gpu, const models::WorkloadConfig& w,
                       const models::StepResult& r, const models::StepParams& p,
                       const models::CostParams& cost) {
  const models::FrameworkConfig& fw = w.framework;
  const models::ComputeParams attention =
      models::attention_kernel_params(p.compute, fw.attention);
  std::printf("Assumptions (analytic model; calibrate with `clustersim validate`)\n");
  std::printf(
      "  - collectives: NCCL's tuner model (tuning.cc latencies), no contention between "
      "dimensions; NVLS efficiency %s\n",
      format_significant(p.collective.nvls_efficiency, 3).c_str());
  std::printf(
      "  - GEMMs at up to %s of peak in a tile at full clock, %s attention up to %s forward / "
      "%s backward; the step's kernel mix holds the clock at %s under the power cap%s, "
      "attention at %s (it draws the cap itself)\n",
      format_percent(p.compute.gemm_max_efficiency).c_str(),
      std::string(models::to_string(fw.attention)).c_str(),
      format_percent(attention.attention_fwd_max_efficiency).c_str(),
      format_percent(attention.attention_bwd_max_efficiency).c_str(),
      format_percent(r.clock).c_str(),
      r.gpus > 1 && p.compute.clock_spread > 0
          ? (" on the slowest of " + std::to_string(r.gpus) + " chips (spread " +
             format_percent(p.compute.clock_spread) + ")")
                .c_str()
          : "",
      format_percent(r.attention_clock).c_str());
  if (models::quantized(w.precision)) {
    // The quantized GEMMs' in-tile ratio and where it comes from (a calibration overlay's where
    // it differs from the default).
    const bool fp4 = w.precision == models::Precision::kFp4;
    const bool mx = !fp4 && fw.fp8_recipe == models::Fp8Recipe::kMxfp8;
    const double ratio = fp4 ? p.compute.fp4_gemm_ratio : p.compute.fp8_gemm_ratio;
    const models::ComputeParams defaults = models::default_compute_params(gpu);
    const bool calibrated = ratio != (fp4 ? defaults.fp4_gemm_ratio : defaults.fp8_gemm_ratio);
    std::printf("  - %s GEMMs at %s of bf16's in-tile rate, each against its own peak (%s)\n",
                fp4 ? "NVFP4" : (mx ? "MXFP8" : "fp8"), format_percent(ratio).c_str(),
                calibrated ? "the calibration's"
                           : std::string(models::quantized_gemm_ratio_source(gpu, w.precision, mx))
                                 .c_str());
  }
  if (!r.stages.empty() && r.stages.front().amax_reduction_s > 0) {
    const double per_micro_batch = r.stages.front().amax_reduction_s;
    const int waits = 2 * models::chunks_per_stage(w);
    std::printf(
        "  - FP8 amax all-reduces (delayed scaling, framework.fp8_amax_reduction: %s): %d a "
        "micro-batch on every stage, %s each, the compute stream waiting for them\n",
        std::string(models::to_string(fw.fp8_amax_reduction)).c_str(), waits,
        format_time(per_micro_batch / waits).c_str());
  }
  if (fw.attention == models::AttentionKernel::kFlash &&
      fw.kernels != models::KernelFusion::kFused && p.compute.flash2_fwd_ratio < 1) {
    std::printf(
        "  - attention: the GPU's native kernels (cuDNN), what PyTorch's SDPA picks here from "
        "torch 2.9 with cuDNN 9.15 or later; before that it runs FlashAttention-2 "
        "(framework.attention: flash2, %s of the rate forward)\n",
        format_percent(p.compute.flash2_fwd_ratio).c_str());
  }
  if (w.dropout > 0 && models::fused_attention(fw.attention)) {
    std::printf(
        "  - attention dropout %s inside the flash kernels: %s SM cycles a score forward, %s "
        "backward (measured on an H100, device call 36)\n",
        format_significant(w.dropout, 2).c_str(),
        format_significant(attention.attention_fwd_dropout_cycles, 2).c_str(),
        format_significant(attention.attention_bwd_dropout_cycles, 2).c_str());
  }
  if (fw.kernels == models::KernelFusion::kFused) {
    std::printf(
        "  - cross-entropy: %s bytes a logit forward and %s backward beyond reading the logits "
        "(framework.loss_kernel: %s)\n",
        format_significant(models::loss_forward_bytes_per_logit(fw.loss_kernel), 2).c_str(),
        format_significant(models::loss_backward_bytes_per_logit(fw.loss_kernel), 2).c_str(),
        std::string(models::to_string(fw.loss_kernel)).c_str());
  }
  std::printf(
      "  - TP communication %s; DP %s (buckets of %s parameters); gradients in %s-byte "
      "floats\n",
      fw.tp_comm_overlap && !fw.tp_overlap_input_gradients
          ? "overlapped with the GEMMs but for the backward's input-gradient reductions, exposed "
            "(PyTorch's async TP fuses a reduce-scatter with one matmul only)"
      : fw.tp_comm_overlap  ? "overlapped with the GEMMs"
      : fw.tp_wgrad_overlap ? "between the GEMMs, the backward's input-gradient reductions "
                              "beside the weight-gradient GEMMs"
                            : "between the GEMMs",
      fw.grad_reduce_overlap ? "overlaps the backward" : "after the backward",
      format_count(models::grad_bucket_params(w, p)).c_str(),
      format_significant(models::gradient_bytes(w), 2).c_str());
  std::string caps;
  for (models::ParallelDim dim : models::kParallelDims) {
    if (const int ctas = models::nccl_max_ctas(fw, dim); ctas > 0) {
      caps += (caps.empty() ? "" : ", ") + std::string(models::to_string(dim)) + " " +
              std::to_string(ctas);
    }
  }
  if (!caps.empty()) {
    std::printf(
        "  - NCCL blocks per group (framework.nccl_max_ctas): %s; a capped group's hidden time "
        "costs compute its blocks' share of the SMs and its bytes' cost at full rate\n",
        caps.c_str());
  }
  std::printf(
      "  - memory: %s; CUDA context %s, NCCL %s per communicator, allocator cache %s x one "
      "layer's activations\n",
      fw.weights_in_fp32   ? "fp32 parameters cast per use (4 + 8 B/parameter before ZeRO)"
      : models::updates_16bit_parameters(w)
          ? "16-bit weights updated in place, 16-bit Adam moments (2 + 4 B/parameter before ZeRO)"
          : "16-bit weights with fp32 masters (2 + 12 B/parameter before ZeRO)",
      format_size(p.memory.context_bytes).c_str(),
      format_size(p.memory.nccl_bytes_per_communicator).c_str(),
      format_significant(p.memory.allocator_layer_slack, 2).c_str());
  std::printf("  - checkpoint %s B/parameter; restart %s unless the scenario says\n",
              format_significant(cost.checkpoint_bytes_per_param, 3).c_str(),
              format_time(cost.default_restart_s).c_str());
}

nlohmann::json plan_json(const models::Scenario& s, const models::StepResult& r,
                         const models::RunCost& c, const models::StepParams& params,
                         const char* engine = "analytic") {
  const auto& b = r.breakdown;
  const auto& m = r.memory;
  nlohmann::json comms = nlohmann::json::array();
  for (const auto& t : r.comms) {
    comms.push_back({{"dim", models::to_string(t.call.dim)},
                     {"op", models::to_string(t.call.op)},
                     {"what", t.call.what},
                     {"size_bytes", t.call.size_bytes},
                     {"group_size", t.call.group_size},
                     {"calls_per_step", t.calls_per_step},
                     {"algorithm", models::to_string(t.estimate.algorithm)},
                     {"protocol", models::to_string(t.estimate.protocol)},
                     {"time_s", t.estimate.time_s},
                     {"busbw_GBps", t.estimate.busbw_Bps / 1e9},
                     {"total_s", t.total_s()}});
  }
  auto dim = [](const models::DimComm& d) {
    return nlohmann::json{
        {"total_s", d.total_s}, {"exposed_s", d.exposed_s}, {"bytes_per_step", d.bytes_per_step}};
  };
  nlohmann::json advice =
      models::memory_advice(s.workload, m, r.memory_capacity_bytes, params.memory);
  return {
      {"scenario", s.name},
      {"note", s.note.empty() ? nlohmann::json() : nlohmann::json(s.note)},
      {"engine", engine},
      {"gpus", r.gpus},
      {"micro_batches", r.micro_batches},
      {"step_time_s", r.step_time_s},
      {"tokens_per_step", r.tokens_per_step},
      {"tokens_per_s", r.tokens_per_s},
      {"model_tflops_per_gpu", r.model_tflops_per_gpu},
      {"hardware_tflops_per_gpu", r.hardware_tflops_per_gpu},
      {"mfu", r.mfu},
      {"mfu_bf16_peak", r.mfu_bf16},
      {"memory_per_gpu_bytes", m.total()},
      {"memory_capacity_bytes", r.memory_capacity_bytes},
      {"fits", r.fits},
      {"allocator_at_capacity", r.allocator_at_capacity()},
      {"memory_bytes",
       {{"weights", m.weights_bytes},
        {"gradients", m.gradients_bytes},
        {"optimizer", m.optimizer_bytes},
        {"activations", m.activations_bytes},
        {"logits", m.logits_bytes},
        {"zero3_buffers", m.gathered_weights_bytes},
        {"framework", m.outside_allocator_bytes},
        {"allocator_cache", m.allocator_cache_bytes()}}},
      {"memory_advice", advice},
      {"forward_s", r.forward_s},
      {"backward_s", r.backward_s},
      {"breakdown_s", breakdown_json(b)},
      {"comm",
       {{"tp", dim(b.tp)}, {"dp", dim(b.dp)}, {"pp", dim(b.pp)}, {"cp", dim(b.cp)}, {"ep", dim(b.ep)}}},
      {"collectives", comms},
      {"cost",
       {{"usd_per_step", or_null(c.priced, c.usd_per_step)},
        {"usd_per_million_tokens", or_null(c.priced, c.usd_per_million_tokens)},
        {"run_usd", or_null(c.priced && c.has_run, c.run_usd)},
        {"run_usd_no_failures", or_null(c.priced && c.has_run, c.run_usd_no_failures)},
        {"gpu_hours_per_step", c.gpu_hours_per_step}}},
      {"run",
       {{"steps", or_null(c.has_run, c.steps)},
        {"run_time_s", or_null(c.has_run, c.run_time_s)},
        {"effective_run_time_s", or_null(c.has_run, c.effective_run_time_s)},
        {"gpu_hours", or_null(c.has_run, c.gpu_hours)},
        {"goodput", c.goodput},
        {"cluster_mtbf_s", or_null(c.has_reliability, c.cluster_mtbf_s)},
        {"checkpoint_bytes", or_null(c.has_reliability, c.checkpoint_bytes)},
        {"checkpoint_write_s", or_null(c.has_reliability, c.checkpoint_write_s)},
        {"checkpoint_interval_s", or_null(c.has_reliability, c.checkpoint_interval_s)},
        {"restart_s", or_null(c.has_reliability, c.restart_s)}}},
  };
}

int run_plan(const PlanArgs& a) {
  auto overrides = parse_set_options(a.sets);
  if (!overrides) return fail_bad_input("plan", overrides.message());
  auto scenario = load_scenario_or_default(a.scenario, *overrides);
  if (!scenario) return fail_bad_input("plan", scenario.message());
  auto step_params = step_params_for(*scenario, a.calibration);
  if (!step_params) return fail_bad_input("plan", step_params.message());
  const models::StepParams& params = *step_params;
  auto step = models::predict_step(*scenario, params);
  if (!step) return fail_bad_input("plan", scenario->path + ": " + step.message());
  // --engine des (or auto): the same report from the discrete-event simulator.
  bool des = a.engine != "analytic";
  if (!a.trace.empty() && !des) return fail_bad_input("plan", "--trace needs --engine des");
  // A trace is the simulator's: with --trace, auto does not fall back to the analytic model.
  const bool must_simulate = a.engine == "des" || !a.trace.empty();
  std::string engine_note;  // why auto fell back to the analytic model
  double analytic_step_s = step->step_time_s;
  const bool interfered = scenario->interference.any();
  InterferenceEffect interference{interference_what(scenario->interference)};
  // A simulation past kQuietForS seconds says on stderr what it has simulated so far.
  constexpr double kQuietForS = 3;
  auto progress = [](const std::string& what, double elapsed_s) {
    if (elapsed_s >= kQuietForS) {
      std::fprintf(stderr, "clustersim plan: %s (%.0f s)\n", what.c_str(), elapsed_s);
    }
  };
  if (des) {
    sim::StepSimOptions options;
    options.trace = !a.trace.empty();
    options.progress = progress;
    auto simulated = sim::simulate_step(*scenario, params, options);
    if (!simulated && must_simulate) {
      // Messages from the scenario's own keys already start with its path.
      const std::string& m = simulated.message();
      const std::string why = m.rfind(scenario->path, 0) == 0 ? m : scenario->path + ": " + m;
      if (a.engine == "des") return fail_bad_input("plan", why);
      return fail_bad_input("plan",
                            "--trace " + a.trace + ": the step cannot be simulated: " + why);
    }
    if (!simulated) {
      des = false;
      engine_note = "not simulated (" + simulated.message() + "); analytic model used";
      std::fprintf(stderr, "clustersim plan: %s\n", engine_note.c_str());
    } else {
      if (!a.trace.empty()) {
        std::ofstream out(a.trace);
        out << sim::chrome_trace_json(*simulated, scenario->name);
        if (!out) return fail_bad_input("plan", "--trace " + a.trace + ": cannot write the file");
      }
      *step = simulated->step;
    }
  }
  // On an ECMP fabric the simulated step is one draw of the switches' hash: two more say how
  // much of it is that draw's luck.
  std::vector<double> other_hash_steps_s;
  if (des) {
    sim::StepSimOptions options;
    options.progress = progress;
    other_hash_steps_s =
        sim::other_hash_draw_steps_s(*scenario, params, sim::kOtherHashDraws, options);
  }
  if (des && interfered) {
    // The same step again with the interference silent: the baseline of its slowdown.
    sim::StepSimOptions options;
    options.interference_traffic = false;
    options.progress = progress;
    auto alone = sim::simulate_step(*scenario, params, options);
    if (!alone) {
      return fail_bad_input("plan", scenario->path + ": without interference: " + alone.message());
    }
    interference.alone = alone->step;
    interference.step_s_with = step->step_time_s;
  }
  const models::CostParams cost_params;
  const models::RunCost cost = models::estimate_run_cost(*scenario, *step, cost_params);
  // Owning vs renting: only with a cost: section (the default scenario has one).
  std::optional<Ownership> ownership;
  if (scenario->cost.present) ownership = estimate_ownership(*scenario, *step, cost);

  const std::string calibration_path =
      calibration_path_for(a.calibration, scenario->calibration_path);
  if (a.json) {
    nlohmann::json j = plan_json(*scenario, *step, cost, params, des ? "des" : "analytic");
    j["calibration"] = calibration_path.empty() ? nlohmann::json() : nlohmann::json(calibration_path);
    if (des) j["analytic_step_time_s"] = analytic_step_s;
    if (!other_hash_steps_s.empty()) j["other_ecmp_hash_step_time_s"] = other_hash_steps_s;
    if (!engine_note.empty()) j["engine_note"] = engine_note;
    j["corpus_accuracy"] = corpus_accuracy_json(*scenario, des);
    if (ownership) j["ownership"] = ownership_json(*ownership);
    if (interfered && des) j["interference"] = interference_json(interference);
    if (interfered && !des) {
      j["interference"] = {
          {"what", interference.what}, {"simulated", false}, {"note", kInterferenceIgnored}};
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  print_header(*scenario, *step,
               des ? "discrete-event simulation (SimGrid: contention, overlap, pipeline)"
                   : "analytic model",
               calibration_path);
  print_step(*step, scenario->workload.precision);
  if (des) {
    std::printf("  (analytic model: step %s; simulated / analytic %s)\n\n",
                format_time(analytic_step_s).c_str(),
                format_significant(step->step_time_s / analytic_step_s, 4).c_str());
  }
  if (!other_hash_steps_s.empty()) {
    const std::string others = other_draws_text(other_hash_steps_s, step->step_time_s);
    std::printf("%s\n",
                wrap_text("ECMP: the step above is one draw of the switches' hash; " +
                              std::string(other_hash_steps_s.size() == 1 ? "another draw gives "
                                                                        : "other draws give ") +
                              others + ". `clustersim compare` prints what more queue "
                          "pairs or adaptive routing give (docs/collectives.md: the simulator's "
                          "collisions cost more than measured ones)",
                          kNoteColumns, "  ", "    ")
                    .c_str());
  }
  std::printf("%s\n", wrap_text("Accuracy: " + kind_accuracy_line(*scenario, des) +
                                    (calibration_path.empty() ? "" : " (uncalibrated)"),
                                kNoteColumns, "  ", "    ")
                          .c_str());
  if (interfered && des) print_interference(interference);
  if (interfered && !des)
    std::printf("Interference: %s: %s\n\n", interference.what.c_str(), kInterferenceIgnored);
  if (!a.trace.empty())
    std::printf("Timeline of the step (Chrome trace, Perfetto): %s\n\n", a.trace.c_str());
  print_memory(*scenario, *step, params);
  print_breakdown(*step);
  const auto advice = models::step_advice(*scenario, *step);
  for (const auto& line : advice) std::printf("  ! %s\n", line.c_str());
  if (!advice.empty()) std::printf("\n");
  print_comms(*step);
  print_cost(*scenario, cost);
  if (ownership) std::printf("%s", ownership_text(*ownership).c_str());
  print_assumptions(scenario->cluster.node.gpu, scenario->workload, *step, params, cost_params);
  return kExitOk;
}

const bool kRegistered = register_command(
    {"plan", "predict a training step and the whole run: time, MFU, memory, comm, cost", 10,
     [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<PlanArgs>();
       sub.add_option("scenario", a->scenario,
                      "scenario YAML (default: the embedded 4-node, 32 x H100 Llama 2 70B job)");
       sub.add_flag("--json", a->json, "one JSON object (its keys: docs/scenario-format.md)");
       sub.add_option("--set", a->sets, "KEY=VALUE: set a dotted scenario key before loading (as sweep --set, one value; repeatable), e.g. cluster.nodes=16");
       sub.add_option("--calibration", a->calibration,
                      "calibration overlay (clustersim calibrate); default: the scenario's");
       sub.add_option("--engine", a->engine,
                      "auto (default: des, or analytic where the fabric cannot be simulated), des "
                      "(the SimGrid simulation: contention, overlap) or analytic (the formulas)")
           .check_member({"auto", "des", "analytic"});
       sub.add_option("--trace", a->trace,
                      "write the simulated step's timeline as Chrome trace JSON to FILE (needs "
                      "the simulation: exit 2 where it cannot run)");
       return [a] { return run_plan(*a); };
     },
     {"clustersim plan",
      "clustersim plan scenarios/llama3-70b-64xh100-ndr-rail.yaml --engine analytic",
      "clustersim plan --set cluster.nodes=8 --json"}});

}  // namespace
}  // namespace clustersim::tools
