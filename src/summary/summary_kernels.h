// Internal: the CPU kernels of the summary ops (WriteSummary,
// WriteRawProtoSummary, WriteGraphSummary, FlushSummaryWriter,
// CloseSummaryWriter), bound into the op table by the registry.
#pragma once
#include "kiln/op.h"

namespace kiln::summary {
void bind_summary_kernels(OpTableBuilder& t);
}  // namespace kiln::summary
