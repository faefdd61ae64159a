// The communicator: collectives across the processes of one job (workers),
// behind the collective ops (CollectiveAllReduce, ...). One per process.
// Launched by `mpirun -np N`, it runs on MPI; without a launcher it is one
// worker and every collective is the identity.
//
// Every worker must issue the same collectives in the same order (graphs do:
// collectives run in program order). Each collective is checked first: the
// workers compare its kind, dtype, size and key, so mismatched programs fail
// with a clear error instead of exchanging the wrong bytes. A worker that
// fails tells the others (fail()); they raise UnavailableError from their
// current or next collective. A collective that waits longer than timeout()
// raises DeadlineExceededError. After either, every later collective fails.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kiln/refcount.h"
#include "kiln/tensor.h"

namespace kiln::comm {

/// How all_reduce combines the workers' values (mean divides the sum by the
/// number of workers; integer means truncate, as TensorFlow's).
enum class Reduction : uint8_t { kSum, kMean, kMax, kMin };
/// "sum", "mean", "max" or "min"; InvalidArgumentError otherwise.
Reduction parse_reduction(std::string_view name);
const char* reduction_name(Reduction r);
/// The dtypes all_reduce takes: float32, float64, int32, int64.
bool can_reduce(DType t);

/// A queued collective. wait() returns its result or throws its error.
class Pending : public RefCounted {
 public:
  virtual Tensor wait() = 0;
};

class Communicator {
 public:
  Communicator();
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi" or "local".
  virtual const char* backend() const = 0;

  /// Element-wise reduction of every worker's x (same dtype and shape on all).
  virtual Ref<Pending> all_reduce(const Tensor& x, Reduction r, int64_t key) = 0;
  /// Every worker's x concatenated along axis 0 in rank order. Dim 0 may
  /// differ between workers unless `same_shape` (then a difference fails every
  /// worker in the agreement check); the other dims may not.
  virtual Ref<Pending> all_gather(const Tensor& x, int64_t key, bool same_shape = false) = 0;
  /// Worker `root`'s x on every worker.
  virtual Ref<Pending> broadcast(const Tensor& x, int root, int64_t key) = 0;

  /// Blocks until every worker has called agree(); throws
  /// FailedPreconditionError naming `what` when their values differ.
  virtual void agree(std::span<const int64_t> values, std::string_view what) = 0;
  /// Tells the other workers that this one failed with `message` (waits a
  /// few seconds at most for them to hear it); later collectives fail here too.
  virtual void fail(std::string_view message) = 0;
  /// The longest a collective waits for the other workers, in seconds
  /// (default: the environment's KILN_COLLECTIVE_TIMEOUT, else 600).
  virtual void set_timeout(double seconds) = 0;
  virtual double timeout() const = 0;

  /// Keeps a queued collective under a ticket (CollectiveAllReduceStart);
  /// take() hands it back once (CollectiveAllReduceDone).
  int64_t park(Ref<Pending> p);
  Ref<Pending> take(int64_t ticket);

 private:
  struct Parked;
  std::shared_ptr<Parked> parked_;
};

/// The process's communicator, created on first use: MPI when launched by
/// mpirun (OMPI_COMM_WORLD_SIZE, PMIX_SIZE or PMI_SIZE above 1), otherwise
/// local. Throws UnavailableError when MPI cannot start.
Communicator& communicator();

}  // namespace kiln::comm
