// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{trainable=fc\..*},canonicalize)' | FileCheck %s --check-prefix=SGD
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{optimizer=adam ema-decay=0.99},canonicalize)' | FileCheck %s --check-prefix=ADAM
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{optimizer=nesterov momentum=0.5 lr-schedule=exponential decay-steps=10 decay-rate=0.5 staircase=true clip-norm=1.0},canonicalize)' | FileCheck %s --check-prefix=NESTEROV
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{loss=mse},canonicalize)' | FileCheck %s --check-prefix=MSE
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{trainable=fc\..* gradient-outputs=true},canonicalize)' | FileCheck %s --check-prefix=GRAD

// Trainable initializers become state arguments; the step gains labels and a
// step counter, and returns the loss, the model's outputs and the new state
// under the same names. Untrained initializers stay constants.
// SGD-LABEL: func.func @main
// SGD-SAME: %[[X:[^:]*]]: tensor<8x4xf32> {kiln.name = "x"}
// SGD-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {kiln.name = "fc.weight", kiln.state = "parameter"}
// SGD-SAME: %[[B:[^:]*]]: tensor<3xf32> {kiln.name = "fc.bias", kiln.state = "parameter"}
// SGD-SAME: %[[LABELS:[^:]*]]: tensor<8xi64> {kiln.name = "labels"}
// SGD-SAME: %[[STEP:[^:]*]]: tensor<i64> {kiln.name = "step", kiln.state = "step"})
// SGD-SAME: -> (tensor<f32> {kiln.name = "loss"}, tensor<f32> {kiln.name = "learning_rate"}, tensor<8x3xf32> {kiln.name = "logits"},
// SGD-SAME: tensor<4x3xf32> {kiln.name = "fc.weight", kiln.state = "parameter"}, tensor<3xf32> {kiln.name = "fc.bias", kiln.state = "parameter"},
// SGD-SAME: tensor<i64> {kiln.name = "step", kiln.state = "step"})
// SGD-DAG: kiln.constant dense<2.000000e+00> : tensor<8x3xf32>
// SGD-DAG: %[[LR:.*]] = kiln.constant dense<0.00999999977> : tensor<f32>
// SGD: %[[HOT:.*]] = kiln.equal
// SGD: %[[LOGP:.*]] = kiln.log_softmax
// SGD: %[[DW:.*]] = kiln.matmul
// SGD: %[[STEPW:.*]] = kiln.mul %[[DW]], %[[LR]]
// SGD: %[[NEWW:.*]] = kiln.sub %[[W]], %[[STEPW]]
// SGD: %[[NEWB:.*]] = kiln.sub %[[B]],
// SGD: %[[NEXT:.*]] = kiln.add %[[STEP]],
// SGD: return %{{.*}}, %[[LR]], %{{.*}}, %[[NEWW]], %[[NEWB]], %[[NEXT]]

// With gradient-outputs, each weight's gradient follows the model's outputs,
// and is the value the update subtracts.
// GRAD-LABEL: func.func @main
// GRAD-SAME: tensor<8x3xf32> {kiln.name = "logits"}, tensor<4x3xf32> {kiln.name = "gradient/fc.weight"}, tensor<3xf32> {kiln.name = "gradient/fc.bias"},
// GRAD-SAME: tensor<4x3xf32> {kiln.name = "fc.weight", kiln.state = "parameter"}
// GRAD: kiln.matmul
// GRAD: %[[DW:.*]] = kiln.matmul
// GRAD: %[[STEPW:.*]] = kiln.mul %[[DW]],
// GRAD: return %{{.*}}, %{{.*}}, %{{.*}}, %[[DW]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}

// Adam keeps two moments per weight and corrects their bias with the
// 1-based step; the moving average starts from the weights.
// ADAM-LABEL: func.func @main
// ADAM-SAME: {kiln.name = "adam_m/fc.weight", kiln.state = "adam_m"}
// ADAM-SAME: {kiln.name = "adam_v/fc.weight", kiln.state = "adam_v"}
// ADAM-SAME: {kiln.name = "ema/fc.weight", kiln.state = "ema"}
// ADAM: kiln.sqrt
// ADAM: kiln.pow
// ADAM: return

// Nesterov with clipping: the global norm is the square root of the
// summed squares of every gradient.
// NESTEROV-LABEL: func.func @main
// NESTEROV-SAME: kiln.state = "momentum"
// NESTEROV: kiln.floor
// NESTEROV: kiln.pow
// NESTEROV: %[[NORM:.*]] = kiln.sqrt
// NESTEROV: kiln.max %[[NORM]]

// MSE labels have the output's type.
// MSE-LABEL: func.func @main
// MSE-SAME: tensor<8x3xf32> {kiln.name = "labels"}
func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}) -> (tensor<8x3xf32> {kiln.name = "logits"}) {
  %w = kiln.constant dense<0.5> : tensor<4x3xf32> loc("initializer 'fc.weight'")
  %b = kiln.constant dense<0.1> : tensor<3xf32> loc("initializer 'fc.bias'")
  %s = kiln.constant dense<2.0> : tensor<8x3xf32> loc("initializer 'scale'")
  %y = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = kiln.add %y, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %o = kiln.mul %z, %s : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %o : tensor<8x3xf32>
}
