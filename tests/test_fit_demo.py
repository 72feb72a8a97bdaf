"""The circle fit (demos/fit.py): the geometric fit recovers the sampled circle within its
own error bars, is a stationary point of the cost (checked by numpy finite differences, not
by tang), its covariance equals s²·(JᵀJ)⁻¹ computed by numpy from the closed-form Jacobian,
and bad input gets one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from demos import fit


def _cost(points: list[tuple[float, float]], p: np.ndarray) -> float:
    xy = np.array(points)
    r = np.hypot(xy[:, 0] - p[0], xy[:, 1] - p[1]) - p[2]
    return 0.5 * float(r @ r)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_fit_recovers_the_circle_within_its_error_bars(seed: int) -> None:
    points = fit.sample_arc(60, 120.0, 0.05, seed)
    out = fit.fit_circle(points)
    found = [*out["centre"], out["radius"]]
    assert out["success"], out["message"]
    for got, true, err in zip(found, fit.TRUE_CIRCLE, out["standard_errors"], strict=True):
        assert abs(got - true) < 4.0 * err, (got, true, err)
    assert 0.03 < out["rms_residual"] < 0.08  # the noise put in, seen through the residuals


def test_the_fit_is_a_minimum_of_the_cost_and_better_than_the_start() -> None:
    points = fit.sample_arc(40, 90.0, 0.1, 7)
    out = fit.fit_circle(points)
    p = np.array([*out["centre"], out["radius"]])
    h = 1e-6
    slope = [(_cost(points, p + h * e) - _cost(points, p - h * e)) / (2 * h) for e in np.eye(3)]
    assert np.max(np.abs(slope)) < 1e-6
    assert out["cost"] == pytest.approx(_cost(points, p), rel=1e-12)
    assert out["cost"] < _cost(points, np.array(out["start"]))


def test_the_covariance_is_the_linearised_one_computed_by_numpy() -> None:
    points = fit.sample_arc(30, 60.0, 0.05, 3)
    out = fit.fit_circle(points)
    cx, cy, r = *out["centre"], out["radius"]
    xy = np.array(points)
    d = np.hypot(xy[:, 0] - cx, xy[:, 1] - cy)
    jac = np.column_stack([-(xy[:, 0] - cx) / d, -(xy[:, 1] - cy) / d, -np.ones(len(d))])
    s2 = float(np.sum((d - r) ** 2)) / (len(points) - 3)
    cov = s2 * np.linalg.inv(jac.T @ jac)
    np.testing.assert_allclose(out["standard_errors"], np.sqrt(np.diag(cov)), rtol=1e-6)
    corr = cov / np.outer(np.sqrt(np.diag(cov)), np.sqrt(np.diag(cov)))
    np.testing.assert_allclose(out["correlation"], corr, atol=1e-6)
    assert abs(out["correlation"][0][2]) > 0.9  # a 60° arc: centre and radius trade off


def test_the_command_line_prints_json_and_reads_a_file(tmp_path: Path, capsys) -> None:
    assert fit.main(["--points", "25", "--seed", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["points"] == 25 and out["true"] == list(fit.TRUE_CIRCLE)
    data = tmp_path / "p.csv"
    data.write_text("# x,y\n" + "\n".join(f"{x},{y}" for x, y in fit.sample_arc(12, 300, 0, 1)))
    assert fit.main(["--data", str(data), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["radius"] == pytest.approx(fit.TRUE_CIRCLE[2], abs=1e-9)
    assert "true" not in out


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--points", "3"], "--points must be 4…100000"),
        (["--arc", "0"], "--arc must be in (0, 360]"),
        (["--noise", "nan"], "--noise must be finite"),
    ],
)
def test_bad_arguments_get_one_line(argv: list[str], says: str, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        fit.main(argv)
    assert stop.value.code == 2
    assert says in capsys.readouterr().err


def test_bad_files_and_collinear_points_are_named(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2\n3;4\nfive,6\n")
    with pytest.raises(SystemExit):
        fit.main(["--data", str(bad)])
    assert f"{bad}:3: expected 'x,y', got 'five,6'" in capsys.readouterr().err
    line = tmp_path / "line.csv"
    line.write_text("\n".join(f"{t},{2 * t + 1}" for t in range(6)))
    with pytest.raises(SystemExit):
        fit.main(["--data", str(line)])
    assert "collinear" in capsys.readouterr().err
