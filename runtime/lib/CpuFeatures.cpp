// Maps LLVM x86 target-feature names to __builtin_cpu_supports probes.
#include "CpuFeatures.h"

#include <cstring>

namespace kiln::rt::detail {
namespace {

#if defined(__x86_64__) || defined(__i386__)
struct Probe {
  const char *name;
  bool (*present)();
};

// __builtin_cpu_supports only takes string literals, hence one lambda per name. The builtin
// also checks that the OS saves the AVX/AVX-512 register state, not just CPUID bits.
#define KILN_PROBE(feature) {feature, [] { return __builtin_cpu_supports(feature) != 0; }}
const Probe kProbes[] = {
    KILN_PROBE("mmx"),          KILN_PROBE("sse"),          KILN_PROBE("sse2"),
    KILN_PROBE("sse3"),         KILN_PROBE("ssse3"),        KILN_PROBE("sse4.1"),
    KILN_PROBE("sse4.2"),       KILN_PROBE("sse4a"),        KILN_PROBE("popcnt"),
    KILN_PROBE("lzcnt"),        KILN_PROBE("movbe"),        KILN_PROBE("cmov"),
    KILN_PROBE("aes"),          KILN_PROBE("pclmul"),       KILN_PROBE("vpclmulqdq"),
    KILN_PROBE("gfni"),         KILN_PROBE("sha"),          KILN_PROBE("adx"),
    KILN_PROBE("rdrnd"),        KILN_PROBE("rdseed"),       KILN_PROBE("xsave"),
    KILN_PROBE("avx"),          KILN_PROBE("avx2"),         KILN_PROBE("fma"),
    KILN_PROBE("fma4"),         KILN_PROBE("xop"),          KILN_PROBE("f16c"),
    KILN_PROBE("bmi"),          KILN_PROBE("bmi2"),         KILN_PROBE("avxvnni"),
    KILN_PROBE("avx512f"),      KILN_PROBE("avx512bw"),     KILN_PROBE("avx512vl"),
    KILN_PROBE("avx512dq"),     KILN_PROBE("avx512cd"),     KILN_PROBE("avx512er"),
    KILN_PROBE("avx512pf"),     KILN_PROBE("avx512vbmi"),   KILN_PROBE("avx512vbmi2"),
    KILN_PROBE("avx512ifma"),   KILN_PROBE("avx512vnni"),   KILN_PROBE("avx512bitalg"),
    KILN_PROBE("avx512vpopcntdq"), KILN_PROBE("avx512vp2intersect"),
    KILN_PROBE("avx512bf16"),   KILN_PROBE("avx512fp16"),   KILN_PROBE("amx-tile"),
    KILN_PROBE("amx-int8"),     KILN_PROBE("amx-bf16"),
};
#undef KILN_PROBE
#endif

} // namespace

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &features) {
  std::vector<std::string> missing;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  for (const std::string &feature : features) {
    // LLVM feature strings may carry '+'/'-' prefixes; '-x' asks for nothing.
    std::string name = feature;
    if (!name.empty() && name[0] == '-')
      continue;
    if (!name.empty() && name[0] == '+')
      name.erase(0, 1);
    for (const Probe &probe : kProbes) {
      if (std::strcmp(probe.name, name.c_str()) == 0) {
        if (!probe.present())
          missing.push_back(name);
        break;
      }
    }
  }
#else
  (void)features;
#endif
  return missing;
}

} // namespace kiln::rt::detail
