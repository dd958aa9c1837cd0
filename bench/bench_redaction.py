"""What secret redaction costs with --capture-content, before and after a change.

Redaction runs on every string that goes out, and with content capture on that is every
prompt, answer, tool argument and result. This times `Scrubber().text` over the strings of the
real logs in tests/fixtures, in two workloads:

- `exported`: the strings the bridge puts on spans with content capture on (names, attributes,
  span events, status messages of `spantree.assemble` with `capture_content=True`);
- `raw`: every string of every event of the logs (keys included: the system prompts and tool
  outputs the bridge does not export are the larger, more varied text).

Each checkout is measured in a process of its own (`PYTHONPATH` set to it), the best of
`--repeat` passes, a fresh `Scrubber` per pass (its cache of short strings starts empty, as it
does when the bridge starts). `--against REF` also measures the package at a git ref (exported
with `git archive` into a scratch directory) and prints the ratio after/before; the number of
redactions each made on the fixtures is printed too (they hold no secret: every one is a
false positive).

    python bench/bench_redaction.py --against main
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

_TIMER = r"""
import json, re, sys, time
import otel_bridge
from otel_bridge.processors import Scrubber
workloads = json.load(open(sys.argv[1]))
repeat = int(sys.argv[2])
out = {}
for name, strings in workloads.items():
    best = float("inf")
    for _ in range(repeat):
        scrubber = Scrubber()
        start = time.perf_counter()
        done = [scrubber.text(s) for s in strings]
        best = min(best, time.perf_counter() - start)
    redactions = sum(len(re.findall(r"\[REDACTED:", o)) - len(re.findall(r"\[REDACTED:", s))
                     for s, o in zip(strings, done))
    out[name] = {"seconds": best, "redactions": redactions}
out["package"] = otel_bridge.__file__
print(json.dumps(out))
"""


def _walk(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in (key, *_walk(value))]
    if isinstance(node, list):
        return [s for item in node for s in _walk(item)]
    return []


def workloads() -> dict[str, list[str]]:
    """The strings of both workloads, from the fixtures' logs."""
    sys.path.insert(0, str(ROOT))
    from otel_bridge import AssemblerConfig
    from tests import spantree

    exported: list[str] = []
    raw: list[str] = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for span in spantree.assemble(path, config=AssemblerConfig(capture_content=True)):
            exported.append(span.name)
            if span.status_message:
                exported.append(span.status_message)
            for attributes in (span.attributes, *(e.attributes for e in span.events)):
                for value in attributes.values():
                    if isinstance(value, str):
                        exported.append(value)
                    elif isinstance(value, list | tuple):
                        exported += [v for v in value if isinstance(v, str)]
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                raw += _walk(json.loads(line))
            except ValueError:
                continue
    return {"exported": exported, "raw": raw}


def measure(pythonpath: Path, data: Path, repeat: int) -> dict[str, dict[str, float]]:
    done = subprocess.run(
        [sys.executable, "-c", _TIMER, str(data), str(repeat)],
        # PYTHONSAFEPATH: not the working directory first on the path, the measured checkout
        env={"PYTHONPATH": str(pythonpath), "PYTHONSAFEPATH": "1", "PATH": "/usr/bin:/bin"},
        cwd=data.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    if not result.pop("package").startswith(str(pythonpath)):
        raise SystemExit(f"measured the wrong package, not the one under {pythonpath}")
    return dict(result)


def export_ref(ref: str, into: Path) -> Path:
    """The package as it is at `ref`, unpacked under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "otel_bridge"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="a git ref to compare with (e.g. main)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    loads = workloads()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "strings.json"
        data.write_text(json.dumps(loads))
        results = {"this checkout": measure(ROOT, data, args.repeat)}
        if args.against:
            before = export_ref(args.against, Path(scratch) / "before")
            results[args.against] = measure(before, data, args.repeat)
    for name, strings in loads.items():
        chars = sum(map(len, strings))
        print(f"{name}: {len(strings):,} strings, {chars / 1e6:.2f} M characters")
        for who, result in results.items():
            seconds = result[name]["seconds"]
            print(
                f"  {who:>14}: {seconds * 1000:8.1f} ms  ({chars / seconds / 1e6:6.1f} M chars/s)"
                f"  {int(result[name]['redactions'])} redactions"
            )
        if args.against:
            ratio = (
                results["this checkout"][name]["seconds"] / results[args.against][name]["seconds"]
            )
            print(f"  after/before: {ratio:.2f}")


if __name__ == "__main__":
    main()
