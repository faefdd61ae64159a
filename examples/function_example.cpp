// The README's graph-function example, compiled so the README stays true.
#include <iostream>

#include "kiln/function.h"
#include "kiln/kiln.h"

int main() {
  kiln::FunctionOptions opts;
  opts.name = "double";
  opts.arg_names = {"a"};
  kiln::Function f(
      [](const std::vector<kiln::Value>& args) {
        return kiln::Value(args[0].tensor() + args[0].tensor());
      },
      opts);
  f({kiln::Tensor(1)});  // traces for int32 scalars, then runs the plan
  f({kiln::Tensor(2)});  // cache hit: no trace
  auto cf = f.get_concrete_function({kiln::ArgSpec{kiln::DType::kString, {}, ""}});
  std::cout << cf->pretty_signature() << cf->graph().listing();
  std::cout << "traces: " << f.tracing_count() << "\n";
}
