"""tang.geometry's exact predicates against an exact-rational oracle written here.

The oracle is the determinant of the points' lifted matrix, rows (x, y[, z][, |p|²], 1),
in ``fractions.Fraction``: it shares no code (and no formula) with tang's exact path.
For each predicate: 100,000 random point sets and 10,000 near-degenerate ones (exactly
degenerate sets built on lattices, lines, planes, circles and spheres, then nudged by one
ulp or not; sets rounded onto them; ulp grids as in Kettner et al.'s "Classroom examples
of robustness problems in geometric computations") must give the oracle's sign every
time, and naive float evaluation must get some of the near-degenerate ones wrong.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from fractions import Fraction

import pytest

from tang.geometry import Vec2, Vec3, incircle, insphere, orient2d, orient3d
from tang.geometry import predicates as P

Point = tuple[float, ...]
RANDOM_SETS = 100_000
NEAR_SETS = 10_000

# ---------------------------------------------------------------------------------------
# the oracle


def laplace_det(m: list[list[Fraction]]) -> Fraction:
    """Determinant by Laplace expansion along the first row, exact on Fractions. Bottom-up:
    the minors on the last k rows are built once for every set of k columns from those on
    the last k - 1 rows (45 products and sums for 4×4 instead of 75)."""
    n = len(m)
    minors: dict[tuple[int, ...], Fraction] = {(j,): m[-1][j] for j in range(n)}
    for k in range(n - 2, -1, -1):
        row, larger = m[k], {}
        for cols in itertools.combinations(range(n), n - k):
            total = None
            for i, j in enumerate(cols):
                if row[j]:
                    term = row[j] * minors[cols[:i] + cols[i + 1 :]]
                    if total is None:
                        total = -term if i % 2 else term
                    else:
                        total = total - term if i % 2 else total + term
            larger[cols] = Fraction(0) if total is None else total
        minors = larger
    return minors[tuple(range(n))]


def lifted_rows(points: Sequence[Sequence[float]], lift: bool) -> list[list[Fraction]]:
    """Rows (coordinates, |p|² if ``lift``, 1) as Fractions: the matrix whose determinant
    each predicate's sign is."""
    rows = []
    for p in points:
        q = [Fraction(x) for x in p]
        rows.append(q + ([sum(x * x for x in q)] if lift else []) + [Fraction(1)])
    return rows


def oracle_det(points: Sequence[Sequence[float]], lift: bool) -> Fraction:
    """det of the lifted matrix, computed as the paper writes it: subtracting the last row
    from the others leaves a single 1 in the last column, and the lift column can then be
    replaced by |p - last|² by adding multiples of the others; so the determinant is that
    of the rows (p - last, |p - last|²). test_the_oracle_shift_is_the_determinant checks
    this against plain elimination on ``lifted_rows``."""
    last = [Fraction(x) for x in points[-1]]
    rows = []
    for p in points[:-1]:
        row = [Fraction(x) - y for x, y in zip(p, last)]
        if lift:
            squares = [x * x for x in row]
            row.append(sum(squares[1:], squares[0]))
        rows.append(row)
    return laplace_det(rows)


def sign(x: Fraction | float) -> int:
    return (x > 0) - (x < 0)


ORACLES: dict[str, tuple[Callable[..., int], Callable[..., int], int, bool]] = {
    # name: (tang's predicate, the oracle, dimension, lifted)
    "orient2d": (orient2d, lambda *p: sign(oracle_det(p, False)), 2, False),
    "orient3d": (orient3d, lambda *p: sign(oracle_det(p, False)), 3, False),
    "incircle": (incircle, lambda *p: sign(oracle_det(p, True)), 2, True),
    "insphere": (insphere, lambda *p: sign(oracle_det(p, True)), 3, True),
}
ARITY = {"orient2d": 3, "orient3d": 4, "incircle": 4, "insphere": 5}


def elimination_det(m: list[list[Fraction]]) -> Fraction:
    """Gaussian elimination on Fractions (slower than the shift; checks it)."""
    m = [list(r) for r in m]
    n, det = len(m), Fraction(1)
    for k in range(n):
        pivot = next((i for i in range(k, n) if m[i][k]), None)
        if pivot is None:
            return Fraction(0)
        if pivot != k:
            m[k], m[pivot] = m[pivot], m[k]
            det = -det
        det *= m[k][k]
        for i in range(k + 1, n):
            f = m[i][k] / m[k][k]
            m[i] = [x - f * y for x, y in zip(m[i], m[k])]
    return det


def test_the_oracle_shift_is_the_determinant() -> None:
    rng = random.Random(7)
    for name, (_, _, dim, lift) in ORACLES.items():
        for _ in range(50):
            pts = [[rng.uniform(-3, 3) for _ in range(dim)] for _ in range(ARITY[name])]
            assert oracle_det(pts, lift) == elimination_det(lifted_rows(pts, lift))


def test_the_oracle_has_shewchuks_signs() -> None:
    # counter-clockwise triangle; d below the plane of a counter-clockwise (seen from +z)
    # a, b, c; a point inside the circle / sphere through positively oriented points
    ccw = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)]
    assert ORACLES["orient2d"][1](*ccw) == 1
    tri = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]
    assert ORACLES["orient3d"][1](*tri, (0.2, 0.2, -1.0)) == 1
    assert ORACLES["incircle"][1](*ccw, (0.25, 0.25)) == 1
    tet = [*tri, (0.0, 0.0, -1.0)]
    assert ORACLES["orient3d"][1](*tet) == 1
    assert ORACLES["insphere"][1](*tet, (0.1, 0.1, -0.1)) == 1


# ---------------------------------------------------------------------------------------
# naive float evaluation (the thing the predicates exist to fix)


def naive(name: str, pts: Sequence[Sequence[float]]) -> int:
    """The plain float determinant (shifted to the last point), no filter, no exactness."""
    last = pts[-1]
    r = [[x - y for x, y in zip(p, last)] for p in pts[:-1]]
    if name in ("incircle", "insphere"):
        r = [[*row, sum(x * x for x in row)] for row in r]
    if len(r) == 2:
        det = r[0][0] * r[1][1] - r[0][1] * r[1][0]
    elif len(r) == 3:
        det = (
            r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1])
            - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
            + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0])
        )
    else:
        det = 0.0
        for j in range(4):
            minor = [row[:j] + row[j + 1 :] for row in r[1:]]
            m3 = (
                minor[0][0] * (minor[1][1] * minor[2][2] - minor[1][2] * minor[2][1])
                - minor[0][1] * (minor[1][0] * minor[2][2] - minor[1][2] * minor[2][0])
                + minor[0][2] * (minor[1][0] * minor[2][1] - minor[1][1] * minor[2][0])
            )
            det += (-1) ** j * r[0][j] * m3
    return sign(det)


def kettner_naive_orient2d(p: Point, q: Point, r: Point) -> int:
    """Kettner et al.'s float_orient: pivot on p."""
    return sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))


# ---------------------------------------------------------------------------------------
# point sets


def nudge(x: float, steps: int) -> float:
    """x moved by ``steps`` ulps (toward +inf for positive steps)."""
    toward = math.inf if steps > 0 else -math.inf
    for _ in range(abs(steps)):
        x = math.nextafter(x, toward)
    return x


def maybe_nudge(rng: random.Random, pts: list[list[float]]) -> list[Point]:
    """Two times in three, one coordinate of one point moved by ±1 ulp."""
    if rng.random() < 2 / 3:
        p = rng.randrange(len(pts))
        k = rng.randrange(len(pts[p]))
        pts[p][k] = nudge(pts[p][k], rng.choice((-1, 1)))
    return [tuple(p) for p in pts]


def random_sets(name: str, n: int, seed: int) -> list[list[Point]]:
    """Random point sets over many scales: uniform floats scaled by 2^e per set, small
    integers (exact degeneracies happen), and coordinates of wildly mixed magnitudes."""
    _, _, dim, _ = ORACLES[name]
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = i % 5
        if kind < 3:
            s = 2.0 ** rng.randint(-40, 40)
            pts = [tuple(rng.uniform(-s, s) for _ in range(dim)) for _ in range(ARITY[name])]
        elif kind == 3:
            pts = [tuple(float(rng.randint(-3, 3)) for _ in range(dim)) for _ in range(ARITY[name])]
        else:
            pts = [
                tuple(rng.uniform(-1, 1) * 2.0 ** rng.randint(-60, 60) for _ in range(dim))
                for _ in range(ARITY[name])
            ]
        out.append(pts)
    return out


def lattice_on_sphere(radius: int, dim: int) -> list[tuple[int, ...]]:
    """Every integer point at exactly ``radius`` from the origin."""
    r2 = radius * radius
    rng = range(-radius, radius + 1)
    if dim == 2:
        return [(x, y) for x in rng for y in rng if x * x + y * y == r2]
    return [(x, y, z) for x in rng for y in rng for z in rng if x * x + y * y + z * z == r2]


CIRCLE = lattice_on_sphere(1105, 2)  # 1105 = 5·13·17: many Pythagorean points
SPHERE = lattice_on_sphere(45, 3)


def exact_degenerate(name: str, rng: random.Random) -> list[list[float]]:
    """A set on which the determinant is exactly 0, in floats that hold it exactly: lattice
    points on a line, plane, circle or sphere, shifted by up to 2³¹ and scaled by 2^e (all
    exact), in random order."""
    _, _, dim, _ = ORACLES[name]
    n = ARITY[name]
    scale = 2.0 ** rng.randint(-30, 30)
    # |lattice + offset| < 2^32 in units of scale: every coordinate is exact
    offset = [rng.randint(-(2**31), 2**31) * scale for _ in range(dim)]
    if name in ("orient2d", "orient3d"):
        base = [rng.randint(-1000, 1000) for _ in range(dim)]
        dirs = [[rng.randint(-50, 50) for _ in range(dim)] for _ in range(dim - 1)]
        pts = []
        for _ in range(n):
            ks = [rng.randint(-40, 40) for _ in dirs]
            pts.append([b + sum(k * d[i] for k, d in zip(ks, dirs)) for i, b in enumerate(base)])
    else:
        pts = [list(p) for p in rng.sample(CIRCLE if name == "incircle" else SPHERE, n)]
    return [[o + x * scale for x, o in zip(p, offset)] for p in pts]


def rounded_degenerate(name: str, rng: random.Random) -> list[list[float]]:
    """A set built to lie on a line/plane/circle/sphere in real arithmetic, then rounded."""
    _, _, dim, _ = ORACLES[name]
    n = ARITY[name]
    s = 2.0 ** rng.randint(-20, 20)
    if name in ("orient2d", "orient3d"):
        base = [[rng.uniform(-s, s) for _ in range(dim)] for _ in range(dim)]
        pts = [list(p) for p in base]
        while len(pts) < n:
            ts = [rng.uniform(-2, 3) for _ in range(dim - 1)]
            pts.append(
                [
                    base[0][i] + sum(t * (base[j + 1][i] - base[0][i]) for j, t in enumerate(ts))
                    for i in range(dim)
                ]
            )
        rng.shuffle(pts)
        return pts
    center = [rng.uniform(-s, s) for _ in range(dim)]
    radius = s * rng.uniform(0.01, 2)
    pts = []
    for _ in range(n):
        u = [rng.gauss(0, 1) for _ in range(dim)]
        norm = math.sqrt(sum(x * x for x in u))
        pts.append([c + radius * x / norm for c, x in zip(center, u)])
    return pts


def ulp_grid_set(name: str, rng: random.Random) -> list[list[float]]:
    """Kettner-style: one point 0.5 + (i, j[, k])·2⁻⁵³ against exactly representable points
    of a line/plane/circle/sphere through (0.5, 0.5[, 0.5]), the grid point in any place."""
    u = 2.0**-53
    p = [0.5 + rng.randrange(256) * u for _ in range(ORACLES[name][2])]
    k = float(rng.randint(1, 40))
    if name == "orient2d":
        others = [[k, k], [2 * k + 0.5, 2 * k + 0.5]]
    elif name == "orient3d":
        others = [[k, k, k], [2 * k, 2 * k, 2 * k], [k + 0.5, 0.5 - k, 0.5]]
    elif name == "incircle":  # the circle about (0.5 + k, 0.5) through (0.5, 0.5)
        others = [[0.5 + 2 * k, 0.5], [0.5 + k, 0.5 + k], [0.5 + k, 0.5 - k]]
    else:  # the sphere about (0.5 + k, 0.5, 0.5) through (0.5, 0.5, 0.5)
        others = [[0.5 + 2 * k, 0.5, 0.5], [0.5 + k, 0.5 + k, 0.5], [0.5 + k, 0.5, 0.5 + k]]
        others.append([0.5 + k, 0.5 - k, 0.5])
    pts = [*others, p]
    rng.shuffle(pts)
    return pts


def near_degenerate_sets(name: str, n: int, seed: int) -> list[list[Point]]:
    rng = random.Random(seed)
    makers = (exact_degenerate, rounded_degenerate, ulp_grid_set)
    return [maybe_nudge(rng, makers[i % 3](name, rng)) for i in range(n)]


def check_against_oracle(name: str, sets: list[list[Point]]) -> list[int]:
    """Assert tang's sign is the oracle's on every set; return the oracle's signs."""
    predicate, oracle, _, _ = ORACLES[name]
    truths = [oracle(*pts) for pts in sets]
    wrong = [pts for pts, t in zip(sets, truths) if predicate(*pts) != t]
    assert not wrong, f"{name}: {len(wrong)} of {len(sets)} wrong, e.g. {wrong[0]}"
    return truths


# ---------------------------------------------------------------------------------------
# the bar: 100,000 random and 10,000 near-degenerate sets per predicate, every one right

NAMES = list(ORACLES)


# The Fraction oracle takes 30 µs (orient2d) to 300 µs (insphere) a set on this machine:
# 100,000 sets of each are about a minute of CPU together, so they run as slow tests (the
# near-degenerate sets, where the exact path works, stay in the fast lane).
@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_random_point_sets_match_the_oracle(name: str) -> None:
    check_against_oracle(name, random_sets(name, RANDOM_SETS, seed=NAMES.index(name)))


@pytest.mark.parametrize("name", NAMES)
def test_near_degenerate_sets_match_the_oracle_and_naive_floats_fail(name: str) -> None:
    sets = near_degenerate_sets(name, NEAR_SETS, seed=100 + NAMES.index(name))
    truths = check_against_oracle(name, sets)
    assert truths.count(0) > NEAR_SETS // 10  # the exact degeneracies are there
    naive_wrong = sum(naive(name, pts) != t for pts, t in zip(sets, truths))
    assert naive_wrong > 0, f"naive {name} was never wrong: the sets are not hard enough"


# Kettner, Mehlhorn, Pion, Schirra, Yap (2008), figure 2: p = (p_x + i·u, p_y + j·u),
# 0 ≤ i, j < 256, u = 2⁻⁵³, against q and r; their float_orient pivots on p, Shewchuk's
# expression on the last point r: naive floats misjudge some grid points either way.
KETTNER = {
    "a": ((0.5, 0.5), (12.0, 12.0), (24.0, 24.0)),
    "b": (
        (0.50000000000002531, 0.5000000000000171),
        (17.300000000000001, 17.300000000000001),
        (24.00000000000005, 24.000000000000053),
    ),
    "c": ((0.5, 0.5), (8.8000000000000007, 8.8000000000000007), (12.1, 12.1)),
}


@pytest.mark.parametrize(
    "figure", ["a", *(pytest.param(f, marks=pytest.mark.slow) for f in sorted(KETTNER)[1:])]
)
def test_kettners_orientation_grids(figure: str) -> None:
    (px, py), q, r = KETTNER[figure]
    oracle = ORACLES["orient2d"][1]
    u = 2.0**-53
    kettner_wrong = shewchuk_wrong = 0
    for i in range(256):
        for j in range(256):
            p = (px + i * u, py + j * u)
            truth = oracle(p, q, r)
            # other argument orders: the exact sign is the permutation's sign times truth
            assert orient2d(p, q, r) == truth, (p, q, r)
            assert orient2d(q, r, p) == truth, (p, q, r)
            assert orient2d(r, q, p) == -truth, (p, q, r)
            kettner_wrong += kettner_naive_orient2d(p, q, r) != truth
            shewchuk_wrong += naive("orient2d", (p, q, r)) != truth  # pivot r
    assert kettner_wrong > 0
    assert shewchuk_wrong > 0


# Kettner et al.'s convex-hull failures (section 4): points whose float orientations
# contradict each other; every ordered triple must get the oracle's sign.
HULL_EXAMPLES = [
    [
        (7.3000000000000194, 7.3000000000000167),
        (24.000000000000068, 24.000000000000071),
        (24.00000000000005, 24.000000000000053),
        (0.50000000000001621, 0.50000000000001243),
        (8.0, 4.0),
        (4.0, 9.0),
        (15.0, 27.0),
        (26.0, 25.0),
        (19.0, 11.0),
    ],
    [
        (27.643564356435643, -21.881188118811881),
        (83.366336633663366, 15.544554455445542),
        (4.0, 4.0),
        (73.415841584158414, 8.8613861386138595),
    ],
]


@pytest.mark.parametrize("points", HULL_EXAMPLES, ids=["hull1", "hull2"])
def test_kettners_hull_examples(points: list[Point]) -> None:
    oracle = ORACLES["orient2d"][1]
    for p, q, r in itertools.permutations(points, 3):
        assert orient2d(p, q, r) == oracle(p, q, r)


# ---------------------------------------------------------------------------------------
# extremes the filter must not decide: tiny (underflowing), huge (overflowing), mixed


def extreme_sets(name: str, rng: random.Random, n: int) -> list[list[Point]]:
    _, _, dim, _ = ORACLES[name]
    out = []
    for i in range(n):
        kind = i % 4
        s = 2.0 ** rng.randint(-1074, -900) if kind == 0 else 2.0 ** rng.randint(200, 1000)
        if kind == 0:  # everything tiny, down into the subnormals
            mk = lambda: [rng.randint(-8, 8) * s for _ in range(dim)]  # noqa: E731, B023
        elif kind == 1:  # everything huge: products overflow
            mk = lambda: [rng.uniform(-1, 1) * s for _ in range(dim)]  # noqa: E731, B023
        elif kind == 2:  # x, y tiny, the rest large: the underflow the bound does not cover
            mk = lambda: [  # noqa: E731
                *(rng.randint(-3, 3) * 2.0**-600 for _ in range(2)),
                *(rng.randint(-3, 3) * 2.0**300 for _ in range(dim - 2)),
            ]
        else:  # a mix of exponents per coordinate
            mk = lambda: [rng.uniform(-1, 1) * 2.0 ** rng.randint(-1000, 1000) for _ in range(dim)]  # noqa: E731
        out.append([tuple(mk()) for _ in range(ARITY[name])])
    return out


@pytest.mark.parametrize("name", NAMES)
def test_extreme_magnitudes_match_the_oracle(name: str) -> None:
    check_against_oracle(name, extreme_sets(name, random.Random(5), 2000))


def test_the_filter_would_fail_without_its_underflow_guard() -> None:
    # The bound assumes no underflow. Here b_x·c_y = 0.6·2⁻¹⁰⁷⁴ rounds up to 2⁻¹⁰⁷⁴ and
    # c_x·a_y = -0.4·2⁻¹⁰⁷⁴ rounds to -0, then both are scaled by 2^600: the true
    # determinant is 2^600·2⁻¹⁰⁷⁴·(0.6 - 2·0.4) < 0, Shewchuk's unguarded stage A says > 0.
    t = 2.0**-537
    a, b, c, d = (0.0, 0.4 * t, 2.0**600), (t, 0.0, 2.0**601), (-t, 0.6 * t, 0.0), (0.0, 0.0, 0.0)
    adz, bdz = a[2], b[2]
    bdxcdy, cdxady = b[0] * c[1], c[0] * a[1]
    stage_a = adz * bdxcdy + bdz * cdxady
    assert stage_a > P.O3D_ERRBOUND_A * (abs(bdxcdy) * adz + abs(cdxady) * bdz)  # "decided"
    assert ORACLES["orient3d"][1](a, b, c, d) == -1
    assert orient3d(a, b, c, d) == -1


# ---------------------------------------------------------------------------------------
# exact zeros, symmetry, input types and errors


def test_degenerate_inputs_give_exactly_zero() -> None:
    rng = random.Random(11)
    for name in NAMES:
        predicate = ORACLES[name][0]
        for _ in range(300):
            pts = [tuple(p) for p in exact_degenerate(name, rng)]
            assert predicate(*pts) == 0, (name, pts)
    # repeated points
    p2, q2, r2 = (0.1, 0.7), (3.3, -1.9), (1e-3, 5.0)
    assert orient2d(p2, p2, q2) == 0
    assert incircle(p2, q2, r2, q2) == 0
    p3, q3, r3, s3 = (0.1, 0.7, 0.2), (3.3, -1.9, 0.4), (1e-3, 5.0, 2.0), (7.0, 1.0, -2.0)
    assert orient3d(p3, q3, p3, s3) == 0
    assert insphere(p3, q3, r3, s3, r3) == 0
    # the line through (0.1, 0.1) and (0.3, 0.3) in floats: y = x exactly
    assert orient2d((0.1, 0.1), (0.3, 0.3), (1e300, 1e300)) == 0


def _swap(pts: list[Point], i: int, j: int) -> list[Point]:
    out = list(pts)
    out[i], out[j] = out[j], out[i]
    return out


def test_swapping_two_points_flips_the_sign() -> None:
    rng = random.Random(3)
    for name in NAMES:
        predicate = ORACLES[name][0]
        sets = random_sets(name, 300, seed=40) + near_degenerate_sets(name, 300, seed=41)
        for pts in sets:
            s = predicate(*pts)
            i, j = rng.sample(range(len(pts)), 2)
            assert predicate(*_swap(pts, i, j)) == -s, (name, pts, i, j)
            # an even permutation keeps it
            k = rng.randrange(len(pts))
            rotated = pts[k:] + pts[:k] if len(pts) % 2 == 1 else pts
            assert predicate(*rotated) == s


def test_points_may_be_vectors_lists_ints_and_exact_reals() -> None:
    assert orient2d(Vec2(0.0, 0.0), Vec2(1.0, 0.0), Vec2(0.0, 1.0)) == 1
    assert orient2d([0, 0], [1, 0], [0, 1]) == 1  # ints: exact
    assert orient2d((Fraction(1, 2), 0.0), (1.0, 0.0), (0.0, 1.0)) == 1
    assert incircle(Vec2(1.0, 0.0), Vec2(0.0, 1.0), Vec2(-1.0, 0.0), Vec2(0.0, 0.0)) == 1
    tet = [Vec3(0.0, 0.0, 0.0), Vec3(1.0, 0.0, 0.0), Vec3(0.0, 1.0, 0.0), Vec3(0.0, 0.0, -1.0)]
    assert orient3d(*tet) == 1
    assert insphere(*tet, Vec3(0.1, 0.1, -0.1)) == 1
    np = pytest.importorskip("numpy", reason="numpy (the dev extra's oracle) is not installed")
    a = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert orient2d(*a) == 1
    assert orient2d(*a.astype(np.float32)) == 1  # float32 holds floats exactly: exact path


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: orient2d((0, 0), (1, 0, 0), (0, 1)), ValueError, "point b has 3 coordinates"),
        (lambda: orient2d((0, 0), (1,), (0, 1)), ValueError, "point b has 1 coordinates"),
        (lambda: orient3d((0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)), ValueError, "point a"),
        (lambda: incircle((0, 0), (1, 0), (0, 1), 3.0), TypeError, "point d must be a sequence"),
        (lambda: orient2d((0, math.nan), (1, 0), (0, 1)), ValueError, "a[1] = nan is not finite"),
        (lambda: orient2d((0, 0), (math.inf, 0), (0, 1)), ValueError, "b[0] = inf is not finite"),
        (lambda: insphere(*[(0, 0, 0)] * 4, (0, 0, -math.inf)), ValueError, "e[2] = -inf"),
        (lambda: orient2d((0, 0), (1, 0), ("0", 1)), TypeError, "c[0] must be a real number"),
        (lambda: orient2d((0, 0), (1, 0), (None, 1)), TypeError, "c[0] must be a real number"),
        (lambda: orient2d((0, 0), (Fraction(1, 3), 0), (0, 1)), ValueError, "not exactly a float"),
        (lambda: orient2d((0, 0), (2**60 + 1, 0), (0, 1)), ValueError, "not exactly a float"),
        (lambda: orient2d((0, 0), (10**400, 0), (0, 1)), ValueError, "beyond the float range"),
    ],
)
def test_bad_input_raises_an_error_naming_the_argument(
    call: Callable[[], int], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_the_error_bounds_are_shewchuks() -> None:
    eps = 2.0**-53
    assert 1.0 + eps == 1.0 and 1.0 + 2 * eps > 1.0  # his epsilon, found the way he finds it
    assert (3.0 + 16.0 * eps) * eps == P.CCW_ERRBOUND_A
    assert (7.0 + 56.0 * eps) * eps == P.O3D_ERRBOUND_A
    assert (10.0 + 96.0 * eps) * eps == P.ICC_ERRBOUND_A
    assert (16.0 + 224.0 * eps) * eps == P.ISP_ERRBOUND_A
