"""`probcep plot` writes a PNG of one stream with its groups."""

from __future__ import annotations

import numpy as np
import pandas as pd

from probcep.cli import main


def test_plot_writes_png(tmp_path, capsys):
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=80)
    p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
    path = tmp_path / "s.csv"
    pd.DataFrame({"stream_id": "v", "t": np.arange(80), "Hallway": p[:, 0], "Door": p[:, 1],
                  "Room": p[:, 2]}).to_csv(path, index=False)
    out = tmp_path / "v.png"
    code = main(["plot", str(path), "--stream", "v", "--pattern", "Door Room+ Door",
                 "--threshold", "0.01", "--window", "10", "--from", "10", "--to", "60",
                 "-o", str(out)])
    assert code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "groups in t=10..60" in capsys.readouterr().out
    assert main(["plot", str(path), "--stream", "nobody", "--pattern", "Door",
                 "-o", str(out)]) == 2
    assert "no stream 'nobody'" in capsys.readouterr().err


def _figure(monkeypatch, tmp_path, start: int):
    """The figure `probcep plot` draws of 200 steps from t=`start`, kept open."""
    import probcep.cli.figure as figure

    kept = []
    monkeypatch.setattr(figure, "_save", lambda fig, path: kept.append(fig) or path)
    a = np.where(np.arange(200) // 10 % 2, 0.875, 0.125)
    path = tmp_path / "s.csv"
    pd.DataFrame({"stream_id": "s", "t": start + np.arange(200, dtype=np.int64), "a": a,
                  "b": 1 - a}).to_csv(path, index=False)
    assert main(["plot", str(path), "--stream", "s", "--pattern", "a b", "--policy", "single",
                 "-o", str(tmp_path / "s.png")]) == 0
    return kept[0]


def test_timesteps_beyond_doubles_are_drawn_as_near_zero(monkeypatch, tmp_path, capsys):
    """Near 2^62 a double cannot tell t from t + 0.5: the figure is drawn relative to the
    first timestep, and its ticks name the timesteps themselves."""
    far, near = (_figure(monkeypatch, tmp_path, start) for start in (2 ** 62, 0))
    bottom, bottom0 = far.axes[1], near.axes[1]
    assert bottom.get_xlim() == bottom0.get_xlim() == (-0.5, 199.5)
    bar, = bottom.patches
    bar0, = bottom0.patches
    assert (bar.get_x(), bar.get_width()) == (bar0.get_x(), bar0.get_width()) == (-0.5, 200)
    far.canvas.draw()
    shown = [(x, label.get_text()) for x, label in zip(bottom.get_xticks(),
                                                       bottom.get_xticklabels())
             if -0.5 <= x <= 199.5]
    assert len(shown) >= 3 and all(int(text) == 2 ** 62 + round(x) for x, text in shown)


def test_a_range_without_the_stream_is_refused(tmp_path, capsys):
    path = tmp_path / "s.csv"
    pd.DataFrame({"stream_id": "s", "t": [5, 6], "a": [1.0, 0.0], "b": [0.0, 1.0]}).to_csv(
        path, index=False)
    assert main(["plot", str(path), "--stream", "s", "--pattern", "a b", "--from", "10",
                 "--to", "20", "-o", str(tmp_path / "s.png")]) == 2
    assert capsys.readouterr().err == ("probcep plot: error: t=10..20 holds no timestep of "
                                       "stream 's' (t=5..6)\n")


def test_a_from_past_the_stream_or_an_empty_file_is_said_as_it_is(tmp_path, capsys):
    """A --from past the stream's end was refused as `--to 6 is before --from 10`, with
    no --to given; a header-only file listed `(streams:  ...)` (QA, 2026-11-28)."""
    path, png = tmp_path / "s.csv", str(tmp_path / "s.png")
    pd.DataFrame({"stream_id": "s", "t": [5, 6], "a": [1.0, 0.0], "b": [0.0, 1.0]}).to_csv(
        path, index=False)
    assert main(["plot", str(path), "--stream", "s", "--pattern", "a b", "--from", "10",
                 "-o", png]) == 2
    assert capsys.readouterr().err == ("probcep plot: error: t=10..6 holds no timestep of "
                                       "stream 's' (t=5..6)\n")
    assert main(["plot", str(path), "--stream", "s", "--pattern", "a b", "--from", "6",
                 "--to", "5", "-o", png]) == 2
    assert capsys.readouterr().err == "probcep plot: error: --to 5 is before --from 6\n"
    assert main(["plot", str(path), "--stream", "x", "--pattern", "a b", "-o", png]) == 2
    assert capsys.readouterr().err == (f"probcep plot: error: {path}: no stream 'x' "
                                       f"(streams: 's')\n")
    path.write_text("stream_id,t,a,b\n")
    assert main(["plot", str(path), "--stream", "s", "--pattern", "a b", "-o", png]) == 2
    assert capsys.readouterr().err == (f"probcep plot: error: {path}: no stream 's' (the "
                                       f"file holds no stream)\n")


def test_the_legend_names_only_what_is_drawn(tmp_path):
    """A file's groups have no alert (only the lake's do) and single overlap no t_first."""
    import matplotlib.pyplot as plt

    import probcep.cli.figure as figure

    kept = []
    saved = figure._save
    figure._save = lambda fig, path: kept.append(fig) or path
    try:
        group = {"t_start": 1, "t_first": 2, "t_end": 3, "probability": 0.5}
        for groups, episodes in (([group], ()), ([{**group, "t_first": None}], [(1, 2)]),
                                 ([{**group, "alerted": True}], ())):
            figure.plot_stream(tmp_path / "x.png", np.arange(5), np.full((5, 2), 0.5),
                               ("a", "b"), groups, episodes=episodes)
    finally:
        figure._save = saved
    labels = [[t.get_text() for t in fig.axes[1].get_legend().get_texts()] for fig in kept]
    for fig in kept:
        plt.close(fig)
    group = "group: P(g) as text and colour"
    assert labels == [[group, "red tick: t_first"], [group, "green: true"],
                      [group, "red edge: alert", "red tick: t_first"]]
