// RUN: kiln-opt %s -split-input-file -kiln-vectorizable-math | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-vectorizable-math=ldexp=1 | FileCheck %s --check-prefix=LDEXP

// A row max: the maximum becomes LLVM's intrinsic (which the loop vectorizer
// reduces in vector lanes), reassociable like the sum, with -0 and +0
// unordered (nsz): NaNs still propagate.
// CHECK-LABEL: func.func @row_max_sum
// CHECK: llvm.intr.maximum(%{{.*}}, %{{.*}}) {fastmathFlags = #llvm.fastmath<nsz, contract, reassoc>} : (f32, f32) -> f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK-NOT: arith.maximumf
func.func @row_max_sum(%x: f32, %m: f32, %s: f32) -> (f32, f32) {
  %0 = arith.maximumf %m, %x : f32
  %1 = arith.addf %s, %x : f32
  return %0, %1 : f32, f32
}

// -----

// exp on f32: k = floor(x / ln2) on x clamped to [ln FLT_MIN, ln FLT_MAX],
// a degree-6 polynomial of the remainder, 2^k added to the exponent bits,
// then 0 below the range and +inf above it. minimum becomes the intrinsic.
// CHECK-LABEL: func.func @exp_min
// CHECK-NOT: math.exp
// CHECK-DAG: %[[LOW:.*]] = arith.constant -8.73365{{.*}} : f32
// CHECK-DAG: %[[HIGH:.*]] = arith.constant 88.7228{{.*}} : f32
// CHECK: %[[K:.*]] = math.floor
// CHECK: %[[R:.*]] = math.fma %[[K]]
// CHECK: %[[R2:.*]] = math.fma %[[K]], %{{.*}}, %[[R]]
// CHECK-COUNT-6: math.fma {{.*}}, %[[R2]]
// CHECK: %[[KI:.*]] = arith.fptosi %[[K]] : f32 to i32
// CHECK: arith.shli %[[KI]]
// CHECK: arith.addi
// CHECK: %[[E:.*]] = arith.bitcast {{.*}} : i32 to f32
// CHECK: arith.cmpf olt, %[[X:.*]], %[[LOW]]
// CHECK: arith.cmpf ogt, %[[X]], %[[HIGH]]
// CHECK: llvm.intr.minimum
// CHECK-NOT: math.exp
//
// With ldexp: x clamped to [-104, 89], k = round(x / ln2) from adding
// 1.5 * 2^23 (0x4B400000) and reading the low bits, a degree-5 polynomial,
// and llvm.ldexp by k; no selects after it.
// LDEXP-LABEL: func.func @exp_min
// LDEXP-SAME: (%[[X:.*]]: f32, %{{.*}}: f32)
// LDEXP-DAG: %[[LOW:.*]] = arith.constant -1.040000e+02 : f32
// LDEXP-DAG: %[[HIGH:.*]] = arith.constant 8.900000e+01 : f32
// LDEXP-DAG: %[[SHIFTER:.*]] = arith.constant 0x4B400000 : f32
// LDEXP-DAG: %[[SHIFTER_BITS:.*]] = arith.constant 1262485504 : i32
// LDEXP: %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[LOW]]
// LDEXP: %[[C1:.*]] = arith.select %[[BELOW]], %[[LOW]], %[[X]]
// LDEXP: %[[ABOVE:.*]] = arith.cmpf ogt, %[[C1]], %[[HIGH]]
// LDEXP: %[[C:.*]] = arith.select %[[ABOVE]], %[[HIGH]], %[[C1]]
// LDEXP: %[[T:.*]] = math.fma %[[C]], %{{.*}}, %[[SHIFTER]]
// LDEXP: %[[BITS:.*]] = arith.bitcast %[[T]] : f32 to i32
// LDEXP: %[[KI:.*]] = arith.subi %[[BITS]], %[[SHIFTER_BITS]]
// LDEXP: %[[K:.*]] = arith.sitofp %[[KI]] : i32 to f32
// LDEXP: %[[R1:.*]] = math.fma %[[K]], %{{.*}}, %[[C]]
// LDEXP: %[[R:.*]] = math.fma %[[K]], %{{.*}}, %[[R1]]
// LDEXP-COUNT-5: math.fma {{.*}}, %[[R]]
// LDEXP-NEXT: %[[E:.*]] = llvm.intr.ldexp(%{{.*}}, %[[KI]]) : (f32, i32) -> f32
// LDEXP-NEXT: llvm.intr.minimum(%[[E]]
func.func @exp_min(%x: f32, %y: f32) -> f32 {
  %0 = math.exp %x : f32
  %1 = arith.minimumf %0, %y : f32
  return %1 : f32
}

// -----

// Functions without an accurate approximation stay (later a libm call).
// CHECK-LABEL: func.func @acosh
// CHECK: math.acosh
func.func @acosh(%x: f32) -> f32 {
  %0 = math.acosh %x : f32
  return %0 : f32
}

// -----

// erf on f32: x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (Horner chains of
// seven and six coefficients), and +-1 once |x| >= 3.95.
// CHECK-LABEL: func.func @erf
// CHECK-NOT: math.erf
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-DAG: %[[MFOUR:.*]] = arith.constant -4.000000e+00 : f32
// CHECK: arith.cmpf olt, %[[X:.*]], %[[MFOUR]]
// CHECK: arith.cmpf ogt
// CHECK: %[[S:.*]] = arith.mulf
// CHECK-COUNT-6: math.fma {{.*}}, %[[S]]
// CHECK-COUNT-5: math.fma {{.*}}, %[[S]]
// CHECK: arith.divf
// CHECK: math.copysign
// CHECK: math.absf %[[X]]
// CHECK: arith.cmpf oge, {{.*}}, {{.*}} : f32
// CHECK: arith.select
// CHECK-NOT: math.erf
func.func @erf(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  return %0 : f32
}

// -----

// Other widths keep MLIR's approximation.
// CHECK-LABEL: func.func @erf_f64
// CHECK-NOT: math.copysign
// CHECK: math.erf
func.func @erf_f64(%x: f64) -> f64 {
  %0 = math.erf %x : f64
  return %0 : f64
}

// -----

// powf by a constant 2, 3 or 4 becomes multiplications, which vectorize;
// other exponents, and exponents computed at run time, stay libm's powf.
// CHECK-LABEL: func.func @small_whole_powers
// CHECK-SAME:    (%[[X:.*]]: f32, %[[E:.*]]: f32)
// CHECK-NOT:     math.powf %[[X]], %{{.*}} : f32
// CHECK:         %[[SQ2:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK:         %[[SQ3:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK:         %[[CUBE:.*]] = arith.mulf %[[SQ3]], %[[X]]
// CHECK:         %[[SQ4:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK:         %[[FOURTH:.*]] = arith.mulf %[[SQ4]], %[[SQ4]]
// CHECK:         %[[HALF:.*]] = math.powf %[[X]], %{{.*}} : f32
// CHECK:         %[[FIVE:.*]] = math.powf %[[X]], %{{.*}} : f32
// CHECK:         %[[RUNTIME:.*]] = math.powf %[[X]], %[[E]] : f32
// CHECK:         return %[[SQ2]], %[[CUBE]], %[[FOURTH]], %[[HALF]], %[[FIVE]], %[[RUNTIME]]
func.func @small_whole_powers(%x: f32, %e: f32) -> (f32, f32, f32, f32, f32, f32) {
  %c2 = arith.constant 2.0 : f32
  %c3 = arith.constant 3.0 : f32
  %c4 = arith.constant 4.0 : f32
  %half = arith.constant 0.5 : f32
  %c5 = arith.constant 5.0 : f32
  %p2 = math.powf %x, %c2 : f32
  %p3 = math.powf %x, %c3 : f32
  %p4 = math.powf %x, %c4 : f32
  %ph = math.powf %x, %half : f32
  %p5 = math.powf %x, %c5 : f32
  %pe = math.powf %x, %e : f32
  return %p2, %p3, %p4, %ph, %p5, %pe : f32, f32, f32, f32, f32, f32
}

// -----

// The same on vectors, by a splat constant.
// CHECK-LABEL: func.func @vector_cube
// CHECK-NOT:     math.powf
// CHECK:         %[[SQ:.*]] = arith.mulf %arg0, %arg0 {{.*}}: vector<8xf32>
// CHECK:         arith.mulf %[[SQ]], %arg0 {{.*}}: vector<8xf32>
func.func @vector_cube(%x: vector<8xf32>) -> vector<8xf32> {
  %c3 = arith.constant dense<3.0> : vector<8xf32>
  %p = math.powf %x, %c3 : vector<8xf32>
  return %p : vector<8xf32>
}
