// `make demo`: a tour of kiln's eager ops. Each line shows an expression and
// its value, formatted as TensorFlow prints tensors.
#include <iostream>
#include <sstream>

#include "kiln/kiln.h"

using namespace kiln;

namespace {
void show(const char* expr, const Tensor& t) {
  std::cout << expr << "\n  " << t.debug_string() << "\n";
}
}  // namespace

int main() {
  std::cout << "kiln eager demo\n===============\n";
  Tensor a({{1, 2}, {3, 4}});
  show("a", a);
  show("a + Tensor({10, 20})   (broadcasting)", a + Tensor({10, 20}));
  show("a * 3                  (C++ scalars take a's dtype)", a * 3);
  show("floordiv(Tensor({-7, 7}), 2)", floordiv(Tensor({-7, 7}), 2));
  show("divide(a, 2)           (int truediv gives float64, as in TF)", divide(a, 2));
  show("cast(a, float32) / 3", cast(a, DType::kFloat32) / 3.f);
  show("Tensor(\"aa\") + Tensor(\"bb\")", Tensor("aa") + Tensor("bb"));
  show("reduce_sum(a, {0})", reduce_sum(a, {0}));
  show("argmax(Tensor({3, 9, 1}), 0)", argmax(Tensor({3, 9, 1}), 0));
  Tensor x = reshape(range(12), {3, 4});
  show("x = reshape(range(12), {3, 4})", x);
  show("x[1:, ::2]", index(x, {Slice(1, None), Slice().step(2)}));
  show("transpose(x)", transpose(x));
  Tensor m = cast(x, DType::kFloat32);
  show("matmul(m, m, false, true)   (OpenBLAS)", matmul(m, m, false, true));
  show("softmax(Tensor({1.f, 2.f, 3.f}))", softmax(Tensor({1.f, 2.f, 3.f})));
  Tensor img = ones({1, 5, 5, 1});
  Tensor filt = ones({3, 3, 1, 1});
  show("conv2d(ones[1,5,5,1], ones[3,3,1,1], SAME)   (oneDNN)",
       squeeze(conv2d(img, filt, {1, 1}, "SAME")));
  set_random_seed(42);
  show("random_uniform({2, 3}) with seed 42", random_uniform({2, 3}));

  // Stateful ops: variables and print.
  Variable v(Tensor(1), "v");
  v.assign_add(Tensor(41));
  std::cout << "v after assign_add(41): " << v.to_string() << "\n";
  std::cout << "print(\"x =\", x):\n";
  print({"x =", x}, std::cout);

  // Bad input gets a clear error, never a crash.
  std::cout << "\nErrors\n------\n";
  auto attempt = [](const char* what, auto fn) {
    try {
      fn();
      std::cout << what << ": no error?!\n";
    } catch (const Error& e) {
      std::cout << what << "\n  " << code_name(e.code()) << ": " << e.what() << "\n";
    }
  };
  attempt("add(int32, float32)", [&] { add(a, Tensor({1.5f, 2.5f})); });
  attempt("reshape(range(12), {5, -1})", [&] { reshape(range(12), {5, -1}); });
  attempt("floordiv(a, 0)", [&] { floordiv(a, 0); });
  attempt("gather(x, Tensor({7}))", [&] { gather(x, Tensor({7})); });
  attempt("conv2d(..., padding \"FULL\")", [&] { conv2d(img, filt, {1, 1}, "FULL"); });
  attempt("zeros({1 << 30, 1 << 30})", [&] { zeros({int64_t{1} << 30, int64_t{1} << 30}); });
  attempt("v.assign(Tensor(1.5f))", [&] { v.assign(Tensor(1.5f)); });
  return 0;
}
