// Test helpers: functions of tensor arguments returning tuples of tensors.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "kiln/function.h"

namespace kiln::testing {

using Vars = std::vector<Tensor>;

/// A Function whose callable maps tensors to tensors (a tuple result).
inline Function make_fn(std::function<Vars(const Vars&)> fn, std::string name = "f") {
  FunctionOptions o;
  o.name = std::move(name);
  return Function(
      [fn](const std::vector<Value>& a) {
        Vars in;
        for (const Value& v : a) in.push_back(v.tensor());
        std::vector<Value> out;
        for (const Tensor& t : fn(in)) out.push_back(Value(t));
        return Value::tuple(std::move(out));
      },
      o);
}

/// Calls `f` with tensors and returns its tuple's tensors.
inline Vars call(Function& f, const Vars& args) {
  std::vector<Value> in(args.begin(), args.end());
  Vars out;
  const Value r = f(in);  // keep the result alive while iterating
  for (const Value& v : r.items()) out.push_back(v.tensor());
  return out;
}

}  // namespace kiln::testing
