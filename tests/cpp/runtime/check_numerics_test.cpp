// config().check_numerics: NaN/Inf outputs raise, eagerly and in functions.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/config.h"
#include "kiln/control_flow.h"
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

// The bodies of cond and while_loop go through the same pipeline as the
// function: with check_numerics on they stay unfused, so the error names the
// op that made the NaN (here Log, which fusion would merge with Mul).
TEST(CheckNumerics, CondAndWhileBodiesNameTheNode) {
  FunctionOptions opts;
  opts.name = "g";
  Function g(
      [](const std::vector<Value>& a) {
        Tensor x = a[0].tensor();
        auto r = cond(
            greater(x, Tensor(-10.0f)),
            [&] { return std::vector<Tensor>{multiply(log(x), Tensor(2.0f))}; },
            [&] { return std::vector<Tensor>{x}; });
        return Value(r[0]);
      },
      opts);
  FunctionOptions wopts;
  wopts.name = "w";
  Function w(
      [](const std::vector<Value>& a) {
        auto r = while_loop(
            [](const std::vector<Tensor>& v) { return less(v[1], Tensor(1)); },
            [](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{multiply(log(v[0]), Tensor(2.0f)), add(v[1], Tensor(1))};
            },
            {a[0].tensor(), Tensor(0)});
        return Value(r[0]);
      },
      wopts);
  CheckNumerics on;
  for (Function* f : {&g, &w}) {
    try {
      (*f)({Tensor(-1.0f)});
      FAIL() << "expected an error";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'Log'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln
