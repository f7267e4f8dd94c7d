#include "tools/scenario_input.h"

#include <charconv>
#include <cstdio>

#include "tools/command_registry.h"

namespace clustersim::tools {

namespace {

std::optional<int> as_int(const std::string& text) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

models::Result<models::Scenario> load_plain(const std::string& path,
                                            const std::vector<models::ScenarioOverride>& overrides,
                                            bool check_layout) {
  if (path.empty()) {
    return models::load_scenario_text(kEmbeddedDefaultScenario, "<embedded default>", overrides,
                                      check_layout);
  }
  return models::load_scenario_file(path, overrides, check_layout);
}

}  // namespace

models::Result<models::Scenario> load_scenario_or_default(
    const std::string& path, const std::vector<models::ScenarioOverride>& overrides,
    bool check_layout) {
  if (overrides.empty()) return load_plain(path, {}, check_layout);
  // dp follows the overridden GPU count or tp/pp/cp, read off the scenario as written.
  auto base = load_plain(path, {}, /*check_layout=*/false);
  if (!base) return base;
  std::vector<models::ScenarioOverride> all = overrides;
  if (auto dp = derived_dp(*base, overrides)) {
    all.push_back({"workload.parallelism.dp", std::to_string(*dp)});
  }
  return load_plain(path, all, check_layout);
}

std::vector<std::string> split_values(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char ch : text) {
    if (quote != 0) {
      if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '[' || ch == '{') {
      ++depth;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    } else if (ch == sep && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += ch;
  }
  out.push_back(cur);
  for (auto& v : out) {
    const auto first = v.find_first_not_of(" \t");
    const auto last = v.find_last_not_of(" \t");
    v = first == std::string::npos ? "" : v.substr(first, last - first + 1);
  }
  return out;
}

models::Status check_set_keys(const std::string& option, const std::vector<std::string>& keys,
                              std::vector<std::string>* seen) {
  for (const std::string& key : keys) {
    if (auto st = models::check_scenario_key(key); !st.ok()) {
      return models::Error{"--set " + option + ": " + st.message()};
    }
    for (const std::string& other : *seen) {
      if (other == key || key.rfind(other + ".", 0) == 0 || other.rfind(key + ".", 0) == 0) {
        return models::Error{"--set " + option + ": " + key + " overlaps " + other +
                             ", set by an earlier key"};
      }
    }
    seen->push_back(key);
  }
  return models::Status::Ok();
}

models::Result<std::vector<models::ScenarioOverride>> parse_set_options(
    const std::vector<std::string>& sets) {
  std::vector<models::ScenarioOverride> out;
  std::vector<std::string> seen;
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return models::Error{"--set " + s + ": expected key=value (e.g. cluster.nodes=16)"};
    }
    const std::string key = s.substr(0, eq);
    if (auto st = check_set_keys(s, {key}, &seen); !st.ok()) return models::Error{st.message()};
    const std::vector<std::string> values = split_values(s.substr(eq + 1), ',');
    if (values.size() > 1) {
      return models::Error{"--set " + s + ": one value here; `clustersim sweep --set " + key +
                           "=v1,v2` runs a list"};
    }
    if (values.front().empty()) return models::Error{"--set " + s + ": an empty value"};
    out.push_back({key, values.front()});
  }
  return out;
}

std::optional<int> derived_dp(const models::Scenario& base,
                              const std::vector<models::ScenarioOverride>& overrides) {
  const models::ParallelismConfig& p = base.workload.parallelism;
  struct Field {
    const char* key;
    int value;
  };
  Field fields[] = {{"cluster.nodes", base.cluster.nodes},
                    {"cluster.node.gpus_per_node", base.cluster.node.gpus_per_node},
                    {"workload.parallelism.tp", p.tp},
                    {"workload.parallelism.pp", p.pp},
                    {"workload.parallelism.cp", p.cp}};
  bool changed = false;
  for (const auto& o : overrides) {
    if (o.key_path == "workload.parallelism.dp") return std::nullopt;
    for (Field& f : fields) {
      if (o.key_path != f.key) continue;
      auto v = as_int(o.value);
      if (!v || *v < 1) return std::nullopt;  // the loader reports it
      f.value = *v;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  const long gpus = long(fields[0].value) * fields[1].value;
  const long model_parallel = long(fields[2].value) * fields[3].value * fields[4].value;
  if (gpus % model_parallel != 0 || gpus / model_parallel == p.dp) return std::nullopt;
  return static_cast<int>(gpus / model_parallel);
}

int fail_bad_input(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "clustersim %s: %s\n", command.c_str(), message.c_str());
  return kExitBadInput;
}

}  // namespace clustersim::tools
