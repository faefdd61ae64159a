// kiln-serve's HTTP server: cpp-httplib with a whole-request deadline on
// reading (a client sending one byte a second is cut off), idle keep-alive
// connections closed on shutdown, and every reply through Rest.
#pragma once
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "flags.h"

namespace kiln::serve {

class Rest;
class Metrics;

/// Blocks (or unblocks) SIGTERM and SIGINT in the calling thread; threads
/// it starts inherit that.
void block_stop_signals(bool block);

class HttpServer {
 public:
  HttpServer(const Flags& flags, Rest& rest, Metrics& metrics);
  ~HttpServer();
  /// Binds --rest_api_host:--rest_api_port; the port bound (-1 on failure).
  int bind();
  /// Serves until stop(); in-flight requests finish first.
  bool listen();
  /// Stops accepting; safe from any thread, once the signal arrives.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::serve
