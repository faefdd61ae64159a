// Model versions: polling, loading, swapping, unloading (models.h).
#include "models.h"

#include <chrono>

#include "log.h"

namespace kiln::serve {

const char* state_name(VersionState s) {
  switch (s) {
    case VersionState::kStart: return "START";
    case VersionState::kLoading: return "LOADING";
    case VersionState::kAvailable: return "AVAILABLE";
    case VersionState::kUnloading: return "UNLOADING";
    case VersionState::kEnd: return "END";
  }
  return "UNKNOWN";
}

const char* tf_code_name(Code c) {
  switch (c) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kOutOfRange: return "OUT_OF_RANGE";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kUnimplemented: return "UNIMPLEMENTED";
    case Code::kInternal: return "INTERNAL";
    case Code::kDataLoss: return "DATA_LOSS";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
  }
  return "UNKNOWN";
}

Model::Model(ModelConfig config, Loader loader) : config_(std::move(config)), loader_(loader) {}

std::string Model::version_dir(int64_t v) const {
  return config_.base_path + "/" + std::to_string(v);
}

std::set<int64_t> Model::wanted(const std::set<int64_t>& on_disk) const {
  std::set<int64_t> candidates;
  for (int64_t v : on_disk) {
    auto it = versions_.find(v);
    if (it == versions_.end() || !it->second.failed) candidates.insert(v);
  }
  return select_versions(config_.policy, candidates);
}

void Model::forget_removed(const std::set<int64_t>& on_disk) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [v, e] : versions_) {
    if (on_disk.count(v)) continue;
    e.failed = false;  // retried if it comes back
    if (!e.model) continue;
    e.model.reset();
    e.st.state = VersionState::kEnd;
    log_event(
        "info", "version_unloaded",
        {{"model", config_.name}, {"version", v}, {"reason", std::string("removed from disk")}});
  }
}

void Model::load(int64_t v) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    versions_[v] = Entry{VersionStatus{v, VersionState::kLoading, Code::kOk, ""}, nullptr, false};
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<const saved_model::SavedModel> m;
  Code code = Code::kOk;
  std::string why;
  try {
    m = loader_(version_dir(v));
  } catch (const Error& e) {
    code = e.code(), why = e.what();
  } catch (const std::exception& e) {
    code = Code::kInternal, why = e.what();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = versions_[v];
  if (m) {
    e.model = std::move(m), e.st.state = VersionState::kAvailable;
    log_event("info", "version_loaded", {{"model", config_.name}, {"version", v}, {"ms", ms}});
    return;
  }
  e.failed = true, ++failures_;
  e.st = VersionStatus{v, VersionState::kEnd, code, why};
  log_event("error", "version_load_failed",
            {{"model", config_.name},
             {"version", v},
             {"code", std::string(tf_code_name(code))},
             {"error", why}});
}

void Model::unload_unwanted(const std::set<int64_t>& want) {
  std::vector<std::shared_ptr<const saved_model::SavedModel>> dropped;  // freed unlocked
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [v, e] : versions_) {
    if (!e.model || want.count(v)) continue;
    dropped.push_back(std::move(e.model));
    e.st.state = VersionState::kEnd;
    log_event("info", "version_unloaded",
              {{"model", config_.name}, {"version", v}, {"reason", std::string("version policy")}});
  }
}

void Model::poll() {
  const std::set<int64_t> on_disk = versions_on_disk(config_.base_path);
  forget_removed(on_disk);
  std::set<int64_t> want;
  // A failed load changes what the policy picks: repeat until stable.
  for (size_t round = 0; round <= on_disk.size(); ++round) {
    std::vector<int64_t> todo;
    {
      std::lock_guard<std::mutex> lock(mu_);
      want = wanted(on_disk);
      for (auto it = want.rbegin(); it != want.rend(); ++it) {
        auto e = versions_.find(*it);
        if (e == versions_.end() || !e->second.model) todo.push_back(*it);
      }
    }
    if (todo.empty()) break;
    for (int64_t v : todo) load(v);
  }
  unload_unwanted(want);
}

ModelHandle Model::find(std::optional<int64_t> version, const std::string& label) const {
  if (!label.empty()) {
    auto it = config_.labels.find(label);
    if (it == config_.labels.end())
      throw InvalidArgumentError("Unrecognized servable version label: " + label);
    version = it->second;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (version) {
    auto it = versions_.find(*version);
    if (it != versions_.end() && it->second.model) return {it->second.model, *version};
    throw NotFoundError("Servable not found for request: Specific(" + config_.name + ", " +
                        std::to_string(*version) + ")");
  }
  for (auto it = versions_.rbegin(); it != versions_.rend(); ++it)
    if (it->second.model) return {it->second.model, it->first};
  throw NotFoundError("Servable not found for request: Latest(" + config_.name + ")");
}

std::vector<VersionStatus> Model::status(std::optional<int64_t> version) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<VersionStatus> out;
  for (const auto& [v, e] : versions_)
    if (!version || *version == v) out.push_back(e.st);
  return out;
}

int64_t Model::loaded_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [v, e] : versions_) n += e.model != nullptr;
  return n;
}

int64_t Model::load_failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

ModelManager::ModelManager(const std::vector<ModelConfig>& configs, Loader loader) {
  for (const auto& c : configs) models_.push_back(std::make_unique<Model>(c, loader));
}

ModelManager::~ModelManager() {
  stop_polling();
}

void ModelManager::poll_all() {
  for (auto& m : models_) m->poll();
}

void ModelManager::start_polling(int seconds) {
  if (seconds <= 0) return;
  poller_ = std::thread([this, seconds] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return stop_; })) {
      lock.unlock();
      poll_all();
      lock.lock();
    }
  });
}

void ModelManager::stop_polling() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
}

const Model* ModelManager::find(const std::string& name) const {
  for (const auto& m : models_)
    if (m->config().name == name) return m.get();
  return nullptr;
}

}  // namespace kiln::serve
