"""``python -m tang eval``, run as a real subprocess: output shapes, NaN strings, exit codes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tang.cli import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def tang(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "tang", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


def test_json_value_and_gradient() -> None:
    run = tang("eval", "sin(x)*y", "--at", "x=1,y=2", "--grad", "--json")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert len(lines) == 1  # exactly one object
    obj = json.loads(lines[0])
    assert list(obj) == ["value", "gradient"]
    assert list(obj["gradient"]) == ["x", "y"]
    assert math.isclose(obj["value"], math.sin(1) * 2, rel_tol=1e-15)
    assert math.isclose(obj["gradient"]["x"], math.cos(1) * 2, rel_tol=1e-15)
    assert math.isclose(obj["gradient"]["y"], math.sin(1), rel_tol=1e-15)


def test_nan_and_infinities_are_strings() -> None:
    run = tang("eval", "log(x) - y", "--at", "x=0,y=1", "--grad", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"value": "-inf", "gradient": {"x": "inf", "y": -1.0}}
    run = tang("eval", "sqrt(x)", "--at", "x=-1", "--json")
    assert json.loads(run.stdout) == {"value": "nan"}  # no gradient key without --grad
    assert '"nan"' in run.stdout and "NaN" not in run.stdout


def test_bad_expression_exits_2_with_the_column() -> None:
    run = tang("eval", "x + sine(y)", "--at", "x=1,y=2", "--json")
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1
    assert "unknown function 'sine' at column 5" in lines[0]
    assert "did you mean 'sin'?" in lines[0]


def test_plain_output_and_options_first_for_a_leading_minus() -> None:
    run = tang("eval", "--at", "x=3", "--grad", "--", "-x^2")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["value = -9.0", "d/dx = -6.0"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["eval", "sin(x", "--at", "x=1"], "unclosed '(' of 'sin(' at column 1"),
        (["eval", "x + w", "--at", "x=1"], "unknown variable 'w' at column 5 (allowed: x)"),
        (["eval", "x", "--at", "x"], "--at expects name=value pairs"),
        (["eval", "x", "--at", "x=1,x=2"], "--at gives 'x' twice"),
        (["eval", "x", "--at", "x=1+"], "--at value of 'x': unexpected end of input at column 3"),
        (["eval", "x", "--at", "pi=3"], "'pi' is a built-in name"),
        (["eval", "f(x, y) = x*y", "--at", "x=2"], "no value for y"),
        (["eval"], "the following arguments are required: expr"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_in_process(argv: list[str], fragment: str, capsys) -> None:
    """The same program in-process (fast): one line on stderr, exit status 2."""
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert fragment in err


def test_in_process_matches_constant_expression(capsys) -> None:
    assert main(["eval", "2^10 + pi", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"value": 1024 + math.pi}
    assert main(["eval", "x*y", "--at", "x=pi/2", "--at", "y=2", "--json", "--grad"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj == {"value": math.pi, "gradient": {"x": 2.0, "y": math.pi / 2}}


def test_subcommands_register_themselves() -> None:
    assert "tang.expr.cli" in SUBCOMMANDS
    parser = build_parser()
    args = parser.parse_args(["eval", "x", "--at", "x=1"])
    assert callable(args.run)
