//===- Importer.h - The ONNX importer's state and node view ---*- C++ -*-===//
//
// Shared by OnnxImporter.cpp and the op families imported in files of their
// own (OnnxLosses.cpp). Not part of the compiler's interface.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_IMPORTER_H
#define KILN_COMPILER_IMPORTER_H

#include "compiler/OnnxImporter.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>
#include <optional>

namespace kiln::onnx_import {

using namespace mlir;

/// An ONNX node being imported: its operands (null where an optional input
/// is absent), attributes and location.
struct Node {
  const onnx::NodeProto &proto;
  Location loc;
  SmallVector<Value> inputs;
  int64_t opset;
  /// Which inputs are ONNX unsigned integers (kiln tensors are signless).
  SmallVector<bool> unsignedInputs = {};
  /// Set by handlers whose outputs' signedness is not their inputs' (Cast,
  /// constants, quantization); others follow UnsignedRule::Propagate.
  SmallVector<std::optional<bool>> unsignedOutputs = {};

  Value input(size_t i) const { return i < inputs.size() ? inputs[i] : Value(); }
  bool isUnsigned(size_t i) const { return i < unsignedInputs.size() && unsignedInputs[i]; }
  bool anyUnsigned() const { return llvm::is_contained(unsignedInputs, true); }
  void setUnsignedOutput(size_t i, bool isUnsigned) {
    if (unsignedOutputs.size() <= i)
      unsignedOutputs.resize(i + 1);
    unsignedOutputs[i] = isUnsigned;
  }
  const onnx::AttributeProto *attr(StringRef name) const {
    for (const auto &a : proto.attribute())
      if (a.name() == name)
        return &a;
    return nullptr;
  }
  int64_t getInt(StringRef name, int64_t dflt) const {
    const auto *a = attr(name);
    return a ? a->i() : dflt;
  }
  float getFloat(StringRef name, float dflt) const {
    const auto *a = attr(name);
    return a ? a->f() : dflt;
  }
  std::string getString(StringRef name, StringRef dflt) const {
    const auto *a = attr(name);
    return a ? a->s() : dflt.str();
  }
  std::optional<SmallVector<int64_t>> getInts(StringRef name) const {
    const auto *a = attr(name);
    if (!a)
      return std::nullopt;
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  }
};

inline RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A kiln.reshape of `x` to `shape`, its element type kept.
inline Value reshapeTo(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, typeOf(x).getElementType()), x);
}

inline std::string describeShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

// The state of one import. Op handlers below use its builder and helpers.
struct Importer {
  Importer(MLIRContext &context, StringRef path, const ImportOptions &options)
      : context(context), builder(&context), path(path.str()), options(options) {}

  ImportResult run(llvm::StringRef bytes);

  using Results = FailureOr<SmallVector<Value>>;
  using Handler = std::function<Results(Importer &, Node &)>;

  // Diagnostics.
  LogicalResult fail(Location loc, ImportFailure kind, const Twine &message) {
    if (failure == ImportFailure::None)
      failure = kind;
    emitError(loc) << message;
    return mlir::failure();
  }
  Results failNode(Node &node, ImportFailure kind, const Twine &message) {
    (void)fail(node.loc, kind, node.proto.op_type() + ": " + message);
    return mlir::failure();
  }
  Location fileLoc() { return FileLineColLoc::get(&context, path, 0, 0); }
  /// Fails, naming `what`, when a tensor of `shape` would have more bytes
  /// than Kiln addresses (its byte offsets and sizes are int64 arithmetic).
  LogicalResult checkSize(Location loc, ArrayRef<int64_t> shape, Type element,
                          const Twine &what);
  static constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;
  /// Fails, naming `what`, when the importer would build a constant of more
  /// than kMaxBuiltElements elements (a window, an identity matrix, a DFT
  /// matrix, an index ramp): those are computed at compile time, and a
  /// model may declare sizes that would exhaust memory doing so.
  LogicalResult checkBuiltConstant(Node &node, int64_t elements, const Twine &what) {
    if (elements >= 0 && elements <= kMaxBuiltElements)
      return success();
    (void)failNode(node, ImportFailure::Unsupported,
                   what + " would be a constant of more than " + Twine(kMaxBuiltElements) +
                       " elements, too large to build at compile time");
    return mlir::failure();
  }
  static constexpr int64_t kMaxBuiltElements = int64_t(1) << 24;
  Location nodeLoc(const onnx::NodeProto &node, int index);

  // Types and constants. ONNX's unsigned integers become signless kiln
  // integers of their width; which values are unsigned is tracked by name.
  FailureOr<Type> elementType(int32_t onnxType, Location loc, const Twine &what);
  static bool isUnsignedType(int32_t onnxType);
  FailureOr<DenseElementsAttr> tensorAttr(const onnx::TensorProto &tensor, Location loc);
  /// Creates an OpT whose result types its type inference derives, like
  /// OpT::create, except that invalid operands or attributes make it return
  /// failure (the inference or the verifier has reported why at `loc`) where
  /// OpT::create would abort: the importer builds ops from untrusted models,
  /// and what it builds on an op assumes the op is valid.
  template <typename OpT, typename... Args>
  FailureOr<OpT> create(Location loc, Args &&...args) {
    OperationState state(loc, OpT::getOperationName());
    OpT::build(builder, state, TypeRange(), std::forward<Args>(args)...);
    SmallVector<Type, 1> types;
    if (failed(OpT::inferReturnTypes(&context, loc, state.operands,
                                     state.attributes.getDictionary(&context),
                                     state.getRawProperties(), state.regions, types)))
      return mlir::failure();
    state.addTypes(types);
    Operation *op = builder.create(state);
    if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
      op->erase();
      return mlir::failure();
    }
    return cast<OpT>(op);
  }

  Value constant(Location loc, DenseElementsAttr value) {
    return ConstantOp::create(builder, loc, value);
  }
  /// `value` as an element of type `element`: a float, or an integer
  /// rounded toward zero (for constants the importer computes in double).
  Attribute numberAttr(Type element, double value) {
    if (llvm::isa<FloatType>(element))
      return builder.getFloatAttr(element, value);
    return builder.getIntegerAttr(element, static_cast<int64_t>(value));
  }
  /// The constant of `type`, which has no elements.
  Value emptyConstant(Location loc, RankedTensorType type) {
    return constant(loc, DenseElementsAttr::get(type, ArrayRef<Attribute>{}));
  }
  /// A scalar constant of `element`; integers take `value` rounded toward
  /// zero and saturated to int64 (an integer from the model goes through
  /// intSplat, which keeps every int64 exactly).
  Value splat(Location loc, Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    if (llvm::isa<FloatType>(element))
      return constant(loc, DenseElementsAttr::get(type, builder.getFloatAttr(element, value)));
    constexpr double kTwo63 = 9223372036854775808.0;
    int64_t integer = std::isnan(value)     ? 0
                      : value >= kTwo63     ? INT64_MAX
                      : value < -kTwo63     ? INT64_MIN
                                            : static_cast<int64_t>(value);
    return intSplat(loc, element, integer);
  }
  /// A scalar constant of the integer type `element` with value `value`
  /// (truncated to its width).
  Value intSplat(Location loc, Type element, int64_t value) {
    return constant(loc, DenseElementsAttr::get(RankedTensorType::get({}, element),
                                                builder.getIntegerAttr(element, value)));
  }
  Value i64Constant(Location loc, ArrayRef<int64_t> values, bool scalar = false) {
    auto type = RankedTensorType::get(
        scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{static_cast<int64_t>(values.size())},
        builder.getI64Type());
    return constant(loc, DenseElementsAttr::get(type, values));
  }

  /// The value of operand `index`, which must be a constant; otherwise fails
  /// naming `what` (and, for a graph input, the --freeze-input that fixes it).
  FailureOr<DenseElementsAttr> constantOperand(Node &node, size_t index, StringRef what);
  /// The names of the graph inputs `value` is computed from, sorted.
  SmallVector<std::string> graphInputsBehind(Value value);
  /// The integer values of operand `index`, which must be a constant.
  FailureOr<SmallVector<int64_t>> constantInts(Node &node, size_t index, StringRef what);
  /// The value of operand `index`, which must be a one-element integer
  /// constant.
  FailureOr<int64_t> constantInt(Node &node, size_t index, StringRef what) {
    FailureOr<SmallVector<int64_t>> values = constantInts(node, index, what);
    if (failed(values))
      return mlir::failure();
    if (values->size() != 1) {
      (void)failNode(node, ImportFailure::Invalid, "operand '" + what + "' must be a scalar");
      return mlir::failure();
    }
    return values->front();
  }
  /// The float value of scalar operand `index`, which must be a constant.
  FailureOr<double> constantScalar(Node &node, size_t index, StringRef what);

  // Graph structure.
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  void foldNewOps(Operation *previous, SmallVectorImpl<Value> &results);

  MLIRContext &context;
  OpBuilder builder;
  std::string path;
  const ImportOptions &options;
  ImportFailure failure = ImportFailure::None;
  int64_t opset = 1;
  llvm::StringMap<Value> values;
  /// The names of the values that are ONNX unsigned integers.
  llvm::StringSet<> unsignedNames;
  llvm::DenseMap<Value, std::string> graphInputNames;
};

/// How an op treats unsigned integer operands (ONNX uint8..uint64).
enum class UnsignedRule {
  /// Integer results of an operand's type are unsigned when that operand is.
  Propagate,
  /// Results are never unsigned (Shape, Size).
  Signed,
  /// The handler reads the operands' signedness and sets the results'.
  Handler,
};
/// The rule of every op that accepts unsigned operands; any other op given
/// one is refused, naming it, rather than computing with signed semantics.
const llvm::StringMap<UnsignedRule> &unsignedRules();

/// Sets `is_unsigned` on `op` when its kiln op has that attribute and the
/// node's operands are unsigned.
void markUnsigned(Node &node, Operation *op);

using Results = Importer::Results;
using Handler = Importer::Handler;

inline Results one(Value v) { return SmallVector<Value>{v}; }
/// The result of an op that Importer::create may have refused.
template <typename OpT>
Results one(FailureOr<OpT> op) {
  if (failed(op))
    return mlir::failure();
  return one(op->getResult());
}

/// Adds the handlers of ONNX's loss functions (SoftmaxCrossEntropyLoss,
/// NegativeLogLikelihoodLoss) to `table`.
void addLossHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of ONNX ops written as compositions of other kiln ops
/// (DepthToSpace, SpaceToDepth, EyeLike, windows, Hardmax, OneHot, Shrink,
/// InstanceNormalization, MeanVarianceNormalization, LRN, Det) to `table`.
void addCompositeHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of Pad, Resize, Upsample and GridSample to `table`.
void addResamplingHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of RNN, GRU and LSTM to `table`.
void addRecurrentHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of the domain 'ai.onnx.preview.training' (Adagrad,
/// Adam, Momentum) to `table`.
void addTrainingDomainHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of If, Loop and Scan to `table`.
void addControlFlowHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of DFT, STFT and MelWeightMatrix to `table`.
void addSignalHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of the quantization ops (QuantizeLinear,
/// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger,
/// QLinearMatMul, QLinearConv) and BitShift to `table`.
void addIntegerHandlers(llvm::StringMap<Handler> &table);

/// Adds the handlers of NonZero and Unique, evaluated on constants, to
/// `table`.
void addDataDependentHandlers(llvm::StringMap<Handler> &table);

/// Adds the handler of ConvTranspose to `table`.
void addConvTransposeHandlers(llvm::StringMap<Handler> &table);

/// Resolves ONNX's auto_pad for a window op over `kernel.size()` spatial
/// dimensions into explicit pads (all begins, then all ends).
FailureOr<SmallVector<int64_t>> windowPads(Importer &im, Node &n, ArrayRef<int64_t> input,
                                           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                           ArrayRef<int64_t> dilations);

/// Conv of 5-D inputs: a sum of 2-D convolutions, one per filter depth.
Results importConv3D(Importer &im, Node &n);
/// The 3-D convolution of `x` [N, C, D, H, W] by `filter` [Cout, C/group,
/// kd, kh, kw] (and `bias`, if given) that importConv3D builds, for node `n`;
/// `pads` are the three begins, then the three ends.
Results buildConv3D(Importer &im, Node &n, Value x, Value filter, Value bias,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                    ArrayRef<int64_t> dilations, int64_t group);

/// MaxPool's Indices output for the 2-D max pooling `pooled` of `x` (f32 or
/// wider) by the node's window: int64 positions in the flattened input.
FailureOr<Value> maxPoolIndices(Importer &im, Node &n, Value x, Value pooled,
                                ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations);

/// MaxPool (`max`) or AveragePool of 5-D inputs, as two 2-D poolings: over
/// height and width, then over depth.
Results importPool3D(Importer &im, Node &n, bool max);

/// Normalizes possibly negative `axes` for `rank`, sorted and unique; fails
/// if one is out of range.
FailureOr<SmallVector<int64_t>> normalizeAxes(ArrayRef<int64_t> axes, int64_t rank);

/// Adds the handlers of ONNX's ops that read or write by index (Gather,
/// GatherElements, GatherND, ScatterElements, ScatterND, Scatter) to `table`.
void addIndexingHandlers(llvm::StringMap<Handler> &table);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORTER_H
