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
