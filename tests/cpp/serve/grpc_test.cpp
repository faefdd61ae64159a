// kiln-serve's gRPC API (tools/serve/grpc_server.h, grpc_convert.h): a real
// server on a loopback port and gRPC's own client stubs: Predict against the
// in-process call, output filters, versions and labels, metadata, status,
// TensorFlow Serving's status codes for bad requests, deadlines, message
// limits, and hostile TensorProtos.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "batching.h"
#include "executor.h"
#include "grpc_convert.h"
#include "grpc_server.h"
#include "kiln/kiln.h"
#include "kiln/saved_model.h"
#include "metrics.h"
#include "models.h"
#include "serving.grpc.pb.h"

namespace kiln::serve {
namespace {
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/kiln_grpc_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Version v: serving_default y = 2x + v (x float32 [None, 2]); multi takes a
// float matrix and strings and returns a sum per row and the strings doubled.
void save_version(const fs::path& dir, float v) {
  Function f([v](const std::vector<Value>& a) {
    return Value::dict({{"y", Value(a[0].tensor() * Tensor(2.0f) + Tensor(v))}});
  });
  Function g([](const std::vector<Value>& a) {
    return Value::dict({{"total", Value(reduce_sum(a[0].tensor(), {1}, false))},
                        {"twice", Value(string_join({a[1].tensor(), a[1].tensor()}))}});
  });
  saved_model::Exporter e;
  e.add_signature("serving_default",
                  f.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape{-1, 2}, "x"})}),
                  {"x"}, {"y"});
  e.add_signature("multi",
                  g.get_concrete_function({Value(ArgSpec{DType::kFloat32, Shape{-1, 2}, "a"}),
                                           Value(ArgSpec{DType::kString, Shape{-1}, "s"})}),
                  {"a", "s"}, {"total", "twice"});
  e.save(dir.string());
}

tensorflow::TensorProto floats(std::vector<float> v, std::vector<int64_t> dims) {
  tensorflow::TensorProto p;
  p.set_dtype(tensorflow::DT_FLOAT);
  for (int64_t d : dims) p.mutable_tensor_shape()->add_dim()->set_size(d);
  p.set_tensor_content(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  return p;
}

std::vector<float> values(const tensorflow::TensorProto& p) {
  std::vector<float> v(p.tensor_content().size() / 4);
  std::memcpy(v.data(), p.tensor_content().data(), v.size() * 4);
  return v;
}

// A server for model "m" (versions 1 and 2, label "stable" = 1) and a client.
class GrpcApi : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(const Flags& extra, Batcher* batcher = nullptr) {
    save_version(dir_.path / "1", 1.f);
    save_version(dir_.path / "2", 2.f);
    ModelConfig c;
    c.name = "m";
    c.base_path = dir_.path.string();
    c.policy.kind = VersionPolicy::Kind::kAll;
    c.labels["stable"] = 1;
    models_ = std::make_unique<ModelManager>(std::vector<ModelConfig>{c});
    models_->poll_all();
    flags_ = extra;
    flags_.rest_api_host = "127.0.0.1";
    flags_.grpc_port = 0;
    runner_ = std::make_unique<Runner>(&executor_, batcher);
    server_ = std::make_unique<GrpcServer>(flags_, *models_, metrics_, *runner_);
    const int port = server_->start();
    ASSERT_GT(port, 0);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    predict_ = tfs::PredictionService::NewStub(channel);
    status_ = tfs::ModelService::NewStub(channel);
  }

  void TearDown() override {
    if (server_) server_->stop();
  }

  grpc::Status predict(const tfs::PredictRequest& req, tfs::PredictResponse* resp,
                       int timeout_ms = 30000) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    return predict_->Predict(&ctx, req, resp);
  }

  static tfs::PredictRequest request(const std::string& model = "m") {
    tfs::PredictRequest req;
    req.mutable_model_spec()->set_name(model);
    (*req.mutable_inputs())["x"] = floats({1, 2, 3, 4}, {2, 2});
    return req;
  }

  TempDir dir_;
  Flags flags_;
  std::unique_ptr<ModelManager> models_;
  Metrics metrics_;
  Executor executor_{2};
  std::unique_ptr<Runner> runner_;
  std::unique_ptr<GrpcServer> server_;
  std::unique_ptr<tfs::PredictionService::Stub> predict_;
  std::unique_ptr<tfs::ModelService::Stub> status_;
};

TEST_F(GrpcApi, PredictMatchesTheInProcessCall) {
  tfs::PredictResponse resp;
  ASSERT_TRUE(predict(request(), &resp).ok());
  const auto& y = resp.outputs().at("y");
  EXPECT_EQ(y.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(y.tensor_shape().dim_size(), 2);
  EXPECT_EQ(y.tensor_shape().dim(0).size(), 2);
  EXPECT_EQ(values(y), (std::vector<float>{4, 6, 8, 10}));  // newest version: 2x + 2
  EXPECT_EQ(resp.model_spec().name(), "m");
  EXPECT_EQ(resp.model_spec().version().value(), 2);
  EXPECT_EQ(resp.model_spec().signature_name(), "serving_default");
  const auto loaded = saved_model::load((dir_.path / "2").string());
  const Tensor want = loaded
                          ->signature("serving_default")(
                              {{"x", Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2})}})
                          .at("y");
  EXPECT_EQ(values(y), (std::vector<float>(want.data<float>(), want.data<float>() + 4)));
}

TEST_F(GrpcApi, VersionsLabelsTypedValuesStringsAndFilters) {
  tfs::PredictRequest req = request();
  req.mutable_model_spec()->mutable_version()->set_value(1);
  tfs::PredictResponse resp;
  ASSERT_TRUE(predict(req, &resp).ok());
  EXPECT_EQ(values(resp.outputs().at("y")), (std::vector<float>{3, 5, 7, 9}));
  req.mutable_model_spec()->set_version_label("stable");
  resp.Clear();
  ASSERT_TRUE(predict(req, &resp).ok());
  EXPECT_EQ(resp.model_spec().version().value(), 1);
  // float_val (TensorFlow's make_tensor_proto for small values), one value repeated.
  tfs::PredictRequest multi;
  multi.mutable_model_spec()->set_name("m");
  multi.mutable_model_spec()->set_signature_name("multi");
  tensorflow::TensorProto a;
  a.set_dtype(tensorflow::DT_FLOAT);
  a.mutable_tensor_shape()->add_dim()->set_size(2);
  a.mutable_tensor_shape()->add_dim()->set_size(2);
  a.add_float_val(1.5f);
  tensorflow::TensorProto s;
  s.set_dtype(tensorflow::DT_STRING);
  s.mutable_tensor_shape()->add_dim()->set_size(2);
  s.add_string_val("ab");
  s.add_string_val(std::string("\0\xff", 2));
  (*multi.mutable_inputs())["a"] = a;
  (*multi.mutable_inputs())["s"] = s;
  multi.add_output_filter("twice");
  resp.Clear();
  ASSERT_TRUE(predict(multi, &resp).ok());
  ASSERT_EQ(resp.outputs().size(), 1u);
  const auto& twice = resp.outputs().at("twice");
  ASSERT_EQ(twice.string_val_size(), 2);
  EXPECT_EQ(twice.string_val(0), "abab");
  EXPECT_EQ(twice.string_val(1), std::string("\0\xff\0\xff", 4));
  multi.clear_output_filter();
  resp.Clear();
  ASSERT_TRUE(predict(multi, &resp).ok());
  EXPECT_EQ(values(resp.outputs().at("total")), (std::vector<float>{3, 3}));
}

struct BadCase {
  const char* what;
  std::function<void(tfs::PredictRequest&)> change;
  grpc::StatusCode code;
  const char* message;
};

TEST_F(GrpcApi, BadRequestsGetTensorFlowServingsCodes) {
  const std::vector<BadCase> cases = {
      {"unknown model", [](auto& r) { r.mutable_model_spec()->set_name("nope"); }, grpc::NOT_FOUND,
       "Servable not found for request: Latest(nope)"},
      {"unknown version", [](auto& r) { r.mutable_model_spec()->mutable_version()->set_value(7); },
       grpc::NOT_FOUND, "7"},
      {"unknown label", [](auto& r) { r.mutable_model_spec()->set_version_label("canary"); },
       grpc::INVALID_ARGUMENT, "canary"},
      {"unknown signature", [](auto& r) { r.mutable_model_spec()->set_signature_name("zzz"); },
       grpc::INVALID_ARGUMENT, "Serving signature name: \"zzz\" not found"},
      {"unknown input",
       [](auto& r) {
         (*r.mutable_inputs())["w"] = floats({1, 2}, {1, 2});
       },
       grpc::INVALID_ARGUMENT, "input tensor alias not found in signature: w"},
      {"missing input", [](auto& r) { r.mutable_inputs()->clear(); }, grpc::INVALID_ARGUMENT,
       "missing input 'x'"},
      {"wrong dtype", [](auto& r) { (*r.mutable_inputs())["x"].set_dtype(tensorflow::DT_INT64); },
       grpc::INVALID_ARGUMENT, "expects DT_FLOAT but DT_INT64 is provided"},
      {"unknown dtype number",
       [](auto& r) { (*r.mutable_inputs())["x"].set_dtype(static_cast<tensorflow::DataType>(99)); },
       grpc::INVALID_ARGUMENT, "dtype 99"},
      {"wrong shape",
       [](auto& r) {
         (*r.mutable_inputs())["x"] = floats({1, 2, 3}, {1, 3});
       },
       grpc::INVALID_ARGUMENT, ""},
      {"content shorter than the shape",
       [](auto& r) {
         (*r.mutable_inputs())["x"] = floats({1, 2, 3}, {2, 2});
       },
       grpc::INVALID_ARGUMENT, "input 'x'"},
      {"huge declared shape",
       [](auto& r) {
         tensorflow::TensorProto p;
         p.set_dtype(tensorflow::DT_FLOAT);
         p.mutable_tensor_shape()->add_dim()->set_size(int64_t{1} << 40);
         p.mutable_tensor_shape()->add_dim()->set_size(2);
         p.add_float_val(1);
         (*r.mutable_inputs())["x"] = p;
       },
       grpc::INVALID_ARGUMENT, "over --max_tensor_bytes"},
      {"negative dimension",
       [](auto& r) {
         (*r.mutable_inputs())["x"].mutable_tensor_shape()->mutable_dim(0)->set_size(-3);
       },
       grpc::INVALID_ARGUMENT, "negative dimension"},
      {"unknown rank",
       [](auto& r) { (*r.mutable_inputs())["x"].mutable_tensor_shape()->set_unknown_rank(true); },
       grpc::INVALID_ARGUMENT, "shape must be known"},
      {"unknown output filter", [](auto& r) { r.add_output_filter("q"); }, grpc::INVALID_ARGUMENT,
       "output tensor alias not found in signature: q"},
      {"repeated output filter",
       [](auto& r) {
         r.add_output_filter("y");
         r.add_output_filter("y");
       },
       grpc::INVALID_ARGUMENT, "duplicate output tensor alias: y"},
  };
  for (const auto& c : cases) {
    tfs::PredictRequest req = request();
    c.change(req);
    tfs::PredictResponse resp;
    const grpc::Status st = predict(req, &resp);
    EXPECT_EQ(st.error_code(), c.code) << c.what << ": " << st.error_message();
    EXPECT_NE(st.error_message().find(c.message), std::string::npos)
        << c.what << ": " << st.error_message();
  }
  // The errors of configured models are counted as TensorFlow Serving counts them.
  const std::string text = metrics_.prometheus(*models_);
  EXPECT_NE(text.find("API=\"predict\",entrypoint=\"GRPC\""), std::string::npos) << text;
  EXPECT_NE(text.find("status=\"INVALID_ARGUMENT\""), std::string::npos) << text;
}

TEST_F(GrpcApi, HostileTensorProtosNeverCrash) {
  // Random TensorProtos (dtypes, dims, content lengths, typed values) and
  // byte edits of a valid one, through the whole Predict path: every answer
  // is OK or INVALID_ARGUMENT.
  const std::string valid = floats({1, 2, 3, 4}, {2, 2}).SerializeAsString();
  const tensorflow::DataType dtypes[] = {tensorflow::DT_FLOAT,  tensorflow::DT_FLOAT,
                                         tensorflow::DT_STRING, tensorflow::DT_BOOL,
                                         tensorflow::DT_HALF,   tensorflow::DT_INVALID};
  std::mt19937 rng(7);
  int ok = 0, invalid = 0;
  for (int i = 0; i < 600; ++i) {
    tensorflow::TensorProto p;
    if (i % 2) {
      std::string b = valid;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !b.empty(); ++e) {
        const size_t at = rng() % b.size();
        switch (rng() % 3) {
          case 0: b[at] = static_cast<char>(rng()); break;
          case 1: b.erase(at, 1 + rng() % 3); break;
          default: b.insert(at, 1, static_cast<char>(rng())); break;
        }
      }
      if (!p.ParseFromString(b)) continue;
    } else {
      p.set_dtype(dtypes[rng() % 6]);
      for (int d = static_cast<int>(rng() % 4); d > 0; --d)
        p.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(rng() % 5) - 1);
      if (rng() % 2) p.set_tensor_content(std::string(rng() % 40, '\x01'));
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) p.add_float_val(1.f);
      if (rng() % 4 == 0) p.add_string_val("s");
    }
    tfs::PredictRequest req = request();
    (*req.mutable_inputs())["x"] = p;
    tfs::PredictResponse resp;
    const grpc::Status st = predict(req, &resp);
    ASSERT_TRUE(st.ok() || st.error_code() == grpc::INVALID_ARGUMENT)
        << st.error_code() << ": " << st.error_message() << "\n"
        << p.DebugString();
    (st.ok() ? ok : invalid)++;
  }
  EXPECT_GT(invalid, 200);
  EXPECT_GT(ok, 5);
}

TEST_F(GrpcApi, MetadataAndStatus) {
  tfs::GetModelMetadataRequest req;
  req.mutable_model_spec()->set_name("m");
  req.add_metadata_field("signature_def");
  tfs::GetModelMetadataResponse resp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(predict_->GetModelMetadata(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(resp.model_spec().version().value(), 2);
  const tfs::Any& any = resp.metadata().at("signature_def");
  EXPECT_EQ(any.type_url(), kSignatureDefMapUrl);
  tfs::SignatureDefMap map;
  ASSERT_TRUE(map.ParseFromString(any.value()));
  const auto& def = map.signature_def().at("serving_default");
  EXPECT_EQ(def.method_name(), "tensorflow/serving/predict");
  const auto& x = def.inputs().at("x");
  EXPECT_EQ(x.name(), "serving_default_x:0");
  EXPECT_EQ(x.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(x.tensor_shape().dim_size(), 2);
  EXPECT_EQ(x.tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(def.outputs().at("y").name(), "StatefulPartitionedCall:0");
  EXPECT_EQ(map.signature_def().at("multi").inputs().at("s").dtype(), tensorflow::DT_STRING);
  for (const char* field : {"", "bogus"}) {
    tfs::GetModelMetadataRequest bad = req;
    bad.clear_metadata_field();
    if (*field) bad.add_metadata_field(field);
    grpc::ClientContext ctx;
    EXPECT_EQ(predict_->GetModelMetadata(&ctx, bad, &resp).error_code(), grpc::INVALID_ARGUMENT);
  }

  tfs::GetModelStatusRequest sreq;
  sreq.mutable_model_spec()->set_name("m");
  tfs::GetModelStatusResponse sresp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(status_->GetModelStatus(&ctx, sreq, &sresp).ok());
  }
  ASSERT_EQ(sresp.model_version_status_size(), 2);
  EXPECT_EQ(sresp.model_version_status(1).version(), 2);
  EXPECT_EQ(sresp.model_version_status(1).state(), tfs::ModelVersionStatus::AVAILABLE);
  EXPECT_EQ(sresp.model_version_status(1).status().error_code(), 0);
  sreq.mutable_model_spec()->mutable_version()->set_value(1);
  sresp.Clear();
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(status_->GetModelStatus(&ctx, sreq, &sresp).ok());
  }
  ASSERT_EQ(sresp.model_version_status_size(), 1);
  EXPECT_EQ(sresp.model_version_status(0).version(), 1);
  sreq.mutable_model_spec()->set_name("nope");
  grpc::ClientContext ctx;
  EXPECT_EQ(status_->GetModelStatus(&ctx, sreq, &sresp).error_code(), grpc::NOT_FOUND);
}

TEST_F(GrpcApi, MessagesOverTheBodyLimitAreRefused) {
  TearDown();
  Flags f;
  f.max_body_bytes = 1000;
  start(f);
  tfs::PredictRequest req = request();
  (*req.mutable_inputs())["x"] = floats(std::vector<float>(600, 1.f), {300, 2});
  tfs::PredictResponse resp;
  EXPECT_EQ(predict(req, &resp).error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(predict(request(), &resp).ok());  // small ones still pass
}

TEST_F(GrpcApi, DeadlinesAndBatching) {
  TearDown();
  // A batch that waits 3 s for company: past the server's 300 ms limit the
  // call gets DEADLINE_EXCEEDED in kiln-serve's words.
  BatchingOptions o;
  o.max_batch_size = 64;
  o.batch_timeout_micros = 3'000'000;
  Batcher slow(o);
  Flags f;
  f.rest_api_timeout_in_ms = 300;
  start(f, &slow);
  tfs::PredictResponse resp;
  const grpc::Status st = predict(request(), &resp);
  EXPECT_EQ(st.error_code(), grpc::DEADLINE_EXCEEDED);
  EXPECT_NE(st.error_message().find("Deadline exceeded"), std::string::npos) << st.error_message();
  server_->stop();
  server_.reset();
}

TEST_F(GrpcApi, ConcurrentPredictsAreBatched) {
  TearDown();
  BatchingOptions o;
  o.max_batch_size = 8;
  o.batch_timeout_micros = 200'000;
  Batcher batcher(o);
  start({}, &batcher);
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&] {
      tfs::PredictResponse resp;
      if (predict(request(), &resp).ok() &&
          values(resp.outputs().at("y")) == std::vector<float>{4, 6, 8, 10})
        ++good;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 4);
  EXPECT_LT(batcher.batches(), 4);
  server_->stop();
  server_.reset();
}

}  // namespace
}  // namespace kiln::serve
