// Helpers the profile's writers share.
#pragma once

#include <string>

namespace kiln::profiler::internal {

/// This machine's host name ("localhost" when it has none): the profile's
/// file names and the XSpace's hostname.
std::string host_name();

}  // namespace kiln::profiler::internal
