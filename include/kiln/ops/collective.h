// Collective ops across the workers of a job (include/kiln/comm.h): eager
// calls run them at once; in graphs they run in program order, the same on
// every worker. `key` tells collectives apart in the workers' agreement check.
#pragma once
#include <cstdint>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

/// Every worker's x combined element-wise: reduction "sum", "mean", "max" or
/// "min". Differentiable for sum and mean.
Tensor all_reduce(const Tensor& x, std::string_view reduction = "sum", int64_t key = 0);
/// Every worker's x concatenated along axis 0, in rank order.
Tensor all_gather(const Tensor& x, int64_t key = 0);
/// Worker `root`'s x, on every worker.
Tensor broadcast(const Tensor& x, int64_t root = 0, int64_t key = 0);
/// all_reduce in two steps: the start queues it and returns at once (an
/// int64 ticket); the done (given the start's x, reduction and key) waits for
/// it. Between them the worker computes on; graphs move starts early and
/// dones late (the schedule_collectives pass).
Tensor all_reduce_start(const Tensor& x, std::string_view reduction = "sum", int64_t key = 0);
Tensor all_reduce_done(const Tensor& x, const Tensor& ticket, std::string_view reduction = "sum",
                       int64_t key = 0);

}  // namespace kiln
