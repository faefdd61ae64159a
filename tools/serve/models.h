// The models kiln-serve serves: each one's versions on disk, loaded and
// unloaded by its version policy. Requests take a shared_ptr to a loaded
// version, so a version swapped out finishes the requests it is serving.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kiln/saved_model.h"
#include "kiln/status.h"
#include "model_config.h"

namespace kiln::serve {

/// TensorFlow Serving's ModelVersionStatus.State.
enum class VersionState { kStart, kLoading, kAvailable, kUnloading, kEnd };
const char* state_name(VersionState s);
/// TensorFlow's error code name of a status: "OK", "INVALID_ARGUMENT", ...
const char* tf_code_name(Code c);

struct VersionStatus {
  int64_t version = 0;
  VersionState state = VersionState::kStart;
  Code error_code = Code::kOk;
  std::string error_message;
};

/// A loaded version a request holds on to.
struct ModelHandle {
  std::shared_ptr<const saved_model::SavedModel> model;
  int64_t version = 0;
};

/// Loads a version's directory (kiln::saved_model::load; replaceable in tests).
using Loader = std::shared_ptr<const saved_model::SavedModel> (*)(const std::string& dir);

class Model {
 public:
  explicit Model(ModelConfig config, Loader loader = &saved_model::load);
  const ModelConfig& config() const { return config_; }
  /// Scans the base path: loads the versions the policy wants (a version
  /// that fails stays END with its error and is not retried until it leaves
  /// the disk; the policy then picks among the others), then unloads the rest.
  void poll();
  /// The version asked for: `version`, else `label`'s, else the newest
  /// loaded one. NotFoundError / InvalidArgumentError (unknown label).
  ModelHandle find(std::optional<int64_t> version, const std::string& label = "") const;
  /// Every version seen, oldest first (optionally only `version`).
  std::vector<VersionStatus> status(std::optional<int64_t> version = std::nullopt) const;
  /// Versions currently AVAILABLE.
  int64_t loaded_count() const;
  /// Load attempts that failed so far.
  int64_t load_failures() const;

 private:
  struct Entry {
    VersionStatus st;
    std::shared_ptr<const saved_model::SavedModel> model;
    bool failed = false;
  };
  std::set<int64_t> wanted(const std::set<int64_t>& on_disk) const;
  void forget_removed(const std::set<int64_t>& on_disk);
  void load(int64_t version);
  void unload_unwanted(const std::set<int64_t>& wanted);
  std::string version_dir(int64_t v) const;

  ModelConfig config_;
  Loader loader_;
  mutable std::mutex mu_;
  std::map<int64_t, Entry> versions_;
  int64_t failures_ = 0;
};

/// Every configured model and the thread that polls their base paths.
class ModelManager {
 public:
  explicit ModelManager(const std::vector<ModelConfig>& configs,
                        Loader loader = &saved_model::load);
  ~ModelManager();
  /// One scan of every model (start-up, and the poller's loop).
  void poll_all();
  /// Scans every `seconds` on a background thread (none when 0).
  void start_polling(int seconds);
  void stop_polling();
  /// nullptr when no model has that name.
  const Model* find(const std::string& name) const;
  const std::vector<std::unique_ptr<Model>>& models() const { return models_; }

 private:
  std::vector<std::unique_ptr<Model>> models_;
  std::thread poller_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace kiln::serve
