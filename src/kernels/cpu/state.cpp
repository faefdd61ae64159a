// CPU kernels for the stateful ops (PrintV2, variable reads and writes), and
// the registry of C++ streams print can write to.
#include "kiln/ops/state.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>

#include "bind.h"
#include "kernel_util.h"
#include "kiln/variable.h"
#include "ops/print_template.h"

namespace kiln::cpu {
namespace {

struct StreamRegistry {
  std::mutex mu;  // also serializes writes, so concurrent prints do not interleave
  int64_t next_id = 1;
  std::map<int64_t, std::ostream*> by_id;
  std::map<std::ostream*, int64_t> by_stream;
};

StreamRegistry& registry() {
  static StreamRegistry* r = new StreamRegistry;  // never destroyed: usable at exit
  return *r;
}

void write_to_stream(const KernelContext& c, const std::string& stream, const std::string& text) {
  const char* op = c.op().type_name;
  StreamRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::ostream* os = nullptr;
  if (stream == "stdout") {
    os = &std::cout;
  } else if (stream.starts_with("ostream:")) {
    auto it = r.by_id.find(std::stoll(stream.substr(8)));
    if (it == r.by_id.end())
      throw NotFoundError(str_cat(op, ": output stream \"", stream,
                                  "\" is not registered (see register_print_stream)"));
    os = it->second;
  } else if (stream.starts_with("file://")) {
    const std::string path = stream.substr(7);
    std::ofstream f(path, std::ios::app | std::ios::binary);
    if (!f)
      throw NotFoundError(
          str_cat(op, ": cannot open \"", path, "\" for appending: ", std::strerror(errno)));
    f << text;
    f.flush();
    if (!f) throw InternalError(str_cat(op, ": writing to \"", path, "\" failed"));
    return;
  } else {
    os = &std::cerr;  // stderr and log(...)
  }
  *os << text;
  os->flush();
}

void print_kernel(KernelContext& c) {
  std::vector<std::string> pieces;
  std::string error;
  if (!parse_print_template(c.attr_string("template"), pieces, error))
    c.fail("malformed template: ", error);
  PrintOptions opts;
  opts.summarize = c.attr_int("summarize");
  // A template that is one string scalar prints the string itself (what
  // TensorFlow's PrintV2 does with its formatted input).
  if (pieces.size() == 2 && pieces[0].empty() && pieces[1].empty() &&
      c.input(0).dtype() == DType::kString && c.input(0).shape().rank() == 0) {
    write_to_stream(c, c.attr_string("output_stream"),
                    str_cat(c.input(0).data<std::string>()[0], c.attr_string("end")));
    return;
  }
  std::string text = pieces[0];
  for (size_t i = 1; i < pieces.size(); ++i) {
    text += format_tensor(c.input(i - 1), opts);
    text += pieces[i];
  }
  text += c.attr_string("end");
  write_to_stream(c, c.attr_string("output_stream"), text);
}

VariableResource* variable_of(const KernelContext& c) {
  // Inference has checked the handle; the cast repeats that for safety.
  auto* v = dynamic_cast<VariableResource*>(c.input(0).resource());
  if (!v) throw InvalidArgumentError(str_cat(c.op().type_name, ": resource is not a variable"));
  return v;
}

void read_kernel(KernelContext& c) {
  c.set_output(0, variable_of(c)->read());
}

void assign_kernel(KernelContext& c) {
  variable_of(c)->assign(c.op().type_name, c.input(1));
}

// Wrapping integer arithmetic (no signed-overflow UB); IEEE for floats.
template <typename T, bool kSub>
inline T add_or_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(kSub ? static_cast<U>(static_cast<U>(a) - static_cast<U>(b))
                               : static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return kSub ? a - b : a + b;
  }
}

template <bool kSub>
void assign_arith_kernel(KernelContext& c) {
  VariableResource* v = variable_of(c);
  const Tensor& delta = c.input(1);
  v->check_assignable(c.op().type_name, delta.dtype(), delta.shape());
  v->update([&](const Tensor& cur, bool exclusive) {
    Tensor out = exclusive ? cur : Tensor::empty(cur.dtype(), cur.shape());
    visit_numeric(cur.dtype(), c.op().type_name, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        throw InvalidArgumentError(str_cat(c.op().type_name, ": unsupported dtype bool"));
      } else {
        const T* a = cur.data<T>();
        const T* b = delta.data<T>();
        T* o = out.mutable_data<T>();
        parallel_for(out.num_elements(), 0, [&](int64_t s, int64_t e) {
          for (int64_t i = s; i < e; ++i) o[i] = add_or_sub<T, kSub>(a[i], b[i]);
        });
      }
    });
    return out;
  });
}

}  // namespace

void bind_state_kernels(OpTableBuilder& t) {
  t.kernel(OpId::Print, print_kernel);
  t.kernel(OpId::ReadVariable, read_kernel);
  t.kernel(OpId::AssignVariable, assign_kernel);
  t.kernel(OpId::AssignAddVariable, assign_arith_kernel<false>);
  t.kernel(OpId::AssignSubVariable, assign_arith_kernel<true>);
}

}  // namespace kiln::cpu

namespace kiln {

std::string register_print_stream(std::ostream& os) {
  auto& r = cpu::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_stream.find(&os);
  int64_t id;
  if (it != r.by_stream.end()) {
    id = it->second;
  } else {
    id = r.next_id++;
    r.by_stream[&os] = id;
    r.by_id[id] = &os;
  }
  return str_cat("ostream:", id);
}

void unregister_print_stream(std::ostream& os) {
  auto& r = cpu::registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_stream.find(&os);
  if (it == r.by_stream.end()) return;
  r.by_id.erase(it->second);
  r.by_stream.erase(it);
}

}  // namespace kiln
