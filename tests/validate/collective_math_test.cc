#include "validate/collective_math.h"

#include <doctest/doctest.h>

using namespace clustersim::validate;

TEST_SUITE("validate") {
  TEST_CASE("busbw factors are nccl-tests' (doc/PERFORMANCE.md)") {
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 2) == doctest::Approx(1.0));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 8) == doctest::Approx(1.75));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllGather, 8) == doctest::Approx(0.875));
    CHECK(bus_bandwidth_factor(CollectiveOp::kReduceScatter, 4) == doctest::Approx(0.75));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllToAll, 2) == doctest::Approx(0.5));
    CHECK(bus_bandwidth_factor(CollectiveOp::kBroadcast, 8) == doctest::Approx(1.0));
    CHECK(bus_bandwidth_factor(CollectiveOp::kSendRecv, 8) == doctest::Approx(1.0));
    CHECK(bus_bandwidth_factor(CollectiveOp::kAllReduce, 1) == doctest::Approx(0.0));
  }

  TEST_CASE("shapes follow nccl-tests GetCollByteCount") {
    SUBCASE("all_reduce: count = size / 4") {
      CollectiveShape s = collective_shape(CollectiveOp::kAllReduce, 1 << 20, 4, 8);
      CHECK(s.count == 262144);
      CHECK(s.size_bytes == 1 << 20);
      CHECK(s.send_bytes == 1 << 20);
    }
    SUBCASE("all_gather: per-rank count rounded to 16 bytes, size is the total") {
      // 1000 bytes on 3 ranks: 250 floats / 3 = 83, & ~3 = 80 floats per rank.
      CollectiveShape s = collective_shape(CollectiveOp::kAllGather, 1000, 4, 3);
      CHECK(s.count == 80);
      CHECK(s.send_bytes == 320);
      CHECK(s.recv_bytes == 960);
      CHECK(s.size_bytes == 960);
      CHECK(s.in_place_send_offset_bytes == 320);
    }
    SUBCASE("reduce_scatter mirrors all_gather") {
      CollectiveShape s = collective_shape(CollectiveOp::kReduceScatter, 1 << 20, 4, 2);
      CHECK(s.count == 131072);
      CHECK(s.send_bytes == 1 << 20);
      CHECK(s.recv_bytes == 1 << 19);
      CHECK(s.in_place_recv_offset_bytes == 1 << 19);
    }
    SUBCASE("alltoall: count per peer") {
      CollectiveShape s = collective_shape(CollectiveOp::kAllToAll, 1 << 20, 4, 2);
      CHECK(s.count == 131072);
      CHECK(s.size_bytes == 1 << 20);
    }
    SUBCASE("8 bytes on 2 ranks: nothing left for all_gather (nccl-tests prints no row)") {
      CHECK(collective_shape(CollectiveOp::kAllGather, 8, 4, 2).count == 0);
      CHECK(collective_shape(CollectiveOp::kAllReduce, 8, 4, 2).count == 2);
    }
  }

  TEST_CASE("algbw and busbw by hand") {
    // 8 GiB all_reduce on 8 ranks in 40.612 ms: 8589934592 / 40612e-6 / 1e9 = 211.51 GB/s
    // algbw, times 2 x 7 / 8 = 370.14 GB/s busbw.
    const double alg = algbw_GBps(8589934592ull, 40612e-6);
    CHECK(alg == doctest::Approx(211.51).epsilon(1e-3));
    CHECK(alg * bus_bandwidth_factor(CollectiveOp::kAllReduce, 8) ==
          doctest::Approx(370.14).epsilon(1e-3));
  }

  TEST_CASE("size sweep: 8 B to 8 GiB by 2 is 31 sizes") {
    auto s = size_sweep(8, 8ull << 30, 2);
    REQUIRE(s.ok());
    CHECK(s->size() == 31);
    CHECK(s->front() == 8);
    CHECK(s->back() == (8ull << 30));
    CHECK(size_sweep(8, 100, 4)->back() == 32);
    CHECK_FALSE(size_sweep(0, 8, 2).ok());
    CHECK(size_sweep(16, 8, 2).message().find("above maximum") != std::string::npos);
    CHECK_FALSE(size_sweep(8, 16, 1).ok());
  }

  TEST_CASE("op names round-trip") {
    for (CollectiveOp op : all_collective_ops()) {
      CollectiveOp back;
      REQUIRE(parse_collective_op(to_string(op), &back));
      CHECK(back == op);
    }
    CollectiveOp x;
    CHECK_FALSE(parse_collective_op("allreduce_fast", &x));
  }
}
