// RUN: kiln-opt %s -split-input-file -kiln-static-arena -verify-diagnostics

// An arena must have a static size to become a global.
func.func @dynamic(%n: index) {
  // expected-error @+1 {{kiln-static-arena: the arena must have a static size}}
  %arena = memref.alloc(%n) {alignment = 64 : i64, kiln.arena} : memref<?xi8>
  return
}
