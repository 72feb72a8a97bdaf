"""``python -m tang run EXPR --grad --points N [--device native|c|cpu]``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tang.gpu as gpu
from tang.cli import main
from tang.gpu.native_c import find_compiler

# "auto" is wgpu-py here when it has an adapter: most of these run on it.
pytestmark = pytest.mark.toolchain


def run_json(capsys, *argv):
    assert main(["run", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_devices_agree_on_the_checksum(capsys):
    cpu = run_json(
        capsys, "sin(x*y) + sqrt(x^2 + 1)", "--grad", "--points", "20000", "--device", "cpu"
    )
    assert cpu["device"] == "cpu" and cpu["outputs"] == ["f", "df/dx", "df/dy"]
    assert cpu["inputs"] == ["x", "y"] and cpu["n"] == 20000 and cpu["nonfinite"] == 0
    best = run_json(capsys, "sin(x*y) + sqrt(x^2 + 1)", "--grad", "--points", "20000")
    assert best["device"] == gpu.device().kind
    assert best["checksum"] == pytest.approx(cpu["checksum"], rel=1e-5)


def test_text_output_names_device_time_and_checksum(capsys):
    assert main(["run", "f(a, b) = a*b - b", "--grad", "--points", "1000", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("device    ")
    assert "outputs   f, df/da, df/db over 1,000 points of (a, b)" in out
    assert "first run" in out and "M points/s" in out
    assert "checksum  " in out and "(0 non-finite values)" in out


def test_a_negative_range_is_written_with_equals_as_the_help_says(capsys):
    out = run_json(capsys, "x", "--points", "10", "--device", "cpu", "--range=-3,-1")
    assert out["n"] == 10 and -30 < out["checksum"] < -10


@pytest.mark.parametrize(("points", "n"), [("1e3", 1000), ("1_000", 1000), ("2^10", 1024)])
def test_points_accept_counts_as_people_write_them(capsys, points, n):
    out = run_json(capsys, "sin(x*y) + x^2", "--points", points, "--device", "cpu")
    assert out["n"] == n


def test_a_constant_runs_over_the_points(capsys):
    out = run_json(capsys, "2^3", "--points", "10", "--device", "cpu")
    assert out["n"] == 10 and out["checksum"] == 80.0 and out["inputs"] == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sin(x*"], "unexpected end of input at column 7"),
        (["x", "--points", "-5"], "--points: invalid count '-5' (a count cannot be negative)"),
        (["x", "--points", "1e6x"], "write a whole number such as 1000000, 1_000_000, 1e6"),
        (["x", "--points", "2^30"], "number of points must be between 0 and 67,108,864"),
        (["x", "--range", "2,1"], "range must be finite with lo < hi"),
        (["x", "--range", "abc"], "--range expects LO,HI"),
        (["x", "--repeat", "0"], "--repeat must be at least 1"),
    ],
)
def test_bad_input_exits_2_with_the_reason(capsys, argv, message):
    try:
        status = main(["run", *argv])
    except SystemExit as exit_:  # argparse's own errors (a malformed --points)
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_native_device_missing_is_exit_1_with_the_reason(capsys, monkeypatch):
    gpu.release()  # forget the open device, so the next one is looked for afresh
    monkeypatch.setitem(sys.modules, "wgpu", None)
    assert main(["run", "x", "--points", "10", "--device", "native"]) == 1
    assert "tang run: error: wgpu-py: not installed" in capsys.readouterr().err
    out = run_json(capsys, "x", "--points", "10")  # auto: says why, runs on the next one
    no_cc = (
        []
        if find_compiler()
        else [["compiled C", "no C compiler on PATH (cc, gcc or clang; or set CC)"]]
    )
    assert out["device"] == ("c" if find_compiler() else "cpu") and out["skipped"] == [
        ["wgpu-py", "not installed (pip install wgpu)"],
        *no_cc,
    ]


def test_the_compiled_c_device_agrees_with_the_cpu(capsys, c_device):
    args = ("sin(x*y) + sqrt(x^2 + 1)", "--grad", "--points", "5000")
    cpu = run_json(capsys, *args, "--device", "cpu")
    c = run_json(capsys, *args, "--device", "c")
    assert c["device"] == "c" and c["nonfinite"] == 0
    assert c["checksum"] == pytest.approx(cpu["checksum"], rel=1e-5)


def test_python_dash_m_tang_run():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tang",
            "run",
            "x*y",
            "--grad",
            "--points",
            "1000",
            "--device",
            "cpu",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "checksum" in proc.stdout
