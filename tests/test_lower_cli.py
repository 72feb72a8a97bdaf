"""``python -m tang kernel``: prints code for every backend; bad input is one line, status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tang.cli import main
from tang.lower import BACKENDS


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["kernel", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_prints_value_and_gradient_for_every_backend(capsys, backend):
    code, out, err = run(capsys, "sin(x)*y + x^3/y", "--backend", backend, "--grad")
    assert code == 0 and err == ""
    assert "df/dx" in out and "df/dy" in out  # the layout comment names the outputs
    stores = [ln for ln in out.splitlines() if ln.lstrip().startswith("dst[")]
    assert len(stores) == 3  # the value and two partials


def test_plain_function_and_declared_variables(capsys):
    code, out, _ = run(
        capsys, "f(a, b) = a*2", "--backend", "python", "--grad", "--shape", "function"
    )
    assert code == 0
    ns: dict = {}
    exec(out, ns)  # our printer's output, from a parsed graph
    assert ns["f"](3.0, 4.0) == [6.0, 2.0, 0.0]


def test_vars_order_and_dtype(capsys):
    code, out, _ = run(capsys, "x - y", "--backend", "c", "--vars", "y,x", "--dtype", "f32")
    assert code == 0
    assert "const float y = src[i];" in out and "const float x = src[n + i];" in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["sin(x"], "unclosed '('"),
        (["x + w"], "unknown variable 'w'"),
        (["x", "--backend", "fortran"], "unknown backend 'fortran'"),
        (["x", "--backend", "wgsl", "--dtype", "f64"], "wgsl has no f64"),
        (["x", "--backend", "metal", "--shape", "function"], "metal prints kernels"),
        (["x", "--vars", "x,1y"], "--vars"),
        (["x < y"], "comparison"),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and says in err, err


def test_python_dash_m_tang_kernel():
    ok = subprocess.run(
        [sys.executable, "-m", "tang", "kernel", "x*y", "--backend", "javascript"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0 and "function f(src, dst, n)" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tang", "kernel", "x*", "--backend", "c"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
