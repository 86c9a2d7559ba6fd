/* Stand-in GPU artifacts for the runtime tests, run by the fake driver (fake_cuda.c); -D switches
 * select the variant. The cubins are bare ELF headers followed by their architecture's name. */
#include "fake_gpu_constants.h"

#include <elf.h>
#include <stdint.h>

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

struct fake_cubin {
  Elf64_Ehdr header;
  char arch[16];
};
#define FAKE_CUBIN(arch)                                                                           \
  {{{ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT}, ET_EXEC, 190 /* EM_CUDA */, \
    EV_CURRENT, 0, 0, 0, 0, sizeof(Elf64_Ehdr), 0, 0, 0, 0, 0},                                    \
   arch}

#define HEADER(name)                                                                               \
  "kiln-artifact 1\n"                                                                              \
  "name " name "\n"                                                                                \
  "target x86_64-unknown-linux-gnu\n"                                                              \
  "cpu generic\n"                                                                                  \
  "features\n"

#if defined(KILN_FAKE_GPU_PARTITIONED)
/* A model partitioned over cpu:0, gpu:0 and gpu:1: t = 2a on cpu:0, u = t + b on gpu:0,
 * w = u + t on gpu:1 (u copied peer to peer), v = w + 1 on cpu:0, x = u + v on gpu:0 (u copied
 * on the device). The outputs are v = 4a + b + 1, u = 2a + b and x = 6a + 2b + 1. */
const char kiln_manifest[] = HEADER("fake_partitioned")
    "devices partitioned\n"
    "partition cpu:0 /job:localhost/replica:0/task:0/device:CPU:0\n"
    "partition gpu:0 /job:localhost/replica:0/task:0/device:GPU:0\n"
    "partition gpu:1 /job:localhost/replica:0/task:0/device:GPU:1\n"
    "stage 0 cpu:0 1 input:0 1 f32 2x3\n"
    "stage 1 gpu:0 2 stage:0:0 input:1 1 f32 2x3\n"
    "stage 2 gpu:1 2 stage:1:0 stage:0:0 1 f32 2x3\n"
    "stage 3 cpu:0 1 stage:2:0 1 f32 2x3\n"
    "stage 4 gpu:0 2 stage:1:0 stage:3:0 1 f32 2x3\n"
    "output-from stage:3:0\n"
    "output-from stage:1:0\n"
    "output-from stage:4:0\n"
    "cuda-cubin sm_90\n"
    "input a f32 2x3\n"
    "input b f32 2x3\n"
    "output v f32 2x3\n"
    "output u f32 2x3\n"
    "output x f32 2x3\n";
#define ADD_PROGRAM(node)                                                                          \
  "kiln-cuda-program 1\n"                                                                          \
  "arena 0\n"                                                                                      \
  "constants 0\n"                                                                                  \
  "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:1,out:0 node=" node "\n"
const char kiln_stage_1_cuda_program[] = ADD_PROGRAM("Add_on_gpu0");
const char kiln_stage_1_cuda_constants[1] = {0};
const struct fake_cubin kiln_stage_1_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
const char kiln_stage_2_cuda_program[] = ADD_PROGRAM("Add_on_gpu1");
const char kiln_stage_2_cuda_constants[1] = {0};
const struct fake_cubin kiln_stage_2_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
const char kiln_stage_4_cuda_program[] = ADD_PROGRAM("Add_again_on_gpu0");
const char kiln_stage_4_cuda_constants[1] = {0};
const struct fake_cubin kiln_stage_4_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");

void kiln_stage_0(void **buffers) {
  const float *a = (const float *)buffers[0];
  float *t = (float *)buffers[1];
  int i;
  for (i = 0; i < 6; ++i)
    t[i] = 2 * a[i];
}

void kiln_stage_3(void **buffers) {
  const float *w = (const float *)buffers[0];
  float *v = (float *)buffers[1];
  int i;
  for (i = 0; i < 6; ++i)
    v[i] = w[i] + 1;
}

#elif defined(KILN_FAKE_GPU_TRAIN)
/* A train step in miniature: w is state (a parameter) that each step moves by the batch x,
 * w' = w + x, and the step also returns loss = x + w (the weights it read). The init entry
 * sets w from its constants; the eval entry computes y = x + w. Only the GPU programs exist. */
const char kiln_manifest[] = HEADER("fake_gpu_train")
    "devices cuda\n"
    "cuda-cubin sm_90\n"
    "input x f32 2x3\n"
    "input w f32 2x3 state=parameter\n"
    "output loss f32 2x3\n"
    "output w f32 2x3 state=parameter\n"
    "entry init\n"
    "entry-output init w f32 2x3\n"
    "entry eval\n"
    "entry-input eval x f32 2x3\n"
    "entry-input eval w f32 2x3\n"
    "entry-output eval y f32 2x3\n";
const char kiln_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 0\n"
    "constants 0\n"
    "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:1,out:1 node=Update\n"
    "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:1,out:0 node=Loss\n";
const char kiln_cuda_constants[1] = {0};
const struct fake_cubin kiln_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
const char kiln_entry_init_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 0\n"
    "constants 24\n"
    "copy dst=out:0 src=const:0 bytes=24 node=Init\n";
const float kiln_entry_init_cuda_constants[6] = {1, 2, 3, 4, 5, 6};
const struct fake_cubin kiln_entry_init_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
const char kiln_entry_eval_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 0\n"
    "constants 0\n"
    "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:1,out:0 node=Eval\n";
const char kiln_entry_eval_cuda_constants[1] = {0};
const struct fake_cubin kiln_entry_eval_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
#elif defined(KILN_FAKE_GPU_DATA_PARALLEL)
/* A data-parallel step in miniature: g = x + x, summed over the replicas in place (bucket 0);
 * it returns the sum, the world size and this replica's rank as the program's records wrote them. */
const char kiln_manifest[] = HEADER("fake_gpu_data_parallel")
    "devices cuda\n"
    "cuda-cubin sm_90\n"
    "input x f32 2x3\n"
    "output sum f32 2x3\n"
    "output world f32 scalar\n"
    "output rank i64 scalar\n";
const char kiln_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 768\n"
    "constants 0\n"
    "world-size data=arena:0 node=World\n"
    "replica-rank data=arena:256\n"
    "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:0,arena:512 node=Gradient\n"
    "all-reduce-start bucket=0 data=arena:512 count=6 node=Bucket\n"
    "all-reduce-wait bucket=0 data=arena:512 count=6 node=Bucket\n"
    "copy dst=out:0 src=arena:512 bytes=24\n"
    "copy dst=out:1 src=arena:0 bytes=4\n"
    "copy dst=out:2 src=arena:256 bytes=8\n";
const char kiln_cuda_constants[1] = {0};
const struct fake_cubin kiln_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
#elif defined(KILN_FAKE_GPU_MATMUL)
/* y = relu(x . W + bias); z[b] = xt[b]^T . W + bias + addend[b] (xt stored k x m, W given
 * transposed); w = x . W in TF32, W given transposed; u = [0.5 x . W, 0.5 x . W] side by side,
 * two batches written 4 columns apart into rows of 8 (out_ld, out_batch_stride, alpha). */
const char kiln_manifest[] = HEADER("fake_gpu_matmul")
    "devices cuda\n"
    "cuda-cubin sm_90\n"
    "input x f32 2x3\n"
    "input xt f32 2x3x2\n"
    "input addend f32 2x2x4\n"
    "output y f32 2x4\n"
    "output z f32 2x2x4\n"
    "output w f32 2x4\n"
    "output u f32 2x8\n";
const char kiln_cuda_program[] =
    "kiln-cuda-program 1\n"
    "arena 0\n"
    "constants 768\n"
    "matmul dtype=f32 math=f32 batch=1 m=2 n=4 k=3 lhs=in:0 lhs_t=0 lhs_batched=0 rhs=const:0 rhs_t=0 "
    "rhs_batched=0 out=out:0 bias=const:512 addend=- epilogue=relu node=Gemm_relu\n"
    "matmul dtype=f32 math=f32 batch=2 m=2 n=4 k=3 lhs=in:1 lhs_t=1 lhs_batched=1 rhs=const:256 rhs_t=1 "
    "rhs_batched=0 out=out:1 bias=const:512 addend=in:2 epilogue=none node=BatchedGemm\n"
    "matmul dtype=f32 math=tf32 batch=1 m=2 n=4 k=3 lhs=in:0 lhs_t=0 lhs_batched=0 rhs=const:256 rhs_t=1 "
    "rhs_batched=0 out=out:2 bias=- addend=- epilogue=none node=Gemm_tf32\n"
    "matmul dtype=f32 math=f32 batch=2 m=2 n=4 k=3 lhs=in:0 lhs_t=0 lhs_batched=0 rhs=const:0 rhs_t=0 "
    "rhs_batched=0 out=out:3 bias=- addend=- epilogue=none out_ld=8 out_batch_stride=4 alpha=0.5 "
    "node=Strided\n";
const struct {
  float w[64], wt[64], bias[64];
} kiln_cuda_constants = {{KILN_FAKE_W}, {KILN_FAKE_W_TRANSPOSED}, {KILN_FAKE_COLUMN_BIAS}};
const struct fake_cubin kiln_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");

#else
/* y = a + b + bias, a_copy = a, over f32[2x3]; the second launch asks for 64 KiB of shared
 * memory, which needs the opt-in. Variants change the code offered or add a failing record. */
#if defined(KILN_FAKE_GPU_PTX_ONLY)
#define CODE "cuda-ptx compute_80 8.5\n"
#elif defined(KILN_FAKE_GPU_SM80)
#define CODE "cuda-cubin sm_80\n"
#else
#define CODE "cuda-cubin sm_80 sm_90\ncuda-ptx compute_80 7.8\ncuda-min-driver 12000\n"
#endif
#if defined(KILN_FAKE_GPU_BOTH)
#define DEVICES "devices cpu cuda\n"
#else
#define DEVICES "devices cuda\n"
#endif
#if defined(KILN_FAKE_GPU_FAIL)
#define EXTRA "launch kernel=fake_fail grid=1,1,1 block=1,1,1 shared=0 args= node=Bad%20Node\n"
#elif defined(KILN_FAKE_GPU_FAULT)
#define EXTRA "launch kernel=fake_fault grid=1,1,1 block=1,1,1 shared=0 args= node=Faulty\n"
#elif defined(KILN_FAKE_GPU_FAULT_LAST)
#define LAST "launch kernel=fake_fault grid=1,1,1 block=1,1,1 shared=0 args= node=Faulty\n"
#elif defined(KILN_FAKE_GPU_MISSING_KERNEL)
#define EXTRA "launch kernel=kiln_k7 grid=1,1,1 block=1,1,1 shared=0 args=arena:0 node=Missing\n"
#elif defined(KILN_FAKE_GPU_BAD_PROGRAM)
#define EXTRA "copy dst=out:1 src=in:0 bytes=28 node=Too_long\n"
#endif
#ifndef EXTRA
#define EXTRA ""
#endif
#ifndef LAST
#define LAST ""
#endif

const char kiln_manifest[] = HEADER("fake_gpu_add") DEVICES CODE
    "input a f32 2x3\n"
    "input b f32 2x3\n"
    "output y f32 2x3\n"
    "output a_copy f32 2x3\n";
const char kiln_cuda_program[] =
    "# y = a + b + bias; a_copy = a\n"
    "kiln-cuda-program 1\n"
    "arena 256\n"
    "constants 256\n"
    "\n"
    "launch kernel=fake_add grid=1,1,1 block=6,1,1 shared=0 args=in:0,in:1,arena:0 node=Add_0\n"
    "launch kernel=fake_add grid=2,1,1 block=3,1,1 shared=65536 args=arena:0,const:0,out:0 node=Add%20bias\n"
    EXTRA
    "copy dst=out:1 src=in:0 bytes=24 node=Identity_0\n"
    LAST;
const float kiln_cuda_constants[64] = {KILN_FAKE_ADD_BIAS};

#if defined(KILN_FAKE_GPU_PTX_ONLY)
const char kiln_cuda_ptx[] = "//\n// fake PTX\n//\n.version 8.5\n.target sm_80\n.address_size 64\n";
#elif defined(KILN_FAKE_GPU_SM80)
const struct fake_cubin kiln_cuda_cubin_sm_80 = FAKE_CUBIN("sm_80");
#else
const struct fake_cubin kiln_cuda_cubin_sm_80 = FAKE_CUBIN("sm_80");
#if defined(KILN_FAKE_GPU_BAD_CUBIN)
const char kiln_cuda_cubin_sm_90[] = "not an ELF file";
#else
const struct fake_cubin kiln_cuda_cubin_sm_90 = FAKE_CUBIN("sm_90");
#endif
const char kiln_cuda_ptx[] = ".version 7.8\n.target sm_80\n.address_size 64\n";
#endif

#if defined(KILN_FAKE_GPU_BOTH) && !defined(KILN_FAKE_GPU_NO_ENTRY)
/* The same function on the CPU, and its record of its buffers: count, then bytes of each. */
const uint64_t kiln_entry_buffers[] = {4, 24, 24, 24, 24};
void kiln_entry(void **buffers) {
  static const float bias[6] = {KILN_FAKE_ADD_BIAS};
  const float *a = (const float *)buffers[0], *b = (const float *)buffers[1];
  float *y = (float *)buffers[2], *copy = (float *)buffers[3];
  int i;
  for (i = 0; i < 6; ++i) {
    y[i] = a[i] + b[i] + bias[i];
    copy[i] = a[i];
  }
}
#endif
#endif
