// zlib deflate in gzip framing.
#include "server/gzip.h"

#include <zlib.h>

namespace gpulens {

Gzipper::Gzipper() {
  auto* z = new z_stream{};
  deflateInit2(z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  stream_ = z;
}

Gzipper::~Gzipper() {
  auto* z = static_cast<z_stream*>(stream_);
  deflateEnd(z);
  delete z;
}

bool Gzipper::compress(std::string_view in, std::string& out) {
  auto* z = static_cast<z_stream*>(stream_);
  deflateReset(z);
  out.resize(deflateBound(z, in.size()) + 32);
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z->avail_in = static_cast<uInt>(in.size());
  z->next_out = reinterpret_cast<Bytef*>(out.data());
  z->avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(z, Z_FINISH);
  out.resize(out.size() - z->avail_out);
  return rc == Z_STREAM_END;
}

bool accepts_gzip(std::string_view ae) {
  size_t p = ae.find("gzip");
  if (p == std::string_view::npos) return false;
  // "gzip;q=0" refuses it.
  std::string_view rest = ae.substr(p + 4);
  size_t comma = rest.find(',');
  std::string_view params = rest.substr(0, comma);
  size_t q = params.find("q=");
  return q == std::string_view::npos || params.substr(q + 2).find_first_not_of("0.") != std::string_view::npos;
}

}  // namespace gpulens
