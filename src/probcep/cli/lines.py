"""The JSON lines of `probcep group`, assembled in one compiled pass over the columns.

Integers and floats are written as text straight into one byte buffer, next to each
line's constant parts: no string array per column and no element-wise join (Arrow's
casts and join cost more than the engine on the benchmark stream, docs/performance.md
§1). Floats are `repr`'s digits by Schubfach (`floats.py`) and must lie in [1e-4, 1e16)
and not be integral, where `repr` writes them positionally; `output.group_lines` sends
any other column through Arrow and `repr`. The kernel releases the GIL, so it runs while
the engine works on the next batch.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from probcep.cli.floats import POW10, put_digits, put_float

INT64_MIN_TEXT = np.frombuffer(b"-9223372036854775808", np.uint8)
#: Bytes a line takes at most beyond its constant parts: four int64 and two floats.
VALUE_WIDTH = 4 * 20 + 2 * 24
#: Room past the last line: a constant part is stored a word at a time.
SLACK = 8


@intrinsic
def _store_word(typingctx, out, pos, word):
    """Store the uint64 `word` at byte `pos` of the uint8 array `out`, aligned or not
    (a loop of byte copies per constant part cost ten times as much)."""
    sig = types.void(out, types.intp, types.uint64)

    def codegen(context, builder, signature, args):
        array, at, value = args
        data = context.make_array(signature.args[0])(context, builder, array).data
        target = builder.bitcast(builder.gep(data, [at]), ir.IntType(64).as_pointer())
        builder.store(value, target).align = 1
        return context.get_dummy_value()

    return sig, codegen


def constant_words(parts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The constant parts of a line as rows of little-endian words, zero-padded (each is
    stored a word at a time, the padding overwritten by what follows), and their
    lengths."""
    texts = [p.encode("ascii") for p in parts]
    width = max(-(-len(t) // 8) for t in texts)
    words = np.zeros((len(texts), width), np.uint64)
    for j, t in enumerate(texts):
        words[j] = np.frombuffer(t.ljust(8 * width, b"\0"), "<u8")
    return words, np.array([len(t) for t in texts], np.int64)


@njit(cache=True, nogil=True, inline="always")
def _put_part(out, pos, words, j, length):
    """Constant part `j` at `pos` (writing up to 7 bytes past it)."""
    for k in range((length + 7) // 8):
        _store_word(out, pos + 8 * k, words[j, k])
    return pos + length


@njit(cache=True, nogil=True, inline="always")
def _put(out, pos, src, lo, hi):
    for k in range(hi - lo):
        out[pos + k] = src[lo + k]
    return pos + hi - lo


@njit(cache=True, nogil=True, inline="always")
def _put_int(out, pos, v):
    """`str(v)` of an int64."""
    if v < 0:
        if v == -9223372036854775807 - 1:  # has no positive counterpart in int64
            return _put(out, pos, INT64_MIN_TEXT, 0, len(INT64_MIN_TEXT))
        out[pos] = 45  # "-"
        pos += 1
        v = -v
    s = np.uint64(v)
    n = 1
    while n < 20 and s >= POW10[n]:
        n += 1
    return put_digits(out, pos, s, n)


@njit(cache=True, nogil=True)
def assemble(out, words, lengths, t_start, t_first, t_end, probability, n_matches,
             max_probability):
    """Every line into `out` (VALUE_WIDTH bytes a line beyond the constant parts, and
    SLACK, are enough); returns the bytes written. `words`, `lengths` are the seven
    constant parts (`constant_words`): the head up to "t_start", then up to "t_first",
    to "t_end", "probability", "n_matches", "max_match_probability", and the close. An
    empty `t_first` writes no number there (the second part then says null)."""
    p_bits, m_bits = probability.view(np.uint64), max_probability.view(np.uint64)
    null = len(t_first) == 0
    pos = 0
    for i in range(len(t_start)):
        pos = _put_part(out, pos, words, 0, lengths[0])
        pos = _put_int(out, pos, t_start[i])
        pos = _put_part(out, pos, words, 1, lengths[1])
        if not null:
            pos = _put_int(out, pos, t_first[i])
        pos = _put_part(out, pos, words, 2, lengths[2])
        pos = _put_int(out, pos, t_end[i])
        pos = _put_part(out, pos, words, 3, lengths[3])
        pos = put_float(out, pos, p_bits[i])
        pos = _put_part(out, pos, words, 4, lengths[4])
        pos = _put_int(out, pos, n_matches[i])
        pos = _put_part(out, pos, words, 5, lengths[5])
        pos = put_float(out, pos, m_bits[i])
        pos = _put_part(out, pos, words, 6, lengths[6])
    return pos


class Arena:
    """Hands out buffers carved from blocks of at least `block_bytes`. NumPy asks the
    kernel for huge pages for arrays of 4 MiB or more, so filling a block costs a few
    page faults instead of one per 4 KiB: for the 32 MB of rows or 20 MB of lines of a
    million timesteps that was about 10 ms of CPU, a quarter of the engine's time. A
    buffer stays valid while anything refers to it (its block lives as long)."""

    def __init__(self, block_bytes: int = 8 << 20):
        self.block_bytes = block_bytes
        self.block = np.empty(0, np.uint8)
        self.used = 0

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of `nbytes`; `keep(n)` then claims its first n bytes."""
        if self.used + nbytes > len(self.block):
            self.block = np.empty(max(self.block_bytes, nbytes), np.uint8)
            self.used = 0
        return self.block[self.used:self.used + nbytes]

    def keep(self, nbytes: int) -> None:
        self.used += -(-nbytes // 64) * 64  # the next buffer starts 64-byte aligned
