/* A fake CUDA driver, cuBLASLt and NCCL on host memory, for running the GPU executor and the NCCL
 * collective where there is no GPU.
 *
 * It exports the driver API, cuBLASLt and NCCL entry points the runtime resolves (one library
 * stands in for all three, so a captured CUDA graph can hold cuBLASLt work and NCCL's work can
 * complete the events recorded after it). NCCL communicators are ranks of one process (threads):
 * each runs its all-reduces in order on a thread of its own, the sum made when every rank of the
 * communicator has arrived; an event recorded on a stream completes once the NCCL work queued
 * on it before has. Device memory is host memory, copies
 * are memcpy, and cuLaunchKernel runs host versions of a few kernels by name:
 *   fake_add(a, b, out)   out[i] = a[i] + b[i] (f32) for i < gridX * blockX
 *   fake_fail()           the launch fails with CUDA_ERROR_ILLEGAL_ADDRESS
 *   fake_fault()          the launch succeeds; every later call on the stream, and the next
 *                         synchronization, reports CUDA_ERROR_ILLEGAL_ADDRESS
 * cublasLtMatmul computes in f32 with cuBLASLt's column-major semantics, and checks that the
 * layouts it is given are consistent, so the runtime's row-major mapping is tested for real.
 * Environment knobs, read at each call: KILN_FAKE_CUDA_DEVICES (default 1), KILN_FAKE_CUDA_CC
 * ("9.0"), KILN_FAKE_CUDA_DRIVER (13000), KILN_FAKE_CUDA_NO_CAPTURE, KILN_FAKE_CUDA_NO_PINNED,
 * KILN_FAKE_CUDA_JIT_FAIL, KILN_FAKE_CUDA_NO_ALGO (each "1" to switch on).
 * kiln_fake_cuda_stat(NAME) exposes counters for the tests. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
};
enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_NOT_SUPPORTED = 15 };

/* ---- Counters and knobs ------------------------------------------------------------------------ */

static struct {
  long live_allocs, live_host_allocs, live_modules, live_streams, live_events, live_graphs, live_graph_execs;
  long live_ctx_retains, live_lt_handles, live_lt_descs, live_lt_layouts, live_lt_prefs;
  long launches, graph_launches, heuristics, matmuls, loaded_ptx, loaded_cubin, captures;
  long htod_copies, dtoh_copies, dtod_copies, peer_copies;
} stats;
static __thread long ctx_depth;
static char last_image[64];
static CUresult pending_error; /* a fault reported at the next synchronization; sticky */

static int knob(const char *name) {
  const char *value = getenv(name);
  return value && strcmp(value, "1") == 0;
}

static long knob_long(const char *name, long fallback) {
  const char *value = getenv(name);
  return value && *value ? strtol(value, 0, 10) : fallback;
}

long kiln_fake_cuda_stat(const char *name) {
#define STAT(field)                                                                                \
  if (strcmp(name, #field) == 0)                                                                   \
    return stats.field;
  STAT(live_allocs) STAT(live_host_allocs) STAT(live_modules) STAT(live_streams) STAT(live_events)
  STAT(live_graphs) STAT(live_graph_execs) STAT(live_ctx_retains) STAT(live_lt_handles) STAT(live_lt_descs)
  STAT(live_lt_layouts) STAT(live_lt_prefs) STAT(launches) STAT(graph_launches) STAT(heuristics)
  STAT(matmuls) STAT(loaded_ptx) STAT(loaded_cubin) STAT(captures) STAT(htod_copies) STAT(dtoh_copies)
  STAT(dtod_copies) STAT(peer_copies)
#undef STAT
  if (strcmp(name, "ctx_depth") == 0)
    return ctx_depth;
  return -1;
}

const char *kiln_fake_cuda_last_image(void) { return last_image; }

/* ---- Work: what a stream runs now, or a graph records ----------------------------------------- */

struct fake_function {
  const char *name;
  int arity;
  int max_dynamic_shared;
};
static struct fake_function functions[] = {{"fake_add", 3, 0}, {"fake_fail", 0, 0}, {"fake_fault", 0, 0}};

struct lt_desc {
  int compute, scale, transa, transb;
  uint32_t epilogue;
  CUdeviceptr bias;
  int bias_type;
};
struct lt_layout {
  int type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int batch;
};

enum { OP_LAUNCH, OP_COPY, OP_MATMUL };
struct op {
  int kind;
  /* launch */
  struct fake_function *function;
  unsigned grid[3], block[3];
  CUdeviceptr args[8];
  /* copy */
  CUdeviceptr dst, src;
  size_t bytes;
  /* matmul */
  struct lt_desc desc;
  struct lt_layout a, b, c, d;
  float alpha, beta;
  CUdeviceptr pa, pb, pc, pd;
};

struct CUstream_st {
  int capturing;
  struct op *ops;
  int count, capacity;
  /* NCCL work queued on the stream and finished (the only work that runs asynchronously). */
  long nccl_queued, nccl_done;
};
struct CUgraph_st {
  struct op *ops;
  int count;
};

static float *floats(CUdeviceptr pointer) { return (float *)(uintptr_t)pointer; }

static CUresult run_matmul(const struct op *op) {
  const struct lt_layout *a = &op->a, *b = &op->b, *c = &op->c, *d = &op->d;
  uint64_t m = d->rows, n = d->cols;
  uint64_t k = op->desc.transa ? a->rows : a->cols;
  int batch;
  for (batch = 0; batch < d->batch; ++batch) {
    const float *A = floats(op->pa) + batch * a->stride;
    const float *B = floats(op->pb) + batch * b->stride;
    const float *C = floats(op->pc) + batch * c->stride;
    float *D = floats(op->pd) + batch * d->stride;
    uint64_t i, j, p;
    for (j = 0; j < n; ++j) {
      for (i = 0; i < m; ++i) {
        double sum = 0;
        for (p = 0; p < k; ++p) {
          float x = op->desc.transa ? A[p + i * a->ld] : A[i + p * a->ld];
          float y = op->desc.transb ? B[j + p * b->ld] : B[p + j * b->ld];
          sum += (double)x * y;
        }
        double value = op->alpha * sum;
        if (op->beta != 0)
          value += op->beta * C[i + j * c->ld];
        if (op->desc.epilogue & 4)
          value += floats(op->desc.bias)[i];
        if ((op->desc.epilogue & 2) && value < 0)
          value = 0;
        D[i + j * d->ld] = (float)value;
      }
    }
  }
  return CUDA_SUCCESS;
}

static CUresult execute(const struct op *op) {
  if (op->kind == OP_COPY) {
    memmove((void *)(uintptr_t)op->dst, (const void *)(uintptr_t)op->src, op->bytes);
    return CUDA_SUCCESS;
  }
  if (op->kind == OP_MATMUL)
    return run_matmul(op);
  ++stats.launches;
  if (strcmp(op->function->name, "fake_fail") == 0)
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (strcmp(op->function->name, "fake_fault") == 0) {
    pending_error = CUDA_ERROR_ILLEGAL_ADDRESS;
    return CUDA_SUCCESS;
  }
  {
    unsigned long count = (unsigned long)op->grid[0] * op->block[0], i;
    const float *x = floats(op->args[0]), *y = floats(op->args[1]);
    float *out = floats(op->args[2]);
    for (i = 0; i < count; ++i)
      out[i] = x[i] + y[i];
  }
  return CUDA_SUCCESS;
}

static CUresult enqueue(struct CUstream_st *stream, const struct op *op) {
  if (!stream)
    return CUDA_ERROR_INVALID_HANDLE; /* the runtime always uses its own stream */
  if (pending_error)
    return pending_error; /* like the driver: a fault breaks every later call in the context */
  if (!stream->capturing)
    return execute(op);
  if (stream->count == stream->capacity) {
    stream->capacity = stream->capacity ? 2 * stream->capacity : 8;
    stream->ops = realloc(stream->ops, (size_t)stream->capacity * sizeof *stream->ops);
  }
  stream->ops[stream->count++] = *op;
  return CUDA_SUCCESS;
}

/* ---- Driver API -------------------------------------------------------------------------------- */

CUresult cuInit(unsigned flags) { return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

CUresult cuDriverGetVersion(int *version) {
  *version = (int)knob_long("KILN_FAKE_CUDA_DRIVER", 13000);
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
  case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_INVALID_DEVICE: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
  case CUDA_ERROR_INVALID_PTX: *name = "CUDA_ERROR_INVALID_PTX"; break;
  case CUDA_ERROR_INVALID_HANDLE: *name = "CUDA_ERROR_INVALID_HANDLE"; break;
  case CUDA_ERROR_NOT_FOUND: *name = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
  default: *name = 0; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_SUCCESS: *text = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *text = "out of memory"; break;
  case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal"; break;
  case CUDA_ERROR_INVALID_PTX: *text = "a PTX JIT compilation failed"; break;
  case CUDA_ERROR_INVALID_HANDLE: *text = "invalid resource handle"; break;
  case CUDA_ERROR_NOT_FOUND: *text = "named symbol not found"; break;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *text = "an illegal memory access was encountered"; break;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *text = "operation not permitted when stream is capturing"; break;
  default: *text = 0; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  *count = (int)knob_long("KILN_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= knob_long("KILN_FAKE_CUDA_DEVICES", 1))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  (void)device;
  snprintf(name, (size_t)length, "Kiln Fake GPU");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  const char *cc = getenv("KILN_FAKE_CUDA_CC");
  int major = 9, minor = 0;
  (void)device;
  if (cc && *cc)
    sscanf(cc, "%d.%d", &major, &minor);
  switch (attribute) {
  case 8: *value = 48 * 1024; break;
  case 75: *value = major; break;
  case 76: *value = minor; break;
  case 97: *value = 227 * 1024; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static int primary_context;

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  ++stats.live_ctx_retains;
  *context = &primary_context;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  (void)device;
  if (stats.live_ctx_retains <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (--stats.live_ctx_retains == 0)
    pending_error = CUDA_SUCCESS; /* the context is destroyed with its sticky error */
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(void *context) {
  if (context != &primary_context)
    return CUDA_ERROR_INVALID_HANDLE;
  ++ctx_depth;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(void **context) {
  if (ctx_depth <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  --ctx_depth;
  if (context)
    *context = &primary_context;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(struct CUstream_st **stream, unsigned flags) {
  (void)flags;
  *stream = calloc(1, sizeof **stream);
  ++stats.live_streams;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(struct CUstream_st *stream) {
  free(stream->ops);
  free(stream);
  --stats.live_streams;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(struct CUstream_st *stream) {
  (void)stream;
  return pending_error;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options, void **values) {
  const char *bytes = image;
  if (memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    /* The fake artifacts put their architecture's name right after the 64-byte ELF header. */
    snprintf(last_image, sizeof last_image, "cubin %s", bytes + 64);
    ++stats.loaded_cubin;
  } else {
    if (knob("KILN_FAKE_CUDA_JIT_FAIL")) {
      unsigned i;
      for (i = 0; i < count; ++i)
        if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
          strcpy(values[i], "ptxas fatal   : fake JIT failure\nsecond line");
      return CUDA_ERROR_INVALID_PTX;
    }
    snprintf(last_image, sizeof last_image, "ptx");
    ++stats.loaded_ptx;
  }
  {
    size_t i;
    for (i = 0; i < sizeof functions / sizeof functions[0]; ++i)
      functions[i].max_dynamic_shared = 48 * 1024;
  }
  *module = &functions;
  ++stats.live_modules;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(struct fake_function **function, void *module, const char *name) {
  size_t i;
  (void)module;
  for (i = 0; i < sizeof functions / sizeof functions[0]; ++i) {
    if (strcmp(functions[i].name, name) == 0) {
      *function = &functions[i];
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleUnload(void *module) {
  (void)module;
  --stats.live_modules;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(struct fake_function *function, int attribute, int value) {
  if (attribute != 8 || value > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  function->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(struct fake_function *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, struct CUstream_st *stream, void **params,
                        void **extra) {
  struct op op;
  int i;
  if (!function || extra)
    return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned long)bx * by * bz > 1024 || (int)shared > function->max_dynamic_shared)
    return CUDA_ERROR_INVALID_VALUE;
  memset(&op, 0, sizeof op);
  op.kind = OP_LAUNCH;
  op.function = function;
  op.grid[0] = gx, op.grid[1] = gy, op.grid[2] = gz;
  op.block[0] = bx, op.block[1] = by, op.block[2] = bz;
  /* Like the driver, read the arguments now: a captured graph keeps their values. */
  for (i = 0; i < function->arity; ++i)
    op.args[i] = *(CUdeviceptr *)params[i];
  return enqueue(stream, &op);
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  void *memory;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  memory = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset(memory, 0x7f, bytes); /* NaN-ish floats: reading memory nobody wrote shows */
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  ++stats.live_allocs;
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  free((void *)(uintptr_t)pointer);
  --stats.live_allocs;
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned flags) {
  (void)flags;
  if (knob("KILN_FAKE_CUDA_NO_PINNED"))
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = aligned_alloc(256, (bytes + 255) / 256 * 256);
  ++stats.live_host_allocs;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *pointer) {
  free(pointer);
  --stats.live_host_allocs;
  return CUDA_SUCCESS;
}

static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct CUstream_st *stream) {
  struct op op;
  memset(&op, 0, sizeof op);
  op.kind = OP_COPY;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  return enqueue(stream, &op);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, struct CUstream_st *stream) {
  ++stats.htod_copies;
  return copy(dst, (CUdeviceptr)(uintptr_t)src, bytes, stream);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, struct CUstream_st *stream) {
  ++stats.dtoh_copies;
  return copy((CUdeviceptr)(uintptr_t)dst, src, bytes, stream);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, struct CUstream_st *stream) {
  ++stats.dtod_copies;
  return copy(dst, src, bytes, stream);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dst_context, CUdeviceptr src, void *src_context, size_t bytes,
                           struct CUstream_st *stream) {
  if (!dst_context || !src_context)
    return CUDA_ERROR_INVALID_VALUE;
  ++stats.peer_copies;
  return copy(dst, src, bytes, stream);
}

struct CUevent_st {
  double milliseconds;
  struct CUstream_st *stream; /* the NCCL work it waits for: stream's first `target` items */
  long target;
};

CUresult cuEventCreate(struct CUevent_st **event, unsigned flags) {
  (void)flags;
  *event = calloc(1, sizeof **event);
  ++stats.live_events;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(struct CUevent_st *event) {
  free(event);
  --stats.live_events;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(struct CUevent_st *event, struct CUstream_st *stream) {
  struct timespec now;
  if (stream && stream->capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  clock_gettime(CLOCK_MONOTONIC, &now);
  event->milliseconds = now.tv_sec * 1e3 + now.tv_nsec / 1e6;
  event->stream = stream;
  event->target = stream ? __atomic_load_n(&stream->nccl_queued, __ATOMIC_SEQ_CST) : 0;
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(struct CUevent_st *event) {
  if (event->stream && __atomic_load_n(&event->stream->nccl_done, __ATOMIC_SEQ_CST) < event->target)
    return 600; /* CUDA_ERROR_NOT_READY */
  return CUDA_SUCCESS;
}

/* Work runs as it is queued here, so a stream waits by blocking the host: only NCCL's sums run
 * later, and the records queued after a wait on one must see its result. A sum that never comes
 * (a peer that stopped) is given up on after two seconds, as a device would wait on regardless
 * while the host goes on. */
CUresult cuStreamWaitEvent(struct CUstream_st *stream, struct CUevent_st *event, unsigned flags) {
  struct timespec start, now;
  (void)stream;
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (cuEventQuery(event) != CUDA_SUCCESS) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > 2000)
      break;
    usleep(200);
  }
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime_v2(float *milliseconds, struct CUevent_st *start, struct CUevent_st *end) {
  *milliseconds = (float)(end->milliseconds - start->milliseconds);
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(struct CUstream_st *stream, int mode) {
  if (mode < 0 || mode > 2 || stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  if (knob("KILN_FAKE_CUDA_NO_CAPTURE"))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  stream->capturing = 1;
  stream->count = 0;
  ++stats.captures;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(struct CUstream_st *stream, struct CUgraph_st **graph) {
  if (!stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  stream->capturing = 0;
  *graph = calloc(1, sizeof **graph);
  (*graph)->ops = malloc((size_t)(stream->count + 1) * sizeof(struct op));
  memcpy((*graph)->ops, stream->ops, (size_t)stream->count * sizeof(struct op));
  (*graph)->count = stream->count;
  ++stats.live_graphs;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(struct CUgraph_st **exec, struct CUgraph_st *graph, unsigned long long flags) {
  (void)flags;
  *exec = calloc(1, sizeof **exec);
  (*exec)->ops = malloc((size_t)(graph->count + 1) * sizeof(struct op));
  memcpy((*exec)->ops, graph->ops, (size_t)graph->count * sizeof(struct op));
  (*exec)->count = graph->count;
  ++stats.live_graph_execs;
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(struct CUgraph_st *exec, struct CUstream_st *stream) {
  int i;
  if (stream->capturing)
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  ++stats.graph_launches;
  for (i = 0; i < exec->count; ++i) {
    CUresult result = execute(&exec->ops[i]);
    if (result != CUDA_SUCCESS)
      return result;
  }
  return CUDA_SUCCESS;
}

static void free_graph(struct CUgraph_st *graph) {
  free(graph->ops);
  free(graph);
}
CUresult cuGraphExecDestroy(struct CUgraph_st *exec) {
  free_graph(exec);
  --stats.live_graph_execs;
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(struct CUgraph_st *graph) {
  free_graph(graph);
  --stats.live_graphs;
  return CUDA_SUCCESS;
}

/* ---- cuBLASLt ---------------------------------------------------------------------------------- */

struct lt_preference {
  uint64_t workspace;
};
enum { FAKE_ALGO_MAGIC = 0x4b696c6e };
typedef struct {
  uint64_t data[8];
} lt_algo;
typedef struct {
  lt_algo algo;
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
} lt_heuristic;

int cublasLtCreate(void **handle) {
  *handle = malloc(1);
  ++stats.live_lt_handles;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtDestroy(void *handle) {
  free(handle);
  --stats.live_lt_handles;
  return CUBLAS_STATUS_SUCCESS;
}
const char *cublasLtGetStatusName(int status) {
  return status == CUBLAS_STATUS_SUCCESS         ? "CUBLAS_STATUS_SUCCESS"
         : status == CUBLAS_STATUS_INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE"
         : status == CUBLAS_STATUS_NOT_SUPPORTED ? "CUBLAS_STATUS_NOT_SUPPORTED"
                                                 : "CUBLAS_STATUS_UNKNOWN";
}
const char *cublasLtGetStatusString(int status) {
  return status == CUBLAS_STATUS_SUCCESS         ? "success"
         : status == CUBLAS_STATUS_INVALID_VALUE ? "an invalid value was used as an argument"
         : status == CUBLAS_STATUS_NOT_SUPPORTED ? "the functionality requested is not supported"
                                                 : "unknown status";
}
size_t cublasLtGetVersion(void) { return 130000; }

int cublasLtMatmulDescCreate(struct lt_desc **desc, int compute, int scale) {
  if ((compute != 68 && compute != 77) || scale != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  *desc = calloc(1, sizeof **desc);
  (*desc)->compute = compute;
  (*desc)->scale = scale;
  (*desc)->epilogue = 1;
  (*desc)->bias_type = -1;
  ++stats.live_lt_descs;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtMatmulDescDestroy(struct lt_desc *desc) {
  free(desc);
  --stats.live_lt_descs;
  return CUBLAS_STATUS_SUCCESS;
}
/* Checks each attribute's size as cuBLASLt does, which catches a mistyped declaration. */
int cublasLtMatmulDescSetAttribute(struct lt_desc *desc, int attribute, const void *value, size_t size) {
  switch (attribute) {
  case 3: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; memcpy(&desc->transa, value, 4); break;
  case 4: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; memcpy(&desc->transb, value, 4); break;
  case 7: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; memcpy(&desc->epilogue, value, 4); break;
  case 8: if (size != 8) return CUBLAS_STATUS_INVALID_VALUE; memcpy(&desc->bias, value, 8); break;
  case 26: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; memcpy(&desc->bias_type, value, 4); break;
  default: return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

int cublasLtMatrixLayoutCreate(struct lt_layout **layout, int type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (ld < (int64_t)rows)
    return CUBLAS_STATUS_INVALID_VALUE;
  *layout = calloc(1, sizeof **layout);
  (*layout)->type = type;
  (*layout)->rows = rows;
  (*layout)->cols = cols;
  (*layout)->ld = ld;
  (*layout)->batch = 1;
  ++stats.live_lt_layouts;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtMatrixLayoutDestroy(struct lt_layout *layout) {
  free(layout);
  --stats.live_lt_layouts;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtMatrixLayoutSetAttribute(struct lt_layout *layout, int attribute, const void *value, size_t size) {
  if (attribute == 5 && size == 4)
    memcpy(&layout->batch, value, 4);
  else if (attribute == 6 && size == 8)
    memcpy(&layout->stride, value, 8);
  else
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

int cublasLtMatmulPreferenceCreate(struct lt_preference **preference) {
  *preference = calloc(1, sizeof **preference);
  ++stats.live_lt_prefs;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtMatmulPreferenceDestroy(struct lt_preference *preference) {
  free(preference);
  --stats.live_lt_prefs;
  return CUBLAS_STATUS_SUCCESS;
}
int cublasLtMatmulPreferenceSetAttribute(struct lt_preference *preference, int attribute, const void *value,
                                         size_t size) {
  if (attribute != 1 || size != 8)
    return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(&preference->workspace, value, 8);
  return CUBLAS_STATUS_SUCCESS;
}

/* The shapes must agree as cuBLASLt requires: op(A) is m x k, op(B) k x n, C and D m x n. */
static int consistent(const struct lt_desc *desc, const struct lt_layout *a, const struct lt_layout *b,
                      const struct lt_layout *c, const struct lt_layout *d) {
  uint64_t am = desc->transa ? a->cols : a->rows, ak = desc->transa ? a->rows : a->cols;
  uint64_t bk = desc->transb ? b->cols : b->rows, bn = desc->transb ? b->rows : b->cols;
  if (am != d->rows || bn != d->cols || ak != bk || c->rows != d->rows || c->cols != d->cols)
    return 0;
  if (a->batch != d->batch || b->batch != d->batch || c->batch != d->batch)
    return 0;
  if (a->type != 0 || b->type != 0 || c->type != 0 || d->type != 0) /* the fake computes f32 only */
    return 0;
  if ((desc->epilogue & 4) && (!desc->bias || desc->bias_type != d->type))
    return 0;
  return 1;
}

int cublasLtMatmulAlgoGetHeuristic(void *handle, struct lt_desc *desc, struct lt_layout *a, struct lt_layout *b,
                                   struct lt_layout *c, struct lt_layout *d, struct lt_preference *preference,
                                   int requested, lt_heuristic *results, int *returned) {
  ++stats.heuristics;
  if (!handle || !preference || requested <= 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!consistent(desc, a, b, c, d))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  *returned = 0;
  if (knob("KILN_FAKE_CUDA_NO_ALGO"))
    return CUBLAS_STATUS_SUCCESS;
  /* KILN_FAKE_CUDA_CANDIDATES=N offers N algorithms; the second is one cublasLtMatmul refuses. */
  {
    long candidates = knob_long("KILN_FAKE_CUDA_CANDIDATES", 1), i;
    if (candidates > requested)
      candidates = requested;
    for (i = 0; i < candidates; ++i) {
      memset(&results[i], 0, sizeof results[i]);
      results[i].algo.data[0] = i == 1 ? FAKE_ALGO_MAGIC + 1 : FAKE_ALGO_MAGIC;
      results[i].workspaceSize = preference->workspace / 2;
    }
    *returned = (int)candidates;
  }
  return CUBLAS_STATUS_SUCCESS;
}

int cublasLtMatmul(void *handle, struct lt_desc *desc, const float *alpha, const void *A, struct lt_layout *a,
                   const void *B, struct lt_layout *b, const float *beta, const void *C, struct lt_layout *c,
                   void *D, struct lt_layout *d, const lt_algo *algo, void *workspace, size_t workspace_bytes,
                   struct CUstream_st *stream) {
  struct op op;
  if (!handle || !algo || algo->data[0] != FAKE_ALGO_MAGIC || !workspace || workspace_bytes == 0 ||
      !consistent(desc, a, b, c, d))
    return CUBLAS_STATUS_INVALID_VALUE;
  ++stats.matmuls;
  memset(&op, 0, sizeof op);
  op.kind = OP_MATMUL;
  op.desc = *desc;
  op.a = *a, op.b = *b, op.c = *c, op.d = *d;
  op.alpha = *alpha;
  op.beta = *beta;
  op.pa = (CUdeviceptr)(uintptr_t)A, op.pb = (CUdeviceptr)(uintptr_t)B;
  op.pc = (CUdeviceptr)(uintptr_t)C, op.pd = (CUdeviceptr)(uintptr_t)D;
  return enqueue(stream, &op) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- NCCL ---------------------------------------------------------------------------------------- */

typedef struct {
  char internal[128];
} ncclUniqueId;
enum { ncclSuccess = 0, ncclSystemError = 2, ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6 };
enum { FAKE_NCCL_MAX_RANKS = 64 };

/* The ranks of one unique id. */
struct fake_group {
  char id[128];
  int size, joined, arrived, failed;
  long rounds; /* all-reduces completed */
  float *buffers[FAKE_NCCL_MAX_RANKS];
  size_t counts[FAKE_NCCL_MAX_RANKS];
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  struct fake_group *next;
};
static pthread_mutex_t groups_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct fake_group *groups;

struct fake_nccl_op {
  float *data;
  size_t count;
  struct CUstream_st *stream;
  struct fake_nccl_op *next;
};

struct ncclComm {
  struct fake_group *group;
  int rank, stopping, aborted, error;
  struct fake_nccl_op *head, *tail;
  pthread_t worker;
};

long kiln_fake_nccl_live_comms;

static void *nccl_worker(void *arg) {
  struct ncclComm *comm = arg;
  struct fake_group *g = comm->group;
  pthread_mutex_lock(&g->mutex);
  for (;;) {
    while (!comm->head && !comm->stopping && !comm->aborted)
      pthread_cond_wait(&g->changed, &g->mutex);
    if (comm->aborted || (comm->stopping && !comm->head))
      break;
    struct fake_nccl_op *op = comm->head;
    comm->head = op->next;
    if (!comm->head)
      comm->tail = 0;
    long round = g->rounds;
    g->buffers[comm->rank] = op->data;
    g->counts[comm->rank] = op->count;
    if (++g->arrived == g->size) {
      int same = 1;
      for (int r = 1; r < g->size; ++r)
        same &= g->counts[r] == g->counts[0];
      if (same) {
        float *sum = calloc(op->count ? op->count : 1, sizeof(float));
        for (int r = 0; r < g->size; ++r)
          for (size_t i = 0; i < op->count; ++i)
            sum[i] += g->buffers[r][i];
        for (int r = 0; r < g->size; ++r)
          memcpy(g->buffers[r], sum, op->count * sizeof(float));
        free(sum);
      } else {
        g->failed = ncclInvalidUsage; /* ranks disagree on the count */
      }
      g->arrived = 0;
      ++g->rounds;
      pthread_cond_broadcast(&g->changed);
    } else {
      while (g->rounds == round && !comm->aborted && !g->failed)
        pthread_cond_wait(&g->changed, &g->mutex);
    }
    if (g->failed)
      comm->error = g->failed;
    if (!comm->aborted)
      __atomic_add_fetch(&op->stream->nccl_done, 1, __ATOMIC_SEQ_CST);
    free(op);
  }
  pthread_mutex_unlock(&g->mutex);
  return 0;
}

int ncclGetVersion(int *version) {
  *version = 22304;
  return ncclSuccess;
}

int ncclGetUniqueId(ncclUniqueId *id) {
  static long next;
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "fake-nccl-%ld", __atomic_add_fetch(&next, 1, __ATOMIC_SEQ_CST));
  return ncclSuccess;
}

int ncclCommInitRank(struct ncclComm **out, int size, ncclUniqueId id, int rank) {
  if (knob("KILN_FAKE_NCCL_INIT_FAIL"))
    return ncclSystemError;
  if (size < 1 || size > FAKE_NCCL_MAX_RANKS || rank < 0 || rank >= size)
    return ncclInvalidArgument;
  pthread_mutex_lock(&groups_mutex);
  struct fake_group *g = groups;
  while (g && memcmp(g->id, id.internal, sizeof g->id) != 0)
    g = g->next;
  if (!g) {
    g = calloc(1, sizeof *g);
    memcpy(g->id, id.internal, sizeof g->id);
    g->size = size;
    pthread_mutex_init(&g->mutex, 0);
    pthread_cond_init(&g->changed, 0);
    g->next = groups;
    groups = g;
  }
  pthread_mutex_unlock(&groups_mutex);
  struct ncclComm *comm = calloc(1, sizeof *comm);
  comm->group = g;
  comm->rank = rank;
  pthread_mutex_lock(&g->mutex);
  ++g->joined;
  pthread_cond_broadcast(&g->changed);
  while (g->joined < g->size) /* as NCCL: no timeout */
    pthread_cond_wait(&g->changed, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
  pthread_create(&comm->worker, 0, nccl_worker, comm);
  __atomic_add_fetch(&kiln_fake_nccl_live_comms, 1, __ATOMIC_SEQ_CST);
  *out = comm;
  return ncclSuccess;
}

int ncclAllReduce(const void *send, void *receive, size_t count, int type, int op, struct ncclComm *comm,
                  struct CUstream_st *stream) {
  if (send != receive || type != 7 /* ncclFloat32 */ || op != 0 /* ncclSum */ || !stream)
    return ncclInvalidArgument; /* only what Kiln asks for */
  struct fake_nccl_op *work = calloc(1, sizeof *work);
  work->data = receive;
  work->count = count;
  work->stream = stream;
  __atomic_add_fetch(&stream->nccl_queued, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&comm->group->mutex);
  if (comm->tail)
    comm->tail->next = work;
  else
    comm->head = work;
  comm->tail = work;
  pthread_cond_broadcast(&comm->group->changed);
  pthread_mutex_unlock(&comm->group->mutex);
  return ncclSuccess;
}

int ncclCommGetAsyncError(struct ncclComm *comm, int *error) {
  pthread_mutex_lock(&comm->group->mutex);
  *error = comm->error;
  pthread_mutex_unlock(&comm->group->mutex);
  return ncclSuccess;
}

static int nccl_end(struct ncclComm *comm, int abort) {
  pthread_mutex_lock(&comm->group->mutex);
  if (abort) {
    comm->aborted = 1;
    /* The group cannot complete a sum without this rank any more: the others fail as NCCL's
     * peers of an aborted rank do (ncclRemoteError). */
    comm->group->failed = 6;
  }
  comm->stopping = 1;
  pthread_cond_broadcast(&comm->group->changed);
  pthread_mutex_unlock(&comm->group->mutex);
  pthread_join(comm->worker, 0);
  while (comm->head) {
    struct fake_nccl_op *next = comm->head->next;
    free(comm->head);
    comm->head = next;
  }
  free(comm);
  __atomic_sub_fetch(&kiln_fake_nccl_live_comms, 1, __ATOMIC_SEQ_CST);
  return ncclSuccess;
}

int ncclCommAbort(struct ncclComm *comm) { return nccl_end(comm, 1); }
int ncclCommDestroy(struct ncclComm *comm) { return nccl_end(comm, 0); }

const char *ncclGetErrorString(int result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclSystemError: return "unhandled system error";
  case ncclInvalidArgument: return "invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  case ncclRemoteError: return "remote process exited or there was a network error";
  default: return "unknown result code";
  }
}
