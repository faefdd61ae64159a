// A tour of kiln's eager ops (the `make demo` program for now).
#include <iostream>

#include "kiln/kiln.h"

int main() {
  using namespace kiln;
  Tensor a({{1, 2}, {3, 4}});
  Tensor b({10, 20});
  std::cout << "a =\n" << a.to_string() << "\n";
  std::cout << "a + b = " << (a + b).debug_string() << "\n";
  std::cout << "a * 3 = " << (a * 3).debug_string() << "\n";
  try {
    add(a, Tensor({1.5f, 2.5f}));
  } catch (const Error& e) {
    std::cout << "error (" << code_name(e.code()) << "): " << e.what() << "\n";
  }
  return 0;
}
