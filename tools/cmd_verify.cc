// `clustersim verify`: three jobs of "verify before you pay".
//   verify MEASUREMENTS.json [--expect SKU] [--gpus N] [--nics N --nic ID] [--report F.md|.html|
//          .json]... [--sign-key KEY] [--json]: the acceptance verdict per docs/acceptance-checks.md
//          (validate/acceptance.h); exit 0 when nothing failed, 1 when a check failed.
//   verify --check-report REPORT [--sign-key KEY] [MEASUREMENTS.json]: is the report's HMAC
//          right, and does it judge these measurement bytes? exit 0 yes, 1 no.
//   verify --claim "all_reduce 2GB 18ms" [--scenario FILE] | --claims FILE | --scenario FILE
//          (its own `claims:`): is a figure physically possible (models/claims.h)? exit 1 when
//          one is IMPOSSIBLE.
// A key file's bytes are the key (one trailing newline dropped).
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "models/claims.h"
#include "models/text_file.h"
#include "models/units.h"
#include "tools/command_line.h"
#include "tools/command_registry.h"
#include "tools/scenario_input.h"
#include "tools/text_table.h"
#include "validate/acceptance.h"
#include "validate/measurement_samples.h"
#include "validate/report.h"
#include "validate/sha256.h"

namespace clustersim::tools {
namespace {

struct VerifyArgs {
  std::string file;
  validate::AcceptanceExpectation expect;
  std::vector<std::string> reports;
  std::string sign_key;
  std::string check_report;
  std::vector<std::string> claims;
  std::string claims_file;
  std::string scenario;
  bool json = false;
};

constexpr const char* kCmd = "verify";

models::Result<std::string> read_key(const std::string& path) {
  auto k = models::read_text_file(path);
  if (!k) return models::Error{"--sign-key: " + k.message()};
  std::string key = *k;
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (key.empty()) return models::Error{"--sign-key: " + path + " is empty"};
  return key;
}

// ---- claims ------------------------------------------------------------------------------------

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string claim_value(double v, const std::string& unit) {
  if (unit == "s") return models::format_time(v);
  if (unit == "B/s") return models::format_bandwidth(v) + " (" + models::format_bandwidth_bits(v) + ")";
  if (unit == "FLOP") return sci(v) + " FLOP";
  return models::format_significant(v, 4) + " " + unit;
}

nlohmann::json claim_json(const models::ClaimResult& r) {
  return {{"id", r.id},
          {"kind", models::to_string(r.kind)},
          {"says", r.says},
          {"source", r.source},
          {"hardware", r.hardware},
          {"verdict", models::to_string(r.verdict)},
          {"claimed", {{"value", r.claimed}, {"unit", r.unit}}},
          {"floor",
           {{"value", r.floor}, {"unit", r.unit}, {"kind", r.floor_kind}, {"why", r.floor_why}}},
          {"achievable_floor", {{"value", r.achievable_floor}, {"why", r.achievable_why}}},
          {"required_fraction", r.required_fraction},
          {"conditions", r.conditions},
          {"notes", r.notes}};
}

int run_claims(const VerifyArgs& a) {
  std::vector<models::Claim> claims;
  if (!a.claims_file.empty()) {
    auto loaded = models::load_claims_file(a.claims_file);
    if (!loaded) return fail_bad_input(kCmd, loaded.message());
    claims = std::move(*loaded);
  }
  if (!a.claims.empty()) {
    auto scenario = load_scenario_or_default(a.scenario);
    if (!scenario) return fail_bad_input(kCmd, scenario.message());
    for (const auto& line : a.claims) {
      auto c = models::parse_claim_line(line, scenario->cluster, scenario->path);
      if (!c) return fail_bad_input(kCmd, c.message());
      claims.push_back(std::move(*c));
    }
  } else if (a.claims_file.empty()) {  // --scenario alone: the claims it carries
    auto scenario = models::load_scenario_file(a.scenario);
    if (!scenario) return fail_bad_input(kCmd, scenario.message());
    if (!scenario->claims || scenario->claims->empty()) {
      return fail_bad_input(kCmd, a.scenario +
                                      " has no claims: list (add one, or give --claim "
                                      "\"all_reduce 2GB 18ms\")");
    }
    claims = *scenario->claims;
  }
  std::vector<models::ClaimResult> results;
  bool impossible = false;
  for (const auto& c : claims) {
    results.push_back(models::evaluate_claim(c));
    impossible |= results.back().verdict == models::ClaimVerdict::kImpossible;
  }
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : results) arr.push_back(claim_json(r));
    std::printf("%s\n", nlohmann::json{{"claims", arr}}.dump(2).c_str());
  } else {
    for (const auto& r : results) {
      std::printf("%-20s %s: %s\n", std::string(models::to_string(r.verdict)).c_str(), r.id.c_str(),
                  r.says.c_str());
      if (!r.hardware.empty()) std::printf("    on:       %s\n", r.hardware.c_str());
      std::printf("    claimed:  %s\n", claim_value(r.claimed, r.unit).c_str());
      std::printf("    floor:    %s %s (%s of it needed): %s\n",
                  r.floor_kind == "minimum" ? "at least" : "at most",
                  claim_value(r.floor, r.unit).c_str(),
                  models::format_percent(r.required_fraction).c_str(), r.floor_why.c_str());
      if (!r.achievable_why.empty()) {
        std::printf("    protocol: %s %s: %s\n", r.floor_kind == "minimum" ? "at least" : "at most",
                    claim_value(r.achievable_floor, r.unit).c_str(), r.achievable_why.c_str());
      }
      for (const auto& c : r.conditions) std::printf("    only if:  %s\n", c.c_str());
      for (const auto& n : r.notes) std::printf("    note:     %s\n", n.c_str());
      std::printf("\n");
    }
  }
  return impossible ? kExitCheckFailed : kExitOk;
}

// ---- reports -----------------------------------------------------------------------------------

int run_check_report(const VerifyArgs& a) {
  auto format = validate::report_format_for(a.check_report);
  if (!format) return fail_bad_input(kCmd, "--check-report: " + format.message());
  auto text = models::read_text_file(a.check_report);
  if (!text) return fail_bad_input(kCmd, "--check-report: " + text.message());
  std::string key;
  if (!a.sign_key.empty()) {
    auto k = read_key(a.sign_key);
    if (!k) return fail_bad_input(kCmd, k.message());
    key = *k;
  }
  auto check = validate::check_report(*text, *format, key);
  if (!check) return fail_bad_input(kCmd, a.check_report + ": " + check.message());
  bool ok = true;
  std::printf("report %s judges measurement bytes with SHA-256 %s\n", a.check_report.c_str(),
              check->measurement_sha256.c_str());
  if (!key.empty()) {
    const char* what = !check->has_signature   ? "MISSING (the report is not signed)"
                       : check->signature_valid ? "valid"
                                                : "INVALID (edited, or another key)";
    std::printf("signature: %s\n", what);
    ok &= check->has_signature && check->signature_valid;
  } else {
    std::printf("signature: %s (give --sign-key to check it)\n",
                check->has_signature ? "present, not checked" : "none");
  }
  if (!a.file.empty()) {
    auto bytes = models::read_text_file(a.file);
    if (!bytes) return fail_bad_input(kCmd, bytes.message());
    const std::string digest = validate::sha256_hex(*bytes);
    const bool same = digest == check->measurement_sha256;
    std::printf("measurement %s: SHA-256 %s %s\n", a.file.c_str(), digest.c_str(),
                same ? "matches" : "DIFFERS (the report judged other bytes)");
    ok &= same;
  }
  return ok ? kExitOk : kExitCheckFailed;
}

int run_acceptance(const VerifyArgs& a) {
  auto file = validate::load_measurement_file(a.file);
  if (!file) return fail_bad_input(kCmd, file.message());
  if (!a.expect.sku.empty() && models::find_gpu(a.expect.sku) == nullptr) {
    return fail_bad_input(kCmd, "--expect: unknown GPU '" + a.expect.sku + "' (known: " +
                                    models::known_gpu_ids() + ")");
  }
  if (!a.expect.nic.empty() && models::find_nic(a.expect.nic) == nullptr) {
    return fail_bad_input(kCmd, "--nic: unknown NIC '" + a.expect.nic + "' (known: " +
                                    models::known_nic_ids() + ")");
  }
  std::string key;
  if (!a.sign_key.empty()) {
    auto k = read_key(a.sign_key);
    if (!k) return fail_bad_input(kCmd, k.message());
    key = *k;
  }
  std::vector<validate::ReportFormat> formats;
  for (const auto& path : a.reports) {
    auto f = validate::report_format_for(path);
    if (!f) return fail_bad_input(kCmd, "--report: " + f.message());
    formats.push_back(*f);
  }
  const validate::Measurement& m = file->data;
  const validate::AcceptanceResult result = validate::run_acceptance(m, a.expect);
  validate::ReportMeta meta;
  meta.measurement_path = file->path;
  meta.measurement_sha256 = file->sha256_hex;
  meta.measured_utc = m.run.finished_utc;
  for (const auto& h : m.hosts) meta.hosts += (meta.hosts.empty() ? "" : ", ") + h.hostname;
  meta.tool_version = kToolVersion;
  meta.expect = a.expect;
  auto signed_if = [&](std::string text, validate::ReportFormat f) {
    return key.empty() ? text : validate::sign_report(text, f, key);
  };
  for (std::size_t i = 0; i < a.reports.size(); ++i) {
    std::ofstream out(a.reports[i], std::ios::binary);
    out << signed_if(validate::render_report(result, meta, formats[i]), formats[i]);
    if (!out) return fail_bad_input(kCmd, "--report: cannot write " + a.reports[i]);
  }
  if (a.json) {
    std::printf("%s", signed_if(validate::render_report(result, meta, validate::ReportFormat::kJson),
                                validate::ReportFormat::kJson)
                          .c_str());
  } else {
    std::printf("clustersim verify: %s (sha256 %s)\n", file->path.c_str(), file->sha256_hex.c_str());
    std::printf("  %d x %s, %d node(s)\n\n", result.gpus, result.sku.c_str(), result.nodes);
    TextTable t({"#", "check", "status", "measured", "threshold"},
                {TextTable::Align::kRight, TextTable::Align::kLeft, TextTable::Align::kLeft,
                 TextTable::Align::kLeft, TextTable::Align::kLeft});
    for (const auto& c : result.checks) {
      t.add_row({std::to_string(c.number), c.id, std::string(validate::to_string(c.status)),
                 c.measured.empty() ? "-" : c.measured, c.threshold.empty() ? "-" : c.threshold});
    }
    std::printf("%s\n", t.render(2).c_str());
    for (const auto& c : result.checks) {
      if (c.status == validate::CheckStatus::kPass) continue;
      std::printf("  %s %s: %s\n", std::string(validate::to_string(c.status)).c_str(), c.id.c_str(),
                  c.why.c_str());
    }
    std::printf("\nVerdict: %s\n", std::string(validate::overall_verdict(result)).c_str());
    for (const auto& r : a.reports) std::printf("  report written to %s%s\n", r.c_str(), key.empty() ? "" : " (signed)");
  }
  return result.any_failed() ? kExitCheckFailed : kExitOk;
}

int run_verify(const VerifyArgs& a) {
  // --scenario without a measurement file judges the scenario's own claims.
  const bool claims =
      !a.claims.empty() || !a.claims_file.empty() || (!a.scenario.empty() && a.file.empty());
  if (!a.check_report.empty()) return run_check_report(a);
  if (claims) {
    if (!a.file.empty()) return fail_bad_input(kCmd, "judge claims or a measurement file, not both");
    return run_claims(a);
  }
  if (a.file.empty()) {
    return fail_bad_input(kCmd, "give a measurement file, --claim, --claims or --check-report");
  }
  return run_acceptance(a);
}

const bool kRegistered = register_command(
    {"verify", "acceptance verdict for a rented cluster; is a claimed figure physically possible",
     72, [](CommandLine& sub) -> CommandAction {
       auto a = std::make_shared<VerifyArgs>();
       sub.add_option("measurements", a->file, "a measurement file (clustersim validate)");
       sub.add_option("--expect", a->expect.sku, "the promised GPU (catalog id, e.g. h200-sxm)");
       sub.add_option("--gpus", a->expect.gpus, "the promised number of GPUs");
       sub.add_option("--nics", a->expect.nics_per_node, "the promised NICs per node");
       sub.add_option("--nic", a->expect.nic, "the promised NIC (catalog id, default ib-ndr)");
       sub.add_option("--report", a->reports, "write the report: .md, .html or .json (repeatable)");
       sub.add_option("--sign-key", a->sign_key, "file whose bytes key the reports' HMAC-SHA256");
       sub.add_option("--check-report", a->check_report,
                      "check a report's signature (and, with a measurement file, its digest)");
       sub.add_option("--claim", a->claims,
                      "a figure to hold to physics: \"all_reduce 2GB 18ms\" (repeatable)");
       sub.add_option("--claims", a->claims_file, "a claims file (scenarios/seed/claims.yaml)");
       sub.add_option("--scenario", a->scenario,
                      "the hardware of --claim (default: embedded); alone: judge its claims:");
       sub.add_flag("--json", a->json, "machine output");
       return [a] { return run_verify(*a); };
     },
     {"clustersim verify scenarios/measurements/h200-2gpu.json",
      "clustersim verify --claim \"all_reduce 2GB 18ms\" --scenario scenarios/h200-8gpu.yaml"}});

}  // namespace
}  // namespace clustersim::tools
