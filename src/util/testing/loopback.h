// Test support: a TCP socket listening on 127.0.0.1 at an ephemeral port, for
// the loopback stand-in servers of the unit tests (HTTP client, remote_write,
// scrape source). Header-only: the test binaries include it directly.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include <gtest/gtest.h>

namespace gpulens::testing {

// The listening socket; `port` is set to the port the kernel chose. A failed
// bind or listen fails the calling test.
inline int listen_loopback(int backlog, uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  EXPECT_EQ(::listen(fd, backlog), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

}  // namespace gpulens::testing
