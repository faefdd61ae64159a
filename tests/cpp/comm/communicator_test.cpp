// The communicator without a launcher: one worker, every collective the
// identity; its argument checks and tickets. (Two workers: comm_mpi_main.cpp.)
#include "kiln/comm.h"
#include "test_util.h"

namespace kiln::comm {
namespace {
using testing::expect_error;

TEST(Communicator, WithoutALauncherIsOneLocalWorker) {
  Communicator& c = communicator();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_STREQ(c.backend(), "local");
  const Tensor x = Tensor::from_vector<float>({1, 2, 3}, Shape({3}));
  for (Reduction r : {Reduction::kSum, Reduction::kMean, Reduction::kMax, Reduction::kMin})
    EXPECT_EQ(c.all_reduce(x, r, 0)->wait().to_vector<float>(), x.to_vector<float>());
  const Tensor rows = Tensor::from_vector<int32_t>({1, 2, 3, 4}, Shape({2, 2}));
  EXPECT_EQ(c.all_gather(rows, 0)->wait().shape(), Shape({2, 2}));
  EXPECT_EQ(c.broadcast(x, 0, 0)->wait().to_vector<float>(), x.to_vector<float>());
  const int64_t v[] = {1, 2};
  c.agree(v, "anything");  // one worker always agrees
  c.fail("nothing to tell");
}

TEST(Communicator, RejectsWhatItCannotMove) {
  Communicator& c = communicator();
  const Tensor s = Tensor::from_vector<std::string>({"a"}, Shape({1}));
  expect_error([&] { c.all_reduce(s, Reduction::kSum, 0); }, Code::kInvalidArgument,
               {"float32, float64, int32 or int64", "string"});
  expect_error(
      [&] { c.all_reduce(Tensor::from_vector<uint8_t>({1}, Shape({1})), Reduction::kSum, 0); },
      Code::kInvalidArgument, {"uint8"});
  expect_error([&] { c.all_gather(s, 0); }, Code::kInvalidArgument, {"numbers or bools"});
  expect_error([&] { c.all_gather(Tensor(1.0f), 0); }, Code::kInvalidArgument, {"rank >= 1"});
  expect_error([&] { c.broadcast(Tensor(1.0f), 1, 0); }, Code::kInvalidArgument,
               {"root 1 is not a worker of 1"});
  expect_error([] { parse_reduction("avg"); }, Code::kInvalidArgument, {"\"avg\""});
  expect_error([&] { c.set_timeout(0); }, Code::kInvalidArgument, {"> 0 seconds"});
  expect_error([&] { c.set_timeout(-1); }, Code::kInvalidArgument, {"> 0 seconds"});
}

TEST(Communicator, TicketsAreTakenOnce) {
  Communicator& c = communicator();
  const Tensor x = Tensor::from_vector<double>({4, 5}, Shape({2}));
  const int64_t t = c.park(c.all_reduce(x, Reduction::kSum, 0));
  const int64_t u = c.park(c.all_reduce(x, Reduction::kMax, 0));
  EXPECT_NE(t, u);
  EXPECT_EQ(c.take(u)->wait().to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(c.take(t)->wait().to_vector<double>(), x.to_vector<double>());
  expect_error([&] { c.take(t); }, Code::kInvalidArgument, {"ticket", "taken once"});
  expect_error([&] { c.take(-3); }, Code::kInvalidArgument, {"ticket -3"});
}

TEST(Communicator, TimeoutIsSettable) {
  Communicator& c = communicator();
  const double before = c.timeout();
  EXPECT_GT(before, 0);
  c.set_timeout(2.5);
  EXPECT_EQ(c.timeout(), 2.5);
  c.set_timeout(before);
}

}  // namespace
}  // namespace kiln::comm
