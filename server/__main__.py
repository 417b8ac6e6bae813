"""``python -m server`` / ``mxlab``: run the default scenario and show what the engine did.

Until the web UI exists this prints, for every engine type, a text timeline of the
"engine basics" scenario (dependent versus independent chains) and writes all runs into
one Chrome trace file that Perfetto (ui.perfetto.dev) or chrome://tracing opens.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from framework import profiler
from framework.engine import ENGINE_TYPES

from .scenarios import engine_basics


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mxlab", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="worker threads per pool (default 2)")
    parser.add_argument("--chain-length", type=int, default=4, help="operations per chain (default 4)")
    parser.add_argument("--op-ms", type=float, default=20.0, help="duration of each operation in ms (default 20)")
    parser.add_argument(
        "--engine", action="append", choices=list(ENGINE_TYPES), help="engine type(s) to run (default: all)"
    )
    parser.add_argument("--trace", type=Path, default=Path("mxlab-engine-demo.json"), help="Chrome trace output file")
    parser.add_argument("--width", type=int, default=72, help="timeline width in characters")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.workers < 1:
        print("mxlab: --workers must be >= 1", file=sys.stderr)
        return 2
    try:
        results = engine_basics.run(args.engine, args.workers, args.chain_length, args.op_ms)
    except ValueError as err:
        print(f"mxlab: {err}", file=sys.stderr)
        return 2
    print(
        f"Engine basics: 2 chains x {args.chain_length} ops of {args.op_ms:g} ms, {args.workers} worker(s) per pool\n"
    )
    all_events = []
    for result in results:
        serial = 2 * args.chain_length * args.op_ms / 1000.0
        print(
            f"== {result.engine_type}, {result.program} chains: {result.seconds * 1000:.0f} ms "
            f"({serial / result.seconds:.2f}x the speed of running them one by one)"
        )
        print(profiler.text_timeline(result.events, width=args.width))
        print()
        all_events.extend(result.events)
    args.trace.write_text(json.dumps(profiler.chrome_trace(all_events)))
    print(f"Chrome trace of all runs written to {args.trace} (open it in https://ui.perfetto.dev)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
