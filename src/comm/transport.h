// Internal: what a communicator's backend provides. Every call comes from the
// communicator's own thread (the one that created the transport), so a
// backend needs no locking and MPI runs with MPI_THREAD_FUNNELED.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kiln/comm.h"
#include "kiln/dtype.h"

namespace kiln::comm::detail {

class Transport {
 public:
  /// A started, non-blocking operation; test() is true once it completed.
  class Op {
   public:
    virtual ~Op() = default;
    virtual bool test() = 0;
  };
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* name() const = 0;

  // The collectives. A pollable all_reduce returns at once and test() tells
  // when it is done (the communicator polls for failures and its timeout
  // meanwhile): the workers' rendezvous. Once every worker has reached the
  // collective, the data moves with calls that may finish before returning
  // (MPI's tuned blocking collectives are faster than its non-blocking ones).
  /// out = reduce(in) over the workers; `r` is kSum, kMax or kMin.
  virtual std::unique_ptr<Op> all_reduce(const void* in, void* out, int64_t count, DType dtype,
                                         Reduction r, bool pollable) = 0;
  /// out = every worker's bytes in rank order; bytes[w] is worker w's size.
  virtual std::unique_ptr<Op> all_gather(const void* in, void* out,
                                         std::span<const int64_t> bytes) = 0;
  /// buf = root's buf.
  virtual std::unique_ptr<Op> broadcast(void* buf, int64_t bytes, int root) = 0;

  /// Sends "this worker failed: message" to every other worker (buffered).
  virtual void send_failure(const std::string& message) = 0;
  /// A failure another worker sent; acknowledges it. False when none arrived.
  virtual bool poll_failure(int& from, std::string& message) = 0;
  /// Acknowledgements of our send_failure received so far.
  virtual int acks() = 0;
  /// Ends the transport (MPI_Finalize); not called after a failure.
  virtual void finalize() = 0;
};

/// Launched by mpirun with more than one process: the size it gives, else 0.
int launcher_size();
/// Starts MPI on the calling thread; throws UnavailableError when it cannot.
std::unique_ptr<Transport> make_mpi_transport();

}  // namespace kiln::comm::detail
