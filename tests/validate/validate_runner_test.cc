#include "validate/validate_runner.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "validate/fake_backend.h"
#include "validate/host_info.h"
#include "tests/scratch_dir.h"

using namespace clustersim::validate;
using clustersim::testing::ScratchDir;

namespace {

ValidateOptions small_options() {
  ValidateOptions o;
  o.min_bytes = 8;
  o.max_bytes = 1 << 20;
  o.iters = 5;
  o.collective_timeout_s = 5;
  o.gemm_request.shapes = {{1024, 1024, 1024}};
  o.gemm_request.precisions = {"bf16"};
  o.attention_request.seq_lens = {4096};
  return o;
}

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("runner: a full fake run on 2 GPUs writes every section") {
    FakeBackendOptions f;
    f.gpus = 2;
    f.link_GBps = 150;
    f.latency_us = 0.01;
    FakeBackend backend(f);
    SingleProcessBootstrap boot;
    const ScratchDir scratch("runner");
    const std::string path = scratch.path("full.json");
    MeasurementWriter writer(path);
    std::vector<std::string> lines;
    auto m = run_validation(small_options(), backend, boot, &writer,
                            [&](const std::string& l) { lines.push_back(l); });
    REQUIRE(m.ok());
    CHECK(m->complete);
    CHECK(m->run.world_size == 2);
    CHECK(m->run.backend == "fake");
    CHECK(m->gpus.size() == 2);
    CHECK(m->gpus[1].rank == 1);
    // 18 sizes 8 B .. 1 MiB; all_gather / reduce_scatter / alltoall skip the sizes whose
    // per-rank share rounds down to 0 (8 B: 1 float per rank < 16 B), as nccl-tests does.
    int all_reduce_rows = 0, all_gather_rows = 0;
    for (const CollectiveRow& r : m->collectives) {
      all_reduce_rows += r.op == "all_reduce";
      all_gather_rows += r.op == "all_gather";
      CHECK(r.out_of_place.wrong == 0);
      // nccl-tests checks no in-place alltoall / sendrecv (undefined: N/A).
      const bool unchecked = r.op == "alltoall" || r.op == "sendrecv";
      CHECK(r.in_place.wrong == (unchecked ? -1 : 0));
    }
    CHECK(all_reduce_rows == 18);
    CHECK(all_gather_rows == 16);  // 8 B and 16 B have no 16-byte share per rank
    // busbw tends to the fake link bandwidth at large sizes.
    const CollectiveRow& last = m->collectives.back();
    CHECK(last.op == "sendrecv");
    CHECK(last.out_of_place.busbw_GBps == doctest::Approx(150).epsilon(0.02));
    CHECK(m->transports.size() == 2);
    CHECK(m->gemm.size() == 2);
    CHECK(m->gpus[0].pcie_under_load.width_current == 16);  // the burn updated health
    CHECK(m->sections_done ==
          std::vector<std::string>{"identity", "collectives", "bandwidth", "gemm", "attention"});
    auto file = read_measurement_file(path);
    REQUIRE(file.ok());
    CHECK(file->complete);
    CHECK(file->collectives.size() == m->collectives.size());
    CHECK_FALSE(std::filesystem::exists(writer.partial_path()));
    CHECK_FALSE(lines.empty());
  }

  TEST_CASE("runner: a hung collective is aborted, named, and the run goes on") {
    FakeBackendOptions f;
    f.gpus = 2;
    f.hang_op = "all_gather";
    f.hang_size_bytes = 4096;
    FakeBackend backend(f);
    SingleProcessBootstrap boot;
    ValidateOptions o = small_options();
    o.collective_timeout_s = 0.05;
    auto m = run_validation(o, backend, boot, nullptr, nullptr);
    REQUIRE(m.ok());
    CHECK(backend.aborted());
    REQUIRE(m->errors.size() == 1);
    CHECK(m->errors[0].section == "collectives");
    CHECK(m->errors[0].message.find("all_gather 4 KiB out-of-place: did not finish") == 0);
    // all_reduce finished; all_gather stopped below 4 KiB; nothing after it ran.
    CHECK(m->collectives.back().op == "all_gather");
    CHECK(m->collectives.back().size_bytes == 2048);
    CHECK(m->sections_done[1] == "collectives (stopped)");
    CHECK(m->gemm.size() == 2);  // later sections still ran
  }

  TEST_CASE("runner: wrong elements are reported") {
    FakeBackendOptions f;
    f.wrong_elements = 3;
    FakeBackend backend(f);
    SingleProcessBootstrap boot;
    ValidateOptions o = small_options();
    o.ops = {CollectiveOp::kAllReduce};
    o.gemm = o.attention = o.bandwidth = false;
    auto m = run_validation(o, backend, boot, nullptr, nullptr);
    REQUIRE(m.ok());
    CHECK(m->collectives[0].in_place.wrong == 3);
    o.check = false;
    auto unchecked = run_validation(o, backend, boot, nullptr, nullptr);
    CHECK(unchecked->collectives[0].in_place.wrong == -1);
  }

  TEST_CASE("runner: bad options fail before anything runs") {
    FakeBackend backend(FakeBackendOptions{});
    SingleProcessBootstrap boot;
    ValidateOptions o = small_options();
    o.min_bytes = 0;
    CHECK_FALSE(run_validation(o, backend, boot, nullptr, nullptr).ok());
    o = small_options();
    o.ops.clear();
    CHECK(run_validation(o, backend, boot, nullptr, nullptr).message() ==
          "no collective selected");
  }

  TEST_CASE("fake backend options parse and reject") {
    auto o = parse_fake_backend_options("gpus=4,link_GBps=200,hang_op=alltoall,hang_size=64");
    REQUIRE(o.ok());
    CHECK(o->gpus == 4);
    CHECK(o->link_GBps == 200);
    CHECK(o->hang_op == "alltoall");
    CHECK(o->hang_size_bytes == 64);
    CHECK(parse_fake_backend_options("speed=3").message().find("unknown key 'speed'") !=
          std::string::npos);
    CHECK(parse_fake_backend_options("gpus=x").message() == "--fake: gpus: 'x' is not a number");
    CHECK_FALSE(parse_fake_backend_options("gpus=0").ok());
  }

  TEST_CASE("cpuinfo: model name and the hypervisor flag") {
    std::string model;
    bool vm = true;
    parse_cpuinfo("processor\t: 0\nmodel name\t: AMD EPYC 9654\nflags\t\t: fpu sse\n", &model, &vm);
    CHECK(model == "AMD EPYC 9654");
    CHECK_FALSE(vm);
    parse_cpuinfo("model name : X\nflags : fpu hypervisor avx\n", &model, &vm);
    CHECK(vm);
  }
}
