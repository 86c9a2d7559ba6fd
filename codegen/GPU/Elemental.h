//===- Elemental.h - Computing one element of a fusion's tensor -*- C++ -*-===//
//
// A GPU kernel computes a fusion's results element by element: the value of
// a tensor at an index is its producer's payload applied to its operands'
// values at the indices the producer's indexing maps give, down to the
// fusion's inputs, which are loaded from memory. This is XLA's elemental
// emission over linalg on tensors: schedules (a loop over the result, a row
// per warp, ...) decide which indices each thread asks for; the emitter
// turns each request into scalar code.
//
// Each thread handles `lanes` consecutive elements along the innermost
// dimension of what it computes. Indices are tracked as affine functions of
// the lane (LaneIndex), so that a load whose lanes are consecutive in memory
// becomes one vector load, and a value that is the same for every lane (a
// broadcast operand, a row's sum) is computed once.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_ELEMENTAL_H
#define KILN_CODEGEN_GPU_ELEMENTAL_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <functional>

namespace kiln {

/// The index of every lane of one dimension: lane `l` is at `base + step * l`
/// unless `lanes` lists each lane's index explicitly.
struct LaneIndex {
  mlir::Value base;
  int64_t step = 0;
  /// `base` is a known multiple of `align` (>= 1).
  int64_t align = 1;
  /// One index per lane when the index is not affine in the lane.
  llvm::SmallVector<mlir::Value, 4> lanes;

  bool isUniform() const { return lanes.empty() && step == 0; }
  bool isAffine() const { return lanes.empty(); }
};

/// One value per lane, or a single value shared by every lane.
struct Lanes {
  llvm::SmallVector<mlir::Value, 4> values;

  bool isUniform() const { return values.size() == 1; }
  mlir::Value lane(int64_t l) const { return isUniform() ? values[0] : values[l]; }
};

class ElementalEmitter {
public:
  /// Gives the buffer (a kernel parameter) holding `tensor`, a fusion input
  /// or a tensor an earlier kernel materialized; null if `tensor` is
  /// computed in this kernel.
  using BufferProvider = std::function<mlir::Value(mlir::Value tensor)>;

  ElementalEmitter(mlir::OpBuilder &builder, mlir::Location loc, int64_t lanes,
                   BufferProvider buffers);

  int64_t getLanes() const { return lanes; }
  mlir::OpBuilder &getBuilder() { return builder; }

  /// Makes every element of `tensor` read as `value` (a row's reduction in a
  /// row kernel, computed cooperatively before).
  void bindUniform(mlir::Value tensor, mlir::Value value);

  /// The elements of `tensor` at `indices` (one per dimension), or failure
  /// after a diagnostic at the op that has no elemental form.
  mlir::FailureOr<Lanes> emit(mlir::Value tensor, llvm::ArrayRef<LaneIndex> indices);

  /// The values `generic`'s payload yields at loop indices `loops`, given
  /// the values of its outputs' block arguments (`accumulators`; an empty
  /// Lanes for an argument the payload does not read).
  mlir::FailureOr<llvm::SmallVector<Lanes>> emitPayload(mlir::linalg::GenericOp generic,
                                                        llvm::ArrayRef<LaneIndex> loops,
                                                        llvm::ArrayRef<Lanes> accumulators);

  /// A scalar defined in the fusion body outside any payload (a constant).
  mlir::FailureOr<mlir::Value> emitScalar(mlir::Value scalar);

  /// Index arithmetic on lanes; results keep the affine form when they can.
  LaneIndex constant(int64_t value);
  LaneIndex uniform(mlir::Value index, int64_t align = 1);
  LaneIndex add(const LaneIndex &lhs, const LaneIndex &rhs);
  LaneIndex mul(const LaneIndex &index, int64_t factor);
  LaneIndex floorDiv(const LaneIndex &index, int64_t divisor);
  LaneIndex mod(const LaneIndex &index, int64_t divisor);
  /// Lane `l`'s index as a value.
  mlir::Value laneValue(const LaneIndex &index, int64_t l);
  /// The multi-dimensional index of the `linear` row-major element of `shape`.
  llvm::SmallVector<LaneIndex> delinearize(const LaneIndex &linear,
                                           llvm::ArrayRef<int64_t> shape);
  /// Row-major linear element number of `indices` in `shape`.
  LaneIndex linearize(llvm::ArrayRef<LaneIndex> indices, llvm::ArrayRef<int64_t> shape);

  /// Loads `buffer` (a memref) at `indices`: one vector load when the lanes
  /// are consecutive and aligned, one load when they are all the same.
  Lanes load(mlir::Value buffer, llvm::ArrayRef<LaneIndex> indices);
  /// Stores `values` into `buffer` at `indices` (lanes consecutive when the
  /// innermost index has step 1).
  void store(const Lanes &values, mlir::Value buffer, llvm::ArrayRef<LaneIndex> indices);

private:
  struct MemoEntry {
    llvm::SmallVector<LaneIndex, 4> indices;
    Lanes value;
  };

  mlir::FailureOr<Lanes> emitUncached(mlir::Value tensor, llvm::ArrayRef<LaneIndex> indices);
  mlir::FailureOr<Lanes> emitGeneric(mlir::Operation *op, unsigned resultNumber,
                                     llvm::ArrayRef<LaneIndex> indices);
  mlir::FailureOr<Lanes> emitInsertSlice(mlir::Operation *op, llvm::ArrayRef<LaneIndex> indices);
  mlir::FailureOr<Lanes> emitPad(mlir::Operation *op, llvm::ArrayRef<LaneIndex> indices);
  /// An scf.if of `count` values of `type`: the first `count` lanes of
  /// `inside` where `condition` holds, of `outside` elsewhere; only the taken
  /// side runs.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  choose(mlir::Value condition, int64_t count, mlir::Type type,
         llvm::function_ref<mlir::FailureOr<Lanes>()> inside,
         llvm::function_ref<mlir::FailureOr<Lanes>()> outside);
  /// Clones a payload block per lane (once when every input is uniform).
  mlir::FailureOr<llvm::SmallVector<Lanes>>
  clonePayload(mlir::Block &payload, llvm::ArrayRef<Lanes> arguments,
               llvm::ArrayRef<LaneIndex> loopIndices);
  /// Applies one result of an indexing map to loop indices.
  mlir::FailureOr<LaneIndex> applyExpr(mlir::AffineExpr expr, llvm::ArrayRef<LaneIndex> dims);

  Lanes lookup(mlir::Value tensor, llvm::ArrayRef<LaneIndex> indices) const;
  void remember(mlir::Value tensor, llvm::ArrayRef<LaneIndex> indices, const Lanes &value);
  /// Whether `value` was defined where the builder now inserts, or around it.
  bool isVisible(mlir::Value value) const;

  /// The index constant `value`, created once at the kernel's entry so that
  /// equal indices are equal values (and hit the memo).
  mlir::Value indexConstant(int64_t value);
  /// Likewise for other scalar constants.
  mlir::Value scalarConstant(mlir::TypedAttr value);

  mlir::OpBuilder &builder;
  mlir::Location loc;
  mlir::Block *entry;
  llvm::DenseMap<int64_t, mlir::Value> indexConstants;
  llvm::DenseMap<mlir::Attribute, mlir::Value> scalarConstants;
  int64_t lanes;
  BufferProvider buffers;
  llvm::DenseMap<mlir::Value, mlir::Value> uniforms;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<MemoEntry, 1>> memo;
  llvm::DenseMap<mlir::Value, mlir::Value> scalars;
};

} // namespace kiln

#endif // KILN_CODEGEN_GPU_ELEMENTAL_H
