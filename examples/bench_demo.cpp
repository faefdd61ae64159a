// `make demo`, C++ part: kiln::benchmark on two seed workloads from C++, eager
// vs Function, with the same statistics as the Python table.
#include <iostream>

#include "kiln/benchmark.h"
#include "kiln/function.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

// Seed 000's CharUnpack: uint8 [rows, 400] -> float32 [rows, 3200] bits.
Tensor char_unpack(const Tensor& x, const Tensor& shifts) {
  const Tensor bits =
      bitwise_and(right_shift(expand_dims(x, 2), shifts), cast(Tensor(1), DType::kUInt8));
  return cast(reshape(bits, {x.shape().dim(0), -1}), DType::kFloat32);
}

Tensor chain100(const Tensor& x) {
  Tensor y = x;
  for (int i = 0; i < 50; ++i) y = y * 0.5f + x;
  return y;
}

void row(const char* label, const BenchmarkResult& r, const BenchmarkResult* eager) {
  std::cout << "  " << label << ": median " << format_seconds(r.median) << "  IQR "
            << format_seconds(r.iqr) << "  runs " << r.samples.size() << "x" << r.calls_per_sample
            << "  first call " << format_seconds(r.first_call);
  if (eager) std::cout << "  (" << eager->median / r.median << "x eager)";
  std::cout << "\n";
}

void compare(const char* title, const std::function<Value(const Tensor&)>& body, const Tensor& x) {
  BenchmarkOptions o;
  o.min_time = 0.5;
  o.name = title;
  std::cout << title << "\n";
  const BenchmarkResult eager = benchmark([&] { return body(x); }, o);
  row("eager   ", eager, nullptr);
  Function f([&](const std::vector<Value>& args) { return body(args[0].tensor()); });
  const BenchmarkResult fn = benchmark([&] { return f({x}); }, o);
  row("function", fn, &eager);
}

}  // namespace

int main() {
  std::cout << "kiln C++: kiln::benchmark (include/kiln/benchmark.h)\n";
  const Tensor shifts = reshape(cast(range(7, -1, -1), DType::kUInt8), {1, 1, 8});
  const Tensor bytes = cast(random_uniform({8192, 400}, 0, 256, DType::kInt32, 7), DType::kUInt8);
  compare(
      "CharUnpack uint8 [8192, 400]",
      [&](const Tensor& x) { return Value(char_unpack(x, shifts)); }, bytes);
  compare(
      "100 small ops on [10, 10]", [](const Tensor& x) { return Value(chain100(x)); },
      random_normal({10, 10}, 0, 1, DType::kFloat32, 3));
}
