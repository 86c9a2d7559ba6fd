"""compare_npy.py EXPECTED GOT [RTOL]: exits 1, printing the worst element,
unless |got - expected| <= 1e-5 + RTOL * |expected| everywhere (RTOL 1e-4)."""
import sys

import numpy as np

want, got = np.load(sys.argv[1]), np.load(sys.argv[2])
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if want.shape != got.shape:
    sys.exit(f"shape {got.shape}, expected {want.shape}")
err = np.abs(got.astype(np.float64) - want) - rtol * np.abs(want)
worst = np.unravel_index(np.argmax(err), err.shape) if err.size else ()
if err.size and err[worst] > 1e-5:
    sys.exit(f"at {worst}: got {got[worst]}, expected {want[worst]}")
print(f"match: {want.size} values")
