"""Every benchmark reads the clock through benchmarks/harness.py (once, runs, fastest,
interleaved turns, Stopwatch), so each figure is timed the one way the harness documents
(the setup left out, the first call apart, the fastest of turns on a noisy machine)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "process_time", "time"}


def clock_reads(source: str) -> list[str]:
    """``time.<clock>()`` calls and ``timeit`` uses in ``source``, as "line: text"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        owner = (
            node.value.id
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            else None
        )
        if (owner == "time" and node.attr in CLOCKS) or owner == "timeit":
            found.append(f"{node.lineno}: {owner}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "timeit"):
            found.append(f"{node.lineno}: from {node.module} import …")
    return found


def test_benchmarks_time_only_through_the_harness() -> None:
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    assert len(scripts) > 10
    offenders = {
        p.name: reads
        for p in scripts
        if p.name != "harness.py" and (reads := clock_reads(p.read_text()))
    }
    assert offenders == {}


def test_the_scan_finds_a_clock_read() -> None:
    assert clock_reads("import time\nstart = time.perf_counter()\n") == ["2: time.perf_counter"]
    assert clock_reads("from timeit import timeit\n") == ["1: from timeit import …"]
    assert clock_reads("import time\ntime.sleep(0.25)\n") == []
