// The REST API's handlers (rest.h).
#include "rest.h"

#include <charconv>

#include "convert.h"
#include "json.h"
#include "metrics.h"
#include "models.h"
#include "service.h"

namespace kiln::serve {

namespace {

bool parse_version(std::string_view s, int64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && v >= 0;
}

// "M", "M/versions/N", "M/labels/L", each optionally + "/metadata" (GET).
bool parse_model_part(std::string_view s, bool get, Route& r) {
  if (get && s.size() > 9 && s.substr(s.size() - 9) == "/metadata") {
    r.kind = Route::Kind::kMetadata;
    s.remove_suffix(9);
  }
  const size_t slash = s.find('/');
  r.model = std::string(s.substr(0, slash));
  if (r.model.empty()) return false;
  if (slash == std::string_view::npos) return true;
  std::string_view rest = s.substr(slash + 1);
  int64_t v = 0;
  if (rest.substr(0, 9) == "versions/" && parse_version(rest.substr(9), v)) {
    r.version = v;
    return true;
  }
  if (rest.substr(0, 7) == "labels/" && rest.size() > 7 && rest.find('/', 7) == rest.npos) {
    r.label = std::string(rest.substr(7));
    return true;
  }
  return false;
}

}  // namespace

Route parse_route(std::string_view method, std::string_view path) {
  Route r;
  if (method == "GET" && path == "/monitoring/prometheus/metrics") {
    r.kind = Route::Kind::kMetrics;
    return r;
  }
  constexpr std::string_view prefix = "/v1/models/";
  if (path.substr(0, prefix.size()) != prefix) return r;
  std::string_view s = path.substr(prefix.size());
  if (method == "GET") {
    r.kind = Route::Kind::kStatus;
    if (s.find(':') != s.npos || !parse_model_part(s, true, r)) return Route{};
    return r;
  }
  const size_t colon = s.rfind(':');
  if (method != "POST" || colon == s.npos) return r;
  const std::string_view verb = s.substr(colon + 1);
  r.kind = verb == "predict"    ? Route::Kind::kPredict
           : verb == "classify" ? Route::Kind::kClassify
           : verb == "regress"  ? Route::Kind::kRegress
                                : Route::Kind::kNone;
  s = s.substr(0, colon);
  if (r.kind == Route::Kind::kNone || s.find(':') != s.npos || !parse_model_part(s, false, r))
    return Route{};
  return r;
}

int http_status(Code c) {
  switch (c) {
    case Code::kOk: return 200;
    case Code::kInvalidArgument: return 400;
    case Code::kOutOfRange: return 400;
    case Code::kNotFound: return 404;
    case Code::kFailedPrecondition: return 412;
    case Code::kResourceExhausted: return 429;
    case Code::kUnimplemented: return 501;
    case Code::kUnavailable: return 503;
    case Code::kDeadlineExceeded: return 504;
    case Code::kInternal:
    case Code::kDataLoss: return 500;
  }
  return 500;
}

namespace {

HttpReply error_reply(Code c, const std::string& msg) {
  return {http_status(c), error_body(msg)};
}

const char* api_name(Route::Kind k) {
  switch (k) {
    case Route::Kind::kStatus: return "status";
    case Route::Kind::kMetadata: return "metadata";
    case Route::Kind::kPredict: return "predict";
    case Route::Kind::kClassify: return "classify";
    case Route::Kind::kRegress: return "regress";
    default: return "other";
  }
}

void write_status(JsonWriter& w, const VersionStatus& s) {
  w.begin_object().key("version").string(std::to_string(s.version));
  w.key("state").string(state_name(s.state));
  w.key("status").begin_object().key("error_code").string(tf_code_name(s.error_code));
  w.key("error_message").string(s.error_message).end_object();
  w.end_object();
}

void write_tensor_info(JsonWriter& w, const TensorInfo& t, const std::string& tensor_name) {
  w.key(t.name).begin_object().key("dtype").string(tf_dtype_name(t.dtype));
  w.key("tensor_shape").begin_object();
  if (t.shape.rank_known()) {
    w.key("dim").begin_array();
    for (int64_t d : t.shape.dims())
      w.begin_object().key("size").string(std::to_string(d)).key("name").string("").end_object();
    w.end_array();
  }
  w.key("unknown_rank").boolean(!t.shape.rank_known()).end_object();
  w.key("name").string(tensor_name).end_object();
}

void write_signature(JsonWriter& w, const saved_model::Signature& s) {
  w.key(s.key()).begin_object().key("inputs").begin_object();
  for (const auto& t : input_infos(s)) write_tensor_info(w, t, input_tensor_name(s, t));
  w.end_object().key("outputs").begin_object();
  size_t i = 0;
  for (const auto& t : output_infos(s)) write_tensor_info(w, t, output_tensor_name(i++));
  w.end_object().key("method_name").string(saved_model::kPredictMethod).end_object();
}

}  // namespace

HttpReply Rest::status(const Route& r) {
  const auto st = version_status(find_model(models_, r.model), r.version, r.label);
  JsonWriter w;
  w.begin_object().key("model_version_status").begin_array();
  for (const auto& s : st) write_status(w, s);
  w.end_array().end_object();
  return {200, w.take()};
}

HttpReply Rest::metadata(const Route& r) {
  const ModelHandle h = find_model(models_, r.model).find(r.version, r.label);
  JsonWriter w;
  w.begin_object().key("model_spec").begin_object().key("name").string(r.model);
  w.key("signature_name").string("").key("version").string(std::to_string(h.version)).end_object();
  w.key("metadata").begin_object().key("signature_def").begin_object().key("signature_def");
  w.begin_object();
  for (const auto& [k, s] : h.model->signatures()) write_signature(w, s);
  w.end_object().end_object().end_object().end_object();
  return {200, w.take()};
}

HttpReply Rest::predict(const Route& r, std::string_view body, Clock::time_point deadline) {
  const ModelHandle h = find_model(models_, r.model).find(r.version, r.label);
  PredictRequest req;
  req.parse(body);
  const saved_model::Signature& sig = find_signature(*h.model, req.signature_name());
  const Tensors outputs = runner_.predict(h, sig, req.tensors(input_infos(sig)), deadline);
  return {200, predict_response(outputs, sig.output_keys(), req.row_format())};
}

HttpReply Rest::dispatch(const Route& r, std::string_view body, Clock::time_point deadline) {
  switch (r.kind) {
    case Route::Kind::kStatus: return status(r);
    case Route::Kind::kMetadata: return metadata(r);
    case Route::Kind::kPredict: return predict(r, body, deadline);
    case Route::Kind::kClassify:
    case Route::Kind::kRegress:
      find_model(models_, r.model);
      throw UnimplementedError(std::string(api_name(r.kind)) +
                               " is not implemented by kiln-serve yet: use :predict");
    default: break;
  }
  throw InternalError("unreachable route");
}

HttpReply Rest::handle(std::string_view method, std::string_view path, std::string_view body,
                       Clock::time_point deadline) {
  const Route r = parse_route(method, path);
  if (r.kind == Route::Kind::kMetrics)
    return {200, metrics_.prometheus(models_), "text/plain; version=0.0.4"};
  if (r.kind == Route::Kind::kNone)
    return error_reply(Code::kNotFound, "Malformed request: " + std::string(method) + " " +
                                            std::string(path.substr(0, 200)));
  const auto t0 = Clock::now();
  HttpReply reply;
  Code code = Code::kOk;
  try {
    reply = dispatch(r, body, deadline);
  } catch (const Error& e) {
    code = e.code();
    reply = error_reply(code, e.what());
  } catch (const std::bad_alloc&) {
    code = Code::kResourceExhausted;
    reply = error_reply(code, "out of memory handling the request");
  } catch (const std::exception& e) {
    code = Code::kInternal;
    reply = error_reply(code, e.what());
  }
  if (models_.find(r.model))  // no series for names a client made up
    metrics_.record(r.model, api_name(r.kind), tf_code_name(code),
                    std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  return reply;
}

}  // namespace kiln::serve
