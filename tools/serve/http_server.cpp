// cpp-httplib glue (http_server.h): a Stream with a read deadline, the
// keep-alive loop, handlers and error bodies in TensorFlow Serving's form.
#include "http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <thread>

#include "json.h"
#include "metrics.h"
#include "rest.h"

namespace kiln::serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Waits for `events` on `sock` for up to `ms` (<= 0: just checks).
bool wait_socket(int sock, short events, int64_t ms) {
  pollfd p{sock, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(ms, 0)));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

void address(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if ((peer ? getpeername : getsockname)(sock, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    port = ntohs(v6->sin6_port);
  }
  ip = buf;
}

// A socket whose reads stop at a deadline (each read also at read_timeout).
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int sock, milliseconds read_timeout, milliseconds write_timeout)
      : sock_(sock), read_timeout_(read_timeout), write_timeout_(write_timeout) {}
  void set_deadline(Clock::time_point d) { deadline_ = d; }
  bool buffered() const { return off_ < len_; }

  /// Whether a read has waited past the deadline (the connection is then closed).
  bool expired() const { return expired_; }

  bool is_readable() const override {
    if (buffered()) return true;
    const auto left = std::chrono::ceil<milliseconds>(deadline_ - Clock::now());
    if (left.count() <= 0) return !(expired_ = true);
    if (wait_socket(sock_, POLLIN, std::min(left, read_timeout_).count())) return true;
    expired_ = expired_ || left <= read_timeout_;  // waited until the deadline
    return false;
  }
  bool is_writable() const override { return wait_socket(sock_, POLLOUT, write_timeout_.count()); }

  ssize_t read(char* ptr, size_t size) override {
    if (!buffered()) {
      if (!is_readable()) return -1;
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      off_ = 0, len_ = static_cast<size_t>(n);
    }
    const size_t k = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_ + off_, k);
    off_ += k;
    return static_cast<ssize_t>(k);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(sock_, false, ip, port);
  }
  int socket() const override { return sock_; }

 private:
  int sock_;
  milliseconds read_timeout_, write_timeout_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool expired_ = false;
  char buf_[16384];
  size_t off_ = 0, len_ = 0;
};

// The deadline of the request this thread is serving (set per request).
thread_local Clock::time_point t_deadline;
// Set when a request was refused before its body was read: close after it.
thread_local bool t_close = false;
// The stream of the connection this thread is serving.
thread_local const DeadlineStream* t_stream = nullptr;

const char* reason(int status) {
  switch (status) {
    case 400: return "Malformed HTTP request";
    case 404: return "Not found";
    case 408: return "The request did not arrive within --rest_api_timeout_in_ms";
    case 411: return "Send the request body with a Content-Length (no chunked bodies)";
    case 413: return "Request body larger than --max_body_bytes";
    case 414: return "Request path too long";
    default: return "HTTP error";
  }
}

}  // namespace

void block_stop_signals(bool block) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGINT);
  pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &s, nullptr);
}

// httplib's Server with its own per-connection loop.
class HttpServer::Impl : public httplib::Server {
 public:
  Impl(const Flags& f, Rest& rest, Metrics& metrics) : flags_(f), rest_(rest), metrics_(metrics) {}

  void setup() {
    const int threads = worker_threads(flags_);
    // Called on the main thread as it starts serving: the workers start with
    // the signals blocked, and the main thread (in accept) takes them.
    new_task_queue = [threads] {
      block_stop_signals(true);
      auto* pool = new httplib::ThreadPool(static_cast<size_t>(threads));
      block_stop_signals(false);
      return pool;
    };
    set_payload_max_length(static_cast<size_t>(flags_.max_body_bytes));
    set_keep_alive_timeout(std::max<time_t>(1, flags_.rest_api_read_timeout_in_ms / 1000));
    set_keep_alive_max_count(1000);
    set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      res.status = precheck(req);
      if (res.status == 0) return HandlerResponse::Unhandled;
      t_close = true;  // the body, if any, was not read
      res.set_header("Connection", "close");
      return HandlerResponse::Handled;
    });
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      HttpReply r = rest_.handle(req.method, req.path, req.body, t_deadline);
      res.status = r.status;
      res.set_content(std::move(r.body), r.content_type.c_str());
    };
    Get(".*", handler);
    Post(".*", handler);
    set_error_handler(
        HandlerWithResponse([](const httplib::Request&, httplib::Response& res) -> HandlerResponse {
          if (!res.body.empty()) return HandlerResponse::Unhandled;
          if (t_stream && t_stream->expired()) {  // httplib says 400
            res.status = 408;
            res.set_header("Connection", "close");
          }
          res.set_content(error_body(reason(res.status)), "application/json");
          return HandlerResponse::Handled;
        }));
    set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      res.status = 500;
      res.set_content(error_body("internal error"), "application/json");
    });
    set_logger([this](const httplib::Request&, const httplib::Response& res) {
      metrics_.record_http(res.status);
    });
  }

  int bind_port() {
    if (flags_.rest_api_port == 0) return bind_to_any_port(flags_.rest_api_host);
    return bind_to_port(flags_.rest_api_host, flags_.rest_api_port) ? flags_.rest_api_port : -1;
  }

  // Before the body is read: 0, or the status refusing the request. httplib
  // would read a chunked or length-less body without limit, and skip an
  // over-long one by reading it; its routing regex works on the path.
  int precheck(const httplib::Request& req) const {
    if (req.path.size() > 2048) return 414;
    if (req.method != "POST") return 0;
    if (req.has_header("Transfer-Encoding") || !req.has_header("Content-Length")) return 411;
    const std::string v = req.get_header_value("Content-Length");
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc::result_out_of_range) return 413;
    if (ec != std::errc() || p != v.data() + v.size()) return 400;
    return n > static_cast<uint64_t>(flags_.max_body_bytes) ? 413 : 0;
  }

  void request_stop() {
    stopping_ = true;
    stop();
  }
  bool stopping() const { return stopping_; }

 private:
  // Waits for the next request on a kept-alive connection (false: idle
  // past the keep-alive timeout, or shutting down).
  bool wait_request(int sock) {
    const auto until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
    while (!stopping_ && Clock::now() < until)
      if (wait_socket(sock, POLLIN, 100)) return true;
    return false;
  }

  bool process_and_close_socket(int sock) override {
    // Headers and body go out in separate writes: without TCP_NODELAY the
    // second waits for the client's delayed ACK (40 ms a request).
    const int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    DeadlineStream strm(sock, milliseconds(flags_.rest_api_read_timeout_in_ms),
                        milliseconds(flags_.rest_api_read_timeout_in_ms));
    bool ok = true;
    for (size_t left = keep_alive_max_count_; left > 0; --left) {
      if (!strm.buffered() && !wait_request(sock)) break;
      t_deadline = Clock::now() + milliseconds(flags_.rest_api_timeout_in_ms);
      strm.set_deadline(t_deadline);
      bool closed = false;
      t_close = false;
      t_stream = &strm;
      ok = process_request(strm, left == 1 || stopping_, closed, nullptr);
      if (!ok || closed || t_close || strm.expired()) break;
    }
    t_stream = nullptr;
    lingering_close(sock);
    return ok;
  }

  // Closes after reading what the client still sends for a moment: closing
  // with unread data would reset the connection and lose the reply.
  static void lingering_close(int sock) {
    ::shutdown(sock, SHUT_WR);
    const auto until = Clock::now() + milliseconds(200);
    char buf[16384];
    while (Clock::now() < until && wait_socket(sock, POLLIN, 50))
      if (::recv(sock, buf, sizeof buf, 0) <= 0) break;
    ::close(sock);
  }

  const Flags& flags_;
  Rest& rest_;
  Metrics& metrics_;
  std::atomic<bool> stopping_{false};
};

HttpServer::HttpServer(const Flags& flags, Rest& rest, Metrics& metrics)
    : impl_(std::make_unique<Impl>(flags, rest, metrics)) {
  impl_->setup();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  return impl_->bind_port();
}

bool HttpServer::listen() {
  return impl_->stopping() || impl_->listen_after_bind();
}

void HttpServer::stop() {
  impl_->request_stop();
}

}  // namespace kiln::serve
