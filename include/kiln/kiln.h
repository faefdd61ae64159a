// The kiln C++ API.
#pragma once
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/control_flow.h"
#include "kiln/dtype.h"
#include "kiln/gradient_tape.h"
#include "kiln/op.h"
#include "kiln/ops.h"
#include "kiln/shape.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/thread_pool.h"
#include "kiln/variable.h"
