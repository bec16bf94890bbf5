// The trace parser built for AVX2/BMI/PCLMUL, so that simdjson uses its
// "haswell" kernel (about twice the portable one's speed); parse_trace()
// calls it only on CPUs that have those instructions.
#define GPULENS_PARSE_VARIANT avx2
#include "analyze/trace/parse.cpp"  // NOLINT(bugprone-suspicious-include)
