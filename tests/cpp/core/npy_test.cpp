// .npy round trips per dtype, and damaged files.
#include "kiln/npy.h"

#include "kiln/kiln.h"
#include "test_util.h"

namespace kiln {
namespace {
using testing::expect_error;

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const std::vector<Tensor> cases = {
      Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6}, {2, 3}),
      Tensor::from_vector<double>({1, 2}, {2}),
      Tensor::from_vector<int32_t>({7}, {}),
      Tensor::from_vector<int64_t>({}, {0, 4}),
      Tensor::from_vector<uint8_t>({1, 255}, {1, 2, 1}),
      Tensor::from_vector<int8_t>({-1, 2}, {2}),
      Tensor({true, false, true}),
      cast(Tensor::from_vector<float>({0.5f, 2}, {2}), DType::kFloat16),
  };
  for (const Tensor& t : cases) {
    SCOPED_TRACE(t.debug_string());
    const std::string bytes = npy::serialize(t);
    EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u);  // data 64-byte aligned, as NumPy does
    Tensor back = npy::parse(bytes);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(std::string(static_cast<const char*>(back.raw_data()), back.nbytes()),
              std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }
}

TEST(Npy, StringsAreFixedWidthByteStrings) {
  Tensor t = Tensor::from_vector<std::string>({"ab", "", "xyz"}, {3});
  const std::string bytes = npy::serialize(t);
  EXPECT_NE(bytes.find("'descr': '|S3'"), std::string::npos);
  testing::expect_tensor<std::string>(npy::parse(bytes), {3}, {"ab", "", "xyz"});
  std::string bad = bytes;
  bad.replace(bad.find("|S3"), 3, "|S0");
  expect_error([&] { npy::parse(bad); }, Code::kInvalidArgument, {"'|S0' is not supported"});
}

TEST(Npy, DamagedFilesAreClearErrors) {
  const std::string good = npy::serialize(Tensor::from_vector<float>({1, 2, 3}, {3}));
  struct Case {
    std::string bytes, fragment;
  };
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  std::string u16 = good;
  u16.replace(u16.find("<f4"), 3, "<u2");
  std::string big = good;
  big.replace(big.find("(3,)"), 4, "(9,)");
  std::string neg = good;
  neg.replace(neg.find("(3,)"), 4, "(-3)");
  std::string boolean = npy::serialize(Tensor({true}));
  boolean.back() = 7;
  std::string version = good;
  version[6] = 9;
  const std::vector<Case> cases = {
      {"hello", "not a .npy file"},
      {good.substr(0, 20), "truncated .npy header"},
      {good.substr(0, good.size() - 1), "needs 12 data bytes, the file has 11"},
      {fortran, "Fortran-order"},
      {u16, "'<u2' is not supported"},
      {big, "needs 36 data bytes"},
      {neg, "bad .npy shape"},
      {boolean, "not 0 or 1"},
      {version, "format version 9"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fragment);
    expect_error([&] { npy::parse(c.bytes, "x.npy"); }, Code::kInvalidArgument,
                 {"x.npy", c.fragment});
  }
  expect_error([] { npy::read("/nonexistent.npy"); }, Code::kNotFound, {"/nonexistent.npy"});
  // A write that fails says why.
  expect_error([] { npy::write("/nonexistent/dir/x.npy", Tensor(1.f)); }, Code::kFailedPrecondition,
               {"/nonexistent/dir/x.npy: cannot write: No such file or directory"});
  expect_error([] { npy::write("/", Tensor(1.f)); }, Code::kFailedPrecondition,
               {"/: cannot write: Is a directory"});
  expect_error([] { npy::serialize(Variable(Tensor(1.f)).handle()); }, Code::kInvalidArgument,
               {"resource"});
}

}  // namespace
}  // namespace kiln
