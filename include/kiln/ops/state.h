#pragma once
#include "kiln/tensor.h"

namespace kiln {}  // namespace kiln
