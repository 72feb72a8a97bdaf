"""Fit a circle to noisy points: the algebraic fit as a start, then Levenberg–Marquardt on
the geometric distances, with the fit's covariance from the Jacobian at the answer.

    python -m demos.fit [--points N] [--arc DEG] [--noise SIGMA] [--seed S] [--json]
    python -m demos.fit --data points.csv [--json]

The points are sampled on an arc of a known circle with Gaussian noise (or read from a file
of ``x,y`` lines). The residuals are the signed distances ‖p − c‖ − r, written once over any
number: ``tang.solve.least_squares`` takes their Jacobian from one dual pass carrying the
three tangents at once. The covariance of (cx, cy, r) is s²·(JᵀJ)⁻¹ with s² = ‖r‖²/(m − 3),
the usual linearised estimate; a short arc makes the centre and radius strongly correlated,
which the printed correlation shows.
"""

from __future__ import annotations

import json
import math
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tang
from demos.common import OneLineParser
from tang import linalg
from tang.solve import least_squares

Point = tuple[float, float]
TRUE_CIRCLE = (2.0, -1.0, 3.0)  # centre x, centre y, radius of the sampled circle


def sample_arc(n: int, arc_deg: float, noise: float, seed: int) -> list[Point]:
    """``n`` points on an arc of ``arc_deg`` degrees of TRUE_CIRCLE, each coordinate moved
    by Gaussian noise of standard deviation ``noise``."""
    rng = random.Random(seed)
    cx, cy, r = TRUE_CIRCLE
    span = math.radians(arc_deg)
    out = []
    for i in range(n):
        a = 0.3 + span * i / max(n - 1, 1)
        out.append(
            (
                cx + r * math.cos(a) + rng.gauss(0.0, noise),
                cy + r * math.sin(a) + rng.gauss(0.0, noise),
            )
        )
    return out


def read_points(path: Path) -> list[Point]:
    """``x,y`` per line (blank lines and lines starting with # skipped); errors name the line."""
    points = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = text.replace(";", ",").split(",")
        try:
            x, y = (float(p) for p in parts)
        except ValueError:
            raise ValueError(f"{path}:{number}: expected 'x,y', got {text!r}") from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"{path}:{number}: coordinates must be finite, got {text!r}")
        points.append((x, y))
    return points


def algebraic_fit(points: Sequence[Point]) -> tuple[float, float, float]:
    """Kåsa's fit: x² + y² = 2a·x + 2b·y + c is linear in (a, b, c), solved by least squares;
    then the centre is (a, b) and r² = c + a² + b². A good start, biased on short arcs."""
    rows = [[2.0 * x, 2.0 * y, 1.0] for x, y in points]
    rhs = [x * x + y * y for x, y in points]
    (a, b, c), _, rank, _ = linalg.lstsq(rows, rhs)
    if rank < 3:
        raise ValueError("the points are collinear (or too few): no circle through them")
    return a, b, math.sqrt(max(c + a * a + b * b, 0.0))


def circle_residuals(points: Sequence[Point]):
    """The residual function (cx, cy, r) ↦ [‖pᵢ − c‖ − r], over any number type."""

    def residuals(p: list[Any]) -> list[Any]:
        cx, cy, r = p
        return [tang.sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy)) - r for x, y in points]

    return residuals


def fit_circle(points: Sequence[Point]) -> dict[str, Any]:
    """The geometric least-squares circle through ``points``, its standard errors and the
    correlation of its parameters; the solver's counts come along."""
    if len(points) < 4:
        raise ValueError(f"a circle fit with errors needs at least 4 points, got {len(points)}")
    start = algebraic_fit(points)
    result = least_squares(circle_residuals(points), list(start))
    jac = result.jac
    jtj = [[sum(row[i] * row[j] for row in jac) for j in range(3)] for i in range(3)]
    s2 = 2.0 * result.cost / (len(points) - 3)
    cov = [[s2 * v for v in row] for row in linalg.inv(jtj)]
    errors = [math.sqrt(max(cov[i][i], 0.0)) for i in range(3)]
    corr = [[cov[i][j] / (errors[i] * errors[j] or 1.0) for j in range(3)] for i in range(3)]
    return {
        "start": list(start),
        "centre": result.x[:2],
        "radius": result.x[2],
        "standard_errors": errors,
        "correlation": corr,
        "rms_residual": math.sqrt(2.0 * result.cost / len(points)),
        "cost": result.cost,
        "nfev": result.nfev,
        "njev": result.njev,
        "success": result.success,
        "message": result.message,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (usage in the module docstring); returns the exit code."""
    parser = OneLineParser(
        prog="python -m demos.fit",
        description="Fit a circle to noisy points by Levenberg–Marquardt (tang.solve), "
        "Jacobians from dual numbers, with the fit's covariance.",
    )
    parser.add_argument("--points", type=int, default=40, help="how many points (default 40)")
    parser.add_argument("--arc", type=float, default=120.0, help="arc sampled, degrees (120)")
    parser.add_argument("--noise", type=float, default=0.05, help="noise std. dev. (0.05)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--data", type=Path, help="read x,y lines from this file instead")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        if args.data is not None:
            points = read_points(args.data)
        else:
            if not 4 <= args.points <= 100_000:
                raise ValueError(f"--points must be 4…100000, got {args.points}")
            if not (0.0 < args.arc <= 360.0):
                raise ValueError(f"--arc must be in (0, 360] degrees, got {args.arc:g}")
            if not (0.0 <= args.noise < math.inf):
                raise ValueError(f"--noise must be finite and ≥ 0, got {args.noise:g}")
            points = sample_arc(args.points, args.arc, args.noise, args.seed)
        fit = fit_circle(points)
    except (ValueError, OSError, linalg.LinAlgError) as err:
        parser.error(str(err))
    fit["points"] = len(points)
    if args.data is None:
        fit["true"] = list(TRUE_CIRCLE)
    if args.json:
        print(json.dumps(fit, allow_nan=False))
        return 0
    (cx, cy), r, (ecx, ecy, er) = fit["centre"], fit["radius"], fit["standard_errors"]
    source = str(args.data) if args.data else f"{args.arc:g}° arc, noise {args.noise:g}"
    print(f"{len(points)} points ({source})")
    sx, sy, sr = fit["start"]
    print(f"algebraic start: centre ({sx:.4f}, {sy:.4f}), radius {sr:.4f}")
    print(f"fit:  centre ({cx:.4f} ± {ecx:.4f}, {cy:.4f} ± {ecy:.4f}), radius {r:.4f} ± {er:.4f}")
    if args.data is None:
        print(f"true: centre ({TRUE_CIRCLE[0]:g}, {TRUE_CIRCLE[1]:g}), radius {TRUE_CIRCLE[2]:g}")
    c = fit["correlation"]
    print(f"correlation: cx·cy {c[0][1]:+.3f}, cx·r {c[0][2]:+.3f}, cy·r {c[1][2]:+.3f}")
    print(
        f"rms residual {fit['rms_residual']:.4g}; Levenberg–Marquardt: {fit['nfev']} residual "
        f"and {fit['njev']} Jacobian evaluations (dual numbers), {fit['message']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
