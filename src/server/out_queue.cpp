// A connection's output: owned bytes and shared pages, gathered for writev.
#include "server/out_queue.h"

namespace gpulens {

void OutQueue::append(std::string_view bytes) {
  if (bytes.empty()) return;
  const size_t off = owned_.size();
  owned_.append(bytes);
  pending_ += bytes.size();
  // Contiguous with the last owned piece: grow it.
  if (!pieces_.empty() && !pieces_.back().page && pieces_.back().off + pieces_.back().len == off) {
    pieces_.back().len += bytes.size();
    return;
  }
  pieces_.push_back({.off = off, .len = bytes.size(), .page = nullptr});
}

void OutQueue::append_shared(std::shared_ptr<const std::string> page) {
  if (!page || page->empty()) return;
  const size_t len = page->size();
  pending_ += len;
  pieces_.push_back({.off = 0, .len = len, .page = std::move(page)});
}

std::string_view OutQueue::bytes_of(const Piece& p) const {
  const std::string& s = p.page ? *p.page : owned_;
  return std::string_view(s).substr(p.off, p.len);
}

int OutQueue::gather(iovec* iov, int n) const {
  int k = 0;
  for (size_t i = first_; i < pieces_.size() && k < n; ++i) {
    std::string_view b = bytes_of(pieces_[i]);
    if (i == first_) b.remove_prefix(first_sent_);
    iov[k].iov_base = const_cast<char*>(b.data());
    iov[k].iov_len = b.size();
    ++k;
  }
  return k;
}

std::string_view OutQueue::front() const {
  if (first_ >= pieces_.size()) return {};
  return bytes_of(pieces_[first_]).substr(first_sent_);
}

void OutQueue::consume(size_t bytes) {
  if (bytes > pending_) bytes = pending_;
  pending_ -= bytes;
  while (bytes > 0 && first_ < pieces_.size()) {
    const size_t left = pieces_[first_].len - first_sent_;
    if (bytes < left) {
      first_sent_ += bytes;
      return;
    }
    bytes -= left;
    pieces_[first_].page.reset();  // a page sent is released at once
    ++first_;
    first_sent_ = 0;
  }
  if (pending_ == 0) clear();
}

void OutQueue::clear() {
  owned_.clear();
  pieces_.clear();
  first_ = first_sent_ = pending_ = 0;
}

}  // namespace gpulens
