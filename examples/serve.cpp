// Serving without Python: loads the exports examples/export_model.py wrote
// (the digits classifier trained by `make demo` and the seed's CharUnpack
// layer), runs each signature on the saved inputs and compares with the
// outputs Python computed. Linked against libkiln only.
//
//   build/serve DIR      (DIR as given to export_model.py)
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/npy.h"

namespace {

// Largest |a - b| over two float tensors of the same shape.
double max_diff(const kiln::Tensor& a, const kiln::Tensor& b) {
  kiln::Tensor fa = kiln::cast(a, kiln::DType::kFloat64), fb = kiln::cast(b, kiln::DType::kFloat64);
  if (fa.shape() != fb.shape()) return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < fa.num_elements(); ++i)
    m = std::max(m, std::fabs(fa.data<double>()[i] - fb.data<double>()[i]));
  return m;
}

bool check(const std::string& dir, const std::string& name, const std::string& input_key,
           const std::string& output_key) {
  auto sm = kiln::saved_model::load(dir + "/" + name);
  const auto& sig = sm->signature("serving_default");
  std::printf("%s: %s\n", name.c_str(), sig.to_string().c_str());
  kiln::Tensor x = kiln::npy::read(dir + "/" + name + "_input.npy");
  kiln::Tensor want = kiln::npy::read(dir + "/" + name + "_expected.npy");
  // Concurrent calls share the loaded model.
  std::vector<kiln::Tensor> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] { got[t] = sig({{input_key, x}}).at(output_key); });
  for (auto& t : threads) t.join();
  double worst = 0;
  for (const auto& g : got) worst = std::max(worst, max_diff(g, want));
  std::printf("  %lld inputs, %zu concurrent calls: max |C++ - Python| = %.3g\n",
              static_cast<long long>(x.shape().dim(0)), got.size(), worst);
  return worst <= 1e-5;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: serve DIR (written by examples/export_model.py)\n");
    return 2;
  }
  try {
    const bool ok = check(argv[1], "digits", "features", "logits") &&
                    check(argv[1], "charunpack", "packed", "output_0");
    std::printf(ok ? "C++ serving matches Python\n" : "MISMATCH between C++ and Python\n");
    return ok ? 0 : 1;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "serve: %s\n", e.what());
    return 1;
  }
}
