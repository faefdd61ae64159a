// Collectives across two processes: run by CTest as
//   mpirun -np 2 comm_mpi_check <scenario>
// Each scenario prints "rank R: <scenario> ok" on success (CTest matches it)
// and exits non-zero with the failed check otherwise.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "kiln/comm.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

int g_rank = 0;

void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", g_rank, what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

template <typename F>
std::string error_of(F&& f, Code want) {
  try {
    f();
  } catch (const Error& e) {
    require(e.code() == want, str_cat("wanted code ", code_name(want), ", got ",
                                      code_name(e.code()), ": ", e.what()));
    return e.what();
  }
  require(false, "no error was raised");
  return {};
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Sums, means, extremes, gathers of uneven rows, broadcasts, the ops, tickets.
void collectives(comm::Communicator& c) {
  const int r = c.rank();
  const Tensor x = Tensor::from_vector<float>({1.0f + r, 10.0f * (r + 1)}, Shape({2}));
  auto get = [](const Tensor& t) { return t.to_vector<float>(); };
  require(get(c.all_reduce(x, comm::Reduction::kSum, 1)->wait()) == std::vector<float>{3, 30},
          "sum");
  require(get(c.all_reduce(x, comm::Reduction::kMean, 2)->wait()) == std::vector<float>{1.5, 15},
          "mean");
  require(get(c.all_reduce(x, comm::Reduction::kMax, 3)->wait()) == std::vector<float>{2, 20},
          "max");
  require(get(c.all_reduce(x, comm::Reduction::kMin, 4)->wait()) == std::vector<float>{1, 10},
          "min");
  const Tensor n = Tensor::from_vector<int64_t>({7 + r}, Shape({1}));
  require(c.all_reduce(n, comm::Reduction::kMean, 5)->wait().to_vector<int64_t>() ==
              std::vector<int64_t>{7},
          "integer mean truncates (15 / 2)");
  // Worker 0 gives one row, worker 1 two.
  std::vector<int32_t> rows =
      r == 0 ? std::vector<int32_t>{1, 2} : std::vector<int32_t>{3, 4, 5, 6};
  const Tensor g = c.all_gather(Tensor::from_vector<int32_t>(rows, Shape({r + 1, 2})), 6)->wait();
  require(g.shape() == Shape({3, 2}), "gather shape " + g.shape().to_string());
  require(g.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4, 5, 6}, "gather values");
  const Tensor b = c.broadcast(Tensor::from_vector<double>({100.0 * r}, Shape({1})), 1, 7)->wait();
  require(b.to_vector<double>() == std::vector<double>{100.0}, "broadcast from worker 1");
  // The ops, eagerly, and a start/done pair around other work.
  require(get(all_reduce(x, "sum")) == std::vector<float>{3, 30}, "CollectiveAllReduce");
  const Tensor t = all_reduce_start(x, "mean", 9);
  const Tensor busy = reduce_sum(x * 2.0f);
  require(get(all_reduce_done(x, t, "mean", 9)) == std::vector<float>{1.5, 15}, "start/done");
  require(busy.item<float>() > 0, "work between start and done");
  require(all_gather(Tensor::from_vector<float>({1.0f * r}, Shape({1}))).num_elements() == 2,
          "CollectiveAllGather");
  require(broadcast(x, 0).to_vector<float>() == std::vector<float>{1, 10}, "CollectiveBroadcast");
  const int64_t same[] = {42, 7};
  c.agree(same, "equal values");
}

// Worker 1 runs a different collective: both fail with a clear error.
void mismatch(comm::Communicator& c) {
  const Tensor x =
      Tensor::from_vector<float>(std::vector<float>(4 + c.rank(), 1.0f), Shape({4 + c.rank()}));
  const std::string e = error_of([&] { c.all_reduce(x, comm::Reduction::kSum, 3)->wait(); },
                                 Code::kFailedPrecondition);
  require(contains(e, "workers disagree on collective") && contains(e, "element count"), e);
  // Everything after a failure fails at once.
  error_of([&] { c.all_reduce(x, comm::Reduction::kSum, 3)->wait(); }, Code::kFailedPrecondition);
}

// The op needs the same shape on every worker: uneven rows fail them all.
void gather_shapes(comm::Communicator& c) {
  const Tensor x =
      Tensor::from_vector<float>(std::vector<float>(c.rank() + 1, 1.0f), Shape({c.rank() + 1}));
  const std::string e = error_of([&] { all_gather(x); }, Code::kFailedPrecondition);
  require(contains(e, "workers disagree on collective") && contains(e, "all_gather"), e);
}

// Values agree() finds different.
void disagree(comm::Communicator& c) {
  const int64_t mine[] = {5, c.rank()};
  const std::string e =
      error_of([&] { c.agree(mine, "the graph of 'step'"); }, Code::kFailedPrecondition);
  require(contains(e, "workers disagree on the graph of 'step'"), e);
}

// Worker 1 never joins: worker 0 times out, tells worker 1, which hears it.
void timeout(comm::Communicator& c) {
  const Tensor x = Tensor::from_vector<float>({1.0f}, Shape({1}));
  if (c.rank() == 0) {
    c.set_timeout(1.0);
    const std::string e = error_of([&] { c.all_reduce(x, comm::Reduction::kSum, 1)->wait(); },
                                   Code::kDeadlineExceeded);
    require(contains(e, "waited 1 s for the other workers"), e);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const std::string e =
        error_of([&] { c.all_reduce(x, comm::Reduction::kSum, 1)->wait(); }, Code::kUnavailable);
    require(contains(e, "waited 1 s"), e);
  }
}

// Worker 1 fails and exits; worker 0, waiting in a collective, hears it.
void failure(comm::Communicator& c) {
  const Tensor x = Tensor::from_vector<float>({1.0f}, Shape({1}));
  if (c.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.fail("RuntimeError: boom");
    std::printf("rank 1: failure ok\n");
    std::fflush(stdout);
    std::_Exit(3);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string e =
      error_of([&] { c.all_reduce(x, comm::Reduction::kSum, 1)->wait(); }, Code::kUnavailable);
  require(contains(e, "worker 1 failed: RuntimeError: boom"), e);
  require(std::chrono::steady_clock::now() - start < std::chrono::seconds(20), "heard it in time");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "collectives";
  comm::Communicator& c = comm::communicator();
  g_rank = c.rank();
  require(c.size() == 2 && std::string(c.backend()) == "mpi", "two MPI workers");
  if (scenario == "collectives")
    collectives(c);
  else if (scenario == "mismatch")
    mismatch(c);
  else if (scenario == "disagree")
    disagree(c);
  else if (scenario == "gather_shapes")
    gather_shapes(c);
  else if (scenario == "timeout")
    timeout(c);
  else if (scenario == "failure")
    failure(c);
  else
    require(false, "unknown scenario " + scenario);
  std::printf("rank %d: %s ok\n", c.rank(), scenario.c_str());
  std::fflush(stdout);
  // After a failure the communicator skips MPI_Finalize and mpirun ends the
  // job when one worker exits: give the other time to print its line.
  if (scenario != "collectives") std::this_thread::sleep_for(std::chrono::seconds(1));
  return 0;
}
