// The MPI backend: two duplicates of MPI_COMM_WORLD, one for the
// collectives (MPI_Iallreduce for the workers' rendezvous, then the blocking,
// tuned MPI_Allreduce, MPI_Allgatherv, MPI_Bcast for the data), one for
// failure messages and their acknowledgements.
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "comm/transport.h"
#include "core/env.h"
#include "kiln/status.h"

namespace kiln::comm::detail {

int launcher_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"})
    if (const std::string s = env(var); !s.empty()) return std::atoi(s.c_str());
  return 0;
}

namespace {

constexpr int kFailTag = 1, kAckTag = 2;

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  return std::string(text, n);
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw UnavailableError(str_cat(call, " failed: ", mpi_error(code)));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kFloat64: return MPI_DOUBLE;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    default: throw InvalidArgumentError(str_cat("MPI reduction of ", dtype_name(t)));
  }
}

int mpi_count(int64_t n, const char* what) {
  if (n > INT_MAX)
    throw InvalidArgumentError(
        str_cat(what, " of ", n, " elements: MPI takes at most ", INT_MAX, " per call"));
  return static_cast<int>(n);
}

class MpiOp final : public Transport::Op {
 public:
  MPI_Request req = MPI_REQUEST_NULL;  // null: the call already finished
  bool test() override {
    int flag = 0;
    check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    return flag != 0;
  }
};

class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw UnavailableError("MPI_Init_thread failed: kiln cannot join the MPI job");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &data_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &ctrl_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ctrl_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(data_, &rank_);
    MPI_Comm_size(data_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  std::unique_ptr<Op> all_reduce(const void* in, void* out, int64_t count, DType dtype, Reduction r,
                                 bool pollable) override {
    auto op = std::make_unique<MpiOp>();
    MPI_Op mop = r == Reduction::kMax ? MPI_MAX : r == Reduction::kMin ? MPI_MIN : MPI_SUM;
    const int n = mpi_count(count, "all_reduce");
    if (pollable)
      check(MPI_Iallreduce(in, out, n, mpi_type(dtype), mop, data_, &op->req), "MPI_Iallreduce");
    else
      check(MPI_Allreduce(in, out, n, mpi_type(dtype), mop, data_), "MPI_Allreduce");
    return op;
  }

  std::unique_ptr<Op> all_gather(const void* in, void* out,
                                 std::span<const int64_t> bytes) override {
    auto op = std::make_unique<MpiOp>();
    std::vector<int> counts, displs;
    int64_t at = 0;
    for (int64_t b : bytes) {
      counts.push_back(mpi_count(b, "all_gather (bytes)"));
      displs.push_back(mpi_count(at, "all_gather (bytes)"));
      at += b;
    }
    check(MPI_Allgatherv(in, counts[rank_], MPI_BYTE, out, counts.data(), displs.data(), MPI_BYTE,
                         data_),
          "MPI_Allgatherv");
    return op;
  }

  std::unique_ptr<Op> broadcast(void* buf, int64_t bytes, int root) override {
    auto op = std::make_unique<MpiOp>();
    check(MPI_Bcast(buf, mpi_count(bytes, "broadcast (bytes)"), MPI_BYTE, root, data_),
          "MPI_Bcast");
    return op;
  }

  void send_failure(const std::string& message) override {
    outgoing_ = message;
    for (int w = 0; w < size_; ++w) {
      if (w == rank_) continue;
      MPI_Request r;
      if (MPI_Isend(outgoing_.data(), static_cast<int>(outgoing_.size()), MPI_CHAR, w, kFailTag,
                    ctrl_, &r) == MPI_SUCCESS)
        MPI_Request_free(&r);
    }
  }

  bool poll_failure(int& from, std::string& message) override {
    count_acks();
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kFailTag, ctrl_, &flag, &st) != MPI_SUCCESS || !flag)
      return false;
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    message.assign(static_cast<size_t>(n), '\0');
    MPI_Recv(message.data(), n, MPI_CHAR, st.MPI_SOURCE, kFailTag, ctrl_, MPI_STATUS_IGNORE);
    from = st.MPI_SOURCE;
    static const char ack = 1;
    MPI_Request r;
    if (MPI_Isend(&ack, 1, MPI_CHAR, from, kAckTag, ctrl_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
    return true;
  }

  int acks() override {
    count_acks();
    return acks_;
  }

  void finalize() override {
    int done = 0;
    MPI_Finalized(&done);
    if (done) return;
    MPI_Comm_free(&data_);
    MPI_Comm_free(&ctrl_);
    MPI_Finalize();
  }

 private:
  void count_acks() {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, kAckTag, ctrl_, &flag, &st) != MPI_SUCCESS || !flag) return;
      char ack;
      MPI_Recv(&ack, 1, MPI_CHAR, st.MPI_SOURCE, kAckTag, ctrl_, MPI_STATUS_IGNORE);
      ++acks_;
    }
  }

  MPI_Comm data_ = MPI_COMM_NULL, ctrl_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, acks_ = 0;
  std::string outgoing_;  // the buffer of the failure sends in flight
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport() {
  return std::make_unique<MpiTransport>();
}

}  // namespace kiln::comm::detail
