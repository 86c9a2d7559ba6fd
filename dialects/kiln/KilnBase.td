//===- KilnBase.td - The kiln dialect and its type constraints -*- tablegen -*-===//
//
// The `kiln` dialect models ONNX-level tensor programs: every op works on
// statically shaped ranked tensors, keeps the source graph node's name as its
// location, and knows its result type from its operands and attributes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor-level ops of ONNX models, the input to Kiln's passes";
  let description = [{
    The `kiln` dialect is the first IR every model enters. Its ops follow ONNX
    semantics (NumPy broadcasting, ONNX attribute meanings) but in a form fit
    for compilation:

    * every tensor is ranked and statically shaped; symbolic dimensions are
      bound at import time;
    * operands that ONNX passes as tensors but that decide shapes (Reshape's
      `shape`, Slice's `starts`, Unsqueeze's `axes`, ...) are attributes;
    * axes are normalized: non-negative, sorted, unique;
    * result types are inferred through `InferTypeOpInterface`, so importers
      and rewrites never compute shapes by hand, and verifiers check them.

    Element types are `f16`, `bf16`, `f32`, `f64`, the signless integers `i8`,
    `i16`, `i32`, `i64` and `i1` for booleans.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

defvar Kiln_FloatTypes = [F16, BF16, F32, F64];
defvar Kiln_IntTypes = [I8, I16, I32, I64];
defvar Kiln_NumericTypes = !listconcat(Kiln_FloatTypes, Kiln_IntTypes);
defvar Kiln_AllTypes = !listconcat(Kiln_NumericTypes, [I1]);

def Kiln_FloatTensor : RankedTensorOf<Kiln_FloatTypes>;
def Kiln_IntTensor : RankedTensorOf<Kiln_IntTypes>;
def Kiln_NumericTensor : RankedTensorOf<Kiln_NumericTypes>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;
def Kiln_IndexTensor : RankedTensorOf<[I32, I64]>;
def Kiln_Tensor : RankedTensorOf<Kiln_AllTypes>;
def Kiln_I64Tensor : RankedTensorOf<[I64]>;

#endif // KILN_BASE_TD
