// gzip compression of response bodies with a reused zlib stream.
#pragma once

#include <string>
#include <string_view>

namespace gpulens {

class Gzipper {
 public:
  Gzipper();
  ~Gzipper();
  Gzipper(const Gzipper&) = delete;
  Gzipper& operator=(const Gzipper&) = delete;
  // Replaces `out` with the gzip of `in` (level 1: scrapes want speed).
  bool compress(std::string_view in, std::string& out);

 private:
  void* stream_;
};

// True when an Accept-Encoding header allows gzip.
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace gpulens
