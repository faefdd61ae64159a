// config().check_numerics: NaN/Inf outputs raise, eagerly and in functions.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/config.h"
#include "kiln/function.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

struct CheckNumerics {
  CheckNumerics() { config().check_numerics = true; }
  ~CheckNumerics() { config().check_numerics = false; }
};

TEST(CheckNumerics, OffByDefaultInfPasses) {
  Tensor r = divide(Tensor(1.0f), Tensor(0.0f));
  EXPECT_TRUE(std::isinf(r.item<float>()));
}

TEST(CheckNumerics, EagerOpNamesTheOp) {
  CheckNumerics on;
  try {
    divide(Tensor(1.0f), Tensor(0.0f));
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("RealDiv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NaN or Inf"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(divide(Tensor(1.0f), Tensor(2.0f)));
  EXPECT_NO_THROW(divide(Tensor(1), Tensor(2)));  // integer results are never checked
}

TEST(CheckNumerics, FunctionNamesTheNode) {
  FunctionOptions opts;
  opts.name = "f";
  Function f([](const std::vector<Value>& a) { return Value(log(a[0].tensor())); }, opts);
  EXPECT_NO_THROW(f({Tensor(-1.0f)}));  // NaN allowed while off
  CheckNumerics on;
  try {
    f({Tensor(-1.0f)});
    FAIL() << "expected an error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'Log'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(f({Tensor(2.0f)}));
}

}  // namespace
}  // namespace kiln
