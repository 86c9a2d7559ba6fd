// Tests for the transpose kernels linked into CPU artifacts
// (runtime/kernels/Transpose.c): each build this CPU runs, and the entry
// point that picks one, against a plain loop, over sizes that fill the 8x8
// blocks and sizes that leave edges, with rows further apart than their
// length on both sides.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" {
typedef void TransposeFn(const float *in, float *out, int64_t rows, int64_t cols, int64_t inRow,
                         int64_t outRow);
TransposeFn kiln_transpose, kilnTransposeGeneric;
#if defined(__x86_64__)
TransposeFn kilnTransposeAvx2;
#endif
}

namespace {

bool hasAvx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

struct Variant {
  std::string name;
  TransposeFn *fn;
};

std::vector<Variant> variants() {
  std::vector<Variant> all{{"entry point", kiln_transpose}, {"generic", kilnTransposeGeneric}};
#if defined(__x86_64__)
  if (hasAvx2())
    all.push_back({"avx2", kilnTransposeAvx2});
#endif
  return all;
}

TEST(TransposeTest, MatchesLoops) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  struct Shape {
    int64_t rows, cols, inPad, outPad;
  };
  // Whole blocks, the reorders of ResNet's images (16 x 784 and back),
  // edges in either dimension or both, a single row of blocks, and rows
  // with gaps after them.
  const Shape shapes[] = {{8, 8, 0, 0},    {16, 784, 0, 0}, {784, 16, 0, 0}, {9, 8, 0, 0},
                          {8, 13, 0, 0},   {21, 35, 0, 0},  {64, 72, 0, 0},  {130, 67, 5, 3},
                          {8, 200, 17, 1}, {3, 5, 0, 0},    {1, 40, 2, 0}};
  for (const Variant &variant : variants())
    for (const Shape &shape : shapes) {
      int64_t inRow = shape.cols + shape.inPad, outRow = shape.rows + shape.outPad;
      std::vector<float> in(shape.rows * inRow);
      for (float &x : in)
        x = value(rng);
      // Gaps in the output keep a sentinel: the kernel must not write there.
      const float sentinel = 12345.0f;
      std::vector<float> out(shape.cols * outRow, sentinel);
      variant.fn(in.data(), out.data(), shape.rows, shape.cols, inRow, outRow);
      for (int64_t j = 0; j < shape.cols; ++j)
        for (int64_t i = 0; i < outRow; ++i) {
          float expected = i < shape.rows ? in[i * inRow + j] : sentinel;
          ASSERT_EQ(out[j * outRow + i], expected)
              << variant.name << ", " << shape.rows << " x " << shape.cols << " (pads "
              << shape.inPad << ", " << shape.outPad << "): out[" << j << "][" << i << "]";
        }
    }
}

} // namespace
