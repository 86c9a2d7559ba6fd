// The runtime C ABI: artifact validation (ELF checks before dlopen), loading, signature, running.
#include "kiln/runtime.h"
#include "kiln/collective_abi.h"

#include "ArtifactHandle.h"
#include "ArtifactInternal.h"
#include "Partitioned.h"
#include "CpuFeatures.h"
#include "cuda/Executor.h"
#include "kiln/artifact.h"
#include "kiln/cuda_program.h"
#include "kiln/files.h"
#include "kiln/seal.h"
#include "kiln/manifest.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

using kiln::rt::DeviceSpec;
using kiln::rt::Error;
using kiln::rt::Manifest;
using kiln::rt::printable;
using kiln::rt::TensorSpec;
using kiln::rt::detail::checkBuffers;
using kiln::rt::detail::fail;
using kiln::rt::detail::findEntrySpec;
using kiln::rt::detail::guarded;
using kiln::rt::detail::StatusError;


namespace {

thread_local std::string gLastError;

} // namespace

kiln_status kiln::rt::detail::fail(kiln_status status, std::string message) {
  gLastError = std::move(message);
  return status;
}

namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE; // no machine check on other hosts
#endif

std::string machineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64: return "x86-64";
  case EM_386: return "x86";
  case EM_AARCH64: return "aarch64";
  case EM_ARM: return "arm";
  case EM_RISCV: return "riscv";
  case EM_PPC64: return "ppc64";
  case EM_S390: return "s390x";
  default: return "ELF machine " + std::to_string(machine);
  }
}

std::string elfTypeName(uint16_t type) {
  switch (type) {
  case ET_REL: return "a relocatable object (.o)";
  case ET_EXEC: return "an executable";
  case ET_CORE: return "a core dump";
  default: return "ELF type " + std::to_string(type);
  }
}

class File {
public:
  explicit File(int fd) : fd_(fd) {}
  ~File() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  int fd() const { return fd_; }

private:
  int fd_;
};

void readAt(const File &file, void *out, std::size_t size, uint64_t offset, const std::string &path) {
  auto *bytes = static_cast<char *>(out);
  while (size > 0) {
    ssize_t got = ::pread(file.fd(), bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      throw StatusError(KILN_ERROR_IO, path + ": read error: " +
                                           (got < 0 ? std::strerror(errno) : "unexpected end of file"));
    bytes += got;
    size -= static_cast<std::size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

// Where a table of `count` entries of `entrySize` bytes at `offset` ends; saturates so that a
// hostile header cannot wrap around and pass the size check.
uint64_t tableEnd(uint64_t offset, uint64_t count, uint64_t entrySize) {
  unsigned __int128 end = static_cast<unsigned __int128>(count) * entrySize + offset;
  return end > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(end);
}

// Checks everything dlopen would otherwise report badly (or crash on): kind of file, ELF class,
// byte order, machine, type, and that every table and segment lies inside the file, which is how
// a truncated copy is caught.
void validateElf(const std::string &path, bool checkSealToo) {
  std::string reason;
  int fd = kiln::rt::openRegularFile(path, reason);
  if (fd < 0)
    throw StatusError(KILN_ERROR_IO, path + ": cannot open artifact: " + reason);
  File file(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0)
    throw StatusError(KILN_ERROR_IO, path + ": cannot stat artifact: " + std::strerror(errno));
  uint64_t size = static_cast<uint64_t>(info.st_size);
  std::string sizeText = "file has " + std::to_string(size) + " bytes";

  Elf64_Ehdr header;
  std::memset(&header, 0, sizeof header);
  readAt(file, &header, static_cast<std::size_t>(std::min<uint64_t>(size, sizeof header)), 0, path);
  if (size < SELFMAG || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": not a Kiln artifact (no ELF header)");
  if (size < EI_NIDENT)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": truncated artifact (ELF header cut short, " + sizeText + ")");
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": not a Kiln artifact (32-bit ELF file; artifacts are 64-bit)");
  if (header.e_ident[EI_DATA] != ELFDATA2LSB)
    throw StatusError(KILN_ERROR_UNSUPPORTED,
                      path + ": big-endian ELF file; this runtime loads little-endian artifacts");
  if (size < sizeof header)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": truncated artifact (ELF header ends at byte " +
                          std::to_string(sizeof header) + ", " + sizeText + ")");
  if (kHostMachine != EM_NONE && header.e_machine != kHostMachine)
    throw StatusError(KILN_ERROR_UNSUPPORTED, path + ": artifact was compiled for " +
                                                  machineName(header.e_machine) +
                                                  ", this host is " + machineName(kHostMachine));
  if (header.e_type != ET_DYN)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": not a Kiln artifact (" + elfTypeName(header.e_type) +
                          ", expected a shared object)");

  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr))
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": not a Kiln artifact (missing or malformed program header table)");
  uint64_t phEnd = tableEnd(header.e_phoff, header.e_phnum, header.e_phentsize);
  if (phEnd > size)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": truncated artifact (program header table ends at byte " +
                          std::to_string(phEnd) + ", " + sizeText + ")");

  if (header.e_shoff != 0) {
    if (header.e_shentsize != sizeof(Elf64_Shdr))
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": not a Kiln artifact (malformed section header table)");
    uint64_t sectionCount = header.e_shnum;
    uint64_t firstEnd = tableEnd(header.e_shoff, 1, sizeof(Elf64_Shdr));
    if (firstEnd > size)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": truncated artifact (section table ends at byte " +
                            std::to_string(tableEnd(header.e_shoff, std::max<uint64_t>(sectionCount, 1),
                                                    sizeof(Elf64_Shdr))) +
                            ", " + sizeText + ")");
    if (sectionCount == 0) {
      // Extended numbering: with 0xff00+ sections the real count lives in section 0's sh_size.
      Elf64_Shdr first;
      readAt(file, &first, sizeof first, header.e_shoff, path);
      sectionCount = first.sh_size;
    }
    uint64_t shEnd = tableEnd(header.e_shoff, sectionCount, sizeof(Elf64_Shdr));
    if (shEnd > size)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": truncated artifact (section table ends at byte " +
                            std::to_string(shEnd) + ", " + sizeText + ")");
  }

  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    readAt(file, &segment, sizeof segment, header.e_phoff + uint64_t(i) * sizeof segment, path);
    uint64_t end = tableEnd(segment.p_offset, 1, segment.p_filesz);
    if (segment.p_filesz != 0 && end > size)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": truncated artifact (segment " + std::to_string(i) +
                            " ends at byte " + std::to_string(end) + ", " + sizeText + ")");
  }
  if (checkSealToo) {
    std::string why = kiln::rt::checkSeal(fd, size);
    if (!why.empty())
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": " + why + "; recompile it with kilnc");
  }
}

} // namespace

namespace kiln::rt::detail {

AlignedBuffer allocateAligned(std::size_t bytes) {
  std::size_t units = std::max<std::size_t>(1, (bytes + KILN_BUFFER_ALIGNMENT - 1) / KILN_BUFFER_ALIGNMENT);
  AlignedBuffer buffer(std::aligned_alloc(KILN_BUFFER_ALIGNMENT, units * KILN_BUFFER_ALIGNMENT));
  if (!buffer)
    throw std::bad_alloc();
  return buffer;
}

std::optional<SymbolData> findDataSymbol(void *library, const char *name, const std::string &path) {
  dlerror();
  void *symbol = dlsym(library, name);
  if (!symbol)
    return std::nullopt;
  SymbolData data;
  data.data = static_cast<const char *>(symbol);
  // The symbol table knows the array's size; use it so nothing runs off the end.
  Dl_info info;
  void *extra = nullptr;
  const ElfW(Sym) *entry = nullptr;
  if (dladdr1(symbol, &info, &extra, RTLD_DL_SYMENT))
    entry = static_cast<const ElfW(Sym) *>(extra);
  if (entry) {
    if (ELF64_ST_TYPE(entry->st_info) == STT_FUNC)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": " + name + " is a function, expected a data array");
    data.size = entry->st_size;
    data.sized = entry->st_size > 0;
  }
  return data;
}

std::optional<std::string> readTextSymbol(void *library, const char *name, const std::string &path) {
  std::optional<SymbolData> symbol = findDataSymbol(library, name, path);
  if (!symbol)
    return std::nullopt;
  if (!symbol->sized)
    return std::string(symbol->data);
  std::size_t length = strnlen(symbol->data, symbol->size);
  if (length == symbol->size)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": " + name + " is not NUL-terminated");
  return std::string(symbol->data, length);
}

} // namespace kiln::rt::detail

namespace {

using kiln::rt::detail::readTextSymbol;

std::string readManifestText(void *library, const std::string &path) {
  std::optional<std::string> text = readTextSymbol(library, "kiln_manifest", path);
  if (!text)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": not a Kiln artifact (no kiln_manifest symbol)");
  return *text;
}

// One mutex per loaded library (dlopen hands out the same handle for the same file), because
// generated code may keep scratch state in static buffers.
std::shared_ptr<std::mutex> runMutexFor(void *library) {
  static std::mutex registryMutex;
  static std::map<void *, std::weak_ptr<std::mutex>> registry;
  std::lock_guard<std::mutex> lock(registryMutex);
  for (auto it = registry.begin(); it != registry.end();)
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  std::shared_ptr<std::mutex> mutex = registry[library].lock();
  if (!mutex) {
    mutex = std::make_shared<std::mutex>();
    registry[library] = mutex;
  }
  return mutex;
}


/// The libraries an artifact links (the OpenMP runtime, OpenBLAS) start
/// worker threads when they load, and those threads live until the process
/// exits: unloading such a library under them crashes the process at their
/// next wake-up. Every library that came in with the artifact is therefore
/// pinned (RTLD_NODELETE), so closing an artifact unloads only the artifact,
/// its code and weights. They are the objects after it in the load order.
///
/// Other threads may open and close artifacts meanwhile. The loader's list of
/// objects is read inside dl_iterate_phdr's callback, which holds the lock that
/// dlopen and dlclose take to link and unlink objects, so no entry is freed
/// under the walk; and the caller holds artifactLoadMutex() from its dlopen to
/// here, so the objects after this artifact are its own dependencies, not
/// another artifact loaded at the same time.
void pinDependencies(void *library) {
  struct Walk {
    struct link_map *artifact = nullptr;
    std::vector<std::string> names;
  } walk;
  if (dlinfo(library, RTLD_DI_LINKMAP, &walk.artifact) != 0 || !walk.artifact)
    return;
  dl_iterate_phdr(
      [](struct dl_phdr_info *, std::size_t, void *data) {
        auto &walk = *static_cast<Walk *>(data);
        for (struct link_map *next = walk.artifact->l_next; next; next = next->l_next)
          if (next->l_name && *next->l_name)
            walk.names.emplace_back(next->l_name);
        return 1; // one call is enough: the list is walked from the artifact's entry
      },
      &walk);
  for (const std::string &name : walk.names)
    if (void *pinned = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
      dlclose(pinned);
}

/// GCC's OpenMP runtime, which oneDNN links, binds the thread that loads it to
/// the first of its places when OMP_PROC_BIND, OMP_PLACES or
/// GOMP_CPU_AFFINITY is set. The kernels' threads are LLVM's OpenMP runtime's
/// (which also serves oneDNN's OpenMP calls); it starts at the first kernel
/// and takes its places from that thread's mask, so every kernel thread would
/// share one core (ResNet-50 at batch 1 ran 2x slower on 2 cores). The
/// loading thread's mask is put back once the artifact and its libraries are
/// loaded, and LLVM's runtime then binds its threads as those variables ask.
class KeepAffinity {
public:
  KeepAffinity() { saved_ = sched_getaffinity(0, sizeof(mask_), &mask_) == 0; }
  ~KeepAffinity() {
    cpu_set_t now;
    if (saved_ && sched_getaffinity(0, sizeof(now), &now) == 0 && !CPU_EQUAL(&now, &mask_))
      sched_setaffinity(0, sizeof(mask_), &mask_);
  }
  KeepAffinity(const KeepAffinity &) = delete;
  KeepAffinity &operator=(const KeepAffinity &) = delete;

private:
  cpu_set_t mask_;
  bool saved_ = false;
};

/// Serializes artifact loads in this process (see pinDependencies).
std::mutex &artifactLoadMutex() {
  static std::mutex mutex;
  return mutex;
}

// dlopen's message for a dependency it cannot find starts with that library's name. The
// libraries generated CPU code links (the OpenMP runtime, oneDNN, OpenBLAS) come from the
// machine, and a machine without LLVM often lacks the OpenMP runtime: says so, and what to do.
std::string missingLibraryHint(const std::string &why) {
  std::size_t end = why.find(": cannot open shared object file");
  if (end == std::string::npos)
    return "";
  std::string library = why.substr(0, end);
  std::string hint = " (the artifact links " + library +
                     ", which the dynamic loader cannot find on this machine: install it or add "
                     "its folder to LD_LIBRARY_PATH";
  if (library == "libomp.so.5")
    hint += "; it is LLVM's OpenMP runtime, which runs the CPU kernels' threads (Debian: libomp5)";
  else if (library == "libdnnl.so.2")
    hint += "; it is oneDNN, for the CPU matrix products (Debian: libdnnl2)";
  else if (library == "libopenblas.so.0")
    hint += "; it is OpenBLAS, for the CPU matrix products (Debian: libopenblas0)";
  return hint + ")";
}

// Validates the file, dlopens it and parses its manifest; the caller owns the handle.
void *loadLibrary(const std::string &name, Manifest &manifest, unsigned flags) {
  validateElf(name, !(flags & KILN_OPEN_TRUSTED));
  // Without a slash dlopen searches the library path instead of opening this file.
  std::string loadPath = name.find('/') == std::string::npos ? "./" + name : name;
  std::unique_lock<std::mutex> loading(artifactLoadMutex());
  dlerror();
  void *library;
  {
    KeepAffinity affinity;
    library = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!library) {
    const char *error = dlerror();
    std::string why = error ? error : "unknown dlopen error";
    // dlerror repeats the path; the message already starts with it.
    if (why.rfind(loadPath + ": ", 0) == 0)
      why.erase(0, loadPath.size() + 2);
    why = printable(why);
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, name + ": cannot load artifact: " + why + missingLibraryHint(why));
  }
  pinDependencies(library);
  loading.unlock();
  try {
    manifest = kiln::rt::parseManifest(readManifestText(library, name), name);
  } catch (const kiln::rt::ManifestVersionError &e) {
    dlclose(library);
    throw StatusError(KILN_ERROR_UNSUPPORTED, e.what());
  } catch (...) {
    dlclose(library);
    throw;
  }
  return library;
}

// The CPU entry point; an artifact whose manifest lists cpu must have one, whichever device it
// is opened on.
EntryFn findEntry(void *library, const Manifest &manifest, const std::string &name) {
  if (!manifest.hasDevice("cpu"))
    return nullptr;
  dlerror();
  void *entry = dlsym(library, "kiln_entry");
  if (!entry)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, name + ": artifact has no kiln_entry symbol");
  return reinterpret_cast<EntryFn>(entry);
}

void openOnCpu(kiln_artifact &artifact) {
  const std::string &name = artifact.path;

  std::vector<std::string> missing = kiln::rt::detail::missingCpuFeatures(artifact.manifest.features);
  if (!missing.empty()) {
    std::string list;
    for (const std::string &feature : missing)
      list += (list.empty() ? "" : ", ") + feature;
    throw StatusError(KILN_ERROR_CPU_FEATURES, name + ": compiled for CPU features the host lacks: " + list +
                                                   " (recompile with kilnc --cpu=native or a lower --cpu)");
  }
  artifact.runMutex = runMutexFor(artifact.library);
  if (!artifact.manifest.indexChecks.empty()) {
    std::optional<kiln::rt::detail::SymbolData> slots =
        kiln::rt::detail::findDataSymbol(artifact.library, "kiln_index_check", name);
    if (!slots || (slots->sized && slots->size != 2 * sizeof(int64_t)))
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        name + ": the manifest lists index checks but the artifact has no "
                               "kiln_index_check record");
    artifact.indexCheck = reinterpret_cast<int64_t *>(const_cast<char *>(slots->data));
  }
  if (std::size_t kernels = artifact.manifest.profiledKernels.size()) {
    std::optional<kiln::rt::detail::SymbolData> counters =
        kiln::rt::detail::findDataSymbol(artifact.library, "kiln_kernel_profile", name);
    if (!counters || (counters->sized && counters->size != 2 * kernels * sizeof(int64_t)))
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        name + ": the manifest lists " + std::to_string(kernels) +
                            " profiled kernels but the artifact has no kiln_kernel_profile "
                            "counters for them");
    artifact.kernelProfile = reinterpret_cast<int64_t *>(const_cast<char *>(counters->data));
  }
}

// Checks the manifest's signature of a CPU entry against the code's own record of it,
// `<symbol>_buffers` (the buffer count, then each buffer's bytes): a manifest that disagrees
// with the code would have the runtime hand it buffers it overruns, or return bytes it never
// wrote.
void checkBufferRecord(void *library, const std::string &symbol,
                       const std::vector<kiln::rt::TensorSpec> &inputs,
                       const std::vector<kiln::rt::TensorSpec> &outputs, const std::string &path) {
  std::string recordName = symbol + "_buffers";
  std::optional<kiln::rt::detail::SymbolData> record =
      kiln::rt::detail::findDataSymbol(library, recordName.c_str(), path);
  if (!record)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": artifact has no " + recordName +
                                                       " record of its buffers");
  const auto *words = reinterpret_cast<const uint64_t *>(record->data);
  std::size_t count = inputs.size() + outputs.size();
  if (record->size < sizeof(uint64_t) || words[0] != count)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": the manifest lists " + std::to_string(count) + " buffers for " +
                          symbol + ", the code was compiled for " +
                          (record->size >= sizeof(uint64_t) ? std::to_string(words[0]) : "?"));
  if (record->size != (count + 1) * sizeof(uint64_t))
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": " + recordName + " is " + std::to_string(record->size) +
                          " bytes, not the " + std::to_string((count + 1) * sizeof(uint64_t)) +
                          " of a record of " + std::to_string(count) + " buffers");
  for (std::size_t i = 0; i < count; ++i) {
    const kiln::rt::TensorSpec &spec = i < inputs.size() ? inputs[i] : outputs[i - inputs.size()];
    if (spec.byteSize() != words[1 + i])
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": the manifest gives " + (i < inputs.size() ? "input '" : "output '") +
                            spec.name + "' as " + spec.typeString() + " (" +
                            std::to_string(spec.byteSize()) + " bytes), the code was compiled for " +
                            std::to_string(words[1 + i]) + " bytes");
  }
}

// Picks the device (the artifact's default when none is asked for) and loads the code for it;
// never falls back to another device.
void openOn(kiln_artifact &artifact, DeviceSpec spec) {
  const Manifest &manifest = artifact.manifest;
  const std::string &name = artifact.path;
  artifact.devices = manifest.deviceList();
  for (const std::string &feature : manifest.features)
    artifact.features += (artifact.features.empty() ? "" : ",") + feature;
  bool hasCpu = manifest.hasDevice("cpu"), hasCuda = manifest.hasDevice("cuda");
  artifact.entry = findEntry(artifact.library, manifest, name);
  if (artifact.entry)
    checkBufferRecord(artifact.library, "kiln_entry", manifest.inputs, manifest.outputs, name);
  for (const kiln::rt::EntrySpec &entry : manifest.entries) {
    // A GPU artifact carries each entry as a GPU program too, read when the entry first runs.
    std::string symbol = "kiln_entry_" + entry.name;
    if (hasCuda) {
      std::string program = symbol + "_cuda_program";
      if (!dlsym(artifact.library, program.c_str()))
        throw StatusError(KILN_ERROR_INVALID_ARTIFACT, name + ": the manifest lists entry '" + entry.name +
                                                           "' but the artifact has no " + program + " symbol");
      artifact.entryManifests[entry.name] = kiln::rt::entryManifest(manifest, entry);
    }
    if (!hasCpu)
      continue;
    dlerror();
    void *address = dlsym(artifact.library, symbol.c_str());
    if (!address)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        name + ": the manifest lists entry '" + entry.name + "' but the artifact has no " +
                            symbol + " symbol");
    checkBufferRecord(artifact.library, symbol, entry.inputs, entry.outputs, name);
    artifact.entries[entry.name] = reinterpret_cast<EntryFn>(address);
  }
  if (manifest.hasDevice("partitioned")) {
    std::string devices;
    for (const kiln::rt::PartitionDevice &device : manifest.partitions)
      devices += (devices.empty() ? "" : ",") + device.name;
    if (spec.kind != DeviceSpec::Kind::Default)
      throw StatusError(KILN_ERROR_UNSUPPORTED, name + ": the artifact is partitioned over " + devices +
                                                    " and runs on those devices; do not name a device");
    openOnCpu(artifact);
    artifact.partitioned = kiln::rt::detail::PartitionedExecutor::open(name, manifest, artifact.library);
    artifact.device = artifact.partitioned->devices();
    return;
  }
  if (spec.kind == DeviceSpec::Kind::Default) {
    if (!hasCpu && !hasCuda)
      throw StatusError(KILN_ERROR_UNSUPPORTED, name + ": the artifact has code for " + artifact.devices +
                                                    " only, which this runtime cannot run");
    spec.kind = hasCpu ? DeviceSpec::Kind::Cpu : DeviceSpec::Kind::Gpu;
  }
  if (spec.kind == DeviceSpec::Kind::Cpu) {
    artifact.device = "cpu";
    if (!hasCpu)
      throw StatusError(KILN_ERROR_UNSUPPORTED, name + ": cannot run on cpu: the artifact has code for " +
                                                    artifact.devices + " only (add cpu to kilnc's --target)");
    openOnCpu(artifact);
    return;
  }
  artifact.device = "gpu:" + std::to_string(spec.index);
  if (!hasCuda)
    throw StatusError(KILN_ERROR_UNSUPPORTED, name + ": cannot run on " + artifact.device +
                                                  ": the artifact has code for " + artifact.devices +
                                                  " only (add cuda:sm_XY to kilnc's --target)");
  artifact.gpuIndex = spec.index;
  artifact.gpu = kiln::rt::cuda::Executor::open(name, manifest, artifact.library, spec.index);
}

} // namespace

namespace kiln::rt {

ArtifactInfo inspectArtifact(const std::string &path, unsigned flags) {
  ArtifactInfo info;
  void *library = nullptr;
  try {
    library = loadLibrary(path, info.manifest, flags);
    findEntry(library, info.manifest, path);
    if (info.manifest.hasDevice("cuda"))
      info.cudaProgram = cuda::Executor::readProgram(path, info.manifest, library);
    // A partitioned artifact: every stage's code.
    for (std::size_t s = 0; s < info.manifest.stages.size(); ++s) {
      std::string symbol = "kiln_stage_" + std::to_string(s);
      if (info.manifest.stages[s].device.rfind("gpu", 0) == 0) {
        cuda::Executor::readProgram(path, stageManifest(info.manifest, static_cast<int>(s)), library,
                                    symbol + "_");
      } else if (!dlsym(library, symbol.c_str())) {
        throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": artifact has no " + symbol + " symbol");
      }
    }
  } catch (...) {
    if (library)
      dlclose(library);
    throw;
  }
  dlclose(library);
  return info;
}

} // namespace kiln::rt

const kiln::rt::EntrySpec *kiln::rt::detail::findEntrySpec(const kiln_artifact &artifact, const char *name) {
  if (!name)
    return nullptr;
  for (const kiln::rt::EntrySpec &entry : artifact.manifest.entries)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

/// Fills `out` with tensor `index` of `specs`, `kind`s of `owner` ("artifact",
/// or "it" after an entry's name in `what`), or fails naming the range.
static kiln_status describeSpec(const kiln_artifact &artifact, const std::vector<TensorSpec> &specs,
                                int index, kiln_tensor_info *out, const std::string &what,
                                const char *kind, const char *owner) {
  if (index < 0 || static_cast<std::size_t>(index) >= specs.size())
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact.path + ": " + what + kind + " index " + std::to_string(index) +
                    " out of range (" + owner + " has " + std::to_string(specs.size()) + " " + kind +
                    "s)");
  const TensorSpec &spec = specs[static_cast<std::size_t>(index)];
  out->name = spec.name.c_str();
  out->dtype = spec.dtype;
  out->rank = static_cast<int>(spec.dims.size());
  out->dims = spec.dims.data();
  return KILN_OK;
}

static kiln_status describeEntry(const kiln_artifact *artifact, const char *entry, int index,
                                 kiln_tensor_info *out, bool input) {
  const char *kind = input ? "input" : "output";
  if (!artifact || !out)
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                std::string("kiln_artifact_entry_") + kind + ": artifact and out must not be NULL");
  const kiln::rt::EntrySpec *spec = findEntrySpec(*artifact, entry);
  if (!spec)
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": no entry '" + (entry ? entry : "(null)") + "'");
  return describeSpec(*artifact, input ? spec->inputs : spec->outputs, index, out,
                      "entry '" + spec->name + "' ", kind, "it");
}

kiln_status kiln::rt::detail::checkBuffers(const kiln_artifact *artifact, const std::vector<TensorSpec> &ins,
                                          const std::vector<TensorSpec> &outs, void *const *inputs,
                                          void *const *outputs, const char *what) {
  std::size_t numInputs = ins.size(), total = numInputs + outs.size();
  if ((numInputs && !inputs) || (total > numInputs && !outputs))
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": " + what + ": inputs/outputs array is NULL");
  for (std::size_t i = 0; i < total; ++i) {
    bool isInput = i < numInputs;
    const TensorSpec &spec = isInput ? ins[i] : outs[i - numInputs];
    void *user = isInput ? inputs[i] : outputs[i - numInputs];
    if (!user && spec.byteSize() > 0)
      return fail(KILN_ERROR_INVALID_ARGUMENT, artifact->path + ": " + (isInput ? "input '" : "output '") +
                                                   spec.name + "' buffer is NULL");
  }
  return KILN_OK;
}

/// Calls `call` with one aligned buffer per tensor (the caller's where it is
/// aligned, else a staged copy), serialized per loaded library.
// Throws when the run just made recorded an index out of range (and clears the record).
static void reportIndexCheck(kiln_artifact &artifact) {
  int64_t *slots = artifact.indexCheck;
  if (!slots || slots[0] == 0)
    return;
  int64_t id = slots[0] - 1, index = slots[1];
  slots[0] = slots[1] = 0;
  const auto &checks = artifact.manifest.indexChecks;
  if (id < 0 || static_cast<std::size_t>(id) >= checks.size())
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      artifact.path + ": the code reported index check " + std::to_string(id) +
                          ", which the manifest does not list");
  const kiln::rt::IndexCheckSpec &check = checks[static_cast<std::size_t>(id)];
  throw StatusError(KILN_ERROR_INVALID_ARGUMENT,
                    artifact.path + ": node '" + printable(check.node) + "': index " +
                        std::to_string(index) + " is out of range for a dimension of " +
                        std::to_string(check.size) + " (valid: " + std::to_string(-check.size) +
                        " to " + std::to_string(check.size - 1) + "); the outputs are not valid");
}

template <typename Call>
static void runOnCpu(kiln_artifact *artifact, const std::vector<TensorSpec> &ins,
                     const std::vector<TensorSpec> &outs, void *const *inputs, void *const *outputs,
                     Call call) {
  std::size_t numInputs = ins.size(), total = numInputs + outs.size();
  // Zero-byte tensors still get a valid, aligned address.
  alignas(KILN_BUFFER_ALIGNMENT) static char emptyBuffer[KILN_BUFFER_ALIGNMENT];
  std::vector<void *> buffers(total);
  std::vector<kiln::rt::detail::AlignedBuffer> staged(total);
  for (std::size_t i = 0; i < total; ++i) {
    bool isInput = i < numInputs;
    const TensorSpec &spec = isInput ? ins[i] : outs[i - numInputs];
    void *user = isInput ? inputs[i] : outputs[i - numInputs];
    std::size_t bytes = spec.byteSize();
    if (bytes == 0) {
      buffers[i] = emptyBuffer;
      continue;
    }
    if (reinterpret_cast<uintptr_t>(user) % KILN_BUFFER_ALIGNMENT == 0) {
      buffers[i] = user;
      continue;
    }
    staged[i] = kiln::rt::detail::allocateAligned(bytes);
    if (isInput)
      std::memcpy(staged[i].get(), user, bytes);
    buffers[i] = staged[i].get();
  }
  {
    std::lock_guard<std::mutex> lock(*artifact->runMutex);
    call(buffers.data());
    reportIndexCheck(*artifact);
  }
  for (std::size_t i = numInputs; i < total; ++i)
    if (staged[i])
      std::memcpy(outputs[i - numInputs], staged[i].get(), outs[i - numInputs].byteSize());
}

void kiln::rt::detail::runEntryOnCpu(kiln_artifact *artifact, const std::vector<TensorSpec> &ins,
                                     const std::vector<TensorSpec> &outs, void *const *inputs,
                                     void *const *outputs, EntryFn entry) {
  runOnCpu(artifact, ins, outs, inputs, outputs, [&](void **buffers) { entry(buffers); });
}

extern "C" {

const char *kiln_last_error(void) { return gLastError.c_str(); }

kiln_status kiln_artifact_open(const char *path, kiln_artifact **out) {
  return kiln_artifact_open_device(path, nullptr, out);
}

kiln_status kiln_artifact_open_device(const char *path, const char *device, kiln_artifact **out) {
  return kiln_artifact_open_flags(path, device, 0, out);
}

kiln_status kiln_artifact_open_flags(const char *path, const char *device, unsigned flags,
                                     kiln_artifact **out) {
  if (out)
    *out = nullptr;
  if (!path || !out)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_open: path and out must not be NULL");
  return guarded([&]() -> kiln_status {
    std::string name = path;
    if (name.empty())
      return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_open: empty artifact path");
    std::optional<DeviceSpec> spec = kiln::rt::parseDeviceString(device ? device : "");
    if (!spec)
      return fail(KILN_ERROR_INVALID_ARGUMENT, name + ": bad device '" + printable(device) +
                                                   "' (expected cpu, gpu or gpu:N)");
    auto artifact = std::make_unique<kiln_artifact>();
    artifact->path = name;
    artifact->library = loadLibrary(name, artifact->manifest, flags);
    try {
      openOn(*artifact, *spec);
    } catch (...) {
      void *library = artifact->library;
      artifact.reset();
      dlclose(library);
      throw;
    }
    *out = artifact.release();
    return KILN_OK;
  });
}

void kiln_artifact_close(kiln_artifact *artifact) {
  if (!artifact)
    return;
  void *library = artifact->library;
  artifact->runMutex.reset();
  delete artifact;
  if (library)
    dlclose(library);
}

const char *kiln_artifact_path(const kiln_artifact *artifact) {
  return artifact ? artifact->path.c_str() : "";
}
const char *kiln_artifact_name(const kiln_artifact *artifact) {
  return artifact ? artifact->manifest.name.c_str() : "";
}
const char *kiln_artifact_target(const kiln_artifact *artifact) {
  return artifact ? artifact->manifest.target.c_str() : "";
}
const char *kiln_artifact_cpu(const kiln_artifact *artifact) {
  return artifact ? artifact->manifest.cpu.c_str() : "";
}
const char *kiln_artifact_features(const kiln_artifact *artifact) {
  return artifact ? artifact->features.c_str() : "";
}

const char *kiln_artifact_device(const kiln_artifact *artifact) {
  return artifact ? artifact->device.c_str() : "";
}
const char *kiln_artifact_device_name(const kiln_artifact *artifact) {
  if (!artifact)
    return "";
  return artifact->gpu ? artifact->gpu->deviceName().c_str() : artifact->manifest.cpu.c_str();
}
const char *kiln_artifact_devices(const kiln_artifact *artifact) {
  return artifact ? artifact->devices.c_str() : "";
}
const char *kiln_artifact_device_code(const kiln_artifact *artifact) {
  return artifact && artifact->gpu ? artifact->gpu->code().c_str() : "";
}
int64_t kiln_artifact_profile_kernels(const kiln_artifact *artifact) {
  return artifact && artifact->kernelProfile
             ? static_cast<int64_t>(artifact->manifest.profiledKernels.size())
             : 0;
}
kiln_status kiln_artifact_profile_kernel(kiln_artifact *artifact, int64_t index, const char **function,
                                         const char **kind, const char **nodes, int64_t *nanoseconds,
                                         int64_t *calls) {
  int64_t kernels = kiln_artifact_profile_kernels(artifact);
  if (index < 0 || index >= kernels)
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                "kiln_artifact_profile_kernel: kernel " + std::to_string(index) + " of " +
                    std::to_string(kernels) +
                    (artifact && kernels == 0 ? " (" + artifact->path + " was compiled without kilnc --profile)"
                                              : ""));
  std::lock_guard<std::mutex> lock(*artifact->runMutex);
  const kiln::rt::ProfiledKernelSpec &kernel = artifact->manifest.profiledKernels[index];
  if (function)
    *function = kernel.function.c_str();
  if (kind)
    *kind = kernel.kind.c_str();
  if (nodes)
    *nodes = kernel.nodes.c_str();
  if (nanoseconds)
    *nanoseconds = artifact->kernelProfile[2 * index];
  if (calls)
    *calls = artifact->kernelProfile[2 * index + 1];
  return KILN_OK;
}
kiln_status kiln_artifact_profile_reset(kiln_artifact *artifact) {
  if (!artifact)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_profile_reset: artifact must not be NULL");
  if (int64_t kernels = kiln_artifact_profile_kernels(artifact)) {
    std::lock_guard<std::mutex> lock(*artifact->runMutex);
    std::fill_n(artifact->kernelProfile, 2 * kernels, 0);
  }
  return KILN_OK;
}
double kiln_artifact_last_device_ms(const kiln_artifact *artifact) {
  return artifact && artifact->gpu ? artifact->gpu->lastDeviceMs() : -1.0;
}
kiln_status kiln_artifact_time_steps(kiln_artifact *artifact, int steps, double *ms) {
  if (!artifact || !ms || steps < 1)
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                "kiln_artifact_time_steps: artifact and ms must not be NULL and steps must be positive");
  if (!artifact->gpu)
    return fail(KILN_ERROR_UNSUPPORTED,
                artifact->path + ": kiln_artifact_time_steps times GPU programs; this runs on the CPU");
  return guarded([&]() -> kiln_status {
    *ms = artifact->gpu->timeSteps(steps);
    return KILN_OK;
  });
}
const char *kiln_artifact_cuda_graph(const kiln_artifact *artifact) {
  return artifact && artifact->gpu ? artifact->gpu->cudaGraphState().c_str() : "";
}

kiln_status kiln_artifact_set_option(kiln_artifact *artifact, const char *key, const char *value) {
  if (!artifact || !key || !value)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_set_option: artifact, key and value must not be NULL");
  std::string name = key, setting = value;
  if (name != "cuda-graph")
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": unknown option '" + printable(name) + "' (options: cuda-graph)");
  if (setting != "on" && setting != "off")
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": option cuda-graph takes on or off, got '" + printable(setting) + "'");
  // CPU artifacts accept it too, so callers can set it without knowing the device.
  if (artifact->gpu)
    artifact->gpu->setCudaGraph(setting == "on");
  return KILN_OK;
}

int kiln_artifact_has_collectives(const kiln_artifact *artifact) {
  if (artifact && artifact->gpu)
    return artifact->gpu->hasCollectives();
  return artifact && artifact->library && !artifact->partitioned &&
         dlsym(artifact->library, KILN_COLLECTIVE_HOOKS_SYMBOL) != nullptr;
}

kiln_status kiln_artifact_set_device_collective(kiln_artifact *artifact, const kiln_device_collective_hooks *hooks) {
  if (!artifact)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_set_device_collective: artifact must not be NULL");
  if (!artifact->gpu)
    return fail(KILN_ERROR_INVALID_ARGUMENT, artifact->path + ": kiln_artifact_set_device_collective is for GPU "
                                                              "steps; this one runs on " + artifact->device +
                                                              " (kiln_artifact_set_collective)");
  if (!artifact->gpu->hasCollectives())
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": not a data-parallel train step (compile it with kilnc --train "
                                 "--data-parallel=true)");
  return guarded([&]() -> kiln_status {
    artifact->gpu->setCollective(hooks);
    return KILN_OK;
  });
}

kiln_status kiln_artifact_set_collective(kiln_artifact *artifact, const kiln_collective_hooks *hooks) {
  if (!artifact)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_set_collective: artifact must not be NULL");
  if (artifact->gpu)
    return fail(KILN_ERROR_INVALID_ARGUMENT, artifact->path + ": the step runs on " + artifact->device +
                                                 "; give it device hooks (kiln_artifact_set_device_collective)");
  if (!kiln_artifact_has_collectives(artifact))
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                artifact->path + ": not a data-parallel train step (compile it with kilnc --train "
                                 "--data-parallel=true)");
  auto *table = static_cast<kiln_collective_hooks *>(dlsym(artifact->library, KILN_COLLECTIVE_HOOKS_SYMBOL));
  std::lock_guard<std::mutex> lock(*artifact->runMutex);
  *table = hooks ? *hooks : kiln_collective_hooks{};
  return KILN_OK;
}

int kiln_artifact_num_inputs(const kiln_artifact *artifact) {
  return artifact ? static_cast<int>(artifact->manifest.inputs.size()) : 0;
}
int kiln_artifact_num_outputs(const kiln_artifact *artifact) {
  return artifact ? static_cast<int>(artifact->manifest.outputs.size()) : 0;
}

static kiln_status describe(const kiln_artifact *artifact, int index, kiln_tensor_info *out,
                            bool input) {
  const char *kind = input ? "input" : "output";
  if (!artifact || !out)
    return fail(KILN_ERROR_INVALID_ARGUMENT,
                std::string("kiln_artifact_") + kind + ": artifact and out must not be NULL");
  return describeSpec(*artifact, input ? artifact->manifest.inputs : artifact->manifest.outputs,
                      index, out, "", kind, "artifact");
}

kiln_status kiln_artifact_input(const kiln_artifact *artifact, int index, kiln_tensor_info *out) {
  return describe(artifact, index, out, true);
}
kiln_status kiln_artifact_output(const kiln_artifact *artifact, int index, kiln_tensor_info *out) {
  return describe(artifact, index, out, false);
}

static const char *stateOf(const std::vector<kiln::rt::TensorSpec> &specs, int index) {
  return index >= 0 && static_cast<std::size_t>(index) < specs.size() ? specs[index].state.c_str()
                                                                     : "";
}
const char *kiln_artifact_input_state(const kiln_artifact *artifact, int index) {
  return artifact ? stateOf(artifact->manifest.inputs, index) : "";
}
const char *kiln_artifact_output_state(const kiln_artifact *artifact, int index) {
  return artifact ? stateOf(artifact->manifest.outputs, index) : "";
}

int kiln_artifact_find_input(const kiln_artifact *artifact, const char *name) {
  return artifact && name ? kiln::rt::findSpec(artifact->manifest.inputs, name) : -1;
}
int kiln_artifact_find_output(const kiln_artifact *artifact, const char *name) {
  return artifact && name ? kiln::rt::findSpec(artifact->manifest.outputs, name) : -1;
}

kiln_status kiln_artifact_run(kiln_artifact *artifact, void *const *inputs, void *const *outputs) {
  if (!artifact)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_run: artifact is NULL");
  return guarded([&]() -> kiln_status {
    const Manifest &manifest = artifact->manifest;
    // Resident state: the runtime's buffers stand in for the caller's (the GPU executor ignores
    // the pointers of its resident tensors; any non-NULL one passes the check below).
    std::vector<void *> ins, outs;
    if (artifact->resident) {
      static char ignored;
      ins.assign(inputs ? inputs : nullptr, inputs ? inputs + manifest.inputs.size() : nullptr);
      outs.assign(outputs ? outputs : nullptr, outputs ? outputs + manifest.outputs.size() : nullptr);
      ins.resize(manifest.inputs.size());
      outs.resize(manifest.outputs.size());
      for (std::size_t k = 0; k < artifact->residentPairs.size(); ++k) {
        auto [input, output] = artifact->residentPairs[k];
        if (artifact->gpu) {
          ins[input] = outs[output] = &ignored;
          continue;
        }
        ins[input] = artifact->stateIn[k].get();
        outs[output] = manifest.outputs[output].inPlace ? artifact->stateIn[k].get()
                                                        : artifact->stateOut[k].get();
      }
      inputs = ins.data();
      outputs = outs.data();
    }
    if (kiln_status status = checkBuffers(artifact, manifest.inputs, manifest.outputs, inputs,
                                          outputs, "kiln_artifact_run");
        status != KILN_OK)
      return status;
    if (artifact->gpu) {
      artifact->gpu->run(inputs, outputs);
      return KILN_OK;
    }
    runOnCpu(artifact, manifest.inputs, manifest.outputs, inputs, outputs, [&](void **buffers) {
      if (artifact->partitioned)
        artifact->partitioned->run(buffers);
      else
        artifact->entry(buffers);
    });
    for (std::size_t k = 0; k < artifact->stateIn.size(); ++k)
      if (!manifest.outputs[artifact->residentPairs[k].second].inPlace)
        std::swap(artifact->stateIn[k], artifact->stateOut[k]);
    return KILN_OK;
  });
}

int kiln_artifact_num_entries(const kiln_artifact *artifact) {
  return artifact ? static_cast<int>(artifact->manifest.entries.size()) : 0;
}

const char *kiln_artifact_entry_name(const kiln_artifact *artifact, int index) {
  if (!artifact || index < 0 || static_cast<std::size_t>(index) >= artifact->manifest.entries.size())
    return nullptr;
  return artifact->manifest.entries[static_cast<std::size_t>(index)].name.c_str();
}

int kiln_artifact_entry_num_inputs(const kiln_artifact *artifact, const char *entry) {
  const kiln::rt::EntrySpec *spec = artifact ? findEntrySpec(*artifact, entry) : nullptr;
  return spec ? static_cast<int>(spec->inputs.size()) : -1;
}

int kiln_artifact_entry_num_outputs(const kiln_artifact *artifact, const char *entry) {
  const kiln::rt::EntrySpec *spec = artifact ? findEntrySpec(*artifact, entry) : nullptr;
  return spec ? static_cast<int>(spec->outputs.size()) : -1;
}

kiln_status kiln_artifact_entry_input(const kiln_artifact *artifact, const char *entry, int index,
                                      kiln_tensor_info *out) {
  return describeEntry(artifact, entry, index, out, true);
}

kiln_status kiln_artifact_entry_output(const kiln_artifact *artifact, const char *entry, int index,
                                       kiln_tensor_info *out) {
  return describeEntry(artifact, entry, index, out, false);
}

} // extern "C"
