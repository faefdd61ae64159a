// The README's ten-line example: built in the tree (readme_example) and, as an outside
// project, against an installed kiln (examples/consumer/CMakeLists.txt, tests/install/).
#include <iostream>

#include "kiln/kiln.h"

int main() {
  using namespace kiln;
  Tensor a({{1.f, 2.f}, {3.f, 4.f}});     // float32, shape (2, 2)
  Tensor b = matmul(a, a) + 1.f;          // scalars take the tensor's dtype
  std::cout << b.debug_string() << "\n";  // kiln.Tensor([[8 11] ...
  std::cout << reduce_sum(tanh(b), {1}).to_string() << "\n";
  try {
    add(a, Tensor({1, 2}));
  }  // no implicit dtype promotion
  catch (const InvalidArgumentError& e) {
    std::cout << e.what() << "\n";
  }
}
