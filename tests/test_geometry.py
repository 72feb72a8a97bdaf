"""tang.geometry's vectors, quaternions and matrices: algebraic identities, rotations
against Rodrigues' formula and numpy, round trips (through every Shepperd branch), slerp's
geometry, and the same code on Duals (against finite differences) and traced graphs
(against the float values and the Dual slopes)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence

import numpy as np
import pytest

import tang
from tang import Dual
from tang.geometry import Mat, Quat, Vec2, Vec3, slerp


def rand_vec3(rng: random.Random, scale: float = 1.0) -> Vec3:
    return Vec3(*(rng.uniform(-scale, scale) for _ in range(3)))


def rand_unit_quat(rng: random.Random) -> Quat:
    q = Quat(*(rng.gauss(0, 1) for _ in range(4)))
    return q.normalized()


def close(a: Sequence[float], b: Sequence[float], tol: float = 1e-12) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def rodrigues(axis: Sequence[float], angle: float, v: Sequence[float]) -> np.ndarray:
    """v rotated by ``angle`` about ``axis``: v cos θ + (k × v) sin θ + k (k·v)(1 - cos θ)."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    v = np.asarray(v, float)
    c, s = math.cos(angle), math.sin(angle)
    return v * c + np.cross(k, v) * s + k * np.dot(k, v) * (1 - c)


def angle_between(a: Quat, b: Quat) -> float:
    """The 4-D angle between unit quaternions (robust near 0)."""
    return 2 * math.atan2((a - b).norm(), (a + b).norm())


# ---------------------------------------------------------------------------------------
# vectors


def test_vector_algebra_identities() -> None:
    rng = random.Random(1)
    for _ in range(200):
        a, b, c = rand_vec3(rng), rand_vec3(rng), rand_vec3(rng)
        assert a + b == b + a
        assert close(a - b + b, a, 1e-15)
        assert -a == Vec3(-a.x, -a.y, -a.z) and a + (-a) == Vec3(0.0, 0.0, 0.0)
        assert 2.0 * a == a * 2.0 == a + a
        assert a / 2.0 == a * 0.5
        assert a.dot(b) == b.dot(a)
        assert a.cross(b) == -b.cross(a)
        assert abs(a.dot(a.cross(b))) < 1e-15
        # Lagrange's identity and the vector triple product
        lhs = a.cross(b).norm2() + a.dot(b) ** 2
        assert lhs == pytest.approx(a.norm2() * b.norm2(), rel=1e-13)
        assert close(a.cross(b.cross(c)), b * a.dot(c) - c * a.dot(b), 1e-14)
        assert list(a.cross(b)) == pytest.approx(np.cross(list(a), list(b)), abs=1e-15)
        assert a.dot(b) == pytest.approx(np.dot(list(a), list(b)), rel=1e-14, abs=1e-15)
        assert a.norm() == pytest.approx(np.linalg.norm(list(a)), rel=1e-15)
        assert a.normalized().norm() == pytest.approx(1.0, abs=1e-15)
        # Vec2: cross is the z of the 3-D cross product
        p, q = Vec2(a.x, a.y), Vec2(b.x, b.y)
        assert p.cross(q) == Vec3(a.x, a.y, 0.0).cross(Vec3(b.x, b.y, 0.0)).z
        assert p + q == Vec2(a.x + b.x, a.y + b.y) and p - q == Vec2(a.x - b.x, a.y - b.y)
        assert p.dot(q) == a.x * b.x + a.y * b.y
        assert p.norm2() == p.dot(p) and p.norm() == pytest.approx(math.hypot(p.x, p.y), rel=1e-15)
        assert 3.0 * p == p * 3.0 and p / 4.0 == p * 0.25 and -p == Vec2(-p.x, -p.y)
        assert p.normalized().norm() == pytest.approx(1.0, abs=1e-15)
    assert Vec3(1.0, 0.0, 0.0).cross(Vec3(0.0, 1.0, 0.0)) == Vec3(0.0, 0.0, 1.0)  # right-handed
    assert Vec2(1.0, 0.0).cross(Vec2(0.0, 1.0)) == 1.0  # counter-clockwise is positive


def test_vectors_are_sequences() -> None:
    v = Vec3(1.0, 2.0, 3.0)
    x, y, z = v
    assert (x, y, z) == (1.0, 2.0, 3.0)
    assert v[0] == 1.0 and v[-1] == 3.0 and v[1:] == (2.0, 3.0) and len(v) == 3
    assert list(v) == [1.0, 2.0, 3.0] and tuple(Vec2(4.0, 5.0)) == (4.0, 5.0)
    assert repr(v) == "Vec3(1.0, 2.0, 3.0)" and repr(Vec2(1.0, -2.5)) == "Vec2(1.0, -2.5)"
    assert Vec3(*v) == v  # it unpacks into its own constructor
    assert v != Vec3(1.0, 2.0, 3.5) and v != (1.0, 2.0, 3.0) and Vec2(1.0, 2.0) != v
    assert Vec3.of([1, 2, 3]) == Vec3(1, 2, 3) and Vec2.of((1.0, 2.0)) == Vec2(1.0, 2.0)
    assert np.array(v).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(IndexError, match="Vec3 index 3"):
        v[3]
    with pytest.raises(IndexError, match="Vec2 index 2"):
        Vec2(1.0, 2.0)[2]


def test_vector_misuse_is_refused() -> None:
    a, b = Vec3(1.0, 2.0, 3.0), Vec3(4.0, 5.0, 6.0)
    triple = (1.0, 2.0, 3.0)
    for bad in (lambda: a * b, lambda: a + triple, lambda: a + Vec2(1.0, 2.0)):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(TypeError):
        2.0 / a  # type: ignore[operator]
    with pytest.raises(ValueError, match="zero vector"):
        Vec3(0.0, 0.0, 0.0).normalized()
    with pytest.raises(ValueError, match="zero vector"):
        Vec2(0.0, 0.0).normalized()
    with pytest.raises(ValueError, match="3 coordinates"):
        Vec3.of([1.0, 2.0])
    with pytest.raises(TypeError):
        hash(a)  # a mutable-slot value is no dict key


# ---------------------------------------------------------------------------------------
# quaternion rotations


def test_rotation_matches_rodrigues_and_the_matrix() -> None:
    rng = random.Random(2)
    for _ in range(300):
        axis = rand_vec3(rng)
        angle = rng.uniform(-7.0, 7.0)
        v = rand_vec3(rng, 10.0)
        q = Quat.from_axis_angle(axis, angle)
        assert q.norm() == pytest.approx(1.0, abs=1e-15)
        expected = rodrigues(list(axis), angle, list(v))
        assert list(q.rotate(v)) == pytest.approx(expected, abs=1e-13)
        assert list(q.rotate(tuple(v))) == list(q.rotate(v))  # any 3-sequence
        assert list(q.to_matrix() @ v) == pytest.approx(expected, abs=1e-13)
        # q v q*, as quaternion products
        pure = q * Quat(0.0, *v) * q.conjugate()
        assert pure.w == pytest.approx(0.0, abs=1e-13)
        assert [pure.x, pure.y, pure.z] == pytest.approx(expected, abs=1e-13)
        assert list((-q).rotate(v)) == pytest.approx(expected, abs=1e-13)  # -q: same rotation


def test_composition_is_the_matrix_product() -> None:
    rng = random.Random(3)
    for _ in range(100):
        q1, q2, v = rand_unit_quat(rng), rand_unit_quat(rng), rand_vec3(rng)
        both = q1 * q2
        assert close(both.rotate(v), q1.rotate(q2.rotate(v)), 1e-14)
        m1, m2 = np.array(q1.to_matrix().rows), np.array(q2.to_matrix().rows)
        assert np.allclose(np.array(both.to_matrix().rows), m1 @ m2, atol=1e-14)
        assert close(q1 * q1.inverse(), Quat(), 1e-15)
        assert close(q1 * q1.conjugate(), Quat(), 1e-15)
    # i·j = k, j·k = i, k·i = j, i² = -1
    i, j, k = Quat(0.0, 1.0, 0.0, 0.0), Quat(0.0, 0.0, 1.0, 0.0), Quat(0.0, 0.0, 0.0, 1.0)
    assert i * j == k and j * k == i and k * i == j and i * i == Quat(-1.0, 0.0, 0.0, 0.0)


def test_to_matrix_is_orthogonal_with_determinant_one() -> None:
    rng = random.Random(4)
    for _ in range(200):
        r = np.array(rand_unit_quat(rng).to_matrix().rows)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-15)
        assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-14)


AXES = [Vec3(1.0, 0.0, 0.0), Vec3(0.0, 1.0, 0.0), Vec3(0.0, 0.0, 1.0), Vec3(1.0, -2.0, 0.5)]
ANGLES = [0.0, 1e-12, 1e-8, 1e-4, 0.5, 1.0, math.pi / 2, 2.5, math.pi - 1e-6, math.pi - 1e-12]


@pytest.mark.parametrize("angle", ANGLES)
def test_axis_angle_round_trip(angle: float) -> None:
    for axis in AXES:
        q = Quat.from_axis_angle(axis, angle)
        back_axis, back_angle = q.to_axis_angle()
        assert back_angle == pytest.approx(angle, abs=1e-15, rel=1e-14)
        if angle > 0.0:
            assert close(back_axis, axis.normalized(), 1e-14)
        # more than half a turn comes back as the short way round
        q2 = Quat.from_axis_angle(axis, 2 * math.pi - angle)
        axis2, angle2 = q2.to_axis_angle()
        assert angle2 == pytest.approx(angle, abs=1e-14)
        if angle > 1e-6:
            assert close(axis2, -axis.normalized(), 1e-8)
    assert Quat.from_axis_angle((0.0, 0.0, 2.0), math.pi).to_axis_angle()[1] == math.pi


def shepperd_branch(m: Mat) -> int:
    """Which of (trace, m00, m11, m22) is largest: the branch from_matrix takes."""
    candidates = [m[0, 0] + m[1, 1] + m[2, 2], m[0, 0], m[1, 1], m[2, 2]]
    return candidates.index(max(candidates))


@pytest.mark.parametrize(
    ("axis", "angle", "branch"),
    [
        ((1.0, 2.0, 3.0), 0.3, 0),  # small rotation: the trace is largest
        ((0.0, 0.0, 1.0), 0.0, 0),  # the identity
        ((1.0, 0.1, -0.2), 3.0, 1),  # near a half turn about x: m00 largest
        ((1.0, 0.0, 0.0), math.pi, 1),
        ((0.1, 1.0, 0.2), 3.1, 2),  # about y
        ((0.0, 1.0, 0.0), math.pi, 2),
        ((-0.2, 0.1, 1.0), 2.9, 3),  # about z
        ((0.0, 0.0, 1.0), math.pi, 3),
        ((1.0, 1.0, 0.0), math.pi - 1e-9, 1),
    ],
)
def test_matrix_round_trip_through_each_shepperd_branch(
    axis: tuple[float, float, float], angle: float, branch: int
) -> None:
    q = Quat.from_axis_angle(axis, angle)
    m = q.to_matrix()
    assert shepperd_branch(m) == branch
    back = Quat.from_matrix(m)
    assert back.w >= 0.0 and back.norm() == pytest.approx(1.0, abs=1e-15)
    sign = 1.0 if q.dot(back) >= 0 else -1.0
    assert close(back, q * sign, 1e-14)
    assert np.allclose(np.array(back.to_matrix().rows), np.array(m.rows), atol=1e-15)
    assert Quat.from_matrix(m.rows) == back  # rows work as well as a Mat


def test_matrix_round_trip_random() -> None:
    rng = random.Random(5)
    seen = set()
    for _ in range(500):
        q = rand_unit_quat(rng)
        m = q.to_matrix()
        seen.add(shepperd_branch(m))
        back = Quat.from_matrix(m)
        assert min(angle_between(back, q), angle_between(back, -q)) < 1e-14
    assert seen == {0, 1, 2, 3}


def test_from_matrix_agrees_with_scipy() -> None:
    rotation = pytest.importorskip(
        "scipy.spatial.transform", reason="scipy (the dev extra's oracle) is not installed"
    ).Rotation
    rng = random.Random(6)
    for _ in range(50):
        m = rand_unit_quat(rng).to_matrix()
        x, y, z, w = rotation.from_matrix(np.array(m.rows)).as_quat()  # scalar last
        ours = Quat.from_matrix(m)
        assert (
            min(angle_between(ours, Quat(w, x, y, z)), angle_between(ours, Quat(-w, -x, -y, -z)))
            < 1e-14
        )


def test_quaternion_misuse_is_refused() -> None:
    with pytest.raises(ValueError, match="zero vector"):
        Quat.from_axis_angle((0.0, 0.0, 0.0), 1.0)
    with pytest.raises(ValueError, match="axis must be a Vec3"):
        Quat.from_axis_angle((1.0, 0.0), 1.0)
    with pytest.raises(ValueError, match="v must be a Vec3"):
        Quat().rotate([1.0, 2.0])
    with pytest.raises(ValueError, match="3×3"):
        Quat.from_matrix(Mat.identity(2))
    with pytest.raises(TypeError, match="3×3"):
        Quat.from_matrix(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="zero quaternion"):
        Quat(0.0, 0.0, 0.0, 0.0).normalized()
    with pytest.raises(ValueError, match="zero quaternion"):
        Quat(0.0, 0.0, 0.0, 0.0).inverse()
    with pytest.raises(TypeError):
        Quat() * Vec3(1.0, 2.0, 3.0)
    with pytest.raises(TypeError, match="cannot run on traced nodes"):
        Quat.from_matrix([[tang.var(f"m{i}{j}") for j in range(3)] for i in range(3)])
    w, x, y, z = Quat(1.0, 2.0, 3.0, 4.0)
    assert (w, x, y, z) == (1.0, 2.0, 3.0, 4.0) and repr(Quat()) == "Quat(1.0, 0.0, 0.0, 0.0)"


# ---------------------------------------------------------------------------------------
# slerp


def test_slerp_endpoints_unit_norm_and_constant_speed() -> None:
    rng = random.Random(7)
    for _ in range(100):
        a, b = rand_unit_quat(rng), rand_unit_quat(rng)
        if a.dot(b) < 0:
            b = -b
        assert close(slerp(a, b, 0.0), a, 1e-15)
        assert close(slerp(a, b, 1.0), b, 1e-14)
        theta = angle_between(a, b)
        ts = [i / 16 for i in range(17)]
        path = [slerp(a, b, t) for t in ts]
        for q in path:
            assert q.norm() == pytest.approx(1.0, abs=1e-15)
        for t, q in zip(ts, path):
            assert angle_between(a, q) == pytest.approx(t * theta, abs=1e-13)
        steps = [angle_between(p, q) for p, q in itertools.pairwise(path)]
        assert max(steps) - min(steps) < 1e-13
        assert sum(steps) == pytest.approx(theta, abs=1e-13)


def test_slerp_takes_the_shortest_path() -> None:
    rng = random.Random(8)
    for _ in range(100):
        a, b = rand_unit_quat(rng), rand_unit_quat(rng)
        if a.dot(b) > 0:
            b = -b  # the long way round in quaternion space
        for t in (0.25, 0.5, 0.75):
            q = slerp(a, b, t)
            assert close(q, slerp(a, -b, t), 1e-14)  # same as going to -b
            assert angle_between(a, q) <= t * math.pi / 2 + 1e-12  # ≤ a quarter turn in 4-D
        assert close(slerp(a, b, 1.0), -b, 1e-14)  # ends at the same rotation as b


def test_slerp_nearly_parallel_falls_back_to_normalized_lerp() -> None:
    a = Quat.from_axis_angle((1.0, 2.0, 3.0), 0.7)
    for gap in (0.0, 1e-15, 1e-9, 1e-7):
        b = Quat.from_axis_angle((1.0, 2.0, 3.0), 0.7 + gap)
        for t in (0.0, 0.3, 1.0):
            q = slerp(a, b, t)
            assert q.norm() == pytest.approx(1.0, abs=1e-15)
            expected = Quat.from_axis_angle((1.0, 2.0, 3.0), 0.7 + t * gap)
            assert close(q, expected, 1e-15)


def test_slerp_agrees_with_scipy() -> None:
    transform = pytest.importorskip(
        "scipy.spatial.transform", reason="scipy (the dev extra's oracle) is not installed"
    )
    rng = random.Random(9)
    for _ in range(20):
        a, b = rand_unit_quat(rng), rand_unit_quat(rng)
        keys = transform.Rotation.from_quat([[a.x, a.y, a.z, a.w], [b.x, b.y, b.z, b.w]])
        ts = [0.1, 0.5, 0.9]
        theirs = transform.Slerp([0.0, 1.0], keys)(ts).as_matrix()
        for t, m in zip(ts, theirs):
            assert np.allclose(np.array(slerp(a, b, t).to_matrix().rows), m, atol=1e-12)


# ---------------------------------------------------------------------------------------
# matrices


def test_matrix_arithmetic_matches_numpy() -> None:
    rng = random.Random(10)
    for m, n, p in [(1, 1, 1), (2, 3, 4), (3, 3, 3), (4, 2, 5), (5, 5, 1)]:
        a = [[rng.uniform(-2, 2) for _ in range(n)] for _ in range(m)]
        b = [[rng.uniform(-2, 2) for _ in range(n)] for _ in range(m)]
        c = [[rng.uniform(-2, 2) for _ in range(p)] for _ in range(n)]
        A, B, C = Mat(a), Mat(b), Mat(c)
        na, nb, nc = np.array(a), np.array(b), np.array(c)
        assert A.shape == (m, n) and len(A) == m
        assert np.array_equal(np.array((A + B).rows), na + nb)
        assert np.array_equal(np.array((A - B).rows), na - nb)
        assert np.array_equal(np.array((-A).rows), -na)
        assert np.array_equal(np.array((A * 2.5).rows), na * 2.5)
        assert np.array_equal(np.array((2.5 * A).rows), 2.5 * na)
        assert np.array_equal(np.array((A / 4.0).rows), na / 4.0)
        assert np.allclose(np.array((A @ C).rows), na @ nc, rtol=1e-14, atol=1e-14)
        assert np.array_equal(np.array(A.T.rows), na.T) and A.transpose() == A.T
        v = [rng.uniform(-1, 1) for _ in range(n)]
        assert np.allclose(A @ v, na @ np.array(v), atol=1e-14)
        w = [rng.uniform(-1, 1) for _ in range(m)]
        assert np.allclose(w @ A, np.array(w) @ na, atol=1e-14)
        assert np.array_equal(np.array(A), na)  # numpy reads a Mat as a sequence of rows
        assert A @ c == A @ C  # a table of rows multiplies like a Mat


def test_matrix_is_a_sequence_of_rows() -> None:
    m = Mat([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert m[1] == [4.0, 5.0, 6.0] and m[1, 2] == 6.0 and m[-1, -1] == 6.0
    assert list(m) == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and m.rows == m.tolist()
    copy = m.tolist()
    copy[0][0] = 99.0
    assert m[0, 0] == 1.0  # tolist copies
    assert repr(m) == "Mat([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])"
    assert Mat(m) == m and Mat(m) is not m and Mat(((1, 2), (3, 4))).rows == [[1, 2], [3, 4]]
    assert Mat.identity(3) == Mat([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert Mat.zeros(2, 3).shape == (2, 3) and Mat.zeros(2) == Mat([[0.0, 0.0], [0.0, 0.0]])
    from collections.abc import Sequence as SequenceABC

    assert isinstance(m, SequenceABC)

    def trace_of_product(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
        # what a function over "any sequence of row sequences" does with its argument
        return sum(a[i][k] * b[k][i] for i in range(len(a)) for k in range(len(b)))

    assert trace_of_product(m, m.T) == np.trace(np.array(m.rows) @ np.array(m.rows).T)


def test_matrix_vector_products_keep_the_vector_kind() -> None:
    r = Quat.from_axis_angle((0.0, 0.0, 1.0), math.pi / 2).to_matrix()
    out = r @ Vec3(1.0, 0.0, 0.0)
    assert isinstance(out, Vec3) and close(out, (0.0, 1.0, 0.0), 1e-15)
    flat = Mat([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # 2×3: drops z
    assert flat @ Vec3(1.0, 2.0, 3.0) == Vec2(1.0, 2.0)
    assert Mat([[0.0, -1.0], [1.0, 0.0]]) @ Vec2(1.0, 0.0) == Vec2(0.0, 1.0)
    assert isinstance(Vec3(1.0, 0.0, 0.0) @ r, Vec3)  # row vector times matrix
    assert r @ [1.0, 0.0, 0.0] == list(out) and r @ (1.0, 0.0, 0.0) == list(out)
    wide = Mat([[1.0, 2.0, 3.0, 4.0]])
    assert wide @ [1.0, 1.0, 1.0, 1.0] == [10.0]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: Mat([[1.0, 2.0], [3.0]]), ValueError, "row 1 of the Mat has 1 entries"),
        (lambda: Mat([]), ValueError, "at least one row"),
        (lambda: Mat([[]]), ValueError, "at least one row and one column"),
        (lambda: Mat(5), TypeError, "sequence of rows"),
        (lambda: Mat([1.0, 2.0]), TypeError, "sequence of rows"),
        (lambda: Mat.identity(0), ValueError, "n = 0"),
        (lambda: Mat.zeros(2, 1.5), ValueError, "n = 1.5"),
        (lambda: Mat.zeros(2, 3) + Mat.zeros(3, 2), ValueError, "add a 2×3 matrix and a 3×2"),
        (lambda: Mat.zeros(2, 3) - Mat.zeros(2, 2), ValueError, "subtract a 2×3 matrix"),
        (lambda: Mat.zeros(2, 3) @ Mat.zeros(2, 3), ValueError, "inner sizes 3 and 2"),
        (lambda: Mat.zeros(2, 3) @ Vec2(1.0, 2.0), ValueError, "by a vector of 2"),
        (lambda: Vec2(1.0, 2.0) @ Mat.zeros(3, 3), ValueError, "vector of 2 by a 3×3"),
        (lambda: Mat.zeros(2) * Mat.zeros(2), TypeError, ""),
        (lambda: Mat.zeros(2) + 1.0, TypeError, ""),
        (lambda: Mat.zeros(2) @ 3.0, TypeError, ""),
    ],
)
def test_matrix_misuse_gets_a_clear_error(
    call: Callable[[], object], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words or None):
        call()


# ---------------------------------------------------------------------------------------
# the same code on Duals and traced graphs

H = 1e-6  # central differences: error ~ H²·|f'''| ≈ 1e-12 here


def dual_slope(f: Callable[[object], float], x: float) -> tuple[float, float]:
    """(f(x), f'(x)) from one pass on a Dual."""
    out = f(Dual(x, 1.0))
    return out.value, out.tangent


def central(f: Callable[[float], float], x: float) -> float:
    return (f(x + H) - f(x - H)) / (2 * H)


AXIS = Vec3(0.3, -0.5, 0.8)
V = Vec3(1.5, -0.25, 2.0)
A = Quat.from_axis_angle((1.0, 1.0, 0.0), 0.4)


def rotated_x(angle: object) -> object:
    return Quat.from_axis_angle(AXIS, angle).rotate(V).x


def slerped_y(t: object) -> object:
    return slerp(A, Quat.from_axis_angle(AXIS, 2.0), t).rotate(V).y


def slerp_end_z(angle: object) -> object:
    # slerp's other argument moves: the derivative goes through θ and the weights
    return slerp(A, Quat.from_axis_angle(AXIS, angle), 0.35).rotate(V).z


def stretched_norm(s: object) -> object:
    return (V + AXIS * s).norm()


def matrix_path(angle: object) -> object:
    # rotation matrix @ vector, then back to a quaternion by Shepperd on Duals
    m = Quat.from_axis_angle(AXIS, angle).to_matrix()
    return (m @ V).y + Quat.from_matrix(m).w


FUNCTIONS = [rotated_x, slerped_y, slerp_end_z, stretched_norm]


@pytest.mark.parametrize("f", [*FUNCTIONS, matrix_path], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [0.1, 0.7, 1.9])
def test_dual_slopes_match_central_differences(f: Callable[[object], float], x: float) -> None:
    value, slope = dual_slope(f, x)
    assert value == pytest.approx(f(x), rel=1e-15, abs=1e-15)
    assert slope == pytest.approx(central(f, x), rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_traced_graphs_give_the_float_values_and_the_dual_slopes(
    f: Callable[[object], float],
) -> None:
    graph = tang.trace(f, ["x"])
    gradient = tang.grad(graph)
    for x in (0.1, 0.7, 1.9):
        assert graph.eval([x])[0] == pytest.approx(f(x), rel=1e-14, abs=1e-15)
        value, slope = dual_slope(f, x)
        g_value, g_slope = gradient.eval([x])
        assert g_value == pytest.approx(value, rel=1e-14, abs=1e-15)
        assert g_slope == pytest.approx(slope, rel=1e-12, abs=1e-13)
        assert tang.replay(graph, [Dual(x, 1.0)])[0].tangent == pytest.approx(slope, rel=1e-12)


def test_traced_slerp_is_safe_at_the_nearly_parallel_switch() -> None:
    # one graph for every pair of ends: both branches are traced (selects), and the unused
    # one is fed safe values, so values and gradients stay finite on either side
    def f(gap: object, t: object) -> object:
        return slerp(A, Quat.from_axis_angle((1.0, 1.0, 0.0), 0.4 + gap), t).rotate(V).x

    gradient = tang.grad(tang.trace(f, ["gap", "t"]))
    for gap in (0.0, 1e-9, 1e-3, 0.5):
        value, d_gap, d_t = gradient.eval([gap, 0.3])
        assert value == pytest.approx(f(gap, 0.3), rel=1e-13)
        assert all(math.isfinite(d) for d in (d_gap, d_t))
        assert d_t == pytest.approx(dual_slope(lambda t, g=gap: f(g, t), 0.3)[1], abs=1e-9)


def test_axis_angle_slopes_on_duals() -> None:
    # to_axis_angle's angle is the angle put in (for angles in (0, π)): slope 1
    for angle in (0.2, 1.5, 3.0):
        q = Quat.from_axis_angle(AXIS, Dual(angle, 1.0))
        axis, back = q.to_axis_angle()
        assert back.value == pytest.approx(angle, rel=1e-14)
        assert back.tangent == pytest.approx(1.0, rel=1e-12)
        assert [a.tangent for a in axis] == pytest.approx([0.0, 0.0, 0.0], abs=1e-12)
    assert Quat().to_axis_angle() == (Vec3(1.0, 0.0, 0.0), 0.0)
