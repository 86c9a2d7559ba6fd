#!/usr/bin/env python3
"""Fits the f32 exp and erf approximations of kiln-vectorizable-math.

Reweighted least squares on Chebyshev-spaced points (weights grow where the
relative error is largest, a cheap stand-in for Remez), then an error check
with the coefficients rounded to f32 and every step rounded to f32 (no FMA,
so slightly pessimistic). Prints the coefficients that VectorizableMath.cpp
uses. Needs numpy (bench/.venv has it):
    bench/.venv/bin/python codegen/CPU/fit_approximations.py
"""
import math

import numpy as np


def chebyshev(lo, hi, n):
    return lo + (np.cos(np.linspace(0, np.pi, n)) + 1) / 2 * (hi - lo)


def fit_exp(degree=6, lo=0.0, hi=math.log(2), iterations=60, compound=False):
    """exp(r) = 1 + r (c1 + r (c2 + ...)) on [lo, hi]. compound: weights
    multiply up over the iterations (converges further, for the degree-5 fit)."""
    r = chebyshev(lo, hi, 20001)
    f = np.exp(r)
    weight = np.ones_like(r)
    for _ in range(iterations):
        powers = r[:, None] ** np.arange(1, degree + 1)
        scale = weight / f
        c, *_ = np.linalg.lstsq(powers * scale[:, None], (f - 1) * scale, rcond=None)
        error = np.abs(1 + powers @ c - f) / f
        weight = weight * (1 + error / error.max()) if compound else 1 + 50 * error / error.max()
    return [np.float32(v) for v in c], error.max()


def fit_erf(p_degree=6, q_degree=5, iterations=60):
    """erf(x) / x = P(x^2) / Q(x^2), Q(0) = 1, on x in (0, 4]."""
    erf = np.vectorize(math.erf)
    x = np.clip(chebyshev(0.0, 4.0, 4000), 1e-6, 4.0)
    s = x * x
    f = erf(x) / x
    weight = np.ones_like(s)
    q_previous = np.ones_like(s)
    for _ in range(iterations):
        columns = np.hstack([s[:, None] ** np.arange(p_degree + 1),
                             -(f * s)[:, None] * s[:, None] ** np.arange(q_degree)])
        scale = weight / (f * q_previous)
        c, *_ = np.linalg.lstsq(columns * scale[:, None], f * scale, rcond=None)
        p, q = c[:p_degree + 1], np.concatenate([[1.0], c[p_degree + 1:]])
        q_previous = np.polyval(q[::-1], s)
        error = np.abs(x * np.polyval(p[::-1], s) / q_previous - erf(x)) / erf(x)
        weight = 1 + 50 * error / error.max()
    return [np.float32(v) for v in p], [np.float32(v) for v in q], error.max()


def horner32(coefficients, t):
    acc = np.full_like(t, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc = (acc * t + c).astype(np.float32)
    return acc


def ulp_error(got, exact):
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def exp32(c, x, k):
    """exp(x) as the kernels compute it in float32: r = x - k ln2 in two
    steps (Cody-Waite), the polynomial 1 + c1 r + ... in r, scaled by 2^k."""
    r = (x - k * np.float32(0.693359375)).astype(np.float32)
    r = (r + k * np.float32(2.12194440e-4)).astype(np.float32)
    return (horner32([np.float32(1)] + c, r) * np.exp2(k.astype(np.float64))).astype(np.float32)


def main():
    c, e = fit_exp()
    print("exp: c1..c6 =", [float(v) for v in c], f"(relative error {e:.2g})")
    x = np.linspace(-87.3, 88.72, 2_000_001).astype(np.float32)
    got = exp32(c, x, np.floor(x * np.float32(1.44269504)).astype(np.float32))
    err = ulp_error(got, np.exp(x.astype(np.float64)))
    print(f"     f32: max {err.max():.2f} ulp, mean {err.mean():.2f} ulp")

    # With a scaling instruction (AVX-512's vscalefps): k = round(x / ln2),
    # so |r| <= ln2 / 2 and degree 5 is enough; x clamped to [-104, 89].
    half = math.log(2) / 2 + 1e-3
    c, e = fit_exp(degree=5, lo=-half, hi=half, iterations=200, compound=True)
    print("exp (scaled): c1..c5 =", [float(v) for v in c], f"(relative error {e:.2g})")
    x = np.linspace(-103.9, 88.72, 2_000_001).astype(np.float32)
    got = exp32(c, x, np.rint(x * np.float32(1.44269504)).astype(np.float32))
    exact = np.exp(x.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    err = ulp_error(got[normal], exact[normal])
    print(f"     f32: max {err.max():.2f} ulp, mean {err.mean():.2f} ulp (normal results)")
    sub = ~normal
    print(f"     subnormal results: max |error| {np.abs(got[sub] - exact[sub]).max():.2g}")

    p, q, e = fit_erf()
    print("erf: P =", [float(v) for v in p])
    print("     Q =", [float(v) for v in q], f"(relative error {e:.2g})")
    x = np.linspace(1e-6, 3.95, 2_000_001).astype(np.float32)
    s = (x * x).astype(np.float32)
    got = (x * (horner32(p, s) / horner32(q, s)).astype(np.float32)).astype(np.float32)
    err = ulp_error(got, np.vectorize(math.erf)(x.astype(np.float64)))
    print(f"     f32: max {err.max():.2f} ulp, mean {err.mean():.2f} ulp")


if __name__ == "__main__":
    main()
