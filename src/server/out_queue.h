// The bytes a connection still owes its client, in order.
//
// Two kinds of pieces: bytes the queue owns (response heads, small bodies,
// error answers: copied in) and shared pages (the cached /metrics page: held
// by reference count and sent from the cache's own buffer, never copied).
// A scrape of a cached page thus costs a copy of its head (a few hundred
// bytes) and one writev(2) of head + page. Once warm, the queue allocates
// nothing: emptying it keeps the capacity of its buffers.
//
//   OutQueue q;
//   q.append("HTTP/1.1 200 OK\r\n...\r\n");
//   q.append_shared(page);               // std::shared_ptr<const std::string>
//   iovec iov[16];
//   ssize_t w = writev(fd, iov, q.gather(iov, 16));
//   if (w > 0) q.consume(w);
//
// Thread-safety: none (one connection, one thread).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpulens {

class OutQueue {
 public:
  // Copies `bytes` to the end of the queue.
  void append(std::string_view bytes);
  // Queues the whole of `*page` without copying it; the page is held until sent.
  void append_shared(std::shared_ptr<const std::string> page);

  size_t pending() const { return pending_; }
  bool empty() const { return pending_ == 0; }
  // Points up to `n` iovecs at the unsent bytes, in order; returns how many.
  int gather(iovec* iov, int n) const;
  // The first contiguous run of unsent bytes ("" when empty).
  std::string_view front() const;
  // Marks `bytes` (at most pending()) as sent; the queue resets when empty.
  void consume(size_t bytes);
  // Drops everything unsent.
  void clear();

 private:
  struct Piece {
    size_t off = 0;  // into owned_ (page null) or *page
    size_t len = 0;
    std::shared_ptr<const std::string> page;
  };
  std::string_view bytes_of(const Piece& p) const;

  std::string owned_;
  std::vector<Piece> pieces_;
  size_t first_ = 0;       // first piece not fully sent
  size_t first_sent_ = 0;  // bytes of it sent
  size_t pending_ = 0;
};

}  // namespace gpulens
