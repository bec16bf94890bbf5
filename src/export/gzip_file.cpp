// Gzip output for recordings: zlib deflate in gzip framing, streamed to a file.
#include "export/gzip_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>

namespace gpulens {

namespace {
constexpr size_t kBlock = 256 << 10;
}

bool gzip_name(std::string_view path) { return path.size() > 3 && path.ends_with(".gz"); }

GzipFileBuf::GzipFileBuf() : in_buf_(kBlock), out_buf_(kBlock) {
  setp(in_buf_.data(), in_buf_.data() + in_buf_.size());
}

GzipFileBuf::~GzipFileBuf() {
  if (z_ != nullptr) {
    deflateEnd(static_cast<z_stream*>(z_));
    delete static_cast<z_stream*>(z_);
  }
  if (file_ != nullptr) std::fclose(file_);
}

Status GzipFileBuf::open(const std::string& path, int level) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) return io_error("cannot write " + path + ": " + std::strerror(errno));
  auto* z = new z_stream{};
  if (deflateInit2(z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    delete z;
    return internal_error("zlib: cannot start a gzip stream");
  }
  z_ = z;
  return Status::ok();
}

bool GzipFileBuf::deflate_some(const char* data, size_t n, bool finish) {
  if (failed_ || z_ == nullptr) return false;
  auto* z = static_cast<z_stream*>(z_);
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z->avail_in = static_cast<uInt>(n);
  in_ += n;
  while (true) {
    z->next_out = reinterpret_cast<Bytef*>(out_buf_.data());
    z->avail_out = static_cast<uInt>(out_buf_.size());
    const int rc = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
    const size_t have = out_buf_.size() - z->avail_out;
    if (have > 0) {
      if (std::fwrite(out_buf_.data(), 1, have, file_) != have) {
        errno_ = errno;
        failed_ = true;
        return false;
      }
      out_ += have;
    }
    if (rc == Z_STREAM_ERROR) {
      failed_ = true;
      return false;
    }
    if (finish ? rc == Z_STREAM_END : (z->avail_in == 0 && z->avail_out != 0)) return true;
  }
}

bool GzipFileBuf::drain() {
  const size_t n = static_cast<size_t>(pptr() - pbase());
  setp(in_buf_.data(), in_buf_.data() + in_buf_.size());
  return n == 0 || deflate_some(in_buf_.data(), n, false);
}

GzipFileBuf::int_type GzipFileBuf::overflow(int_type ch) {
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  *pptr() = traits_type::to_char_type(ch);
  pbump(1);
  return ch;
}

std::streamsize GzipFileBuf::xsputn(const char* s, std::streamsize n) {
  const auto room = epptr() - pptr();
  if (n <= room) {
    std::memcpy(pptr(), s, static_cast<size_t>(n));
    pbump(static_cast<int>(n));
    return n;
  }
  if (!drain()) return 0;
  return deflate_some(s, static_cast<size_t>(n), false) ? n : 0;
}

int GzipFileBuf::sync() { return drain() ? 0 : -1; }

Status GzipFileBuf::close() {
  if (file_ == nullptr) return io_error("cannot write " + path_ + ": not open");
  const bool ok = drain() && deflate_some(nullptr, 0, true);
  const bool closed = std::fclose(file_) == 0;
  if (!closed && errno_ == 0) errno_ = errno;
  file_ = nullptr;
  if (!ok || !closed) {
    return io_error("cannot write " + path_ + (errno_ != 0 ? std::string(": ") + std::strerror(errno_) : ""));
  }
  return Status::ok();
}

}  // namespace gpulens
