//===- GradientInterface.h - Reverse-mode rules of kiln ops ---*- C++ -*-===//
#ifndef KILN_DIALECTS_KILN_GRADIENTINTERFACE_H
#define KILN_DIALECTS_KILN_GRADIENTINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/kiln/GradientInterface.h.inc"

#endif // KILN_DIALECTS_KILN_GRADIENTINTERFACE_H
