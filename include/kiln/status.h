// Errors mirroring TensorFlow's status codes. kiln reports failures by
// throwing kiln::Error (or a subclass per code); nothing aborts on bad input.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace kiln {

enum class Code {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kFailedPrecondition,
  kOutOfRange,
  kResourceExhausted,
  kUnimplemented,
  kInternal,
  kDataLoss,          ///< a file is truncated or corrupt
  kUnavailable,       ///< a peer (another worker) failed or cannot be reached
  kDeadlineExceeded,  ///< waited longer than the limit (a collective's timeout)
};

/// "InvalidArgument", "NotFound", ...
std::string_view code_name(Code c);

/// Base of all kiln errors. what() is the full message.
class Error : public std::runtime_error {
 public:
  Error(Code code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  Code code() const { return code_; }

 private:
  Code code_;
};

#define KILN_DEFINE_ERROR(Name, C)                           \
  class Name : public Error {                                \
   public:                                                   \
    explicit Name(const std::string& msg) : Error(C, msg) {} \
  };
KILN_DEFINE_ERROR(InvalidArgumentError, Code::kInvalidArgument)
KILN_DEFINE_ERROR(NotFoundError, Code::kNotFound)
KILN_DEFINE_ERROR(FailedPreconditionError, Code::kFailedPrecondition)
KILN_DEFINE_ERROR(OutOfRangeError, Code::kOutOfRange)
KILN_DEFINE_ERROR(ResourceExhaustedError, Code::kResourceExhausted)
KILN_DEFINE_ERROR(UnimplementedError, Code::kUnimplemented)
KILN_DEFINE_ERROR(InternalError, Code::kInternal)
KILN_DEFINE_ERROR(DataLossError, Code::kDataLoss)
KILN_DEFINE_ERROR(UnavailableError, Code::kUnavailable)
KILN_DEFINE_ERROR(DeadlineExceededError, Code::kDeadlineExceeded)
#undef KILN_DEFINE_ERROR

/// Throws the Error subclass for `code` with `msg`.
[[noreturn]] void throw_error(Code code, const std::string& msg);

/// Concatenates printable values (strings, numbers, Shape, DType, ...).
template <typename... Args>
std::string str_cat(const Args&... args);

}  // namespace kiln

#include <sstream>
namespace kiln {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  ((os << args), ...);
  return os.str();
}
}  // namespace kiln

/// Throws InvalidArgumentError with the concatenated message when cond fails.
#define KILN_CHECK_ARG(cond, ...)                                                  \
  do {                                                                             \
    if (!(cond)) throw ::kiln::InvalidArgumentError(::kiln::str_cat(__VA_ARGS__)); \
  } while (0)
