// kiln-serve's units (tools/serve/): flags, model config and version
// policies, JSON <-> tensors, routes, and model versions on disk.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "convert.h"
#include "executor.h"
#include "flags.h"
#include "json.h"
#include "kiln/kiln.h"
#include "kiln/saved_model.h"
#include "metrics.h"
#include "model_config.h"
#include "models.h"
#include "rest.h"

namespace kiln::serve {
namespace {
namespace fs = std::filesystem;

// ---- flags ----

struct FlagCase {
  std::vector<std::string> args;
  std::string error;  // substring of the error; "" = parses
};

TEST(ServeFlags, Table) {
  const std::vector<FlagCase> cases = {
      {{"--model_base_path=/m"}, ""},
      {{"--model_base_path", "/m", "--rest_api_port", "0"}, ""},
      {{"--model_config_file=/c"}, ""},
      {{}, "exactly one of"},
      {{"--model_base_path=/m", "--model_config_file=/c"}, "exactly one of"},
      {{"--model_base_path=/m", "--bogus=1"}, "unknown flag --bogus"},
      {{"--model_base_path=/m", "--rest_api_port=abc"}, "not an integer"},
      {{"--model_base_path=/m", "--rest_api_port=70000"}, "out of range"},
      {{"--model_base_path=/m", "--rest_api_port=8x"}, "not an integer"},
      {{"--model_base_path=/m", "--max_body_bytes=0"}, "out of range"},
      {{"--model_base_path"}, "missing value"},
      {{"model"}, "unexpected argument"},
  };
  for (const auto& c : cases) {
    const FlagsOrError r = parse_flags(c.args);
    if (c.error.empty()) {
      EXPECT_EQ(r.error, "") << c.args[0];
    } else {
      EXPECT_NE(r.error.find(c.error), std::string::npos) << r.error;
    }
  }
}

TEST(ServeFlags, Values) {
  const FlagsOrError r = parse_flags(
      {"--model_base_path=/m", "--model_name=digits", "--rest_api_port=0", "--port=8500",
       "--file_system_poll_wait_seconds=0", "--rest_api_timeout_in_ms=250", "--max_body_bytes=1000",
       "--grpc_max_threads=64", "--max_tensor_bytes=4096"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.flags.grpc_max_threads, 64);
  EXPECT_EQ(r.flags.max_tensor_bytes, 4096);
  EXPECT_EQ(parse_flags({"--model_base_path=/m"}).flags.grpc_port, 8500);  // TF Serving's
  EXPECT_NE(parse_flags({"--model_base_path=/m", "--grpc_max_threads=1"}).error, "");
  EXPECT_EQ(r.flags.model_name, "digits");
  EXPECT_EQ(r.flags.rest_api_port, 0);
  EXPECT_EQ(r.flags.grpc_port, 8500);
  EXPECT_EQ(r.flags.file_system_poll_wait_seconds, 0);
  EXPECT_EQ(r.flags.rest_api_timeout_in_ms, 250);
  EXPECT_EQ(r.flags.max_body_bytes, 1000);
  EXPECT_TRUE(parse_flags({"--help"}).flags.help);
  EXPECT_NE(usage_text().find("--model_config_file"), std::string::npos);
}

// ---- model config ----

TEST(ServeModelConfig, ParsesPoliciesAndLabels) {
  const ConfigOrError r = parse_model_config(R"(
    # two models
    model_config_list {
      config {
        name: "a" base_path: "/models/a" model_platform: "tensorflow"
        model_version_policy { latest { num_versions: 2 } }
        version_labels { key: "stable" value: 1 }
      }
      config { name: 'b', base_path: "/models/b" model_version_policy { all {} } }
      config: { name: "c" base_path: "/c"
                model_version_policy { specific { versions: 1 versions: 3 } } }
    })");
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.models.size(), 3u);
  EXPECT_EQ(r.models[0].policy.kind, VersionPolicy::Kind::kLatest);
  EXPECT_EQ(r.models[0].policy.num_versions, 2);
  EXPECT_EQ(r.models[0].labels.at("stable"), 1);
  EXPECT_EQ(r.models[1].name, "b");
  EXPECT_EQ(r.models[1].policy.kind, VersionPolicy::Kind::kAll);
  EXPECT_EQ(r.models[2].policy.versions, (std::set<int64_t>{1, 3}));
}

TEST(ServeModelConfig, Errors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no models"},
      {"model_config_list { config { name: \"a\" } }", "needs name and base_path"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" colour: 1 } }", "unknown field"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" "
       "model_version_policy { newest {} } } }",
       "unknown version policy"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" "
       "model_version_policy { latest { num_versions: 0 } } } }",
       "at least 1"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" "
       "model_version_policy { specific { } } } }",
       "lists no versions"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" } "
       "config { name: \"a\" base_path: \"/q\" } }",
       "duplicate model name"},
      {"model_config_list { config { name: \"a", "line 1"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" }", "missing '}'"},
      {[] {
         std::string deep;
         for (int i = 0; i < 20; ++i) deep += "a { ";
         return deep;
       }(),
       "nested too deeply"},
      {"model_config_list { config { name \"a\" } }", "expected ':' or '{'"},
      {"other {}", "expected model_config_list"},
      {"model_config_list { config { name: \"a\" base_path: \"/p\" model_platform: \"onnx\" } }",
       "only \"tensorflow\""},
  };
  for (const auto& [text, want] : cases) {
    const ConfigOrError r = parse_model_config(text);
    EXPECT_NE(r.error.find(want), std::string::npos) << text << " -> " << r.error;
  }
}

TEST(ServeVersionPolicy, SelectsVersions) {
  const std::set<int64_t> disk = {1, 2, 5, 7};
  VersionPolicy latest;
  EXPECT_EQ(select_versions(latest, disk), (std::set<int64_t>{7}));
  latest.num_versions = 3;
  EXPECT_EQ(select_versions(latest, disk), (std::set<int64_t>{2, 5, 7}));
  latest.num_versions = 9;
  EXPECT_EQ(select_versions(latest, disk), disk);
  EXPECT_EQ(select_versions(latest, {}), (std::set<int64_t>{}));
  VersionPolicy all;
  all.kind = VersionPolicy::Kind::kAll;
  EXPECT_EQ(select_versions(all, disk), disk);
  VersionPolicy specific;
  specific.kind = VersionPolicy::Kind::kSpecific;
  specific.versions = {2, 3, 7};
  EXPECT_EQ(select_versions(specific, disk), (std::set<int64_t>{2, 7}));
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln_serve_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(ServeVersionPolicy, VersionsOnDiskAreNumericDirectories) {
  TempDir d;
  for (const char* n : {"1", "10", "007", "x1", "2a", "-3"}) fs::create_directory(d.path / n);
  std::ofstream(d.path / "4") << "a file";
  EXPECT_EQ(versions_on_disk(d.path.string()), (std::set<int64_t>{1, 7, 10}));
  EXPECT_TRUE(versions_on_disk((d.path / "missing").string()).empty());
}

// ---- JSON ----

TEST(ServeJson, WriterAndFloats) {
  JsonWriter w;
  w.begin_object().key("a").begin_array().float32(0.1f).float32(1e-45f).float32(3.4028235e38f);
  w.float64(0.1).int64(-7).boolean(true).end_array();
  w.key("s").string("q\"\\\n\x01").key("e").begin_array().end_array();
  w.key("n").begin_array().float32(NAN).float32(-INFINITY).end_array().end_object();
  EXPECT_EQ(w.str(), R"({"a":[0.1,1e-45,3.4028235e+38,0.1,-7,true],"s":"q\"\\\n\u0001","e":[],)"
                     R"("n":[NaN,-Infinity]})");
  EXPECT_EQ(error_body("bad \xff"), R"({"error":"bad ?"})");
}

TEST(ServeJson, Base64) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)).value(), s);
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_EQ(base64_decode("aGVsbG8").value(), "hello");  // padding optional
  EXPECT_EQ(base64_decode("_-8").value(), "\xff\xef");   // URL-safe alphabet
  EXPECT_FALSE(base64_decode("a!bc").has_value());
  EXPECT_FALSE(base64_decode("abcde").has_value());
  EXPECT_TRUE(valid_utf8("h\xc3\xa9llo"));
  EXPECT_FALSE(valid_utf8("\xc3"));
  EXPECT_FALSE(valid_utf8("\xff"));
}

// ---- predict requests ----

const std::vector<TensorInfo> kFeatures = {{"x", DType::kFloat32, Shape{-1, 2}}};

std::map<std::string, Tensor> parse(const std::string& body, const std::vector<TensorInfo>& in,
                                    bool* rows = nullptr) {
  PredictRequest r;
  r.parse(body);
  if (rows) *rows = r.row_format();
  return r.tensors(in);
}

TEST(ServePredict, RowsAndColumns) {
  bool rows = false;
  auto t = parse(R"({"instances": [[1, 2.5], [3, -4e-3]]})", kFeatures, &rows).at("x");
  EXPECT_TRUE(rows);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2.5f, 3, -4e-3f}));
  t = parse(R"({"inputs": {"x": [[1, 2]]}})", kFeatures, &rows).at("x");
  EXPECT_FALSE(rows);
  EXPECT_EQ(t.shape(), (Shape{1, 2}));
  t = parse(R"({"inputs": [[1, 2]], "signature_name": "serving_default"})", kFeatures).at("x");
  EXPECT_EQ(t.shape(), (Shape{1, 2}));
  t = parse(R"({"instances": [{"x": [5, 6]}]})", kFeatures).at("x");
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 6}));
  t = parse(R"({"inputs": 3})", {{"s", DType::kInt64, Shape{}}}).at("s");
  EXPECT_EQ(t.shape(), Shape{});
  EXPECT_EQ(t.item<int64_t>(), 3);
}

TEST(ServePredict, NamedInputsStringsAndBools) {
  const std::vector<TensorInfo> in = {{"s", DType::kString, Shape{-1}},
                                      {"b", DType::kBool, Shape{-1}},
                                      {"i", DType::kInt32, Shape{-1, 2}},
                                      {"u", DType::kUInt8, Shape{-1}}};
  auto m = parse(R"({"instances": [{"s": "hi", "b": true, "i": [1, 2], "u": 255},
                                   {"s": {"b64": "AP8="}, "b": false, "i": [3, 4], "u": 0}]})",
                 in);
  EXPECT_EQ(m.at("s").to_vector<std::string>(),
            (std::vector<std::string>{"hi", std::string("\0\xff", 2)}));
  EXPECT_EQ(m.at("b").data<bool>()[0], true);
  EXPECT_EQ(m.at("i").shape(), (Shape{2, 2}));
  EXPECT_EQ(m.at("u").to_vector<uint8_t>(), (std::vector<uint8_t>{255, 0}));
  PredictRequest r;
  r.parse(
      R"({"signature_name": "other", "inputs": {"s": ["a"], "b": [true], "i": [[1,2]], "u": [1]}})");
  EXPECT_EQ(r.signature_name(), "other");
  EXPECT_EQ(r.tensors(in).at("s").shape(), (Shape{1}));
}

TEST(ServePredict, BadRequests) {
  const std::vector<TensorInfo> two = {{"a", DType::kFloat32, Shape{-1}},
                                       {"b", DType::kInt64, Shape{-1}}};
  const std::vector<TensorInfo> str = {{"s", DType::kString, Shape{-1}}};
  const std::vector<std::tuple<std::string, std::vector<TensorInfo>, std::string>> cases = {
      {"", kFeatures, "malformed JSON"},
      {"{", kFeatures, "malformed JSON"},
      {"[1]", kFeatures, "must be a JSON object"},
      {R"({"instances": [[1,2]], "inputs": [[1,2]]})", kFeatures, "not both"},
      {R"({"signature_name": "x"})", kFeatures, "missing 'instances' or 'inputs'"},
      {R"({"signature_name": 3, "inputs": 1})", kFeatures, "must be a string"},
      {R"({"instances": []})", kFeatures, "is empty"},
      {R"({"instances": 5})", kFeatures, "must be a list"},
      {R"({"instances": [[1,2],[3]]})", kFeatures, "ragged"},
      {R"({"instances": [[1,2],[3,[4]]]})", kFeatures, "ragged"},
      {R"({"instances": [[1,"a"]]})", kFeatures, "expected numbers"},
      {R"({"instances": [[1,true]]})", kFeatures, "expected numbers"},
      {R"({"instances": [{"y": [1,2]}]})", kFeatures, "not an input"},
      {R"({"instances": [{"a": 1}]})", two, "missing input 'b'"},
      {R"({"instances": [1, 2]})", two, "must be an object naming"},
      {R"({"instances": [{"a": 1, "b": 2}, 3]})", two, "instance 1 is not an object"},
      {R"({"instances": [{"a": 1, "b": 2.5}]})", two, "expected integers"},
      {R"({"instances": [{"a": 1, "b": 99999999999999999999}]})", two, "parsing a number"},
      {R"({"inputs": [1]})", two, "must be an object naming"},
      {R"({"inputs": {"a": [1], "b": [1], "c": [1]}})", two, "not an input"},
      {R"({"inputs": {"b64": "!!"}})", str, "invalid base64"},
      {R"({"inputs": [{"b64": 3}]})", str, "expected strings"},
      {R"({"inputs": [1]})", str, "expected strings"},
      {R"({"inputs": [300]})", {{"u", DType::kUInt8, Shape{-1}}}, "fit its dtype"},
      {R"({"inputs": [1]})", {{"c", DType::kComplex64, Shape{-1}}}, "cannot carry"},
      {std::string(100000, '[') + std::string(100000, ']'), kFeatures, "nested deeper than"},
      {"{\"inputs\": " + std::string(70, '[') + std::string(70, ']') + "}", kFeatures,
       "nested deeper than"},
  };
  for (const auto& [body, in, want] : cases) {
    try {
      parse(body, in);
      ADD_FAILURE() << "no error for " << body.substr(0, 80);
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << body.substr(0, 80) << " -> " << e.what();
    }
  }
}

// ---- predict responses ----

TEST(ServePredict, Responses) {
  const Tensor a = Tensor::from_vector<float>({0.1f, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector<int64_t>({7, 8}, {2});
  const Tensor s = Tensor(std::string("x"));
  EXPECT_EQ(predict_response({{"a", a}}, {"a"}, true), R"({"predictions":[[0.1,2],[3,4]]})");
  EXPECT_EQ(predict_response({{"a", a}, {"b", b}}, {"a", "b"}, true),
            R"({"predictions":[{"a":[0.1,2],"b":7},{"a":[3,4],"b":8}]})");
  EXPECT_EQ(predict_response({{"a", a}}, {"a"}, false), R"({"outputs":[[0.1,2],[3,4]]})");
  EXPECT_EQ(predict_response({{"b", b}, {"s", s}}, {"b", "s"}, false),
            R"({"outputs":{"b":[7,8],"s":"x"}})");
  const Tensor bytes = Tensor(std::string("\xff"));
  EXPECT_EQ(predict_response({{"o_bytes", Tensor(std::string("hi"))}}, {"o_bytes"}, false),
            R"({"outputs":{"b64":"aGk="}})");
  EXPECT_EQ(predict_response({{"o", bytes}}, {"o"}, false), R"({"outputs":{"b64":"/w=="}})");
  EXPECT_THROW(predict_response({{"s", s}}, {"s"}, true), InvalidArgumentError);
  const Tensor c = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_THROW(predict_response({{"a", a}, {"c", c}}, {"a", "c"}, true), InvalidArgumentError);
}

// ---- routes ----

TEST(ServeRoutes, Table) {
  using K = Route::Kind;
  struct Case {
    const char* method;
    const char* path;
    K kind;
    std::string model;
    int64_t version;  // -1: none
    std::string label;
  };
  const std::vector<Case> cases = {
      {"GET", "/v1/models/m", K::kStatus, "m", -1, ""},
      {"GET", "/v1/models/m/versions/12", K::kStatus, "m", 12, ""},
      {"GET", "/v1/models/m/labels/stable", K::kStatus, "m", -1, "stable"},
      {"GET", "/v1/models/m/metadata", K::kMetadata, "m", -1, ""},
      {"GET", "/v1/models/m/versions/3/metadata", K::kMetadata, "m", 3, ""},
      {"POST", "/v1/models/m:predict", K::kPredict, "m", -1, ""},
      {"POST", "/v1/models/m/versions/2:predict", K::kPredict, "m", 2, ""},
      {"POST", "/v1/models/m/labels/canary:predict", K::kPredict, "m", -1, "canary"},
      {"POST", "/v1/models/m:classify", K::kClassify, "m", -1, ""},
      {"POST", "/v1/models/m:regress", K::kRegress, "m", -1, ""},
      {"GET", "/monitoring/prometheus/metrics", K::kMetrics, "", -1, ""},
      {"POST", "/v1/models/m:explode", K::kNone, "", -1, ""},
      {"POST", "/v1/models/m", K::kNone, "", -1, ""},
      {"GET", "/v1/models/m:predict", K::kNone, "", -1, ""},
      {"GET", "/v1/models/", K::kNone, "", -1, ""},
      {"GET", "/v1/models/m/versions/x", K::kNone, "", -1, ""},
      {"GET", "/v1/models/m/versions/-1", K::kNone, "", -1, ""},
      {"GET", "/v1/models/m/versions/99999999999999999999", K::kNone, "", -1, ""},
      {"GET", "/v1/models/m/other/1", K::kNone, "", -1, ""},
      {"DELETE", "/v1/models/m", K::kNone, "", -1, ""},
      {"GET", "/", K::kNone, "", -1, ""},
  };
  for (const auto& c : cases) {
    const Route r = parse_route(c.method, c.path);
    EXPECT_EQ(r.kind, c.kind) << c.method << " " << c.path;
    if (c.kind == K::kNone || c.kind == K::kMetrics) continue;
    EXPECT_EQ(r.model, c.model) << c.path;
    EXPECT_EQ(r.version.value_or(-1), c.version) << c.path;
    EXPECT_EQ(r.label, c.label) << c.path;
  }
  EXPECT_EQ(http_status(Code::kInvalidArgument), 400);
  EXPECT_EQ(http_status(Code::kNotFound), 404);
  EXPECT_EQ(http_status(Code::kUnavailable), 503);
  EXPECT_EQ(http_status(Code::kDeadlineExceeded), 504);
  EXPECT_EQ(http_status(Code::kInternal), 500);
}

// ---- models on disk, through the REST handlers ----

// Saves y = 2x + v (x float32 [None, 2]) as `dir`.
void save_double(const std::string& dir, float v) {
  Function f([v](const std::vector<Value>& a) {
    return Value::dict({{"y", Value(a[0].tensor() * Tensor(2.0f) + Tensor(v))}});
  });
  auto cf = f.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape{-1, 2}, "x"})});
  saved_model::Exporter e;
  e.add_signature("serving_default", cf, {"x"}, {"y"});
  e.save(dir);
}

HttpReply call(Rest& rest, const char* method, const std::string& path,
               const std::string& body = "") {
  return rest.handle(method, path, body, Rest::Clock::now() + std::chrono::seconds(30));
}

TEST(ServeModels, VersionsSwapAndFailuresKeepServing) {
  TempDir d;
  const std::string base = d.path.string();
  save_double(base + "/1", 0);
  ModelConfig c;
  c.name = "m";
  c.base_path = base;
  c.labels["stable"] = 1;
  ModelManager models({c});
  Metrics metrics;
  const Runner runner(nullptr, nullptr);
  Rest rest(models, metrics, runner);
  models.poll_all();
  const std::string body = R"({"instances": [[1, 2]]})";
  EXPECT_EQ(call(rest, "POST", "/v1/models/m:predict", body).body, R"({"predictions":[[2,4]]})");
  save_double(base + "/2", 1);
  models.poll_all();
  EXPECT_EQ(call(rest, "POST", "/v1/models/m:predict", body).body, R"({"predictions":[[3,5]]})");
  auto st = call(rest, "GET", "/v1/models/m");
  EXPECT_NE(st.body.find(R"({"version":"1","state":"END")"), std::string::npos) << st.body;
  EXPECT_NE(st.body.find(R"({"version":"2","state":"AVAILABLE")"), std::string::npos) << st.body;
  EXPECT_EQ(call(rest, "POST", "/v1/models/m/versions/1:predict", body).status, 404);
  // A damaged version 3 is reported, and version 2 keeps serving.
  fs::create_directory(base + "/3");
  std::ofstream(base + "/3/saved_model.pb") << "not a saved model";
  models.poll_all();
  EXPECT_EQ(call(rest, "POST", "/v1/models/m:predict", body).body, R"({"predictions":[[3,5]]})");
  st = call(rest, "GET", "/v1/models/m/versions/3");
  EXPECT_NE(st.body.find(R"("state":"END")"), std::string::npos) << st.body;
  EXPECT_EQ(st.body.find(R"("error_code":"OK")"), std::string::npos) << st.body;
  EXPECT_EQ(models.find("m")->load_failures(), 1);
  // Removing version 2 falls back to version 1 (3 stays failed).
  fs::remove_all(base + "/2");
  models.poll_all();
  EXPECT_EQ(call(rest, "POST", "/v1/models/m:predict", body).body, R"({"predictions":[[2,4]]})");
  EXPECT_EQ(call(rest, "POST", "/v1/models/m/labels/stable:predict", body).status, 200);
  EXPECT_EQ(call(rest, "POST", "/v1/models/m/labels/nope:predict", body).status, 400);
  const auto meta = call(rest, "GET", "/v1/models/m/metadata");
  EXPECT_NE(meta.body.find(R"("dtype":"DT_FLOAT","tensor_shape":{"dim":[{"size":"-1","name":""},)"
                           R"({"size":"2","name":""}],"unknown_rank":false})"),
            std::string::npos)
      << meta.body;
  EXPECT_NE(metrics.prometheus(models).find(
                ":tensorflow:serving:request_count{model_name=\"m\",status=\"OK\"}"),
            std::string::npos);
}

// The versions AVAILABLE after a scan of 1, 2, 3 on disk under `policy`.
std::vector<int64_t> served(const VersionPolicy& policy) {
  TempDir d;
  for (int v = 1; v <= 3; ++v) save_double(d.path.string() + "/" + std::to_string(v), v);
  ModelConfig c;
  c.name = "m";
  c.base_path = d.path.string();
  c.policy = policy;
  Model m(c);
  m.poll();
  std::vector<int64_t> out;
  for (const auto& s : m.status())
    if (s.state == VersionState::kAvailable) out.push_back(s.version);
  return out;
}

TEST(ServeModels, VersionPolicies) {
  VersionPolicy p;
  EXPECT_EQ(served(p), (std::vector<int64_t>{3}));
  p.num_versions = 2;
  EXPECT_EQ(served(p), (std::vector<int64_t>{2, 3}));
  p.kind = VersionPolicy::Kind::kAll;
  EXPECT_EQ(served(p), (std::vector<int64_t>{1, 2, 3}));
  p.kind = VersionPolicy::Kind::kSpecific;
  p.versions = {1, 3, 9};
  EXPECT_EQ(served(p), (std::vector<int64_t>{1, 3}));
}

TEST(ServeExecutor, RunsAndTimesOut) {
  Executor ex(1);
  const auto soon = [](int ms) { return Executor::Clock::now() + std::chrono::milliseconds(ms); };
  int x = 0;
  EXPECT_TRUE(ex.run([&x] { x = 1; }, soon(5000)));
  EXPECT_EQ(x, 1);
  EXPECT_THROW(ex.run([] { throw InvalidArgumentError("bad"); }, soon(5000)), InvalidArgumentError);
  auto ran = std::make_shared<std::atomic<int>>(0);
  // The one worker is busy past the deadline: this caller gives up, and the
  // queued task behind it is skipped.
  EXPECT_FALSE(ex.run(
      [ran] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ++*ran;
      },
      soon(20)));
  EXPECT_FALSE(ex.run([ran] { *ran += 10; }, soon(20)));
  EXPECT_TRUE(ex.run([] {}, soon(5000)));
  EXPECT_EQ(ran->load(), 1);
}

TEST(ServeExecutor, YieldingCallersAndWorkersLoseNothing) {
  // A single client (callers and idle workers yield before they sleep) and
  // then eight at once (nobody yields): every call runs exactly once, and a
  // deadline shorter than the yield still ends the wait on time.
  Executor ex(2);
  const auto soon = [] { return Executor::Clock::now() + std::chrono::seconds(30); };
  std::atomic<int> n{0};
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(ex.run([&n] { ++n; }, soon()));
  EXPECT_EQ(n.load(), 2000);
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&] {
      for (int i = 0; i < 500; ++i) EXPECT_TRUE(ex.run([&n] { ++n; }, soon()));
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(n.load(), 6000);
  const auto t0 = Executor::Clock::now();
  EXPECT_FALSE(ex.run([] { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
                      t0 + std::chrono::microseconds(10)));
  EXPECT_LT(Executor::Clock::now() - t0, std::chrono::milliseconds(50));
}

TEST(ServeModels, ErrorReplies) {
  TempDir d;
  save_double(d.path.string() + "/1", 0);
  ModelConfig c;
  c.name = "m";
  c.base_path = d.path.string();
  ModelManager models({c});
  Metrics metrics;
  const Runner runner(nullptr, nullptr);
  Rest rest(models, metrics, runner);
  models.poll_all();
  const std::vector<std::tuple<const char*, std::string, std::string, int>> cases = {
      {"POST", "/v1/models/nope:predict", R"({"instances": [[1, 2]]})", 404},
      {"POST", "/v1/models/m/versions/7:predict", R"({"instances": [[1, 2]]})", 404},
      {"POST", "/v1/models/m:predict", R"({"instances": [[1, 2, 3]]})", 400},
      {"POST", "/v1/models/m:predict", R"({"signature_name": "x", "instances": [[1, 2]]})", 400},
      {"POST", "/v1/models/m:predict", "{nope", 400},
      {"POST", "/v1/models/m:classify", "{}", 501},
      {"GET", "/v1/models/m/versions/9", "", 404},
      {"GET", "/v1/models/nope", "", 404},
      {"GET", "/nothing", "", 404},
  };
  for (const auto& [method, path, body, status] : cases) {
    const HttpReply r = call(rest, method, path, body);
    EXPECT_EQ(r.status, status) << path << " " << body << " -> " << r.body;
    EXPECT_EQ(r.body.rfind("{\"error\":\"", 0), 0u) << r.body;
  }
  // A request past its deadline is 504.
  const HttpReply late = rest.handle("POST", "/v1/models/m:predict", R"({"instances": [[1, 2]]})",
                                     Rest::Clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(late.status, 504);
}

}  // namespace
}  // namespace kiln::serve
