// Request batching (batching.h).
#include "batching.h"

#include <atomic>
#include <cctype>
#include <charconv>
#include <exception>
#include <utility>

#include "kiln/ops.h"
#include "kiln/status.h"
#include "service.h"

namespace kiln::serve {

namespace {

// `name { value: N }` fields, `#` comments.
class ParamsParser {
 public:
  explicit ParamsParser(std::string_view text) : s_(text) {}

  BatchingOptions parse() {
    BatchingOptions o;
    const std::map<std::string, int64_t*> fields = {
        {"max_batch_size", &o.max_batch_size},
        {"batch_timeout_micros", &o.batch_timeout_micros},
        {"num_batch_threads", &o.num_batch_threads},
        {"max_enqueued_batches", &o.max_enqueued_batches}};
    for (skip(); i_ < s_.size(); skip()) {
      const std::string name = word();
      auto it = fields.find(name);
      if (it == fields.end())
        throw InvalidArgumentError("batching parameters: unknown field '" + name.substr(0, 64) +
                                   "' (read: max_batch_size, batch_timeout_micros, "
                                   "num_batch_threads, max_enqueued_batches)");
      expect('{');
      if (word() != "value") throw InvalidArgumentError("batching parameters: expected 'value'");
      expect(':');
      *it->second = number(name);
      expect('}');
    }
    if (o.max_batch_size < 1 || o.max_batch_size > (1 << 20) || o.batch_timeout_micros < 0 ||
        o.batch_timeout_micros > 60'000'000 || o.num_batch_threads < 1 ||
        o.num_batch_threads > 1024 || o.max_enqueued_batches < 1)
      throw InvalidArgumentError(
          "batching parameters out of range: max_batch_size 1..1048576, batch_timeout_micros "
          "0..60000000, num_batch_threads 1..1024, max_enqueued_batches >= 1");
    return o;
  }

 private:
  void skip() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        ++i_;
      } else if (s_[i_] == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }
  std::string word() {
    skip();
    const size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_'))
      ++i_;
    if (b == i_) throw InvalidArgumentError("batching parameters: expected a field name");
    return std::string(s_.substr(b, i_ - b));
  }
  void expect(char c) {
    skip();
    if (i_ >= s_.size() || s_[i_] != c)
      throw InvalidArgumentError(std::string("batching parameters: expected '") + c + "'");
    ++i_;
  }
  int64_t number(const std::string& name) {
    skip();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), v);
    if (ec != std::errc())
      throw InvalidArgumentError("batching parameters: " + name + " needs an integer");
    i_ = static_cast<size_t>(p - s_.data());
    return v;
  }
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

BatchingOptions parse_batching_parameters(std::string_view text) {
  return ParamsParser(text).parse();
}

struct Batcher::Item {
  std::shared_ptr<const saved_model::SavedModel> model;
  const saved_model::Signature* sig = nullptr;
  Tensors inputs;
  int64_t rows = -1;  // the first dim every input shares; -1: runs alone
  Clock::time_point arrived;
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> cancelled{false};
  bool started = false, done = false;
  Tensors outputs;
  std::exception_ptr error;

  void finish(Tensors out, std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mu);
    outputs = std::move(out);
    error = std::move(e);
    done = true;
    cv.notify_all();
  }
};

namespace {

// Rows of a request that runs alone, for the metrics: its first input's
// leading dimension (1 for a scalar).
int64_t own_rows(const Batcher::Tensors& inputs) {
  if (inputs.empty()) return 1;
  const Tensor& t = inputs.begin()->second;
  return t.rank() >= 1 ? t.shape().dim(0) : 1;
}

int64_t leading_rows(const Batcher::Tensors& inputs) {
  int64_t rows = -1;
  for (const auto& [k, t] : inputs) {
    if (t.rank() < 1 || (rows >= 0 && t.shape().dim(0) != rows)) return -1;
    rows = t.shape().dim(0);
  }
  return rows > 0 ? rows : -1;
}

// Same model version and signature, inputs alike but for their first dim.
bool mergeable(const Batcher::Item& a, const Batcher::Item& b) {
  if (a.model != b.model || a.sig != b.sig || a.rows < 0 || b.rows < 0) return false;
  for (const auto& [k, t] : a.inputs) {
    auto it = b.inputs.find(k);
    if (it == b.inputs.end() || it->second.dtype() != t.dtype() || it->second.rank() != t.rank())
      return false;
    for (int64_t d = 1; d < t.rank(); ++d)
      if (it->second.shape().dim(d) != t.shape().dim(d)) return false;
  }
  return a.inputs.size() == b.inputs.size();
}

void run_alone(Batcher::Item& item) {
  try {
    item.finish((*item.sig)(item.inputs), nullptr);
  } catch (...) {
    item.finish({}, std::current_exception());
  }
}

}  // namespace

Batcher::Batcher(const BatchingOptions& options) : options_(options) {
  for (int64_t i = 0; i < options_.num_batch_threads; ++i)
    threads_.emplace_back([this] { worker(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

int64_t Batcher::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

int64_t Batcher::rows() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_;
}

std::vector<std::shared_ptr<Batcher::Item>> Batcher::take_batch(
    std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<Item>> batch;
  while (batch.empty()) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return batch;  // stopping
    std::shared_ptr<Item> first = std::move(queue_.front());
    queue_.pop_front();
    if (!first->cancelled) batch.push_back(std::move(first));
  }
  int64_t total = batch[0]->rows;
  const Clock::time_point close =
      batch[0]->arrived + std::chrono::microseconds(options_.batch_timeout_micros);
  while (batch[0]->rows > 0 && total < options_.max_batch_size) {
    for (auto it = queue_.begin(); it != queue_.end() && total < options_.max_batch_size;) {
      if (!(*it)->cancelled && mergeable(*batch[0], **it) &&
          total + (*it)->rows <= options_.max_batch_size) {
        total += (*it)->rows;
        batch.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    if (total >= options_.max_batch_size || stop_ ||
        cv_.wait_until(lock, close) == std::cv_status::timeout)
      break;
  }
  ++batches_;
  rows_ += total > 0 ? total : own_rows(batch[0]->inputs);
  return batch;
}

void Batcher::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    std::vector<std::shared_ptr<Item>> batch = take_batch(lock);
    if (batch.empty()) return;
    lock.unlock();
    run_batch(batch);
    lock.lock();
  }
}

void Batcher::run_batch(const std::vector<std::shared_ptr<Item>>& batch) {
  std::vector<std::shared_ptr<Item>> live;
  for (const auto& item : batch) {
    std::lock_guard<std::mutex> lock(item->mu);
    if (item->cancelled) continue;
    item->started = true;
    live.push_back(item);
  }
  if (live.size() == 1) run_alone(*live[0]);
  if (live.size() <= 1) return;
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (const auto& item : live) {
    sizes.push_back(item->rows);
    total += item->rows;
  }
  Tensors merged_out;
  try {
    Tensors merged;
    for (const auto& [key, t] : live[0]->inputs) {
      std::vector<Tensor> parts;
      for (const auto& item : live) parts.push_back(item->inputs.at(key));
      merged[key] = concat(parts, 0);
    }
    merged_out = (*live[0]->sig)(merged);
    for (const auto& [key, t] : merged_out)
      if (t.rank() < 1 || t.shape().dim(0) != total) throw InvalidArgumentError("not per row");
  } catch (const std::exception&) {
    // The merged call failed or its outputs are not per row: each on its own,
    // so each request gets its own result or error.
    for (const auto& item : live) run_alone(*item);
    return;
  }
  std::vector<Tensors> per(live.size());
  for (const auto& [key, t] : merged_out) {
    std::vector<Tensor> parts = split(t, sizes, 0);
    for (size_t i = 0; i < live.size(); ++i) per[i][key] = std::move(parts[i]);
  }
  for (size_t i = 0; i < live.size(); ++i) live[i]->finish(std::move(per[i]), nullptr);
}

Batcher::Tensors Batcher::run(std::shared_ptr<const saved_model::SavedModel> model,
                              const saved_model::Signature& sig, Tensors inputs,
                              Clock::time_point deadline) {
  auto item = std::make_shared<Item>();
  item->model = std::move(model);
  item->sig = &sig;
  item->rows = leading_rows(inputs);
  item->inputs = std::move(inputs);
  item->arrived = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int64_t>(queue_.size()) >=
        options_.max_enqueued_batches * options_.max_batch_size)
      throw UnavailableError("the batch queue is full (max_enqueued_batches); try again");
    queue_.push_back(item);
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> lock(item->mu);
  if (!item->cv.wait_until(lock, deadline, [&] { return item->done; })) {
    item->cancelled = true;
    throw_deadline_exceeded();
  }
  if (item->error) std::rethrow_exception(item->error);
  return std::move(item->outputs);
}

}  // namespace kiln::serve
