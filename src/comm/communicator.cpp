// The communicator: the local one (one worker) and the queued one, whose own
// thread runs every collective of the process in the order they were issued,
// checks the workers agree on each, and waits with a timeout while listening
// for other workers' failures.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "comm/transport.h"
#include "core/env.h"
#include "kiln/status.h"

namespace kiln::comm {

Reduction parse_reduction(std::string_view name) {
  if (name == "sum") return Reduction::kSum;
  if (name == "mean") return Reduction::kMean;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  throw InvalidArgumentError(
      str_cat("reduction must be \"sum\", \"mean\", \"max\" or \"min\", got \"", name, "\""));
}

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::kSum: return "sum";
    case Reduction::kMean: return "mean";
    case Reduction::kMax: return "max";
    case Reduction::kMin: return "min";
  }
  return "?";
}

struct Communicator::Parked {
  std::mutex mu;
  int64_t next = 1;
  std::map<int64_t, Ref<Pending>> by_ticket;
};

Communicator::Communicator() : parked_(std::make_shared<Parked>()) {}
Communicator::~Communicator() = default;

int64_t Communicator::park(Ref<Pending> p) {
  std::lock_guard<std::mutex> lock(parked_->mu);
  const int64_t t = parked_->next++;
  parked_->by_ticket.emplace(t, std::move(p));
  return t;
}

Ref<Pending> Communicator::take(int64_t ticket) {
  Ref<Pending> p;
  {
    std::lock_guard<std::mutex> lock(parked_->mu);
    auto it = parked_->by_ticket.find(ticket);
    if (it != parked_->by_ticket.end()) {
      p = std::move(it->second);
      parked_->by_ticket.erase(it);
    }
  }
  if (!p)
    throw InvalidArgumentError(str_cat("no collective is waiting under ticket ", ticket,
                                       " (each CollectiveAllReduceStart's ticket is taken once)"));
  return p;
}

bool can_reduce(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt32 || t == DType::kInt64;
}

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind : int64_t { kAllReduce = 1, kAllGather, kBroadcast, kAgree };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return "all_reduce";
    case Kind::kAllGather: return "all_gather";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kAgree: return "agree";
  }
  return "?";
}

// A collective: its arguments, then its result or error.
class Job final : public Pending {
 public:
  Kind kind = Kind::kAllReduce;
  Tensor x;
  Reduction reduction = Reduction::kSum;
  int root = 0;
  int64_t key = 0;
  bool same_shape = false;      // all_gather: dim 0 must agree too
  std::vector<int64_t> values;  // agree()
  std::string what;             // agree()

  Tensor wait() override {
    // Small collectives finish in tens of microseconds: yield a little
    // before sleeping on the condition variable (a wake-up costs as much).
    for (int i = 0; i < 200 && !ready_.load(std::memory_order_acquire); ++i)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return ready_.load(std::memory_order_relaxed); });
    if (error_) std::rethrow_exception(error_);
    return out_;
  }
  void finish(Tensor out, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mu_);
    out_ = std::move(out);
    error_ = std::move(error);
    ready_.store(true, std::memory_order_release);
    cv_.notify_all();
  }
  std::string describe() const {
    if (kind == Kind::kAgree) return str_cat("agree on ", what);
    std::string s = kind_name(kind);
    if (kind == Kind::kAllReduce) s += str_cat("(", reduction_name(reduction), ")");
    if (kind == Kind::kBroadcast) s += str_cat("(root ", root, ")");
    return str_cat(s, " of ", dtype_name(x.dtype()), x.shape().to_string(), " key ", key);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> ready_{false};  // set under mu_; read without it while spinning
  Tensor out_;
  std::exception_ptr error_;
};

void check_dtype(const Tensor& x, bool reduce) {
  const DType t = x.dtype();
  if (reduce ? !can_reduce(t) : (is_object(t) || t == DType::kInvalid))
    throw InvalidArgumentError(str_cat("collective ",
                                       reduce ? "reductions take float32, float64, int32 or int64"
                                              : "ops take tensors of numbers or bools",
                                       ", got ", dtype_name(t)));
}

void check_gather(const Tensor& x) {
  check_dtype(x, false);
  if (x.rank() < 1) throw InvalidArgumentError("all_gather needs a tensor of rank >= 1");
}

template <typename T>
void divide(Tensor& t, int n) {
  T* p = t.mutable_data<T>();
  for (int64_t i = 0, e = t.num_elements(); i < e; ++i) p[i] = static_cast<T>(p[i] / n);
}

void divide_by(Tensor& t, int n) {
  switch (t.dtype()) {
    case DType::kFloat32: divide<float>(t, n); break;
    case DType::kFloat64: divide<double>(t, n); break;
    case DType::kInt32: divide<int32_t>(t, n); break;
    case DType::kInt64: divide<int64_t>(t, n); break;
    default: break;
  }
}

// One worker's result: x's data in a tensor of its own (tapes tell a
// collective's output from its input).
Ref<Job> finished(const Tensor& x) {
  Ref<Job> j = Ref<Job>::adopt(new Job);
  j->finish(x.view(x.shape()), nullptr);
  return j;
}

double default_timeout() {
  return env_seconds("KILN_COLLECTIVE_TIMEOUT", 600);
}

void check_timeout(double s) {
  if (!(s > 0))
    throw InvalidArgumentError(str_cat("collective timeout must be > 0 seconds, got ", s));
}

// One worker: every collective is the identity.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend() const override { return "local"; }
  Ref<Pending> all_reduce(const Tensor& x, Reduction, int64_t) override {
    check_dtype(x, true);
    return finished(x);
  }
  Ref<Pending> all_gather(const Tensor& x, int64_t, bool) override {
    check_gather(x);
    return finished(x);
  }
  Ref<Pending> broadcast(const Tensor& x, int root, int64_t) override {
    check_dtype(x, false);
    if (root != 0)
      throw InvalidArgumentError(str_cat("broadcast root ", root, " is not a worker of 1"));
    return finished(x);
  }
  void agree(std::span<const int64_t>, std::string_view) override {}
  void fail(std::string_view) override {}
  void set_timeout(double s) override {
    check_timeout(s);
    timeout_ = s;
  }
  double timeout() const override { return timeout_; }

 private:
  double timeout_ = default_timeout();
};

// Several workers: a thread owns the transport and runs the queue in order.
class QueuedCommunicator final : public Communicator {
 public:
  QueuedCommunicator() : timeout_(default_timeout()) {
    std::promise<void> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, &started] {
      try {
        transport_ = detail::make_mpi_transport();
        rank_ = transport_->rank();  // before the constructor returns: no race
        size_ = transport_->size();
        started.set_value();
      } catch (...) {
        started.set_exception(std::current_exception());
        return;
      }
      loop();
    });
    try {
      ready.get();
    } catch (...) {
      thread_.join();
      throw;
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return transport_->name(); }

  Ref<Pending> all_reduce(const Tensor& x, Reduction r, int64_t key) override {
    check_dtype(x, true);
    Ref<Job> j = Ref<Job>::adopt(new Job);
    j->kind = Kind::kAllReduce, j->x = x, j->reduction = r, j->key = key;
    return enqueue(j);
  }
  Ref<Pending> all_gather(const Tensor& x, int64_t key, bool same_shape) override {
    check_gather(x);
    Ref<Job> j = Ref<Job>::adopt(new Job);
    j->kind = Kind::kAllGather, j->x = x, j->key = key, j->same_shape = same_shape;
    return enqueue(j);
  }
  Ref<Pending> broadcast(const Tensor& x, int root, int64_t key) override {
    check_dtype(x, false);
    if (root < 0 || root >= size_)
      throw InvalidArgumentError(str_cat("broadcast root ", root, " is not a worker of ", size_));
    Ref<Job> j = Ref<Job>::adopt(new Job);
    j->kind = Kind::kBroadcast, j->x = x, j->root = root, j->key = key;
    return enqueue(j);
  }
  void agree(std::span<const int64_t> values, std::string_view what) override {
    Ref<Job> j = Ref<Job>::adopt(new Job);
    j->kind = Kind::kAgree, j->values.assign(values.begin(), values.end()), j->what = what;
    enqueue(j)->wait();
  }
  void fail(std::string_view message) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (fail_state_ != kNone) return;
    fail_message_ = message;
    fail_state_ = kRequested;
    cv_.notify_all();
    // The thread sends it and waits for the others to hear it (bounded).
    done_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return fail_state_ == kSent; });
  }
  void set_timeout(double s) override {
    check_timeout(s);
    timeout_.store(s);
  }
  double timeout() const override { return timeout_.load(); }

  // At exit: MPI_Finalize on the thread unless a failure left workers apart.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  enum FailState { kNone, kRequested, kSent };

  Ref<Pending> enqueue(Ref<Job> j) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) throw UnavailableError("the communicator has shut down (the process is exiting)");
    queue_.push_back(j);
    cv_.notify_all();
    return j;
  }

  void loop() {
    for (;;) {
      Ref<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(20),
                     [&] { return !queue_.empty() || stop_ || fail_state_ == kRequested; });
        if (fail_state_ == kRequested) {
          lock.unlock();
          announce_failure(str_cat("worker ", rank_, " failed: ", fail_message_));
          continue;
        }
        if (queue_.empty()) {
          if (stop_) break;
          lock.unlock();
          listen_idle();
          continue;
        }
        job = queue_.front();
        queue_.pop_front();
      }
      run(*job);
    }
    if (!failure_ || clean_failure_) transport_->finalize();
  }

  // Between collectives: hear other workers' failures so that the next
  // collective fails at once.
  void listen_idle() {
    try {
      hear_failures();
    } catch (...) {
      failure_ = std::current_exception();
    }
  }

  void hear_failures() {
    int from = -1;
    std::string message;
    if (failure_ || !transport_->poll_failure(from, message)) return;
    std::fprintf(stderr, "kiln (worker %d): %s; this worker's collectives are abandoned\n", rank_,
                 message.c_str());
    throw UnavailableError(str_cat(message, " (reported by worker ", from,
                                   "); a worker's failure ends every collective of the job"));
  }

  void run(Job& job) {
    Tensor out;
    std::exception_ptr error;
    try {
      if (failure_) std::rethrow_exception(failure_);
      out = execute(job);
    } catch (const Error& e) {
      error = std::current_exception();
      if (!failure_) {
        failure_ = error;
        // Every worker finds a mismatch at once (they all see the check's
        // result), and MPI stays usable: the process may still finalize. A
        // timeout found here: tell the others at once.
        clean_failure_ = e.code() == Code::kFailedPrecondition;
        if (e.code() == Code::kDeadlineExceeded)
          announce_failure(str_cat("worker ", rank_, ": ", e.what()));
      }
    } catch (...) {
      error = std::current_exception();
      if (!failure_) failure_ = error;
    }
    job.finish(std::move(out), std::move(error));
  }

  // Sends the failure and waits (a few seconds at most) for the others'
  // acknowledgements, hearing theirs meanwhile.
  void announce_failure(const std::string& message) {
    if (!failure_) failure_ = std::make_exception_ptr(UnavailableError(message));
    transport_->send_failure(message);
    const auto until = Clock::now() + std::chrono::seconds(5);
    int from;
    std::string theirs;
    while (transport_->acks() < size_ - 1 && Clock::now() < until) {
      transport_->poll_failure(from, theirs);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<std::mutex> lock(mu_);
    fail_state_ = kSent;
    done_cv_.notify_all();
  }

  // Waits for `op`, listening for failures; throws on timeout.
  void wait(detail::Transport::Op& op, const Job& job) {
    const auto start = Clock::now();
    const double limit = timeout_.load();
    for (int spins = 0; !op.test(); ++spins) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (fail_state_ == kRequested)
          throw UnavailableError(str_cat("this worker failed: ", fail_message_));
        if (stop_) throw UnavailableError("the process is exiting with a collective unfinished");
      }
      hear_failures();
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (waited > limit)
        throw DeadlineExceededError(str_cat(
            "collective ", job.describe(), " waited ", limit,
            " s for the other workers: one may be stuck, dead or running a different program "
            "(KILN_COLLECTIVE_TIMEOUT or kiln.distribute's timeout sets the limit)"));
      // Yield at first (MPI progresses only inside MPI_Test), then sleep a
      // little: other processes may need this core.
      if (spins < 2000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Every worker must be about to run the same collective: compare the
  // description with the others' (max and min over workers must agree).
  void check_same(const Job& job, std::span<const int64_t> header, const char* fields[]) {
    const size_t n = header.size();
    std::vector<int64_t> in(2 * n), out(2 * n);
    for (size_t i = 0; i < n; ++i) in[i] = header[i], in[n + i] = -header[i];
    auto op =
        transport_->all_reduce(in.data(), out.data(), 2 * n, DType::kInt64, Reduction::kMax, true);
    wait(*op, job);
    for (size_t i = 0; i < n; ++i) {
      if (out[i] == -out[n + i]) continue;
      if (job.kind == Kind::kAgree && i >= 2)
        throw FailedPreconditionError(str_cat(
            "workers disagree on ", job.what, ": value ", i - 2, " ranges over [", -out[n + i],
            ", ", out[i], "] across workers (this worker has ", header[i], ")"));
      throw FailedPreconditionError(str_cat(
          "workers disagree on collective #", seq_, ": this worker runs ", job.describe(),
          " but the workers' ", fields[i], " ranges over [", -out[n + i], ", ", out[i],
          "]; every worker must run the same program (the same graphs, in the same order)"));
    }
  }

  Tensor execute(Job& job) {
    ++seq_;
    static const char* kFields[] = {"collective kind",
                                    "dtype",
                                    "element count",
                                    "key",
                                    "root, reduction or gather mode",
                                    "rank"};
    const Tensor& x = job.x;
    if (job.kind == Kind::kAgree) {
      std::vector<int64_t> h = {static_cast<int64_t>(job.kind),
                                static_cast<int64_t>(job.values.size())};
      h.insert(h.end(), job.values.begin(), job.values.end());
      check_same(job, h, kFields);
      return {};
    }
    const bool rows_may_differ = job.kind == Kind::kAllGather && !job.same_shape;
    const int64_t inner = rows_may_differ ? inner_elements(x) : x.num_elements();
    const int64_t h[] = {static_cast<int64_t>(job.kind),
                         static_cast<int64_t>(x.dtype()),
                         inner,
                         job.key,
                         job.kind == Kind::kBroadcast   ? job.root
                         : job.kind == Kind::kAllGather ? int64_t{job.same_shape}
                                                        : static_cast<int64_t>(job.reduction),
                         job.kind == Kind::kAllGather ? x.rank() : 0};
    check_same(job, h, kFields);
    switch (job.kind) {
      case Kind::kAllReduce: return reduce(job);
      case Kind::kAllGather: return gather(job);
      case Kind::kBroadcast: return bcast(job);
      case Kind::kAgree: break;
    }
    return {};
  }

  static int64_t inner_elements(const Tensor& x) {
    int64_t n = 1;
    for (int64_t d = 1; d < x.rank(); ++d) n *= x.dim(d);
    return n;
  }

  Tensor reduce(Job& job) {
    const Tensor& x = job.x;
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    const Reduction r = job.reduction == Reduction::kMean ? Reduction::kSum : job.reduction;
    auto op = transport_->all_reduce(x.raw_data(), out.mutable_raw_data(), x.num_elements(),
                                     x.dtype(), r, false);
    wait(*op, job);
    if (job.reduction == Reduction::kMean) divide_by(out, size_);
    return out;
  }

  Tensor gather(Job& job) {
    const Tensor& x = job.x;
    // Each worker's dim 0 first, then the rows.
    std::vector<int64_t> rows(size_), mine = {x.dim(0)};
    std::vector<int64_t> eight(size_, 8);
    auto op = transport_->all_gather(mine.data(), rows.data(), eight);
    wait(*op, job);
    int64_t total = 0;
    std::vector<int64_t> bytes(size_);
    const int64_t row_bytes = inner_elements(x) * static_cast<int64_t>(dtype_size(x.dtype()));
    for (int w = 0; w < size_; ++w) total += rows[w], bytes[w] = rows[w] * row_bytes;
    std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[0] = total;
    Tensor out = Tensor::empty(x.dtype(), Shape(dims));
    auto data = transport_->all_gather(x.raw_data(), out.mutable_raw_data(), bytes);
    wait(*data, job);
    return out;
  }

  Tensor bcast(Job& job) {
    const Tensor& x = job.x;
    Tensor out = Tensor::empty(x.dtype(), x.shape());
    if (rank_ == job.root) std::memcpy(out.mutable_raw_data(), x.raw_data(), x.nbytes());
    auto op =
        transport_->broadcast(out.mutable_raw_data(), static_cast<int64_t>(x.nbytes()), job.root);
    wait(*op, job);
    return out;
  }

  std::thread thread_;
  std::unique_ptr<detail::Transport> transport_;  // the thread's
  int rank_ = 0, size_ = 1;
  std::atomic<double> timeout_;
  int64_t seq_ = 0;             // the thread's
  std::exception_ptr failure_;  // the thread's: set once, fails everything after
  bool clean_failure_ = false;  // the thread's: the failure left MPI usable

  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<Ref<Job>> queue_;
  bool stop_ = false;
  FailState fail_state_ = kNone;
  std::string fail_message_;
};

QueuedCommunicator* g_queued = nullptr;

Communicator* create() {
  if (detail::launcher_size() > 1) {
    auto* q = new QueuedCommunicator;  // never destroyed: in use until exit
    g_queued = q;
    std::atexit([] { g_queued->shutdown(); });
    return q;
  }
  return new LocalCommunicator;
}

}  // namespace

Communicator& communicator() {
  static Communicator* c = create();
  return *c;
}

}  // namespace kiln::comm
