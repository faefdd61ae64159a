// All op front functions. Each runs eagerly or is recorded while tracing.
#pragma once
#include "kiln/ops/binary.h"
