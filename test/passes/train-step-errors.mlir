// Every option and model error of kiln-train-step, each naming what is wrong.
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{optimizer=rmsprop})' 2>&1 | FileCheck %s --check-prefix=OPTIMIZER
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{learning-rate=0})' 2>&1 | FileCheck %s --check-prefix=RATE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{momentum=1.5 optimizer=momentum})' 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{lr-schedule=cosine})' 2>&1 | FileCheck %s --check-prefix=COSINE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{lr-schedule=linear})' 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{loss=hinge})' 2>&1 | FileCheck %s --check-prefix=LOSS
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{loss-output=probs})' 2>&1 | FileCheck %s --check-prefix=OUTPUT
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{trainable=conv.*})' 2>&1 | FileCheck %s --check-prefix=TRAINABLE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{trainable=[})' 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{labels=x})' 2>&1 | FileCheck %s --check-prefix=LABELS
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{loss=output})' 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{loss-output=hidden})' 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(kiln-train-step{ema-decay=1})' 2>&1 | FileCheck %s --check-prefix=EMA

// OPTIMIZER: error: kiln-train-step: unknown optimizer 'rmsprop' (sgd, momentum, nesterov, adam, adamw)
// RATE: error: kiln-train-step: learning-rate must be positive, got 0
// MOMENTUM: error: kiln-train-step: momentum must be in [0, 1), got 1.5
// COSINE: error: kiln-train-step: the cosine schedule needs total-steps > 0
// SCHEDULE: error: kiln-train-step: unknown learning-rate schedule 'linear' (constant, exponential, step, cosine)
// LOSS: error: kiln-train-step: unknown loss 'hinge' (softmax-cross-entropy, mse, output)
// OUTPUT: error: kiln-train-step: the loss reads output 'probs', which the model does not have
// TRAINABLE: error: kiln-train-step: no float initializer matches trainable='conv.*'; nothing to train
// REGEX: error: kiln-train-step: trainable: invalid regular expression '['
// LABELS: error: kiln-train-step: the model already has an input named 'x'; name the labels input otherwise (labels=NAME)
// SCALAR: error: kiln-train-step: --loss=output needs output 'logits' to be a scalar loss, got 'tensor<8x3xf32>'
// RANK: error: kiln-train-step: softmax-cross-entropy reads logits of shape [batch, classes]; output 'hidden' is 'tensor<8x3x1xf32>'
// EMA: error: kiln-train-step: ema-decay must be in [0, 1), got 1
func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}) -> (tensor<8x3xf32> {kiln.name = "logits"}, tensor<8x3x1xf32> {kiln.name = "hidden"}) {
  %w = kiln.constant dense<0.5> : tensor<4x3xf32> loc("initializer 'fc.weight'")
  %y = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %h = kiln.reshape %y : tensor<8x3xf32> -> tensor<8x3x1xf32>
  return %y, %h : tensor<8x3xf32>, tensor<8x3x1xf32>
}
