"""The figures of the command line: one stream with the groups found in it (`probcep
plot`), and an evaluation's threshold sweep (`probcep evaluate --sweep --plot`).

The stream's top panel stacks the symbol probabilities over time; the bottom panel draws
each group as a bar from t_start to t_end (t_first marked for complete overlap),
labelled with its probability, so a person can see why a group starts and ends where it
does. The image format is the file's extension, checked before any work
(`image_format`); the file is written whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from probcep.cli.destinations import replacing
from probcep.errors import ProbcepError


def image_format(path: Path) -> str:
    """The format `path`'s extension names, one matplotlib writes; else ProbcepError."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    kind = Path(path).suffix.lower().lstrip(".")
    if kind not in formats:
        raise ProbcepError(f"cannot write {path}: its extension names no image format "
                           f"matplotlib writes ({', '.join('.' + f for f in formats)})")
    return kind


#: Timesteps at least this far from 0 are drawn relative to the first (`plot_stream`).
FAR = 2 ** 40


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    with replacing(path) as target:
        fig.savefig(target, dpi=110, format=image_format(path))
    plt.close(fig)
    return Path(path)


def plot_stream(path: str | Path, times: np.ndarray, probs: np.ndarray, domain, groups,
                title: str = "", episodes=(), start=None, step=None) -> Path:
    """Write a PNG; `groups` are objects or dicts with t_start, t_first, t_end, probability
    (and `alerted`: drawn with a thick red outline). `episodes` are (t_start, t_end) of
    true episodes, shaded in both panels. With `start` (the time of times[0]) and `step`
    the time axis is labelled with clock times, not timesteps.

    Timesteps far from 0 are drawn relative to times[0] and labelled with their own
    values: a double cannot tell t from t + 0.5 beyond 2^52, so bars and steps there
    would collapse to nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    origin = 0
    if len(times) and max(abs(int(times[0])), abs(int(times[-1]))) >= FAR:
        origin = int(times[0])
        times = (np.asarray(times, np.int64) - origin).astype(float)
        episodes = [(int(a) - origin, int(b) - origin) for a, b in episodes]
        groups = [{**g, **{k: None if g.get(k) is None else int(g[k]) - origin
                           for k in ("t_start", "t_first", "t_end")}}
                  for g in _as_dicts(groups)]

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 5.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    top.stackplot(times, probs.T, labels=list(domain), step="mid", alpha=0.85)
    top.set_ylim(0, 1)
    top.set_ylabel("P(symbol)")
    top.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    top.set_title(title)
    for a, b in episodes:
        for ax in (top, bottom):
            ax.axvspan(a - 0.5, b + 0.5, color="tab:green", alpha=0.15, linewidth=0)
    lane_ends: list[float] = []  # greedy lanes so that no two bars overlap
    for g in sorted(_as_dicts(groups), key=lambda g: g["t_start"]):
        y = next((i for i, end in enumerate(lane_ends) if end < g["t_start"]), len(lane_ends))
        if y == len(lane_ends):
            lane_ends.append(g["t_end"])
        else:
            lane_ends[y] = g["t_end"]
        p = g["probability"]
        alerted = bool(g.get("alerted"))
        bottom.barh(y, g["t_end"] - g["t_start"] + 1, left=g["t_start"] - 0.5, height=0.7,
                    color=plt.cm.viridis(p), edgecolor="red" if alerted else "black",
                    linewidth=1.8 if alerted else 0.4)
        if g.get("t_first") is not None:
            bottom.plot([g["t_first"]], [y], marker="|", color="red", markersize=12)
        bottom.text(g["t_start"] - 0.5, y, f" {p:.2f}", va="center", fontsize="x-small",
                    color="white" if p < 0.6 else "black")
    bottom.set_yticks([])
    bottom.invert_yaxis()
    bottom.set_ylabel("groups")
    # the key beside the panel, as the top one's: a long y label ran into the top's ticks
    bottom.legend(handles=_group_keys(_as_dicts(groups), bool(len(episodes))),
                  loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    bottom.set_xlabel("t")
    if origin:
        bottom.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
        bottom.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{origin + round(x)}"))
        bottom.tick_params(axis="x", labelsize="x-small", labelrotation=15)
    if len(times):
        bottom.set_xlim(times[0] - 0.5, times[-1] + 0.5)
    if start is not None and step is not None and len(times):
        ticks = bottom.get_xticks()
        bottom.set_xticks(ticks)
        bottom.set_xticklabels([(start + (t - times[0]) * step).strftime("%Y-%m-%d %H:%M:%S")
                                for t in ticks], fontsize="x-small")
        bottom.set_xlabel("time (UTC)")
        bottom.set_xlim(times[0] - 0.5, times[-1] + 0.5)
    fig.tight_layout()
    return _save(fig, path)


def _group_keys(drawn: list[dict], episodes: bool) -> list:
    """Legend entries for what the lower panel draws, and only that."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    keys = [Patch(facecolor=plt.cm.viridis(0.5), edgecolor="black", linewidth=0.4,
                  label="group: P(g) as text and colour")]
    if any("alerted" in g for g in drawn):
        keys.append(Patch(facecolor="white", edgecolor="red", linewidth=1.8,
                          label="red edge: alert"))
    if any(g.get("t_first") is not None for g in drawn):
        keys.append(Line2D([], [], color="red", marker="|", markersize=12, linestyle="",
                           label="red tick: t_first"))
    if episodes:
        keys.append(Patch(facecolor="tab:green", alpha=0.15, label="green: true"))
    return keys


def plot_sweep(path: Path, rows, marks: dict | None = None) -> Path:
    """Found and false alarms against the threshold, one pair of lines per pattern
    (`rows`: `probcep.pipeline.evaluate.Evaluation`s); `marks`: a threshold per pattern
    to mark (the one the printed table scored)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name in dict.fromkeys(r.pattern for r in rows):
        mine = [r for r in rows if r.pattern == name and r.threshold is not None]
        x = [r.threshold for r in mine]
        line, = ax.plot(x, [r.found for r in mine], marker="o", label=f"{name}: found")
        ax.plot(x, [r.false_alarms for r in mine], marker="x", linestyle="--",
                color=line.get_color(), label=f"{name}: false alarms")
        if mine:
            ax.axhline(mine[0].true, color=line.get_color(), linewidth=0.6, alpha=0.5)
        if (marks or {}).get(name) is not None:
            ax.axvline(marks[name], color=line.get_color(), linestyle=":", linewidth=1.2,
                       label=f"{name}: scored at {marks[name]:g}")
    ax.set_xlabel("probability threshold")
    ax.set_ylabel("episodes / groups")
    ax.set_title("found (thin lines: true episodes) and false alarms by threshold")
    # beside the axes: inside, it hid the curves where they move (the SPHERE sweep)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return _save(fig, path)


def _as_dicts(groups):
    return [g if isinstance(g, dict) else g.as_dict() for g in groups]
