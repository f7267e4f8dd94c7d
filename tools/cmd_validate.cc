// `clustersim validate` (and the standalone `clustersim-probe`, which compiles this same file):
// runs the real NCCL collectives, GEMM, copy and attention kernels on this node's GPUs — or on
// every node under mpirun — and writes a measurement file (docs/measurement-schema.md),
// checkpointed after every row so that an interrupted run leaves a valid "<out>.partial".
#include <cstdio>
#include <iostream>
#include <sstream>

#include "models/units.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/text_table.h"
#include "validate/bootstrap.h"
#include "validate/fake_backend.h"
#include "validate/gpu_backend.h"
#include "validate/host_info.h"
#include "validate/measurement_writer.h"
#include "validate/validate_runner.h"

namespace clustersim::tools {
namespace {

using validate::CollectiveOp;

struct ValidateArgs {
  std::string out = "measurements.json";
  bool json = false;
  bool quiet = false;
  std::string backend = "cuda";
  std::string fake_spec;
  std::string ops = "all";
  std::string min_bytes = "8", max_bytes = "8G";
  std::size_t step_factor = 2;
  int warmup = 2, iters = 20;
  bool no_check = false;
  std::string timeout = "120s";
  int gpus = 0;  // single process: first N visible GPUs; 0 = all
  std::string skip;
  std::string gemm_precisions = "bf16,fp16,tf32,fp8";
  std::string gemm_shapes = "4096x4096x4096,8192x8192x8192";
  std::string gemm_time = "1s", burn_time = "30s";
  std::string attention_seq = "4K,8K,16K,32K,64K,128K";
  int attention_heads = 16, attention_head_dim = 128, attention_batch = 1;
  std::string attention_time = "0.5s";
  bool attention_no_backward = false;
};

int bad(const std::string& message) {
  std::fprintf(stderr, "clustersim validate: %s\n", message.c_str());
  return kExitBadInput;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// Turns the command-line strings into ValidateOptions; an error names the flag.
models::Result<validate::ValidateOptions> build_options(const ValidateArgs& a) {
  validate::ValidateOptions o;
  o.command_line = validate::process_command_line();
  if (a.ops != "all") {
    o.ops.clear();
    for (const std::string& name : split_list(a.ops)) {
      CollectiveOp op;
      if (!validate::parse_collective_op(name, &op)) {
        return models::Error{"--ops: unknown collective '" + name +
                             "' (known: all_reduce, all_gather, reduce_scatter, alltoall, "
                             "broadcast, sendrecv)"};
      }
      o.ops.push_back(op);
    }
  }
  auto size = [](const std::string& flag, const std::string& text) -> models::Result<std::uint64_t> {
    models::Result<double> b = models::parse_size_bytes(text, true);
    if (!b.ok()) return models::Error{flag + ": " + b.message()};
    return static_cast<std::uint64_t>(*b);
  };
  auto seconds = [](const std::string& flag, const std::string& text) -> models::Result<double> {
    models::Result<double> t = models::parse_time_s(text);
    if (!t.ok()) return models::Error{flag + ": " + t.message()};
    return *t;
  };
  auto min_b = size("--min-bytes", a.min_bytes);
  if (!min_b.ok()) return models::Error{min_b.message()};
  auto max_b = size("--max-bytes", a.max_bytes);
  if (!max_b.ok()) return models::Error{max_b.message()};
  o.min_bytes = *min_b;
  o.max_bytes = *max_b;
  o.step_factor = a.step_factor;
  if (auto s = validate::size_sweep(o.min_bytes, o.max_bytes, o.step_factor); !s.ok()) {
    return models::Error{"--min-bytes/--max-bytes/--step-factor: " + s.message()};
  }
  if (a.iters < 1) return models::Error{"--iters: must be at least 1"};
  if (a.warmup < 0) return models::Error{"--warmup: must not be negative"};
  o.warmup_iters = a.warmup;
  o.iters = a.iters;
  o.check = !a.no_check;
  auto timeout = seconds("--timeout", a.timeout);
  if (!timeout.ok()) return models::Error{timeout.message()};
  o.collective_timeout_s = *timeout;

  for (const std::string& section : split_list(a.skip)) {
    if (section == "collectives") o.collectives = false;
    else if (section == "gemm") o.gemm = false;
    else if (section == "bandwidth") o.bandwidth = false;
    else if (section == "attention") o.attention = false;
    else
      return models::Error{"--skip: unknown section '" + section +
                           "' (known: collectives, bandwidth, gemm, attention)"};
  }

  o.gemm_request.precisions.clear();
  for (const std::string& p : split_list(a.gemm_precisions)) {
    if (p != "bf16" && p != "fp16" && p != "tf32" && p != "fp8") {
      return models::Error{"--gemm-precisions: unknown precision '" + p +
                           "' (known: bf16, fp16, tf32, fp8)"};
    }
    o.gemm_request.precisions.push_back(p);
  }
  o.gemm_request.shapes.clear();
  for (const std::string& s : split_list(a.gemm_shapes)) {
    std::array<int, 3> mnk{};
    char x1 = 0, x2 = 0;
    std::istringstream in(s);
    if (!(in >> mnk[0] >> x1 >> mnk[1] >> x2 >> mnk[2]) || x1 != 'x' || x2 != 'x' ||
        mnk[0] < 1 || mnk[1] < 1 || mnk[2] < 1 || !in.eof()) {
      return models::Error{"--gemm-shapes: '" + s + "' is not MxNxK (e.g. 8192x8192x8192)"};
    }
    o.gemm_request.shapes.push_back(mnk);
  }
  if (o.gemm_request.shapes.empty()) return models::Error{"--gemm-shapes: no shape given"};
  auto gemm_t = seconds("--gemm-time", a.gemm_time);
  if (!gemm_t.ok()) return models::Error{gemm_t.message()};
  o.gemm_request.seconds_per_shape = *gemm_t;
  auto burn_t = seconds("--burn", a.burn_time);
  if (!burn_t.ok()) return models::Error{burn_t.message()};
  o.gemm_request.burn_seconds = *burn_t;

  o.attention_request.seq_lens.clear();
  for (const std::string& s : split_list(a.attention_seq)) {
    // "4K" is 4096 tokens, as nccl-tests' sizes: the binary shorthand of parse_size_bytes.
    models::Result<double> n = models::parse_size_bytes(s, true);
    if (!n.ok() || *n < 128) {
      return models::Error{"--attention-seq: '" + s + "' is not a sequence length >= 128" +
                           (n.ok() ? "" : ": " + n.message())};
    }
    o.attention_request.seq_lens.push_back(static_cast<std::int64_t>(*n));
  }
  if (a.attention_head_dim != 64 && a.attention_head_dim != 128) {
    return models::Error{"--attention-head-dim: 64 or 128"};
  }
  if (a.attention_heads < 1 || a.attention_batch < 1) {
    return models::Error{"--attention-heads/--attention-batch: must be at least 1"};
  }
  o.attention_request.heads = a.attention_heads;
  o.attention_request.head_dim = a.attention_head_dim;
  o.attention_request.batch = a.attention_batch;
  o.attention_request.backward = !a.attention_no_backward;
  auto att_t = seconds("--attention-time", a.attention_time);
  if (!att_t.ok()) return models::Error{att_t.message()};
  o.attention_request.seconds_per_case = *att_t;
  return o;
}

std::string fmt(double v, int digits = 4) { return models::format_significant(v, digits); }

// The human summary of a finished run: sweep rows, rates, errors.
void print_summary(const validate::Measurement& m) {
  if (!m.collectives.empty()) {
    TextTable t({"op", "ranks", "size", "count", "time(us)", "algbw", "busbw", "#wrong",
                 "time(us)", "algbw", "busbw", "#wrong"},
                {TextTable::Align::kLeft});
    for (const validate::CollectiveRow& r : m.collectives) {
      auto wrong = [](std::int64_t w) { return w < 0 ? std::string("N/A") : std::to_string(w); };
      t.add_row({r.op, std::to_string(r.ranks), std::to_string(r.size_bytes),
                 std::to_string(r.count), fmt(r.out_of_place.time_us), fmt(r.out_of_place.algbw_GBps),
                 fmt(r.out_of_place.busbw_GBps), wrong(r.out_of_place.wrong),
                 fmt(r.in_place.time_us), fmt(r.in_place.algbw_GBps), fmt(r.in_place.busbw_GBps),
                 wrong(r.in_place.wrong)});
    }
    std::printf("Collectives (out-of-place, then in-place; GB/s as nccl-tests):\n%s\n",
                t.render(2).c_str());
  }
  if (!m.gemm.empty()) {
    TextTable t({"gpu", "precision", "m x n x k", "kind", "TFLOP/s", "min TFLOP/s"},
                {TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kLeft,
                 TextTable::Align::kLeft});
    for (const validate::GemmRate& g : m.gemm) {
      t.add_row({std::to_string(g.rank), g.precision,
                 std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k),
                 g.sustained ? "burn " + models::format_time(g.seconds) : "median",
                 fmt(g.tflops), fmt(g.tflops_min)});
    }
    std::printf("GEMM:\n%s\n", t.render(2).c_str());
  }
  if (!m.bandwidth.empty()) {
    TextTable t({"gpu", "kind", "peer", "bytes", "GB/s", "min..max", "batches", "SM/mem MHz", "reasons"},
                {TextTable::Align::kRight, TextTable::Align::kLeft});
    for (const validate::BandwidthRate& b : m.bandwidth) {
      std::string reasons;
      for (const std::string& r : b.throttle_reasons) reasons += (reasons.empty() ? "" : ",") + r;
      t.add_row({std::to_string(b.rank), b.kind, b.peer < 0 ? "-" : std::to_string(b.peer),
                 models::format_size(static_cast<double>(b.bytes)), fmt(b.GBps),
                 b.batches > 0 ? fmt(b.GBps_min) + ".." + fmt(b.GBps_max) : "-",
                 b.batches > 0 ? std::to_string(b.batches) + "x" + std::to_string(b.copies_per_batch) : "-",
                 b.sm_clock_min_MHz > 0 ? std::to_string(b.sm_clock_min_MHz) + "/" + std::to_string(b.memory_clock_min_MHz) : "-",
                 reasons.empty() ? "-" : reasons});
    }
    std::printf("Copy bandwidth:\n%s\n", t.render(2).c_str());
  }
  if (!m.attention.empty()) {
    TextTable t({"gpu", "impl", "pass", "mask", "seq", "time(ms)", "TFLOP/s", "rel.err"},
                {TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kLeft,
                 TextTable::Align::kLeft});
    for (const validate::AttentionRate& a : m.attention) {
      t.add_row({std::to_string(a.rank), a.implementation, a.direction,
                 a.causal ? "causal" : "full", std::to_string(a.seq_len), fmt(a.time_ms),
                 fmt(a.tflops), a.max_rel_error < 0 ? "-" : fmt(a.max_rel_error, 2)});
    }
    std::printf("Attention (bf16):\n%s\n", t.render(2).c_str());
  }
  if (!m.transports.empty()) {
    TextTable t({"rank", "peer", "transport", "detail", "channels"});
    for (const validate::TransportRecord& r : m.transports) {
      t.add_row({std::to_string(r.rank), std::to_string(r.peer), r.transport, r.detail,
                 std::to_string(r.channels)});
    }
    std::printf("NCCL transports:\n%s\n", t.render(2).c_str());
  }
  for (const validate::SectionError& e : m.errors) {
    std::printf("error: %s: %s\n", e.section.c_str(), e.message.c_str());
  }
}

int run_validate(const ValidateArgs& a) {
  models::Result<validate::ValidateOptions> options = build_options(a);
  if (!options.ok()) return bad(options.message());

  // 1. Who we are: one process, or one MPI rank per GPU.
  std::unique_ptr<validate::Bootstrap> boot;
  if (validate::launched_by_mpi()) {
    auto mpi = validate::make_mpi_bootstrap(nullptr, nullptr);
    if (!mpi.ok()) return bad(mpi.message());
    boot = std::move(*mpi);
  } else {
    boot = std::make_unique<validate::SingleProcessBootstrap>();
  }

  // 2. The GPUs this process drives.
  std::unique_ptr<validate::GpuBackend> backend;
  if (a.backend == "fake") {
    auto fake = validate::parse_fake_backend_options(a.fake_spec);
    if (!fake.ok()) return bad(fake.message());
    backend = std::make_unique<validate::FakeBackend>(*fake);
  } else if (a.backend == "cuda") {
    std::vector<int> devices;
    if (boot->size() > 1) {
      devices.push_back(boot->local_rank());
    } else {
      for (int i = 0; i < a.gpus; ++i) devices.push_back(i);
    }
    auto cuda = validate::make_cuda_backend(devices);
    if (!cuda.ok()) return bad(cuda.message());
    backend = std::move(*cuda);
  } else {
    return bad("--backend: '" + a.backend + "' is not cuda or fake");
  }

  // 3. Run, checkpointing to <out>.partial; progress on stderr.
  validate::MeasurementWriter writer(a.out);
  validate::ProgressFn progress = [&](const std::string& line) {
    if (!a.quiet) std::fprintf(stderr, "[validate] %s\n", line.c_str());
  };
  if (boot->rank() == 0 && !a.quiet) {
    std::fprintf(stderr, "[validate] writing %s (partial: %s)\n", writer.final_path().c_str(),
                 writer.partial_path().c_str());
  }
  models::Result<validate::Measurement> m =
      validate::run_validation(*options, *backend, *boot, boot->rank() == 0 ? &writer : nullptr,
                               progress);
  if (!m.ok()) {
    std::fprintf(stderr, "clustersim validate: %s\n", m.message().c_str());
    return kExitCheckFailed;
  }
  if (boot->rank() != 0) return kExitOk;

  if (a.json) {
    std::cout << validate::to_json_text(*m);
  } else {
    print_summary(*m);
    std::printf("wrote %s (%s)\n", a.out.c_str(), models::format_time(m->run.wall_time_s).c_str());
  }
  bool failed = !m->errors.empty();
  for (const validate::CollectiveRow& r : m->collectives) {
    failed = failed || r.out_of_place.wrong > 0 || r.in_place.wrong > 0;
  }
  return failed ? kExitCheckFailed : kExitOk;
}

const bool kRegistered = register_command(
    {"validate",
     "run real NCCL collectives, GEMM, copy and attention kernels on this node's GPUs (or every "
     "node under mpirun) and write a measurement file",
     60, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<ValidateArgs>();
       sub.add_option("-o,--out", a->out, "measurement file to write (default measurements.json)");
       sub.add_flag("--json", a->json, "print the measurement file's JSON to stdout at the end");
       sub.add_flag("-q,--quiet", a->quiet, "no progress lines on stderr");
       sub.add_option("--backend", a->backend, "cuda (default) or fake (no GPU; for tests)");
       sub.add_option("--fake", a->fake_spec,
                      "fake backend settings: gpus=2,link_GBps=100,hang_op=all_reduce,"
                      "hang_size=BYTES,sleep=SECONDS,wrong=N");
       sub.add_option("--ops", a->ops, "collectives, comma-separated, or all (default)");
       sub.add_option("-b,--min-bytes", a->min_bytes, "smallest size (default 8)");
       sub.add_option("-e,--max-bytes", a->max_bytes, "largest size (default 8G = 8 GiB)");
       sub.add_option("-f,--step-factor", a->step_factor, "size multiplier (default 2)");
       sub.add_option("-w,--warmup", a->warmup, "untimed launches per size (default 2)");
       sub.add_option("-n,--iters", a->iters, "timed launches per size (default 20)");
       sub.add_flag("--no-check", a->no_check, "skip the #wrong correctness check");
       sub.add_option("--timeout", a->timeout,
                      "watchdog: a collective not done after this is aborted (default 120s)");
       sub.add_option("--gpus", a->gpus, "single process: drive the first N GPUs (default all)");
       sub.add_option("--skip", a->skip, "sections to skip: collectives,bandwidth,gemm,attention");
       sub.add_option("--gemm-precisions", a->gemm_precisions, "default bf16,fp16,tf32,fp8");
       sub.add_option("--gemm-shapes", a->gemm_shapes, "MxNxK list (default 4096^3, 8192^3)");
       sub.add_option("--gemm-time", a->gemm_time, "time per short GEMM measurement (default 1s)");
       sub.add_option("--burn", a->burn_time, "sustained bf16 GEMM burn (default 30s; 0s skips)");
       sub.add_option("--attention-seq", a->attention_seq, "sequence lengths (default 4K..128K)");
       sub.add_option("--attention-heads", a->attention_heads, "heads (default 16)");
       sub.add_option("--attention-head-dim", a->attention_head_dim, "64 or 128 (default)");
       sub.add_option("--attention-batch", a->attention_batch, "batch (default 1)");
       sub.add_option("--attention-time", a->attention_time, "time per case (default 0.5s)");
       sub.add_flag("--attention-no-backward", a->attention_no_backward, "forward pass only");
       return [a]() { return run_validate(*a); };
     },
     {"clustersim validate -o h200.json",
      "mpirun -np 16 clustersim validate -o cluster.json"}});

}  // namespace
}  // namespace clustersim::tools
