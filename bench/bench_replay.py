"""Replay throughput: how many events per second the reader + assembler + SDK mapping handle.

Prints figures, never asserts: the machine is noisy. The ratio of assembler time to reading
time tells where the cost is.

    python bench/bench_replay.py [--sessions N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_bridge import Assembler, JsonLinesDecoder
from otel_bridge.export import OtelMetricsRecorder, SpanSink, build_resource

FIXTURES = Path(__file__).parent.parent / "tests" / "fixtures"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sessions", type=int, default=200, help="how many copies of every fixture log to replay"
    )
    args = parser.parse_args()
    logs = [p.read_bytes() for p in sorted(FIXTURES.glob("*/events.jsonl"))]
    total_bytes = sum(map(len, logs)) * args.sessions

    start = time.perf_counter()
    batches = []
    for copy in range(args.sessions):
        for number, data in enumerate(logs):
            decoder = JsonLinesDecoder(f"{copy}/{number}")
            batches.append((f"{copy}/{number}", decoder.feed(data)))
    read_s = time.perf_counter() - start
    events = sum(len(b) for _, b in batches)

    start = time.perf_counter()
    assembler = Assembler()
    records = []
    for stream, batch in batches:
        records += assembler.feed(stream, batch) + assembler.end_stream(stream)
    assemble_s = time.perf_counter() - start

    # the same assembly with every metric observed through the OpenTelemetry SDK
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    start = time.perf_counter()
    metered = Assembler(metrics=OtelMetricsRecorder(provider))
    for stream, batch in batches:
        metered.metrics.add("otel_bridge.events.read", len(batch), {}, "")  # as the sources do
        metered.feed(stream, batch)
        metered.end_stream(stream)
    metered_s = time.perf_counter() - start
    provider.shutdown()

    start = time.perf_counter()
    sink = SpanSink([], build_resource({}))
    sink.export(records)
    sink.shutdown()
    map_s = time.perf_counter() - start

    total = read_s + assemble_s + map_s
    print(f"{events} events, {len(records)} spans, {total_bytes / 2**20:.1f} MiB")
    print(f"read     {read_s:7.3f} s  {events / read_s:10.0f} events/s")
    print(f"assemble {assemble_s:7.3f} s  {events / assemble_s:10.0f} events/s")
    print(f"to SDK   {map_s:7.3f} s  {len(records) / map_s:10.0f} spans/s")
    print(
        f"assemble with metrics {metered_s:7.3f} s: {metered_s / assemble_s:.2f}x the time without"
    )
    print(
        f"total    {total:7.3f} s  {events / total:10.0f} events/s, "
        f"{total_bytes / 2**20 / total:.1f} MiB/s"
    )
    print(
        f"ratios   read {read_s / total:.0%}, assemble {assemble_s / total:.0%}, "
        f"SDK mapping {map_s / total:.0%}"
    )


if __name__ == "__main__":
    main()
