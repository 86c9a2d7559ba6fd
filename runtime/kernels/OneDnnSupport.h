/*===- OneDnnSupport.h - Shared state of the oneDNN kernels in artifacts ---===
 *
 * What PackedMatmul.c and PackedConvolution.c share: one engine, one lock
 * for building call sites, each thread's stream and buffers, weights
 * reordered once per address, and the list of sites freed when the artifact
 * is unloaded. Internal to runtime/kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_ONEDNNSUPPORT_H
#define KILN_RUNTIME_KERNELS_ONEDNNSUPPORT_H

#include <oneapi/dnnl/dnnl.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Guards every site's construction and its list of packed weights. */
extern pthread_mutex_t kilnDnnlLock;

/* The CPU engine, created by kilnDnnlInit. */
extern dnnl_engine_t kilnDnnlEngine;

static inline int kilnDnnlOk(dnnl_status_t status) { return status == dnnl_success; }

/* Creates the engine and the per-thread key once; with kilnDnnlLock held.
 * Returns 0 when oneDNN cannot be used. */
int kilnDnnlInit(void);

/* Buffers a thread keeps between calls: [0] the primitives' scratchpads,
 * the others what a kernel needs (a convolution's blocked input and output;
 * [1] also a blocked convolution's batch before it is copied into the
 * slots of a concatenation, or the filters Kiln's Winograd kernel
 * transforms on every call, with its scratch in [2]; [2] also a blocked
 * convolution's filters that oneDNN reorders on every call). */
enum { KILN_THREAD_BUFFERS = 3 };

/* The calling thread's stream, with buffer `index` grown to `bytes`
 * (64-byte aligned), or NULL. */
dnnl_stream_t kilnDnnlThreadStream(void);
void *kilnDnnlThreadBuffer(int index, size_t bytes);

/* Attributes with a user-managed scratchpad: a oneDNN build may share one
 * library-managed scratchpad between primitives that run at once, and tiles
 * of a kernel do. `postOps` may be NULL. */
dnnl_primitive_attr_t kilnDnnlAttributes(const_dnnl_post_ops_t postOps);

/* A primitive descriptor for `desc` with `attr`: the first of oneDNN's
 * implementations whose name contains `prefer`, else (or when `prefer` is
 * NULL) oneDNN's first; NULL when it has none. */
dnnl_primitive_desc_t kilnDnnlDescribe(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                                       const char *prefer);

/* Runs `primitive` on the thread's stream with `args` (room for one more)
 * and its scratchpad, described by `scratchDesc`; waits for it. */
int kilnDnnlExecute(dnnl_primitive_t primitive, const dnnl_memory_desc_t *scratchDesc, int nargs,
                    dnnl_exec_arg_t *args);

/* A constant buffer reordered once into a primitive's layout. */
typedef struct KilnPackedWeights {
  const void *source;
  dnnl_memory_t memory;
  void *data;
  struct KilnPackedWeights *next;
} KilnPackedWeights;

/* Reorders `source` (laid out as `user`) into `to`, in its own layout;
 * returns 0 if oneDNN could not. */
int kilnDnnlReorder(const void *source, const dnnl_memory_desc_t *user, dnnl_memory_t to);

/* The copy of `source` (laid out as `user`) in layout `packed`, from `list`
 * or made and added to it. With kilnDnnlLock held. */
KilnPackedWeights *kilnDnnlPack(KilnPackedWeights **list, const void *source,
                                const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *packed);

/* The copy of `source` in `list` packed for one of Kiln's own kernels, or,
 * when there is none, a new entry of `bytes` (64-byte aligned) added to it
 * for the caller to fill (`*fresh` set); NULL without memory. With
 * kilnDnnlLock held. */
KilnPackedWeights *kilnPackedEntry(KilnPackedWeights **list, const void *source, size_t bytes,
                                   int *fresh);

/* A call site: registered once built, released when the artifact unloads. */
typedef struct KilnSite {
  void (*release)(struct KilnSite *site);
  struct KilnSite *next;
} KilnSite;

/* Adds a site to the list freed at unload. With kilnDnnlLock held. */
void kilnDnnlRegister(KilnSite *site);

/* Frees a list of packed weights. */
void kilnDnnlFreePacked(KilnPackedWeights *list);
/* Whether convolutions of one group (and products shaped as 1x1 ones) by
 * constant filters, and products of few rows by constant weights, run as
 * Kiln's own kernels (DirectConvolution.c) rather than oneDNN's: on CPUs
 * with AVX2 and FMA but not AVX-512, unless the environment sets
 * KILN_DIRECT_CONV=0. */
int kilnDirectConvRuns(void);
/* Whether 3x3 convolutions on images in blocks of 8 may run Kiln's Winograd
 * kernel (WinogradConvolution.c) rather than oneDNN's direct one: on CPUs
 * with AVX2 and FMA but not AVX-512, unless the environment sets
 * KILN_WINOGRAD=0. */
int kilnWinogradRuns(void);
/* Whether 3x3 convolutions by a train step's computed filters on images in
 * blocks of 16 may run that kernel, 8 channels at a time, rather than
 * oneDNN's (whose Winograd needs its weights reordered on every call): on
 * CPUs with AVX-512, unless the environment sets KILN_WINOGRAD=0. */
int kilnWinogradRunsInBlocksOf16(void);
/* PackedConvolution.c's entry point, which kiln_matmul_constant_a hands
 * the products it runs as 1x1 convolutions. */
void kiln_conv2d_constant_w(void **slot, int64_t groups, int64_t c, int64_t ih, int64_t iw,
                            int64_t f, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                            int64_t sw, int64_t dh, int64_t dw, const float *in, int64_t inC,
                            int64_t inH, const float *w, float *out, int64_t outF, int64_t outH);

#endif /* KILN_RUNTIME_KERNELS_ONEDNNSUPPORT_H */
