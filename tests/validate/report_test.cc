// SHA-256 and HMAC-SHA256 against published vectors (FIPS 180-2 appendix B, RFC 4231 section
// 4), and the verify report: rendering, signing, and telling an edited report from a real one.
#include "validate/report.h"

#include <doctest/doctest.h>

#include "validate/measurement_samples.h"
#include "validate/sha256.h"

using namespace clustersim::validate;

TEST_SUITE("validate") {
  TEST_CASE("sha256: FIPS 180-2 vectors") {
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    // One million 'a' (FIPS 180-2 B.3): many blocks.
    CHECK(sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    // 55, 56 and 64 bytes: the padding spills into a second block at 56.
    CHECK(sha256_hex(std::string(56, 'a')) ==
          "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  }

  TEST_CASE("hmac-sha256: RFC 4231 test cases 1, 2, 6") {
    CHECK(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // A 131-byte key (longer than the block: hashed first).
    CHECK(hmac_sha256_hex(std::string(131, '\xaa'),
                          "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    CHECK(constant_time_equal("abc", "abc"));
    CHECK_FALSE(constant_time_equal("abc", "abd"));
    CHECK_FALSE(constant_time_equal("abc", "ab"));
  }

  TEST_CASE("report: every format carries the digest; a signed report detects edits") {
    auto file = load_measurement_file(std::string(CLUSTERSIM_SOURCE_DIR) +
                                      "/tests/data/synthetic-h200-2gpu.json");
    REQUIRE(file.ok());
    const AcceptanceResult r = run_acceptance(file->data, {});
    ReportMeta meta;
    meta.measurement_path = "synthetic-h200-2gpu.json";
    meta.measurement_sha256 = file->sha256_hex;
    meta.tool_version = "test";
    for (ReportFormat f : {ReportFormat::kMarkdown, ReportFormat::kHtml, ReportFormat::kJson}) {
      const std::string text = render_report(r, meta, f);
      CHECK(text == render_report(r, meta, f));  // deterministic
      CHECK(text.find(file->sha256_hex) != std::string::npos);
      auto unsigned_check = check_report(text, f, "key");
      REQUIRE(unsigned_check.ok());
      CHECK_FALSE(unsigned_check->has_signature);
      CHECK(unsigned_check->measurement_sha256 == file->sha256_hex);
      const std::string signed_text = sign_report(text, f, "key");
      auto ok = check_report(signed_text, f, "key");
      REQUIRE(ok.ok());
      CHECK(ok->has_signature);
      CHECK(ok->signature_valid);
      CHECK_FALSE(check_report(signed_text, f, "another key")->signature_valid);
      // Edit a verdict: the HMAC no longer matches.
      std::string edited = signed_text;
      const auto at = edited.find("PASS");
      REQUIRE(at != std::string::npos);
      edited.replace(at, 4, "FAIL");
      CHECK_FALSE(check_report(edited, f, "key")->signature_valid);
    }
    // Bytes appended after the signature line are not covered: refused.
    const std::string md = sign_report(render_report(r, meta, ReportFormat::kMarkdown),
                                       ReportFormat::kMarkdown, "key");
    CHECK_FALSE(check_report(md + "extra\n", ReportFormat::kMarkdown, "key")->signature_valid);
    // The HTML holds the plot; the Markdown the table behind it.
    const std::string html = render_report(r, meta, ReportFormat::kHtml);
    CHECK(html.find("<svg") != std::string::npos);
    CHECK(html.find("acceptance threshold") != std::string::npos);
    CHECK(render_report(r, meta, ReportFormat::kMarkdown).find("| 8 GiB |") != std::string::npos);
    CHECK_FALSE(check_report("hello", ReportFormat::kMarkdown, "").ok());
    CHECK(report_format_for("a.html").ok());
    CHECK_FALSE(report_format_for("a.pdf").ok());
  }

  TEST_CASE("report: hostile inputs found by fuzzing (tests/fuzz) are refused or drawn safely") {
    // An all_reduce row of 0 bytes put -inf on the plot's log axis: the tick loop then ran from
    // INT_MIN and `verify --report` grew until the kernel killed it. Rows of 0 bytes are left
    // out of the curve; the report renders.
    auto file = load_measurement_file(std::string(CLUSTERSIM_SOURCE_DIR) +
                                      "/tests/fuzz/corpus/measurement/"
                                      "regression-all-reduce-size-0.json");
    REQUIRE(file.ok());
    REQUIRE(file->data.collectives.front().size_bytes == 0);
    const AcceptanceResult r = run_acceptance(file->data, {});
    REQUIRE_FALSE(r.all_reduce_curve.empty());
    for (const auto& p : r.all_reduce_curve) CHECK(p.size_bytes > 0);
    ReportMeta meta;
    meta.measurement_sha256 = file->sha256_hex;
    const std::string html = render_report(r, meta, ReportFormat::kHtml);
    CHECK(html.size() < 100000);
    CHECK(html.find("<svg") != std::string::npos);
    // A curve that starts at 0 bytes anyway is not drawn (no log axis for it).
    AcceptanceResult zero = r;
    zero.all_reduce_curve.front().size_bytes = 0;
    CHECK(busbw_plot_svg(zero).empty());
    // A JSON report edited into another shape is not ours: refused, never a throw.
    for (const char* edited :
         {R"({"schema": "clustersim.verify-report/1", "measurement": "abc"})",
          R"({"schema": "clustersim.verify-report/1", "measurement": {"sha256": 5}})",
          R"({"schema": "clustersim.verify-report/1"})",
          R"({"schema": "clustersim.verify-report/1", "measurement": {}, "signature": []})"}) {
      INFO(edited);
      auto c = check_report(edited, ReportFormat::kJson, "key");
      CHECK_FALSE(c.ok());
    }
  }
}
