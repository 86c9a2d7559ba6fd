/* Kiln runtime C ABI: load a compiled Kiln artifact (model.kiln), inspect its signature, run it. */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Environment the runtime reads:
 *   KILN_LIBCUDA      the CUDA driver library to dlopen instead of libcuda.so.1 (tests use a fake)
 *   KILN_LIBCUBLASLT  the cuBLASLt library to dlopen instead of searching libcublasLt.so.13, .12,
 *                     .11 and .so on the loader's path, then in $CUDA_HOME/lib64,
 *                     /usr/local/cuda/lib64 and /usr/local/cuda/targets/<arch>-linux/lib
 *   KILN_CUDA_GRAPH   "0" or "off": GPU artifacts open with the cuda-graph option off
 *   KILN_CUBLASLT_AUTOTUNE  "1": each matrix product takes the fastest of the algorithms
 *                     cuBLASLt's heuristic offers, timed once at open, instead of its first
 *                     choice: faster, but which algorithm wins (and so the order of the float
 *                     sums) depends on timing, so runs are no longer reproducible bit for bit */

/* The artifact format version this runtime reads (first manifest line: "kiln-artifact 1"). */
#define KILN_ARTIFACT_FORMAT_VERSION 1

/* Generated code may assume this alignment for every buffer handed to kiln_entry. The runtime
 * stages misaligned caller buffers through aligned copies, so callers only pay for it, never
 * crash on it. */
#define KILN_BUFFER_ALIGNMENT 64

/* Status codes. Every fallible function returns one; on failure kiln_last_error() says why. */
typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_IO = 1,               /* file missing, unreadable, not a regular file */
  KILN_ERROR_INVALID_ARTIFACT = 2, /* not an ELF shared object, truncated, bad manifest, missing symbol */
  KILN_ERROR_UNSUPPORTED = 3,      /* well-formed but not loadable here: format version, machine */
  KILN_ERROR_CPU_FEATURES = 4,     /* compiled for CPU features this host lacks */
  KILN_ERROR_INVALID_ARGUMENT = 5, /* null pointer, index out of range, missing buffer, bad device string */
  KILN_ERROR_NO_DEVICE = 6,        /* the device asked for is not there: no CUDA driver, no GPU, index out of range */
  KILN_ERROR_DEVICE = 7            /* the device failed: a CUDA driver or library call returned an error */
} kiln_status;

/* Element types. The numeric values are part of the ABI and never change. */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_F16 = 2,
  KILN_DTYPE_BF16 = 3,
  KILN_DTYPE_F64 = 4,
  KILN_DTYPE_I64 = 5,
  KILN_DTYPE_I32 = 6,
  KILN_DTYPE_I16 = 7,
  KILN_DTYPE_I8 = 8,
  KILN_DTYPE_U8 = 9,
  KILN_DTYPE_U16 = 10,
  KILN_DTYPE_U32 = 11,
  KILN_DTYPE_U64 = 12,
  KILN_DTYPE_BOOL = 13 /* one byte per element, 0 or 1 */
} kiln_dtype;

/* One tensor of an artifact's signature. The pointers stay valid until the artifact is closed. */
typedef struct kiln_tensor_info {
  const char *name;    /* decoded (no percent-encoding), NUL-terminated */
  kiln_dtype dtype;
  int rank;            /* 0 for a scalar */
  const int64_t *dims; /* rank entries, row-major; a dim may be 0 */
} kiln_tensor_info;

typedef struct kiln_artifact kiln_artifact;

/* Message of the last failure on the calling thread ("" if none). Valid until the next failing
 * call on the same thread. Messages are one line and start with the artifact path. */
const char *kiln_last_error(void);

/* Validates the file (ELF x86-64 shared object, not truncated), loads it, reads its manifest and
 * prepares it to run on one device: for the CPU it checks the host has the CPU features it was
 * compiled for; for a GPU it loads the driver (libcuda.so.1, or $KILN_LIBCUDA), picks the GPU code
 * for that GPU, allocates device memory and uploads the weights. On success *out owns the artifact.
 *
 * `device` is "cpu", "gpu" (= "gpu:0") or "gpu:N"; NULL or "" picks the artifact's default: cpu
 * when it has CPU code, else gpu:0. A device kind the artifact has no code for, or a GPU it cannot
 * run on (no code for its architecture, a driver too old), fails with KILN_ERROR_UNSUPPORTED naming
 * both; a missing driver or GPU with KILN_ERROR_NO_DEVICE; a bad device string with
 * KILN_ERROR_INVALID_ARGUMENT. Never falls back to another device. */
kiln_status kiln_artifact_open_device(const char *path, const char *device, kiln_artifact **out);

/* Flags of kiln_artifact_open_flags. */
enum {
  /* Skip the check of the seal kilnc ends every artifact with (a CRC-32 of all its bytes, read
   * in full at open: about 0.2 ms per MB). For artifacts from a store the caller trusts, where
   * reading a large file twice matters. The ELF and manifest checks still run. */
  KILN_OPEN_TRUSTED = 1u << 0
};

/* kiln_artifact_open_device with flags (KILN_OPEN_*). Without KILN_OPEN_TRUSTED an artifact
 * whose bytes do not match its seal (changed or damaged after kilnc wrote it) or that has none
 * fails with KILN_ERROR_INVALID_ARTIFACT. */
kiln_status kiln_artifact_open_flags(const char *path, const char *device, unsigned flags,
                                     kiln_artifact **out);

/* kiln_artifact_open(path, out) == kiln_artifact_open_device(path, NULL, out). */
kiln_status kiln_artifact_open(const char *path, kiln_artifact **out);

/* Unloads the artifact. Accepts NULL. */
void kiln_artifact_close(kiln_artifact *artifact);

/* Manifest metadata; never NULL for an open artifact ("" where the manifest omits the record). */
const char *kiln_artifact_path(const kiln_artifact *artifact);
const char *kiln_artifact_name(const kiln_artifact *artifact);
const char *kiln_artifact_target(const kiln_artifact *artifact);
const char *kiln_artifact_cpu(const kiln_artifact *artifact);
/* The CPU features as written in the manifest, comma-separated ("" when none). */
const char *kiln_artifact_features(const kiln_artifact *artifact);

/* The device the artifact runs on: "cpu" or "gpu:N". */
const char *kiln_artifact_device(const kiln_artifact *artifact);
/* A GPU's name, architecture and driver, e.g. "NVIDIA H100 80GB HBM3 (sm_90, driver 13.0)"; for
 * the CPU the manifest's cpu record. */
const char *kiln_artifact_device_name(const kiln_artifact *artifact);
/* The device kinds the artifact has code for, comma-separated: "cpu", "cuda" or "cpu,cuda". */
const char *kiln_artifact_devices(const kiln_artifact *artifact);
/* The GPU code loaded: "cubin sm_90", or "ptx compute_80" when the driver compiled the PTX; ""
 * on the CPU. */
const char *kiln_artifact_device_code(const kiln_artifact *artifact);

/* Milliseconds the GPU spent on the last run's program, the copies of inputs and outputs excluded
 * (measured with CUDA events); -1 for CPU artifacts and before the first run. */
double kiln_artifact_last_device_ms(const kiln_artifact *artifact);

/* GPU artifacts, for benchmarks: runs the program `steps` times back to back on the inputs the
 * last kiln_artifact_run left on the device, copying nothing to or from the host and waiting only
 * at the end, and stores the GPU time per step in *ms (CUDA events around all the steps). This is
 * how long a step takes when the caller keeps data on the device. Needs one kiln_artifact_run
 * first; KILN_ERROR_UNSUPPORTED on the CPU. */
kiln_status kiln_artifact_time_steps(kiln_artifact *artifact, int steps, double *ms);

/* Kernel profiles, for artifacts compiled with kilnc --profile (CPU code; docs/user-guide.md,
 * "Profiling"). The number of kernels the artifact times: 0 when it was compiled without
 * --profile. */
int64_t kiln_artifact_profile_kernels(const kiln_artifact *artifact);
/* Kernel `index` (0 <= index < kiln_artifact_profile_kernels): the function it belongs to
 * ("main", or an entry such as "eval"), its kind ("parallel": a loop over tiles shared by the
 * threads, "serial", "copy" or "call") and the ONNX nodes it computes, as strings the artifact
 * owns; and the nanoseconds it ran and its calls, summed over every run since the artifact was
 * opened or kiln_artifact_profile_reset. Any output pointer may be NULL. The counters are read
 * while no run is in progress on the artifact. */
kiln_status kiln_artifact_profile_kernel(kiln_artifact *artifact, int64_t index, const char **function,
                                         const char **kind, const char **nodes, int64_t *nanoseconds,
                                         int64_t *calls);
/* Sets every kernel's nanoseconds and calls to zero (e.g. after warm-up runs). */
kiln_status kiln_artifact_profile_reset(kiln_artifact *artifact);

/* Sets a run option. "cuda-graph" = "on" | "off" (default on; off when the environment has
 * KILN_CUDA_GRAPH=0 or CUDA_LAUNCH_BLOCKING=1 at open): GPU runs record the program once as a CUDA graph, at the end of the
 * first run, and replay it; CPU artifacts accept and ignore it. An unknown key or value fails with
 * KILN_ERROR_INVALID_ARGUMENT. */
kiln_status kiln_artifact_set_option(kiln_artifact *artifact, const char *key, const char *value);
/* What the next GPU run does with the CUDA graph: "off" (the option is off: direct launches),
 * "pending" (on; the graph is captured at the end of the next run, which launches directly),
 * "on" (replays the captured graph) or "failed: WHY" (capture failed, e.g. a driver that cannot
 * capture a library's kernels; runs launch directly). "" on the CPU. Valid until the next call
 * on the artifact. */
const char *kiln_artifact_cuda_graph(const kiln_artifact *artifact);

/* Data-parallel train steps (kilnc --train --data-parallel=true) sum their gradients over the
 * replicas through hooks (kiln/collective_abi.h). Non-zero when the artifact has them (on the
 * device it was opened on). */
int kiln_artifact_has_collectives(const kiln_artifact *artifact);
/* Installs `hooks` (copied; NULL uninstalls: one replica) for the artifact's next runs. The hooks
 * belong to the loaded code, which every artifact opened from the same file shares: replicas in one
 * process open copies of the file. Fails with KILN_ERROR_INVALID_ARGUMENT for an artifact without
 * collectives. */
struct kiln_collective_hooks;
kiln_status kiln_artifact_set_collective(kiln_artifact *artifact, const struct kiln_collective_hooks *hooks);
/* The same for a step on a GPU: its buffers are device memory and its sums run on the device
 * (NCCL; kiln/collective_abi.h). With hooks installed, runs launch the program directly instead of
 * replaying a CUDA graph. Fails with KILN_ERROR_INVALID_ARGUMENT for an artifact on the CPU or
 * without collectives. */
struct kiln_device_collective_hooks;
kiln_status kiln_artifact_set_device_collective(kiln_artifact *artifact,
                                                const struct kiln_device_collective_hooks *hooks);

int kiln_artifact_num_inputs(const kiln_artifact *artifact);
int kiln_artifact_num_outputs(const kiln_artifact *artifact);
kiln_status kiln_artifact_input(const kiln_artifact *artifact, int index, kiln_tensor_info *out);
kiln_status kiln_artifact_output(const kiln_artifact *artifact, int index, kiln_tensor_info *out);
/* Index of the input/output with this (decoded) name, or -1. */
int kiln_artifact_find_input(const kiln_artifact *artifact, const char *name);
int kiln_artifact_find_output(const kiln_artifact *artifact, const char *name);
/* Train steps (kilnc --train): the state kind of an input or output ("parameter", "momentum",
 * "adam_m", "adam_v", "ema", "step"), or "" for data, labels, the loss and model outputs, and for
 * an index out of range. A state input and the output of the same name are one tensor before and
 * after the step: the caller passes each output back as the next step's input (swapping two
 * buffers needs no copy). */
const char *kiln_artifact_input_state(const kiln_artifact *artifact, int index);
const char *kiln_artifact_output_state(const kiln_artifact *artifact, int index);

/* Entries besides the main one: a train step (kilnc --train, CPU and GPU targets) has "eval", the forward
 * pass on given weights (its inputs: the model's inputs and the step's state tensors of kinds
 * parameter, running_mean, running_var, under their names), and "init", which takes no inputs
 * and returns the initial value of every state tensor of the step, in the step's order. */
int kiln_artifact_num_entries(const kiln_artifact *artifact);
/* The name of entry `index`, or NULL when out of range. */
const char *kiln_artifact_entry_name(const kiln_artifact *artifact, int index);
/* -1 for an unknown entry. */
int kiln_artifact_entry_num_inputs(const kiln_artifact *artifact, const char *entry);
int kiln_artifact_entry_num_outputs(const kiln_artifact *artifact, const char *entry);
kiln_status kiln_artifact_entry_input(const kiln_artifact *artifact, const char *entry, int index,
                                      kiln_tensor_info *out);
kiln_status kiln_artifact_entry_output(const kiln_artifact *artifact, const char *entry, int index,
                                       kiln_tensor_info *out);
/* Runs entry `entry` on the artifact's device, with buffers as for kiln_artifact_run in its own
 * signature's order. With resident state (below), an input whose buffer is NULL and whose name is
 * a state tensor's takes that tensor's current value, on the device. */
kiln_status kiln_artifact_run_entry(kiln_artifact *artifact, const char *entry, void *const *inputs,
                                    void *const *outputs);
/* Resident state, for train steps on any device. kiln_artifact_state_init allocates the step's
 * state tensors (the inputs with a state kind, each with the output of the same name) on the
 * artifact's device and sets them from the init entry. From then on kiln_artifact_run reads each
 * state input from there and writes each state output back there: the caller's buffers for state
 * tensors are ignored and may be NULL, and nothing is copied between the host and the device for
 * them (each state tensor has two buffers on the device that trade places after every step; on a
 * GPU one CUDA graph is captured for each of the two arrangements). Calling it again starts over
 * from the init entry. KILN_ERROR_INVALID_ARGUMENT for an artifact without an init entry. */
kiln_status kiln_artifact_state_init(kiln_artifact *artifact);
/* Non-zero after a successful kiln_artifact_state_init. */
int kiln_artifact_has_resident_state(const kiln_artifact *artifact);
/* Copies the current value of state tensor `name` (`bytes` must be its byte size) to the host, or
 * sets it from the host (to restore a checkpoint). Needs kiln_artifact_state_init first. */
kiln_status kiln_artifact_state_read(kiln_artifact *artifact, const char *name, void *data, size_t bytes);
kiln_status kiln_artifact_state_write(kiln_artifact *artifact, const char *name, const void *data, size_t bytes);

/* Runs the model once on its device. inputs/outputs hold one dense row-major host buffer per
 * tensor, in manifest order, each at least kiln_tensor_info_byte_size bytes; buffers of zero bytes
 * may be NULL. On a GPU the inputs are copied to the device, the program runs on one stream and
 * the outputs are copied back before the call returns. Calls on one artifact are serialized,
 * because generated code may keep state in static buffers; use separate processes for parallel
 * runs of the same model. */
kiln_status kiln_artifact_run(kiln_artifact *artifact, void *const *inputs, void *const *outputs);

/* Bytes per element (bool is 1); 0 for an invalid dtype. */
size_t kiln_dtype_size(kiln_dtype dtype);
/* Manifest spelling ("f32", "bool", ...); "invalid" for an unknown value. */
const char *kiln_dtype_name(kiln_dtype dtype);
/* Parses a manifest spelling; KILN_DTYPE_INVALID if unknown. */
kiln_dtype kiln_dtype_from_name(const char *name);

/* Element count and byte size of a tensor (1 element for a scalar); -1 on int64 overflow. */
int64_t kiln_tensor_info_num_elements(const kiln_tensor_info *info);
int64_t kiln_tensor_info_byte_size(const kiln_tensor_info *info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_H */
