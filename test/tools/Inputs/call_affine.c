/* Calls a model compiled by kilnc through the header from --emit=header. */
#include <stdio.h>

#include "affine.h"

int main(void) {
  float x[AFFINE_X_ELEMENTS] = {1, 2, 3, -1, -2, -3};
  float y[AFFINE_Y_ELEMENTS], z[AFFINE_Z_ELEMENTS];
  affine(x, y, z);
  for (int i = 0; i < AFFINE_Y_ELEMENTS; ++i)
    printf("y[%d] = %g, z[%d] = %g\n", i, y[i], i, z[i]);
  return 0;
}
