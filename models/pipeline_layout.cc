#include "models/pipeline_layout.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <utility>

namespace clustersim::models {
namespace {

// The most layers and separators a layout may expand to (a 65,536-stage pipeline of a
// thousand-layer model is far below it); bounds the work a mistyped repeat count can cause.
constexpr std::size_t kMaxExpanded = 1 << 20;

// Reads the repeat count after a '*' at text[*i]; false (with `error`) when there is none.
bool read_count(std::string_view text, std::size_t* i, std::size_t* count, std::string* error) {
  if (*i >= text.size() || text[*i] != '*') {
    *count = 1;
    return true;
  }
  std::size_t j = *i + 1, n = 0;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) {
    n = n * 10 + static_cast<std::size_t>(text[j] - '0');
    if (n > kMaxExpanded) {
      *error = "repeat count at position " + std::to_string(*i + 1) + " is too large";
      return false;
    }
    ++j;
  }
  if (j == *i + 1) {
    *error = "'*' at position " + std::to_string(*i + 1) + " needs a count after it";
    return false;
  }
  *i = j;
  *count = n;
  return true;
}

bool append(std::string* out, std::string_view what, std::size_t times, std::string* error) {
  if (out->size() + what.size() * times > kMaxExpanded) {
    *error = "expands to more than " + std::to_string(kMaxExpanded) + " entries";
    return false;
  }
  for (std::size_t k = 0; k < times; ++k) out->append(what);
  return true;
}

// The layout with its commas dropped and its repeats written out.
bool expand(std::string_view text, std::string* out, std::string* error) {
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ',' || c == ' ') {
      ++i;
    } else if (c == '(') {
      std::string group;
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != ')'; ++j) {
        if (text[j] == '(') {
          *error = "nested parentheses at position " + std::to_string(j + 1) +
                   " (Megatron-Core's layouts repeat one level of groups)";
          return false;
        }
        if (text[j] != ',' && text[j] != ' ') group.push_back(text[j]);
      }
      if (j == text.size()) {
        *error = "'(' at position " + std::to_string(i + 1) + " is not closed";
        return false;
      }
      std::string inner;
      if (!expand(group, &inner, error)) return false;
      i = j + 1;
      std::size_t times = 1;
      if (!read_count(text, &i, &times, error) || !append(out, inner, times, error)) return false;
    } else if (c == ')') {
      *error = "')' at position " + std::to_string(i + 1) + " has no '('";
      return false;
    } else if (c == '*') {
      *error = "'*' at position " + std::to_string(i + 1) + " follows nothing to repeat";
      return false;
    } else {
      ++i;
      std::size_t times = 1;
      if (!read_count(text, &i, &times, error) ||
          !append(out, std::string_view(&c, 1), times, error)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool parse_pipeline_layout(std::string_view text, PipelineLayout* out, std::string* error) {
  std::string flat;
  if (!expand(text, &flat, error)) return false;
  PipelineLayout layout;
  layout.text = std::string(text);
  layout.chunk_layers.push_back(0);
  int embeddings = 0, losses = 0;
  bool mtp_seen = false;
  std::size_t mtp_chunk = 0;
  for (std::size_t k = 0; k < flat.size(); ++k) {
    const char c = flat[k];
    const bool first = k == 0, last = k + 1 == flat.size();
    switch (c) {
      case '|':
        layout.chunk_layers.push_back(0);
        break;
      case 't':
        if (mtp_seen) {
          *error = "a decoder layer (t) after a multi-token-prediction layer (m): the m layers "
                   "follow the model's last layer";
          return false;
        }
        ++layout.chunk_layers.back();
        break;
      case 'm':
        mtp_seen = true;
        mtp_chunk = layout.chunk_layers.size() - 1;
        ++layout.mtp_layers;
        break;
      case 'E':
        ++embeddings;
        if (!first) {
          *error = "the embedding (E) must come first, once";
          return false;
        }
        break;
      case 'L':
        ++losses;
        if (!last) {
          *error = "the output head and loss (L) must come last, once";
          return false;
        }
        break;
      default:
        *error = std::string("unknown layer '") + c +
                 "' (E embedding, t decoder layer, m multi-token prediction, L loss; '|' ends a "
                 "chunk, '*n' and '(...)*n' repeat)";
        return false;
    }
  }
  if (embeddings != 1 || losses != 1) {
    *error = embeddings != 1 ? "the embedding (E) must come first, once"
                             : "the output head and loss (L) must come last, once";
    return false;
  }
  if (mtp_seen && mtp_chunk + 1 != layout.chunk_layers.size()) {
    *error = "the multi-token-prediction layers (m) must sit in the last chunk, with the loss "
             "(a standalone MTP stage is not modelled)";
    return false;
  }
  *out = std::move(layout);
  return true;
}

std::string balanced_pipeline_layout(int layers, int chunks, int mtp_layers) {
  std::string s = "E";
  for (int c = 0; c < chunks; ++c) {
    if (c > 0) s += "|";
    s += "t*" + std::to_string(layers / chunks + (c < layers % chunks ? 1 : 0));
  }
  return s + std::string(static_cast<size_t>(std::max(0, mtp_layers)), 'm') + "L";
}

}  // namespace clustersim::models
