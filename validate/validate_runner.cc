#include "validate/validate_runner.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "models/units.h"
#include "validate/host_info.h"
#include "validate/identity_check.h"

namespace clustersim::validate {
namespace {

// State shared by the steps: who we are, the measurement being built and how to save it.
class Run {
 public:
  Run(const ValidateOptions& o, GpuBackend& b, Bootstrap& boot, MeasurementWriter* w,
      const ProgressFn& p)
      : options_(o), backend_(b), boot_(boot), writer_(w), progress_(p) {}

  models::Result<Measurement> execute();

 private:
  bool root() const { return boot_.rank() == 0; }
  void say(const std::string& line) {
    if (root() && progress_) progress_(line);
  }
  void checkpoint() {
    if (!root() || writer_ == nullptr) return;
    models::Status s = writer_->checkpoint(m_);
    if (!s.ok() && !checkpoint_failed_) {
      checkpoint_failed_ = true;
      say("warning: cannot write the partial file: " + s.message());
    }
  }
  // Gathers every process's part to rank 0 and merges it into m_ (rank 0's own part too).
  void merge_parts(const Measurement& part) {
    std::vector<std::string> texts = boot_.gather(to_json_text(part), 0);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      models::Result<Measurement> p = parse_measurement(texts[i], "rank " + std::to_string(i));
      if (p.ok()) {
        append_rank_parts(m_, *p);
      } else {
        m_.errors.push_back({"gather", p.message()});
      }
    }
  }
  // Marks a section done (all processes) and saves.
  void section_done(const std::string& name) {
    if (root()) m_.sections_done.push_back(name);
    checkpoint();
  }
  // Rewrites local-index ranks of a part to global ranks.
  template <class T> void globalize(std::vector<T>& v) const {
    for (T& x : v) x.rank += first_rank_;
  }

  void step_identity();
  void step_collectives();
  void step_bandwidth();
  void step_gemm();
  void step_attention();
  // true: every process succeeded; otherwise the errors are recorded on rank 0.
  bool all_ok(const std::string& section, const std::string& local_error);

  const ValidateOptions& options_;
  GpuBackend& backend_;
  Bootstrap& boot_;
  MeasurementWriter* writer_;
  const ProgressFn& progress_;
  Measurement m_;
  std::vector<GpuInfo> local_gpus_;
  int first_rank_ = 0;
  int world_size_ = 0;
  bool checkpoint_failed_ = false;
};

bool Run::all_ok(const std::string& section, const std::string& local_error) {
  std::vector<std::string> errors = boot_.gather(local_error, 0);
  std::string any;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (errors[i].empty()) continue;
    std::string msg = boot_.size() > 1 ? "process " + std::to_string(i) + ": " + errors[i]
                                       : errors[i];
    m_.errors.push_back({section, msg});
    say("error: " + section + ": " + msg);
    any = "1";
  }
  return boot_.broadcast(any, 0).empty();
}

void Run::step_identity() {
  // Ranks: each process drives local_gpu_count() GPUs; ranks are numbered process by process.
  const int local = backend_.local_gpu_count();
  std::vector<std::string> counts = boot_.gather(std::to_string(local), 0);
  std::string layout;
  if (root()) {
    int first = 0;
    for (const std::string& c : counts) {
      layout += std::to_string(first) + " ";
      first += std::stoi(c);
    }
    layout += std::to_string(first);  // the world size last
  }
  std::istringstream in(boot_.broadcast(layout, 0));
  std::vector<int> firsts;
  int v = 0;
  while (in >> v) firsts.push_back(v);
  world_size_ = firsts.back();
  first_rank_ = firsts[static_cast<std::size_t>(boot_.rank())];

  Measurement part;
  HostInfo host = read_host_info();
  for (int i = 0; i < local; ++i) host.ranks.push_back(first_rank_ + i);
  part.hosts.push_back(host);
  local_gpus_ = backend_.identify();
  for (GpuInfo& g : local_gpus_) {
    g.rank = first_rank_ + g.cuda_index;
    g.host = host.hostname;
    match_catalog(g);
  }
  part.gpus = local_gpus_;
  if (root()) m_.versions = backend_.versions();
  merge_parts(part);
  if (root()) {
    m_.run.world_size = world_size_;
    for (const GpuInfo& g : m_.gpus) {
      say("gpu " + std::to_string(g.rank) + " on " + g.host + ": " + g.name +
          (g.catalog_id.empty() ? "" : " (" + g.catalog_id + ")"));
    }
  }
  section_done("identity");
}

void Run::step_collectives() {
  models::Result<std::vector<std::size_t>> sizes =
      size_sweep(options_.min_bytes, options_.max_bytes, options_.step_factor);
  CS_ASSERT(sizes.ok(), "options were checked by the caller");
  std::uint64_t max_buffer = 0;
  for (CollectiveOp op : options_.ops) {
    for (std::size_t s : *sizes) {
      CollectiveShape shape = collective_shape(op, s, 4, world_size_);
      max_buffer = std::max<std::uint64_t>(max_buffer, std::max(shape.send_bytes, shape.recv_bytes));
    }
  }
  std::string id;
  std::string error;
  if (root()) {
    models::Result<std::string> made = backend_.new_communicator_id();
    if (made.ok()) {
      id = *made;
    } else {
      error = made.message();
    }
  }
  if (!all_ok("collectives", error)) return section_done("collectives (failed)");
  id = boot_.broadcast(id, 0);
  models::Status init = backend_.init_communicator(id, world_size_, first_rank_, max_buffer);
  if (!all_ok("collectives", init.ok() ? "" : init.message())) {
    return section_done("collectives (failed)");
  }
  say("NCCL communicator: " + std::to_string(world_size_) + " ranks");

  bool stop = false;
  for (CollectiveOp op : options_.ops) {
    for (std::size_t s : *sizes) {
      const CollectiveShape shape = collective_shape(op, s, 4, world_size_);
      if (shape.count == 0) continue;  // too small to split over the ranks (nccl-tests too)
      CollectiveRow row;
      row.op = std::string(to_string(op));
      row.ranks = world_size_;
      row.size_bytes = shape.size_bytes;
      row.count = shape.count;
      row.type = "float";
      const bool reduces = op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter;
      row.redop = reduces ? "sum" : "none";
      row.root = op == CollectiveOp::kBroadcast ? 0 : -1;
      for (bool in_place : {false, true}) {
        CollectiveRequest req;
        req.op = op;
        req.shape = shape;
        req.in_place = in_place;
        req.root = 0;
        req.warmup_iters = options_.warmup_iters;
        req.iters = options_.iters;
        // As nccl-tests: in-place alltoall and sendrecv send from the buffer they receive
        // into, so their result is not defined and is not checked (nccl-tests prints N/A).
        const bool undefined_in_place =
            in_place && (op == CollectiveOp::kAllToAll || op == CollectiveOp::kSendRecv);
        req.check = options_.check && !undefined_in_place;
        req.timeout_s = options_.collective_timeout_s;
        req.label = row.op + " " + models::format_size(static_cast<double>(shape.size_bytes)) +
                    (in_place ? " in-place" : " out-of-place");
        models::Result<CollectiveResult> r = backend_.run_collective(req);
        std::ostringstream mine;
        mine.precision(17);
        if (r.ok()) mine << r->time_s << " " << r->wrong;
        const std::vector<std::string> results = boot_.gather(r.ok() ? mine.str() : "", 0);
        if (!all_ok("collectives", r.ok() ? "" : r.message())) {
          stop = true;
          break;
        }
        if (root()) {
          // As nccl-tests: the time averaged over processes, #wrong summed.
          double sum_s = 0;
          std::int64_t wrong = 0;
          bool checked = true;
          for (const std::string& text : results) {
            std::istringstream in(text);
            double t = 0;
            std::int64_t w = 0;
            in >> t >> w;
            sum_s += t;
            if (w < 0) checked = false;
            wrong += std::max<std::int64_t>(w, 0);
          }
          CollectiveTiming& t = in_place ? row.in_place : row.out_of_place;
          const double time_s = sum_s / static_cast<double>(results.size());
          t.time_us = time_s * 1e6;
          t.algbw_GBps = algbw_GBps(shape.size_bytes, time_s);
          t.busbw_GBps = t.algbw_GBps * bus_bandwidth_factor(op, world_size_);
          t.wrong = checked ? wrong : -1;
        }
      }
      if (stop) break;
      if (root()) {
        m_.collectives.push_back(row);
        std::ostringstream line;
        line << row.op << " " << models::format_size(static_cast<double>(row.size_bytes))
             << ": busbw " << models::format_significant(row.out_of_place.busbw_GBps, 4)
             << " / " << models::format_significant(row.in_place.busbw_GBps, 4)
             << " GB/s, #wrong " << row.out_of_place.wrong << "/" << row.in_place.wrong;
        say(line.str());
      }
      checkpoint();
    }
    if (stop) break;
  }

  Measurement part;
  part.transports = backend_.transports();
  merge_parts(part);
  backend_.close_communicator();
  section_done(stop ? "collectives (stopped)" : "collectives");
}

void Run::step_bandwidth() {
  models::Result<std::vector<BandwidthRate>> r = backend_.run_bandwidth(options_.bandwidth_request);
  Measurement part;
  if (r.ok()) {
    part.bandwidth = *r;
    globalize(part.bandwidth);
    for (BandwidthRate& b : part.bandwidth) {
      if (b.peer >= 0) b.peer += first_rank_;
    }
  }
  merge_parts(part);
  all_ok("bandwidth", r.ok() ? "" : r.message());
  if (root()) {
    for (const BandwidthRate& b : m_.bandwidth) {
      say("gpu " + std::to_string(b.rank) + " " + b.kind +
          (b.peer >= 0 ? " to " + std::to_string(b.peer) : "") + ": " +
          models::format_significant(b.GBps, 4) + " GB/s");
    }
  }
  section_done("bandwidth");
}

void Run::step_gemm() {
  models::Result<std::vector<GemmRate>> r = backend_.run_gemm(options_.gemm_request, local_gpus_);
  Measurement part;
  if (r.ok()) {
    part.gemm = *r;
    globalize(part.gemm);
  }
  // The burn updated health under load: replace this process's GPU entries on rank 0.
  std::vector<std::string> texts = boot_.gather(to_json_text([&] {
    Measurement g;
    g.gpus = local_gpus_;
    return g;
  }()), 0);
  if (root()) {
    for (const std::string& text : texts) {
      models::Result<Measurement> p = parse_measurement(text, "gpus");
      if (!p.ok()) continue;
      for (const GpuInfo& updated : p->gpus) {
        for (GpuInfo& g : m_.gpus) {
          if (g.rank == updated.rank) g = updated;
        }
      }
    }
  }
  merge_parts(part);
  all_ok("gemm", r.ok() ? "" : r.message());
  if (root()) {
    for (const GemmRate& g : m_.gemm) {
      say("gpu " + std::to_string(g.rank) + " gemm " + g.precision + " " + std::to_string(g.m) +
          "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
          (g.sustained ? " sustained " + models::format_time(g.seconds) : "") + ": " +
          models::format_significant(g.tflops, 4) + " TFLOP/s");
    }
  }
  section_done("gemm");
}

void Run::step_attention() {
  models::Result<std::vector<AttentionRate>> r = backend_.run_attention(options_.attention_request);
  Measurement part;
  if (r.ok()) {
    part.attention = *r;
    globalize(part.attention);
  }
  merge_parts(part);
  all_ok("attention", r.ok() ? "" : r.message());
  if (root()) {
    for (const AttentionRate& a : m_.attention) {
      say("gpu " + std::to_string(a.rank) + " attention " + a.direction +
          (a.causal ? " causal" : " full") + " seq " + std::to_string(a.seq_len) + ": " +
          models::format_significant(a.tflops, 4) + " TFLOP/s");
    }
  }
  section_done("attention");
}

models::Result<Measurement> Run::execute() {
  const auto start = std::chrono::steady_clock::now();
  m_.tool = options_.tool;
  m_.tool_version = options_.tool_version;
  m_.run.command_line = options_.command_line;
  m_.run.environment = capture_environment();
  m_.run.mode = boot_.mode();
  m_.run.processes = boot_.size();
  m_.run.backend = backend_.name();
  m_.run.options = describe_options(options_);
  m_.run.started_utc = utc_now_iso8601();
  checkpoint();

  step_identity();                                     // 1
  if (options_.collectives) step_collectives();        // 2, 3
  if (options_.bandwidth) step_bandwidth();            // 4
  if (options_.gemm) step_gemm();                      // 5
  if (options_.attention) step_attention();            // 6

  m_.run.finished_utc = utc_now_iso8601();
  m_.run.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (root() && writer_ != nullptr) {
    models::Status s = writer_->finish(m_);
    if (!s.ok()) return models::Error{s.message()};
  } else if (root()) {
    m_.complete = true;
  }
  return m_;
}

}  // namespace

std::map<std::string, std::string> describe_options(const ValidateOptions& o) {
  std::map<std::string, std::string> d;
  std::string ops;
  for (CollectiveOp op : o.ops) ops += (ops.empty() ? "" : ",") + std::string(to_string(op));
  d["ops"] = o.collectives ? ops : "none";
  d["min_bytes"] = std::to_string(o.min_bytes);
  d["max_bytes"] = std::to_string(o.max_bytes);
  d["step_factor"] = std::to_string(o.step_factor);
  d["warmup_iters"] = std::to_string(o.warmup_iters);
  d["iters"] = std::to_string(o.iters);
  d["check"] = o.check ? "true" : "false";
  d["collective_timeout_s"] = models::format_significant(o.collective_timeout_s);
  d["gemm"] = o.gemm ? "true" : "false";
  std::string precisions;
  for (const std::string& p : o.gemm_request.precisions) precisions += (precisions.empty() ? "" : ",") + p;
  d["gemm_precisions"] = precisions;
  d["gemm_burn_s"] = models::format_significant(o.gemm_request.burn_seconds);
  d["bandwidth"] = o.bandwidth ? "true" : "false";
  d["attention"] = o.attention ? "true" : "false";
  std::string seqs;
  for (std::int64_t s : o.attention_request.seq_lens) seqs += (seqs.empty() ? "" : ",") + std::to_string(s);
  d["attention_seq_lens"] = seqs;
  d["attention_passes"] = std::string(o.attention_request.forward ? "forward" : "") +
                          (o.attention_request.forward && o.attention_request.backward ? "," : "") +
                          (o.attention_request.backward ? "backward" : "");
  d["copy_warmup_s"] = models::format_significant(o.bandwidth_request.warmup_s);
  d["copy_seconds"] = models::format_significant(o.bandwidth_request.seconds);
  return d;
}

models::Result<Measurement> run_validation(const ValidateOptions& options, GpuBackend& backend,
                                           Bootstrap& bootstrap, MeasurementWriter* writer,
                                           const ProgressFn& progress) {
  if (options.collectives) {
    if (options.ops.empty()) return models::Error{"no collective selected"};
    models::Result<std::vector<std::size_t>> sizes =
        size_sweep(options.min_bytes, options.max_bytes, options.step_factor);
    if (!sizes.ok()) return models::Error{sizes.message()};
    if (options.iters < 1) return models::Error{"iters must be at least 1"};
  }
  if (backend.local_gpu_count() < 1) return models::Error{"no GPU to validate"};
  Run run(options, backend, bootstrap, writer, progress);
  return run.execute();
}

}  // namespace clustersim::validate
