// Which GEMM should Kiln's generated CPU code call?
//
// Times row-major f32 C = A*B (+ bias, ReLU where the API allows) with
// OpenBLAS cblas_sgemm, oneDNN dnnl_sgemm and the oneDNN matmul primitive
// (bias + eltwise_relu post-op), plus naive loops standing in for untiled
// generated code, at 1 and 2 threads; and measures how each library's thread
// pool interacts with an OpenMP (libomp) parallel loop in the same process,
// which is what Kiln's generated kernels use.
//
// This one file is compiled three times (see run.sh):
//   -DPART_NAIVE  g++ -O3 -march=native      naive loops and our epilogue
//   -DPART_OMP    clang -fopenmp -O2 -march=native (libomp: __kmpc_* calls,
//                 the same calls MLIR's OpenMP lowering emits)
//   (neither)     g++ -O2 -march=native      the driver, linked with the
//                 libraries.
//
// Usage: gemm_libraries table [--time S]      GFLOP/s table, 1 and 2 threads
//        gemm_libraries interact [--time S]   OpenMP loop <-> GEMM interaction
//        gemm_libraries one LIB M K N THREADS [--time S]   one case, with its spread

#if defined(PART_NAIVE)

extern "C" void naive_ijk(long M, long K, long N, const float *__restrict A,
                          const float *__restrict B, float *__restrict C) {
  // What an untiled linalg.matmul lowers to: reduction innermost.
  for (long i = 0; i < M; ++i)
    for (long j = 0; j < N; ++j) {
      float s = 0.f;
      for (long k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
      C[i * N + j] = s;
    }
}

extern "C" void naive_ikj(long M, long K, long N, const float *__restrict A,
                          const float *__restrict B, float *__restrict C) {
  // The same loops interchanged so the innermost one vectorizes over N.
  for (long i = 0; i < M; ++i) {
    float *c = C + i * N;
    for (long j = 0; j < N; ++j) c[j] = 0.f;
    for (long k = 0; k < K; ++k) {
      const float a = A[i * K + k];
      const float *b = B + k * N;
      for (long j = 0; j < N; ++j) c[j] += a * b[j];
    }
  }
}

// Our own epilogue after a plain sgemm: C = max(C + bias, 0), one thread.
extern "C" void bias_relu(long M, long N, float *__restrict C,
                          const float *__restrict bias) {
  for (long i = 0; i < M; ++i) {
    float *c = C + i * N;
    for (long j = 0; j < N; ++j) {
      const float v = c[j] + bias[j];
      c[j] = v > 0.f ? v : 0.f;
    }
  }
}

#elif defined(PART_OMP)

// An elementwise kernel as Kiln's generated code would run it: an OpenMP
// parallel loop (libomp). y = max(x * a + b, 0).
extern "C" void omp_elementwise(const float *__restrict x, float *__restrict y,
                                long n, float a, float b, int nthreads) {
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (long i = 0; i < n; ++i) {
    const float v = x[i] * a + b;
    y[i] = v > 0.f ? v : 0.f;
  }
}

#else // the driver

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

extern "C" void naive_ijk(long, long, long, const float *, const float *, float *);
extern "C" void naive_ikj(long, long, long, const float *, const float *, float *);
extern "C" void bias_relu(long, long, float *, const float *);
extern "C" void omp_elementwise(const float *, float *, long, float, float, int);

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double g_min_time = 0.25; // seconds of timed calls per measurement

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[(size_t)(q * (v.size() - 1))];
}
// 10th percentile of the last bench() call: close to what an unloaded machine
// gives, where the median also shows other processes' interference.
double g_last_p10 = 0;

// Warm-up (>= 3 calls and >= 20 ms), then timed calls until both min_reps and
// g_min_time are reached (at most max_reps). Returns the median seconds/call.
double bench(const std::function<void()> &f, int min_reps = 15,
             int max_reps = 5000, double min_time = -1) {
  if (min_time < 0) min_time = g_min_time;
  auto w0 = Clock::now();
  for (int i = 0; i < 3 || seconds(w0, Clock::now()) < 0.02; ++i) f();
  std::vector<double> ts;
  auto s0 = Clock::now();
  while (((int)ts.size() < min_reps || seconds(s0, Clock::now()) < min_time) &&
         (int)ts.size() < max_reps) {
    auto t0 = Clock::now();
    f();
    ts.push_back(seconds(t0, Clock::now()));
  }
  g_last_p10 = quantile(ts, 0.1);
  return median(ts);
}

// --- thread control ------------------------------------------------------
// oneDNN (Debian build) runs on OpenMP and was linked against libgomp; its
// GOMP_* calls may be served by libgomp or, if libomp comes first in the
// global symbol scope, by libomp's GOMP compatibility layer. Set the thread
// count in both runtimes so oneDNN sees it whichever one it uses.
void set_omp_threads_everywhere(int t) {
  for (const char *lib : {"libgomp.so.1", "libomp.so.5"}) {
    if (void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD)) {
      if (auto f = (void (*)(int))dlsym(h, "omp_set_num_threads")) f(t);
      dlclose(h);
    }
  }
}
void set_threads(int t) {
  openblas_set_num_threads(t);
  set_omp_threads_everywhere(t);
}
std::string gomp_provider() {
  void *p = dlvsym(RTLD_DEFAULT, "GOMP_parallel", "GOMP_4.0");
  if (!p) p = dlsym(RTLD_DEFAULT, "GOMP_parallel");
  Dl_info info{};
  if (p && dladdr(p, &info) && info.dli_fname) return info.dli_fname;
  return "(unresolved)";
}

// --- problem ---------------------------------------------------------------
struct Shape {
  long M, K, N;
  const char *what;
};
const Shape kShapes[] = {
    {64, 784, 1024, "MLP b64 L1"},     {64, 1024, 1024, "MLP b64 L2"},
    {64, 1024, 10, "MLP b64 head"},    {256, 784, 1024, "MLP b256 L1"},
    {256, 1024, 1024, "MLP b256 L2"},  {256, 1024, 10, "MLP b256 head"},
    {128, 256, 256, "xfmr QKV/out"},   {128, 256, 1024, "xfmr FFN up"},
    {128, 1024, 256, "xfmr FFN down"}, {128, 64, 128, "attn QK^T/head"},
    {128, 128, 64, "attn PV/head"},    {3136, 576, 64, "conv im2col 56x56"},
    {784, 1152, 128, "conv im2col 28x28"},
};

struct Problem {
  long M, K, N;
  std::vector<float> A, B, bias, C, ref;
  Problem(long M, long K, long N) : M(M), K(K), N(N), A(M * K), B(K * N), bias(N), C(M * N), ref(M * N) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> d(-1.f, 1.f);
    for (auto &x : A) x = d(rng);
    for (auto &x : B) x = d(rng);
    for (auto &x : bias) x = d(rng);
  }
  double flops() const { return 2.0 * M * K * N; }
};

// Checks C against ref (both already including the epilogue if any).
bool check(const Problem &p, const float *C, const float *ref, const char *name) {
  double maxdiff = 0, maxref = 1e-30;
  for (long i = 0; i < p.M * p.N; ++i) {
    maxdiff = std::max(maxdiff, (double)std::fabs(C[i] - ref[i]));
    maxref = std::max(maxref, (double)std::fabs(ref[i]));
  }
  bool ok = maxdiff <= 1e-4 * maxref * std::sqrt((double)p.K) + 1e-5;
  if (!ok)
    std::printf("  !! %s wrong: max|diff|=%g (max|ref|=%g)\n", name, maxdiff, maxref);
  return ok;
}

// --- oneDNN matmul primitive ----------------------------------------------
struct DnnlMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::matmul prim;
  dnnl::memory a, b, bias, c;
  std::string impl;
  // weights_any: let oneDNN pick the weights layout and reorder B into it
  // once (what an AOT compiler can do with constant weights).
  DnnlMatmul(Problem &p, bool weights_any, bool bias_relu) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc a_md({p.M, p.K}, dt::f32, tag::ab);
    dnnl::memory::desc b_plain({p.K, p.N}, dt::f32, tag::ab);
    dnnl::memory::desc b_md({p.K, p.N}, dt::f32, weights_any ? tag::any : tag::ab);
    dnnl::memory::desc bias_md({1, p.N}, dt::f32, tag::ab);
    dnnl::memory::desc c_md({p.M, p.N}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (bias_relu) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(po);
    }
    auto desc = bias_relu ? dnnl::matmul::desc(a_md, b_md, bias_md, c_md)
                          : dnnl::matmul::desc(a_md, b_md, c_md);
    dnnl::matmul::primitive_desc pd(desc, attr, eng);
    impl = pd.impl_info_str();
    prim = dnnl::matmul(pd);
    a = dnnl::memory(a_md, eng, p.A.data());
    bias = dnnl::memory(bias_md, eng, p.bias.data());
    c = dnnl::memory(c_md, eng, p.C.data());
    dnnl::memory b_user(b_plain, eng, p.B.data());
    if (pd.weights_desc() != b_plain) {
      b = dnnl::memory(pd.weights_desc(), eng);
      dnnl::reorder(b_user, b).execute(strm, b_user, b);
      strm.wait();
    } else {
      b = b_user;
    }
  }
  void run() {
    prim.execute(strm, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b},
                        {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, c}});
    strm.wait();
  }
};

void obl_gemm(Problem &p) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p.M, p.N, p.K, 1.f, p.A.data(), p.K,
              p.B.data(), p.N, 0.f, p.C.data(), p.N);
}
void dnnl_gemm(Problem &p) {
  dnnl_sgemm('N', 'N', p.M, p.N, p.K, 1.f, p.A.data(), p.K, p.B.data(), p.N, 0.f,
             p.C.data(), p.N);
}

void print_config() {
  const dnnl_version_t *v = dnnl_version();
  std::printf("# OpenBLAS: %s\n", openblas_get_config());
  std::printf("# oneDNN %d.%d.%d, effective ISA 0x%x, CPU runtime OMP\n", v->major, v->minor,
              v->patch, (unsigned)dnnl_get_effective_cpu_isa());
  std::printf("# oneDNN's GOMP_parallel is served by: %s\n", gomp_provider().c_str());
  for (const char *e : {"OMP_WAIT_POLICY", "KMP_BLOCKTIME", "OPENBLAS_THREAD_TIMEOUT",
                        "GOMP_SPINCOUNT", "OMP_NUM_THREADS"})
    if (const char *s = std::getenv(e)) std::printf("# env %s=%s\n", e, s);
}

// --- table -----------------------------------------------------------------
const char *kCols[] = {"naive_ijk", "naive_ikj", "openblas", "obl+epi", "dnnl_sgemm",
                       "dsgemm+epi", "mm_ab+pe", "mm_any+pe"};
constexpr int kNumCols = 8;

int run_table() {
  print_config();
  std::printf("# GFLOP/s = 2*M*K*N / median time; '+epi' = sgemm then our 1-thread\n"
              "# bias+ReLU loop; 'mm_*+pe' = oneDNN matmul primitive with bias and a ReLU\n"
              "# post-op, weights plain (ab) or in oneDNN's chosen layout (any, reordered\n"
              "# once, outside the timing). naive_* only at 1 thread.\n");
  std::vector<std::string> impls;
  for (int threads : {1, 2}) {
    set_threads(threads);
    std::printf("\n## threads=%d, GFLOP/s at the median time\n", threads);
    std::string header, p10_rows;
    char hb[64];
    std::snprintf(hb, sizeof hb, "| %-18s | %14s |", "shape", "M,K,N");
    header += hb;
    for (auto c : kCols) {
      std::snprintf(hb, sizeof hb, " %10s |", c);
      header += hb;
    }
    header += "\n|" + std::string(20, '-') + "|" + std::string(16, '-') + "|";
    for (int i = 0; i < kNumCols; ++i) header += std::string(12, '-') + "|";
    header += "\n";
    std::printf("%s", header.c_str());
    for (const Shape &s : kShapes) {
      Problem p(s.M, s.K, s.N);
      // Reference: OpenBLAS one thread (plain) and with our epilogue.
      openblas_set_num_threads(1);
      obl_gemm(p);
      std::vector<float> ref_plain = p.C;
      bias_relu(p.M, p.N, p.C.data(), p.bias.data());
      std::vector<float> ref_epi = p.C;
      openblas_set_num_threads(threads);

      double g[kNumCols], g10[kNumCols];
      for (double &x : g) x = NAN;
      for (double &x : g10) x = NAN;
      int col = 0;
      // GFLOP/s from the median; records the p10 one in g10[col].
      auto gf = [&](double sec) {
        g10[col++] = p.flops() / g_last_p10 * 1e-9;
        return p.flops() / sec * 1e-9;
      };
      if (threads != 1) col = 2;
      if (threads == 1) {
        // naive: few reps (slow); cap time.
        std::fill(p.C.begin(), p.C.end(), 0.f);
        naive_ijk(p.M, p.K, p.N, p.A.data(), p.B.data(), p.C.data());
        check(p, p.C.data(), ref_plain.data(), "naive_ijk");
        g[0] = gf(bench([&] { naive_ijk(p.M, p.K, p.N, p.A.data(), p.B.data(), p.C.data()); }, 3, 5000,
                        std::min(g_min_time, 0.3)));
        naive_ikj(p.M, p.K, p.N, p.A.data(), p.B.data(), p.C.data());
        check(p, p.C.data(), ref_plain.data(), "naive_ikj");
        g[1] = gf(bench([&] { naive_ikj(p.M, p.K, p.N, p.A.data(), p.B.data(), p.C.data()); }, 3));
      }
      obl_gemm(p);
      check(p, p.C.data(), ref_plain.data(), "openblas");
      g[2] = gf(bench([&] { obl_gemm(p); }));
      g[3] = gf(bench([&] {
        obl_gemm(p);
        bias_relu(p.M, p.N, p.C.data(), p.bias.data());
      }));
      check(p, p.C.data(), ref_epi.data(), "openblas+epi");
      dnnl_gemm(p);
      check(p, p.C.data(), ref_plain.data(), "dnnl_sgemm");
      g[4] = gf(bench([&] { dnnl_gemm(p); }));
      g[5] = gf(bench([&] {
        dnnl_gemm(p);
        bias_relu(p.M, p.N, p.C.data(), p.bias.data());
      }));
      check(p, p.C.data(), ref_epi.data(), "dnnl_sgemm+epi");
      // Primitives are created after the thread count is set: oneDNN sizes
      // its partitioning from omp_get_max_threads() at creation.
      DnnlMatmul mm_ab(p, false, true), mm_any(p, true, true);
      std::fill(p.C.begin(), p.C.end(), 0.f);
      mm_ab.run();
      check(p, p.C.data(), ref_epi.data(), "matmul ab");
      g[6] = gf(bench([&] { mm_ab.run(); }));
      std::fill(p.C.begin(), p.C.end(), 0.f);
      mm_any.run();
      check(p, p.C.data(), ref_epi.data(), "matmul any");
      g[7] = gf(bench([&] { mm_any.run(); }));
      impls.push_back(std::to_string(threads) + "T " + s.what + ": ab=" + mm_ab.impl +
                      " any=" + mm_any.impl);

      char mkn[32];
      std::snprintf(mkn, sizeof mkn, "%ld,%ld,%ld", s.M, s.K, s.N);
      std::printf("| %-18s | %14s |", s.what, mkn);
      for (double x : g) {
        if (std::isnan(x))
          std::printf(" %10s |", "-");
        else
          std::printf(" %10.1f |", x);
      }
      std::printf("\n");
      std::fflush(stdout);
      char buf[64];
      std::snprintf(buf, sizeof buf, "| %-18s | %14s |", s.what, mkn);
      p10_rows += buf;
      for (double x : g10) {
        if (std::isnan(x))
          std::snprintf(buf, sizeof buf, " %10s |", "-");
        else
          std::snprintf(buf, sizeof buf, " %10.1f |", x);
        p10_rows += buf;
      }
      p10_rows += "\n";
    }
    std::printf("\n## threads=%d, GFLOP/s at the 10th-percentile time (best decile)\n%s%s",
                threads, header.c_str(), p10_rows.c_str());
  }
  std::printf("\n# oneDNN matmul implementations chosen:\n");
  for (auto &s : impls) std::printf("#   %s\n", s.c_str());
  return 0;
}

// --- interaction --------------------------------------------------------------
// Both the libomp loop and the GEMM use 2 threads on this 2-core machine.
// Alone: each kernel back to back. Pair: {omp loop; GEMM} alternating. If the
// idle threads of one pool spin while the other pool works, pair > sum.
int run_interact() {
  print_config();
  const int T = 2;
  set_threads(T);
  const long n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (long i = 0; i < n; ++i) x[i] = (float)((i % 1000) - 500) * 1e-3f;
  auto omp_loop = [&] { omp_elementwise(x.data(), y.data(), n, 1.0001f, 0.25f, T); };

  const Shape shapes[] = {{128, 64, 128, "attn QK^T/head"},
                          {128, 256, 1024, "xfmr FFN up"},
                          {256, 1024, 1024, "MLP b256 L2"}};
  std::printf("# omp loop: libomp parallel for over %ld floats, %d threads; GEMM %d threads.\n"
              "# times in microseconds (median); ratio = pair / (omp alone + gemm alone).\n"
              "# 'omp|pair' and 'gemm|pair' are the two halves as timed inside the pair loop.\n"
              "# p10 columns: the same at the 10th-percentile times (less disturbed by other load).\n",
              n, T, T);
  std::printf("| %-10s | %-15s | %9s | %9s | %9s | %9s | %6s | %9s | %9s | %8s | %8s | %8s | %6s |\n",
              "library", "shape", "omp alone", "gemm alone", "sum", "pair", "ratio", "omp|pair",
              "gemm|pair", "GF alone", "p10 sum", "p10 pair", "p10 r");
  std::printf("|------------|-----------------|-----------|-----------|-----------|-----------|"
              "--------|-----------|-----------|----------|----------|----------|--------|\n");
  const double quiet = 0.4; // let the other pool's spinners go idle
  for (int lib = 0; lib < 3; ++lib) {
    const char *lname = lib == 0 ? "openblas" : lib == 1 ? "dnnl_sgemm" : "dnnl_mm+pe";
    for (const Shape &s : shapes) {
      Problem p(s.M, s.K, s.N);
      std::unique_ptr<DnnlMatmul> mm;
      if (lib == 2) mm.reset(new DnnlMatmul(p, true, true));
      std::function<void()> gemm = lib == 0   ? std::function<void()>([&] { obl_gemm(p); })
                                   : lib == 1 ? std::function<void()>([&] { dnnl_gemm(p); })
                                              : std::function<void()>([&] { mm->run(); });
      std::this_thread::sleep_for(std::chrono::duration<double>(quiet));
      double t_omp = bench(omp_loop, 50);
      double t_omp10 = g_last_p10;
      std::this_thread::sleep_for(std::chrono::duration<double>(quiet));
      double t_gemm = bench(gemm, 50);
      double t_gemm10 = g_last_p10;
      std::this_thread::sleep_for(std::chrono::duration<double>(quiet));
      std::vector<double> tp, to, tg;
      for (int i = 0; i < 5; ++i) {
        omp_loop();
        gemm();
      }
      auto s0 = Clock::now();
      while (tp.size() < 50 || seconds(s0, Clock::now()) < g_min_time) {
        auto t0 = Clock::now();
        omp_loop();
        auto t1 = Clock::now();
        gemm();
        auto t2 = Clock::now();
        to.push_back(seconds(t0, t1));
        tg.push_back(seconds(t1, t2));
        tp.push_back(seconds(t0, t2));
        if (tp.size() >= 20000) break;
      }
      double pair = median(tp), pair10 = quantile(tp, 0.1);
      std::printf("| %-10s | %-15s | %9.1f | %9.1f | %9.1f | %9.1f | %6.2f | %9.1f | %9.1f | %8.1f "
                  "| %8.1f | %8.1f | %6.2f |\n",
                  lname, s.what, t_omp * 1e6, t_gemm * 1e6, (t_omp + t_gemm) * 1e6, pair * 1e6,
                  pair / (t_omp + t_gemm), median(to) * 1e6, median(tg) * 1e6,
                  p.flops() / t_gemm * 1e-9, (t_omp10 + t_gemm10) * 1e6, pair10 * 1e6,
                  pair10 / (t_omp10 + t_gemm10));
      std::fflush(stdout);
    }
  }
  return 0;
}

// Diagnostics: one library, one shape, one thread count; prints the spread.
//   one LIB M K N THREADS   (LIB: openblas | dnnl_sgemm | dnnl_mm)
int run_one(int argc, char **argv) {
  if (argc < 7) return 2;
  std::string lib = argv[2];
  long M = std::atol(argv[3]), K = std::atol(argv[4]), N = std::atol(argv[5]);
  int T = std::atoi(argv[6]);
  print_config();
  set_threads(T);
  Problem p(M, K, N);
  std::unique_ptr<DnnlMatmul> mm;
  if (lib == "dnnl_mm") {
    // Creation cost (primitive + one weights reorder), what a loader pays once.
    std::vector<double> tc;
    for (int i = 0; i < 5; ++i) {
      auto t0 = Clock::now();
      mm.reset(new DnnlMatmul(p, true, true));
      tc.push_back(seconds(t0, Clock::now()));
    }
    std::printf("dnnl_mm create+reorder: first %.0f us, median of 5 %.0f us\n", tc[0] * 1e6,
                median(tc) * 1e6);
  }
  std::function<void()> f = lib == "openblas"     ? std::function<void()>([&] { obl_gemm(p); })
                            : lib == "dnnl_sgemm" ? std::function<void()>([&] { dnnl_gemm(p); })
                                                  : std::function<void()>([&] { mm->run(); });
  for (int i = 0; i < 10; ++i) f();
  std::vector<double> ts;
  auto s0 = Clock::now();
  while (seconds(s0, Clock::now()) < g_min_time) {
    auto t0 = Clock::now();
    f();
    ts.push_back(seconds(t0, Clock::now()));
  }
  std::sort(ts.begin(), ts.end());
  auto q = [&](double f) { return ts[(size_t)(f * (ts.size() - 1))] * 1e6; };
  std::printf("%s %ld,%ld,%ld T=%d: n=%zu  us: min %.1f p10 %.1f p50 %.1f p90 %.1f max %.1f"
              "  GFLOP/s@p50 %.1f\n",
              lib.c_str(), M, K, N, T, ts.size(), q(0), q(0.1), q(0.5), q(0.9), q(1),
              p.flops() / q(0.5) * 1e-3);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "table";
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--time")) g_min_time = std::atof(argv[i + 1]);
  if (mode == "table") return run_table();
  if (mode == "interact") return run_interact();
  if (mode == "one") return run_one(argc, argv);
  std::fprintf(stderr, "usage: %s table|interact [--time S]\n", argv[0]);
  return 2;
}

#endif
