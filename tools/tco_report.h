// How plan, compare and report print the cost of owning against renting
// (models/cost/tco_model.h): a text section, one JSON object, and the one-line verdict.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/cost/tco_model.h"
#include "tools/fabric_bill.h"

namespace clustersim::tools {

// The cost of owning for a planned step: counts the fabric and estimates. REQUIRES:
// scenario.cost.present.
struct Ownership {
  CountedFabric fabric;
  models::TcoResult tco;
};
Ownership estimate_ownership(const models::Scenario& scenario, const models::StepResult& step,
                             const models::RunCost& run);

// plan's "Owning vs renting" section, indented two spaces, ending with a blank line.
std::string ownership_text(const Ownership& o);

// Dollars with three significant digits below $10 ("$0.0712"), else format_usd.
std::string usd_fine(double usd);

// "owning beats renting on demand above 43% utilization; at 80% it pays back in 14 months"
std::string breakeven_line(const models::TcoResult& t);

// The fabric ladder: designs of the same GPU count side by side by what a million tokens costs
// on an owned cluster with each one's fabric priced in ("is InfiniBand worth it at 4, 8, 16, 32
// nodes?"). For each GPU count with two or more entries, every entry against the one whose
// fabric is cheapest.
struct LadderEntry {
  std::string name;
  std::string fabric;  // the NIC id
  int gpus = 0;
  int gpus_per_node = 1;
  double step_time_s = 0;
  const models::TcoResult* tco = nullptr;  // borrowed
};
struct LadderRung {
  int gpus = 0;
  std::size_t cheaper = 0;  // entry with the cheaper fabric
  std::size_t dearer = 0;
  double fabric_premium_usd = 0;  // dearer's fabric - cheaper's
  double capital_share = 0;       // premium / cheaper's capital
  double speedup = 0;             // cheaper's step time / dearer's - 1
  double owned_saving = 0;        // 1 - dearer's owned $/M tokens / cheaper's
  bool pays() const { return owned_saving > 0; }
};
std::vector<LadderRung> fabric_ladder(const std::vector<LadderEntry>& entries);
// "the dearer fabric pays for itself from 128 GPUs (16 nodes) on: ..." with the reason.
std::string ladder_verdict(const std::vector<LadderEntry>& entries,
                           const std::vector<LadderRung>& rungs);
struct LadderTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
LadderTable ladder_table(const std::vector<LadderEntry>& entries,
                         const std::vector<LadderRung>& rungs);
nlohmann::json ladder_json(const std::vector<LadderEntry>& entries,
                           const std::vector<LadderRung>& rungs);

// Every figure of the section, SI units and USD (plan --json's "ownership").
nlohmann::json ownership_json(const Ownership& o);

}  // namespace clustersim::tools
