// Runs a fuzz target's LLVMFuzzerTestOneInput once per file, outside
// libFuzzer: the release and ASan builds replay seeds and past crashes this
// way (CTest fuzz_replay_<target>). Arguments are files or folders (walked
// recursively); each input is cut at GPULENS_FUZZ_MAX_LEN bytes, as the
// fuzzer cuts it. Exit 0 when every input ran; a crash is the target's.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run_file(const std::filesystem::path& p, size_t& n) {
  std::ifstream f(p, std::ios::binary);
  std::string bytes;
  bytes.resize(GPULENS_FUZZ_MAX_LEN);
  f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(f.gcount()));
  // A copy of exactly the input's size, so ASan sees reads past its end.
  std::vector<uint8_t> input(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(input.data(), input.size());
  ++n;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) run_file(e.path(), n);
      }
    } else if (std::filesystem::exists(p, ec)) {
      run_file(p, n);
    }
  }
  std::printf("%zu inputs ran\n", n);
  return 0;
}
