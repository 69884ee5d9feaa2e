// Errors that carry their context, and the Result type every fallible call returns.
#pragma once

#include <boost/system/result.hpp>
#include <string>
#include <utility>

namespace nestbox {

// What failed (`step`, a pipeline stage or layer such as "mounts"), on what (`what`, usually a
// path or an option and its value) and why (`code`, an errno, 0 when there is none). Made on the
// line right after the failing call, so errno is still the one that call set.
class Error {
  public:
    Error() = default;  // required by boost::system::result
    Error(std::string step, std::string what, int code = 0)
        : step_(std::move(step)), what_(std::move(what)), code_(code) {}

    // Captures errno now: call it directly after the failing syscall.
    static Error from_errno(std::string step, std::string what);

    const std::string& step() const { return step_; }
    const std::string& what() const { return what_; }
    int code() const { return code_; }

    // "mounts: bind /usr -> /usr: Permission denied"
    std::string message() const;

  private:
    std::string step_;
    std::string what_;
    int code_ = 0;
};

// Called by boost::system::result::value() on an error: a bug, since callers check first.
[[noreturn]] void throw_exception_from_error(const Error& e, const boost::source_location& loc);

template <class T = void>
using Result = boost::system::result<T, Error>;

}  // namespace nestbox

// Propagates an error to the caller: the C++ spelling of Rust's `?`.
#define NESTBOX_TRY(expr)                                            \
    do {                                                             \
        if (auto nestbox_try_result_ = (expr); !nestbox_try_result_) \
            return std::move(nestbox_try_result_).error();           \
    } while (0)

// NOLINTBEGIN(bugprone-macro-parentheses): `decl` is a declaration and cannot be parenthesized.
#define NESTBOX_CONCAT_INNER(a, b) a##b
#define NESTBOX_CONCAT(a, b) NESTBOX_CONCAT_INNER(a, b)
// `NESTBOX_TRY_ASSIGN(auto fd, open_thing());` declares `fd` from a Result's value or returns its
// error.
#define NESTBOX_TRY_ASSIGN(decl, expr) \
    NESTBOX_TRY_ASSIGN_IMPL(NESTBOX_CONCAT(nestbox_try_r_, __LINE__), decl, expr)
#define NESTBOX_TRY_ASSIGN_IMPL(tmp, decl, expr) \
    auto tmp = (expr);                           \
    if (!tmp) return std::move(tmp).error();     \
    decl = std::move(*tmp)
// NOLINTEND(bugprone-macro-parentheses)
