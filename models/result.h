// Result<T>: a value or an Error for expected failures (bad input, infeasible plan, missing GPU).
// Bugs are not Results: they trip CS_ASSERT, which aborts with file:line.
// Messages carry their context ("scenarios/a.yaml:12:5: fabric.leaf_radix: ...") so that the
// caller can print them as they are.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace clustersim::models {

// An expected failure: one line a user can act on.
struct Error {
  std::string message;
};

// Holds either a T or an Error. Reading value() of an error is a bug (asserts).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}       // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& { check(); return std::get<0>(v_); }
  T& value() & { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // REQUIRES: !ok().
  const Error& error() const {
    if (ok()) {
      std::fprintf(stderr, "%s:%d: Result::error() on a value\n", __FILE__, __LINE__);
      std::abort();
    }
    return std::get<1>(v_);
  }
  const std::string& message() const { return error().message; }

 private:
  void check() const {
    if (!ok()) {
      std::fprintf(stderr, "%s:%d: Result::value() on an error: %s\n", __FILE__, __LINE__,
                   std::get<1>(v_).message.c_str());
      std::abort();
    }
  }
  std::variant<T, Error> v_;
};

// A Result with no value: success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }
  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return error_ ? error_->message : kEmpty;
  }

 private:
  std::optional<Error> error_;
};

}  // namespace clustersim::models

// Aborts with file:line when an invariant the code relies on is false (a bug, not bad input).
#define CS_ASSERT(cond, msg)                                                              \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "%s:%d: assertion failed: %s: %s\n", __FILE__, __LINE__, #cond, \
                   std::string(msg).c_str());                                             \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)
