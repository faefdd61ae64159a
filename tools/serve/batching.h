// Request batching (--enable_batching): concurrent predicts for one signature
// of one model version are merged along their first dimension into one call,
// up to max_batch_size rows or batch_timeout_micros after the first arrived,
// and the outputs are split back per request. Requests that cannot merge
// (inputs without a leading batch dimension, other shapes, outputs that are
// not per row) run alone.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kiln/saved_model.h"
#include "kiln/tensor.h"

namespace kiln::serve {

/// TensorFlow Serving's BatchingParameters (the fields kiln-serve reads).
struct BatchingOptions {
  int64_t max_batch_size = 8;           ///< rows of one merged call
  int64_t batch_timeout_micros = 2000;  ///< wait for more after the first request
  int64_t num_batch_threads = 1;        ///< merged calls running at once
  int64_t max_enqueued_batches = 1000;  ///< waiting requests beyond it: UNAVAILABLE
};

/// Parses a --batching_parameters_file text proto (`max_batch_size { value: 8 }`,
/// `batch_timeout_micros { value: 1000 }`, `num_batch_threads { value: 2 }`,
/// `max_enqueued_batches { value: 100 }`, `#` comments); InvalidArgumentError
/// naming anything else.
BatchingOptions parse_batching_parameters(std::string_view text);

class Batcher {
 public:
  using Clock = std::chrono::steady_clock;
  using Tensors = std::map<std::string, Tensor>;
  explicit Batcher(const BatchingOptions& options);
  ~Batcher();
  /// Runs `sig` of `model` on `inputs`, merged with other waiting requests of
  /// the same signature; DeadlineExceededError when `deadline` passes first
  /// (a request not yet started is then dropped). Rethrows the call's error.
  Tensors run(std::shared_ptr<const saved_model::SavedModel> model,
              const saved_model::Signature& sig, Tensors inputs, Clock::time_point deadline);
  /// Merged calls so far and the rows they held (for metrics and tests).
  int64_t batches() const;
  int64_t rows() const;

  struct Item;  ///< one waiting request (batching.cpp)

 private:
  void worker();
  std::vector<std::shared_ptr<Item>> take_batch(std::unique_lock<std::mutex>& lock);
  void run_batch(const std::vector<std::shared_ptr<Item>>& batch);
  BatchingOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Item>> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  int64_t batches_ = 0, rows_ = 0;
};

}  // namespace kiln::serve
