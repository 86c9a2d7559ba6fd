//===- BlockedLayout.cpp - Convolutions on channel-blocked images ---------===//
//
// kiln-blocked-layout: convolutions by constant filters (and 3x3s by
// computed ones that Winograd speeds up) become
// kiln.blocked_conv, whose images are N x C/B x H x W x B in blocks of B
// channels (the pass's `block`: 16 for AVX-512, 8 for AVX2), and the
// elementwise ops between them follow, so that a chain of convolutions
// passes its images on in that layout. The walk goes in program order and
// keeps, for each NCHW value, its blocked form where one exists: a
// converted op's result is the blocked value, and its old users read an
// NCHW view made from it (a transpose and a reshape), which later
// converted ops see through and which dies when none is left. Reductions
// over rows and columns follow the blocked images too. A last walk folds
// each residual sum into the convolution that computes one of its operands.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNBLOCKEDLAYOUTPASS
#include "passes/Passes.h.inc"

namespace {

/// The blocks of channels that images are split into.
struct ChannelBlocks {
  int64_t size;

  /// `channels` rounded up to whole blocks; the last one's lanes past them
  /// hold zeros.
  int64_t padded(int64_t channels) const { return llvm::alignTo(channels, size); }

  /// Whether `channels` are worth blocks: whole ones, or a last one padded
  /// by at most half again the channels' work (24 in 32, 40 in 48; not an
  /// RGB image's 3 in 16).
  bool worthBlocks(int64_t channels) const {
    return channels % size == 0 || (channels >= size && 2 * padded(channels) <= 3 * channels);
  }

  /// Whether `type` is a static f32 NCHW image whose channels fill blocks.
  bool isBlockableImage(Type type) const {
    auto tensor = dyn_cast<RankedTensorType>(type);
    return tensor && tensor.hasStaticShape() && tensor.getRank() == 4 &&
           tensor.getElementType().isF32() && worthBlocks(tensor.getDimSize(1));
  }

  /// Whether the blocked form of the NCHW image `type` has padding lanes.
  bool isPadded(RankedTensorType type) const { return type.getDimSize(1) % size != 0; }

  /// The blocked form of the NCHW image type `type`.
  RankedTensorType blockedType(RankedTensorType type) const {
    ArrayRef<int64_t> s = type.getShape();
    return type.clone({s[0], channelBlocks(s[1], size), s[2], s[3], size});
  }
};

/// Whether `conv` is one Kiln's AVX2 kernels run well: one group, a 4-D
/// filter over at least 16 input channels, stride 1 and no dilation.
bool isDenseUnitStride(ConvOp conv) {
  constexpr int64_t kMinChannels = 16;
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  return conv.getGroup() == 1 && filter.size() == 4 && filter[1] >= kMinChannels &&
         llvm::all_of(conv.getStrides(), [](int64_t stride) { return stride == 1; }) &&
         llvm::all_of(conv.getDilations(), [](int64_t dilation) { return dilation == 1; });
}

/// Whether `conv`'s window is 3x3, the one the Winograd kernel takes.
bool has3x3Window(ConvOp conv) {
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  return filter.size() == 4 && filter[2] == 3 && filter[3] == 3;
}

/// Whether `conv`, by filters that are not constant (a train step's
/// weights, or their transpose for the input's gradient), runs faster
/// blocked, through the runtime's Winograd kernel for AVX2: a 3x3 window
/// at stride 1, undilated, of one group, with at least 16 input channels
/// and 16 output tiles of 4x4 whose outputs fill at least half their
/// positions, in blocks of 8, or in blocks of 16 (AVX-512) where channels
/// and filters fill them (the runtime's own condition, winogradOnAvx2 in
/// runtime/kernels/BlockedConvolution.c: else oneDNN runs it, its direct
/// kernel losing to the NCHW kernels once the reorders are counted, and
/// its Winograd to the reorder of its weights on every call). Such filters
/// are transformed on every call, so the tiles must pay for it. Alone with
/// its reorders, against im2col and sgemm, on two Zen 1 cores: 512->512 at
/// 4x4, 8 images (8 tiles), 10.6 ms against 8.2; 16 images (16 tiles),
/// 12.9 against 16.3; 256->256 at 7x7 (4 tiles an image), 4 images 4.5-5.1
/// against 3.9-5.2, 8 images 4.9 against 7.8. On Zen 4, whose AVX-512
/// runs on the same 256-bit pipes as AVX2, in blocks of 16 the ResNet-18
/// step of docs/benchmarks.md took 1-7.5 % less in three alternated rounds
/// (about 5 %); on CPUs with 512-bit FMA units the AVX2 kernel runs at
/// half their peak (unmeasured there). In blocks of 16 it takes at least
/// kMinWideTiles tiles: each call streams the 36 transformed filters, 9.4
/// MB for 256->256, and ResNet-18's 256->256 at 7x7, 8 images (32 tiles)
/// took 2.5-2.7 ms a call against 2.3-2.6 by im2col and sgemm on Zen 4,
/// whose step lost 1.5-2 ms to them and their reorders.
bool winogradPaysForComputedFilters(ConvOp conv, ChannelBlocks blocks) {
  constexpr int64_t kMinTiles = 16, kMinWideTiles = 64, kTile = 4;
  auto output = cast<RankedTensorType>(conv.getType());
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  bool fitsBlocks = blocks.size == kNarrowChannelBlock ||
                    (blocks.size == kWideChannelBlock && filter.size() == 4 &&
                     filter[0] % kWideChannelBlock == 0 && filter[1] % kWideChannelBlock == 0);
  if (!fitsBlocks || !isDenseUnitStride(conv) || !has3x3Window(conv) || !output.hasStaticShape() ||
      output.getRank() != 4)
    return false;
  ArrayRef<int64_t> out = output.getShape();
  int64_t tilesPerImage = llvm::divideCeil(out[2], kTile) * llvm::divideCeil(out[3], kTile);
  int64_t minTiles = blocks.size == kWideChannelBlock ? kMinWideTiles : kMinTiles;
  return out[0] * tilesPerImage >= minTiles && 2 * out[2] * out[3] >= kTile * kTile * tilesPerImage;
}

/// Whether `conv` can run on blocked images: constant filters (or computed
/// ones that Winograd pays for), channels that fill blocks, one group or
/// depthwise.
bool isBlockable(ConvOp conv, ChannelBlocks blocks) {
  if (!blocks.isBlockableImage(conv.getInput().getType()) ||
      !blocks.isBlockableImage(conv.getType()) ||
      !(conv.getFilter().getDefiningOp<ConstantOp>() ||
        winogradPaysForComputedFilters(conv, blocks)))
    return false;
  int64_t channels = conv.getInput().getType().getDimSize(1);
  int64_t filters = conv.getType().getDimSize(1);
  int64_t group = conv.getGroup();
  return group == 1 || (group == channels && filters == channels);
}

/// Whether `conv` can read its NCHW image as it is and give its result in
/// blocks: an image too narrow for blocks (an RGB stem), constant filters,
/// one group, and output channels that fill blocks.
bool isBlockableFromPlain(ConvOp conv, ChannelBlocks blocks) {
  auto input = dyn_cast<RankedTensorType>(conv.getInput().getType());
  return input && input.hasStaticShape() && input.getRank() == 4 &&
         input.getElementType().isF32() && input.getDimSize(1) < blocks.size &&
         blocks.isBlockableImage(conv.getType()) && conv.getGroup() == 1 &&
         conv.getFilter().getDefiningOp<ConstantOp>();
}

/// The value of a splat f32 constant, if `value` is one.
std::optional<float> splatValue(Value value) {
  DenseElementsAttr elements;
  if (!matchPattern(value, m_Constant(&elements)) || !elements.isSplat() ||
      !elements.getElementType().isF32())
    return std::nullopt;
  return elements.getSplatValue<float>();
}

/// The reorders between NCHW images and their blocked forms, each made once.
class Reorders {
public:
  Reorders(OpBuilder &builder, ChannelBlocks blocks) : b(builder), blocks(blocks) {}

  /// The blocks images are split into.
  ChannelBlocks getBlocks() const { return blocks; }

  /// The blocked form of the NCHW image `image` made by a reorder (or the
  /// one already made), placed right after `image` is defined.
  Value blocked(Value image) {
    if (Value known = blockedOf.lookup(image))
      return known;
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = image.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(image).getOwner());
    auto type = cast<RankedTensorType>(image.getType());
    ArrayRef<int64_t> s = type.getShape();
    Location loc = image.getLoc();
    int64_t channels = blocks.padded(s[1]);
    Value padded = image;
    if (channels != s[1])
      padded = PadOp::create(b, loc, type.clone({s[0], channels, s[2], s[3]}), image, Value(),
                             b.getDenseI64ArrayAttr({0, 0, 0, 0, 0, channels - s[1], 0, 0}),
                             b.getStringAttr("constant"));
    Value split = ReshapeOp::create(
        b, loc, type.clone({s[0], channels / blocks.size, blocks.size, s[2], s[3]}), padded);
    Value result = TransposeOp::create(b, loc, split, ArrayRef<int64_t>{0, 1, 3, 4, 2});
    blockedOf[image] = result;
    return result;
  }

  /// The NCHW view, of `channels` channels, of the blocked image
  /// `blockedImage`, at the builder's insertion point; later conversions
  /// read `blockedImage` for it.
  Value plain(Value blockedImage, int64_t channels, Location loc) {
    auto type = cast<RankedTensorType>(blockedImage.getType());
    ArrayRef<int64_t> s = type.getShape();
    Value channelsFirst =
        TransposeOp::create(b, loc, blockedImage, ArrayRef<int64_t>{0, 1, 4, 2, 3});
    Value result =
        ReshapeOp::create(b, loc, type.clone({s[0], s[1] * s[4], s[2], s[3]}), channelsFirst);
    if (s[1] * s[4] != channels)
      result = SliceOp::create(b, loc, type.clone({s[0], channels, s[2], s[3]}), result,
                               b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                               b.getDenseI64ArrayAttr({1, 1, 1, 1}));
    blockedOf[result] = blockedImage;
    views.insert(result);
    return result;
  }

  /// Whether `value` has a blocked form that costs nothing: it is the view
  /// of one.
  bool isView(Value value) const { return views.contains(value); }

  /// Whether `value` has a blocked form already, a view's or a reorder's.
  bool hasBlocked(Value value) const { return blockedOf.contains(value); }

  /// An operand of an elementwise op whose result is the NCHW image
  /// `resultType`, as an operand of the same op on the blocked image: the
  /// blocked form of an image of the result's shape, of a per-channel
  /// vector (`[N] x C x 1 x 1`, or `C x 1 x 1`), or a value the same in
  /// every channel, reshaped to broadcast against the blocked image (and
  /// then `uniform` is set: it meets the padding lanes too). None for any
  /// other operand.
  Value asBlockedOperand(Value operand, RankedTensorType resultType, bool &uniform) {
    uniform = false;
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type || !type.hasStaticShape() || type.getRank() > 4 ||
        type.getElementType() != resultType.getElementType())
      return {};
    SmallVector<int64_t> shape(4 - type.getRank(), 1);
    llvm::append_range(shape, type.getShape());
    ArrayRef<int64_t> full = resultType.getShape();
    if (ArrayRef<int64_t>(shape) == full)
      return blocked(operand);
    bool perPixelOnce = shape[2] == 1 && shape[3] == 1 && (shape[0] == 1 || shape[0] == full[0]);
    if (!perPixelOnce)
      return {};
    OpBuilder::InsertionGuard guard(b);
    if (Operation *def = operand.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(operand).getOwner());
    Location loc = operand.getLoc();
    if (shape[1] == 1) {
      // The same in every channel: a trailing unit dimension for the lanes.
      uniform = true;
      if (type.getRank() == 0)
        return operand;
      return ReshapeOp::create(b, loc, type.clone({shape[0], 1, 1, 1, 1}), operand);
    }
    if (shape[1] != full[1])
      return {};
    Value image = operand;
    if (type.getRank() != 4)
      image = ReshapeOp::create(b, loc, type.clone(shape), operand);
    return blocked(image);
  }

private:
  OpBuilder &b;
  ChannelBlocks blocks;
  DenseMap<Value, Value> blockedOf;
  DenseSet<Value> views;
};

/// Elementwise ops that keep their meaning on blocked images: every unary
/// one, and the binary arithmetic whose operands broadcast.
bool isElementwise(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  if (op->hasTrait<OpTrait::Elementwise>() && op->getNumOperands() == 1)
    return true;
  return isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(op);
}

/// Whether the elementwise `op` leaves the padding lanes of blocked images
/// zero: zero in, zero out, where `uniform` operands (the same in every
/// channel) meet those lanes with their own value. A convolution reads the
/// lanes, by zero filters: anything but a finite value there would leak
/// into every channel.
bool keepsZeros(Operation *op, ArrayRef<bool> uniform) {
  if (op->getNumOperands() == 1)
    return isa<ReluOp, NegOp, AbsOp, TanhOp, HardSwishOp>(op);
  for (auto [operand, isUniform] : llvm::zip(op->getOperands(), uniform)) {
    if (!isUniform)
      continue;
    std::optional<float> value = splatValue(operand);
    bool keeps = value && (isa<AddOp, SubOp>(op) ? *value == 0.0f
                           : isa<MulOp>(op)      ? std::isfinite(*value)
                           : isa<MaxOp>(op)      ? *value <= 0.0f
                           : isa<MinOp>(op)      ? *value >= 0.0f
                                                 : false);
    if (!keeps)
      return false;
  }
  return !isa<DivOp>(op);
}

/// Whether `op` is a 2-D max or average pool of an NCHW image, which runs on
/// its blocked form alike: its windows move over rows and columns only, and
/// zero padding lanes pool to zero.
bool isBlockablePool(Operation *op, ChannelBlocks blocks) {
  return isa<MaxPoolOp, AveragePoolOp>(op) && blocks.isBlockableImage(op->getOperand(0).getType());
}

/// Whether `op` joins NCHW images along their channels in whole blocks
/// (Inception's branches, DenseNet's features): the blocked images join
/// along their blocks.
bool isBlockableConcat(Operation *op, ChannelBlocks blocks) {
  auto concat = dyn_cast<ConcatOp>(op);
  return concat && concat.getAxis() == 1 && blocks.isBlockableImage(concat.getType()) &&
         llvm::all_of(concat.getInputs(), [&](Value input) {
           auto type = cast<RankedTensorType>(input.getType());
           return blocks.isBlockableImage(type) && !blocks.isPadded(type);
         });
}

/// Whether the NCHW image `image` reaches, directly or through elementwise
/// ops, pools and concatenations, a convolution that can run on blocked
/// images.
bool feedsBlockableConv(Value image, ChannelBlocks blocks) {
  SmallVector<Value> work{image};
  DenseSet<Value> seen{image};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto conv = dyn_cast<ConvOp>(user)) {
        if (use.getOperandNumber() == 0 && isBlockable(conv, blocks))
          return true;
        continue;
      }
      if ((isElementwise(user) || isBlockablePool(user, blocks) ||
           isBlockableConcat(user, blocks)) &&
          blocks.isBlockableImage(user->getResult(0).getType()) &&
          seen.insert(user->getResult(0)).second)
        work.push_back(user->getResult(0));
    }
  }
  return false;
}

/// Whether `conv` is a dense convolution whose window is taller than it is
/// wide (Inception's 7x1). The NCHW kernels run a convolution in bands of
/// output rows, and each band reads its window's height less one rows of
/// the image twice over: a 7x1 128->128 at 35x35, in bands of 5 rows that
/// read 11, took 1.24 ms against 0.98 ms whole on blocked images, reorders
/// included. A wide window (1x7) has no such rows and ran faster in bands.
bool hasTallWindow(ConvOp conv) {
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  return conv.getGroup() == 1 && filter.size() == 4 && filter[2] > filter[3];
}

/// Whether `conv` is a dense convolution with a window larger than 1x1 at a
/// stride (a stage's first 3x3 at stride 2). The NCHW kernels split its
/// output channels between threads, and each tile reorders the whole image,
/// four times the output's area, for oneDNN; on blocked images it is
/// reordered once. A 3x3 256->256 at stride 2 to 14x14 took 1.49-1.68 ms
/// in NCHW against 1.28-1.46 ms blocked, reorders included; 3x3 64->128 to
/// 27x27, 0.60-0.68 against 0.56-0.58 ms. A 1x1 at stride 2 ran faster in
/// NCHW (0.31 against 0.47-0.50 ms, 256->512 to 14x14) and stays there.
bool hasStridedWindow(ConvOp conv) {
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  return conv.getGroup() == 1 && filter.size() == 4 && filter[2] * filter[3] > 1 &&
         llvm::any_of(conv.getStrides(), [](int64_t stride) { return stride > 1; });
}

/// Whether `conv`, alone between NCHW images, runs faster blocked in blocks
/// of 8 channels (AVX2 without AVX-512): a convolution at stride 1, one
/// group, no dilation, of at least 16 input channels that Kiln's Winograd
/// kernel takes (a 3x3) or that has at least kMinLoneMultiplyAdds.
///
/// In NCHW a 3x3 runs a direct kernel on the plain image (Kiln's, through
/// kiln_conv2d_constant_w), far behind the Winograd kernel: alone,
/// reorders included, a 3x3 256->256 at 51x51 took 45.4 ms in NCHW and
/// 14.4 ms blocked; 64->64 at 51x51, 2.84 against 1.02 ms; 256->256 at
/// 7x7, 0.79 against 0.65-0.71 ms.
///
/// In NCHW a 1x1 runs as sgemm over bands of output rows, reading the image
/// in place with rows a plane apart, and larger windows run that direct
/// kernel; on Zen 1 both fall behind oneDNN's blocked primitive wherever
/// there is work enough to pay for the two reorders (NCHW against blocked,
/// reorders included): 1x1 16->96 at 112x112 5.38 against 1.72 ms,
/// 24->144 at 56x56 2.40 against 0.90, 64->256 at 56x56 6.62 against 3.24,
/// 144->24 at 56x56 0.89 against 0.78, 512->1000 at 13x13 4.65 against
/// 4.05, 5x5 48->64 at 35x35 4.36 against 3.28. Below the threshold the
/// reorders mostly cost more than they save: 1x1 256->64 at 14x14 0.19
/// against 0.24 ms, 64->64 at 28x28 0.18 against 0.34, 5x5 16->16 at 28x28
/// 0.27 against 0.30 (2 threads; the one win below it measured is 1x1
/// 32->16 at 112x112, 6.4 million multiply-adds, 1.06 against 0.76 ms).
/// The threshold was measured on Zen 1 only. A 1x1 at stride 2 stays in
/// NCHW, as hasStridedWindow says.
bool runsFasterBlockedInBlocksOf8(ConvOp conv, ChannelBlocks blocks) {
  constexpr int64_t kMinLoneMultiplyAdds = int64_t(1) << 23;
  if (blocks.size != kNarrowChannelBlock || !isDenseUnitStride(conv))
    return false;
  if (has3x3Window(conv))
    return true;
  ArrayRef<int64_t> filter = conv.getFilter().getType().getShape();
  auto output = cast<RankedTensorType>(conv.getType());
  if (!output.hasStaticShape())
    return false;
  return output.getNumElements() * filter[1] * filter[2] * filter[3] >= kMinLoneMultiplyAdds;
}

/// Whether running `conv` on blocked images pays for its reorders: its input
/// has a blocked form already, its result reaches another convolution that
/// takes it blocked, its window is tall or strided, or in blocks of 8 it
/// runs faster blocked even alone. Any other convolution alone between NCHW
/// images would pay a pass over each of its two images for a layout nothing
/// else reads; the NCHW kernels run it as fast as that.
bool worthBlocking(ConvOp conv, const Reorders &reorders) {
  return reorders.hasBlocked(conv.getInput()) ||
         feedsBlockableConv(conv.getResult(), reorders.getBlocks()) || hasTallWindow(conv) ||
         hasStridedWindow(conv) || runsFasterBlockedInBlocksOf8(conv, reorders.getBlocks());
}

/// The bounds a convolution's result is clamped to.
struct Clamp {
  float low = -std::numeric_limits<float>::infinity();
  float high = std::numeric_limits<float>::infinity();

  FloatAttr lowAttr(Builder &b) const { return attr(b, low); }
  FloatAttr highAttr(Builder &b) const { return attr(b, high); }

private:
  static FloatAttr attr(Builder &b, float value) {
    return std::isinf(value) ? FloatAttr() : b.getF32FloatAttr(value);
  }
};

/// The clamp that the ops after `result` apply to it: a Relu or a max by a
/// constant, then a min by a constant (ONNX Clip), each the only user of
/// what it reads; they go in `absorbed`, in order. On a `padded` image a
/// clamp that moves zero is left alone: the padding lanes stay zero.
Clamp absorbClamp(Value result, bool padded, SmallVectorImpl<Operation *> &absorbed) {
  Clamp clamp;
  Type type = result.getType();
  Block *block = result.getParentBlock();
  while (result.hasOneUse()) {
    Operation *user = *result.getUsers().begin();
    if (user->getBlock() != block || user->getNumResults() != 1 ||
        user->getResult(0).getType() != type)
      break;
    std::optional<float> bound;
    if (isa<MaxOp, MinOp>(user))
      bound = splatValue(user->getOperand(user->getOperand(0) == result ? 1 : 0));
    bool unbounded = clamp.high == std::numeric_limits<float>::infinity();
    if (isa<ReluOp>(user) && unbounded)
      clamp.low = std::max(clamp.low, 0.0f);
    else if (isa<MaxOp>(user) && bound && unbounded && (!padded || *bound <= 0.0f))
      clamp.low = std::max(clamp.low, *bound);
    else if (isa<MinOp>(user) && bound && *bound >= clamp.low && (!padded || *bound >= 0.0f))
      clamp.high = std::min(clamp.high, *bound);
    else
      break;
    absorbed.push_back(user);
    result = user->getResult(0);
  }
  return clamp;
}

/// What a blocked convolution applies to its sum: an activation, then a
/// clamp.
struct Epilogue {
  ConvActivationAttr activation;
  Clamp clamp;
};

/// The activation that the ops after `result` apply to it, if any: a SiLU
/// (`x * sigmoid(x)`, as PyTorch exports it: the sigmoid and the product
/// are `result`'s only users, the product the sigmoid's) or a HardSwish
/// (`result`'s only user). Its ops go in `absorbed`, in order, and
/// `result` becomes the activation's result. Both keep zero at zero, so
/// they apply to padded images too.
ConvActivationAttr absorbActivation(Value &result, SmallVectorImpl<Operation *> &absorbed) {
  Type type = result.getType();
  Block *block = result.getParentBlock();
  auto sameShape = [&](Operation *op) {
    return op->getBlock() == block && op->getNumResults() == 1 &&
           op->getResult(0).getType() == type;
  };
  MLIRContext *ctx = type.getContext();
  if (result.hasOneUse()) {
    auto hardSwish = dyn_cast<HardSwishOp>(*result.getUsers().begin());
    if (!hardSwish || !sameShape(hardSwish))
      return {};
    absorbed.push_back(hardSwish);
    result = hardSwish.getResult();
    return ConvActivationAttr::get(ctx, ConvActivation::HardSwish);
  }
  SmallVector<Operation *> users(result.getUsers());
  if (users.size() != 2)
    return {};
  auto sigmoid = dyn_cast<SigmoidOp>(users[0]);
  if (!sigmoid)
    sigmoid = dyn_cast<SigmoidOp>(users[1]);
  if (!sigmoid || !sameShape(sigmoid) || !sigmoid->hasOneUse())
    return {};
  auto product = dyn_cast<MulOp>(*sigmoid->getUsers().begin());
  if (!product || !sameShape(product) || !llvm::is_contained(users, product.getOperation()) ||
      !llvm::is_contained(product->getOperands(), result))
    return {};
  absorbed.append({sigmoid, product});
  result = product.getResult();
  return ConvActivationAttr::get(ctx, ConvActivation::Swish);
}

/// The activation and then the clamp that the ops after `result`, a
/// convolution's in blocks of `block` channels, apply to it
/// (absorbActivation, absorbClamp), their ops in `absorbed`. Activations
/// are taken in blocks of 8 only (AVX2 without AVX-512). There the
/// runtime's own vector loop applies them, faster than the separate kernel
/// the fusion pass would make (EfficientNet-B0's 1x1 16->96 at 112x112 on
/// Zen 1: 1.78 ms against 0.69 + 1.22). On AVX-512 that loop, in 8 lanes,
/// would race the separate kernel's 16, and oneDNN's swish post-op lost to
/// the separate kernel (docs/benchmarks.md).
Epilogue absorbEpilogue(Value result, int64_t block, bool padded,
                        SmallVectorImpl<Operation *> &absorbed) {
  Epilogue epilogue;
  if (block == kNarrowChannelBlock)
    epilogue.activation = absorbActivation(result, absorbed);
  epilogue.clamp = absorbClamp(result, padded, absorbed);
  return epilogue;
}

/// Folds each residual sum into the blocked convolution that computes one
/// of its operands: `add(blocked_conv(x), r)`, where the sum is the
/// convolution's only user and the convolution is not clamped, becomes
/// `blocked_conv(x) add r` at the sum, which takes the sum's activation and
/// clamp too (ResNet's `relu(conv(x) + identity)`). The runtime adds the convolution
/// into r's buffer (oneDNN's sum post-op), which saves the sum's pass over
/// both images.
void foldResidualSums(func::FuncOp func) {
  SmallVector<AddOp> sums;
  func.walk([&](AddOp add) { sums.push_back(add); });
  for (AddOp add : sums) {
    for (unsigned i : {0u, 1u}) {
      auto conv = add->getOperand(i).getDefiningOp<BlockedConvOp>();
      Value addend = add->getOperand(1 - i);
      if (!conv || conv.getAddend() || conv.getClampMinAttr() || conv.getClampMaxAttr() ||
          conv.getActivationAttr() || !conv->hasOneUse() || conv->getBlock() != add->getBlock() ||
          conv.getType() != add.getType() || addend.getType() != add.getType())
        continue;
      SmallVector<Operation *> absorbed;
      bool padded = conv.getFilter().getType().getDimSize(0) % conv.getBlock() != 0;
      Epilogue epilogue = absorbEpilogue(add.getResult(), conv.getBlock(), padded, absorbed);
      OpBuilder b(add);
      auto fused = BlockedConvOp::create(
          b, b.getFusedLoc({conv.getLoc(), add.getLoc()}), conv.getInput(), conv.getFilter(),
          conv.getBias(), addend, /*dest=*/Value(), conv.getStridesAttr(), conv.getPadsAttr(),
          conv.getDilationsAttr(), conv.getGroupAttr(), epilogue.clamp.lowAttr(b),
          epilogue.clamp.highAttr(b), conv.getBlockAttr(), epilogue.activation);
      Operation *last = absorbed.empty() ? add.getOperation() : absorbed.back();
      last->getResult(0).replaceAllUsesWith(fused.getResult());
      for (Operation *op : llvm::reverse(absorbed))
        op->erase();
      add->erase();
      conv->erase();
      break;
    }
  }
}

struct KilnBlockedLayoutPass : impl::KilnBlockedLayoutPassBase<KilnBlockedLayoutPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!isChannelBlock(block)) {
      emitError(func.getLoc()) << "kiln-blocked-layout: block must be " << kNarrowChannelBlock
                               << " or " << kWideChannelBlock << " channels, got "
                               << block.getValue();
      return signalPassFailure();
    }
    ChannelBlocks blocks{block.getValue()};
    OpBuilder b(&getContext());
    Reorders reorders(b, blocks);
    // The ops as they were: a conversion erases the clamp after a
    // convolution along with it.
    SmallVector<Operation *> ops = llvm::map_to_vector(
        func.getBody().front(), [](Operation &op) { return &op; });
    DenseSet<Operation *> erased;
    for (Operation *op : ops) {
      if (erased.contains(op))
        continue;
      if (auto conv = dyn_cast<ConvOp>(op)) {
        if (isBlockable(conv, blocks) && (everywhere || worthBlocking(conv, reorders)))
          convert(b, reorders, conv, erased, /*plainInput=*/false);
        else if (isBlockableFromPlain(conv, blocks))
          convert(b, reorders, conv, erased, /*plainInput=*/true);
        continue;
      }
      if (isElementwise(op))
        convertElementwise(b, reorders, op);
      else if (isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(op))
        convertSpatialReduction(b, reorders, op);
      else if (isBlockablePool(op, blocks))
        convertPool(b, reorders, op);
      else if (isBlockableConcat(op, blocks))
        convertConcat(b, reorders, cast<ConcatOp>(op));
    }
    // The NCHW views no op reads any more, so that each blocked value's
    // users are the ops that read it.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
      if (isOpTriviallyDead(&op))
        op.erase();
    foldResidualSums(func);
  }

  /// Replaces `conv`, and the activation and the Relu or Clip that follow
  /// it (absorbEpilogue), by a kiln.blocked_conv, which reads the NCHW input
  /// as it is where `plainInput`; adds the ops it erases to `erased`.
  static void convert(OpBuilder &b, Reorders &reorders, ConvOp conv,
                      DenseSet<Operation *> &erased, bool plainInput) {
    b.setInsertionPoint(conv);
    Value input = plainInput ? conv.getInput() : reorders.blocked(conv.getInput());
    SmallVector<Operation *> absorbed;
    ChannelBlocks blocks = reorders.getBlocks();
    Epilogue epilogue =
        absorbEpilogue(conv.getResult(), blocks.size, blocks.isPadded(conv.getType()), absorbed);
    auto blocked = BlockedConvOp::create(
        b, conv.getLoc(), input, conv.getFilter(), conv.getBias(), /*addend=*/Value(),
        /*dest=*/Value(), conv.getStridesAttr(), conv.getPadsAttr(), conv.getDilationsAttr(),
        conv.getGroupAttr(), epilogue.clamp.lowAttr(b), epilogue.clamp.highAttr(b),
        b.getI64IntegerAttr(blocks.size), epilogue.activation);
    Operation *last = absorbed.empty() ? conv.getOperation() : absorbed.back();
    Value result = last->getResult(0);
    b.setInsertionPointAfter(last);
    result.replaceAllUsesWith(
        reorders.plain(blocked, conv.getType().getDimSize(1), last->getLoc()));
    for (Operation *op : llvm::reverse(absorbed)) {
      erased.insert(op);
      op->erase();
    }
    conv->erase();
  }

  /// Replaces the reduction `op` over an image's rows and columns (a global
  /// pool, a squeeze-and-excitation's mean) by the same reduction of its
  /// blocked form, when that is a view: the blocked result,
  /// `N x C/B x 1 x 1 x B`, is a per-channel vector the image's
  /// elementwise ops take as it is, and its NCHW view is small. A sum,
  /// maximum or minimum of zero lanes is zero, so padding stays zero.
  static void convertSpatialReduction(OpBuilder &b, Reorders &reorders, Operation *op) {
    Value input = op->getOperand(0);
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    if (!reorders.isView(input) || !inputType ||
        !reorders.getBlocks().isBlockableImage(inputType) || !axes ||
        axes.asArrayRef() != ArrayRef<int64_t>{2, 3})
      return;
    ArrayRef<int64_t> s = inputType.getShape();
    NamedAttrList attrs(op->getAttrs());
    attrs.set("keepdims", b.getBoolAttr(true));
    Value blocked = rebuildOnBlocked(
        b, reorders, op, reorders.getBlocks().blockedType(inputType.clone({s[0], s[1], 1, 1})),
        attrs);
    replaceByBlocked(b, reorders, op, blocked, s[1]);
  }

  /// Replaces the pool `op` of an image whose blocked form is a view (a
  /// blocked convolution's result, ResNet's stem) by the same pool of that
  /// form: the next convolution reads the blocked result as it is, and
  /// neither image is reordered.
  static void convertPool(OpBuilder &b, Reorders &reorders, Operation *op) {
    if (!reorders.isView(op->getOperand(0)))
      return;
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Value blocked = rebuildOnBlocked(b, reorders, op, reorders.getBlocks().blockedType(resultType),
                                     op->getAttrs());
    replaceByBlocked(b, reorders, op, blocked, resultType.getDimSize(1));
  }

  /// Replaces `concat` of images whose blocked forms all exist (views, or
  /// reorders made for other users) by the concatenation of those forms
  /// along their blocks, so the next convolution reads it as it is.
  static void convertConcat(OpBuilder &b, Reorders &reorders, ConcatOp concat) {
    if (!llvm::all_of(concat.getInputs(), [&](Value input) { return reorders.hasBlocked(input); }))
      return;
    b.setInsertionPoint(concat);
    SmallVector<Value> blocked = llvm::map_to_vector(
        concat.getInputs(), [&](Value input) { return reorders.blocked(input); });
    Value joined = ConcatOp::create(b, concat.getLoc(), blocked, concat.getAxis());
    replaceByBlocked(b, reorders, concat, joined, concat.getType().getDimSize(1));
  }

  /// The one-operand `op` rebuilt before it on its operand's blocked form,
  /// with the result type `type` and the attributes `attrs`.
  static Value rebuildOnBlocked(OpBuilder &b, Reorders &reorders, Operation *op, Type type,
                                ArrayRef<NamedAttribute> attrs) {
    b.setInsertionPoint(op);
    OperationState state(op->getLoc(), op->getName(),
                         ValueRange{reorders.blocked(op->getOperand(0))}, TypeRange{type}, attrs);
    return b.create(state)->getResult(0);
  }

  /// Gives the users of `op` the NCHW view of `blocked`, the same value on
  /// blocked images with `channels` real channels (reshaped where `op`'s
  /// result drops dimensions), and erases `op`.
  static void replaceByBlocked(OpBuilder &b, Reorders &reorders, Operation *op, Value blocked,
                               int64_t channels) {
    Value result = reorders.plain(blocked, channels, op->getLoc());
    Type resultType = op->getResult(0).getType();
    if (result.getType() != resultType)
      result = ReshapeOp::create(b, op->getLoc(), resultType, result);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  }

  /// Replaces the elementwise `op` by the same op on blocked images when one
  /// of its operands is a blocked image's view and the others can follow.
  static void convertElementwise(OpBuilder &b, Reorders &reorders, Operation *op) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    ChannelBlocks blocks = reorders.getBlocks();
    if (!type || !blocks.isBlockableImage(type) ||
        llvm::none_of(op->getOperands(), [&](Value v) { return reorders.isView(v); }))
      return;
    b.setInsertionPoint(op);
    SmallVector<Value> operands;
    SmallVector<bool> uniform;
    for (Value operand : op->getOperands()) {
      bool isUniform;
      Value blocked = reorders.asBlockedOperand(operand, type, isUniform);
      if (!blocked)
        return;
      operands.push_back(blocked);
      uniform.push_back(isUniform);
    }
    if (blocks.isPadded(type) && !keepsZeros(op, uniform))
      return;
    OperationState state(op->getLoc(), op->getName(), operands, TypeRange{blocks.blockedType(type)},
                         op->getAttrs());
    Operation *blocked = b.create(state);
    op->getResult(0).replaceAllUsesWith(
        reorders.plain(blocked->getResult(0), type.getDimSize(1), op->getLoc()));
    op->erase();
  }
};

} // namespace
} // namespace kiln
