#include "validate/fake_backend.h"

#include <chrono>
#include <sstream>
#include <thread>

#include "validate/watchdog.h"

namespace clustersim::validate {

Versions FakeBackend::versions() {
  Versions v;
  v.driver = "fake";
  v.nccl = "fake";
  return v;
}

std::vector<GpuInfo> FakeBackend::identify() {
  std::vector<GpuInfo> gpus;
  for (int i = 0; i < options_.gpus; ++i) {
    GpuInfo g;
    g.cuda_index = i;
    g.name = options_.gpu_name;
    g.uuid = "GPU-fake-" + std::to_string(i);
    g.sm_count = 132;
    g.memory_bytes = 141ull << 30;
    g.virtualization = "none";
    g.mig_mode = "disabled";
    gpus.push_back(g);
  }
  return gpus;
}

models::Result<std::string> FakeBackend::new_communicator_id() {
  return std::string("fake-nccl-unique-id");
}

models::Status FakeBackend::init_communicator(const std::string& id, int world_size,
                                              int first_rank, std::uint64_t) {
  if (id != "fake-nccl-unique-id") return models::Error{"fake backend: unexpected id '" + id + "'"};
  world_size_ = world_size;
  first_rank_ = first_rank;
  initialized_ = true;
  aborted_ = false;
  return models::Status::Ok();
}

models::Result<CollectiveResult> FakeBackend::run_collective(const CollectiveRequest& request) {
  if (!initialized_) return models::Error{request.label + ": no communicator"};
  if (aborted_) return models::Error{request.label + ": communicator was aborted earlier"};
  if (options_.sleep_per_collective_s > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.sleep_per_collective_s));
  }
  const bool hang = !options_.hang_op.empty() && options_.hang_op == to_string(request.op) &&
                    (options_.hang_size_bytes == 0 ||
                     options_.hang_size_bytes == request.shape.size_bytes);
  models::Status waited = wait_with_watchdog(
      [&] { return PollResult{hang ? PollState::kPending : PollState::kDone, ""}; },
      [&] { aborted_ = true; }, request.timeout_s, request.label, 0.001);
  if (!waited.ok()) return models::Error{waited.message()};
  CollectiveResult r;
  const double bytes_on_bus = static_cast<double>(request.shape.size_bytes) *
                              bus_bandwidth_factor(request.op, world_size_);
  r.time_s = options_.latency_us * 1e-6 + bytes_on_bus / (options_.link_GBps * 1e9);
  r.wrong = request.check ? options_.wrong_elements : -1;
  return r;
}

std::vector<TransportRecord> FakeBackend::transports() {
  std::vector<TransportRecord> out;
  for (int i = 0; i < options_.gpus; ++i) {
    const int rank = first_rank_ + i;
    if (world_size_ < 2) break;
    TransportRecord t;
    t.rank = rank;
    t.peer = (rank + 1) % world_size_;
    t.transport = "P2P";
    t.detail = "P2P/fake";
    t.channels = 2;
    out.push_back(t);
  }
  return out;
}

models::Result<std::vector<GemmRate>> FakeBackend::run_gemm(const GemmRequest& request,
                                                            std::vector<GpuInfo>& gpus) {
  std::vector<GemmRate> out;
  for (int i = 0; i < options_.gpus; ++i) {
    for (const std::string& p : request.precisions) {
      for (const auto& s : request.shapes) {
        GemmRate g;
        g.rank = i;
        g.precision = p;
        g.m = s[0];
        g.n = s[1];
        g.k = s[2];
        g.tflops = g.tflops_min = options_.gemm_tflops;
        g.seconds = request.seconds_per_shape;
        g.iterations = 1;
        out.push_back(g);
      }
    }
    if (i < static_cast<int>(gpus.size())) gpus[static_cast<std::size_t>(i)].pcie_under_load = {5, 5, 16, 16};
  }
  return out;
}

models::Result<std::vector<BandwidthRate>> FakeBackend::run_bandwidth(
    const BandwidthRequest& request) {
  std::vector<BandwidthRate> out;
  auto rate = [&](int gpu, const char* kind, std::uint64_t bytes, double GBps) {
    BandwidthRate b;
    b.rank = gpu;
    b.kind = kind;
    b.bytes = bytes;
    b.GBps = b.GBps_min = b.GBps_max = GBps;
    b.batches = std::max(request.iters, 1);
    b.copies_per_batch = 1;
    b.warmup_s = request.warmup_s;
    out.push_back(b);
  };
  for (int i = 0; i < options_.gpus; ++i) {
    rate(i, "hbm_copy", request.hbm_bytes, 4000);
    rate(i, "h2d", request.host_bytes, 50);
    rate(i, "d2h", request.host_bytes, 50);
  }
  return out;
}

models::Result<std::vector<AttentionRate>> FakeBackend::run_attention(
    const AttentionRequest& request) {
  std::vector<AttentionRate> out;
  for (bool backward : {false, true}) {
    if (backward ? !request.backward : !request.forward) continue;
    for (std::int64_t s : request.seq_lens) {
      AttentionRate a;
      a.implementation = "fake";
      a.direction = backward ? "backward" : "forward";
      a.causal = true;
      a.batch = request.batch;
      a.heads = request.heads;
      a.head_dim = request.head_dim;
      a.seq_len = s;
      a.tflops = backward ? 200 : 300;
      a.flops_convention = backward ? "2.5x forward" : "4bhs^2d";
      out.push_back(a);
    }
  }
  return out;
}

models::Result<FakeBackendOptions> parse_fake_backend_options(const std::string& spec) {
  FakeBackendOptions o;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) return models::Error{"--fake: '" + item + "' is not key=value"};
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    try {
      if (key == "gpus") o.gpus = std::stoi(value);
      else if (key == "link_GBps") o.link_GBps = std::stod(value);
      else if (key == "latency_us") o.latency_us = std::stod(value);
      else if (key == "wrong") o.wrong_elements = std::stoll(value);
      else if (key == "hang_op") o.hang_op = value;
      else if (key == "hang_size") o.hang_size_bytes = std::stoull(value);
      else if (key == "sleep") o.sleep_per_collective_s = std::stod(value);
      else if (key == "gemm_tflops") o.gemm_tflops = std::stod(value);
      else if (key == "name") o.gpu_name = value;
      else
        return models::Error{"--fake: unknown key '" + key +
                             "' (known: gpus, link_GBps, latency_us, wrong, hang_op, hang_size, "
                             "sleep, gemm_tflops, name)"};
    } catch (const std::exception&) {
      return models::Error{"--fake: " + key + ": '" + value + "' is not a number"};
    }
  }
  if (o.gpus < 1) return models::Error{"--fake: gpus must be at least 1"};
  if (o.link_GBps <= 0) return models::Error{"--fake: link_GBps must be positive"};
  return o;
}

}  // namespace clustersim::validate
