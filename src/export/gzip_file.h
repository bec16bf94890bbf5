// Gzip output for recordings: a std::streambuf that deflates what is written
// through it into a file, for `gpulens record -o rec.om.gz`.
//
//   GzipFileBuf buf;
//   if (Status s = buf.open("rec.om.gz"); !s) ...
//   std::ostream out(&buf);
//   out << text;
//   Status s = buf.close();            // writes the gzip trailer
//   buf.bytes_out();                   // the file's size
//
// Thread-safety: one writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gpulens {

// Whether a recording named `path` is written gzip-compressed (ends in ".gz").
bool gzip_name(std::string_view path);

class GzipFileBuf final : public std::streambuf {
 public:
  GzipFileBuf();
  ~GzipFileBuf() override;
  GzipFileBuf(const GzipFileBuf&) = delete;
  GzipFileBuf& operator=(const GzipFileBuf&) = delete;

  // level: zlib's 1 (fast) .. 9 (small); 6 is gzip's default.
  Status open(const std::string& path, int level = 6);
  // Finishes the stream and closes the file; an error names the file.
  Status close();
  uint64_t bytes_in() const { return in_; }
  uint64_t bytes_out() const { return out_; }

 protected:
  int_type overflow(int_type ch) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool deflate_some(const char* data, size_t n, bool finish);
  bool drain();

  std::string path_;
  FILE* file_ = nullptr;
  void* z_ = nullptr;
  std::vector<char> in_buf_, out_buf_;
  uint64_t in_ = 0, out_ = 0;
  bool failed_ = false;
  int errno_ = 0;
};

}  // namespace gpulens
