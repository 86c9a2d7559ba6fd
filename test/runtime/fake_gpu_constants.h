/* The weights of the fake GPU artifacts, shared with the tests that compute the expected outputs. */
#ifndef KILN_TEST_RUNTIME_FAKE_GPU_CONSTANTS_H
#define KILN_TEST_RUNTIME_FAKE_GPU_CONSTANTS_H

/* fake add: y = a + b + bias, over f32[2x3]. */
#define KILN_FAKE_ADD_BIAS 10, 20, 30, 40, 50, 60

/* fake matmul: W is k x n = 3 x 4 row-major, also stored transposed (n x k); one bias per column. */
#define KILN_FAKE_W 1, -2, 3, 0.5f, -1, 4, 0.25f, 2, 2, -3, 1, -1
#define KILN_FAKE_W_TRANSPOSED 1, -1, 2, -2, 4, -3, 3, 0.25f, 1, 0.5f, 2, -1
#define KILN_FAKE_COLUMN_BIAS 0.5f, -1, 2, -4

#endif /* KILN_TEST_RUNTIME_FAKE_GPU_CONSTANTS_H */
