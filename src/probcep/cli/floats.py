"""Python's `repr` of doubles in [1e-4, 1e16) that are not integers, compiled.

The shortest decimal that reads back as the same double, and of those the nearest
(ties to an even last digit), is what `repr` writes; Schubfach finds it with three
128-bit products per double (R. Giulietti, "The Schubfach way to render doubles", 2021;
this follows A. Bolz's C++ version in drachennest, `schubfach_64.cc`). Arrow's cast to
text gives the same digits through double-conversion at about twice the cost, and the
probabilities are half the text of `probcep group`'s lines. In this range `repr` writes
the digits positionally ("0.000123", "12.5"); other values are left to the caller.
tests/cli/test_floats.py compares the two on about 250,000 doubles of every exponent in
the range, powers of two (whose lower neighbour is closer) and short decimals (3.9
million in a one-off check when this was written).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

#: Powers of ten 10**K, K in [K_MIN, K_MAX], as 128-bit g = ceil(10**K * 2**(127 - e)),
#: e = floor(log2(10**K)), split into high and low 64-bit halves.
K_MIN, K_MAX = -292, 326
#: Bytes `repr` takes at most for a double in the range ("0.000" and 17 digits).
WIDTH = 24


def _powers() -> tuple[np.ndarray, np.ndarray]:
    high, low = [], []
    for k in range(K_MIN, K_MAX + 1):
        v = Fraction(10) ** k * Fraction(2) ** (127 - ((k * 1741647) >> 19))
        g = -(-v.numerator // v.denominator)
        high.append(g >> 64)
        low.append(g & (2 ** 64 - 1))
    return np.array(high, np.uint64), np.array(low, np.uint64)


G_HIGH, G_LOW = _powers()
PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode("ascii"), np.uint8)
POW10 = np.array([10 ** i for i in range(20)], np.uint64)
_S52 = np.uint64(52)
_U0, _U1, _U2, _U4 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(4)
_U10, _U40, _U100 = np.uint64(10), np.uint64(40), np.uint64(100)
_FRACTION, _EXPONENT = np.uint64((1 << 52) - 1), np.uint64(0x7FF)


@intrinsic
def _mul128(typingctx, a, b):
    """The 128-bit product of two uint64, as (high, low): one widening multiply, which
    Numba's integer types cannot express (four 32-bit products and their carries made
    `repr` of a double 35.1 ns here, this 32.5 ns)."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type,
                                  [high, builder.trunc(product, ir.IntType(64))])

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _round_to_odd(g_high, g_low, cp):
    """(g * cp) >> 128, its last bit set if any bit shifted out was (round to odd)."""
    x_high = _mul128(g_low, cp)[0]
    y_high, y_low = _mul128(g_high, cp)
    z = y_low + x_high
    carry = _U1 if z < y_low else _U0
    return (y_high + carry) | (_U1 if z > _U1 else _U0)


@njit(cache=True, nogil=True)
def _to_decimal(bits):
    """(s, k): the double with these bits is closest to s * 10**k among the shortest."""
    fraction = bits & _FRACTION
    exponent = np.int64((bits >> _S52) & _EXPONENT)
    if exponent != 0:
        c, q = fraction | (_U1 << _S52), exponent - 1075
    else:
        c, q = fraction, np.int64(-1074)
    even = (c & _U1) == _U0
    closer = fraction == _U0 and exponent > 1  # the lower neighbour is nearer
    cbl = _U4 * c - _U2 + (_U1 if closer else _U0)
    cb, cbr = _U4 * c, _U4 * c + _U2
    k = ((q * 1262611 - 524031) if closer else q * 1262611) >> 22
    h = np.uint64(q + ((-k * 1741647) >> 19) + 1)
    g_high, g_low = G_HIGH[-k - K_MIN], G_LOW[-k - K_MIN]
    vbl = _round_to_odd(g_high, g_low, cbl << h)
    vb = _round_to_odd(g_high, g_low, cb << h)
    vbr = _round_to_odd(g_high, g_low, cbr << h)
    lower = vbl + (_U0 if even else _U1)
    upper = vbr - (_U0 if even else _U1)
    s = vb // _U4
    if s >= _U10:
        sp = s // _U10
        up_inside = lower <= _U40 * sp
        wp_inside = _U40 * sp + _U40 <= upper
        if up_inside != wp_inside:
            return sp + (_U1 if wp_inside else _U0), k + 1
    u_inside = lower <= _U4 * s
    w_inside = _U4 * s + _U4 <= upper
    if u_inside != w_inside:
        return s + (_U1 if w_inside else _U0), k
    mid = _U4 * s + _U2
    up = vb > mid or (vb == mid and (s & _U1) != _U0)
    return s + (_U1 if up else _U0), k


@njit(cache=True, nogil=True, inline="always")
def put_digits(out, pos, s, n):
    """The `n` decimal digits of `s` (uint64, zero-padded on the left) at `pos`."""
    p = pos + n
    for _ in range(n // 2):
        r = np.int64(s % _U100) * 2
        s //= _U100
        out[p - 1] = PAIRS[r + 1]
        out[p - 2] = PAIRS[r]
        p -= 2
    if n & 1:
        out[pos] = np.uint8(48 + np.int64(s))
    return pos + n


@njit(cache=True, nogil=True)
def put_float(out, pos, bits):
    """`repr` of the double with these bits, in [1e-4, 1e16) and not integral."""
    s, k = _to_decimal(bits)
    while s % _U10 == _U0:
        s //= _U10
        k += 1
    n = 1
    while n < 20 and s >= POW10[n]:
        n += 1
    e10 = n - 1 + k  # the exponent of the first digit
    if e10 < 0:  # "0.000ddd"
        out[pos] = 48
        out[pos + 1] = 46
        pos += 2
        for _ in range(-e10 - 1):
            out[pos] = 48
            pos += 1
        return put_digits(out, pos, s, n)
    fraction = n - 1 - e10  # >= 1: the value is not integral
    scale = POW10[fraction]
    whole = s // scale
    pos = put_digits(out, pos, whole, e10 + 1)
    out[pos] = 46
    return put_digits(out, pos + 1, s - whole * scale, fraction)


@njit(cache=True, nogil=True)
def repr_texts(x, skip, out, offsets):
    """`repr` of each x[i] into `out` (WIDTH bytes per value is enough), value i at
    out[offsets[i]:offsets[i + 1]]; nothing for those with `skip[i]` (the values outside
    [1e-4, 1e16) or integral, which must be skipped). Returns the bytes written."""
    bits = x.view(np.uint64)
    pos = 0
    offsets[0] = 0
    for i in range(len(x)):
        if not skip[i]:
            pos = put_float(out, pos, bits[i])
        offsets[i + 1] = pos
    return pos
