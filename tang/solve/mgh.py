"""The Moré–Garbow–Hillstrom test problems, written once over any number.

J. J. Moré, B. S. Garbow, K. E. Hillstrom, "Testing unconstrained optimization software",
ACM Trans. Math. Software 7(1), 17–41 (1981). Each problem is m residuals r(x) in n
unknowns, to be brought to a minimum of f(x) = Σ rᵢ(x)² (the paper's f is the plain sum of
squares: ``least_squares``'s ``cost`` is half of it). The residual functions use
``tang.exp`` & co., so floats give values, Duals exact slopes and traced nodes a graph.

``PROBLEMS`` maps a name to its ``Problem``: n, m, the standard starting point, and the
minimum values of f. ``minima[0]`` is the value the paper prints for the minimiser the
problem is known for; the further entries are other minima the paper (or, where said, the
literature) lists — for example the local minimum of Freudenstein and Roth that the standard
start leads to. ``published`` holds the paper's printed figures; ``minima`` holds them to
more digits, from the sources named in each ``note`` (most from the GSL test suite, which
checks each to its stated precision), cross-checked against MINPACK (scipy's
``least_squares(method="lm")``) run to tight tolerances.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import scalar as S

Number = Any  # float | tang.Dual | tang.Node
Residuals = Callable[[Sequence[Number]], list[Number]]


@dataclass(frozen=True)
class Problem:
    """One test problem: ``residuals(x)`` gives the m residuals at a point of n numbers."""

    name: str
    residuals: Residuals
    n: int
    m: int
    x0: tuple[float, ...]
    minima: tuple[float, ...]  # f = Σ r², the paper's headline value first
    published: tuple[str, ...]  # the paper's printed figures, as printed ("0" where exact)
    note: str = ""
    number: int = 0  # the problem's number in the paper

    def objective(self, x: Sequence[Number]) -> Number:
        """f(x) = Σ rᵢ(x)²: the paper's objective, for ``minimize``."""
        return sum_of_squares(self.residuals(x))


def sum_of_squares(residuals: Sequence[Number]) -> Number:
    """Σ rᵢ² over any number type."""
    total: Number = 0.0
    for r in residuals:
        total = total + r * r
    return total


SQRT5, SQRT10, SQRT_1E_5 = math.sqrt(5.0), math.sqrt(10.0), math.sqrt(1e-5)


# ---------------------------------------------------------------------------------------
# the residual functions, in the paper's order


def rosenbrock(x: Sequence[Number]) -> list[Number]:
    """(1) Rosenbrock: 10(x₂ − x₁²), 1 − x₁."""
    x1, x2 = x
    return [10.0 * (x2 - x1 * x1), 1.0 - x1]


def freudenstein_roth(x: Sequence[Number]) -> list[Number]:
    """(2) Freudenstein and Roth."""
    x1, x2 = x
    return [
        -13.0 + x1 + ((5.0 - x2) * x2 - 2.0) * x2,
        -29.0 + x1 + ((x2 + 1.0) * x2 - 14.0) * x2,
    ]


def powell_badly_scaled(x: Sequence[Number]) -> list[Number]:
    """(3) Powell badly scaled: 10⁴x₁x₂ − 1, e^(−x₁) + e^(−x₂) − 1.0001."""
    x1, x2 = x
    return [1e4 * x1 * x2 - 1.0, S.exp(-x1) + S.exp(-x2) - 1.0001]


def brown_badly_scaled(x: Sequence[Number]) -> list[Number]:
    """(4) Brown badly scaled: x₁ − 10⁶, x₂ − 2·10⁻⁶, x₁x₂ − 2."""
    x1, x2 = x
    return [x1 - 1e6, x2 - 2e-6, x1 * x2 - 2.0]


def beale(x: Sequence[Number]) -> list[Number]:
    """(5) Beale: yᵢ − x₁(1 − x₂ⁱ)."""
    x1, x2 = x
    return [y - x1 * (1.0 - x2**i) for i, y in ((1, 1.5), (2, 2.25), (3, 2.625))]


def jennrich_sampson(x: Sequence[Number], m: int = 10) -> list[Number]:
    """(6) Jennrich and Sampson: 2 + 2i − (e^(i x₁) + e^(i x₂))."""
    x1, x2 = x
    return [2.0 + 2.0 * i - (S.exp(i * x1) + S.exp(i * x2)) for i in range(1, m + 1)]


def helical_valley(x: Sequence[Number]) -> list[Number]:
    """(7) Helical valley. θ is the paper's: arctan(x₂/x₁)/2π, plus ½ where x₁ < 0, which
    is atan2(x₂, x₁)/2π plus 1 in the third quadrant (the branch follows the values)."""
    x1, x2, x3 = x
    turn = S.where(S.lt(x1, 0.0), S.where(S.lt(x2, 0.0), 1.0, 0.0), 0.0)
    theta = S.atan2(x2, x1) * (0.5 / math.pi) + turn
    return [10.0 * (x3 - 10.0 * theta), 10.0 * (S.sqrt(x1 * x1 + x2 * x2) - 1.0), x3]


BARD_Y = (0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39)


def bard(x: Sequence[Number]) -> list[Number]:
    """(8) Bard: yᵢ − (x₁ + uᵢ/(vᵢx₂ + wᵢx₃)), u = i, v = 16 − i, w = min(u, v)."""
    x1, x2, x3 = x
    out = []
    for i, y in enumerate(BARD_Y, start=1):
        u, v = float(i), float(16 - i)
        out.append(y - (x1 + S.div(u, v * x2 + min(u, v) * x3)))
    return out


GAUSSIAN_Y = (0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989)
GAUSSIAN_Y = GAUSSIAN_Y + GAUSSIAN_Y[-2::-1]  # symmetric about the middle


def gaussian(x: Sequence[Number]) -> list[Number]:
    """(9) Gaussian: x₁ exp(−x₂(tᵢ − x₃)²/2) − yᵢ, tᵢ = (8 − i)/2."""
    x1, x2, x3 = x
    out = []
    for i, y in enumerate(GAUSSIAN_Y, start=1):
        d = (8 - i) / 2.0 - x3
        out.append(x1 * S.exp(-0.5 * x2 * d * d) - y)
    return out


MEYER_Y = (34780.0, 28610.0, 23650.0, 19630.0, 16370.0, 13720.0, 11540.0, 9744.0,
           8261.0, 7030.0, 6005.0, 5147.0, 4427.0, 3820.0, 3307.0, 2872.0)  # fmt: skip


def meyer(x: Sequence[Number]) -> list[Number]:
    """(10) Meyer: x₁ exp(x₂/(tᵢ + x₃)) − yᵢ, tᵢ = 45 + 5i."""
    x1, x2, x3 = x
    return [x1 * S.exp(S.div(x2, 45.0 + 5.0 * i + x3)) - y for i, y in enumerate(MEYER_Y, start=1)]


def gulf(x: Sequence[Number], m: int = 99) -> list[Number]:
    """(11) Gulf research and development: exp(−|yᵢ − x₂|^x₃ / x₁) − tᵢ, tᵢ = i/100,
    yᵢ = 25 + (−50 ln tᵢ)^(2/3)."""
    x1, x2, x3 = x
    out = []
    for i in range(1, m + 1):
        t = i / 100.0
        y = 25.0 + (-50.0 * math.log(t)) ** (2.0 / 3.0)
        out.append(S.exp(-S.div(S.pow(S.abs(y - x2), x3), x1)) - t)
    return out


def box_3d(x: Sequence[Number], m: int = 10) -> list[Number]:
    """(12) Box three-dimensional: e^(−tx₁) − e^(−tx₂) − x₃(e^(−t) − e^(−10t)), t = i/10."""
    x1, x2, x3 = x
    out = []
    for i in range(1, m + 1):
        t = 0.1 * i
        out.append(S.exp(-t * x1) - S.exp(-t * x2) - x3 * (math.exp(-t) - math.exp(-10.0 * t)))
    return out


def powell_singular(x: Sequence[Number]) -> list[Number]:
    """(13) Powell singular (its Jacobian is singular at the solution)."""
    x1, x2, x3, x4 = x
    a, b = x2 - 2.0 * x3, x1 - x4
    return [x1 + 10.0 * x2, SQRT5 * (x3 - x4), a * a, SQRT10 * (b * b)]


def wood(x: Sequence[Number]) -> list[Number]:
    """(14) Wood."""
    x1, x2, x3, x4 = x
    return [
        10.0 * (x2 - x1 * x1),
        1.0 - x1,
        math.sqrt(90.0) * (x4 - x3 * x3),
        1.0 - x3,
        SQRT10 * (x2 + x4 - 2.0),
        (x2 - x4) / SQRT10,
    ]


KOWALIK_Y = (0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323, 0.0235, 0.0246)
KOWALIK_U = (4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625)


def kowalik_osborne(x: Sequence[Number]) -> list[Number]:
    """(15) Kowalik and Osborne: yᵢ − x₁(uᵢ² + uᵢx₂)/(uᵢ² + uᵢx₃ + x₄)."""
    x1, x2, x3, x4 = x
    return [
        y - S.div(x1 * (u * (u + x2)), u * (u + x3) + x4)
        for y, u in zip(KOWALIK_Y, KOWALIK_U, strict=True)
    ]


def brown_dennis(x: Sequence[Number], m: int = 20) -> list[Number]:
    """(16) Brown and Dennis: (x₁ + tᵢx₂ − e^tᵢ)² + (x₃ + x₄ sin tᵢ − cos tᵢ)², tᵢ = i/5."""
    x1, x2, x3, x4 = x
    out = []
    for i in range(1, m + 1):
        t = i / 5.0
        a = x1 + t * x2 - math.exp(t)
        b = x3 + x4 * math.sin(t) - math.cos(t)
        out.append(a * a + b * b)
    return out


def biggs_exp6(x: Sequence[Number], m: int = 13) -> list[Number]:
    """(18) Biggs EXP6: x₃e^(−tx₁) − x₄e^(−tx₂) + x₆e^(−tx₅) − yᵢ, t = i/10,
    yᵢ = e^(−t) − 5e^(−10t) + 3e^(−4t)."""
    x1, x2, x3, x4, x5, x6 = x
    out = []
    for i in range(1, m + 1):
        t = 0.1 * i
        y = math.exp(-t) - 5.0 * math.exp(-10.0 * t) + 3.0 * math.exp(-4.0 * t)
        out.append(x3 * S.exp(-t * x1) - x4 * S.exp(-t * x2) + x6 * S.exp(-t * x5) - y)
    return out


OSBORNE1_Y = (0.844, 0.908, 0.932, 0.936, 0.925, 0.908, 0.881, 0.850, 0.818, 0.784, 0.751,
              0.718, 0.685, 0.658, 0.628, 0.603, 0.580, 0.558, 0.538, 0.522, 0.506, 0.490,
              0.478, 0.467, 0.457, 0.448, 0.438, 0.431, 0.424, 0.420, 0.414, 0.411,
              0.406)  # fmt: skip


def osborne_1(x: Sequence[Number]) -> list[Number]:
    """(17) Osborne 1: yᵢ − (x₁ + x₂e^(−tᵢx₄) + x₃e^(−tᵢx₅)), tᵢ = 10(i − 1)."""
    x1, x2, x3, x4, x5 = x
    out = []
    for i, y in enumerate(OSBORNE1_Y):
        t = 10.0 * i
        out.append(y - (x1 + x2 * S.exp(-t * x4) + x3 * S.exp(-t * x5)))
    return out


OSBORNE2_Y = (1.366, 1.191, 1.112, 1.013, 0.991, 0.885, 0.831, 0.847, 0.786, 0.725, 0.746,
              0.679, 0.608, 0.655, 0.616, 0.606, 0.602, 0.626, 0.651, 0.724, 0.649, 0.649,
              0.694, 0.644, 0.624, 0.661, 0.612, 0.558, 0.533, 0.495, 0.500, 0.423, 0.395,
              0.375, 0.372, 0.391, 0.396, 0.405, 0.428, 0.429, 0.523, 0.562, 0.607, 0.653,
              0.672, 0.708, 0.633, 0.668, 0.645, 0.632, 0.591, 0.559, 0.597, 0.625, 0.739,
              0.710, 0.729, 0.720, 0.636, 0.581, 0.428, 0.292, 0.162, 0.098, 0.054)  # fmt: skip


def osborne_2(x: Sequence[Number]) -> list[Number]:
    """(19) Osborne 2: yᵢ − (x₁e^(−tx₅) + Σ x_k e^(−(t − x_{k+7})² x_{k+4})), t = (i − 1)/10."""
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11 = x
    out = []
    for i, y in enumerate(OSBORNE2_Y):
        t = i / 10.0
        a, b, c = t - x9, t - x10, t - x11
        model = (
            x1 * S.exp(-t * x5)
            + x2 * S.exp(-(a * a) * x6)
            + x3 * S.exp(-(b * b) * x7)
            + x4 * S.exp(-(c * c) * x8)
        )
        out.append(y - model)
    return out


def watson(x: Sequence[Number]) -> list[Number]:
    """(20) Watson, m = 31: a polynomial fit on tᵢ = i/29 plus x₁ and x₂ − x₁² − 1."""
    n = len(x)
    out = []
    for i in range(1, 30):
        t = i / 29.0
        s1: Number = 0.0  # Σ (j − 1) x_j t^(j−2), j = 2..n
        power = 1.0
        for j in range(1, n):
            s1 = s1 + (j * power) * x[j]
            power *= t
        s2: Number = 0.0  # Σ x_j t^(j−1), j = 1..n
        power = 1.0
        for j in range(n):
            s2 = s2 + power * x[j]
            power *= t
        out.append(s1 - s2 * s2 - 1.0)
    out.append(x[0] * 1.0)
    out.append(x[1] - x[0] * x[0] - 1.0)
    return out


def penalty_1(x: Sequence[Number]) -> list[Number]:
    """(23) Penalty I, m = n + 1: √a(xᵢ − 1), then Σ xⱼ² − ¼, a = 10⁻⁵."""
    return [SQRT_1E_5 * (xi - 1.0) for xi in x] + [sum_of_squares(x) - 0.25]


def penalty_2(x: Sequence[Number]) -> list[Number]:
    """(24) Penalty II, m = 2n."""
    n = len(x)
    out: list[Number] = [x[0] - 0.2]
    for i in range(1, n):  # the paper's i = 2..n
        y = math.exp((i + 1) / 10.0) + math.exp(i / 10.0)
        out.append(SQRT_1E_5 * (S.exp(x[i] / 10.0) + S.exp(x[i - 1] / 10.0) - y))
    for i in range(1, n):  # the paper's i = n+1..2n-1
        out.append(SQRT_1E_5 * (S.exp(x[i] / 10.0) - math.exp(-0.1)))
    total: Number = 0.0
    for j, xj in enumerate(x):
        total = total + (n - j) * (xj * xj)
    out.append(total - 1.0)
    return out


def variably_dimensioned(x: Sequence[Number]) -> list[Number]:
    """(25) Variably dimensioned, m = n + 2: xᵢ − 1, then s and s², s = Σ j(xⱼ − 1)."""
    s: Number = 0.0
    for j, xj in enumerate(x, start=1):
        s = s + j * (xj - 1.0)
    return [xi - 1.0 for xi in x] + [s, s * s]


def trigonometric(x: Sequence[Number]) -> list[Number]:
    """(26) Trigonometric, m = n: n − Σ cos xⱼ + i(1 − cos xᵢ) − sin xᵢ."""
    n = len(x)
    cosines = [S.cos(xj) for xj in x]
    base: Number = float(n)
    for c in cosines:
        base = base - c
    return [base + i * (1.0 - c) - S.sin(xi) for i, (xi, c) in enumerate(zip(x, cosines), 1)]


def brown_almost_linear(x: Sequence[Number]) -> list[Number]:
    """(27) Brown almost-linear, m = n: xᵢ + Σ xⱼ − (n + 1) for i < n, then Π xⱼ − 1."""
    n = len(x)
    total: Number = -(n + 1.0)
    product: Number = 1.0
    for xj in x:
        total = total + xj
        product = product * xj
    return [xi + total for xi in x[:-1]] + [product - 1.0]


def discrete_boundary_value(x: Sequence[Number]) -> list[Number]:
    """(28) Discrete boundary value, m = n: 2xᵢ − xᵢ₋₁ − xᵢ₊₁ + h²(xᵢ + tᵢ + 1)³/2."""
    n = len(x)
    h = 1.0 / (n + 1)
    padded = [0.0, *x, 0.0]
    out = []
    for i in range(1, n + 1):
        c = padded[i] + i * h + 1.0
        out.append(2.0 * padded[i] - padded[i - 1] - padded[i + 1] + (h * h / 2.0) * (c * c * c))
    return out


def broyden_tridiagonal(x: Sequence[Number]) -> list[Number]:
    """(30) Broyden tridiagonal, m = n: (3 − 2xᵢ)xᵢ − xᵢ₋₁ − 2xᵢ₊₁ + 1."""
    n = len(x)
    padded = [0.0, *x, 0.0]
    return [
        (3.0 - 2.0 * padded[i]) * padded[i] - padded[i - 1] - 2.0 * padded[i + 1] + 1.0
        for i in range(1, n + 1)
    ]


def linear_full_rank(x: Sequence[Number], m: int = 10) -> list[Number]:
    """(32) Linear function, full rank: xᵢ − 2s/m − 1 for i ≤ n, −2s/m − 1 beyond, s = Σ xⱼ."""
    s: Number = 0.0
    for xj in x:
        s = s + xj
    common = s * (2.0 / m) + 1.0
    return [xi - common for xi in x] + [-common for _ in range(m - len(x))]


def chebyquad(x: Sequence[Number]) -> list[Number]:
    """(35) Chebyquad, m = n: the mean of the shifted Chebyshev polynomial Tᵢ(2x − 1) over the
    xⱼ minus its integral over [0, 1] (0 for odd i, −1/(i² − 1) for even i)."""
    n = len(x)
    sums: list[Number] = [0.0] * n
    for xj in x:
        previous: Number = 1.0
        current: Number = 2.0 * xj - 1.0
        twice = 2.0 * current
        for i in range(n):
            sums[i] = sums[i] + current
            previous, current = current, twice * current - previous
    out = []
    for i in range(1, n + 1):
        mean = sums[i - 1] / n
        out.append(mean + 1.0 / (i * i - 1.0) if i % 2 == 0 else mean)
    return out


def extended_rosenbrock(x: Sequence[Number]) -> list[Number]:
    """(21) Extended Rosenbrock, n even: Rosenbrock on each pair."""
    out: list[Number] = []
    for k in range(0, len(x), 2):
        out += rosenbrock(x[k : k + 2])
    return out


def extended_powell_singular(x: Sequence[Number]) -> list[Number]:
    """(22) Extended Powell singular, n a multiple of 4: Powell singular on each quadruple."""
    out: list[Number] = []
    for k in range(0, len(x), 4):
        out += powell_singular(x[k : k + 4])
    return out


# ---------------------------------------------------------------------------------------
# the table

GSL = "GSL's multifit_nlinear test suite (test_*.c)"


def _problem(
    number: int,
    name: str,
    residuals: Residuals,
    x0: Sequence[float],
    m: int,
    minima: Sequence[float],
    published: Sequence[str],
    note: str = "",
) -> Problem:
    return Problem(
        name=name,
        residuals=residuals,
        n=len(x0),
        m=m,
        x0=tuple(float(v) for v in x0),
        minima=tuple(minima),
        published=tuple(published),
        note=note,
        number=number,
    )


def _sized(fn: Callable[..., list[Number]], m: int) -> Residuals:
    """``fn`` with its number of residuals fixed (for the problems whose m is free)."""

    def residuals(x: Sequence[Number]) -> list[Number]:
        return fn(x, m)

    residuals.__name__ = fn.__name__
    residuals.__doc__ = f"{fn.__name__} with m = {m}."
    return residuals


_TABLE = [
    _problem(1, "rosenbrock", rosenbrock, (-1.2, 1.0), 2, [0.0], ["0"]),
    _problem(
        2,
        "freudenstein_roth",
        freudenstein_roth,
        (0.5, -2.0),
        2,
        [0.0, 48.9842536792400],
        ["0", "48.9842"],
        "f = 0 at (5, 4); the standard start leads to the local minimum 48.9842… at "
        "(11.41…, −0.8968…), which the paper lists too (digits: " + GSL + ").",
    ),
    _problem(3, "powell_badly_scaled", powell_badly_scaled, (0.0, 1.0), 2, [0.0], ["0"]),
    _problem(4, "brown_badly_scaled", brown_badly_scaled, (1.0, 1.0), 3, [0.0], ["0"]),
    _problem(5, "beale", beale, (1.0, 1.0), 3, [0.0], ["0"]),
    _problem(
        6,
        "jennrich_sampson",
        _sized(jennrich_sampson, 10),
        (0.3, 0.4),
        10,
        [124.3621823556148],
        ["124.362"],
        "m = 10; the minimum at x₁ = x₂ = 0.2578… (digits: " + GSL + ").",
    ),
    _problem(7, "helical_valley", helical_valley, (-1.0, 0.0, 0.0), 3, [0.0], ["0"]),
    _problem(
        8,
        "bard",
        bard,
        (1.0, 1.0, 1.0),
        15,
        [8.214877306578963e-03, 17.42869333333333],
        ["8.21487e-3", "17.4286"],
        "the second value is approached as x₂, x₃ → −∞ (digits: " + GSL + ").",
    ),
    _problem(
        9,
        "gaussian",
        gaussian,
        (0.4, 1.0, 0.0),
        15,
        [1.12793276961871985e-08],
        ["1.12793e-8"],
        "digits: " + GSL + ".",
    ),
    _problem(
        10,
        "meyer",
        meyer,
        (0.02, 4000.0, 250.0),
        16,
        [87.94585517053883],
        ["87.9458"],
        "digits: " + GSL + ".",
    ),
    _problem(
        11,
        "gulf",
        _sized(gulf, 99),
        (5.0, 2.5, 0.15),
        99,
        [0.0],
        ["0"],
        "m = 99 (the paper allows 3 ≤ m ≤ 100; MINPACK's own uncmin test functions use 99); "
        "f = 0 at (50, 25, 1.5).",
    ),
    _problem(
        12,
        "box_3d",
        _sized(box_3d, 10),
        (0.0, 10.0, 20.0),
        10,
        [0.0],
        ["0"],
        "m = 10; f = 0 at (1, 10, 1), (10, 1, −1) and wherever x₁ = x₂, x₃ = 0.",
    ),
    _problem(13, "powell_singular", powell_singular, (3.0, -1.0, 0.0, 1.0), 4, [0.0], ["0"]),
    _problem(14, "wood", wood, (-3.0, -1.0, -3.0, -1.0), 6, [0.0], ["0"]),
    _problem(
        15,
        "kowalik_osborne",
        kowalik_osborne,
        (0.25, 0.39, 0.415, 0.39),
        11,
        [3.075056038492370e-04, 1.02734304869549252e-03],
        ["3.07505e-4", "1.02734e-3"],
        "the second value is approached as x₁ → ∞, x₃, x₄ → −∞ (digits: " + GSL + ").",
    ),
    _problem(
        16,
        "brown_dennis",
        _sized(brown_dennis, 20),
        (25.0, 5.0, -5.0, -1.0),
        20,
        [85822.20162635628],
        ["85822.2"],
        "m = 20 (digits: " + GSL + ").",
    ),
    _problem(
        17,
        "osborne_1",
        osborne_1,
        (0.5, 1.5, -1.0, 0.01, 0.02),
        33,
        [5.464894697482687e-05],
        ["5.46489e-5"],
        "digits: " + GSL + ".",
    ),
    _problem(
        18,
        "biggs_exp6",
        _sized(biggs_exp6, 13),
        (1.0, 2.0, 1.0, 1.0, 1.0, 1.0),
        13,
        [0.0, 5.65565e-3],
        ["0", "5.65565e-3"],
        "m = 13; f = 0 at (1, 10, 1, 5, 4, 3); the paper also lists the local minimum 5.65565e-3.",
    ),
    _problem(
        19,
        "osborne_2",
        osborne_2,
        (1.3, 0.65, 0.65, 0.7, 0.6, 3.0, 5.0, 7.0, 2.0, 4.5, 5.5),
        65,
        [4.013773629354766e-02],
        ["4.01377e-2"],
        "digits: MINPACK (scipy) and tang's LM agree to 13 figures.",
    ),
    _problem(
        20,
        "watson",
        watson,
        (0.0,) * 6,
        31,
        [2.287670053552372e-03],
        ["2.28767e-3"],
        "n = 6 (digits: " + GSL + ").",
    ),
    _problem(
        21,
        "extended_rosenbrock",
        extended_rosenbrock,
        (-1.2, 1.0) * 5,
        10,
        [0.0],
        ["0"],
        "n = 10.",
    ),
    _problem(
        22,
        "extended_powell_singular",
        extended_powell_singular,
        (3.0, -1.0, 0.0, 1.0) * 3,
        12,
        [0.0],
        ["0"],
        "n = 12.",
    ),
    _problem(
        23,
        "penalty_1",
        penalty_1,
        tuple(float(j) for j in range(1, 11)),
        11,
        [7.08765146709037993e-05],
        ["7.08765e-5"],
        "n = 10 (digits: " + GSL + ").",
    ),
    _problem(
        24,
        "penalty_2",
        penalty_2,
        (0.5,) * 4,
        8,
        [9.37629300735544219e-06],
        ["9.37629e-6"],
        "n = 4 (digits: " + GSL + ").",
    ),
    _problem(
        25,
        "variably_dimensioned",
        variably_dimensioned,
        tuple(1.0 - j / 10.0 for j in range(1, 11)),
        12,
        [0.0],
        ["0"],
        "n = 10.",
    ),
    _problem(
        26,
        "trigonometric",
        trigonometric,
        (0.1,) * 10,
        10,
        [0.0, 2.795056121878e-05],
        ["0", "2.79506e-5"],
        "n = 10; the paper lists 0 only; the standard start leads to the local minimum "
        "2.79506e-5 known from the literature (digits: MINPACK, i.e. scipy's lm, to tight "
        "tolerances).",
    ),
    _problem(
        27,
        "brown_almost_linear",
        brown_almost_linear,
        (0.5,) * 10,
        10,
        [0.0, 1.0],
        ["0", "1"],
        "n = 10; f = 0 at (α, …, α, α^(1−n)) with nα^n − (n+1)α^(n−1) + 1 = 0, and f = 1 at "
        "(0, …, 0, n + 1).",
    ),
    _problem(
        28,
        "discrete_boundary_value",
        discrete_boundary_value,
        tuple((j / 11.0) * (j / 11.0 - 1.0) for j in range(1, 11)),
        10,
        [0.0],
        ["0"],
        "n = 10.",
    ),
    _problem(
        30,
        "broyden_tridiagonal",
        broyden_tridiagonal,
        (-1.0,) * 10,
        10,
        [0.0],
        ["0"],
        "n = 10.",
    ),
    _problem(
        32,
        "linear_full_rank",
        _sized(linear_full_rank, 10),
        (1.0,) * 5,
        10,
        [5.0],
        ["5"],
        "n = 5, m = 10: f = m − n.",
    ),
    _problem(
        35,
        "chebyquad",
        chebyquad,
        tuple(j / 9.0 for j in range(1, 9)),
        8,
        [3.516873725677984e-03],
        ["3.51687e-3"],
        "n = m = 8 (digits: MINPACK, i.e. scipy's lm, to tight tolerances).",
    ),
]

PROBLEMS: dict[str, Problem] = {p.name: p for p in _TABLE}
