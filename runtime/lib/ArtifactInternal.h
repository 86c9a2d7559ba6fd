// Private pieces shared by the artifact loader's CPU and GPU halves: status errors and symbol reads.
#ifndef KILN_RUNTIME_ARTIFACTINTERNAL_H
#define KILN_RUNTIME_ARTIFACTINTERNAL_H

#include "kiln/runtime.h"
#include "kiln/tensor.h"

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace kiln::rt::detail {

// An Error that also carries the C status to report.
class StatusError : public Error {
public:
  StatusError(kiln_status status, const std::string &message) : Error(message), status_(status) {}
  kiln_status status() const { return status_; }

private:
  kiln_status status_;
};

// A host buffer of KILN_BUFFER_ALIGNMENT-aligned memory (std::aligned_alloc), freed with std::free.
struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<void, FreeDeleter>;

// `bytes` rounded up to whole alignment units (at least one); throws std::bad_alloc.
AlignedBuffer allocateAligned(std::size_t bytes);

// A data symbol of a loaded artifact. `size` comes from the ELF symbol table; `sized` is false
// when the table does not say (then only NUL-terminated text can be read safely).
struct SymbolData {
  const char *data = nullptr;
  std::size_t size = 0;
  bool sized = false;
};

// nullopt when the artifact does not define `name`; throws StatusError when it is a function.
std::optional<SymbolData> findDataSymbol(void *library, const char *name, const std::string &path);

// The text of a NUL-terminated char-array symbol, never reading past the symbol; nullopt when the
// artifact does not define it. Throws StatusError when it is unterminated or a function.
std::optional<std::string> readTextSymbol(void *library, const char *name, const std::string &path);

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_ARTIFACTINTERNAL_H
