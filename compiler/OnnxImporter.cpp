//===- OnnxImporter.cpp - ONNX ModelProto to the kiln dialect -------------===//
//
// Translates an ONNX graph node by node. ONNX operands that decide shapes
// (Reshape's shape, Slice's starts, ...) must be constants here and become
// attributes; everything about shapes is then checked by the kiln ops' own
// type inference, so an inconsistent model is reported at the ONNX node.
//
//===----------------------------------------------------------------------===//
#include "compiler/OnnxImporter.h"
#include "compiler/Importer.h"

#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "kiln/files.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <functional>

using namespace mlir;

namespace kiln {
namespace onnx_import {

LogicalResult Importer::checkSize(Location loc, ArrayRef<int64_t> shape, Type element,
                                  const Twine &what) {
  uint64_t bits = element.isInteger(1) ? 8 : element.getIntOrFloatBitWidth();
  int64_t bytes = static_cast<int64_t>(bits / 8);
  for (int64_t d : shape)
    if (d < 0 || llvm::MulOverflow(bytes, d, bytes) || bytes > kMaxTensorBytes)
      return fail(loc, ImportFailure::Invalid,
                  what + " of shape " + describeShape(shape) +
                      " is larger than the 2^48 bytes Kiln can address");
  return success();
}

Location Importer::nodeLoc(const onnx::NodeProto &node, int index) {
  std::string name = node.name();
  if (name.empty())
    name = node.op_type() + "#" + std::to_string(index) +
           (node.output_size() ? " -> " + node.output(0) : "");
  return NameLoc::get(StringAttr::get(&context, name), fileLoc());
}

FailureOr<Type> Importer::elementType(int32_t onnxType, Location loc, const Twine &what) {
  MLIRContext *ctx = &context;
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return Type(Float32Type::get(ctx));
  case onnx::TensorProto::DOUBLE:
    return Type(Float64Type::get(ctx));
  case onnx::TensorProto::FLOAT16:
    return Type(Float16Type::get(ctx));
  case onnx::TensorProto::BFLOAT16:
    return Type(BFloat16Type::get(ctx));
  case onnx::TensorProto::INT64:
    return Type(IntegerType::get(ctx, 64));
  case onnx::TensorProto::INT32:
    return Type(IntegerType::get(ctx, 32));
  case onnx::TensorProto::INT16:
    return Type(IntegerType::get(ctx, 16));
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
    return Type(IntegerType::get(ctx, 8));
  case onnx::TensorProto::UINT16:
    return Type(IntegerType::get(ctx, 16));
  case onnx::TensorProto::UINT32:
    return Type(IntegerType::get(ctx, 32));
  case onnx::TensorProto::UINT64:
    return Type(IntegerType::get(ctx, 64));
  case onnx::TensorProto::BOOL:
    return Type(IntegerType::get(ctx, 1));
  default:
    break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(onnxType)
                         ? onnx::TensorProto::DataType_Name(
                               static_cast<onnx::TensorProto::DataType>(onnxType))
                         : "type code " + std::to_string(onnxType);
  (void)fail(loc, ImportFailure::Unsupported,
             what + " has element type " + name +
                 ", which Kiln does not support (supported: float, double, "
                 "float16, bfloat16, int64, int32, int16, int8, uint64, uint32, uint16, "
                 "uint8, bool)");
  return mlir::failure();
}

bool Importer::isUnsignedType(int32_t onnxType) {
  return onnxType == onnx::TensorProto::UINT8 || onnxType == onnx::TensorProto::UINT16 ||
         onnxType == onnx::TensorProto::UINT32 || onnxType == onnx::TensorProto::UINT64;
}

FailureOr<DenseElementsAttr> Importer::tensorAttr(const onnx::TensorProto &tensor,
                                                  Location loc) {
  std::string what = "tensor '" + tensor.name() + "'";
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    (void)fail(loc, ImportFailure::Unsupported,
               what + " stores its data in an external file, which Kiln does "
                      "not read yet");
    return mlir::failure();
  }
  FailureOr<Type> element = elementType(tensor.data_type(), loc, what);
  if (failed(element))
    return mlir::failure();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; })) {
    (void)fail(loc, ImportFailure::Invalid, what + " has a negative dimension");
    return mlir::failure();
  }
  if (failed(checkSize(loc, shape, *element, what)))
    return mlir::failure();
  int64_t count = llvm::product_of(shape);
  auto type = RankedTensorType::get(shape, *element);
  unsigned bytes = element->isInteger(1) ? 1 : element->getIntOrFloatBitWidth() / 8;
  // Collect the data as little-endian bytes, one element per `bytes`.
  std::vector<char> raw;
  if (tensor.has_raw_data()) {
    raw.assign(tensor.raw_data().begin(), tensor.raw_data().end());
  } else {
    auto append = [&](auto value, unsigned size) {
      const char *p = reinterpret_cast<const char *>(&value);
      raw.insert(raw.end(), p, p + size);
    };
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      for (float v : tensor.float_data())
        append(v, 4);
      break;
    case onnx::TensorProto::DOUBLE:
      for (double v : tensor.double_data())
        append(v, 8);
      break;
    case onnx::TensorProto::INT64:
      for (int64_t v : tensor.int64_data())
        append(v, 8);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      for (uint64_t v : tensor.uint64_data())
        append(v, bytes);
      break;
    default: // int32_data carries every narrower type, f16/bf16 as bits.
      for (int32_t v : tensor.int32_data())
        append(v, bytes);
      break;
    }
  }
  if (static_cast<int64_t>(raw.size()) != count * static_cast<int64_t>(bytes)) {
    (void)fail(loc, ImportFailure::Invalid,
               what + " holds " + Twine(raw.size()) + " bytes of data but its shape " +
                   describeShape(shape) + " needs " + Twine(count * bytes));
    return mlir::failure();
  }
  if (element->isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : raw)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return DenseElementsAttr::getFromRawBuffer(type, ArrayRef<char>(raw));
}

FailureOr<DenseElementsAttr> Importer::constantOperand(Node &node, size_t index,
                                                       StringRef what) {
  Value value = node.input(index);
  DenseElementsAttr attr;
  if (value)
    if (auto cst = value.getDefiningOp<ConstantOp>())
      attr = llvm::dyn_cast<DenseElementsAttr>(cst.getValue());
  if (attr)
    return attr;
  auto it = value ? graphInputNames.find(value) : graphInputNames.end();
  if (it != graphInputNames.end()) {
    (void)failNode(node, ImportFailure::NeedsConstant,
                   "operand '" + what + "' must be known at compile time (Kiln "
                   "compiles shapes and attributes into the code), but it is the "
                   "graph input '" + it->second + "'; bind it to a tensor with "
                   "--freeze-input " + it->second + "=FILE.pb");
    return mlir::failure();
  }
  // Computed from graph inputs: freezing those makes it a constant.
  if (SmallVector<std::string> sources = graphInputsBehind(value); !sources.empty()) {
    std::string hints;
    for (const std::string &name : sources)
      hints += " --freeze-input " + name + "=FILE.pb";
    (void)failNode(node, ImportFailure::NeedsConstant,
                   "operand '" + what + "' must be known at compile time (Kiln "
                   "compiles shapes and attributes into the code), but it is computed "
                   "from the graph input" + (sources.size() > 1 ? "s '" : " '") +
                       llvm::join(sources, "', '") + "'; bind them to tensors with" + hints);
    return mlir::failure();
  }
  (void)failNode(node, ImportFailure::Unsupported,
                 "operand '" + what + "' must be known at compile time (Kiln "
                 "compiles shapes and attributes into the code), but it is " +
                     (value ? "computed at run time (dynamic shapes are not supported)"
                            : "absent"));
  return mlir::failure();
}

SmallVector<std::string> Importer::graphInputsBehind(Value value) {
  SmallVector<std::string> names;
  SmallVector<Value> work;
  llvm::DenseSet<Value> seen;
  if (value)
    work.push_back(value);
  // Shape arithmetic is small; a value behind thousands of ops is not one
  // freezing inputs would make constant cheaply, so the walk is bounded.
  for (int visits = 0; !work.empty() && visits < 10000; ++visits) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto it = graphInputNames.find(v); it != graphInputNames.end()) {
      names.push_back(it->second);
      continue;
    }
    if (Operation *op = v.getDefiningOp())
      llvm::append_range(work, op->getOperands());
  }
  llvm::sort(names);
  return names;
}

FailureOr<SmallVector<int64_t>> Importer::constantInts(Node &node, size_t index,
                                                       StringRef what) {
  if (!node.input(index))
    return SmallVector<int64_t>{};
  FailureOr<DenseElementsAttr> attr = constantOperand(node, index, what);
  if (failed(attr))
    return mlir::failure();
  if (!llvm::isa<IntegerType>(attr->getElementType())) {
    (void)failNode(node, ImportFailure::Invalid, "operand '" + what + "' must be integers");
    return mlir::failure();
  }
  SmallVector<int64_t> result;
  for (const APInt &v : attr->getValues<APInt>())
    result.push_back(v.getSExtValue());
  return result;
}

FailureOr<double> Importer::constantScalar(Node &node, size_t index, StringRef what) {
  FailureOr<DenseElementsAttr> attr = constantOperand(node, index, what);
  if (failed(attr))
    return mlir::failure();
  if (attr->getNumElements() != 1) {
    (void)failNode(node, ImportFailure::Invalid,
                   "operand '" + what + "' must be a scalar, got " +
                       describeShape(attr->getType().getShape()));
    return mlir::failure();
  }
  if (llvm::isa<FloatType>(attr->getElementType()))
    return (*attr->getValues<APFloat>().begin()).convertToDouble();
  return static_cast<double>((*attr->getValues<APInt>().begin()).getSExtValue());
}

/// Normalizes possibly negative `axes` for `rank`, sorted and unique.
FailureOr<SmallVector<int64_t>> normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      return failure();
    result.push_back(a);
  }
  llvm::sort(result);
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

//===----------------------------------------------------------------------===//
// Op handlers
//===----------------------------------------------------------------------===//

template <typename Op>
Handler unaryOp() {
  return [](Importer &im, Node &n) -> Results {
    return one(im.create<Op>(n.loc, n.input(0)));
  };
}

/// Unary ops whose scalar parameters are the f32 attributes `names` with
/// ONNX's defaults.
template <typename Op>
Handler paramOp(std::vector<std::pair<const char *, float>> params) {
  return [params](Importer &im, Node &n) -> Results {
    FailureOr<Op> op = im.create<Op>(n.loc, n.input(0));
    if (failed(op))
      return failure();
    for (auto [name, dflt] : params)
      (*op)->setAttr(name, im.builder.getF32FloatAttr(n.getFloat(name, dflt)));
    return one(*op);
  };
}

template <typename Op>
Handler binaryOp() {
  return [](Importer &im, Node &n) -> Results {
    FailureOr<Op> op = im.create<Op>(n.loc, n.input(0), n.input(1));
    if (failed(op))
      return failure();
    markUnsigned(n, *op);
    return one(*op);
  };
}

/// Sum/Max/Min/Mean take any number of inputs: a left fold of the binary op.
template <typename Op>
Handler variadicOp(bool mean = false) {
  return [mean](Importer &im, Node &n) -> Results {
    if (n.inputs.empty())
      return im.failNode(n, ImportFailure::Invalid, "needs at least one input");
    Value acc = n.inputs.front();
    for (Value v : ArrayRef(n.inputs).drop_front()) {
      FailureOr<Op> op = im.create<Op>(n.loc, acc, v);
      if (failed(op))
        return failure();
      markUnsigned(n, *op);
      acc = *op;
    }
    if (mean && n.inputs.size() > 1)
      acc = DivOp::create(im.builder, n.loc, acc,
                          im.splat(n.loc, typeOf(acc).getElementType(), n.inputs.size()));
    return one(acc);
  };
}

// The identity of an initializer is an initializer of its own, named after
// the output: exporters store equal tensors once and give each use its name
// through an Identity (PyTorch: fresh batch normalizations share one tensor
// of ones and one of zeros). A train step trains each such use apart, as the
// model that was exported does.
Results importIdentity(Importer &im, Node &n) {
  Value input = n.input(0);
  auto constant = input ? input.getDefiningOp<ConstantOp>() : ConstantOp();
  auto name = constant ? dyn_cast<NameLoc>(constant.getLoc()) : NameLoc();
  if (!name || !name.getName().getValue().starts_with("initializer '") ||
      n.proto.output_size() != 1 || n.proto.output(0).empty())
    return one(input);
  Location loc = NameLoc::get(
      StringAttr::get(im.builder.getContext(), "initializer '" + n.proto.output(0) + "'"),
      name.getChildLoc());
  return one(im.constant(loc, llvm::cast<DenseElementsAttr>(constant.getValue())));
}

// Dropout in training mode draws its mask with kiln.dropout (a train step
// gives it the step counter); otherwise it is the identity.
Results importDropout(Importer &im, Node &n) {
  bool training = false;
  if (n.input(2)) {
    FailureOr<double> mode = im.constantScalar(n, 2, "training_mode");
    if (failed(mode))
      return failure();
    training = *mode != 0;
  }
  if (training) {
    double ratio = 0.5;
    if (n.input(1)) {
      FailureOr<double> given = im.constantScalar(n, 1, "ratio");
      if (failed(given))
        return failure();
      ratio = *given;
    }
    if (!(ratio >= 0 && ratio < 1))
      return im.failNode(n, ImportFailure::Invalid,
                         "ratio must be in [0, 1), got " + std::to_string(ratio));
    // Each node draws its own mask: its seed, or the FNV-1a hash of its
    // output's name (the same on every machine and every run).
    uint64_t hash = 0xcbf29ce484222325ull;
    for (char c : n.proto.output(0))
      hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    int64_t seed = n.attr("seed") ? n.getInt("seed", 0) : static_cast<int64_t>(hash);
    Value x = n.input(0);
    auto op = DropoutOp::create(im.builder, n.loc, x.getType(), x, Value(), Value(),
                                im.builder.getF32FloatAttr(ratio), im.builder.getI64IntegerAttr(seed));
    SmallVector<Value> results = {op};
    if (n.proto.output_size() > 1)
      results.push_back(NotOp::create(
          im.builder, n.loc,
          EqualOp::create(im.builder, n.loc, op, im.splat(n.loc, typeOf(x).getElementType(), 0))));
    return results;
  }
  SmallVector<Value> results = {n.input(0)};
  if (n.proto.output_size() > 1) {
    auto maskType = RankedTensorType::get(typeOf(n.input(0)).getShape(), im.builder.getI1Type());
    results.push_back(im.constant(n.loc, DenseElementsAttr::get(maskType, true)));
  }
  return results;
}

/// Casts `n`'s input 0 to `element`, unsigned as `unsignedOutput` says.
Results castTo(Importer &im, Node &n, Type element, bool unsignedOutput) {
  auto type = RankedTensorType::get(typeOf(n.input(0)).getShape(), element);
  auto cast = CastOp::create(im.builder, n.loc, type, n.input(0));
  cast.setUnsignedInput(n.isUnsigned(0));
  cast.setUnsignedOutput(unsignedOutput && element.isInteger() && !element.isInteger(1));
  n.setUnsignedOutput(0, cast.getUnsignedOutput());
  return one(cast);
}

Results importCast(Importer &im, Node &n) {
  int64_t to = n.getInt("to", 0);
  FailureOr<Type> element = im.elementType(to, n.loc, "Cast's 'to'");
  if (failed(element))
    return failure();
  return castTo(im, n, *element, Importer::isUnsignedType(to));
}

Results importCastLike(Importer &im, Node &n) {
  return castTo(im, n, typeOf(n.input(1)).getElementType(), n.isUnsigned(1));
}

Results importClip(Importer &im, Node &n) {
  Value x = n.input(0), lo = n.input(1), hi = n.input(2);
  Type element = typeOf(x).getElementType();
  if (n.opset < 11) {
    lo = im.splat(n.loc, element, n.getFloat("min", -std::numeric_limits<float>::infinity()));
    hi = im.splat(n.loc, element, n.getFloat("max", std::numeric_limits<float>::infinity()));
  }
  if (lo) {
    FailureOr<MaxOp> above = im.create<MaxOp>(n.loc, x, lo, n.anyUnsigned());
    if (failed(above))
      return failure();
    x = *above;
  }
  if (hi) {
    FailureOr<MinOp> below = im.create<MinOp>(n.loc, x, hi, n.anyUnsigned());
    if (failed(below))
      return failure();
    x = *below;
  }
  return one(x);
}

Results importIsInf(Importer &im, Node &n) {
  auto type = RankedTensorType::get(typeOf(n.input(0)).getShape(), im.builder.getI1Type());
  return one(IsInfOp::create(im.builder, n.loc, type, n.input(0),
                             n.getInt("detect_positive", 1) != 0,
                             n.getInt("detect_negative", 1) != 0));
}

Results importIsNaN(Importer &im, Node &n) {
  auto type = RankedTensorType::get(typeOf(n.input(0)).getShape(), im.builder.getI1Type());
  return one(IsNaNOp::create(im.builder, n.loc, type, n.input(0)));
}

Results importMod(Importer &im, Node &n) {
  bool fmod = n.getInt("fmod", 0) != 0;
  if (!fmod && llvm::isa<FloatType>(typeOf(n.input(0)).getElementType()))
    return im.failNode(n, ImportFailure::Invalid, "fmod must be 1 for floating-point inputs");
  FailureOr<ModOp> op = im.create<ModOp>(n.loc, n.input(0), n.input(1), fmod);
  if (failed(op))
    return failure();
  markUnsigned(n, *op);
  return one(*op);
}

/// Pow's exponent may have another type than its base; an unsigned one is
/// converted to the base's type first (as unsigned).
Results importPow(Importer &im, Node &n) {
  if (n.isUnsigned(0))
    return im.failNode(n, ImportFailure::Unsupported,
                       "an unsigned integer base is not supported (the exponent may be one)");
  Value exponent = n.input(1);
  if (n.isUnsigned(1)) {
    auto type = RankedTensorType::get(typeOf(exponent).getShape(),
                                      typeOf(n.input(0)).getElementType());
    auto cast = CastOp::create(im.builder, n.loc, type, exponent);
    cast.setUnsignedInput(true);
    exponent = cast;
  }
  return one(im.create<PowOp>(n.loc, n.input(0), exponent));
}

Results importWhere(Importer &im, Node &n) {
  return one(im.create<WhereOp>(n.loc, n.input(0), n.input(1), n.input(2)));
}

Results importMatMul(Importer &im, Node &n) {
  return one(im.create<MatMulOp>(n.loc, n.input(0), n.input(1)));
}

Results importEinsum(Importer &im, Node &n) {
  if (n.inputs.empty() || llvm::is_contained(n.inputs, Value()))
    return im.failNode(n, ImportFailure::Invalid, "needs at least one input, none absent");
  return one(im.create<EinsumOp>(n.loc, ValueRange(n.inputs), n.getString("equation", "")));
}

Results importGemm(Importer &im, Node &n) {
  return one(im.create<GemmOp>(n.loc, n.input(0), n.input(1), n.input(2),
                               llvm::APFloat(n.getFloat("alpha", 1.0f)),
                               llvm::APFloat(n.getFloat("beta", 1.0f)),
                               n.getInt("transA", 0) != 0, n.getInt("transB", 0) != 0));
}

FailureOr<SmallVector<int64_t>> windowPads(Importer &im, Node &n, ArrayRef<int64_t> input,
                                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                           ArrayRef<int64_t> dilations) {
  size_t spatial = kernel.size();
  std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    SmallVector<int64_t> pads =
        n.getInts("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "pads must have " + Twine(2 * spatial) + " values for a " +
                            Twine(spatial) + "-D window");
      return failure();
    }
    return pads;
  }
  SmallVector<int64_t> pads(2 * spatial, 0);
  if (autoPad == "VALID")
    return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    (void)im.failNode(n, ImportFailure::Invalid, "unknown auto_pad '" + autoPad + "'");
    return failure();
  }
  for (size_t i = 0; i < spatial; ++i) {
    // Checked here, before the arithmetic below divides by a stride and multiplies by both.
    int64_t span, reach;
    if (strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1 ||
        llvm::MulOverflow(kernel[i] - 1, dilations[i], span) ||
        llvm::AddOverflow(input[i], strides[i], reach)) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "strides and dilations must be >= 1 and keep the window in range with auto_pad " +
                            autoPad);
      return failure();
    }
    int64_t out = (reach - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + span + 1 - input[i]);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[spatial + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

// 2-D convolution is kiln.conv; 1-D convolution is one of a single row
// ([N, C, L] viewed as [N, C, 1, L]); 3-D has importConv3D.
Results importConv(Importer &im, Node &n) {
  RankedTensorType x = typeOf(n.input(0)), w = typeOf(n.input(1));
  if (x.getRank() == 5 && w.getRank() == 5)
    return importConv3D(im, n);
  int64_t rank = x.getRank(), spatial = rank - 2;
  if ((rank != 3 && rank != 4) || w.getRank() != rank)
    return im.failNode(n, ImportFailure::Unsupported,
                       "only 1-D, 2-D and 3-D convolution (3-D, 4-D and 5-D inputs with filters "
                       "of the same rank) are supported, got input " +
                           describeShape(x.getShape()) + " and filter " +
                           describeShape(w.getShape()));
  SmallVector<int64_t> kernel(w.getShape().drop_front(2));
  SmallVector<int64_t> strides =
      n.getInts("strides").value_or(SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> dilations =
      n.getInts("dilations").value_or(SmallVector<int64_t>(spatial, 1));
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial)
    return im.failNode(n, ImportFailure::Invalid,
                       "strides and dilations need " + Twine(spatial) + " values");
  FailureOr<SmallVector<int64_t>> pads =
      windowPads(im, n, x.getShape().drop_front(2), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  Value input = n.input(0), filter = n.input(1);
  if (spatial == 1) {
    OpBuilder &b = im.builder;
    input = reshapeTo(b, n.loc, input, {x.getDimSize(0), x.getDimSize(1), 1, x.getDimSize(2)});
    filter = reshapeTo(b, n.loc, filter, {w.getDimSize(0), w.getDimSize(1), 1, kernel[0]});
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    *pads = {0, (*pads)[0], 0, (*pads)[1]};
  }
  FailureOr<ConvOp> conv = im.create<ConvOp>(n.loc, input, filter, n.input(2), strides, *pads,
                                             dilations, n.getInt("group", 1));
  if (failed(conv) || spatial != 1)
    return one(conv);
  RankedTensorType y = conv->getType();
  return one(reshapeTo(im.builder, n.loc, *conv,
                       {y.getDimSize(0), y.getDimSize(1), y.getDimSize(3)}));
}

template <typename Op>
Results importPool(Importer &im, Node &n);

// 1-D pooling is 2-D pooling of a window one row high: [N, C, L] is viewed
// as [N, C, 1, L] and every attribute gains a leading 1 (or 0 for pads).
template <typename Op>
Results importPool1D(Importer &im, Node &n) {
  RankedTensorType x = typeOf(n.input(0));
  std::optional<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  if (!kernel || kernel->size() != 1)
    return im.failNode(n, ImportFailure::Invalid, "kernel_shape must have 1 value");
  SmallVector<int64_t> strides = n.getInts("strides").value_or(SmallVector<int64_t>{1});
  SmallVector<int64_t> dilations = n.getInts("dilations").value_or(SmallVector<int64_t>{1});
  if (strides.size() != 1 || dilations.size() != 1)
    return im.failNode(n, ImportFailure::Invalid, "strides and dilations must have 1 value");
  SmallVector<int64_t> kernel2{1, kernel->front()}, strides2{1, strides.front()},
      dilations2{1, dilations.front()};
  SmallVector<int64_t> pads;
  if (n.getString("auto_pad", "NOTSET") == "NOTSET") {
    SmallVector<int64_t> given = n.getInts("pads").value_or(SmallVector<int64_t>(2, 0));
    if (given.size() != 2)
      return im.failNode(n, ImportFailure::Invalid, "pads must have 2 values for a 1-D window");
    pads = {0, given[0], 0, given[1]};
  } else {
    FailureOr<SmallVector<int64_t>> resolved =
        windowPads(im, n, {1, x.getDimSize(2)}, kernel2, strides2, dilations2);
    if (failed(resolved))
      return failure();
    pads = *resolved;
  }
  OpBuilder &b = im.builder;
  Value view = ReshapeOp::create(
      b, n.loc, RankedTensorType::get({x.getDimSize(0), x.getDimSize(1), 1, x.getDimSize(2)},
                                      x.getElementType()),
      n.input(0));
  FailureOr<Op> op = im.create<Op>(n.loc, view, kernel2, strides2, pads, dilations2,
                                   n.getInt("ceil_mode", 0) != 0);
  if (failed(op))
    return failure();
  if constexpr (std::is_same_v<Op, AveragePoolOp>)
    op->setCountIncludePad(n.getInt("count_include_pad", 0) != 0);
  RankedTensorType pooled = op->getType();
  return one(ReshapeOp::create(
      b, n.loc,
      RankedTensorType::get({pooled.getDimSize(0), pooled.getDimSize(1), pooled.getDimSize(3)},
                            pooled.getElementType()),
      op->getResult()));
}

template <typename Op>
Results importPool(Importer &im, Node &n) {
  RankedTensorType x = typeOf(n.input(0));
  bool withIndices = n.proto.output_size() > 1 && !n.proto.output(1).empty();
  if (withIndices && (!std::is_same_v<Op, MaxPoolOp> || x.getRank() != 4))
    return im.failNode(n, ImportFailure::Unsupported,
                       "the Indices output is supported for 2-D max pooling (4-D inputs) only, "
                       "got input " + describeShape(x.getShape()));
  if (x.getRank() == 3)
    return importPool1D<Op>(im, n);
  if (x.getRank() == 5 && llvm::isa<FloatType>(x.getElementType()))
    return importPool3D(im, n, std::is_same_v<Op, MaxPoolOp>);
  if (x.getRank() != 4)
    return im.failNode(n, ImportFailure::Unsupported,
                       "only 1-D, 2-D and 3-D pooling of floats (3-D, 4-D and 5-D inputs) is "
                       "supported, got input " +
                           describeShape(x.getShape()));
  std::optional<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  if (!kernel || kernel->size() != 2)
    return im.failNode(n, ImportFailure::Invalid, "kernel_shape must have 2 values");
  SmallVector<int64_t> strides = n.getInts("strides").value_or(SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations =
      n.getInts("dilations").value_or(SmallVector<int64_t>{1, 1});
  FailureOr<SmallVector<int64_t>> pads =
      windowPads(im, n, x.getShape().drop_front(2), *kernel, strides, dilations);
  if (failed(pads))
    return failure();
  bool ceil = n.getInt("ceil_mode", 0) != 0;
  // Max pooling of 8- and 16-bit integers runs in f32, which holds them
  // exactly (the maximum of a window is one of its elements).
  Value input = n.input(0);
  Type element = x.getElementType();
  bool integers = std::is_same_v<Op, MaxPoolOp> && element.isInteger() && !element.isInteger(1);
  if (integers) {
    if (element.getIntOrFloatBitWidth() > 16)
      return im.failNode(n, ImportFailure::Unsupported,
                         "max pooling of integers wider than 16 bits is not supported");
    auto cast = CastOp::create(im.builder, n.loc, x.clone(im.builder.getF32Type()), input);
    cast.setUnsignedInput(n.isUnsigned(0));
    input = cast;
  }
  FailureOr<Op> op = im.create<Op>(n.loc, input, *kernel, strides, *pads, dilations, ceil);
  if (failed(op))
    return failure();
  if constexpr (std::is_same_v<Op, AveragePoolOp>)
    op->setCountIncludePad(n.getInt("count_include_pad", 0) != 0);
  Value y = *op;
  if (integers) {
    auto back = CastOp::create(im.builder, n.loc, typeOf(*op).clone(element), *op);
    back.setUnsignedOutput(n.isUnsigned(0));
    y = back;
  }
  if (!withIndices)
    return one(y);
  FailureOr<Value> indices =
      maxPoolIndices(im, n, input, *op, *kernel, strides, *pads, dilations);
  if (failed(indices))
    return failure();
  return SmallVector<Value>{y, *indices};
}

template <typename Op>
Results importGlobalPool(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  return one(im.create<Op>(n.loc, n.input(0), axes, true));
}

// In training mode the node normalizes with the batch's statistics and may
// also yield the updated running statistics, ONNX's
//   running = input_running * momentum + batch_stat * (1 - momentum)
// with the batch's biased variance.
Results importBatchNorm(Importer &im, Node &n) {
  bool training = n.getInt("training_mode", 0) != 0;
  float momentum = n.getFloat("momentum", 0.9f);
  FailureOr<BatchNormOp> normalized = im.create<BatchNormOp>(
      n.loc, n.input(0), n.input(1), n.input(2), n.input(3), n.input(4),
      llvm::APFloat(n.getFloat("epsilon", 1e-5f)), llvm::APFloat(momentum), training);
  if (failed(normalized))
    return failure();
  SmallVector<Value> results = {*normalized};
  if (n.proto.output_size() > 1) {
    if (!training)
      return im.failNode(n, ImportFailure::Invalid,
                         "running statistics outputs need training_mode = 1");
    OpBuilder &b = im.builder;
    Value x = n.input(0);
    RankedTensorType type = typeOf(x);
    Type element = type.getElementType();
    SmallVector<int64_t> axes{0};
    for (int64_t i = 2; i < type.getRank(); ++i)
      axes.push_back(i);
    auto flat = RankedTensorType::get({type.getDimSize(1)}, element);
    Value mean = ReduceMeanOp::create(b, n.loc, x, axes, true);
    Value centered = SubOp::create(b, n.loc, x, mean);
    Value variance = ReduceMeanOp::create(b, n.loc, MulOp::create(b, n.loc, centered, centered), axes, true);
    for (auto [stat, running] : {std::pair{mean, n.input(3)}, std::pair{variance, n.input(4)}}) {
      Value kept = MulOp::create(b, n.loc, running, im.splat(n.loc, element, momentum));
      Value fresh = MulOp::create(b, n.loc, ReshapeOp::create(b, n.loc, flat, stat),
                                  im.splat(n.loc, element, 1.0 - momentum));
      results.push_back(AddOp::create(b, n.loc, kept, fresh));
    }
    results.resize(n.proto.output_size());
  }
  return results;
}

Results importLayerNorm(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  int64_t axis = n.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  FailureOr<LayerNormOp> op = im.create<LayerNormOp>(n.loc, n.input(0), n.input(1), n.input(2),
                                                     axis, llvm::APFloat(n.getFloat("epsilon", 1e-5f)));
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->getResults());
}

template <typename Op>
Handler reduceOp() {
  return [](Importer &im, Node &n) -> Results {
    int64_t rank = typeOf(n.input(0)).getRank();
    SmallVector<int64_t> axes;
    bool fromInput = n.proto.op_type() == "ReduceSum" && n.opset >= 13;
    if (fromInput) {
      FailureOr<SmallVector<int64_t>> values = im.constantInts(n, 1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    } else {
      axes = n.getInts("axes").value_or(SmallVector<int64_t>{});
    }
    if (axes.empty()) {
      if (n.getInt("noop_with_empty_axes", 0) != 0)
        return one(n.input(0));
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    }
    FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(axes, rank);
    if (failed(normalized))
      return im.failNode(n, ImportFailure::Invalid, "axes out of range");
    return one(im.create<Op>(n.loc, n.input(0), *normalized, n.getInt("keepdims", 1) != 0));
  };
}

Results importCumSum(Importer &im, Node &n) {
  FailureOr<int64_t> axis = im.constantInt(n, 1, "axis");
  if (failed(axis))
    return failure();
  int64_t rank = typeOf(n.input(0)).getRank();
  if (*axis < -rank || *axis >= rank)
    return im.failNode(n, ImportFailure::Invalid,
                       "axis must be one value in [-" + std::to_string(rank) + ", " +
                           std::to_string(rank) + ")");
  int64_t a = *axis < 0 ? *axis + rank : *axis;
  FailureOr<CumSumOp> op = im.create<CumSumOp>(n.loc, n.input(0), a, n.getInt("exclusive", 0) != 0,
                                              n.getInt("reverse", 0) != 0);
  if (failed(op))
    return failure();
  return one(op->getResult());
}

template <typename Op>
Results importArgReduce(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  int64_t axis = n.getInt("axis", 0);
  if (axis < 0)
    axis += rank;
  return one(im.create<Op>(n.loc, n.input(0), axis, n.getInt("keepdims", 1) != 0,
                           n.getInt("select_last_index", 0) != 0));
}

// TopK with K known at compile time: kiln.topk's indices, and the values
// gathered by them. The results are always sorted (which sorted = 0 allows).
Results importTopK(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  int64_t axis = n.getInt("axis", -1);
  if (axis < 0)
    axis += rank;
  int64_t k;
  if (n.opset < 10) {
    k = n.getInt("k", 0);
  } else {
    FailureOr<int64_t> given = im.constantInt(n, 1, "K");
    if (failed(given))
      return failure();
    k = *given;
  }
  if (k == 0 && axis >= 0 && axis < rank) {
    RankedTensorType type = typeOf(n.input(0));
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = 0;
    return SmallVector<Value>{
        im.emptyConstant(n.loc, RankedTensorType::get(shape, type.getElementType())),
        im.emptyConstant(n.loc, RankedTensorType::get(shape, im.builder.getI64Type()))};
  }
  FailureOr<TopKOp> indices =
      im.create<TopKOp>(n.loc, n.input(0), axis, k, n.getInt("largest", 1) != 0);
  if (failed(indices))
    return failure();
  FailureOr<GatherElementsOp> values = im.create<GatherElementsOp>(n.loc, n.input(0), *indices, axis);
  if (failed(values))
    return failure();
  return SmallVector<Value>{*values, *indices};
}

template <typename Op>
Results importSoftmax(Importer &im, Node &n) {
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  int64_t axis = n.getInt("axis", n.opset < 13 ? 1 : -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return im.failNode(n, ImportFailure::Invalid, "axis out of range");
  if (n.opset >= 13 || axis == rank - 1)
    return one(im.create<Op>(n.loc, x, axis));
  // Before opset 13 the input is coerced to a matrix split at `axis`.
  auto flat = FlattenOp::create(im.builder, n.loc, x, axis);
  Value y = Op::create(im.builder, n.loc, flat, 1);
  return one(ReshapeOp::create(im.builder, n.loc, type, y));
}

Results importReshape(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<SmallVector<int64_t>> shape =
      n.opset < 5 ? FailureOr<SmallVector<int64_t>>(
                        n.getInts("shape").value_or(SmallVector<int64_t>{}))
                  : im.constantInts(n, 1, "shape");
  if (failed(shape))
    return failure();
  bool allowZero = n.getInt("allowzero", 0) != 0;
  // With allowzero, a 0 in the shape makes the result empty.
  bool empty = allowZero && llvm::is_contained(*shape, 0);
  int64_t known = 1, inferred = -1;
  SmallVector<int64_t> result(*shape);
  for (auto [i, d] : llvm::enumerate(result)) {
    if (d == 0 && !allowZero) {
      if (i >= static_cast<size_t>(type.getRank()))
        return im.failNode(n, ImportFailure::Invalid, "shape copies a missing dimension");
      d = type.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return im.failNode(n, ImportFailure::Invalid, "shape has more than one -1");
      inferred = i;
      continue;
    }
    if (d < 0)
      return im.failNode(n, ImportFailure::Invalid, "shape has a negative dimension");
    if (llvm::MulOverflow(known, d, known) || (!empty && known > type.getNumElements()))
      return im.failNode(n, ImportFailure::Invalid,
                         "cannot reshape " + describeShape(type.getShape()) + " to " +
                             describeShape(*shape));
  }
  if (inferred >= 0) {
    if (known == 0 || type.getNumElements() % known != 0)
      return im.failNode(n, ImportFailure::Invalid,
                         "cannot reshape " + describeShape(type.getShape()) + " to " +
                             describeShape(*shape));
    result[inferred] = type.getNumElements() / known;
  }
  auto resultType = RankedTensorType::get(result, type.getElementType());
  if (resultType.getNumElements() != type.getNumElements())
    return im.failNode(n, ImportFailure::Invalid,
                       "cannot reshape " + describeShape(type.getShape()) + " to " +
                           describeShape(result));
  return one(ReshapeOp::create(im.builder, n.loc, resultType, n.input(0)));
}

Results importFlatten(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  int64_t axis = n.getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  return one(im.create<FlattenOp>(n.loc, n.input(0), axis));
}

/// Axes from the `axes` attribute (before opset 13) or the second operand.
FailureOr<SmallVector<int64_t>> axesOperand(Importer &im, Node &n) {
  if (n.opset < 13)
    return n.getInts("axes").value_or(SmallVector<int64_t>{});
  return im.constantInts(n, 1, "axes");
}

Results importSqueeze(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<SmallVector<int64_t>> axes = axesOperand(im, n);
  if (failed(axes))
    return failure();
  if (axes->empty())
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      if (d == 1)
        axes->push_back(i);
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(*axes, type.getRank());
  if (failed(normalized))
    return im.failNode(n, ImportFailure::Invalid, "axes out of range");
  return one(im.create<SqueezeOp>(n.loc, n.input(0), *normalized));
}

Results importUnsqueeze(Importer &im, Node &n) {
  FailureOr<SmallVector<int64_t>> axes = axesOperand(im, n);
  if (failed(axes))
    return failure();
  int64_t rank = typeOf(n.input(0)).getRank() + axes->size();
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(*axes, rank);
  if (failed(normalized) || normalized->size() != axes->size())
    return im.failNode(n, ImportFailure::Invalid, "axes out of range or repeated");
  return one(im.create<UnsqueezeOp>(n.loc, n.input(0), *normalized));
}

Results importTranspose(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  SmallVector<int64_t> perm;
  if (auto given = n.getInts("perm")) {
    perm = *given;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  return one(im.create<TransposeOp>(n.loc, n.input(0), perm));
}

Results importConcat(Importer &im, Node &n) {
  if (n.inputs.empty())
    return im.failNode(n, ImportFailure::Invalid, "needs at least one input");
  int64_t rank = typeOf(n.input(0)).getRank();
  int64_t axis = n.getInt("axis", 0);
  if (axis < 0)
    axis += rank;
  return one(im.create<ConcatOp>(n.loc, ValueRange(n.inputs), axis));
}

/// A kiln.slice of `x` taking, along each dimension, ONNX's
/// start/end/step semantics (clamped, negative values counted from the end).
Value sliceOf(Importer &im, Location loc, Value x, ArrayRef<int64_t> starts,
              ArrayRef<int64_t> ends, ArrayRef<int64_t> axes, ArrayRef<int64_t> steps) {
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> start(rank, 0), step(rank, 1), size(type.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i], dim = type.getDimSize(axis);
    int64_t s = starts[i], e = ends[i], st = steps[i];
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    // After clamping, the distance between start and end is at most
    // dim + 1; a step at least that long takes one element. (Exporters
    // write INT64_MAX and INT64_MIN for "to the end".)
    int64_t distance;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      distance = e - s;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      distance = s - e;
    }
    uint64_t stride = st > 0 ? uint64_t(st) : -uint64_t(st);
    size[axis] = distance <= 0 ? 0 : (uint64_t(distance) - 1) / stride + 1;
    start[axis] = size[axis] == 0 ? 0 : s;
    // A step that takes at most one element is 1 (INT64_MIN is also MLIR's
    // marker of a dynamic stride).
    step[axis] = size[axis] <= 1 ? 1 : st;
  }
  auto resultType = RankedTensorType::get(size, type.getElementType());
  return SliceOp::create(im.builder, loc, resultType, x, start, step);
}

Results importSlice(Importer &im, Node &n) {
  int64_t rank = typeOf(n.input(0)).getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    starts = n.getInts("starts").value_or(SmallVector<int64_t>{});
    ends = n.getInts("ends").value_or(SmallVector<int64_t>{});
    axes = n.getInts("axes").value_or(SmallVector<int64_t>{});
  } else {
    const char *names[] = {"starts", "ends", "axes", "steps"};
    SmallVector<int64_t> *slots[] = {&starts, &ends, &axes, &steps};
    for (int i = 0; i < 4; ++i) {
      FailureOr<SmallVector<int64_t>> values = im.constantInts(n, 1 + i, names[i]);
      if (failed(values))
        return failure();
      *slots[i] = *values;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return im.failNode(n, ImportFailure::Invalid, "starts, ends, axes and steps differ in length");
  for (int64_t &axis : axes) {
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return im.failNode(n, ImportFailure::Invalid, "axis out of range");
  }
  if (llvm::is_contained(steps, 0))
    return im.failNode(n, ImportFailure::Invalid, "steps must not be 0");
  return one(sliceOf(im, n.loc, n.input(0), starts, ends, axes, steps));
}

Results importSplit(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  int64_t axis = n.getInt("axis", 0);
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis >= type.getRank())
    return im.failNode(n, ImportFailure::Invalid, "axis out of range");
  SmallVector<int64_t> sizes;
  if (n.opset < 13) {
    sizes = n.getInts("split").value_or(SmallVector<int64_t>{});
  } else if (n.input(1)) {
    FailureOr<SmallVector<int64_t>> values = im.constantInts(n, 1, "split");
    if (failed(values))
      return failure();
    sizes = *values;
  }
  int64_t outputs = n.proto.output_size(), dim = type.getDimSize(axis);
  if (outputs == 0)
    return im.failNode(n, ImportFailure::Invalid, "no outputs");
  if (sizes.empty()) {
    if (dim % outputs != 0)
      return im.failNode(n, ImportFailure::Invalid, "dimension does not split evenly");
    sizes.assign(outputs, dim / outputs);
  }
  // Each size at least 0 and their sum the dimension, checked as it grows: the sum of a model's
  // sizes may overflow.
  int64_t total = 0;
  bool valid = static_cast<int64_t>(sizes.size()) == outputs;
  for (int64_t size : sizes) {
    valid = valid && size >= 0 && size <= dim - total;
    total += valid ? size : 0;
  }
  if (!valid || total != dim)
    return im.failNode(n, ImportFailure::Invalid,
                       "split sizes must be >= 0, one per output (" + std::to_string(outputs) +
                           "), and add up to the dimension (" + std::to_string(dim) + "), got [" +
                           llvm::join(llvm::map_range(sizes, [](int64_t s) { return std::to_string(s); }), ", ") +
                           "]");
  SmallVector<Value> results;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    results.push_back(sliceOf(im, n.loc, n.input(0), {offset}, {offset + size}, {axis}, {1}));
    offset += size;
  }
  return results;
}


Results importExpand(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<SmallVector<int64_t>> shape = im.constantInts(n, 1, "shape");
  if (failed(shape))
    return failure();
  SmallVector<int64_t> result;
  if (failed(broadcastShapes({type.getShape(), *shape}, result)))
    return im.failNode(n, ImportFailure::Invalid,
                       "cannot expand " + describeShape(type.getShape()) + " to " +
                           describeShape(*shape));
  return one(ExpandOp::create(im.builder, n.loc,
                              RankedTensorType::get(result, type.getElementType()),
                              n.input(0)));
}

// tile(x, r) along d: reshape to [.., 1, s, ..], expand to [.., r, s, ..],
// reshape to [.., r * s, ..].
Results importTile(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<SmallVector<int64_t>> repeats = im.constantInts(n, 1, "repeats");
  if (failed(repeats))
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return im.failNode(n, ImportFailure::Invalid, "repeats must have one value per dimension");
  SmallVector<int64_t> split, expanded, result;
  for (auto [size, r] : llvm::zip(type.getShape(), *repeats)) {
    int64_t tiled;
    if (r < 0 || llvm::MulOverflow(r, size, tiled))
      return im.failNode(n, ImportFailure::Invalid,
                         "repeats must be >= 0 and keep sizes in range, got [" +
                             llvm::join(llvm::map_range(*repeats, [](int64_t r) {
                                          return std::to_string(r);
                                        }),
                                        ", ") +
                             "]");
    split.append({1, size});
    expanded.append({r, size});
    result.push_back(tiled);
  }
  Type element = type.getElementType();
  Value v = ReshapeOp::create(im.builder, n.loc, RankedTensorType::get(split, element),
                              n.input(0));
  v = ExpandOp::create(im.builder, n.loc, RankedTensorType::get(expanded, element), v);
  return one(ReshapeOp::create(im.builder, n.loc, RankedTensorType::get(result, element), v));
}

Results importTrilu(Importer &im, Node &n) {
  int64_t k = 0;
  if (n.input(1)) {
    FailureOr<SmallVector<int64_t>> values = im.constantInts(n, 1, "k");
    if (failed(values) || values->size() != 1)
      return failed(values) ? Results(failure())
                            : im.failNode(n, ImportFailure::Invalid, "k must be a scalar");
    k = values->front();
  }
  return one(im.create<TriluOp>(n.loc, n.input(0), n.getInt("upper", 1) != 0, k));
}

// Shapes are static, so Shape and Size are constants.
Results importShape(Importer &im, Node &n) {
  ArrayRef<int64_t> shape = typeOf(n.input(0)).getShape();
  int64_t rank = shape.size();
  int64_t start = n.getInt("start", 0), end = n.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return one(im.i64Constant(n.loc, shape.slice(start, end - start)));
}

Results importSize(Importer &im, Node &n) {
  return one(im.i64Constant(n.loc, {typeOf(n.input(0)).getNumElements()}, /*scalar=*/true));
}

Results importConstantOfShape(Importer &im, Node &n) {
  FailureOr<SmallVector<int64_t>> shape = im.constantInts(n, 0, "input");
  if (failed(shape))
    return failure();
  DenseElementsAttr value;
  if (const auto *attr = n.attr("value")) {
    FailureOr<DenseElementsAttr> v = im.tensorAttr(attr->t(), n.loc);
    if (failed(v))
      return failure();
    value = *v;
    n.setUnsignedOutput(0, Importer::isUnsignedType(attr->t().data_type()));
  } else {
    value = DenseElementsAttr::get(RankedTensorType::get({1}, im.builder.getF32Type()),
                                   im.builder.getF32FloatAttr(0));
  }
  auto type = RankedTensorType::get(*shape, value.getElementType());
  return one(im.constant(n.loc, DenseElementsAttr::get(type, value.getSplatValue<Attribute>())));
}

Results importConstant(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  if (const auto *a = n.attr("value")) {
    FailureOr<DenseElementsAttr> v = im.tensorAttr(a->t(), n.loc);
    if (failed(v))
      return failure();
    n.setUnsignedOutput(0, Importer::isUnsignedType(a->t().data_type()));
    return one(im.constant(n.loc, *v));
  }
  if (const auto *a = n.attr("value_float"))
    return one(im.constant(n.loc, DenseElementsAttr::get(
                                      RankedTensorType::get({}, b.getF32Type()), a->f())));
  if (const auto *a = n.attr("value_floats"))
    return one(im.constant(
        n.loc, DenseElementsAttr::get(
                   RankedTensorType::get({a->floats_size()}, b.getF32Type()),
                   ArrayRef<float>(a->floats().data(), a->floats_size()))));
  if (const auto *a = n.attr("value_int"))
    return one(im.i64Constant(n.loc, {a->i()}, /*scalar=*/true));
  if (const auto *a = n.attr("value_ints"))
    return one(im.i64Constant(n.loc, SmallVector<int64_t>(a->ints().begin(), a->ints().end())));
  return im.failNode(n, ImportFailure::Unsupported,
                     "only tensor, float and int values are supported (not sparse or "
                     "string constants)");
}

Results importRange(Importer &im, Node &n) {
  FailureOr<double> start = im.constantScalar(n, 0, "start");
  FailureOr<double> limit = im.constantScalar(n, 1, "limit");
  FailureOr<double> delta = im.constantScalar(n, 2, "delta");
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return im.failNode(n, ImportFailure::Invalid, "delta must not be 0");
  int64_t count = std::max<int64_t>(0, std::ceil((*limit - *start) / *delta));
  Type element = typeOf(n.input(0)).getElementType();
  auto type = RankedTensorType::get({count}, element);
  SmallVector<Attribute> values;
  for (int64_t i = 0; i < count; ++i) {
    double v = *start + i * *delta;
    values.push_back(im.numberAttr(element, v));
  }
  return one(im.constant(n.loc, DenseElementsAttr::get(type, values)));
}

const llvm::StringMap<Handler> &handlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    t["Abs"] = unaryOp<AbsOp>();
    t["Neg"] = unaryOp<NegOp>();
    t["Sign"] = unaryOp<SignOp>();
    t["Exp"] = unaryOp<ExpOp>();
    t["Log"] = unaryOp<LogOp>();
    t["Sqrt"] = unaryOp<SqrtOp>();
    t["Reciprocal"] = unaryOp<ReciprocalOp>();
    t["Tanh"] = unaryOp<TanhOp>();
    t["Sigmoid"] = unaryOp<SigmoidOp>();
    t["Relu"] = unaryOp<ReluOp>();
    t["Erf"] = unaryOp<ErfOp>();
    t["Floor"] = unaryOp<FloorOp>();
    t["Ceil"] = unaryOp<CeilOp>();
    t["Round"] = unaryOp<RoundOp>();
    t["Sin"] = unaryOp<SinOp>();
    t["Cos"] = unaryOp<CosOp>();
    t["Tan"] = unaryOp<TanOp>();
    t["Asin"] = unaryOp<AsinOp>();
    t["Acos"] = unaryOp<AcosOp>();
    t["Atan"] = unaryOp<AtanOp>();
    t["Sinh"] = unaryOp<SinhOp>();
    t["Cosh"] = unaryOp<CoshOp>();
    t["Asinh"] = unaryOp<AsinhOp>();
    t["Acosh"] = unaryOp<AcoshOp>();
    t["Atanh"] = unaryOp<AtanhOp>();
    t["Softplus"] = unaryOp<SoftplusOp>();
    t["Softsign"] = unaryOp<SoftsignOp>();
    t["HardSwish"] = unaryOp<HardSwishOp>();
    t["Not"] = unaryOp<NotOp>();
    t["LeakyRelu"] = paramOp<LeakyReluOp>({{"alpha", 0.01f}});
    t["Elu"] = paramOp<EluOp>({{"alpha", 1.0f}});
    t["Celu"] = paramOp<CeluOp>({{"alpha", 1.0f}});
    t["Selu"] = paramOp<SeluOp>({{"alpha", 1.67326319217681884765625f},
                                 {"gamma", 1.05070102214813232421875f}});
    t["HardSigmoid"] = paramOp<HardSigmoidOp>({{"alpha", 0.2f}, {"beta", 0.5f}});
    t["ThresholdedRelu"] = paramOp<ThresholdedReluOp>({{"alpha", 1.0f}});
    t["IsNaN"] = importIsNaN;
    t["IsInf"] = importIsInf;
    t["Identity"] = importIdentity;
    addLossHandlers(t);
    t["Dropout"] = importDropout;
    t["Cast"] = importCast;
    t["CastLike"] = importCastLike;
    t["Clip"] = importClip;
    t["Add"] = binaryOp<AddOp>();
    t["Sub"] = binaryOp<SubOp>();
    t["Mul"] = binaryOp<MulOp>();
    t["Div"] = binaryOp<DivOp>();
    t["Pow"] = importPow;
    t["PRelu"] = binaryOp<PReluOp>();
    t["And"] = binaryOp<AndOp>();
    t["Or"] = binaryOp<OrOp>();
    t["Xor"] = binaryOp<XorOp>();
    t["Equal"] = binaryOp<EqualOp>();
    t["Less"] = binaryOp<LessOp>();
    t["LessOrEqual"] = binaryOp<LessEqualOp>();
    t["Greater"] = binaryOp<GreaterOp>();
    t["GreaterOrEqual"] = binaryOp<GreaterEqualOp>();
    t["Mod"] = importMod;
    t["Max"] = variadicOp<MaxOp>();
    t["Min"] = variadicOp<MinOp>();
    t["Sum"] = variadicOp<AddOp>();
    t["Mean"] = variadicOp<AddOp>(/*mean=*/true);
    t["Where"] = importWhere;
    t["MatMul"] = importMatMul;
    t["Gemm"] = importGemm;
    t["Einsum"] = importEinsum;
    t["Conv"] = importConv;
    addConvTransposeHandlers(t);
    addDataDependentHandlers(t);
    t["MaxPool"] = importPool<MaxPoolOp>;
    t["AveragePool"] = importPool<AveragePoolOp>;
    t["GlobalMaxPool"] = importGlobalPool<ReduceMaxOp>;
    t["GlobalAveragePool"] = importGlobalPool<ReduceMeanOp>;
    t["BatchNormalization"] = importBatchNorm;
    t["LayerNormalization"] = importLayerNorm;
    t["ReduceSum"] = reduceOp<ReduceSumOp>();
    t["ReduceMean"] = reduceOp<ReduceMeanOp>();
    t["ReduceMax"] = reduceOp<ReduceMaxOp>();
    t["ReduceMin"] = reduceOp<ReduceMinOp>();
    t["ReduceProd"] = reduceOp<ReduceProdOp>();
    t["ReduceL1"] = reduceOp<ReduceL1Op>();
    t["ReduceL2"] = reduceOp<ReduceL2Op>();
    t["ReduceSumSquare"] = reduceOp<ReduceSumSquareOp>();
    t["ReduceLogSum"] = reduceOp<ReduceLogSumOp>();
    t["ReduceLogSumExp"] = reduceOp<ReduceLogSumExpOp>();
    t["CumSum"] = importCumSum;
    t["ArgMax"] = importArgReduce<ArgMaxOp>;
    t["ArgMin"] = importArgReduce<ArgMinOp>;
    t["TopK"] = importTopK;
    t["Softmax"] = importSoftmax<SoftmaxOp>;
    t["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
    t["Reshape"] = importReshape;
    t["Flatten"] = importFlatten;
    t["Squeeze"] = importSqueeze;
    t["Unsqueeze"] = importUnsqueeze;
    t["Transpose"] = importTranspose;
    t["Concat"] = importConcat;
    t["Slice"] = importSlice;
    t["Split"] = importSplit;
    addIndexingHandlers(t);
    addCompositeHandlers(t);
    addResamplingHandlers(t);
    addRecurrentHandlers(t);
    addSignalHandlers(t);
    addControlFlowHandlers(t);
    t["Expand"] = importExpand;
    t["Tile"] = importTile;
    t["Trilu"] = importTrilu;
    t["Shape"] = importShape;
    t["Size"] = importSize;
    t["ConstantOfShape"] = importConstantOfShape;
    t["Constant"] = importConstant;
    t["Range"] = importRange;
    addIntegerHandlers(t);
    return t;
  }();
  return table;
}

/// The ops of the domain 'ai.onnx.preview.training' that Kiln imports.
const llvm::StringMap<Handler> &trainingDomainHandlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    addTrainingDomainHandlers(t);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

/// Evaluates the ops just created after `previous` whose operands are all
/// constants, so that constant subgraphs (typically shape arithmetic) are
/// constants by the time a later node needs one at compile time.
void Importer::foldNewOps(Operation *previous, SmallVectorImpl<Value> &results) {
  Block *block = builder.getInsertionBlock();
  Block::iterator begin = previous ? std::next(previous->getIterator()) : block->begin();
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(begin, block->end()))) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(&op);
    FailureOr<SmallVector<Value>> folded =
        foldToConstants(builder, &op, kDefaultFoldMaxElements);
    if (failed(folded))
      continue;
    for (auto [from, to] : llvm::zip(op.getResults(), *folded))
      for (Value &result : results)
        if (result == from)
          result = to;
    op.replaceAllUsesWith(*folded);
    op.erase();
  }
}

LogicalResult Importer::importNode(const onnx::NodeProto &proto, int index) {
  Location loc = nodeLoc(proto, index);
  bool training = proto.domain() == "ai.onnx.preview.training";
  if (!proto.domain().empty() && proto.domain() != "ai.onnx" && !training)
    return fail(loc, ImportFailure::Unsupported,
                proto.op_type() + ": ops of domain '" + proto.domain() +
                    "' are not supported");
  const auto &table = training ? trainingDomainHandlers() : handlers();
  auto it = table.find(proto.op_type());
  if (it == table.end())
    return fail(loc, ImportFailure::Unsupported,
                "op type '" + proto.op_type() + "' is not supported by Kiln");
  Node node{proto, loc, {}, opset};
  for (const std::string &name : proto.input()) {
    if (name.empty()) {
      node.inputs.push_back(Value());
      continue;
    }
    auto value = values.find(name);
    if (value == values.end())
      return fail(loc, ImportFailure::Invalid,
                  proto.op_type() + ": input '" + name + "' is not produced by any "
                  "earlier node, initializer or graph input");
    node.inputs.push_back(value->second);
  }
  // Drop trailing absent optionals so handlers can test input(i) simply.
  while (!node.inputs.empty() && !node.inputs.back())
    node.inputs.pop_back();
  for (size_t i = 0; i < node.inputs.size(); ++i)
    node.unsignedInputs.push_back(unsignedNames.contains(proto.input(i)));
  const auto &rules = unsignedRules();
  auto rule = rules.find(proto.op_type());
  if (node.anyUnsigned() && (training || rule == rules.end()))
    return fail(loc, ImportFailure::Unsupported,
                proto.op_type() + ": unsigned integer operands (ONNX uint8 to uint64) are not "
                                  "supported by this op");
  if (node.anyUnsigned() && StringRef(proto.op_type()).starts_with("Scatter") &&
      (node.getString("reduction", "none") == "max" ||
       node.getString("reduction", "none") == "min"))
    return fail(loc, ImportFailure::Unsupported,
                proto.op_type() + ": reduction '" + node.getString("reduction", "none") +
                    "' of unsigned integers is not supported");

  // Ops verify their operands through type inference; failures surface as
  // diagnostics at the node, caught here to classify them as invalid.
  Block *block = builder.getInsertionBlock();
  Operation *previous = block->empty() ? nullptr : &block->back();
  FailureOr<SmallVector<Value>> results = it->second(*this, node);
  if (failed(results)) {
    if (failure == ImportFailure::None)
      failure = ImportFailure::Invalid;
    return mlir::failure();
  }
  foldNewOps(previous, *results);
  for (auto [i, value] : llvm::enumerate(*results)) {
    auto type = dyn_cast_if_present<RankedTensorType>(value ? value.getType() : Type());
    if (type && failed(checkSize(loc, type.getShape(), type.getElementType(),
                                 proto.op_type() + " output " + Twine(i))))
      return mlir::failure();
  }
  if (results->size() < static_cast<size_t>(proto.output_size())) {
    for (int i = results->size(); i < proto.output_size(); ++i)
      if (!proto.output(i).empty())
        return fail(loc, ImportFailure::Unsupported,
                    proto.op_type() + ": output " + Twine(i) + " ('" + proto.output(i) +
                        "') is not supported");
  }
  for (int i = 0; i < proto.output_size(); ++i) {
    if (proto.output(i).empty())
      continue;
    Value value = (*results)[i];
    values[proto.output(i)] = value;
    // Which results are unsigned: as the handler says, or (Propagate) an
    // integer result of the same type as an unsigned operand.
    bool isUnsigned = false;
    if (static_cast<size_t>(i) < node.unsignedOutputs.size() && node.unsignedOutputs[i]) {
      isUnsigned = *node.unsignedOutputs[i];
    } else if (rule != rules.end() && rule->second == UnsignedRule::Propagate && value) {
      Type element = typeOf(value).getElementType();
      isUnsigned = element.isInteger() && !element.isInteger(1) &&
                   llvm::any_of(llvm::seq(node.inputs.size()), [&](size_t j) {
                     return node.isUnsigned(j) && typeOf(node.inputs[j]).getElementType() == element;
                   });
    }
    if (isUnsigned)
      unsignedNames.insert(proto.output(i));
  }
  return success();
}

const llvm::StringMap<UnsignedRule> &unsignedRules() {
  static const llvm::StringMap<UnsignedRule> rules = [] {
    llvm::StringMap<UnsignedRule> r;
    // Ops that move, select or compare for equality, and wrapping
    // arithmetic: the same bits whatever the sign.
    for (const char *op :
         {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat",
          "Split", "Slice", "Gather", "GatherElements", "GatherND", "ScatterElements",
          "ScatterND", "Scatter", "Expand", "Tile", "Compress", "ReverseSequence",
          "DepthToSpace", "SpaceToDepth", "Pad", "Trilu", "Equal", "Where", "Add", "Sub",
          "Mul", "Sum",
          // Ops whose kiln op takes is_unsigned.
          "Div", "Mod", "Max", "Min", "Clip", "Less", "LessOrEqual", "Greater",
          "GreaterOrEqual", "BitShift", "MaxPool"})
      r[op] = UnsignedRule::Propagate;
    for (const char *op : {"Shape", "Size", "NonZero"})
      r[op] = UnsignedRule::Signed;
    for (const char *op : {"Cast", "CastLike", "Pow", "Constant", "ConstantOfShape",
                           "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                           "MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"})
      r[op] = UnsignedRule::Handler;
    return r;
  }();
  return rules;
}

void markUnsigned(Node &node, Operation *op) {
  if (!node.anyUnsigned())
    return;
  StringAttr name = StringAttr::get(op->getContext(), "is_unsigned");
  if (llvm::is_contained(op->getName().getAttributeNames(), name))
    op->setAttr(name, UnitAttr::get(op->getContext()));
}

namespace {
/// Keeps the first protobuf text-format error instead of logging every one.
struct FirstTextError : google::protobuf::io::ErrorCollector {
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &text) override {
    if (message.empty())
      message = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + text;
  }
  std::string message;
};

/// Whether `bytes` could be protobuf text format (printable ASCII and
/// whitespace); binary models never are.
bool looksLikeText(llvm::StringRef bytes) {
  return !bytes.empty() && llvm::all_of(bytes, [](char c) {
    unsigned char u = static_cast<unsigned char>(c);
    return u == '\n' || u == '\r' || u == '\t' || (u >= 0x20 && u < 0x7f);
  });
}
} // namespace

ImportResult Importer::run(llvm::StringRef bytes) {
  ImportResult result;
  auto finish = [&]() {
    result.failure = failure == ImportFailure::None ? ImportFailure::Invalid : failure;
    result.module = nullptr;
    return std::move(result);
  };

  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream stream(bytes.data(), bytes.size());
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  bool parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  // Protobuf text format makes readable test models; accept it as well.
  std::string textError;
  if ((!parsed || !model.has_graph()) && looksLikeText(bytes)) {
    onnx::ModelProto text;
    FirstTextError collector;
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&collector);
    if (parser.ParseFromString(std::string(bytes), &text) && text.has_graph()) {
      model = std::move(text);
      parsed = true;
    } else {
      textError = collector.message;
    }
  }
  if (!parsed || !model.has_graph()) {
    (void)fail(fileLoc(), ImportFailure::Invalid,
               !textError.empty()
                   ? "not an ONNX model: the file does not parse as ONNX text format: " +
                         textError
               : parsed ? "not an ONNX model: the file has no graph"
                        : "not an ONNX model: the file does not parse as an ONNX "
                          "ModelProto (truncated or not ONNX)");
    return finish();
  }
  for (const auto &import : model.opset_import())
    if (import.domain().empty() || import.domain() == "ai.onnx")
      opset = import.version();
  // Op handlers follow each op's schema versions up to the newest opset the
  // installed ONNX library knows; a newer model may use semantics they lack.
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  if (auto it = ranges.find(""); it != ranges.end() && opset > it->second.second) {
    (void)fail(fileLoc(), ImportFailure::Unsupported,
               "the model imports ONNX opset " + Twine(opset) +
                   "; Kiln supports opsets up to " + Twine(it->second.second));
    return finish();
  }

  // ONNX's checker catches malformed graphs before we build anything; its
  // messages name the node. (ONNX's shape inference is not run: it divides
  // by attributes it has not checked, and the kiln ops' own type inference
  // checks every shape.)
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    // ONNX's messages span lines ("...\n\n==> Context: Bad node spec for
    // node. Name: n OpType: T"); diagnostics are one line.
    std::string message;
    for (llvm::StringRef line : llvm::split(llvm::StringRef(e.what()).trim(), '\n')) {
      line = line.trim();
      if (line.consume_front("==> Context:"))
        line = line.trim();
      if (!line.empty())
        message += (message.empty() ? "" : "; ") + line.str();
    }
    (void)fail(fileLoc(), ImportFailure::Invalid, "invalid ONNX model: " + message);
    return finish();
  }

  const onnx::GraphProto &graph = model.graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  builder.setInsertionPointToEnd(module->getBody());
  std::string modelName = graph.name();

  // Initializers, then real inputs (old IR versions list initializers as
  // inputs too).
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());

  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<std::pair<std::string, std::string>> frozen;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    Location loc = NameLoc::get(StringAttr::get(&context, "input '" + input.name() + "'"),
                                fileLoc());
    if (options.frozenInputs.count(input.name())) {
      frozen.push_back({input.name(), options.frozenInputs.lookup(input.name())});
      continue;
    }
    if (!input.type().has_tensor_type()) {
      (void)fail(loc, ImportFailure::Unsupported,
                 "graph input '" + input.name() + "' is not a tensor (sequences, maps "
                 "and optionals are not supported)");
      return finish();
    }
    const auto &tensorType = input.type().tensor_type();
    FailureOr<Type> element =
        elementType(tensorType.elem_type(), loc, "graph input '" + input.name() + "'");
    if (failed(element))
      return finish();
    SmallVector<int64_t> shape;
    auto given = options.inputShapes.find(input.name());
    if (given != options.inputShapes.end()) {
      shape = given->second;
      if (tensorType.has_shape() &&
          tensorType.shape().dim_size() != static_cast<int>(shape.size())) {
        (void)fail(loc, ImportFailure::Invalid,
                   "--input-shape gives " + Twine(shape.size()) + " dimensions for '" +
                       input.name() + "', the model declares " +
                       Twine(tensorType.shape().dim_size()));
        return finish();
      }
    } else if (!tensorType.has_shape()) {
      (void)fail(loc, ImportFailure::Invalid,
                 "graph input '" + input.name() + "' has no shape; give one with "
                 "--input-shape " + input.name() + "=DIMxDIM...");
      return finish();
    } else {
      for (const auto &dim : tensorType.shape().dim()) {
        if (!dim.has_dim_value() || dim.dim_value() < 0) {
          std::string symbol = dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "unknown";
          (void)fail(loc, ImportFailure::Invalid,
                     "graph input '" + input.name() + "' has the symbolic dimension " +
                         symbol + "; give a static shape with --input-shape " +
                         input.name() + "=DIMxDIM...");
          return finish();
        }
        shape.push_back(dim.dim_value());
      }
    }
    if (failed(checkSize(loc, shape, *element, "graph input '" + input.name() + "'")))
      return finish();
    argTypes.push_back(RankedTensorType::get(shape, *element));
    argNames.push_back(input.name());
    if (isUnsignedType(tensorType.elem_type()))
      unsignedNames.insert(input.name());
  }
  for (const auto &entry : options.frozenInputs) {
    bool known = llvm::any_of(frozen, [&](const auto &f) { return f.first == entry.first(); });
    if (!known) {
      (void)fail(fileLoc(), ImportFailure::Invalid,
                 "--freeze-input names '" + entry.first() + "', which is not a graph input");
      return finish();
    }
  }

  auto func = func::FuncOp::create(builder, fileLoc(), "main",
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (auto [i, name] : llvm::enumerate(argNames)) {
    // A tensor with no elements is known whatever the caller passes: the
    // nodes see it as an (empty) constant and fold or are erased.
    BlockArgument argument = entry->getArgument(i);
    auto type = llvm::cast<RankedTensorType>(argument.getType());
    values[name] = type.getNumElements() == 0 ? emptyConstant(argument.getLoc(), type)
                                              : Value(argument);
    graphInputNames[entry->getArgument(i)] = name;
    func.setArgAttr(i, "kiln.name", builder.getStringAttr(name));
    if (unsignedNames.contains(name))
      func.setArgAttr(i, "kiln.unsigned", builder.getUnitAttr());
  }
  for (const auto &init : graph.initializer()) {
    Location loc = NameLoc::get(StringAttr::get(&context, "initializer '" + init.name() + "'"),
                                fileLoc());
    FailureOr<DenseElementsAttr> value = tensorAttr(init, loc);
    if (failed(value))
      return finish();
    values[init.name()] = constant(loc, *value);
    if (isUnsignedType(init.data_type()))
      unsignedNames.insert(init.name());
  }
  for (const auto &[name, file] : frozen) {
    Location loc = NameLoc::get(StringAttr::get(&context, "input '" + name + "'"), fileLoc());
    std::string data, reason;
    onnx::TensorProto tensor;
    if (!rt::readRegularFile(file, data, reason) ||
        !tensor.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      (void)fail(loc, ImportFailure::Invalid,
                 "--freeze-input " + name + ": cannot read a TensorProto from '" + file + "'" +
                     (reason.empty() ? "" : ": " + reason));
      return finish();
    }
    FailureOr<DenseElementsAttr> value = tensorAttr(tensor, loc);
    if (failed(value))
      return finish();
    values[name] = constant(loc, *value);
    if (isUnsignedType(tensor.data_type()))
      unsignedNames.insert(name);
  }

  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index)))
      return finish();

  SmallVector<Value> results;
  llvm::StringSet<> outputNames;
  for (const auto &output : graph.output()) {
    if (!outputNames.insert(output.name()).second) {
      (void)fail(fileLoc(), ImportFailure::Invalid,
                 "graph output '" + output.name() + "' is listed twice");
      return finish();
    }
    auto it = values.find(output.name());
    if (it == values.end()) {
      (void)fail(fileLoc(), ImportFailure::Invalid,
                 "graph output '" + output.name() + "' is not produced by any node");
      return finish();
    }
    results.push_back(it->second);
  }
  func::ReturnOp::create(builder, fileLoc(), results);
  func.setType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    func.setResultAttr(i, "kiln.name", builder.getStringAttr(output.name()));
    // The declared type says whether an output is unsigned; without one,
    // what the importer tracked does.
    bool declared = output.type().has_tensor_type() && output.type().tensor_type().elem_type();
    if (declared ? isUnsignedType(output.type().tensor_type().elem_type())
                 : unsignedNames.contains(output.name()))
      func.setResultAttr(i, "kiln.unsigned", builder.getUnitAttr());
  }
  if (!modelName.empty())
    (*module)->setAttr("kiln.model_name", builder.getStringAttr(modelName));
  (*module)->setAttr("kiln.opset", builder.getI64IntegerAttr(opset));

  result.module = std::move(module);
  return result;
}

} // namespace onnx_import

ImportResult importOnnx(StringRef bytes, StringRef path, MLIRContext &context,
                        const ImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  return onnx_import::Importer(context, path, options).run(bytes);
}

ImportResult importOnnxFile(StringRef path, MLIRContext &context,
                            const ImportOptions &options) {
  std::string bytes, reason;
  if (!rt::readRegularFile(path.str(), bytes, reason)) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << "cannot read the model: " << reason;
    return {nullptr, ImportFailure::Invalid};
  }
  return importOnnx(bytes, path, context, options);
}

} // namespace kiln
