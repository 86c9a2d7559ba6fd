//===- DataObject.cpp - Read-only data as an object file ------------------===//
//
// The object is the smallest ELF relocatable file LLD accepts: a header, one
// SHF_ALLOC read-only section holding every symbol's bytes at its alignment,
// the symbol table, its string table and the section-name table. Symbols
// refer to their section by offset, so there are no relocations.
//
//===----------------------------------------------------------------------===//
#include "compiler/DataObject.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/SwapByteOrder.h"

#include <cstring>

using namespace mlir;

namespace kiln {
namespace {

/// Alignment of every symbol takeConstantData makes: a cache line, and the
/// widest vector load.
constexpr uint64_t kDataAlignment = 64;

/// Appends `text` and a NUL to a string table; returns where it starts.
uint32_t addString(std::string &table, llvm::StringRef text) {
  auto offset = static_cast<uint32_t>(table.size());
  table.append(text.begin(), text.end());
  table.push_back('\0');
  return offset;
}

void writeZeros(llvm::raw_ostream &os, uint64_t count) {
  static const char zeros[256] = {};
  for (; count > sizeof zeros; count -= sizeof zeros)
    os.write(zeros, sizeof zeros);
  os.write(zeros, count);
}

template <typename T> void writeStruct(llvm::raw_ostream &os, const T &value) {
  os.write(reinterpret_cast<const char *>(&value), sizeof value);
}

} // namespace

std::optional<ArrayRef<char>> rawElementBytes(Attribute attr) {
  if (auto resource = llvm::dyn_cast_or_null<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    return blob->getData();
  }
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || dense.isSplat())
    return std::nullopt;
  Type element = dense.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8 != 0)
    return std::nullopt;
  return dense.getRawData();
}

bool canWriteDataObject(const llvm::Triple &triple) {
  return llvm::sys::IsLittleEndianHost && triple.isOSBinFormatELF() &&
         (triple.getArch() == llvm::Triple::x86_64 || triple.getArch() == llvm::Triple::aarch64);
}

std::vector<DataSymbol> takeConstantData(ModuleOp module, uint64_t minBytes) {
  std::vector<DataSymbol> symbols;
  module.walk([&](LLVM::GlobalOp global) {
    if (!global.getConstant() || global.getThreadLocal_())
      return;
    std::optional<ArrayRef<char>> bytes = rawElementBytes(global.getValueOrNull());
    if (!bytes || bytes->size() < minBytes)
      return;
    uint64_t alignment = std::max<uint64_t>(global.getAlignment().value_or(1), kDataAlignment);
    symbols.push_back({global.getSymName().str(), alignment, *bytes, /*exported=*/false});
    global.removeValueAttr();
    global.setLinkage(LLVM::Linkage::External);
    global.setVisibility_(LLVM::Visibility::Hidden);
    global.setDsoLocal(true);
    global.setUnnamedAddr(std::nullopt);
    global.setAlignment(alignment);
  });
  return symbols;
}

llvm::Error writeDataObject(llvm::raw_ostream &os, const llvm::Triple &triple,
                            llvm::ArrayRef<DataSymbol> symbols) {
  namespace elf = llvm::ELF;
  if (!canWriteDataObject(triple))
    return llvm::createStringError("cannot write a data object for " + triple.str());

  // Sections: 0 null, 1 the data, 2 .symtab, 3 .strtab, 4 .shstrtab.
  enum : uint16_t { kData = 1, kSymtab, kStrtab, kShstrtab, kSections };
  std::string names(1, '\0');
  uint32_t dataName = addString(names, ".rodata.kiln.data");
  uint32_t symtabName = addString(names, ".symtab");
  uint32_t strtabName = addString(names, ".strtab");
  uint32_t shstrtabName = addString(names, ".shstrtab");

  // Each symbol's offset in the data section.
  std::string strings(1, '\0');
  std::vector<elf::Elf64_Sym> table(1);
  uint64_t dataSize = 0, dataAlignment = 1;
  for (const DataSymbol &symbol : symbols) {
    dataSize = llvm::alignTo(dataSize, symbol.alignment);
    dataAlignment = std::max(dataAlignment, symbol.alignment);
    elf::Elf64_Sym &entry = table.emplace_back();
    std::memset(&entry, 0, sizeof entry);
    entry.st_name = addString(strings, symbol.name);
    entry.setBindingAndType(elf::STB_GLOBAL, elf::STT_OBJECT);
    entry.st_other = symbol.exported ? elf::STV_DEFAULT : elf::STV_HIDDEN;
    entry.st_shndx = kData;
    entry.st_value = dataSize;
    entry.st_size = symbol.bytes.size();
    dataSize += symbol.bytes.size();
  }

  uint64_t dataOffset = llvm::alignTo(sizeof(elf::Elf64_Ehdr), dataAlignment);
  uint64_t symtabOffset = llvm::alignTo(dataOffset + dataSize, 8);
  uint64_t strtabOffset = symtabOffset + table.size() * sizeof(elf::Elf64_Sym);
  uint64_t shstrtabOffset = strtabOffset + strings.size();
  uint64_t headersOffset = llvm::alignTo(shstrtabOffset + names.size(), 8);

  elf::Elf64_Ehdr header;
  std::memset(&header, 0, sizeof header);
  std::memcpy(header.e_ident, elf::ElfMagic, 4);
  header.e_ident[elf::EI_CLASS] = elf::ELFCLASS64;
  header.e_ident[elf::EI_DATA] = elf::ELFDATA2LSB;
  header.e_ident[elf::EI_VERSION] = elf::EV_CURRENT;
  header.e_ident[elf::EI_OSABI] = elf::ELFOSABI_NONE;
  header.e_type = elf::ET_REL;
  header.e_machine = triple.getArch() == llvm::Triple::x86_64 ? elf::EM_X86_64 : elf::EM_AARCH64;
  header.e_version = elf::EV_CURRENT;
  header.e_shoff = headersOffset;
  header.e_ehsize = sizeof(elf::Elf64_Ehdr);
  header.e_shentsize = sizeof(elf::Elf64_Shdr);
  header.e_shnum = kSections;
  header.e_shstrndx = kShstrtab;

  auto section = [](uint32_t name, uint32_t type, uint64_t flags, uint64_t offset, uint64_t size,
                    uint64_t alignment) {
    elf::Elf64_Shdr result;
    std::memset(&result, 0, sizeof result);
    result.sh_name = name;
    result.sh_type = type;
    result.sh_flags = flags;
    result.sh_offset = offset;
    result.sh_size = size;
    result.sh_addralign = alignment;
    return result;
  };
  elf::Elf64_Shdr sections[kSections];
  std::memset(&sections[0], 0, sizeof sections[0]);
  sections[kData] =
      section(dataName, elf::SHT_PROGBITS, elf::SHF_ALLOC, dataOffset, dataSize, dataAlignment);
  sections[kSymtab] = section(symtabName, elf::SHT_SYMTAB, 0, symtabOffset,
                              table.size() * sizeof(elf::Elf64_Sym), 8);
  sections[kSymtab].sh_link = kStrtab;
  sections[kSymtab].sh_info = 1; // the first global symbol: all but the null one
  sections[kSymtab].sh_entsize = sizeof(elf::Elf64_Sym);
  sections[kStrtab] = section(strtabName, elf::SHT_STRTAB, 0, strtabOffset, strings.size(), 1);
  sections[kShstrtab] =
      section(shstrtabName, elf::SHT_STRTAB, 0, shstrtabOffset, names.size(), 1);

  uint64_t written = 0;
  auto pad = [&](uint64_t offset) {
    writeZeros(os, offset - written);
    written = offset;
  };
  writeStruct(os, header);
  written = sizeof header;
  pad(dataOffset);
  for (auto [symbol, entry] : llvm::zip_equal(symbols, llvm::ArrayRef(table).drop_front())) {
    pad(dataOffset + entry.st_value);
    os.write(symbol.bytes.data(), symbol.bytes.size());
    written += symbol.bytes.size();
  }
  pad(symtabOffset);
  for (const elf::Elf64_Sym &entry : table)
    writeStruct(os, entry);
  os << strings << names;
  written = shstrtabOffset + names.size();
  pad(headersOffset);
  for (const elf::Elf64_Shdr &header : sections)
    writeStruct(os, header);
  return llvm::Error::success();
}

} // namespace kiln
