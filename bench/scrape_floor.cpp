// The floor under a scrape's cost: the least CPU any HTTP server on this
// machine can spend answering a scrape of a given page.
//
// Serves one file's bytes as the answer to every request, over kept-alive
// connections, a thread per connection, the head and the page in one
// sendmsg(2): no parsing beyond the end of the head, no routing, no
// exposition, no allocation. What it costs per answer is what the kernel
// costs (copying the page into the socket, TCP on loopback).
// bench/compare_scrape.sh runs it beside the agents (FLOOR=...) so that an
// agent's scrapes per CPU second can be read against the most this machine
// allows for a page of that size.
//
//   scrape_floor PAGE_FILE PORT [CONTENT_ENCODING]
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace {

std::string g_head;
std::string g_page;

bool send_all(int fd) {
  iovec iov[2] = {{g_head.data(), g_head.size()}, {g_page.data(), g_page.size()}};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  while (m.msg_iovlen > 0) {
    ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (w <= 0) return false;
    while (m.msg_iovlen > 0 && static_cast<size_t>(w) >= m.msg_iov[0].iov_len) {
      w -= static_cast<ssize_t>(m.msg_iov[0].iov_len);
      ++m.msg_iov;
      --m.msg_iovlen;
    }
    if (m.msg_iovlen > 0) {
      m.msg_iov[0].iov_base = static_cast<char*>(m.msg_iov[0].iov_base) + w;
      m.msg_iov[0].iov_len -= static_cast<size_t>(w);
    }
  }
  return true;
}

void serve(int fd) {
  std::string in;
  char buf[4096];
  for (;;) {
    const ssize_t r = read(fd, buf, sizeof buf);
    if (r <= 0) break;
    in.append(buf, static_cast<size_t>(r));
    size_t end;
    while ((end = in.find("\r\n\r\n")) != std::string::npos) {
      in.erase(0, end + 4);
      if (!send_all(fd)) {
        close(fd);
        return;
      }
    }
  }
  close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: scrape_floor PAGE_FILE PORT [CONTENT_ENCODING]\n");
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "scrape_floor: cannot read %s\n", argv[1]);
    return 1;
  }
  g_page.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  g_head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n";
  if (argc > 3) g_head += std::string("Content-Encoding: ") + argv[3] + "\r\n";
  g_head += "Content-Length: " + std::to_string(g_page.size()) + "\r\n\r\n";

  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[2])));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s, 64) != 0) {
    std::perror("scrape_floor: bind/listen");
    return 1;
  }
  for (;;) {
    const int c = accept(s, nullptr, nullptr);
    if (c < 0) continue;
    std::thread(serve, c).detach();
  }
}
