"""`probcep group`: match, group and score one pattern over a file of streams."""

from __future__ import annotations

import argparse
import io
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np

from probcep.cli.destinations import output_path, replacing
from probcep.cli.group_stream import run_streamed
from probcep.cli.numbers import positive_int, probability
from probcep.cli.output import sorted_groups, write_groups
from probcep.cli.stream_files import read_blocks, unnamed_symbols, where
from probcep.engine import Query, StreamMatcher
from probcep.engine.grouping import query_differences
from probcep.engine.transducer import Transducer
from probcep.errors import InputError, ProbcepError, ProbcepWarning
from probcep.lake.failures import writing

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
    p.add_argument("--threshold", type=probability, default=0.0, metavar="θ",
                   help="match threshold θ in [0, 1] (default 0: every positive match)")
    p.add_argument("--window", type=positive_int, default=None, metavar="W",
                   help="longest match in timesteps (default: no limit)")
    p.add_argument("--method", choices=("transducer", "naive"), default="transducer",
                   help="how group probabilities are computed (naive enumerates worlds)")
    p.add_argument("--resume-from", type=Path, metavar="STATE",
                   help="continue from the state saved by an earlier batch")
    p.add_argument("--save-state", type=Path, metavar="STATE",
                   help="INPUT is not the streams' end: keep open groups in STATE")
    p.add_argument("-o", "--output", type=output_path,
                   help="write JSON lines here, not to stdout (Parquet if it ends in .parquet)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    warned = set()  # the streamed path may build the query before the plain path does

    def build_query(domain) -> Query:
        query = Query.build(args.pattern, domain, policy=args.policy,
                            threshold=args.threshold, window=args.window, method=args.method)
        unfit = query.dfa.unfit(query.window)
        if unfit and unfit not in warned:
            warned.add(unfit)
            warnings.warn(ProbcepWarning(f"--window: {unfit}"), stacklevel=2)
        odd = unnamed_symbols(args.input, domain)
        if odd and odd not in warned:
            warned.add(odd)
            warnings.warn(ProbcepWarning(odd), stacklevel=2)
        return query

    if (args.input.suffix.lower() == ".parquet" and args.resume_from is None
            and args.save_state is None and args.method == "transducer"
            and not (args.output and args.output.suffix.lower() == ".parquet")
            and run_streamed(args.input, build_query, args.output)):
        return 0
    domain, blocks = read_blocks(args.input)
    query = build_query(domain)
    transducer = Transducer(query.dfa, query.window)
    matchers = load_state(args.resume_from, query, transducer) if args.resume_from else {}
    ending = args.save_state is None  # the streams end here
    parts: dict[str, list] = {}
    for block in blocks:
        # each stream is one block: when it ends here, its matcher is finished at once and
        # dropped (a file of many short streams would otherwise hold one matcher each)
        matcher = matchers.pop(block.stream_id, None) or StreamMatcher(query, transducer)
        with where(args.input, block.stream_id):
            found = [matcher.feed_columns(block.t0, block.probs)]
            if ending:
                found.append(matcher.finish_columns())
        if not ending:
            matchers[block.stream_id] = matcher
        found = [g for g in found if len(g)]
        if found:
            parts[block.stream_id] = found
    if ending:  # streams of the resumed state that this batch did not continue
        for sid, matcher in matchers.items():
            with where(args.input, sid):
                parts[sid] = [matcher.finish_columns()]
    if args.save_state is None:
        write_groups(sorted_groups(parts), args.output)
        return 0
    # the state is written first and moved into place last: an error on either file
    # leaves both as they were, never lines whose state was not saved
    with writing(args.save_state), replacing(args.save_state) as state:
        state.write_bytes(state_bytes(query, matchers))
        write_groups(sorted_groups(parts), args.output)
    return 0


def state_bytes(query: Query, matchers: dict[str, StreamMatcher]) -> bytes:
    """All streams' states as one .npz file."""
    ids = sorted(matchers)
    arrays = {f"stream_{i}": np.frombuffer(matchers[sid].to_bytes(), np.uint8)
              for i, sid in enumerate(ids)}
    header = {"format": STATE_FILE_FORMAT, "query": query.describe(), "streams": ids}
    buf = io.BytesIO()
    np.savez_compressed(buf, header=np.array(json.dumps(header)), **arrays)
    return buf.getvalue()


def load_state(path: Path, query: Query, transducer: Transducer) -> dict[str, StreamMatcher]:
    """The streams' states saved by `save_state`; InputError naming the file when it is
    not one (empty, cut short, another archive) or was saved for another query."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            header = json.loads(str(archive["header"]))
            if not isinstance(header, dict) or header.get("format") != STATE_FILE_FORMAT:
                raise InputError(f"{path}: not a probcep state file")
            if header["query"] != query.describe():
                raise InputError(f"{path}: state was saved for another query: "
                                 + query_differences(header["query"], query.describe()))
            return {sid: StreamMatcher.from_bytes(query, archive[f"stream_{i}"].tobytes(),
                                                  transducer)
                    for i, sid in enumerate(header["streams"])}
    except ProbcepError:
        raise
    except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError,
            zipfile.BadZipFile) as exc:
        # NumPy's words for a file that is no .npz archive advise unpickling it: not ours
        why = "not a NumPy archive" if "pickle" in str(exc) else " ".join(str(exc).split())
        raise InputError(f"{path}: not a readable probcep state file ({why})") from exc
