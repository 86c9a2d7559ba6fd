// Tests for the products by constant weights that CPU artifacts call
// (runtime/kernels/PackedMatmul.c): kiln_matmul_constant_b, C += A B onto
// what C holds or C = A B over whatever it holds, B plain or transposed,
// tiles of a larger matrix (leading dimensions), several shapes at one call
// site, products of few rows (Kiln's own kernel on AVX2 CPUs without
// AVX-512); and kiln_matmul_constant_a, C += A B with A constant and few
// columns (through the direct convolution kernel on AVX2 CPUs without
// AVX-512, oneDNN's product elsewhere or where A's rows are apart); each
// against a float64 loop.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

extern "C" {
void kiln_matmul_constant_b(void **slot, int64_t transB, int64_t m, int64_t n, int64_t k,
                            const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                            int64_t ldc, int64_t accumulate);
void kiln_matmul_constant_a(void **slot, int64_t m, int64_t n, int64_t k, const float *b,
                            int64_t ldb, const float *a, int64_t lda, float *c, int64_t ldc);
}

namespace {

struct Case {
  int64_t m, n, k;
  bool transB, accumulate;
  // Padding past each row of A, B (as stored) and C: a tile of a wider matrix.
  int64_t padA = 0, padB = 0, padC = 0;
};

void check(void **slot, const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  int64_t lda = c.k + c.padA, ldb = (c.transB ? c.k : c.n) + c.padB, ldc = c.n + c.padC;
  std::vector<float> a(c.m * lda), b((c.transB ? c.n : c.k) * ldb), out(c.m * ldc);
  // B first: a site keeps B packed by its address, so calls that draw from
  // one seed must get the same B whatever their row count.
  for (std::vector<float> *values : {&b, &a, &out})
    for (float &v : *values)
      v = value(rng);
  const std::vector<float> before = out;
  // Twice: the first call builds the site's primitive and packs B, the
  // second reuses both.
  for (int call = 0; call < 2; ++call) {
    out = before;
    kiln_matmul_constant_b(slot, c.transB, c.m, c.n, c.k, a.data(), lda, b.data(), ldb,
                           out.data(), ldc, c.accumulate);
  }
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= c.n) {
        ASSERT_EQ(out[i * ldc + j], before[i * ldc + j]) << "padding of row " << i;
        continue;
      }
      double expected = c.accumulate ? before[i * ldc + j] : 0.0, magnitude = std::fabs(expected);
      for (int64_t p = 0; p < c.k; ++p) {
        double product = double(a[i * lda + p]) * (c.transB ? b[j * ldb + p] : b[p * ldb + j]);
        expected += product;
        magnitude += std::fabs(product);
      }
      ASSERT_NEAR(out[i * ldc + j], expected, 1e-5 * (1 + magnitude))
          << c.m << "x" << c.n << "x" << c.k << (c.transB ? " transB" : "")
          << (c.accumulate ? " accumulating" : " writing") << " at " << i << ", " << j;
    }
}

TEST(PackedMatmulTest, MatchesReference) {
  std::mt19937 rng(17);
  const Case cases[] = {
      // GPT-2's logits (a tile of them), written over C: no bias to add onto.
      {128, 300, 768, false, false},
      // A dense layer onto its bias, weights transposed (Gemm transB = 1).
      {8, 1000, 512, true, true},
      // One row (batch-1 inference), written and accumulated.
      {1, 256, 384, false, false},
      {1, 256, 384, true, true},
      // Tiles of wider matrices, sizes that divide nothing.
      {17, 45, 33, false, true, 5, 3, 7},
      {17, 45, 33, true, false, 2, 9, 4},
  };
  for (const Case &c : cases) {
    void *slot = nullptr;
    check(&slot, c, rng);
  }
}

// Products of 1 to 32 rows (batch-1 and small-batch inference), and to 64
// rows at most 1024 deep, which AVX2 CPUs without AVX-512 run as Kiln's own
// kernel (6 blocks of 16 columns for one row, one block for more, rows in
// equal groups of at most 6 sharing each block): every row count to 16 and
// a few to 64 (64 rows 1024 deep is the largest it takes; 33 rows 2048 deep
// is oneDNN's), column counts that
// leave a partial block or fill none, B plain and transposed, tiles of
// wider matrices, and a site that meets a product of 80 rows too
// (oneDNN's).
TEST(PackedMatmulTest, FewRows) {
  std::mt19937 rng(19);
  for (int64_t m = 1; m <= 16; ++m) {
    void *slot = nullptr;
    check(&slot, {m, 100 + 7 * m, 33 + m, m % 2 == 0, m % 3 == 0, m % 4, m % 5, m % 3}, rng);
  }
  const Case cases[] = {
      {1, 9, 5, true, false},
      {1, 112, 64, false, true},
      {2, 1000, 257, true, true},
      {7, 16, 1, false, false},
      {12, 97, 130, false, false, 3, 5, 1},
      {31, 77, 50, true, true, 1, 2, 3},
      {32, 40, 96, false, false},
      {57, 70, 768, true, false, 1, 2, 3},
      {64, 40, 1024, false, true},
      {33, 21, 2048, true, true},
  };
  for (const Case &c : cases) {
    void *slot = nullptr;
    check(&slot, c, rng);
  }
  void *slot = nullptr;
  for (int64_t m : {4, 80, 4, 13, 32}) {
    std::mt19937 same(20);
    check(&slot, {m, 50, 70, true, true}, same);
  }
}

TEST(PackedMatmulTest, OneSiteWritesAndAccumulates) {
  // A site meets each tile shape of its kernel; writing and accumulating
  // calls of one shape get primitives of their own. The weights are the
  // same on every call (a site packs each B it meets once): each check
  // draws them from the same seed.
  void *slot = nullptr;
  for (bool accumulate : {false, true, false}) {
    std::mt19937 rng(18);
    check(&slot, {16, 64, 32, false, accumulate}, rng);
  }
}

// A convolution tile's product by its filters at a 7x7 stage: 128 filters
// of 512 channels and 512 of 128 (on AVX2 CPUs without AVX-512, the direct
// kernel), 64 of 2048 (oneDNN's product), sizes that fill no block of 16
// filters or micro-tile of 6 columns, and A's rows apart (a tile of a wider
// A, always oneDNN's); two tiles of A at one site, each called twice
// (packed once).
TEST(PackedMatmulTest, ConstantA) {
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  struct ACase {
    int64_t m, n, k, padA, padB, padC;
  };
  for (const ACase &c : {ACase{128, 49, 512, 0, 0, 0}, ACase{512, 49, 128, 0, 0, 0},
                         ACase{64, 49, 2048, 0, 0, 0}, ACase{37, 13, 70, 0, 5, 3},
                         ACase{40, 64, 24, 6, 0, 2}}) {
    void *slot = nullptr;
    int64_t lda = c.k + c.padA, ldb = c.n + c.padB, ldc = c.n + c.padC;
    std::vector<float> tiles[2] = {std::vector<float>(c.m * lda), std::vector<float>(c.m * lda)};
    for (std::vector<float> &a : tiles)
      for (float &v : a)
        v = value(rng);
    for (int call = 0; call < 4; ++call) {
      const std::vector<float> &a = tiles[call % 2];
      std::vector<float> b(c.k * ldb), out(c.m * ldc);
      for (std::vector<float> *values : {&b, &out})
        for (float &v : *values)
          v = value(rng);
      const std::vector<float> before = out;
      kiln_matmul_constant_a(&slot, c.m, c.n, c.k, b.data(), ldb, a.data(), lda, out.data(), ldc);
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          double expected = before[i * ldc + j], magnitude = std::fabs(expected);
          for (int64_t p = 0; j < c.n && p < c.k; ++p) {
            double product = double(a[i * lda + p]) * b[p * ldb + j];
            expected += product;
            magnitude += std::fabs(product);
          }
          ASSERT_NEAR(out[i * ldc + j], expected, 1e-5 * (1 + magnitude))
              << c.m << "x" << c.n << "x" << c.k << ", call " << call << " at " << i << ", " << j;
        }
    }
  }
}

// One site called with products of both kinds (dense filters, which the
// direct kernel takes on AVX2 CPUs without AVX-512, and rows apart, which
// it does not), in both orders: each kind's calls find the other's sites
// in the slot, and every product is still right.
TEST(PackedMatmulTest, ConstantAOneSiteBothKinds) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const int64_t m = 32, n = 49, k = 96;
  std::vector<float> dense(m * k), apart(m * (k + 5)), b(k * n);
  for (std::vector<float> *values : {&dense, &apart, &b})
    for (float &v : *values)
      v = value(rng);
  for (bool denseFirst : {true, false}) {
    void *slot = nullptr;
    for (int call = 0; call < 4; ++call) {
      bool isDense = (call % 2 == 0) == denseFirst;
      const std::vector<float> &a = isDense ? dense : apart;
      int64_t lda = isDense ? k : k + 5;
      std::vector<float> out(m * n, 0.5f);
      kiln_matmul_constant_a(&slot, m, n, k, b.data(), n, a.data(), lda, out.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double expected = 0.5, magnitude = 0.5;
          for (int64_t p = 0; p < k; ++p) {
            expected += double(a[i * lda + p]) * b[p * n + j];
            magnitude += std::fabs(double(a[i * lda + p]) * b[p * n + j]);
          }
          ASSERT_NEAR(out[i * n + j], expected, 1e-5 * (1 + magnitude))
              << (denseFirst ? "dense first" : "apart first") << ", call " << call << " at " << i
              << ", " << j;
        }
    }
  }
}

} // namespace
