//===- BlasCalls.h - Shared pieces of the CPU's BLAS and kernel calls -----===//
//
// kiln-contractions-to-blas lowers matrix products (ContractionsToBlas.cpp)
// and convolutions (ConvolutionsToBlas.cpp) to calls of the BLAS and of the
// runtime's kernels; these are the helpers both use.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_BLASCALLS_H
#define KILN_CODEGEN_CPU_BLASCALLS_H

#include "codegen/Contraction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

#include <optional>
#include <utility>

namespace kiln::blas {

constexpr llvm::StringLiteral kSgemm = "cblas_sgemm";
constexpr llvm::StringLiteral kDnnlSgemm = "dnnl_sgemm";

/// The buffer `value` views, through subviews, casts and reshapes.
mlir::Value rootOf(mlir::Value value);

/// Whether `expr` is the loop dimension `dim`.
bool isDim(mlir::AffineExpr expr, int64_t dim);

/// Whether `op` reads two f32 buffers and accumulates into a third. Sizes
/// may be dynamic: the last tile of a dimension that the tile size does not
/// divide is smaller, and the calls take their sizes at run time.
bool isF32Buffers(mlir::linalg::GenericOp op);

/// A constant upper bound of a size (a dimension of a partial tile), or
/// ShapedType::kDynamic when none can be derived.
int64_t upperBound(const mlir::ValueBoundsConstraintSet::Variable &size);

/// The trip counts of `op`'s loops at `b`'s insertion point: constants where
/// static, `memref.dim`s of its operands where not.
llvm::SmallVector<mlir::OpFoldResult> loopSizes(mlir::OpBuilder &b, mlir::Location loc,
                                                mlir::linalg::LinalgOp op);

/// The product of `sizes`, folded when they are all constants.
mlir::OpFoldResult product(mlir::OpBuilder &b, mlir::Location loc,
                           llvm::ArrayRef<mlir::OpFoldResult> sizes);

/// Whether the trailing `count` dimensions of the buffer `operand` are dense
/// (row-major, no gaps), so they can be read as one matrix dimension. Only
/// the outermost of them may be dynamic (a partial band of rows): the
/// strides of the others must be known to be dense.
bool isDenseTrailing(mlir::Value operand, size_t count);

/// Whether `value` views a constant global (weights), through any chain of
/// subviews and casts.
bool isConstantBuffer(mlir::Value value);

/// The function `name` of `module`, declared private with `type` if absent.
mlir::func::FuncOp declare(mlir::ModuleOp module, llvm::StringRef name,
                           mlir::FunctionType type);

/// The address of `buffer[indices]` (of its first element when `indices`
/// is empty) as an LLVM pointer, and the buffer's strides.
std::pair<mlir::Value, llvm::SmallVector<mlir::Value>>
addressOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer,
          mlir::ValueRange indices = {});

/// `size` as a value of integer type `type`.
mlir::Value asInteger(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                      mlir::OpFoldResult size);

/// The LLVM pointer `pointer` moved on by `elements` (an i64) f32s.
mlir::Value advanceFloats(mlir::OpBuilder &b, mlir::Location loc, mlir::Value pointer,
                          mlir::Value elements);

/// Opens a loop nest over `ranges` at `b`'s insertion point, leaves `b`
/// inside it and returns the induction variables.
llvm::SmallVector<mlir::Value> loopNest(mlir::OpBuilder &b, mlir::Location loc,
                                        llvm::ArrayRef<mlir::OpFoldResult> ranges);

/// C = alpha op(A) * op(B) + beta C for row-major matrices, op transposing
/// where asked, through `sgemm` (dnnl_sgemm or cblas_sgemm). A null alpha or
/// beta is 1: C += op(A) * op(B). With beta 0, C is not read.
void callSgemm(mlir::OpBuilder &b, mlir::Location loc, mlir::func::FuncOp sgemm,
               mlir::OpFoldResult m, mlir::OpFoldResult n, mlir::OpFoldResult k, bool transA,
               mlir::Value a, mlir::Value lda, bool transB, mlir::Value bMatrix, mlir::Value ldb,
               mlir::Value c, mlir::Value ldc, mlir::Value alpha = {}, mlir::Value beta = {});

/// The linalg.fill of +0.0 into `c` that the product `op` accumulates onto:
/// the op that last wrote `c` before it, with only ops that touch no memory
/// in between; null if there is none.
mlir::linalg::FillOp zeroFillBefore(mlir::Operation *op, mlir::Value c);

/// An optimizer's update of a weight by its gradient, when the gradient is
/// this product's tile: `out = start - scale * C` (or `+`), C a private tile
/// buffer that starts at zero and is read by nothing else. It runs as
/// `out = start` and then one sgemm with alpha = -scale (or scale) and beta
/// = 1, which saves zeroing C and the pass that reads it back.
struct UpdateEpilogue {
  mlir::linalg::GenericOp op;
  mlir::linalg::FillOp fill;
  mlir::Value start, out;
  /// The scale: an f32 value defined before the product, or a rank-0
  /// buffer to load it from.
  mlir::Value scale;
  bool subtract;

  /// Sets `out = start` at `b`'s insertion point and returns the products'
  /// alpha (-scale, or scale): each then adds alpha * A B onto `out`.
  mlir::Value begin(mlir::OpBuilder &b, mlir::Location loc) const;
  /// Erases the update and the zero fill, once the product is erased, and
  /// the tile buffer they wrote and read with its deallocation.
  void erase();
};

/// The update that follows the product `gemm` into its tile buffer `c`, if
/// any (see UpdateEpilogue).
std::optional<UpdateEpilogue> matchUpdateEpilogue(mlir::linalg::GenericOp gemm, mlir::Value c);

/// Where calls of the runtime's kernels go: the module, its symbols (while
/// the pass runs) and each call site's own state.
class CallSites {
public:
  CallSites(mlir::ModuleOp module, mlir::SymbolTable &symbols)
      : module(module), symbols(symbols) {}

  /// A new call site's state: a private, zeroed 8-byte global of its own,
  /// as a memref<1xi64>.
  mlir::Value slotBuffer(mlir::OpBuilder &b, mlir::Location loc);
  /// The address of slotBuffer's global, as an LLVM pointer.
  mlir::Value slot(mlir::OpBuilder &b, mlir::Location loc);

  /// Declares the runtime kernel `name`, returning nothing and taking
  /// `count` arguments: pointers at `pointers`, i64 elsewhere.
  mlir::func::FuncOp declareKernel(llvm::StringRef name, unsigned count,
                                   llvm::ArrayRef<unsigned> pointers);

  mlir::ModuleOp getModule() const { return module; }

private:
  mlir::ModuleOp module;
  mlir::SymbolTable &symbols;
};

/// matchConvolution, on buffers whose window (filter) and spatial (output)
/// dimensions are dense and trailing, as BLAS matrices need
/// (ConvolutionsToBlas.cpp).
std::optional<ConvolutionLoops> matchBufferConvolution(mlir::linalg::GenericOp op);

/// Replaces the convolution tile `op` by calls: the depthwise kernel,
/// kiln_conv2d_constant_w (with `primitives`, for constant filters; of any
/// channel count with `direct`, convolvesInBlockedLayout), vectorizable
/// loops, or im2col copies and `sgemm` (ConvolutionsToBlas.cpp).
void rewriteConvolution(mlir::linalg::GenericOp op, const ConvolutionLoops &loops,
                        mlir::func::FuncOp sgemm, CallSites &sites, bool primitives,
                        bool direct);

} // namespace kiln::blas

#endif // KILN_CODEGEN_CPU_BLASCALLS_H
