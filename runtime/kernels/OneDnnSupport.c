/*===- OneDnnSupport.c - Shared state of the oneDNN kernels in artifacts ---===*/
#include "OneDnnSupport.h"
#include "CpuVectors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

pthread_mutex_t kilnDnnlLock = PTHREAD_MUTEX_INITIALIZER;
dnnl_engine_t kilnDnnlEngine;

static KilnSite *gSites;

/* Each thread's stream and buffers. A key rather than __thread, so the
 * artifact needs nothing from the dynamic loader. The state of threads still
 * alive when the artifact is unloaded is not freed. */
typedef struct ThreadState {
  dnnl_stream_t stream;
  void *buffers[KILN_THREAD_BUFFERS];
  size_t bytes[KILN_THREAD_BUFFERS];
} ThreadState;

static pthread_key_t gThreadKey;
static int gHaveThreadKey;

static void destroyThreadState(void *p) {
  ThreadState *state = (ThreadState *)p;
  if (state->stream)
    dnnl_stream_destroy(state->stream);
  for (int i = 0; i < KILN_THREAD_BUFFERS; ++i)
    free(state->buffers[i]);
  free(state);
}

int kilnDnnlInit(void) {
  if (!gHaveThreadKey)
    gHaveThreadKey = pthread_key_create(&gThreadKey, destroyThreadState) == 0;
  if (gHaveThreadKey && !kilnDnnlEngine &&
      !kilnDnnlOk(dnnl_engine_create(&kilnDnnlEngine, dnnl_cpu, 0)))
    kilnDnnlEngine = NULL;
  return gHaveThreadKey && kilnDnnlEngine;
}

static ThreadState *threadState(void) {
  ThreadState *state = (ThreadState *)pthread_getspecific(gThreadKey);
  if (state)
    return state;
  if (!(state = calloc(1, sizeof(ThreadState))))
    return NULL;
  if (!kilnDnnlOk(dnnl_stream_create(&state->stream, kilnDnnlEngine, dnnl_stream_default_flags)) ||
      pthread_setspecific(gThreadKey, state) != 0) {
    destroyThreadState(state);
    return NULL;
  }
  return state;
}

dnnl_stream_t kilnDnnlThreadStream(void) {
  ThreadState *state = threadState();
  return state ? state->stream : NULL;
}

void *kilnDnnlThreadBuffer(int index, size_t bytes) {
  ThreadState *state = threadState();
  if (!state)
    return NULL;
  if (bytes > state->bytes[index] || !state->buffers[index]) {
    size_t rounded = (bytes + 63) / 64 * 64;
    void *buffer = aligned_alloc(64, rounded ? rounded : 64);
    if (!buffer)
      return NULL;
    free(state->buffers[index]);
    state->buffers[index] = buffer;
    state->bytes[index] = rounded;
  }
  return state->buffers[index];
}

dnnl_primitive_attr_t kilnDnnlAttributes(const_dnnl_post_ops_t postOps) {
  dnnl_primitive_attr_t attr = NULL;
  if (!kilnDnnlOk(dnnl_primitive_attr_create(&attr)))
    return NULL;
  if (!kilnDnnlOk(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user)) ||
      (postOps && !kilnDnnlOk(dnnl_primitive_attr_set_post_ops(attr, postOps)))) {
    dnnl_primitive_attr_destroy(attr);
    return NULL;
  }
  return attr;
}

/* Whether `desc`'s implementation is named with `part` in it. */
static int implementedBy(const_dnnl_primitive_desc_t desc, const char *part) {
  const char *name = NULL;
  return kilnDnnlOk(dnnl_primitive_desc_query(desc, dnnl_query_impl_info_str, 0, &name)) && name &&
         strstr(name, part);
}

dnnl_primitive_desc_t kilnDnnlDescribe(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
                                       const char *prefer) {
  dnnl_primitive_desc_iterator_t it = NULL;
  if (!kilnDnnlOk(dnnl_primitive_desc_iterator_create(&it, desc, attr, kilnDnnlEngine, NULL)))
    return NULL;
  dnnl_primitive_desc_t first = dnnl_primitive_desc_iterator_fetch(it), chosen = NULL;
  if (first && prefer && !implementedBy(first, prefer))
    while (!chosen && kilnDnnlOk(dnnl_primitive_desc_iterator_next(it))) {
      dnnl_primitive_desc_t candidate = dnnl_primitive_desc_iterator_fetch(it);
      if (candidate && implementedBy(candidate, prefer))
        chosen = candidate;
      else if (candidate)
        dnnl_primitive_desc_destroy(candidate);
    }
  dnnl_primitive_desc_iterator_destroy(it);
  if (!chosen)
    return first;
  dnnl_primitive_desc_destroy(first);
  return chosen;
}

int kilnDnnlExecute(dnnl_primitive_t primitive, const dnnl_memory_desc_t *scratchDesc, int nargs,
                    dnnl_exec_arg_t *args) {
  size_t bytes = dnnl_memory_desc_get_size(scratchDesc);
  dnnl_stream_t stream = kilnDnnlThreadStream();
  void *buffer = bytes ? kilnDnnlThreadBuffer(0, bytes) : NULL;
  dnnl_memory_t scratch = NULL;
  int done = stream && (bytes == 0 || (buffer && kilnDnnlOk(dnnl_memory_create(
                                                       &scratch, scratchDesc, kilnDnnlEngine, buffer))));
  if (done) {
    if (scratch)
      args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
    done = kilnDnnlOk(dnnl_primitive_execute(primitive, stream, nargs, args)) &&
           kilnDnnlOk(dnnl_stream_wait(stream));
  }
  if (scratch)
    dnnl_memory_destroy(scratch);
  return done;
}

KilnPackedWeights *kilnPackedEntry(KilnPackedWeights **list, const void *source, size_t bytes,
                                   int *fresh) {
  *fresh = 0;
  for (KilnPackedWeights *w = *list; w; w = w->next)
    if (w->source == source)
      return w;
  KilnPackedWeights *w = calloc(1, sizeof(KilnPackedWeights));
  if (!w || !(w->data = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
    free(w);
    return NULL;
  }
  w->source = source;
  w->next = *list;
  *list = w;
  *fresh = 1;
  return w;
}

int kilnDnnlReorder(const void *source, const dnnl_memory_desc_t *user, dnnl_memory_t to) {
  const dnnl_memory_desc_t *packed = NULL;
  dnnl_memory_t from = NULL;
  dnnl_primitive_attr_t attr = kilnDnnlAttributes(NULL);
  dnnl_primitive_desc_t reorderDesc = NULL;
  dnnl_primitive_t reorder = NULL;
  int made = attr && kilnDnnlOk(dnnl_memory_get_memory_desc(to, &packed)) &&
             kilnDnnlOk(dnnl_memory_create(&from, user, kilnDnnlEngine, (void *)source)) &&
             kilnDnnlOk(dnnl_reorder_primitive_desc_create(&reorderDesc, user, kilnDnnlEngine,
                                                           packed, kilnDnnlEngine, attr)) &&
             kilnDnnlOk(dnnl_primitive_create(&reorder, reorderDesc));
  if (made) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    made = kilnDnnlExecute(
        reorder, dnnl_primitive_desc_query_md(reorderDesc, dnnl_query_scratchpad_md, 0), 2, args);
  }
  if (reorder)
    dnnl_primitive_destroy(reorder);
  if (reorderDesc)
    dnnl_primitive_desc_destroy(reorderDesc);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (from)
    dnnl_memory_destroy(from);
  return made;
}

KilnPackedWeights *kilnDnnlPack(KilnPackedWeights **list, const void *source,
                                const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *packed) {
  for (KilnPackedWeights *w = *list; w; w = w->next)
    if (w->source == source)
      return w;
  KilnPackedWeights *w = calloc(1, sizeof(KilnPackedWeights));
  size_t bytes = (dnnl_memory_desc_get_size(packed) + 63) / 64 * 64;
  int made = w && (w->data = aligned_alloc(64, bytes)) &&
             kilnDnnlOk(dnnl_memory_create(&w->memory, packed, kilnDnnlEngine, w->data)) &&
             kilnDnnlReorder(source, user, w->memory);
  if (!made) {
    if (w) {
      w->next = NULL;
      kilnDnnlFreePacked(w);
    }
    return NULL;
  }
  w->source = source;
  w->next = *list;
  *list = w;
  return w;
}

void kilnDnnlFreePacked(KilnPackedWeights *list) {
  while (list) {
    KilnPackedWeights *w = list;
    list = w->next;
    if (w->memory)
      dnnl_memory_destroy(w->memory);
    free(w->data);
    free(w);
  }
}

/* Whether one of Kiln's own AVX2 kernels runs: on a CPU whose widest
 * vectors are `vectors`, unless the environment sets `variable` to 0; found
 * once and kept in `*runs` (-1 until then). */
static int avx2KernelRuns(int *runs, const char *variable, int vectors) {
#ifdef KILN_CPU_KERNELS_X86
  int known = __atomic_load_n(runs, __ATOMIC_RELAXED);
  if (known < 0) {
    const char *setting = getenv(variable);
    known = (int)kilnCpuVectors() == vectors && !(setting && strcmp(setting, "0") == 0);
    __atomic_store_n(runs, known, __ATOMIC_RELAXED);
  }
  return known;
#else
  (void)runs, (void)variable, (void)vectors;
  return 0;
#endif
}

int kilnDirectConvRuns(void) {
  static int runs = -1;
  return avx2KernelRuns(&runs, "KILN_DIRECT_CONV", KILN_VECTORS_AVX2);
}

int kilnWinogradRuns(void) {
  static int runs = -1;
  return avx2KernelRuns(&runs, "KILN_WINOGRAD", KILN_VECTORS_AVX2);
}

int kilnWinogradRunsInBlocksOf16(void) {
  static int runs = -1;
  return avx2KernelRuns(&runs, "KILN_WINOGRAD", KILN_VECTORS_AVX512);
}

void kilnDnnlRegister(KilnSite *site) {
  site->next = gSites;
  gSites = site;
}

/* The artifact is being unloaded: free every site; thread exits must not
 * call into unloaded code. */
__attribute__((destructor)) static void releaseSites(void) {
  if (gHaveThreadKey)
    pthread_key_delete(gThreadKey);
  while (gSites) {
    KilnSite *site = gSites;
    gSites = site->next;
    site->release(site);
  }
}
