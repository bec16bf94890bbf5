// Test support: a loopback HTTP server for the scrape source's tests that
// serves fixed pages by path ("/500" answers HTTP 500, "/hang" accepts and
// never answers, a path starting "/unframed" is answered without
// Content-Length: its body ends with the connection), one request per
// connection. Header-only.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/testing/loopback.h"

namespace gpulens::testing {

// Loopback stand-in: serves `pages` by path, many connections; "/hang"
// accepts and never answers.
class PageServer {
 public:
  explicit PageServer(std::map<std::string, std::string> pages) : pages_(std::move(pages)) {
    fd_ = listen_loopback(16, port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~PageServer() {
    stop_ = true;
    thread_.join();
    for (int c : hung_) ::close(c);
    ::close(fd_);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  void set(const std::string& path, std::string body) {
    std::lock_guard lock(mu_);
    pages_[path] = std::move(body);
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      const size_t sp = req.find(' ');
      const std::string path = req.substr(sp + 1, req.find(' ', sp + 1) - sp - 1);
      if (path == "/hang") {
        hung_.push_back(c);
        continue;
      }
      std::string reply;
      {
        std::lock_guard lock(mu_);
        auto it = pages_.find(path);
        if (path == "/500") {
          reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops";
        } else if (it == pages_.end()) {
          reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        } else if (path.starts_with("/unframed")) {
          reply = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\r\n" + it->second;
        } else {
          reply = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                  std::to_string(it->second.size()) + "\r\n\r\n" + it->second;
        }
      }
      ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  std::mutex mu_;
  std::map<std::string, std::string> pages_;
  std::vector<int> hung_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpulens::testing
