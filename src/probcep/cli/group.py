"""`probcep group`: match, group and score one pattern over a file of streams."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np

from probcep.cli.group_stream import run_streamed
from probcep.cli.output import sorted_groups, write_groups
from probcep.cli.stream_files import read_blocks
from probcep.engine import Query, StreamMatcher
from probcep.engine.transducer import Transducer
from probcep.errors import InputError

STATE_FILE_FORMAT = "probcep-state-file/1"


def register(sub) -> None:
    p = sub.add_parser(
        "group", help="group the matches of a pattern and compute group probabilities",
        description="Find the matches of PATTERN in every stream of INPUT, group them and "
                    "print one JSON line per group (or write a Parquet file).")
    p.add_argument("input", metavar="INPUT", type=Path,
                   help=".csv, .parquet or .jsonl with stream_id, t and one column per symbol")
    p.add_argument("--pattern", required=True, help="pattern, e.g. 'Door Room+ Door'")
    p.add_argument("--policy", choices=("single", "complete"), required=True)
    p.add_argument("--threshold", type=float, default=0.0, metavar="θ",
                   help="match threshold θ in [0, 1] (default 0: every positive match)")
    p.add_argument("--window", type=int, default=None, metavar="W",
                   help="longest match in timesteps (default: no limit)")
    p.add_argument("--method", choices=("transducer", "naive"), default="transducer",
                   help="how group probabilities are computed (naive enumerates worlds)")
    p.add_argument("--resume-from", type=Path, metavar="STATE",
                   help="continue from the state saved by an earlier batch")
    p.add_argument("--save-state", type=Path, metavar="STATE",
                   help="INPUT is not the streams' end: keep open groups in STATE")
    p.add_argument("-o", "--output", type=Path,
                   help="write JSON lines here, not to stdout (Parquet if it ends in .parquet)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def build_query(domain) -> Query:
        return Query.build(args.pattern, domain, policy=args.policy,
                           threshold=args.threshold, window=args.window, method=args.method)

    if (args.input.suffix.lower() == ".parquet" and args.resume_from is None
            and args.save_state is None and args.method == "transducer"
            and not (args.output and args.output.suffix.lower() == ".parquet")
            and run_streamed(args.input, build_query, args.output)):
        return 0
    domain, blocks = read_blocks(args.input)
    query = build_query(domain)
    transducer = Transducer(query.dfa, query.window)
    matchers = load_state(args.resume_from, query, transducer) if args.resume_from else {}
    parts: dict[str, list] = {}
    for block in blocks:
        matcher = matchers.get(block.stream_id)
        if matcher is None:
            matcher = matchers[block.stream_id] = StreamMatcher(query, transducer)
        try:
            groups = matcher.feed_columns(block.t0, block.probs)
        except InputError as exc:
            raise InputError(f"{args.input}: stream {block.stream_id!r}: {exc}") from exc
        parts.setdefault(block.stream_id, []).append(groups)
    if args.save_state is None:  # the streams end here
        for sid, matcher in matchers.items():
            parts.setdefault(sid, []).append(matcher.finish_columns())
    write_groups(sorted_groups(parts), args.output)
    if args.save_state is not None:
        save_state(args.save_state, query, matchers)
    return 0


def save_state(path: Path, query: Query, matchers: dict[str, StreamMatcher]) -> None:
    """All streams' states in one .npz file; written to a temporary name, then renamed."""
    ids = sorted(matchers)
    arrays = {f"stream_{i}": np.frombuffer(matchers[sid].to_bytes(), np.uint8)
              for i, sid in enumerate(ids)}
    header = {"format": STATE_FILE_FORMAT, "query": query.describe(), "streams": ids}
    buf = io.BytesIO()
    np.savez_compressed(buf, header=np.array(json.dumps(header)), **arrays)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)


def load_state(path: Path, query: Query, transducer: Transducer) -> dict[str, StreamMatcher]:
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable probcep state file ({exc})") from exc
    with archive:
        if "header" not in archive.files:
            raise InputError(f"{path}: not a probcep state file")
        header = json.loads(str(archive["header"]))
        if header.get("format") != STATE_FILE_FORMAT:
            raise InputError(f"{path}: not a probcep state file")
        if header["query"] != query.describe():
            raise InputError(f"{path}: state was saved for {header['query']}, "
                             f"not for {query.describe()}")
        return {sid: StreamMatcher.from_bytes(query, archive[f"stream_{i}"].tobytes(), transducer)
                for i, sid in enumerate(header["streams"])}
