#include "models/units.h"

#include <doctest/doctest.h>

using namespace clustersim::models;

TEST_SUITE("models") {
  TEST_CASE("bandwidth: bits and bytes") {
    CHECK(*parse_bandwidth_Bps("400Gbps") == doctest::Approx(50e9));
    CHECK(*parse_bandwidth_Bps("400Gb/s") == doctest::Approx(50e9));
    CHECK(*parse_bandwidth_Bps("400 Gbit/s") == doctest::Approx(50e9));
    CHECK(*parse_bandwidth_Bps("50GB/s") == doctest::Approx(50e9));
    CHECK(*parse_bandwidth_Bps("1.6Tbps") == doctest::Approx(200e9));
    CHECK(*parse_bandwidth_Bps("25GiB/s") == doctest::Approx(25.0 * 1024 * 1024 * 1024));
    CHECK(*parse_bandwidth_Bps("900GBps") == doctest::Approx(900e9));
  }
  TEST_CASE("bandwidth: rejected input names what was wrong") {
    auto bare = parse_bandwidth_Bps("400");
    REQUIRE_FALSE(bare.ok());
    CHECK(bare.message().find("no unit") != std::string::npos);
    auto unknown = parse_bandwidth_Bps("400Gbytes");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.message().find("'Gbytes'") != std::string::npos);
    auto neg = parse_bandwidth_Bps("-5GB/s");
    REQUIRE_FALSE(neg.ok());
    CHECK(neg.message().find("negative") != std::string::npos);
    auto word = parse_bandwidth_Bps("fast");
    REQUIRE_FALSE(word.ok());
    CHECK(word.message().find("expected a number") != std::string::npos);
  }
  TEST_CASE("sizes: decimal, binary and the command-line shorthand") {
    CHECK(*parse_size_bytes("2GiB") == doctest::Approx(2 * kGiB));
    CHECK(*parse_size_bytes("80GB") == doctest::Approx(80e9));
    CHECK(*parse_size_bytes("512 KiB") == doctest::Approx(512 * 1024.0));
    CHECK_FALSE(parse_size_bytes("8G").ok());
    CHECK_FALSE(parse_size_bytes("8").ok());
    CHECK(*parse_size_bytes("8", true) == 8);
    CHECK(*parse_size_bytes("8G", true) == doctest::Approx(8 * kGiB));
    CHECK(*parse_size_bytes("64K", true) == doctest::Approx(65536));
    CHECK(*parse_size_bytes("2GB", true) == doctest::Approx(2e9));
  }
  TEST_CASE("times, rates, counts, money, power") {
    CHECK(*parse_time_s("1.5us") == doctest::Approx(1.5e-6));
    CHECK(*parse_time_s("18ms") == doctest::Approx(0.018));
    CHECK(*parse_time_s("50000h") == doctest::Approx(50000 * 3600.0));
    CHECK(*parse_time_s("250ns") == doctest::Approx(250e-9));
    CHECK_FALSE(parse_time_s("12").ok());
    CHECK(*parse_flops("989TFLOP/s") == doctest::Approx(989e12));
    CHECK(*parse_flops("67 TFLOPS") == doctest::Approx(67e12));
    CHECK(*parse_count("2T") == doctest::Approx(2e12));
    CHECK(*parse_count("4M") == doctest::Approx(4e6));
    CHECK(*parse_count("128K") == doctest::Approx(128e3));
    CHECK(*parse_count("4096") == 4096);
    CHECK(*parse_usd("2.50") == doctest::Approx(2.5));
    CHECK(*parse_usd("$2.50") == doctest::Approx(2.5));
    CHECK(*parse_usd("2.5USD") == doctest::Approx(2.5));
    CHECK_FALSE(parse_usd("2.5EUR").ok());
    CHECK(*parse_watts("700W") == 700);
    CHECK(*parse_watts("10.2kW") == doctest::Approx(10200));
  }
  TEST_CASE("format then parse gives the value back") {
    for (double v : {1.0, 37.0, 1536.0, 2 * kGiB, 80e9, 3.3e12}) {
      CHECK(*parse_size_bytes(format_size(v)) == doctest::Approx(v).epsilon(1e-3));
    }
    for (double v : {12.5e9, 50e9, 450e9, 3.35e12, 1e3}) {
      CHECK(*parse_bandwidth_Bps(format_bandwidth(v)) == doctest::Approx(v).epsilon(1e-3));
      CHECK(*parse_bandwidth_Bps(format_bandwidth_bits(v)) == doctest::Approx(v).epsilon(1e-3));
    }
    for (double v : {8e-9, 1.5e-6, 0.018, 12.3, 3600.0 * 3.2, 86400.0 * 41.7}) {
      CHECK(*parse_time_s(format_time(v)) == doctest::Approx(v).epsilon(1e-3));
    }
    for (double v : {989e12, 67e12, 2.1e18}) {
      CHECK(*parse_flops(format_flops(v)) == doctest::Approx(v).epsilon(1e-3));
    }
    for (double v : {2e12, 4.1e6, 512.0}) {
      CHECK(*parse_count(format_count(v)) == doctest::Approx(v).epsilon(1e-3));
    }
    CHECK(format_bandwidth(50e9) == "50 GB/s");
    CHECK(format_bandwidth_bits(50e9) == "400 Gb/s");
    CHECK(format_size(2 * kGiB) == "2 GiB");
    CHECK(format_time(1.5e-6) == "1.5 us");
    // A time left over from subtracting two equal ones prints as nothing, either sign.
    CHECK(format_time(3.331e-19) == "0 ns");
    CHECK(format_time(-1e-20) == "0 ns");
    CHECK(format_time(0) == "0 ns");
    CHECK(format_usd(1580000) == "$1,580,000");
    CHECK(format_usd(0.27) == "$0.27");
    CHECK(format_count(2e12) == "2T");
  }
  TEST_CASE("percentages: 3 significant digits, no rounding noise, a sign for changes") {
    CHECK(format_percent(0.123) == "12.3%");
    CHECK(format_percent(1.0) == "100%");
    CHECK(format_percent(0.9) == "90%");
    CHECK(format_percent(0.00012345) == "0.0123%");
    CHECK(format_percent(1e-14) == "0%");
    CHECK(format_percent(-1e-14) == "0%");
    CHECK(format_percent(-0.25) == "-25%");
    SUBCASE("a share of a whole") {
      CHECK(format_percent(3, 8) == "37.5%");
      CHECK(format_percent(800e9, 800e9) == "100%");
      CHECK(format_percent(1, 0) == "-");
      CHECK(format_percent(0, 0) == "-");
    }
    SUBCASE("a change") {
      CHECK(format_signed_percent(0.05) == "+5%");
      CHECK(format_signed_percent(-0.012) == "-1.2%");
      CHECK(format_signed_percent(0) == "+0%");
      CHECK(format_signed_percent(1.2345) == "+123%");
    }
  }
}
