/* GPU artifacts with real GPU code for RealGpuTest.cpp: the hand-written real_kernels.ptx, embedded
 * with .incbin (KILN_REAL_PTX_PATH), and where the build found ptxas a cubin made from it
 * (KILN_REAL_CUBIN_PATH). KILN_REAL_GPU_FAULT selects the variant whose kernel faults. */
#include "real_gpu_constants.h"

#include <stdint.h>

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

/* Embeds the file at `path` as the data symbol `name`, sized in the symbol table; `terminator`
 * appends a NUL byte for text. */
#define KILN_EMBED(name, path, terminator)                                                         \
  __asm__(".section .rodata\n"                                                                     \
          ".global " #name "\n"                                                                    \
          ".type " #name ", @object\n"                                                             \
          ".balign 256\n" #name ":\n"                                                              \
          ".incbin \"" path "\"\n" terminator ".size " #name ", . - " #name "\n"                   \
          ".previous\n")

KILN_EMBED(kiln_cuda_ptx, KILN_REAL_PTX_PATH, ".byte 0\n");
#ifdef KILN_REAL_CUBIN_PATH
KILN_EMBED(kiln_cuda_cubin_sm_90, KILN_REAL_CUBIN_PATH, "");
#define CUBINS "cuda-cubin sm_90\n"
#else
#define CUBINS ""
#endif

const char kiln_manifest[] =
    "kiln-artifact 1\n"
    "name real_gpu\n"
    "target x86_64-unknown-linux-gnu\n"
    "cpu generic\n"
    "features\n"
    "devices cuda\n" CUBINS
    "cuda-ptx compute_80 7.8\n"
    "cuda-min-driver 11080\n"
    "input a f32 1024\n"
    "input b f32 1024\n"
    "input x f32 64x96\n"
    "input xt f32 3x96x64\n"
    "input addend f32 3x64x48\n"
    "input h f16 2x64x96\n"
    "input hw f16 2x96x48\n"
    "input g bf16 64x96\n"
    "input gw bf16 48x96\n"
    "output sum f32 1024\n"
    "output sum2 f32 1024\n"
    "output y1 f32 64x48\n"
    "output y2 f32 3x64x48\n"
    "output y3 f16 2x64x48\n"
    "output y4 bf16 64x48\n";

/* sum = a + b; sum2 = sum + bias (with 64 KiB of dynamic shared memory, which needs the opt-in),
 * through the arena; y1 = relu(x . W + wbias); y2[b] = xt[b]^T . W + addend[b] in TF32, W given
 * transposed; y3[b] = relu(h[b] . hw[b] + hbias) in f16; y4 = g . gw^T in bf16. */
const char kiln_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 4096\n"
    "constants " KILN_STR(KILN_REAL_CONSTANT_BYTES) "\n"
    "launch kernel=kiln_real_add grid=4,1,1 block=256,1,1 shared=0 args=in:0,in:1,out:0 node=Add\n"
    "launch kernel=kiln_real_add grid=4,1,1 block=256,1,1 shared=65536 args=out:0,const:0,arena:0 node=AddBias\n"
#ifdef KILN_REAL_GPU_FAULT
    "launch kernel=kiln_real_fault grid=1,1,1 block=1,1,1 shared=0 args= node=Fault\n"
#endif
    "copy dst=out:1 src=arena:0 bytes=4096 node=Copy\n"
    "matmul dtype=f32 math=f32 batch=1 m=64 n=48 k=96 lhs=in:2 lhs_t=0 lhs_batched=0 rhs=const:" KILN_STR(
        KILN_REAL_W_OFFSET) " rhs_t=0 rhs_batched=0 out=out:2 bias=const:" KILN_STR(KILN_REAL_WBIAS_OFFSET) " "
    "addend=- epilogue=relu node=Gemm\n"
    "matmul dtype=f32 math=tf32 batch=3 m=64 n=48 k=96 lhs=in:3 lhs_t=1 lhs_batched=1 rhs=const:" KILN_STR(
        KILN_REAL_WT_OFFSET) " rhs_t=1 rhs_batched=0 out=out:3 bias=- addend=in:4 epilogue=none node=BatchedGemm\n"
    "matmul dtype=f16 math=f32 batch=2 m=64 n=48 k=96 lhs=in:5 lhs_t=0 lhs_batched=1 rhs=in:6 rhs_t=0 "
    "rhs_batched=1 out=out:4 bias=const:" KILN_STR(KILN_REAL_HBIAS_OFFSET) " addend=- epilogue=relu node=HalfGemm\n"
    "matmul dtype=bf16 math=f32 batch=1 m=64 n=48 k=96 lhs=in:7 lhs_t=0 lhs_batched=0 rhs=in:8 rhs_t=1 "
    "rhs_batched=0 out=out:5 bias=- addend=- epilogue=none node=BfloatGemm\n";

/* Filled when the artifact loads, before the runtime uploads it, from the formulas the test shares. */
__attribute__((aligned(256))) unsigned char kiln_cuda_constants[KILN_REAL_CONSTANT_BYTES];

__attribute__((constructor)) static void kiln_real_fill_constants(void) { kilnRealFillConstants(kiln_cuda_constants); }
