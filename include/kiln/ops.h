// All op front functions. Each runs eagerly or is recorded while tracing.
#pragma once
#include "kiln/ops/array.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/select_cast.h"
#include "kiln/ops/state.h"
#include "kiln/ops/unary.h"
