// The web page's files, embedded into the binary at build time (web/build.mjs
// generates the table from web/src and the locked uPlot package).
//
//   const WebAsset* a = find_web_asset("app.js");   // nullptr when absent
//
// Thread-safety: constant data.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpulens {

struct WebAsset {
  const char* name;          // "index.html", "app.js", "app.css"
  const char* content_type;
  std::string_view body;
};

extern const WebAsset kWebAssets[];
extern const size_t kWebAssetCount;

inline const WebAsset* find_web_asset(std::string_view name) {
  for (size_t i = 0; i < kWebAssetCount; ++i) {
    if (kWebAssets[i].name == name) return &kWebAssets[i];
  }
  return nullptr;
}

}  // namespace gpulens
