#include "kiln/status.h"

namespace kiln {

std::string_view code_name(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kNotFound: return "NotFound";
    case Code::kFailedPrecondition: return "FailedPrecondition";
    case Code::kOutOfRange: return "OutOfRange";
    case Code::kResourceExhausted: return "ResourceExhausted";
    case Code::kUnimplemented: return "Unimplemented";
    case Code::kInternal: return "Internal";
    case Code::kDataLoss: return "DataLoss";
    case Code::kUnavailable: return "Unavailable";
    case Code::kDeadlineExceeded: return "DeadlineExceeded";
  }
  return "Unknown";
}

void throw_error(Code code, const std::string& msg) {
  switch (code) {
    case Code::kInvalidArgument: throw InvalidArgumentError(msg);
    case Code::kNotFound: throw NotFoundError(msg);
    case Code::kFailedPrecondition: throw FailedPreconditionError(msg);
    case Code::kOutOfRange: throw OutOfRangeError(msg);
    case Code::kResourceExhausted: throw ResourceExhaustedError(msg);
    case Code::kUnimplemented: throw UnimplementedError(msg);
    case Code::kDataLoss: throw DataLossError(msg);
    case Code::kUnavailable: throw UnavailableError(msg);
    case Code::kDeadlineExceeded: throw DeadlineExceededError(msg);
    case Code::kInternal:
    case Code::kOk: break;
  }
  throw InternalError(msg);
}

}  // namespace kiln
