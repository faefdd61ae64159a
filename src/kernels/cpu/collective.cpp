// CPU kernels of the collective ops: each hands its input to the process's
// communicator (kiln/comm.h) and waits, or parks the wait under a ticket.
#include "bind.h"
#include "kiln/comm.h"

namespace kiln::cpu {
namespace {

comm::Reduction reduction(const KernelContext& c) {
  return comm::parse_reduction(c.attr_string("reduction"));
}

void all_reduce_kernel(KernelContext& c) {
  c.set_output(
      0, comm::communicator().all_reduce(c.input(0), reduction(c), c.attr_int("key"))->wait());
}

// The op's output shape is dim 0 times the workers (inference): every
// worker must give the same shape, which the workers check.
void all_gather_kernel(KernelContext& c) {
  c.set_output(0, comm::communicator().all_gather(c.input(0), c.attr_int("key"), true)->wait());
}

void broadcast_kernel(KernelContext& c) {
  const int64_t root = c.attr_int("root");
  comm::Communicator& w = comm::communicator();
  if (root >= w.size()) c.fail("root ", root, " is not a worker (the job has ", w.size(), ")");
  c.set_output(0, w.broadcast(c.input(0), static_cast<int>(root), c.attr_int("key"))->wait());
}

void start_kernel(KernelContext& c) {
  comm::Communicator& w = comm::communicator();
  const int64_t ticket = w.park(w.all_reduce(c.input(0), reduction(c), c.attr_int("key")));
  c.allocate_output(0).mutable_data<int64_t>()[0] = ticket;
}

void done_kernel(KernelContext& c) {
  c.set_output(0, comm::communicator().take(c.input(1).item<int64_t>())->wait());
}

}  // namespace

void bind_collective_kernels(OpTableBuilder& t) {
  t.kernel(OpId::CollectiveAllReduce, all_reduce_kernel);
  t.kernel(OpId::CollectiveAllGather, all_gather_kernel);
  t.kernel(OpId::CollectiveBroadcast, broadcast_kernel);
  t.kernel(OpId::CollectiveAllReduceStart, start_kernel);
  t.kernel(OpId::CollectiveAllReduceDone, done_kernel);
}

}  // namespace kiln::cpu
