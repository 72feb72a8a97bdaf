"""``python -m tang eval``, run as a real subprocess: output shapes, NaN strings, exit codes."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tang.cli import COUNT_FORMS, SUBCOMMANDS, build_parser, count, main

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
        (["eval", "x + w", "--at", "x=1"], "'w' at column 5 needs a value: add --at w=…"),
        (["eval", "f(x) = x + w", "--at", "x=1"], "unknown variable 'w' at column 12 (allowed: x)"),
        (["eval", "x * 1e400", "--at", "x=1"], "'1e400' at column 5 is too large for a 64-bit"),
        (["eval", "x", "--at", "x=1e400"], "--at value of 'x': number '1e400' at column 1"),
        (["eval", "x", "--at", "x=2*y"], "must be a number or a constant like pi/2: 'y' at col"),
        (["eval", "x", "--at", "x"], "--at expects name=value pairs"),
        (["eval", "x", "--at", "x=1,x=2"], "--at gives 'x' twice"),
        (["eval", "x", "--at", "x=1+"], "--at value of 'x': unexpected end of input at column 3"),
        (["eval", "x", "--at", "pi=3"], "'pi' is a built-in name"),
        (["eval", "f(x, y) = x*y", "--at", "x=2"], "'y' needs a value: add --at y=…"),
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


# ------------------------------------------------------------------------------------------
# a variable without a value says how to give one


def test_eval_without_at_says_which_variable_needs_a_value() -> None:
    run = tang("eval", "x*sin(x)")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == [
        "tang eval: error: 'x' at column 1 needs a value: add --at x=… (for example --at x=1)"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["x*y + z"], "'x', 'y' and 'z' need values: add --at x=…,y=…,z=… (for example --at "),
        (["x*y + z", "--at", "y=1"], "'x' and 'z' need values: add --at x=…,z=…"),
        (["x + pie", "--at", "x=1"], "'pie' at column 5 needs a value: add --at pie=… "),
        (["f(a, b) = a", "--at", "a=1"], "'b' needs a value: add --at b=… (for example --at b=1)"),
    ],
)
def test_unvalued_names_are_all_named(argv: list[str], message: str, capsys) -> None:
    assert main(["eval", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    if "pie" in argv[0]:
        assert err.rstrip().endswith("— or did you mean 'pi'?")


# ------------------------------------------------------------------------------------------
# counts: 1e6, 1_000_000, 2^20 — read by patterns and integer arithmetic, never eval


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1000000", 10**6),
        ("1_000_000", 10**6),
        ("1e6", 10**6),
        ("1E6", 10**6),
        ("1e+6", 10**6),
        ("2.5e5", 250_000),
        ("0.5e1", 5),
        ("2^20", 1 << 20),
        ("2**20", 1 << 20),
        ("10^6", 10**6),
        (" 4096 ", 4096),
        ("0", 0),
        ("0e999999999", 0),
        ("1^99999999999", 1),
        ("2^62", 1 << 62),
        ("1e18", 10**18),
    ],
)
def test_count_forms(text: str, value: int) -> None:
    assert count(text) == value and type(count(text)) is int


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1e6x", "invalid count '1e6x': write a whole number such as " + COUNT_FORMS),
        ("1.5", "invalid count '1.5'"),
        ("2.5e0", "invalid count"),  # not whole
        ("1e-3", "invalid count"),
        ("-5", "invalid count '-5' (a count cannot be negative)"),
        ("1__0", "invalid count"),
        ("_1", "invalid count"),
        ("1,000", "invalid count"),
        ("2^2^2", "invalid count"),
        ("2^", "invalid count"),
        ("", "invalid count ''"),
        ("__import__('os')", "invalid count"),  # text is never executed
        ("2^63", "count '2^63' is too large (at most 2^62)"),
        ("1e19", "is too large"),
        ("1e1000", "is too large"),
        ("9" * 100_000, "count '999999999999…' is too large"),  # past int()'s digit limit
        ("2^" + "9" * 100_000, "is too large"),
        ("1e" + "9" * 100_000, "is too large"),
    ],
)
def test_count_errors_say_what_is_accepted(text: str, fragment: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        count(text)
    assert fragment in str(info.value) and len(str(info.value)) < 200


# ------------------------------------------------------------------------------------------
# help: for users (what each command does, an example each, defaults), and examples that run


def test_top_level_help_speaks_to_users(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m tang [-h] COMMAND ...")
    assert "argparse" not in out and "module" not in out and "``" not in out
    for name in SUBCOMMANDS:
        module = importlib.import_module(name)
        assert " ".join(module.HELP.split()) in " ".join(out.split())  # what it does
        assert f"  {module.EXAMPLES[0]}\n" in out  # and an example
    assert "python -m tang COMMAND --help" in out


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", ["eval", "run", "kernel"])
def test_subcommand_help_shows_every_default_and_examples(command: str) -> None:
    sub = _subparsers()[command]
    text = " ".join(sub.format_help().split())
    for action in sub._actions:
        if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
            assert f"(default: {action.default})" in text, action.dest
    assert "examples:" in text


def test_run_help_names_the_count_forms(capsys) -> None:
    text = " ".join(_subparsers()["run"].format_help().split())
    assert f"written like {COUNT_FORMS} (default: 2^20)" in text


@pytest.mark.parametrize(
    "example",
    [
        # `tang run` opens the best device: wgpu-py where it has an adapter
        pytest.param(e, marks=pytest.mark.toolchain) if shlex.split(e)[3] == "run" else e
        for name in SUBCOMMANDS
        for e in importlib.import_module(name).EXAMPLES
    ],
)
def test_every_help_example_runs(example: str, capsys) -> None:
    argv = shlex.split(example)
    assert argv[:3] == ["python", "-m", "tang"]
    assert main(argv[3:]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out
