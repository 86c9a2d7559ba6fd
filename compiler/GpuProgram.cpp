//===- GpuProgram.cpp - The host program of a GPU artifact ----------------===//
#include "compiler/GpuProgram.h"
#include "compiler/DataObject.h"

#include "codegen/ArenaPacking.h"
#include "codegen/Contraction.h"
#include "dialects/kiln/KilnOps.h"
#include "dialects/kiln_gpu/KilnGpuOps.h"
#include "kiln/manifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {
namespace {

/// Where a tensor lives on the device.
struct Buffer {
  enum Kind { Input, Output, Arena, Constant } kind;
  /// Input/output number, or byte offset in the arena or the constants.
  int64_t at = 0;
  int64_t bytes = 0;
  /// The arena live range, for Arena buffers.
  unsigned range = 0;
};

int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, llvm::divideCeil(type.getIntOrFloatBitWidth(), 8));
}

int64_t tensorBytes(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  return tensor.getNumElements() * elementBytes(tensor.getElementType());
}

/// The element bytes of a constant as the device reads them: booleans one
/// byte each (the attribute packs them in bits), splats repeated.
FailureOr<std::string> constantBytes(ElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  Type element = type.getElementType();
  if (std::optional<ArrayRef<char>> bytes = rawElementBytes(attr))
    return std::string(bytes->begin(), bytes->end());
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return failure();
  if (element.isInteger(1)) {
    std::string bytes;
    for (bool value : dense.getValues<bool>())
      bytes.push_back(value ? 1 : 0);
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    std::string bytes;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      bytes.append(raw.begin(), raw.begin() + elementBytes(element));
    return bytes;
  }
  return std::string(raw.begin(), raw.end());
}

/// The ONNX node an op came from: the first name in its location.
std::string nodeName(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string name = nodeName(inner); !name.empty())
        return name;
  if (auto callSite = llvm::dyn_cast<CallSiteLoc>(loc))
    return nodeName(callSite.getCallee());
  return "";
}

class ProgramBuilder {
public:
  explicit ProgramBuilder(func::FuncOp main) : main(main) {}

  llvm::Expected<GpuProgram> build() {
    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    // A result computed by a kernel is written straight into its output
    // buffer; any other result (an input, a constant, a second return of the
    // same tensor) is copied there at the end.
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      outputOf.try_emplace(throughReshapes(value), index);
    for (auto [index, argument] : llvm::enumerate(main.getArguments()))
      place(argument, {Buffer::Input, static_cast<int64_t>(index), tensorBytes(argument.getType())});

    for (auto [step, op] : llvm::enumerate(main.getBody().front().getOperations())) {
      for (Value operand : op.getOperands())
        if (auto it = bufferOf.find(operand); it != bufferOf.end())
          if (buffers[it->second].kind == Buffer::Arena)
            ranges[buffers[it->second].range].end = step;
      if (failed(placeResults(&op, step)))
        return llvm::createStringError("the GPU program cannot be built");
    }
    program.arenaBytes = packLiveRanges(ranges, kGpuBufferAlignment);
    for (Buffer &buffer : buffers)
      if (buffer.kind == Buffer::Arena)
        buffer.at = ranges[buffer.range].offset;

    std::string body;
    llvm::raw_string_ostream os(body);
    for (Operation &op : main.getBody().front()) {
      if (auto launch = dyn_cast<kgpu::LaunchOp>(op))
        writeLaunch(os, launch);
      else if (auto matmul = dyn_cast<kgpu::MatmulOp>(op))
        writeMatmul(os, matmul);
      else if (isa<AllReduceStartOp, AllReduceWaitOp, WorldSizeOp, ReplicaRankOp>(op))
        writeCollective(os, &op);
    }
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      const Buffer &source = buffers[bufferOf.lookup(value)];
      if (source.kind == Buffer::Output && source.at == static_cast<int64_t>(index))
        continue;
      if (source.bytes == 0)
        continue;
      os << "copy dst=out:" << index << " src=" << ref(source) << " bytes=" << source.bytes
         << "\n";
      ++program.copies;
    }
    program.text = "kiln-cuda-program 1\narena " + std::to_string(program.arenaBytes) +
                   "\nconstants " + std::to_string(program.constants.size()) + "\n" + body;
    return std::move(program);
  }

private:
  void place(Value value, Buffer buffer) {
    bufferOf[value] = buffers.size();
    buffers.push_back(buffer);
  }

  /// A buffer for a tensor computed on the device at `step`.
  void placeComputed(Value value, unsigned step) {
    int64_t bytes = tensorBytes(value.getType());
    if (auto it = outputOf.find(value); it != outputOf.end()) {
      place(value, {Buffer::Output, static_cast<int64_t>(it->second), bytes});
      return;
    }
    place(value, {Buffer::Arena, 0, bytes, static_cast<unsigned>(ranges.size())});
    ranges.push_back({bytes, step, step});
  }

  LogicalResult placeResults(Operation *op, unsigned step) {
    if (isa<func::ReturnOp>(op))
      return success();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto elements = llvm::dyn_cast<ElementsAttr>(constant.getValue());
      if (!elements)
        return op->emitError("kilnc: the GPU program holds only tensor constants");
      auto [it, added] = constantOffsets.try_emplace(elements, 0);
      if (added) {
        FailureOr<std::string> bytes = constantBytes(elements);
        if (failed(bytes))
          return op->emitError("kilnc: cannot read the bytes of this constant");
        program.constants.resize(llvm::alignTo(program.constants.size(), kGpuBufferAlignment));
        it->second = program.constants.size();
        program.constants += *bytes;
      }
      place(constant.getResult(),
            {Buffer::Constant, it->second, tensorBytes(constant.getType())});
      return success();
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
      bufferOf[op->getResult(0)] = bufferOf.lookup(op->getOperand(0));
      return success();
    }
    if (isa<AllReduceStartOp, AllReduceWaitOp>(op)) {
      // The sum is in place: the bucket keeps its buffer from its concatenation to the last
      // slice read after the wait.
      auto it = bufferOf.find(op->getOperand(0));
      if (it == bufferOf.end() || (buffers[it->second].kind != Buffer::Arena &&
                                   buffers[it->second].kind != Buffer::Output))
        return op->emitError("kilnc: an all-reduce sums a buffer the step computes, in place; "
                             "this one reads an input or a constant");
      bufferOf[op->getResult(0)] = it->second;
      return success();
    }
    if (isa<tensor::EmptyOp, kgpu::LaunchOp, kgpu::MatmulOp, WorldSizeOp, ReplicaRankOp>(op)) {
      for (Value result : op->getResults())
        placeComputed(result, step);
      return success();
    }
    return op->emitError("kilnc: '") << op->getName() << "' cannot run in a GPU program";
  }

  std::string ref(const Buffer &buffer) const {
    switch (buffer.kind) {
    case Buffer::Input: return "in:" + std::to_string(buffer.at);
    case Buffer::Output: return "out:" + std::to_string(buffer.at);
    case Buffer::Arena: return "arena:" + std::to_string(buffer.at);
    case Buffer::Constant: return "const:" + std::to_string(buffer.at);
    }
    return "-";
  }

  std::string ref(Value value) const {
    if (!value)
      return "-";
    return ref(buffers[bufferOf.lookup(value)]);
  }

  static void writeNode(llvm::raw_ostream &os, Operation *op) {
    std::string name = nodeName(op->getLoc());
    if (!name.empty())
      os << " node=" << rt::percentEncode(name);
    os << "\n";
  }

  /// A data-parallel step's collectives: the runtime's hooks (NCCL) sum the
  /// bucket in place; world-size and replica-rank write the values the step
  /// reads.
  void writeCollective(llvm::raw_ostream &os, Operation *op) {
    if (auto start = dyn_cast<AllReduceStartOp>(op))
      os << "all-reduce-start bucket=" << start.getBucket() << " data=" << ref(start.getOutput())
         << " count=" << start.getType().getNumElements();
    else if (auto wait = dyn_cast<AllReduceWaitOp>(op))
      os << "all-reduce-wait bucket=" << wait.getBucket() << " data=" << ref(wait.getOutput())
         << " count=" << wait.getType().getNumElements();
    else
      os << (isa<WorldSizeOp>(op) ? "world-size" : "replica-rank") << " data=" << ref(op->getResult(0));
    writeNode(os, op);
  }

  void writeLaunch(llvm::raw_ostream &os, kgpu::LaunchOp launch) {
    auto triple = [](ArrayRef<int64_t> dims) {
      return std::to_string(dims[0]) + "," + std::to_string(dims[1]) + "," +
             std::to_string(dims[2]);
    };
    os << "launch kernel=" << launch.getKernel().getLeafReference().getValue()
       << " grid=" << triple(launch.getGrid()) << " block=" << triple(launch.getBlock())
       << " shared=" << launch.getShared() << " args=";
    bool first = true;
    for (Value value : llvm::concat<Value>(launch.getInputs(), launch.getResults())) {
      os << (first ? "" : ",") << ref(value);
      first = false;
    }
    writeNode(os, launch);
    ++program.launches;
  }

  void writeMatmul(llvm::raw_ostream &os, kgpu::MatmulOp matmul) {
    Type element = matmul.getResult().getType().getElementType();
    // The verifier made sure every view exists.
    kgpu::MatmulOp::MatrixView lhs = *matmul.getLhsView(), rhs = *matmul.getRhsView(),
                               out = *matmul.getResultView();
    os << "matmul dtype=" << (element.isF32() ? "f32" : element.isF16() ? "f16" : "bf16")
       << " math=" << (matmul.getAllowTf32() ? "tf32" : "f32") << " batch=" << matmul.getBatch()
       << " m=" << matmul.getM() << " n=" << matmul.getN() << " k=" << matmul.getK()
       << " lhs=" << ref(matmul.getLhs()) << " lhs_t=" << matmul.getLhsTransposed()
       << " lhs_batched=" << (lhs.batches > 1) << " lhs_ld=" << lhs.rowStride
       << " lhs_batch_stride=" << lhs.batchStride << " rhs=" << ref(matmul.getRhs())
       << " rhs_t=" << matmul.getRhsTransposed() << " rhs_batched=" << (rhs.batches > 1)
       << " rhs_ld=" << rhs.rowStride << " rhs_batch_stride=" << rhs.batchStride
       << " out=" << ref(matmul.getResult()) << " out_ld=" << out.rowStride
       << " out_batch_stride=" << out.batchStride << " bias=" << ref(matmul.getBias())
       << " addend=" << ref(matmul.getAddend());
    if (matmul.getAddend()) {
      kgpu::MatmulOp::MatrixView addend = *matmul.getAddendView();
      os << " addend_ld=" << addend.rowStride << " addend_batch_stride=" << addend.batchStride;
    }
    if (matmul.getAlpha().convertToFloat() != 1.0f)
      os << " alpha=" << llvm::format("%.9g", matmul.getAlpha().convertToFloat());
    os << " epilogue=" << kgpu::stringifyEpilogue(matmul.getEpilogue());
    writeNode(os, matmul);
    ++program.matmuls;
  }

  func::FuncOp main;
  GpuProgram program;
  llvm::DenseMap<Value, unsigned> bufferOf;
  llvm::SmallVector<Buffer> buffers;
  llvm::SmallVector<LiveRange> ranges;
  llvm::DenseMap<Value, unsigned> outputOf;
  llvm::DenseMap<Attribute, int64_t> constantOffsets;
};

} // namespace

llvm::Expected<GpuProgram> buildGpuProgram(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.getBody().getBlocks().size() != 1)
    return llvm::createStringError("the GPU program needs a @main of one block");
  return ProgramBuilder(main).build();
}

} // namespace kiln
