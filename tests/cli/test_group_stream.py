"""`probcep group` on Parquet through the three-thread path gives the bytes and the errors
of the plain path (read everything, then match, then write), which it falls back to."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from probcep.cli import group as group_cli
from probcep.cli import group_stream, main


def streams(seed: int = 5, lengths=(700, 1, 400, 0, 900)) -> pd.DataFrame:
    """Streams with planted `a b+ c` (as the benchmark stream), sorted by (stream_id, t)."""
    rng = np.random.default_rng(seed)
    frames = []
    for k, n in enumerate(lengths):
        p = rng.dirichlet(np.full(3, 0.3), size=n)
        frames.append(pd.DataFrame({"stream_id": f"s{k}", "t": np.arange(n) + 10 * k,
                                    "a": p[:, 0], "b": p[:, 1], "c": p[:, 2]}))
    return pd.concat(frames, ignore_index=True)


def write(frame: pd.DataFrame, path, row_group_size=None) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                   row_group_size=row_group_size)


def run_both(tmp_path, monkeypatch, data, opts) -> tuple[bytes, bytes, bool]:
    """The bytes of the plain path and of the streamed one, and whether the streamed
    one was taken (and not left for the plain path)."""
    plain, streamed = tmp_path / "plain.jsonl", tmp_path / "streamed.jsonl"
    with monkeypatch.context() as m:
        m.setattr(group_cli, "run_streamed", lambda *a: False)
        assert main(["group", str(data), *opts, "-o", str(plain)]) == 0
    taken = []
    real = group_stream.run_streamed
    with monkeypatch.context() as m:
        m.setattr(group_cli, "run_streamed", lambda *a: taken.append(real(*a)) or taken[-1])
        assert main(["group", str(data), *opts, "-o", str(streamed)]) == 0
    return plain.read_bytes(), streamed.read_bytes(), taken == [True]


@pytest.mark.parametrize("policy,theta,window", [("single", 0.01, 8), ("complete", 0.01, 8),
                                                 ("complete", 0.0, 5), ("single", 0.0, None)])
@pytest.mark.parametrize("batch", [7, 64, 1 << 16])
def test_same_bytes_as_the_plain_path(tmp_path, monkeypatch, policy, theta, window, batch):
    monkeypatch.setattr(group_stream, "BATCH_ROWS", batch)
    data = tmp_path / "in.parquet"
    write(streams(), data, row_group_size=333)  # streams and batches cut across row groups
    opts = ["--pattern", "a b+ c", "--policy", policy, "--threshold", str(theta)]
    opts += ["--window", str(window)] if window else []
    plain, streamed, taken = run_both(tmp_path, monkeypatch, data, opts)
    assert taken and plain and streamed == plain


def test_stdout_and_no_groups(tmp_path, capsys):
    data = tmp_path / "in.parquet"
    write(streams(lengths=(50,)), data)
    opts = ["group", str(data), "--pattern", "a b+ c", "--policy", "single", "--window", "4"]
    assert main(opts) == 0
    out = capsys.readouterr().out
    assert main([*opts, "-o", str(tmp_path / "o.jsonl")]) == 0
    assert (tmp_path / "o.jsonl").read_text() == out and out
    write(streams(lengths=(0,)), data)
    assert main([*opts, "-o", str(tmp_path / "o.jsonl")]) == 0
    assert (tmp_path / "o.jsonl").read_bytes() == b""


def shuffled(f):
    return f.sample(frac=1.0, random_state=1)


def ids_descending(f):
    return f.sort_values(["stream_id", "t"], ascending=[False, True])


@pytest.mark.parametrize("edit", [shuffled, ids_descending])
def test_files_out_of_order_are_left_to_the_plain_path(tmp_path, monkeypatch, edit):
    monkeypatch.setattr(group_stream, "BATCH_ROWS", 100)
    data = tmp_path / "in.parquet"
    write(edit(streams()), data)
    opts = ["--pattern", "a b+ c", "--policy", "complete", "--threshold", "0.01", "--window",
            "6"]
    plain, streamed, taken = run_both(tmp_path, monkeypatch, data, opts)
    assert not taken and streamed == plain


def spoil(kind: str):
    def edit(f):
        row = 1500  # in a late batch, after lines of earlier streams were formatted
        if kind == "gap":
            return f.drop(index=row)
        if kind == "twice":
            f.loc[row, "t"] = f.loc[row - 1, "t"]
        elif kind == "outside":
            f.loc[row, "b"] = 1.5
        elif kind == "sum":
            f.loc[row, "a"] += 0.01
        elif kind == "nan":
            f.loc[row, "c"] = np.nan
        return f
    return edit


@pytest.mark.parametrize("kind", ["gap", "twice", "outside", "sum", "nan"])
def test_bad_rows_late_in_the_file_write_nothing_and_say_what_the_plain_path_says(
        tmp_path, monkeypatch, capsys, kind):
    monkeypatch.setattr(group_stream, "BATCH_ROWS", 64)
    data, out = tmp_path / "in.parquet", tmp_path / "out.jsonl"
    write(spoil(kind)(streams()), data)
    out.write_text("old\n")
    opts = ["group", str(data), "--pattern", "a b+ c", "--policy", "single", "--threshold",
            "0.01", "--window", "8", "-o", str(out)]
    assert main(opts) == 2
    err = capsys.readouterr().err
    with monkeypatch.context() as m:
        m.setattr(group_cli, "run_streamed", lambda *a: False)
        assert main(opts) == 2
    assert capsys.readouterr().err == err and str(data) in err
    assert out.read_text() == "old\n"


def test_bad_pattern_on_a_bad_file_reports_the_file(tmp_path, capsys):
    data = tmp_path / "in.parquet"
    write(spoil("gap")(streams()), data)
    assert main(["group", str(data), "--pattern", "a x", "--policy", "single"]) == 2
    assert "gap in t" in capsys.readouterr().err


def test_narrow_times_integer_symbols_and_unicode_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(group_stream, "BATCH_ROWS", 50)
    rng = np.random.default_rng(2)
    n = 300
    hot = rng.integers(0, 3, n)
    frame = pd.concat([pd.DataFrame({"stream_id": sid, "t": np.arange(n, dtype=np.int32),
                                     "a": (hot == 0).astype(np.int64),
                                     "b": (hot == 1).astype(np.int8),
                                     "c": (hot == 2).astype(np.float32)})
                       for sid in ("é", "z\"q", "ü")]).sort_values("stream_id", kind="stable")
    data = tmp_path / "in.parquet"
    write(frame, data)
    opts = ["--pattern", "a b+ c", "--policy", "complete", "--threshold", "0", "--window", "9"]
    plain, streamed, taken = run_both(tmp_path, monkeypatch, data, opts)
    assert taken and plain and streamed == plain


def test_full_disk_is_one_error_line(tmp_path, capsys):
    data = tmp_path / "in.parquet"
    write(streams(), data)
    assert main(["group", str(data), "--pattern", "a b+ c", "--policy", "single",
                 "--window", "4", "-o", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err == "probcep group: error: no space left on device writing /dev/full\n"


def test_groups_wait_unformatted_until_the_reader_is_done(tmp_path):
    """The formatter takes nothing from the engine while the reader still reads (two
    threads on two cores, the engine's not shared): groups that came before an abandon
    are never formatted."""
    import queue
    import threading

    groups, valid = queue.Queue(), threading.Event()
    formatter = group_stream._Formatter(groups, valid, tmp_path / "out.jsonl")
    items = formatter._after_reading()
    groups.put(("s0", "columns"))
    groups.put(group_stream._ABANDON)
    with pytest.raises(group_stream._Abandon):
        next(items)
    items = formatter._after_reading()
    groups.put(("s0", "first"))
    valid.set()
    groups.put(("s1", "second"))
    groups.put(group_stream._END)
    assert list(items) == [("s0", "first"), ("s1", "second"), group_stream._END]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_an_engine_limit_on_a_later_stream_prints_nothing_and_names_the_stream(
        tmp_path, capsys, monkeypatch, suffix):
    """Standard output gets no line before the engine is done (on the fast path too: the
    reader finds the file valid long before the engine reaches the stream that fails)."""
    from probcep.engine import runs

    monkeypatch.setattr(runs, "MAX_RUNS", 1 << 12)
    rows = [dict(stream_id="a1", t=t, a=float(t % 2 == 0), b=float(t % 2)) for t in range(10)]
    rows += [dict(stream_id="b2", t=t, a=0.5, b=0.5) for t in range(40)]
    path = tmp_path / f"in{suffix}"
    frame = pd.DataFrame(rows)
    frame.to_parquet(path, index=False) if suffix == ".parquet" else frame.to_csv(path, index=False)
    assert main(["group", str(path), "--pattern", "a (a|b)+ b", "--policy", "single",
                 "--threshold", "1e-300"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"probcep group: error: {path}: stream 'b2': ")
    assert "partial matches alive at t=" in err and len(err.splitlines()) == 1


def test_the_naive_methods_limit_names_the_stream(tmp_path, capsys):
    path = tmp_path / "in.csv"
    pd.DataFrame({"stream_id": "s", "t": range(30), "a": 0.5, "b": 0.5}).to_csv(path,
                                                                             index=False)
    assert main(["group", str(path), "--pattern", "a+", "--policy", "single",
                 "--method", "naive"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"probcep group: error: {path}: stream 's': naive method needs ")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_pattern_whose_transducer_outgrows_its_limit_is_refused(tmp_path, capsys,
                                                                  monkeypatch, suffix):
    """`a .{0,k} b` makes 2^(k+1) composites: refused at MAX_COMPOSITES with a reason, the
    file and the stream named, nothing printed (unbounded, k = 20 took 2.5 GB)."""
    from probcep.engine import transducer

    monkeypatch.setattr(transducer, "MAX_COMPOSITES", 1000)
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(3), size=62)
    frame = pd.DataFrame({"stream_id": "s", "t": range(62), "a": p[:, 0], "b": p[:, 1],
                          "c": p[:, 2]})
    path = tmp_path / f"in{suffix}"
    frame.to_parquet(path, index=False) if suffix == ".parquet" else frame.to_csv(path, index=False)
    assert main(["group", str(path), "--pattern", "a .{0,8} b", "--policy", "single",
                 "--window", "60"]) == 0  # 513 composites
    capsys.readouterr()
    assert main(["group", str(path), "--pattern", "a .{0,12} b", "--policy", "single",
                 "--window", "60"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"probcep group: error: {path}: stream 's': the group probability "
                          "of 'a .{0,12} b' with a window of 60 needs more than 1,000 ")
