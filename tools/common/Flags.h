//===- Flags.h - Command-line flag splitting for Kiln's runtime tools -----===//
//
// kiln-run and kiln-conformance take `--flag value` and `--flag=value`
// alike; they share the splitting here and keep their own error handling.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_COMMON_FLAGS_H
#define KILN_TOOLS_COMMON_FLAGS_H

#include <optional>
#include <string>

namespace kiln::tools {

/// One command-line argument: `--name=value` splits at the first '=';
/// anything else is all name.
struct Flag {
  std::string name;
  std::optional<std::string> inlineValue;
};

inline Flag splitFlag(const std::string &arg) {
  std::size_t eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
    return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

/// The value of `flag`: its inline value, else argv[i + 1] (advancing `i`);
/// nullopt when the command line ends first.
inline std::optional<std::string> flagValue(const Flag &flag, int argc, char **argv, int &i) {
  if (flag.inlineValue)
    return flag.inlineValue;
  if (i + 1 >= argc)
    return std::nullopt;
  return std::string(argv[++i]);
}

} // namespace kiln::tools

#endif // KILN_TOOLS_COMMON_FLAGS_H
