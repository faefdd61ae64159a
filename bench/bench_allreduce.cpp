// All-reduce bandwidth: kiln's collective (the communicator's thread, the
// workers' agreement check, then MPI_Iallreduce) against a direct
// MPI_Allreduce of the same float32 buffer, 4 KB to 16 MB. Run it under
// mpirun; every worker runs the same fixed iterations, worker 0 reports:
//   mpirun -np 2 --oversubscribe --allow-run-as-root --bind-to none build/bench_allreduce
// Bytes per second count the buffer once per all-reduce. Without mpirun it
// is one worker (kiln's all-reduce is then the identity).
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "kiln/comm.h"
#include "kiln/kiln.h"

namespace {
using namespace kiln;

Tensor buffer(int64_t bytes) {
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(bytes / 4), 1.0f),
                             Shape({bytes / 4}));
}

void BM_KilnAllReduce(benchmark::State& state) {
  const Tensor x = buffer(state.range(0));
  comm::Communicator& c = comm::communicator();
  for (auto _ : state) benchmark::DoNotOptimize(c.all_reduce(x, comm::Reduction::kSum, 1)->wait());
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.counters["workers"] = c.size();
}

void BM_MpiAllreduce(benchmark::State& state) {
  const Tensor x = buffer(state.range(0));
  Tensor out = Tensor::empty(DType::kFloat32, x.shape());
  const int n = static_cast<int>(x.num_elements());
  for (auto _ : state)
    MPI_Allreduce(x.raw_data(), out.mutable_raw_data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// Fixed iterations: every worker must run the same number of all-reduces.
void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes = 4096; bytes <= (int64_t{16} << 20); bytes *= 16) b->Arg(bytes);
  b->Iterations(40)->UseRealTime();
}

BENCHMARK(BM_KilnAllReduce)->Apply(sizes);
BENCHMARK(BM_MpiAllreduce)->Apply(sizes);

}  // namespace

int main(int argc, char** argv) {
  // MPI for both: kiln's communicator thread and this thread's direct calls.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "bench_allreduce: MPI lacks MPI_THREAD_MULTIPLE\n");
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  kiln::comm::communicator();  // joins the job now, not inside a timing
  if (rank != 0) std::freopen("/dev/null", "w", stdout);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
