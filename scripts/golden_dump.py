"""Golden dump: what the bridge makes of every fixture, as SHA-256 digests, to keep a refactor
honest.

For every fixture log under tests/fixtures and every configuration in `CONFIGS` (flags of
`replay`, parsed by the command line's own parser and turned into a pipeline as the command
does), the spans (ids, parent, names, kind, times, attributes, events, links, status) and the
metric observations (name, attributes, value; summed per series, no timestamps) are dumped in
a normalised, byte-stable form and hashed, once per way of reading the log (`PATHS`):

- replay: `replay_logs` in this process, as `replay --jobs 1` reads;
- tail: the `run` path: a `Tailer` with checkpoints, the log written in three pieces with a
  poll after each, then quiet past the idle timeout (on a clock of its own);
- restart: the `run` path across a restart: the first half read and checkpointed by one
  tailer and pipeline, the rest by new ones resuming from the checkpoints (the delivered
  ids and safe places at work);
- jobs: every fixture at once through `replay_logs_parallel` with two worker processes
  (one digest per configuration, under the fixture name "*").

The digests are stored in tests/golden/digests.json; tests/unit/repo/test_golden_dump.py recomputes
them and compares. A change that is meant to change the output regenerates them with

    python scripts/golden_dump.py --update

(and says why in its commit). `python scripts/golden_dump.py --show FIXTURE CONFIG PATH` prints
one dump, to see what changed.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AttributeValue

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from otel_bridge.app._pipeline import Pipeline, PipelineConfig  # noqa: E402
from otel_bridge.checkpoint._store import CheckpointStore  # noqa: E402
from otel_bridge.cli._parser import build_parser  # noqa: E402
from otel_bridge.cli._settings import pipeline_config  # noqa: E402
from otel_bridge.export import MetricsOptions, build_resource  # noqa: E402
from otel_bridge.feed import StreamFeeder  # noqa: E402
from otel_bridge.feed._parallel import Workers, replay_logs_parallel  # noqa: E402
from otel_bridge.sources import LogFile, Tailer, TailOptions, find_logs, replay_logs  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
DIGESTS = REPO / "tests" / "golden" / "digests.json"

#: The configurations, as `replay` flags: those the tests use most (content capture, the
#: convention versions, a root-name template, sampling, attribute and path filters, a salt,
#: metric labels, unknown events kept).
CONFIGS: dict[str, list[str]] = {
    "default": [],
    "content": ["--capture-content"],
    "semconv-previous": ["--semconv", "previous"],
    "semconv-both": ["--semconv", "both", "--capture-content"],
    "root-name": ["--root-name", "invoke_agent {agent} {repository} {mode} {outcome}"],
    "sampled": ["--sample-ratio", "0.3"],
    "filters": [
        *("--deny-attribute", "gen_ai.request.model", "--paths", "hash"),
        *("--content-hash-salt", "golden", "--capture-content", "--content-max-chars", "40"),
    ],
    "labels": ["--metric-labels", "branch,provider,client", "--keep-unknown-events"],
}
PATHS = ("replay", "tail", "restart")
#: The fake clock of the tail paths: after every fixture's events, so a background wait that
#: ran out, ran out, the same way at every run.
_T0 = 2_000_000_000.0
_IDLE = 900.0
#: Observations whose values are the wall clock's: counted, not summed.
_CLOCK_VALUED = frozenset({"otel_bridge.event.lag"})


class _Recorder:
    """Keeps metric observations as series: counters summed, histograms as sorted values."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str, str, str], list[float]] = {}

    def _key(
        self, kind: str, name: str, attributes: Mapping[str, AttributeValue], session: str
    ) -> list[float]:
        key = (kind, name, json.dumps(_plain(dict(attributes)), sort_keys=True), session)
        return self.series.setdefault(key, [])

    def add(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        values = self._key("add", name, attributes, session_id)
        if values:
            values[0] += value
        else:
            values.append(value)

    def record(
        self, name: str, value: float, attributes: Mapping[str, AttributeValue], session_id: str
    ) -> None:
        self._key("record", name, attributes, session_id).append(
            0.0 if name in _CLOCK_VALUED else value
        )

    def dump(self) -> list[Any]:
        return [
            [*key, sorted(values) if key[0] == "record" else values]
            for key, values in sorted(self.series.items())
        ]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _span(span: ReadableSpan) -> dict[str, Any]:
    context = span.context
    assert context is not None
    return {
        "trace": f"{context.trace_id:032x}",
        "span": f"{context.span_id:016x}",
        "parent": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "name": span.name,
        "kind": span.kind.name,
        "start": span.start_time,
        "end": span.end_time,
        "attributes": _plain(dict(span.attributes or {})),
        "events": [[e.name, e.timestamp, _plain(dict(e.attributes or {}))] for e in span.events],
        "links": [
            [f"{link.context.span_id:016x}", _plain(dict(link.attributes or {}))]
            for link in span.links
        ],
        "status": [span.status.status_code.name, span.status.description],
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
    }


class _Run:
    """One pipeline as `replay` builds it from `flags`, exporting to memory."""

    def __init__(self, flags: Sequence[str], recorder: _Recorder) -> None:
        config, resource = _config(tuple(flags))
        self.memory = InMemorySpanExporter()
        self.pipeline = Pipeline(
            config, {}, span_exporters=[self.memory], recorder=recorder, resource=resource
        )

    def finish(self) -> list[dict[str, Any]]:
        self.pipeline.shutdown(10.0, metrics_timeout=1.0)
        return [_span(s) for s in self.memory.get_finished_spans()]


@functools.cache
def _config(flags: tuple[str, ...]) -> tuple[PipelineConfig, Resource]:
    """The pipeline configuration `replay` makes of `flags` (and its resource, built once)."""
    args = build_parser().parse_args(["replay", *flags])
    config = pipeline_config(
        args,
        {},
        traces_file_mode="w",
        metrics=MetricsOptions(prometheus_port=None),
        collector_check="skip",
    )
    config = replace(config, metrics=None, traces_file=None, console_format=None)
    return config, build_resource({}, config.resource)


def _dump(spans: list[dict[str, Any]], recorder: _Recorder) -> bytes:
    text = json.dumps({"spans": spans, "metrics": recorder.dump()}, sort_keys=True, indent=0)
    return text.encode()


def dump_replay(log: LogFile, flags: Sequence[str]) -> bytes:
    recorder = _Recorder()
    run = _Run(flags, recorder)
    replay_logs([log], StreamFeeder(run.pipeline.assembler, run.pipeline.sink.export))
    return _dump(run.finish(), recorder)


class _Clock:
    def __init__(self) -> None:
        self.now = _T0

    def __call__(self) -> float:
        return self.now


def _pieces(data: bytes, count: int) -> list[bytes]:
    """`data` cut in `count` pieces at line ends (the last may hold a partial line)."""
    cuts = [0]
    for n in range(1, count):
        at = data.find(b"\n", len(data) * n // count)
        cuts.append(len(data) if at < 0 else at + 1)
    cuts.append(len(data))
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def _tailer(root: Path, run: _Run, state: Path, clock: _Clock) -> Tailer:
    sink = run.pipeline.sink
    return Tailer(
        [root],
        StreamFeeder(run.pipeline.assembler, sink.export, sequence=lambda: sink.sequence),
        TailOptions(backfill=True, rescan_seconds=0, watch=False, idle_timeout_seconds=_IDLE),
        clock=clock,
        checkpoints=CheckpointStore(state),
    )


def _quiet(tailer: Tailer, clock: _Clock) -> None:
    """Polls until the log is read, then past the idle timeout (and the eviction)."""
    for _ in range(3):
        tailer.poll_once()
    for _ in range(3):
        clock.now += _IDLE + 61
        tailer.poll_once()


def dump_tail(log: LogFile, flags: Sequence[str], scratch: Path, *, restart: bool) -> bytes:
    """The log read by `run`'s tailer as it is written (`restart`: by two in turn)."""
    root = scratch / "session-state"
    directory = root / log.path.parent.name
    directory.mkdir(parents=True)
    target = directory / "events.jsonl"
    data = log.path.read_bytes()
    pieces = _pieces(data, 2 if restart else 3)
    recorder = _Recorder()
    clock = _Clock()
    spans: list[dict[str, Any]] = []
    target.write_bytes(pieces[0])
    os.utime(target, (_T0, _T0))
    run = _Run(flags, recorder)
    tailer = _tailer(root, run, scratch / "state", clock)
    tailer.start()
    for piece in pieces[1:]:
        for _ in range(2):
            tailer.poll_once()
        if restart:
            tailer.close()
            spans += run.finish()
            tailer.save_checkpoints(None)
            run = _Run(flags, recorder)
            tailer = _tailer(root, run, scratch / "state", clock)
            tailer.start()
        with target.open("ab") as handle:
            handle.write(piece)
    _quiet(tailer, clock)
    tailer.close()
    spans += run.finish()
    tailer.save_checkpoints(None)
    return _dump(spans, recorder)


def dump_jobs(logs: Sequence[LogFile], flags: Sequence[str], workers: Workers) -> bytes:
    recorder = _Recorder()
    run = _Run(flags, recorder)
    replay_logs_parallel(
        logs, run.pipeline.assembler, run.pipeline.sink.export, jobs=2, workers=workers
    )
    return _dump(run.finish(), recorder)


def fixtures() -> list[LogFile]:
    return find_logs(sorted(p.parent for p in FIXTURES.glob("*/events.jsonl")))


@contextmanager
def _quiet_logs() -> Iterator[None]:
    """The bridge's own lines (followed, closed...) are not what is compared."""
    logger = logging.getLogger("otel_bridge")
    level, propagate = logger.level, logger.propagate
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.propagate = propagate


def dumps(only: Callable[[str, str, str], bool] = lambda *_: True) -> Iterator[tuple[str, bytes]]:
    """(key, dump) of every fixture, configuration and path `only` keeps; key is
    "fixture|config|path"."""
    logs = fixtures()
    # Forked before any pipeline starts a thread, as `replay` does.
    workers = Workers(2) if any(only("*", config, "jobs") for config in CONFIGS) else None
    try:
        with _quiet_logs():
            for config, flags in CONFIGS.items():
                for log in logs:
                    name = log.path.parent.name
                    for path in PATHS:
                        if not only(name, config, path):
                            continue
                        if path == "replay":
                            yield f"{name}|{config}|{path}", dump_replay(log, flags)
                            continue
                        with tempfile.TemporaryDirectory(prefix="golden-") as scratch:
                            data = dump_tail(log, flags, Path(scratch), restart=path == "restart")
                        yield f"{name}|{config}|{path}", data
                if workers is not None and only("*", config, "jobs"):
                    yield f"*|{config}|jobs", dump_jobs(logs, flags, workers)
    finally:
        if workers is not None:
            workers.close()


def digests() -> dict[str, str]:
    return {key: hashlib.sha256(data).hexdigest() for key, data in dumps()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help=f"write {DIGESTS.name}")
    parser.add_argument("--show", nargs=3, metavar=("FIXTURE", "CONFIG", "PATH"))
    args = parser.parse_args(argv)
    if args.show:
        wanted = tuple(args.show)
        for _, data in dumps(lambda *key: key == wanted):
            sys.stdout.write(data.decode() + "\n")
        return 0
    computed = digests()
    if args.update:
        DIGESTS.parent.mkdir(parents=True, exist_ok=True)
        DIGESTS.write_text(json.dumps(computed, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(computed)} digests to {DIGESTS.relative_to(REPO)}")
        return 0
    stored = json.loads(DIGESTS.read_text())
    differ = sorted(k for k in computed.keys() | stored.keys() if computed.get(k) != stored.get(k))
    for key in differ:
        print(f"differs: {key}")
    print(f"{len(computed)} digests, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
