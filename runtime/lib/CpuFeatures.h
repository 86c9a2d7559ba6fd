// Host CPU feature checks for the "features" record of an artifact manifest (runtime-internal).
#ifndef KILN_RUNTIME_LIB_CPUFEATURES_H
#define KILN_RUNTIME_LIB_CPUFEATURES_H

#include <string>
#include <vector>

namespace kiln::rt::detail {

// The features (as written in the manifest) that this host can be tested for and lacks. Names
// the runtime cannot test are left out: refusing to run on an unknown name would break every
// artifact built by a newer compiler.
std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &features);

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_LIB_CPUFEATURES_H
