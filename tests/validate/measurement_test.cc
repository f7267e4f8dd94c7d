#include "validate/measurement.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "validate/measurement_samples.h"
#include "validate/measurement_writer.h"
#include "tests/scratch_dir.h"

using namespace clustersim::validate;
using clustersim::testing::ScratchDir;

namespace {

Measurement sample() {
  Measurement m;
  m.tool = "clustersim validate";
  m.run.command_line = {"clustersim", "validate", "-e", "1G"};
  m.run.environment["NCCL_NVLS_ENABLE"] = "0";
  m.run.world_size = 2;
  HostInfo h;
  h.hostname = "node1";
  h.ranks = {0, 1};
  m.hosts.push_back(h);
  GpuInfo g;
  g.name = "NVIDIA H200";
  g.pci.vendor_id = 0x10de;
  g.pci.device_id = 0x2335;
  g.pci.nvml_pci_device_id = 0x233510DE;
  g.memory_bytes = 150754820096ull;
  g.ecc.volatile_corrected = 0;
  g.throttle_reasons_during_burn = {"sw_power_cap"};
  m.gpus.push_back(g);
  CollectiveRow r;
  r.op = "all_reduce";
  r.ranks = 2;
  r.size_bytes = 8589934592ull;
  r.count = 2147483648ull;
  r.type = "float";
  r.redop = "sum";
  r.out_of_place = {23000.5, 373.5, 373.5, 0};
  r.in_place = {23100.25, 371.8, 371.8, 0};
  m.collectives.push_back(r);
  m.gemm.push_back({1, "bf16", 8192, 8192, 8192, true, 30.0, 1000, 700.5, 650.25});
  BandwidthRate b;
  b.kind = "p2p";
  b.peer = 1;
  b.bytes = 1u << 30;
  b.GBps = 380.0;
  b.GBps_min = 371.5;
  b.batches = 20;
  b.sm_clock_min_MHz = 1980;
  b.throttle_reasons = {"gpu_idle"};
  m.bandwidth.push_back(b);
  AttentionRate a;
  a.implementation = "clustersim-flash-bwd (mma.sync, two passes, 128 rows, ldmatrix)";
  a.direction = "backward";
  a.causal = true;
  a.batch = 1;
  a.heads = 16;
  a.head_dim = 128;
  a.seq_len = 131072;
  a.time_ms = 1234.5;
  a.tflops = 178.25;
  a.max_rel_error = 0.0045;
  a.flops_convention = "2.5x forward";
  m.attention.push_back(a);
  m.transports.push_back({0, 1, "P2P", "P2P/CUMEM/read", 24});
  m.errors.push_back({"attention", "kernel failed"});
  return m;
}

}  // namespace

TEST_SUITE("validate") {
  TEST_CASE("measurement JSON round-trips every section") {
    const Measurement m = sample();
    const std::string text = to_json_text(m);
    CHECK(text.find("\"schema\": \"clustersim.measurements/1\"") != std::string::npos);
    CHECK(text.find("\"device_id\": \"0x2335\"") != std::string::npos);
    CHECK(text.find("\"nvml_pci_device_id\": \"0x233510de\"") != std::string::npos);
    auto back = parse_measurement(text, "t.json");
    REQUIRE(back.ok());
    CHECK(to_json_text(*back) == text);
    CHECK(back->gpus[0].pci.nvml_pci_device_id == 0x233510DEu);
    CHECK(back->collectives[0].size_bytes == 8589934592ull);
    CHECK(back->collectives[0].in_place.time_us == doctest::Approx(23100.25));
    CHECK(back->gemm[0].tflops_min == doctest::Approx(650.25));
    CHECK(back->run.environment.at("NCCL_NVLS_ENABLE") == "0");
    CHECK(back->bandwidth[0].GBps_min == doctest::Approx(371.5));
    CHECK(back->bandwidth[0].batches == 20);
    CHECK(back->bandwidth[0].sm_clock_min_MHz == 1980);
    CHECK(back->bandwidth[0].throttle_reasons == std::vector<std::string>{"gpu_idle"});
    CHECK(back->attention[0].direction == "backward");
    CHECK(back->attention[0].flops_convention == "2.5x forward");
  }

  TEST_CASE("a file written before the copy statistics and FLOP convention still reads") {
    auto old = parse_measurement(
        "{\"schema\": \"clustersim.measurements/1\", \"bandwidth\": [{\"rank\": 0, \"kind\": "
        "\"hbm_copy\", \"peer\": -1, \"bytes\": 1073741824, \"GBps\": 3737.4}], \"attention\": "
        "[{\"direction\": \"forward\", \"tflops\": 264.6}]}",
        "old.json");
    REQUIRE(old.ok());
    CHECK(old->bandwidth[0].GBps == doctest::Approx(3737.4));
    CHECK(old->bandwidth[0].batches == 0);
    CHECK(old->bandwidth[0].throttle_reasons.empty());
    CHECK(old->attention[0].flops_convention.empty());
  }

  TEST_CASE("parse errors name the file and the JSON path") {
    auto bad_json = parse_measurement("{\"schema\": ", "x.json");
    REQUIRE_FALSE(bad_json.ok());
    CHECK(bad_json.message().find("x.json: not valid JSON") == 0);
    auto no_schema = parse_measurement("{}", "x.json");
    CHECK(no_schema.message().find("no \"schema\"") != std::string::npos);
    auto other = parse_measurement("{\"schema\": \"clustersim.measurements/9\"}", "x.json");
    CHECK(other.message().find("not the supported") != std::string::npos);
    auto wrong_type = parse_measurement(
        "{\"schema\": \"clustersim.measurements/1\", \"collectives\": "
        "[{\"op\": \"all_reduce\", \"size_bytes\": \"big\"}]}",
        "x.json");
    REQUIRE_FALSE(wrong_type.ok());
    CHECK(wrong_type.message() ==
          "x.json: $.collectives[0].size_bytes: expected an integer, got \"big\"");
    auto negative = parse_measurement(
        "{\"schema\": \"clustersim.measurements/1\", \"gpus\": [{\"memory_bytes\": -1}]}", "x");
    CHECK(negative.message().find("$.gpus[0].memory_bytes: expected a non-negative") !=
          std::string::npos);
    auto bad_hex = parse_measurement(
        "{\"schema\": \"clustersim.measurements/1\", \"gpus\": [{\"pci\": {\"device_id\": "
        "\"2335\"}}]}",
        "x");
    CHECK(bad_hex.message().find("$.gpus[0].pci.device_id: expected a hex string") !=
          std::string::npos);
  }

  TEST_CASE("hostile values: never accepted silently, each refusal names its JSON path") {
    auto parse = [](const std::string& body) {
      return parse_measurement("{\"schema\": \"clustersim.measurements/1\", " + body + "}",
                               "doctored.json");
    };
    auto refused = [&](const std::string& body, const std::string& what) {
      auto r = parse(body);
      INFO(body);
      REQUIRE_FALSE(r.ok());
      CHECK(r.message().find("doctored.json: " + what) == 0);
    };
    // JSON has no NaN or Inf, and a literal beyond a double's range is refused (it used to
    // escape as an exception).
    refused(R"("gemm": [{"tflops": 1e999}])", "not valid JSON");
    refused(R"("collectives": [{"op": "all_reduce", "in_place": {"time_us": -1e999}}])",
            "not valid JSON");
    refused(R"("gemm": [{"tflops": NaN}])", "not valid JSON");
    refused(R"("collectives": [{"op": "all_reduce", "out_of_place": {"time_us": -3.5}}])",
            "$.collectives[0].out_of_place.time_us: expected a non-negative number");
    refused(R"("bandwidth": [{"kind": "hbm_copy", "GBps": -4000}])",
            "$.bandwidth[0].GBps: expected a non-negative number");
    refused(R"("run": {"world_size": -8})", "$.run.world_size: expected a non-negative integer");
    refused(R"("collectives": [{"op": "all_reduce", "ranks": 4294967298}])",
            "$.collectives[0].ranks: integer out of range");
    refused(R"("collectives": [{"op": "all_reduce", "out_of_place": {"wrong": -2}}])",
            "$.collectives[0].out_of_place.wrong: expected a non-negative integer");
    // A field's own "not reported" value stays allowed.
    auto sentinels = parse(
        R"("collectives": [{"op": "broadcast", "root": -1, "in_place": {"wrong": -1}}],)"
        R"( "attention": [{"direction": "forward", "max_rel_error": -1}])");
    REQUIRE(sentinels.ok());
    CHECK(sentinels->collectives[0].in_place.wrong == -1);
    CHECK(sentinels->attention[0].max_rel_error == -1);
    refused(R"("attention": [{"direction": "forward", "max_rel_error": -0.5}])",
            "$.attention[0].max_rel_error: expected a non-negative number");
    // A row measured twice: named, both places.
    const std::string row =
        R"({"op": "all_reduce", "ranks": 8, "size_bytes": 8589934592, "type": "float",)"
        R"( "redop": "sum", "out_of_place": {"time_us": 40000}})";
    refused(R"("collectives": [)" + row + ", " + row + "]",
            "$.collectives[1] repeats $.collectives[0]");
    refused(R"("gemm": [{"rank": 0, "precision": "bf16", "m": 8192, "n": 8192, "k": 8192},)"
            R"( {"rank": 0, "precision": "bf16", "m": 8192, "n": 8192, "k": 8192}])",
            "$.gemm[1] repeats $.gemm[0]");
    refused(R"("bandwidth": [{"rank": 1, "kind": "p2p", "peer": 0, "bytes": 1024},)"
            R"( {"rank": 0, "kind": "p2p", "peer": 1, "bytes": 1024},)"
            R"( {"rank": 1, "kind": "p2p", "peer": 0, "bytes": 1024}])",
            "$.bandwidth[2] repeats $.bandwidth[0]");
    // The same GEMM on two ranks, or two sizes of a sweep, are two measurements.
    CHECK(parse(R"("gemm": [{"rank": 0, "m": 64}, {"rank": 1, "m": 64}])").ok());
  }

  TEST_CASE("a partial file is valid JSON after every checkpoint; finish renames it") {
    const ScratchDir scratch("measure_checkpoint");
    const std::string path = scratch.path("m.json");
    MeasurementWriter w(path);
    Measurement m = sample();
    REQUIRE(w.checkpoint(m).ok());
    auto partial = read_measurement_file(w.partial_path());
    REQUIRE(partial.ok());
    CHECK_FALSE(partial->complete);
    CHECK_FALSE(std::filesystem::exists(path));
    m.collectives.push_back(m.collectives[0]);
    m.collectives.back().size_bytes *= 2;  // the next row of the sweep
    REQUIRE(w.checkpoint(m).ok());
    CHECK(read_measurement_file(w.partial_path())->collectives.size() == 2);
    REQUIRE(w.finish(m).ok());
    CHECK_FALSE(std::filesystem::exists(w.partial_path()));
    auto final_file = read_measurement_file(path);
    REQUIRE(final_file.ok());
    CHECK(final_file->complete);
    // No temporary files are left behind.
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(scratch.dir())) {
      files += e.is_regular_file();
    }
    CHECK(files == 1);
  }

  TEST_CASE("writing into a missing directory fails naming the path") {
    auto s = write_file_atomically("/nonexistent-dir-clustersim/m.json", "{}");
    REQUIRE_FALSE(s.ok());
    CHECK(s.message().find("/nonexistent-dir-clustersim/m.json.tmp.") == 0);
    CHECK(s.message().find("cannot create") != std::string::npos);
  }

  TEST_CASE("rank parts merge by host") {
    Measurement into;
    Measurement a = sample();
    Measurement b = sample();
    b.hosts[0].ranks = {2, 3};
    append_rank_parts(into, a);
    append_rank_parts(into, b);
    REQUIRE(into.hosts.size() == 1);
    CHECK(into.hosts[0].ranks == std::vector<int>{0, 1, 2, 3});
    CHECK(into.gpus.size() == 2);
    CHECK(into.collectives.empty());  // rows belong to rank 0 only
  }

  TEST_CASE("an attention reference file: rows read, bad input named, never a throw") {
    const ScratchDir scratch("measure_reference");
    const std::string path = scratch.path("ref.json");
    auto load = [&](const std::string& text) {
      std::ofstream(path) << text;
      return load_attention_reference(path);
    };
    auto good = load(R"({"torch": "2.11", "device": "NVIDIA H200", "sdpa": [
        {"seq_len": 4096, "causal": true, "direction": "forward", "tflops": 400},
        {"seq_len": 4096, "direction": "backward", "tflops": 350}]})");
    REQUIRE_MESSAGE(good.ok(), good.message());
    REQUIRE(good->samples.size() == 2);
    CHECK(good->samples[0].causal);
    CHECK(good->samples[0].production);
    CHECK(good->samples[0].flops_per_s == doctest::Approx(400e12));
    CHECK_FALSE(good->samples[1].causal);  // absent: full attention
    CHECK(good->samples[1].backward);
    CHECK(good->source.find("(torch 2.11 scaled_dot_product_attention on NVIDIA H200)") !=
          std::string::npos);
    // Metadata of the wrong type reads as unknown, not as a crash.
    auto odd = load(R"({"torch": null, "device": 7, "sdpa": [
        {"seq_len": 4096, "direction": "forward", "tflops": 400}]})");
    REQUIRE(odd.ok());
    CHECK(odd->source.find("(torch ? scaled_dot_product_attention on ?)") != std::string::npos);
    const std::pair<const char*, const char*> bad[] = {
        {"not json", "not JSON"},
        {R"({"sdpa": []})", "no \"sdpa\" rows"},
        {R"({"sdpa": [{"seq_len": 4096, "direction": "forward"}]})", "sdpa[0]: needs"},
        {R"({"sdpa": [{"seq_len": 4096, "direction": "up", "tflops": 1}]})", "forward or backward"},
        {R"({"sdpa": [{"seq_len": 0, "direction": "forward", "tflops": 1}]})", "must be > 0"},
        {R"({"sdpa": [{"seq_len": 8, "causal": 1, "direction": "forward", "tflops": 1}]})",
         "sdpa[0]: causal must be true or false"}};
    for (const auto& [text, want] : bad) {
      auto r = load(text);
      REQUIRE_FALSE(r.ok());
      CHECK_MESSAGE(r.message().find(path) == 0, r.message());
      CHECK_MESSAGE(r.message().find(want) != std::string::npos, r.message());
    }
  }
}
