// Test support: a keep-alive HTTP/1.1 server on loopback (plain or TLS)
// that counts connections, and a self-signed certificate to serve with, for
// the HTTP client's tests and benchmark. Header-only, no test framework.
//
//   KeepAliveServer srv({});                  // answers "ok" to everything
//   HttpClient({}).get(srv.url("/metrics"));
//   srv.accepted();                           // connections opened so far
//
// Thread-safety: the counters are atomic; read them from any thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpulens::testing {

// A socket listening on 127.0.0.1 at a port the kernel chose; -1 on failure.
inline int listen_on_loopback(uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 64) != 0) return -1;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// A self-signed certificate for "backend.invalid" and 127.0.0.1 (and its key), written as
// PEM files into `dir`: the TLS end of the proxy tests.
struct TestCert {
  std::string cert_file, key_file;
};

inline TestCert make_test_cert(const std::string& dir) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("backend.invalid"), -1,
                             -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "DNS:backend.invalid,IP:127.0.0.1");
  X509_add_ext(x, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(x, key, EVP_sha256());
  TestCert c{dir + "/backend.crt", dir + "/backend.key"};
  FILE* f = std::fopen(c.cert_file.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen(c.key_file.c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
  return c;
}

// An HTTP/1.1 server on loopback that keeps connections alive, one thread
// per connection, answering every request with `reply`; it counts the
// connections it accepted, the requests it read and the connections the
// client closed. With `answers_per_connection` n >= 0 it reads the request
// after the n-th on a connection and hangs up without answering it (a
// server whose idle timeout raced the request). `hold_until` > 0: no answer
// before that many requests have arrived (to make the client open that
// many connections at once). With a certificate it speaks TLS.
class KeepAliveServer {
 public:
  struct Options {
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    int answers_per_connection = -1;
    int hold_until = 0;
    const TestCert* cert = nullptr;
  };
  explicit KeepAliveServer(Options o) : o_(std::move(o)) {
    if (o_.cert != nullptr) {
      ctx_ = SSL_CTX_new(TLS_server_method());
      SSL_CTX_use_certificate_file(ctx_, o_.cert->cert_file.c_str(), SSL_FILETYPE_PEM);
      SSL_CTX_use_PrivateKey_file(ctx_, o_.cert->key_file.c_str(), SSL_FILETYPE_PEM);
    }
    fd_ = listen_on_loopback(port_);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~KeepAliveServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int c : open_) ::shutdown(c, SHUT_RDWR);
      held_.notify_all();
    }
    for (std::thread& t : threads_) t.join();
    for (int c : open_) ::close(c);
    ::close(fd_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return port_; }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }
  int closed_by_client() const { return closed_by_client_; }
  std::string first_request() {
    std::lock_guard lock(mu_);
    return first_request_;
  }

 private:
  void accept_loop() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0 || stopping_) {
        if (c >= 0) ::close(c);
        return;
      }
      ++accepted_;
      int one = 1;  // as real servers do: no Nagle delay before the last TLS record of an answer
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard lock(mu_);
      open_.push_back(c);
      threads_.emplace_back([this, c] { serve(c); });
    }
  }

  void serve(int c) {
    SSL* ssl = nullptr;
    if (ctx_ != nullptr) {
      ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) != 1) {
        SSL_free(ssl);
        return;
      }
    }
    auto recv_some = [&](char* buf, size_t n) -> ssize_t {
      return ssl != nullptr ? SSL_read(ssl, buf, static_cast<int>(n)) : ::recv(c, buf, n, 0);
    };
    std::string in;
    char buf[65536];
    for (int answered = 0;; ++answered) {
      size_t want = std::string::npos;  // read one request: head, then Content-Length bytes
      for (;;) {
        size_t head = in.find("\r\n\r\n");
        if (head != std::string::npos && want == std::string::npos) {
          size_t cl = in.find("Content-Length: ");
          want = head + 4 + (cl == std::string::npos || cl > head ? 0 : std::stoul(in.substr(cl + 16)));
        }
        if (want != std::string::npos && in.size() >= want) break;
        ssize_t n = recv_some(buf, sizeof buf);
        if (n <= 0) {
          if (in.empty() && !stopping_) ++closed_by_client_;
          if (ssl != nullptr) SSL_free(ssl);
          return;
        }
        in.append(buf, static_cast<size_t>(n));
      }
      {
        std::unique_lock lock(mu_);
        if (first_request_.empty()) first_request_ = in.substr(0, want);
        ++requests_;
        held_.notify_all();
        held_.wait_for(lock, std::chrono::seconds(10), [&] { return requests_ >= o_.hold_until || stopping_; });
      }
      in.erase(0, want);
      if (o_.answers_per_connection >= 0 && answered == o_.answers_per_connection) break;  // hang up unanswered
      if (ssl != nullptr) {
        SSL_write(ssl, o_.reply.data(), static_cast<int>(o_.reply.size()));
      } else {
        ::send(c, o_.reply.data(), o_.reply.size(), MSG_NOSIGNAL);
      }
    }
    if (ssl != nullptr) SSL_free(ssl);
    ::shutdown(c, SHUT_RDWR);
  }

  Options o_;
  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0}, requests_{0}, closed_by_client_{0};
  std::mutex mu_;
  std::condition_variable held_;
  std::vector<int> open_;
  std::vector<std::thread> threads_;
  std::string first_request_;
  std::thread acceptor_;
};

}  // namespace gpulens::testing
