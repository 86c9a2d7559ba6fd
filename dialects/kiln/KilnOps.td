//===- KilnOps.td - Operations of the kiln dialect ----------*- tablegen -*-===//
//
// One definition per ONNX operator family. The descriptions state the
// semantics Kiln implements; where they differ from ONNX (attributes in place
// of shape operands, normalized axes) the importer performs the translation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "dialects/kiln/KilnBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "dialects/kiln/GradientInterface.td"

// Ops with a gradient rule (dialects/kiln/Gradients/) declare this.
defvar Kiln_Differentiable = DeclareOpInterfaceMethods<Kiln_GradientOpInterface>;

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat([Pure], traits)>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike, InferTypeOpAdaptor]> {
  let summary = "A tensor known at compile time (ONNX Constant and initializers)";
  let description = [{
    Produces the tensor held in `value`. Model weights (ONNX initializers) are
    imported as `kiln.constant` and end up in the artifact's read-only data.

    ```mlir
    %w = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, string onnx, string formula,
                   Type type = Kiln_FloatTensor, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Elementwise, SameOperandsAndResultType],
                                    traits)> {
  let summary = "Elementwise " # formula # " (ONNX " # onnx # ")";
  let description = "Computes `" # formula # "` for every element of `input`."
    # "\n\n```mlir\n%y = kiln." # mnemonic # " %x : tensor<2x3xf32>\n```\n";
  let arguments = (ins type:$input);
  let results = (outs type:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Kiln_AbsOp : Kiln_UnaryOp<"abs", "Abs", "|x|", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_NegOp : Kiln_UnaryOp<"neg", "Neg", "-x", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_SignOp : Kiln_UnaryOp<"sign", "Sign", "sign(x)", Kiln_NumericTensor>;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "Exp", "e^x", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_LogOp : Kiln_UnaryOp<"log", "Log", "ln(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "Sqrt", "sqrt(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "Reciprocal", "1 / x", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "Tanh", "tanh(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "Sigmoid", "1 / (1 + e^-x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "Relu", "max(x, 0)", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "Erf", "erf(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "Floor", "floor(x)">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "Ceil", "ceil(x)">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", "Round", "round half to even(x)">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "Sin", "sin(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "Cos", "cos(x)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "Tan", "tan(x)">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "Asin", "asin(x)">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "Acos", "acos(x)">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "Atan", "atan(x)">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "Sinh", "sinh(x)">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "Cosh", "cosh(x)">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "Asinh", "asinh(x)">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "Acosh", "acosh(x)">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "Atanh", "atanh(x)">;
def Kiln_SoftplusOp : Kiln_UnaryOp<"softplus", "Softplus", "ln(e^x + 1)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_SoftsignOp : Kiln_UnaryOp<"softsign", "Softsign", "x / (1 + |x|)", Kiln_FloatTensor, [Kiln_Differentiable]>;
def Kiln_HardSwishOp
    : Kiln_UnaryOp<"hard_swish", "HardSwish", "x * max(0, min(1, x / 6 + 0.5))">;
def Kiln_NotOp : Kiln_UnaryOp<"not", "Not", "!x", Kiln_BoolTensor>;

// Unary ops with scalar parameters. The parameters are f32 attributes as in
// ONNX; they are applied in the element type of the tensor.
class Kiln_ParamUnaryOp<string mnemonic, string onnx, string formula,
                        dag params>
    : Kiln_UnaryOp<mnemonic, onnx, formula> {
  let arguments = !con((ins Kiln_FloatTensor:$input), params);
  let description = "Computes `" # formula # "` for every element of `input`."
    # "\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {alpha = 0.5 : f32} : tensor<2x3xf32>\n```\n";
}

def Kiln_LeakyReluOp : Kiln_ParamUnaryOp<"leaky_relu", "LeakyRelu",
    "x < 0 ? alpha * x : x", (ins DefaultValuedAttr<F32Attr, "0.01">:$alpha)>;
def Kiln_EluOp : Kiln_ParamUnaryOp<"elu", "Elu",
    "x < 0 ? alpha * (e^x - 1) : x", (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;
def Kiln_CeluOp : Kiln_ParamUnaryOp<"celu", "Celu",
    "max(0, x) + min(0, alpha * (e^(x / alpha) - 1))",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;
def Kiln_SeluOp : Kiln_ParamUnaryOp<"selu", "Selu",
    "gamma * (x <= 0 ? alpha * (e^x - 1) : x)",
    (ins DefaultValuedAttr<F32Attr, "1.67326319217681884765625">:$alpha,
         DefaultValuedAttr<F32Attr, "1.05070102214813232421875">:$gamma)>;
def Kiln_HardSigmoidOp : Kiln_ParamUnaryOp<"hard_sigmoid", "HardSigmoid",
    "max(0, min(1, alpha * x + beta))",
    (ins DefaultValuedAttr<F32Attr, "0.2">:$alpha,
         DefaultValuedAttr<F32Attr, "0.5">:$beta)>;
def Kiln_ThresholdedReluOp : Kiln_ParamUnaryOp<"thresholded_relu",
    "ThresholdedRelu", "x > alpha ? x : 0",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha)>;

class Kiln_ClassifyOp<string mnemonic, string onnx, string formula, dag params>
    : Kiln_Op<mnemonic, [Elementwise, SameOperandsAndResultShape]> {
  let summary = "Elementwise test " # formula # " (ONNX " # onnx # ")";
  let description = "Yields `true` where `" # formula # "` holds."
    # "\n\n```mlir\n%y = kiln." # mnemonic
    # " %x : tensor<4xf32> -> tensor<4xi1>\n```\n";
  let arguments = !con((ins Kiln_FloatTensor:$input), params);
  let results = (outs Kiln_BoolTensor:$output);
  let assemblyFormat =
    "$input attr-dict `:` type($input) `->` type($output)";
}

def Kiln_IsNaNOp : Kiln_ClassifyOp<"is_nan", "IsNaN", "x is NaN", (ins)>;
def Kiln_IsInfOp : Kiln_ClassifyOp<"is_inf", "IsInf", "x is an infinity",
    (ins DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
         DefaultValuedAttr<BoolAttr, "true">:$detect_negative)>;

//===----------------------------------------------------------------------===//
// Elementwise binary ops with NumPy broadcasting
//===----------------------------------------------------------------------===//

class Kiln_BroadcastOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([InferTypeOpAdaptor], traits)> {
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

// Integer tensors are signless, as in `arith`: ops whose result depends on
// how integers are read take `is_unsigned` (ONNX's uint8..uint64).
defvar Kiln_UnsignedAttr = (ins UnitAttr:$is_unsigned);
defvar Kiln_UnsignedDoc = " With `is_unsigned`, integer operands are read as "
  # "unsigned (ONNX's uint8 to uint64); integer tensors are signless, as in `arith`.";

class Kiln_BinaryOp<string mnemonic, string onnx, string formula,
                    Type type = Kiln_NumericTensor, list<Trait> traits = [],
                    dag extra = (ins)>
    : Kiln_BroadcastOp<mnemonic, traits> {
  let summary = "Elementwise " # formula # " with broadcasting (ONNX " # onnx # ")";
  let description = "Computes `" # formula # "` elementwise after "
    # "broadcasting `lhs` and `rhs` to a common shape by NumPy's rules."
    # !if(!empty(extra), "", Kiln_UnsignedDoc)
    # "\n\n```mlir\n%z = kiln." # mnemonic
    # " %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n```\n";
  let arguments = !con((ins type:$lhs, type:$rhs), extra);
  let results = (outs type:$output);
}

def Kiln_AddOp : Kiln_BinaryOp<"add", "Add", "lhs + rhs", Kiln_NumericTensor, [Commutative, Kiln_Differentiable]>;
def Kiln_SubOp : Kiln_BinaryOp<"sub", "Sub", "lhs - rhs", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_MulOp : Kiln_BinaryOp<"mul", "Mul", "lhs * rhs", Kiln_NumericTensor, [Commutative, Kiln_Differentiable]>;
def Kiln_DivOp : Kiln_BinaryOp<"div", "Div", "lhs / rhs (integers truncate)", Kiln_NumericTensor, [Kiln_Differentiable], Kiln_UnsignedAttr>;
def Kiln_PowOp : Kiln_BinaryOp<"pow", "Pow", "lhs ^ rhs", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_MaxOp : Kiln_BinaryOp<"max", "Max", "max(lhs, rhs)", Kiln_NumericTensor, [Commutative, Kiln_Differentiable], Kiln_UnsignedAttr>;
def Kiln_MinOp : Kiln_BinaryOp<"min", "Min", "min(lhs, rhs)", Kiln_NumericTensor, [Commutative, Kiln_Differentiable], Kiln_UnsignedAttr>;
def Kiln_PReluOp : Kiln_BinaryOp<"prelu", "PRelu", "lhs < 0 ? rhs * lhs : lhs",
                                 Kiln_FloatTensor>;
def Kiln_ModOp : Kiln_BinaryOp<"mod", "Mod", "lhs mod rhs"> {
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$fmod, UnitAttr:$is_unsigned);
  let description = [{
    The remainder of `lhs / rhs` after broadcasting. With `fmod = false`
    (integers only) the result takes the sign of the divisor, as Python's
    `%`; with `fmod = true` it takes the sign of the dividend, as C's `fmod`.
    With `is_unsigned`, integer operands are read as unsigned (both rules
    then agree).

    ```mlir
    %z = kiln.mod %x, %y {fmod = true} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    ```
  }];
}
def Kiln_AndOp : Kiln_BinaryOp<"and", "And", "lhs && rhs", Kiln_BoolTensor, [Commutative]>;
def Kiln_OrOp : Kiln_BinaryOp<"or", "Or", "lhs || rhs", Kiln_BoolTensor, [Commutative]>;
def Kiln_XorOp : Kiln_BinaryOp<"xor", "Xor", "lhs != rhs", Kiln_BoolTensor, [Commutative]>;
def Kiln_ShiftLeftOp : Kiln_BinaryOp<"shift_left", "BitShift LEFT",
    "lhs << rhs (rhs unsigned; 0 when rhs >= the bit width)", Kiln_IntTensor>;
def Kiln_ShiftRightOp : Kiln_BinaryOp<"shift_right", "BitShift RIGHT",
    "lhs >> rhs, logical (rhs unsigned; 0 when rhs >= the bit width)", Kiln_IntTensor>;

class Kiln_CompareOp<string mnemonic, string onnx, string formula,
                     list<Trait> traits = [], dag extra = Kiln_UnsignedAttr>
    : Kiln_BroadcastOp<mnemonic, traits> {
  let summary = "Elementwise comparison " # formula # " (ONNX " # onnx # ")";
  let description = "Yields `true` where `" # formula # "` holds, after "
    # "broadcasting `lhs` and `rhs` to a common shape."
    # !if(!empty(extra), "", Kiln_UnsignedDoc)
    # "\n\n```mlir\n%z = kiln." # mnemonic
    # " %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>\n```\n";
  let arguments = !con((ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs), extra);
  let results = (outs Kiln_BoolTensor:$output);
}

def Kiln_EqualOp : Kiln_CompareOp<"equal", "Equal", "lhs == rhs", [Commutative], (ins)>;
def Kiln_LessOp : Kiln_CompareOp<"less", "Less", "lhs < rhs">;
def Kiln_LessEqualOp : Kiln_CompareOp<"less_equal", "LessOrEqual", "lhs <= rhs">;
def Kiln_GreaterOp : Kiln_CompareOp<"greater", "Greater", "lhs > rhs">;
def Kiln_GreaterEqualOp
    : Kiln_CompareOp<"greater_equal", "GreaterOrEqual", "lhs >= rhs">;

def Kiln_DropoutOp : Kiln_Op<"dropout", [AllTypesMatch<["input", "output"]>,
                                         AttrSizedOperandSegments, Kiln_Differentiable]> {
  let summary = "Zeroes elements at random and scales the rest by 1 / (1 - ratio) (ONNX Dropout, training)";
  let description = [{
    Element `i` (row-major) is kept when `u >= ratio`, with `u` the first
    word of Philox4x32-10 (key: `seed`'s two 32-bit halves; counter: `i`'s
    and `counter`'s, low words first) as a 24-bit fraction; kept elements
    are multiplied by `1 / (1 - ratio)`, the others are 0. The mask is a
    function of `seed`, `counter` and the index alone, so a step is
    reproducible on any device and the gradient recomputes the mask instead
    of storing it. A train step passes its step counter as `counter`;
    without one the counter is 0. `offset`, when given, is added to every
    element's index: a data-parallel replica of rank r passes r times the
    element count, so that its masks are those of its rows in the whole
    batch (and differ from every other replica's).

    ```mlir
    %y = kiln.dropout %x, %step {ratio = 1.000000e-01 : f32, seed = 7 : i64}
        : (tensor<8x64xf32>, tensor<i64>) -> tensor<8x64xf32>
    %z = kiln.dropout %x, %step offset %off {ratio = 1.000000e-01 : f32}
        : (tensor<8x64xf32>, tensor<i64>, tensor<i64>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Optional<Kiln_I64Tensor>:$counter,
                   Optional<Kiln_I64Tensor>:$offset,
                   F32Attr:$ratio, DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $input (`,` $counter^)? (`offset` $offset^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_WhereOp : Kiln_BroadcastOp<"where", [Kiln_Differentiable]> {
  let summary = "Elementwise select with broadcasting (ONNX Where)";
  let description = [{
    Picks `on_true` where `condition` is true and `on_false` elsewhere, after
    broadcasting all three operands to a common shape.

    ```mlir
    %z = kiln.where %c, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$on_true,
                   Kiln_Tensor:$on_false);
  let results = (outs Kiln_Tensor:$output);
}

def Kiln_CastOp : Kiln_Op<"cast", [Elementwise, SameOperandsAndResultShape, Kiln_Differentiable]> {
  let summary = "Elementwise conversion of the element type (ONNX Cast)";
  let description = [{
    Converts every element to the result's element type. Float to integer
    truncates toward zero; to `i1`, non-zero is `true`; from `i1`, `true` is 1.
    Integer tensors are signless: `unsigned_input` reads the input's integers
    as unsigned (zero-extended, converted to floats as unsigned), and
    `unsigned_output` converts floats to unsigned integers. Values outside
    the result type's range are undefined, as in ONNX.

    ```mlir
    %y = kiln.cast %x : tensor<4xf32> -> tensor<4xi64>
    %z = kiln.cast %b {unsigned_input} : tensor<4xi8> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, UnitAttr:$unsigned_input, UnitAttr:$unsigned_output);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Matrix product with NumPy semantics (ONNX MatMul)";
  let description = [{
    `numpy.matmul`: 1-D operands are promoted to matrices (and the added
    dimension removed from the result); leading batch dimensions broadcast.

    ```mlir
    %c = kiln.matmul %a, %b : (tensor<8x4x16xf32>, tensor<16x32xf32>) -> tensor<8x4x32xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_GemmOp : Kiln_Op<"gemm", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "General matrix multiply alpha * A' * B' + beta * C (ONNX Gemm)";
  let description = [{
    `A'` is `A` transposed when `trans_a`, likewise `B'`; `C` is optional and
    broadcasts to the `M x N` result.

    ```mlir
    %y = kiln.gemm %a, %b, %c {trans_b = true} : (tensor<64x784xf32>, tensor<1024x784xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$a, Kiln_NumericTensor:$b,
                   Optional<Kiln_NumericTensor>:$c,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                   DefaultValuedAttr<BoolAttr, "false">:$trans_b);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ConvOp : Kiln_Op<"conv", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "2-D convolution, NCHW, with groups (ONNX Conv)";
  let description = [{
    `input` is `N x C x H x W`, `filter` is `M x C/group x KH x KW`, the
    optional `bias` has `M` elements. `pads` holds `[top, left, bottom,
    right]`; the result is `N x M x OH x OW` with
    `OH = (H + top + bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`.

    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<1x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32>) -> tensor<1x16x32x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$filter,
                   Optional<Kiln_FloatTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_ConvActivation : I32EnumAttr<"ConvActivation",
    "an activation fused into a blocked convolution", [
    I32EnumAttrCase<"Swish", 0, "swish">,
    I32EnumAttrCase<"HardSwish", 1, "hard_swish">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_ConvActivationAttr : EnumAttr<Kiln_Dialect, Kiln_ConvActivation, "conv_activation">;

def Kiln_BlockedConvOp : Kiln_Op<"blocked_conv", [InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "2-D convolution of channel-blocked images, activation and clamp fused";
  let description = [{
    `kiln.conv` with its images in blocks of `block` channels, 16 (oneDNN's
    `nChw16c`, for AVX-512) or 8 (`nChw8c`, for AVX2): with `B = block`,
    `input` is `N x ceil(C/B) x H x W x B`, channel `c` of pixel `(y, x)` at
    `[n, c / B, y, x, c % B]`, and the result is `N x ceil(M/B) x OH x OW x
    B`. `filter` (`M x C/group x KH x KW`) and the optional `bias` (`M`) are
    as for `kiln.conv`, and a grouped convolution is depthwise (`group = C =
    M`). Where `C` or `M` is not a multiple of `B`, the last block's lanes
    past it hold zeros, in the input as in the result. An input of fewer
    than `B` channels (an RGB image) may instead come in NCHW, `N x C x H x
    W`, with one group: the convolution then reads it as it is and gives its
    result in blocks. The optional `addend`, an image of the result's type
    (a residual branch), is added to the convolution; the sum goes through
    the optional `activation` (`swish`: `x * sigmoid(x)`, a SiLU, as
    EfficientNet's convolutions end; `hard_swish`: `x * max(0, min(1, x / 6
    + 0.5))`, MobileNetV3's), and is then clamped to `[clamp_min,
    clamp_max]` where they are given (a fused Relu or Clip):
    `relu(conv(x) + identity)` and `silu(conv(x))` are each one op. Both
    activations keep zero at zero, so a padded block's lanes stay zero. The optional `dest`, of
    the result's type, is what the result is written over: a slot of a
    larger image (`kiln-blocked-conv-in-place` slices it out of the
    concatenation the result is inserted into), so that bufferization lets
    the convolution write there directly. Its contents are not read.

    kiln-blocked-layout makes these from convolutions by constant filters
    (and, in a train step, from 3x3s by the weights that Winograd's
    F(4x4, 3x3) speeds up, their filters transformed again on every call);
    on the CPU each is one call of the runtime (oneDNN's convolution
    primitives, which take and give the blocked layout as it is), so
    consecutive convolutions and the elementwise ops between them pass
    their images on without reordering them.

    ```mlir
    %y = kiln.blocked_conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, clamp_min = 0.0 : f32}
        : (tensor<1x2x28x28x16xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x4x28x28x16xf32>
    %r = kiln.blocked_conv %y, %w1, %b1 add %y {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, clamp_min = 0.0 : f32}
        : (tensor<1x4x28x28x16xf32>, tensor<64x64x1x1xf32>, tensor<64xf32>, tensor<1x4x28x28x16xf32>) -> tensor<1x4x28x28x16xf32>
    %z = kiln.blocked_conv %x8, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, block = 8 : i64}
        : (tensor<1x4x28x28x8xf32>, tensor<64x32x3x3xf32>) -> tensor<1x8x28x28x8xf32>
    %s = kiln.blocked_conv %z, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, block = 8 : i64, activation = #kiln<conv_activation swish>}
        : (tensor<1x8x28x28x8xf32>, tensor<96x64x1x1xf32>, tensor<96xf32>) -> tensor<1x12x28x28x8xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, RankedTensorOf<[F32]>:$filter,
                   Optional<RankedTensorOf<[F32]>>:$bias,
                   Optional<RankedTensorOf<[F32]>>:$addend,
                   Optional<RankedTensorOf<[F32]>>:$dest,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group,
                   OptionalAttr<F32Attr>:$clamp_min,
                   OptionalAttr<F32Attr>:$clamp_max,
                   DefaultValuedAttr<I64Attr, "16">:$block,
                   OptionalAttr<Kiln_ConvActivationAttr>:$activation);
  let results = (outs RankedTensorOf<[F32]>:$output);
  let assemblyFormat =
    "$input `,` $filter (`,` $bias^)? (`add` $addend^)? (`into` $dest^)? attr-dict `:` "
    "functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

class Kiln_PoolOp<string mnemonic, string onnx, string what, dag extra>
    : Kiln_Op<mnemonic, [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "2-D " # what # " pooling over NCHW windows (ONNX " # onnx # ")";
  let description = "Takes the " # what # " over each `kernel_shape` window. "
    # "`pads` is `[top, left, bottom, right]`; with `ceil_mode` the output "
    # "size rounds up, and windows that start inside the padded input are kept."
    # " The input may also be a blocked image, `N x C/B x H x W x B` with "
    # "`B` = 8 or 16 (see `kiln-blocked-layout`), pooled over its rows and columns alike; "
    # "such a pool has no gradient rule."
    # "\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, "
    # "pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}"
    # " : (tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32>\n```\n";
  let arguments = !con((ins Kiln_FloatTensor:$input,
                        DenseI64ArrayAttr:$kernel_shape,
                        DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                        DenseI64ArrayAttr:$dilations,
                        DefaultValuedAttr<BoolAttr, "false">:$ceil_mode),
                       extra);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool", "MaxPool", "maximum", (ins)>;
def Kiln_AveragePoolOp : Kiln_PoolOp<"average_pool", "AveragePool", "mean",
    (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad)>;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Kiln_ReduceOp<string mnemonic, string onnx, string what,
                    Type type = Kiln_NumericTensor, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([InferTypeOpAdaptor], traits)> {
  let summary = "Reduces by " # what # " over `axes` (ONNX " # onnx # ")";
  let description = "Reduces `input` by " # what # " over the dimensions in "
    # "`axes` (sorted, unique, non-negative). With `keepdims` the reduced "
    # "dimensions stay as size 1."
    # "\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {axes = array<i64: 1>, keepdims = false}"
    # " : (tensor<4x8xf32>) -> tensor<4xf32>\n```\n";
  let arguments = (ins type:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs type:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "ReduceSum", "sum", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "ReduceMean", "mean", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "ReduceMax", "maximum", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "ReduceMin", "minimum", Kiln_NumericTensor, [Kiln_Differentiable]>;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "ReduceProd", "product">;
def Kiln_ReduceL1Op : Kiln_ReduceOp<"reduce_l1", "ReduceL1", "sum of |x|">;
def Kiln_ReduceL2Op : Kiln_ReduceOp<"reduce_l2", "ReduceL2",
                                    "sqrt(sum of x^2)", Kiln_FloatTensor>;
def Kiln_ReduceSumSquareOp : Kiln_ReduceOp<"reduce_sum_square",
                                           "ReduceSumSquare", "sum of x^2">;
def Kiln_ReduceLogSumOp : Kiln_ReduceOp<"reduce_log_sum", "ReduceLogSum",
                                        "ln(sum of x)", Kiln_FloatTensor>;
def Kiln_ReduceLogSumExpOp : Kiln_ReduceOp<"reduce_log_sum_exp",
    "ReduceLogSumExp", "ln(sum of e^x)", Kiln_FloatTensor>;

class Kiln_ArgReduceOp<string mnemonic, string onnx, string what>
    : Kiln_Op<mnemonic, [InferTypeOpAdaptor]> {
  let summary = "Index of the " # what # " along `axis` (ONNX " # onnx # ")";
  let description = "Yields the index of the " # what # " element along "
    # "`axis`; ties go to the first index, or the last with "
    # "`select_last_index`."
    # "\n\n```mlir\n%i = kiln." # mnemonic
    # " %x {axis = 1 : i64, keepdims = true}"
    # " : (tensor<4x8xf32>) -> tensor<4x1xi64>\n```\n";
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs Kiln_I64Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_ArgMaxOp : Kiln_ArgReduceOp<"argmax", "ArgMax", "largest">;
def Kiln_ArgMinOp : Kiln_ArgReduceOp<"argmin", "ArgMin", "smallest">;

def Kiln_TopKOp : Kiln_Op<"topk", [InferTypeOpAdaptor]> {
  let summary = "Indices of the k largest or smallest elements along `axis` (ONNX TopK)";
  let description = [{
    Along `axis`, yields the indices of the `k` largest elements (the
    smallest with `largest = false`) in order, best first; the values are a
    `kiln.gather_elements` by these indices. Equal elements keep their
    order: the lower index comes first. NaN counts as larger than every
    number (as in NumPy's sort). The result's `axis` dimension is `k`, which
    must be between 1 and the input's extent.

    ```mlir
    %i = kiln.topk %x {axis = 1 : i64, k = 3 : i64} : (tensor<2x10xf32>) -> tensor<2x3xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis, I64Attr:$k,
                   DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs Kiln_I64Tensor:$indices);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

class Kiln_SoftmaxLikeOp<string mnemonic, string onnx, string formula>
    : Kiln_Op<mnemonic, [SameOperandsAndResultType, Kiln_Differentiable]> {
  let summary = formula # " along one axis (ONNX " # onnx # ", opset 13)";
  let description = "Computes `" # formula # "` along `axis`, subtracting "
    # "the maximum first so large inputs do not overflow."
    # "\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {axis = 1 : i64} : tensor<4x10xf32>\n```\n";
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Kiln_SoftmaxOp
    : Kiln_SoftmaxLikeOp<"softmax", "Softmax", "e^x / sum(e^x)">;
def Kiln_LogSoftmaxOp
    : Kiln_SoftmaxLikeOp<"log_softmax", "LogSoftmax", "x - ln(sum(e^x))">;

def Kiln_BatchNormOp : Kiln_Op<"batch_norm", [InferTypeOpAdaptor]> {
  let summary = "Batch normalization for inference (ONNX BatchNormalization)";
  let description = [{
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, where the per-channel
    operands broadcast along dimension 1 of `input`. `momentum` (ONNX's:
    the running statistics keep that share of their value at each update)
    matters only in a train step, where `kiln-train-step` normalizes with the
    batch's statistics and updates `mean` and `variance` as state. With
    `training` (ONNX's `training_mode`) the op normalizes with the batch's
    mean and (biased) variance instead of `mean` and `variance` everywhere.

    ```mlir
    %y = kiln.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Kiln_FloatTensor:$bias, Kiln_FloatTensor:$mean,
                   Kiln_FloatTensor:$variance,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                   DefaultValuedAttr<F32Attr, "0.9">:$momentum,
                   DefaultValuedAttr<BoolAttr, "false">:$training);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_BatchNormTrainingOp : Kiln_Op<"batch_norm_training",
    [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Batch normalization with the batch's statistics, in a train step";
  let description = [{
    `(x - m) / sqrt(v + epsilon) * scale + bias`, where `m` and `v` are the
    mean and the biased variance of `input` over every dimension but the
    channels (dimension 1), and the per-channel `scale` and `bias`
    broadcast along dimension 1. Also yields `m` and `v` as `mean` and
    `variance`, one element per channel, for the running statistics.
    `kiln-train-step` makes one of each BatchNormalization it trains, so
    that the gradient is the closed form (two sums per channel and one
    elementwise pass) rather than the chain rule through the statistics;
    `kiln-decompose` expands it after differentiation.

    ```mlir
    %y, %mean, %var = kiln.batch_norm_training %x, %scale, %bias {epsilon = 1.0e-05 : f32}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Kiln_FloatTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs Kiln_FloatTensor:$output, Kiln_FloatTensor:$mean,
                 Kiln_FloatTensor:$variance);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Layer normalization over trailing axes (ONNX LayerNormalization)";
  let description = [{
    Normalizes over the dimensions from `axis` to the last: `(x - mean) *
    inv_std_dev * scale + bias` with `inv_std_dev = 1 / sqrt(var + epsilon)`.
    Also yields `mean` and `inv_std_dev`, shaped like `input` with the
    normalized dimensions set to 1. `scale` and the optional `bias`
    broadcast to the normalized dimensions.

    ```mlir
    %y, %mean, %rstd = kiln.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Optional<Kiln_FloatTensor>:$bias, I64Attr:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs Kiln_FloatTensor:$output, Kiln_FloatTensor:$mean,
                 Kiln_FloatTensor:$inv_std_dev);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Data movement and shape manipulation
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Kiln_Differentiable]> {
  let summary = "Reinterprets the shape, keeping row-major order (ONNX Reshape)";
  let description = [{
    The result type gives the new shape; it must hold as many elements as
    the input. ONNX's `0` and `-1` in the shape are resolved at import.

    ```mlir
    %y = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_SqueezeOp : Kiln_Op<"squeeze", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Removes size-1 dimensions listed in `axes` (ONNX Squeeze)";
  let description = [{
    A reshape that drops the size-1 dimensions in `axes`; canonicalization
    turns it into `kiln.reshape`.

    ```mlir
    %y = kiln.squeeze %x {axes = array<i64: 0, 2>} : (tensor<1x3x1xf32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Kiln_UnsqueezeOp : Kiln_Op<"unsqueeze", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Inserts size-1 dimensions at `axes` (ONNX Unsqueeze)";
  let description = [{
    `axes` index the result. Canonicalization turns it into `kiln.reshape`.

    ```mlir
    %y = kiln.unsqueeze %x {axes = array<i64: 0, 2>} : (tensor<3xf32>) -> tensor<1x3x1xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Kiln_FlattenOp : Kiln_Op<"flatten", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Collapses to a matrix split at `axis` (ONNX Flatten)";
  let description = [{
    The result is `prod(d[0:axis]) x prod(d[axis:])`. Canonicalization turns
    it into `kiln.reshape`.

    ```mlir
    %y = kiln.flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Permutes dimensions (ONNX Transpose)";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.

    ```mlir
    %y = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Joins tensors along `axis` (ONNX Concat)";
  let description = [{
    All inputs agree on every dimension but `axis`.

    ```mlir
    %z = kiln.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Kiln_Differentiable]> {
  let summary = "Strided window of a tensor (ONNX Slice)";
  let description = [{
    Result element `i` (per dimension) is input element `start + i * step`;
    the result type gives the number of elements taken per dimension, and
    `step` may be negative. ONNX's clamping of `starts`/`ends` is resolved
    at import, so every index read is in bounds.

    ```mlir
    %y = kiln.slice %x {start = array<i64: 0, 3>, step = array<i64: 1, -1>} : tensor<2x4xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$step);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [InferTypeOpAdaptor, Kiln_Differentiable]> {
  let summary = "Picks slices along `axis` by index (ONNX Gather)";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`. Negative indices count from the end.

    ```mlir
    %y = kiln.gather %emb, %ids {axis = 0 : i64} : (tensor<1000x64xf32>, tensor<8x16xi64>) -> tensor<8x16x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements", [InferTypeOpAdaptor]> {
  let summary = "Picks elements along `axis` by index, element by element (ONNX GatherElements)";
  let description = [{
    `indices` has the rank of `data`, and the result has the shape of
    `indices`: result[i0, .., iA, .., iR] = data[i0, .., indices[i0, .., iA,
    .., iR], .., iR] for A = `axis`. Along the other dimensions `indices`
    may be shorter than `data`, never longer. Negative indices count from
    the end.

    ```mlir
    %y = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   I64Attr:$axis);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ExpandOp : Kiln_Op<"expand", [Kiln_Differentiable]> {
  let summary = "Broadcasts to a larger shape (ONNX Expand)";
  let description = [{
    The result type, NumPy-broadcast-compatible with the input, gives the
    shape.

    ```mlir
    %y = kiln.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TriluOp : Kiln_Op<"trilu", [SameOperandsAndResultType]> {
  let summary = "Keeps the upper or lower triangle of the last two dims (ONNX Trilu)";
  let description = [{
    With `upper`, keeps elements with `col - row >= k`; otherwise elements
    with `col - row <= k`. Others become zero.

    ```mlir
    %y = kiln.trilu %x {upper = true, k = 0 : i64} : tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$upper,
                   DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Kiln_GatherNDOp : Kiln_Op<"gather_nd", [InferTypeOpAdaptor]> {
  let summary = "Picks slices by multi-dimensional index (ONNX GatherND)";
  let description = [{
    The last dimension of `indices`, k long, holds coordinates into the
    dimensions of `data` after its first `batch_dims`, which `indices`
    shares. The result shape is `indices.shape[:-1] +
    data.shape[batch_dims + k:]`. Negative coordinates count from the end.

    ```mlir
    %y = kiln.gather_nd %x, %i : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements", [InferTypeOpAdaptor]> {
  let summary = "Writes updates into a copy of data along `axis`, element by element (ONNX ScatterElements)";
  let description = [{
    `indices` and `updates` have one shape, of the rank of `data`: the
    update at position p goes to `data`'s position p with its `axis`
    coordinate replaced by `indices[p]` (negative counts from the end).
    Where several updates meet one position, `reduction` combines them with
    the data: `none` (the last update wins), `add`, `mul`, `max` or `min`.
    An index outside the data writes nothing.

    ```mlir
    %y = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                   I64Attr:$axis, DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd", [InferTypeOpAdaptor]> {
  let summary = "Writes slices into a copy of data at multi-dimensional indices (ONNX ScatterND)";
  let description = [{
    The last dimension of `indices`, k long, holds coordinates into the
    first k dimensions of `data`; `updates` has the shape
    `indices.shape[:-1] + data.shape[k:]` and holds the slice written at
    each. Where several slices meet, `reduction` combines them as in
    `kiln.scatter_elements`. An index outside the data writes nothing.

    ```mlir
    %y = kiln.scatter_nd %x, %i, %u : (tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, Kiln_Tensor:$updates,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_EinsumOp : Kiln_Op<"einsum", [InferTypeOpAdaptor]> {
  let summary = "Sums of products named by an index equation (ONNX Einsum)";
  let description = [{
    `equation` names each operand's dimensions with letters (and `...` for
    leading dimensions that broadcast), then after `->` the result's; without
    `->`, the result takes the ellipsis dimensions, then the letters used
    once, in alphabetical order. Letters missing from the result are summed
    over; a letter repeated in one operand reads its diagonal.

    ```mlir
    %y = kiln.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_NumericTensor>:$inputs, StrAttr:$equation);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
}

def Kiln_PadOp : Kiln_Op<"pad", [InferTypeOpAdaptor]> {
  let summary = "Pads, or with negative amounts crops, each dimension (ONNX Pad)";
  let description = [{
    `pads` holds the amounts added before each dimension, then those added
    after each (negative amounts remove elements). `mode` says what the new
    elements hold:

    * `constant`: `value` (a scalar of the element type; zero without it);
    * `edge`: the nearest element of the input;
    * `reflect`: the input mirrored about its first and last elements (at
      most `size - 1` added on a side);
    * `wrap`: the input repeated, as if the dimension were a circle.

    ```mlir
    %y = kiln.pad %x {pads = array<i64: 0, 1, 0, 2>, mode = "reflect"} : tensor<3x4xf32> -> tensor<3x7xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_Tensor>:$value,
                   DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<StrAttr, "\"constant\"">:$mode);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat =
    "$input (`,` $value^ `:` type($value))? attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Kiln_ResizeOp : Kiln_Op<"resize"> {
  let summary = "Resamples the input to the result's shape (ONNX Resize, Upsample)";
  let description = [{
    Result element `i` along dimension `d` is read from input coordinate
    `x = f(i)` given by `coordinate_mode` and `scales[d]` (result size over
    input size, as the model gave it):

    * `half_pixel`: `(i + 0.5) / scale - 0.5`;
    * `half_pixel_symmetric`: the same, shifted so the result is centred;
    * `pytorch_half_pixel`: as `half_pixel`, but 0 when the result is 1 long;
    * `align_corners`: `i * (in - 1) / (out - 1)`;
    * `asymmetric`: `i / scale`;
    * `tf_half_pixel_for_nn`: `(i + 0.5) / scale`;
    * `tf_crop_and_resize`: within `roi` (normalized starts, then ends),
      `extrapolation_value` outside the input.

    `mode` says how the input is read there: `nearest` (rounded as
    `nearest_mode` says: `round_prefer_floor`, `round_prefer_ceil`,
    `floor`, `ceil`), `linear` (2 neighbours per resized dimension) or
    `cubic` (4, with coefficient `cubic_coeff_a`; with `exclude_outside`
    the weights of neighbours outside the input are dropped and the rest
    renormalized). Neighbours beyond the edges repeat the edge.

    ```mlir
    %y = kiln.resize %x {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x3x8x8xf32> -> tensor<1x3x16x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseF64ArrayAttr:$scales,
                   DefaultValuedAttr<StrAttr, "\"nearest\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"half_pixel\"">:$coordinate_mode,
                   DefaultValuedAttr<StrAttr, "\"round_prefer_floor\"">:$nearest_mode,
                   DefaultValuedAttr<F64Attr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                   DefaultValuedAttr<F64Attr, "0.0">:$extrapolation_value,
                   OptionalAttr<DenseF64ArrayAttr>:$roi);
  let results = (outs Kiln_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Kiln_GridSampleOp : Kiln_Op<"grid_sample", [InferTypeOpAdaptor]> {
  let summary = "Samples the input at the positions a grid gives (ONNX GridSample)";
  let description = [{
    `input` is [N, C, H, W] and `grid` [N, Ho, Wo, 2], whose last dimension
    holds (x, y) positions normalized to [-1, 1] (the centres of the corner
    pixels with `align_corners`, their outer edges without); the result is
    [N, C, Ho, Wo]. `mode` reads the input there: `nearest` (halves to
    even), `bilinear` or `bicubic` (coefficient -0.75). `padding_mode`
    says what lies outside: `zeros`, `border` (the edge repeated) or
    `reflection` (the input mirrored).

    ```mlir
    %y = kiln.grid_sample %x, %g {mode = "bilinear", padding_mode = "zeros"} : (tensor<1x3x8x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$grid,
                   DefaultValuedAttr<StrAttr, "\"bilinear\"">:$mode,
                   DefaultValuedAttr<StrAttr, "\"zeros\"">:$padding_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$align_corners);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat =
    "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_CumSumOp : Kiln_Op<"cumsum", [SameOperandsAndResultType]> {
  let summary = "Running sums along `axis` (ONNX CumSum)";
  let description = [{
    Result element `i` along `axis` is the sum of input elements `0..i`;
    with `exclusive`, of `0..i-1` (0 for the first); with `reverse`, the
    sums run from the end instead.

    ```mlir
    %y = kiln.cumsum %x {axis = 1 : i64, reverse = true} : tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Kiln_NumericTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Kiln_FusionKind : I32EnumAttr<"FusionKind", "what a fusion's kernel is built around", [
    I32EnumAttrCase<"Loop", 0, "loop">,
    I32EnumAttrCase<"Input", 1, "input">,
    I32EnumAttrCase<"Output", 2, "output">,
    I32EnumAttrCase<"Single", 3, "single">]> {
  let cppNamespace = "::kiln";
}

def Kiln_FusionOp : Kiln_Op<"fusion", [IsolatedFromAbove, SingleBlock]> {
  let summary = "A group of kiln ops compiled into one kernel";
  let description = [{
    The body computes the results from the block arguments, which stand for
    `inputs`; it sees nothing else (the op is isolated from above), so a
    fusion can be compiled on its own. `kind` names the kernel shape the back
    ends build:

    * `loop`: elementwise ops, broadcasts, reshapes, transposes and casts:
      one loop nest over the result;
    * `input`: reductions together with the elementwise ops that feed them
      and the ops that use their results over the same rows (softmax, layer
      normalization): one loop over the kept dimensions;
    * `output`: a contraction (matmul, convolution) with the elementwise
      epilogue that consumes its result (bias, activation, residual add),
      applied to each tile of the result while it is in cache;
    * `single`: one op the fusion rules do not merge (pooling, gathers,
      concatenation), still compiled as its own kernel.

    A fusion with several results is a multi-output (sibling) fusion: its
    members read the same inputs once. Fusions are formed by `kiln-fuse`.

    ```mlir
    %y = kiln.fusion loop (%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%x: tensor<4xf32>, %z: tensor<4xf32>):
      %s = kiln.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %r = kiln.relu %s : tensor<4xf32>
      kiln.yield %r : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, Kiln_FusionKind:$kind);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::TypeRange":$resultTypes, "::mlir::ValueRange":$inputs,
                   "FusionKind":$kind)>
  ];
  let extraClassDeclaration = [{
    /// The terminator's operands, one per result.
    YieldOp getYield();
  }];
}

def Kiln_YieldOp : Kiln_Op<"yield", [Terminator, ReturnLike, HasParent<"FusionOp">]> {
  let summary = "Returns a fusion's results";
  let description = [{
    ```mlir
    kiln.yield %r : tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Transfers between devices
//===----------------------------------------------------------------------===//

def Kiln_SendOp : Kiln_Op<"send", [MemoryEffects<[MemWrite]>]> {
  let summary = "Hands a tensor to another device's partition";
  let description = [{
    Made by `kiln-partition` where a tensor computed on one device is used on
    another: the producing device's function sends it once per destination
    device, and the destination's function has the matching `kiln.recv`
    (same `tensor_name`, `send_device` and `recv_device`). Sending never
    waits for the receiver, so partitions that each follow the graph's order
    cannot deadlock. Device names are full TensorFlow-style strings.

    ```mlir
    kiln.send %h {tensor_name = "fc1:0",
                  send_device = "/job:localhost/replica:0/task:0/device:CPU:0",
                  recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"}
        : tensor<64x1024xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$value, StrAttr:$tensor_name, StrAttr:$send_device,
                       StrAttr:$recv_device);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Kiln_RecvOp : Kiln_Op<"recv", [MemoryEffects<[MemRead]>]> {
  let summary = "Receives a tensor sent by another device's partition";
  let description = [{
    The result is the tensor the matching `kiln.send` (same `tensor_name`,
    `send_device` and `recv_device`) handed over; it waits until it arrives.

    ```mlir
    %h = kiln.recv {tensor_name = "fc1:0",
                    send_device = "/job:localhost/replica:0/task:0/device:CPU:0",
                    recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"}
        : tensor<64x1024xf32>
    ```
  }];
  let arguments = (ins StrAttr:$tensor_name, StrAttr:$send_device, StrAttr:$recv_device);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives among data-parallel replicas
//===----------------------------------------------------------------------===//

// Collectives talk to the other replicas: they are never removed, merged,
// hoisted or reordered with each other.
class Kiln_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, !listconcat([MemoryEffects<[MemRead, MemWrite]>], traits)>;

def Kiln_AllReduceOp : Kiln_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "Sums a tensor over the replicas of a data-parallel step";
  let description = [{
    Every replica runs the same step on its own shard of the batch; the
    result, on each replica, is the elementwise sum of `input` over all of
    them. `kiln-train-step` with `data-parallel` sums each gradient (and the
    loss) this way; `kiln-bucket-all-reduce` then groups them into buckets of
    `kiln.all_reduce_start` and `kiln.all_reduce_wait`, which is the form
    code generation takes.

    ```mlir
    %sum = kiln.all_reduce %grad : tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Kiln_AllReduceStartOp : Kiln_CollectiveOp<"all_reduce_start", [SameOperandsAndResultType]> {
  let summary = "Starts summing a bucket over the replicas";
  let description = [{
    Hands the flat `input` to the run time, which sums it over the replicas
    in place while the step goes on; the result is the bucket in flight,
    which only the `kiln.all_reduce_wait` of the same `bucket` may read.
    Every replica starts its buckets in the same order (they run the same
    code), which is the order the run time reduces them in. A step without
    replicas (world size 1) leaves the bucket as it is.

    ```mlir
    %flight = kiln.all_reduce_start %flat {bucket = 0 : i64} : tensor<650xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket);
  let results = (outs 1DTensorOf<[F32]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Kiln_AllReduceWaitOp : Kiln_CollectiveOp<"all_reduce_wait", [SameOperandsAndResultType]> {
  let summary = "Waits for a bucket's sum over the replicas";
  let description = [{
    `input` is the result of the `kiln.all_reduce_start` of the same
    `bucket`; the result is the bucket summed over the replicas.

    ```mlir
    %sum = kiln.all_reduce_wait %flight {bucket = 0 : i64} : tensor<650xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket);
  let results = (outs 1DTensorOf<[F32]>:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Kiln_ReplicaRankOp : Kiln_CollectiveOp<"replica_rank"> {
  let summary = "This replica's rank among the replicas running the step, known at run time";
  let description = [{
    0 to the world size - 1 (0 without replicas). A data-parallel step
    offsets its dropouts' element indices by it, so that each replica draws
    the masks of its own rows of the whole batch.

    ```mlir
    %r = kiln.replica_rank : tensor<i64>
    ```
  }];
  let results = (outs 0DTensorOf<[I64]>:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
}

def Kiln_WorldSizeOp : Kiln_CollectiveOp<"world_size"> {
  let summary = "The number of replicas running the step, known at run time";
  let description = [{
    The world size the run time set for this step (1 without replicas), as
    an f32 scalar: a data-parallel step scales its summed gradients by its
    inverse, so one artifact runs on any number of replicas.

    ```mlir
    %n = kiln.world_size : tensor<f32>
    ```
  }];
  let results = (outs 0DTensorOf<[F32]>:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
}

#endif // KILN_OPS_TD
