// kiln-serve's request batching (tools/serve/batching.h): the parameters file,
// concurrent requests merged and split back, requests that must run alone,
// errors kept per request, deadlines, and the REST path with batching on.
#include "batching.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/saved_model.h"
#include "metrics.h"
#include "models.h"
#include "rest.h"

namespace kiln::serve {
namespace {
namespace fs = std::filesystem;
using Tensors = Batcher::Tensors;

TEST(ServeBatching, ParametersFile) {
  const BatchingOptions o = parse_batching_parameters(R"(
    # TensorFlow Serving's wrappers
    max_batch_size { value: 16 }
    batch_timeout_micros { value: 500 }
    num_batch_threads { value: 2 }
    max_enqueued_batches { value: 10 })");
  EXPECT_EQ(o.max_batch_size, 16);
  EXPECT_EQ(o.batch_timeout_micros, 500);
  EXPECT_EQ(o.num_batch_threads, 2);
  EXPECT_EQ(o.max_enqueued_batches, 10);
  EXPECT_EQ(parse_batching_parameters("").max_batch_size, 8);
  for (const char* bad : {"max_batch_size { value: 0 }", "pad_variable_length_inputs: true",
                          "max_batch_size { value: x }", "max_batch_size { 3 }",
                          "max_batch_size { value: 4", "num_batch_threads { value: -1 }"}) {
    EXPECT_THROW(parse_batching_parameters(bad), InvalidArgumentError) << bad;
  }
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln_batch_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

// y = 2x + 1 per row (x float32 [None, 2]) and s = sum(x) (a scalar: not per row).
std::shared_ptr<const saved_model::SavedModel> save_and_load(const std::string& dir) {
  Function f([](const std::vector<Value>& a) {
    return Value::dict({{"y", Value(a[0].tensor() * Tensor(2.0f) + Tensor(1.0f))}});
  });
  Function g([](const std::vector<Value>& a) {
    return Value::dict({{"s", Value(reduce_sum(a[0].tensor(), {}, false))}});
  });
  const ArgSpec x{DType::kFloat32, Shape{-1, 2}, "x"};
  saved_model::Exporter e;
  e.add_signature("serving_default", f.get_concrete_function({Value(x)}), {"x"}, {"y"});
  e.add_signature("sum", g.get_concrete_function({Value(x)}), {"x"}, {"s"});
  e.save(dir);
  return saved_model::load(dir);
}

Tensor rows(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size()) / 2;
  return Tensor::from_vector(std::move(v), {n, 2});
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

TEST(ServeBatching, ConcurrentRequestsAreMergedAndSplitBack) {
  TempDir d;
  auto model = save_and_load(d.path.string());
  const auto& sig = model->signature("serving_default");
  BatchingOptions o;
  o.max_batch_size = 6;
  o.batch_timeout_micros = 200'000;  // long enough for every request to join
  Batcher b(o);
  const auto deadline = Batcher::Clock::now() + std::chrono::seconds(30);
  std::vector<std::future<Tensors>> replies;
  for (int i = 0; i < 4; ++i) {
    const float v = static_cast<float>(i);
    // Requests of 1, 2, 1 and 2 rows: 6 rows in all.
    std::vector<float> x = i % 2 ? std::vector<float>{v, v, v, v} : std::vector<float>{v, v};
    replies.push_back(std::async(std::launch::async, [&, x] {
      return b.run(model, sig, {{"x", rows(x)}}, deadline);
    }));
  }
  for (int i = 0; i < 4; ++i) {
    const float y = 2 * static_cast<float>(i) + 1;
    const Tensors out = replies[static_cast<size_t>(i)].get();
    EXPECT_EQ(values(out.at("y")),
              i % 2 ? (std::vector<float>{y, y, y, y}) : (std::vector<float>{y, y}));
  }
  EXPECT_LT(b.batches(), 4);  // at least two requests shared a call
  EXPECT_EQ(b.rows(), 6);
}

TEST(ServeBatching, RequestsThatCannotMergeRunAlone) {
  TempDir d;
  auto model = save_and_load(d.path.string());
  BatchingOptions o;
  o.batch_timeout_micros = 100'000;
  Batcher b(o);
  const auto deadline = Batcher::Clock::now() + std::chrono::seconds(30);
  // The sum's output is not per row: each request still gets its own sum.
  auto s1 = std::async(std::launch::async, [&] {
    return b.run(model, model->signature("sum"), {{"x", rows({1, 2})}}, deadline);
  });
  auto s2 = std::async(std::launch::async, [&] {
    return b.run(model, model->signature("sum"), {{"x", rows({3, 4, 5, 6})}}, deadline);
  });
  EXPECT_EQ(s1.get().at("s").data<float>()[0], 3.f);
  EXPECT_EQ(s2.get().at("s").data<float>()[0], 18.f);
  // A request of another shape, and one with a bad input, each get their own answer.
  const auto& sig = model->signature("serving_default");
  auto bad = std::async(std::launch::async, [&] {
    return b.run(model, sig, {{"x", Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})}},
                 deadline);
  });
  auto good = std::async(std::launch::async, [&] {
    return b.run(model, sig, {{"x", rows({1, 1})}}, deadline);
  });
  EXPECT_THROW(bad.get(), Error);
  EXPECT_EQ(values(good.get().at("y")), (std::vector<float>{3, 3}));
  EXPECT_EQ(b.rows(), 5);  // merged or alone, each request's own rows
  // Past the deadline: 504's error, nothing left waiting.
  EXPECT_THROW(b.run(model, sig, {{"x", rows({1, 1})}}, Batcher::Clock::now()),
               DeadlineExceededError);
}

TEST(ServeBatching, RestPredictsGoThroughTheBatcher) {
  TempDir d;
  save_and_load((d.path / "1").string());
  ModelConfig c;
  c.name = "m";
  c.base_path = d.path.string();
  ModelManager models({c});
  models.poll_all();
  Metrics metrics;
  BatchingOptions o;
  o.batch_timeout_micros = 0;
  Batcher b(o);
  const Runner runner(nullptr, &b);
  Rest rest(models, metrics, runner);
  const HttpReply r = rest.handle("POST", "/v1/models/m:predict", R"({"instances": [[1, 2]]})",
                                  Rest::Clock::now() + std::chrono::seconds(30));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"predictions":[[3,5]]})");
  EXPECT_EQ(b.batches(), 1);
  const HttpReply late = rest.handle("POST", "/v1/models/m:predict", R"({"instances": [[1, 2]]})",
                                     Rest::Clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(late.status, 504);
}

}  // namespace
}  // namespace kiln::serve
