"""Measure the otel-bridge daemon and replay: prints a table, writes the figures as JSON.

    python -m bench                       # everything, full sizes (about 40 minutes)
    python -m bench --quick               # small sizes (about 3 minutes)
    python -m bench --only idle,replay --out /tmp/before.json
    python -m bench --pythonpath ../other-checkout   # measure another checkout's code

The bridge is a black box: `python -m otel_bridge` with PYTHONPATH set to the checkout under
measure (default: the one this bench lives in). Sections: corpus, replay, idle, live, ready,
soak, kills; bench/README.md says what each figure means and what it should be.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .sections import SECTIONS, Options

REPO = Path(__file__).resolve().parent.parent

#: the target each figure is held to (bench/README.md explains them)
TARGETS = {
    "replay.file_ratio": ">= 0.5",
    "replay.none_ratio": ">= 0.5",
    "replay.jobs2_speedup": "~2",
    "idle.1000_ckpt_cpu_pct": "< 1",
    "idle.1000_nockpt_cpu_pct": "< 1",
    "idle.10000_ckpt_cpu_pct": "< 1",
    "idle.10000_nockpt_cpu_pct": "< 1",
    "idle.10000_ckpt_rss_mb": "< 150",
    "idle.10000_nockpt_rss_mb": "< 150",
    "live.rate10_cpu_ratio": "<= 5",
    "live.rate100_cpu_ratio": "<= 5",
    "live.rate1000_cpu_ratio": "<= 5",
    "live.rate10_cpu_ratio_otlp": "<= 5",
    "live.rate100_cpu_ratio_otlp": "<= 5",
    "live.rate1000_cpu_ratio_otlp": "<= 5",
    "live.latency_p99_ms": "< 100",
    "kills.lost": "0",
    "kills.conflicting": "0",
    "kills.repeats_per_kill": "<= 1 batch",
    "soak.rss_mb_last": "~ first",
    "soak.fds_last": "~ first",
}


def _numbers(text: str, kind: type = int) -> list[Any]:
    return [kind(x) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, about 3 minutes")
    parser.add_argument("--only", help=f"comma-separated sections of: {', '.join(SECTIONS)}")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results.json")
    parser.add_argument(
        "--pythonpath", type=Path, default=REPO, help="the checkout whose code is measured"
    )
    parser.add_argument(
        "--scratch",
        type=Path,
        default=Path(tempfile.gettempdir()) / "otel-bridge-bench",
        help="where corpora are cached and the bridges work (not in the repository)",
    )
    parser.add_argument("--keep-scratch", action="store_true", help="keep the corpus cache")
    size = parser.add_argument_group("sizes (defaults: full; --quick lowers the ones not given)")
    size.add_argument("--replay-sessions", type=int)
    size.add_argument("--idle-sizes", help="comma-separated directory counts (1000,10000)")
    size.add_argument("--idle-seconds", type=float, help="CPU measuring window (60)")
    size.add_argument("--settle-seconds", type=float, help="wait after ready (10)")
    size.add_argument("--live-rates", help="comma-separated events/s (10,100,1000)")
    size.add_argument("--live-seconds", type=float, help="writing time per rate (30)")
    size.add_argument("--live-sessions", type=int, help="sessions written to (200)")
    size.add_argument("--ready-sessions", type=int, help="checkpointed sessions (10000)")
    size.add_argument("--soak-minutes", type=float, help="soak length (20)")
    size.add_argument("--soak-sessions", type=int, help="sessions streamed (500 a minute)")
    size.add_argument("--soak-sample-seconds", type=float, help="sampling period (30)")
    size.add_argument("--kills", type=int, help="SIGKILLs (30)")
    size.add_argument("--kill-sessions", type=int, help="logs growing at once while killed (48)")
    size.add_argument("--start-timeout", type=float, help="longest wait for /readyz (900)")
    return parser.parse_args(argv)


QUICK = {
    "replay_sessions": 200,
    "idle_sizes": "200,1000",
    "idle_seconds": 8.0,
    "settle_seconds": 2.0,
    "live_rates": "10,100,1000",
    "live_seconds": 8.0,
    "live_sessions": 100,
    "ready_sessions": 1000,
    "soak_minutes": 0.5,
    "soak_sample_seconds": 5.0,
    "kills": 5,
    "kill_sessions": 8,
    "start_timeout": 120.0,
}


def options(args: argparse.Namespace) -> Options:
    opts = Options(pythonpath=args.pythonpath.resolve(), scratch=args.scratch.resolve())
    for name, quick in QUICK.items():
        value = getattr(args, name)
        if value is None and args.quick:
            value = quick
        if value is None:
            continue
        if name == "idle_sizes":
            value = _numbers(str(value))
        elif name == "live_rates":
            value = _numbers(str(value), float)
        setattr(opts, name, value)
    opts.soak_sessions = args.soak_sessions or max(20, round(500 * opts.soak_minutes))
    return opts


def portable(path: Path) -> str:
    """A path as the JSON keeps it: relative to this repository when inside it (the results
    may be committed, and name no directory of the machine they were measured on), else as
    given."""
    try:
        return str(path.resolve().relative_to(REPO)) or "."
    except ValueError:
        return str(path)


def machine(pythonpath: Path) -> dict[str, Any]:
    """What the figures were measured on, and which code."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(pythonpath), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(pythonpath), "status", "--porcelain", "--", "otel_bridge"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cores": os.cpu_count(),
        "cpu": model,
        "load_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "code": portable(pythonpath),
        "commit": commit + ("+changes" if dirty else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _show(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table(results: dict[str, Any]) -> str:
    rows = [("section", "figure", "value", "target")]
    for section, figures in results["sections"].items():
        for key, value in figures.items():
            if key == "series":
                continue
            rows.append((section, key, _show(value), TARGETS.get(f"{section}.{key}", "")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so that every bridge started is stopped by its finally."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    args = parse_args(argv)
    opts = options(args)
    chosen = list(SECTIONS) if not args.only else [s.strip() for s in args.only.split(",")]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        print(f"unknown sections: {', '.join(unknown)}", file=sys.stderr)
        return 2
    opts.scratch.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": machine(opts.pythonpath),
        "options": {
            k: portable(v) if isinstance(v, Path) else v
            for k, v in vars(opts).items()
            if not k.startswith("_") and k != "scratch"
        },
        "sections": {},
    }
    failed = False
    try:
        for name in chosen:
            print(f"[bench] {name} ...", file=sys.stderr, flush=True)
            started = time.monotonic()
            try:
                figures = SECTIONS[name](opts)
            except Exception:
                failed = True
                figures = {"error": traceback.format_exc(limit=3).strip().splitlines()[-1]}
                traceback.print_exc()
            figures["seconds"] = round(time.monotonic() - started, 1)
            results["sections"][name] = figures
            print(f"[bench] {name} took {figures['seconds']} s", file=sys.stderr, flush=True)
    finally:
        if not args.keep_scratch:
            shutil.rmtree(opts.scratch, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    print(table(results))
    print(f"\nwritten to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
