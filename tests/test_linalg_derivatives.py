"""Derivatives through tang.linalg: Dual numbers seeded with a direction dA (and db) against
central finite differences and against the closed forms

    d(A⁻¹) = -A⁻¹·dA·A⁻¹,  d det = det·tr(A⁻¹·dA),  dx = A⁻¹·(db - dA·x),
    dλᵢ = vᵢᵀ·dA·vᵢ,  dσᵢ = uᵢᵀ·dA·vᵢ,

several directions at once (a Tangents seed), and the same functions traced: the
reverse-mode gradient of the graph agrees with the Dual derivative.
"""

from __future__ import annotations

import numpy as np
import pytest

import tang
from tang import Dual, Tangents
from tang.linalg import (
    LinAlgError,
    cholesky,
    det,
    eigh,
    inv,
    lstsq,
    lu,
    lu_factor,
    qr,
    solve,
    svd,
)

H = 1e-6  # central differences: error ~ H² · third derivative, plus rounding ~ ε/H


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def dual_matrix(A: np.ndarray, dA) -> list[list[Dual]]:
    """A + ε·dA entrywise; dA is one direction (an array) or several (a list of arrays)."""
    m, n = A.shape
    a = A.tolist()
    if isinstance(dA, list):
        ds = [d.tolist() for d in dA]
        return [[Dual(a[i][j], Tangents(d[i][j] for d in ds)) for j in range(n)] for i in range(m)]
    da = dA.tolist()
    return [[Dual(a[i][j], da[i][j]) for j in range(n)] for i in range(m)]


def dual_vector(b: np.ndarray, db: np.ndarray) -> list[Dual]:
    return [Dual(v, d) for v, d in zip(b.tolist(), db.tolist())]


def values(x) -> np.ndarray:
    if isinstance(x, list):
        return np.array([values(v) for v in x])
    return np.array(x.value if isinstance(x, Dual) else x)


def tangents(x) -> np.ndarray:
    """The tangent part (entries of Tangents last: shape (..., k))."""
    if isinstance(x, list):
        return np.array([tangents(v) for v in x])
    if not isinstance(x, Dual):
        return np.array(0.0)  # an entry no input reaches (a zero of a triangular factor)
    return np.array(tuple(x.tangent) if isinstance(x.tangent, Tangents) else x.tangent, float)


def central_difference(f, A: np.ndarray, dA: np.ndarray) -> np.ndarray:
    return (np.array(f(A + H * dA)) - np.array(f(A - H * dA))) / (2 * H)


def symmetric(n: int, seed: int) -> np.ndarray:
    B = rng(seed).standard_normal((n, n))
    return B + B.T


# ---------------------------------------------------------------------------------------
# Duals against closed forms and finite differences


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_solve(n):
    A, dA = rng(n).standard_normal((n, n)), rng(n + 1).standard_normal((n, n))
    b, db = rng(n + 2).standard_normal(n), rng(n + 3).standard_normal(n)
    x = solve(dual_matrix(A, dA), dual_vector(b, db))
    x0 = np.linalg.solve(A, b)
    assert np.allclose(values(x), x0, rtol=1e-12, atol=1e-12)
    closed = np.linalg.solve(A, db - dA @ x0)
    assert np.allclose(tangents(x), closed, rtol=1e-10, atol=1e-10)
    fd = (np.linalg.solve(A + H * dA, b + H * db) - np.linalg.solve(A - H * dA, b - H * db)) / (
        2 * H
    )
    fd_ours = (
        np.array(solve((A + H * dA).tolist(), (b + H * db).tolist()))
        - np.array(solve((A - H * dA).tolist(), (b - H * db).tolist()))
    ) / (2 * H)
    assert np.allclose(tangents(x), fd, rtol=1e-6, atol=1e-6)
    assert np.allclose(tangents(x), fd_ours, rtol=1e-6, atol=1e-6)


def test_solve_with_a_matrix_right_hand_side_and_float_matrix():
    A, dB = rng(1).standard_normal((3, 3)), rng(2).standard_normal((3, 2))
    B = rng(3).standard_normal((3, 2))
    X = solve(A.tolist(), dual_matrix(B, dB))  # only b carries a tangent
    assert np.allclose(tangents(X), np.linalg.solve(A, dB), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_inv(n):
    A, dA = rng(10 + n).standard_normal((n, n)), rng(20 + n).standard_normal((n, n))
    X = inv(dual_matrix(A, dA))
    Ai = np.linalg.inv(A)
    assert np.allclose(tangents(X), -Ai @ dA @ Ai, rtol=1e-10, atol=1e-10)
    assert np.allclose(tangents(X), central_difference(np.linalg.inv, A, dA), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_det(n):
    A, dA = rng(30 + n).standard_normal((n, n)), rng(40 + n).standard_normal((n, n))
    d = det(dual_matrix(A, dA))
    closed = np.linalg.det(A) * np.trace(np.linalg.solve(A, dA))
    assert d.tangent == pytest.approx(closed, rel=1e-10, abs=1e-12)
    assert d.tangent == pytest.approx(central_difference(np.linalg.det, A, dA), rel=1e-6)
    fd = central_difference(lambda M: det(M.tolist()), A, dA)
    assert d.tangent == pytest.approx(fd, rel=1e-6)


def adjugate(A: np.ndarray) -> np.ndarray:
    """The transposed cofactor matrix, by minors (valid for singular A too)."""
    n = A.shape[0]
    cof = np.empty_like(A)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(A, i, 0), j, 1)
            cof[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return cof.T


@pytest.mark.parametrize(
    "A",
    [
        np.array([[1.0, 2.0], [2.0, 4.0]]),
        np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
        np.array([[0.0, 0.0], [0.0, 0.0]]),
        np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]),
    ],
)
def test_det_at_an_exactly_singular_matrix_is_the_adjugate_trace(A):
    # elimination stops at the zero pivot; the division-free fallback still gets d det right
    dA = rng(5).standard_normal(A.shape)
    d = det(dual_matrix(A, dA))
    assert d.value == pytest.approx(0.0, abs=1e-14)  # [[1,2,3],…] is singular only exactly
    assert d.tangent == pytest.approx(np.trace(adjugate(A) @ dA), abs=1e-12)


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_eigh_eigenvalues_and_eigenvectors(n):
    A, dA = symmetric(n, 50 + n), symmetric(n, 60 + n)
    w, V = eigh(dual_matrix(A, dA))
    w0, V0 = np.linalg.eigh(A)
    assert np.allclose(values(w), w0, atol=1e-12)
    closed = np.einsum("ji,jk,ki->i", V0, dA, V0)  # vᵢᵀ·dA·vᵢ
    assert np.allclose(tangents(w), closed, rtol=1e-10, atol=1e-10)
    fd = central_difference(lambda M: np.linalg.eigvalsh(M), A, dA)
    assert np.allclose(tangents(w), fd, rtol=1e-6, atol=1e-6)
    # eigenvectors (distinct eigenvalues): dvᵢ = Σⱼ≠ᵢ vⱼ·(vⱼᵀ·dA·vᵢ)/(λᵢ - λⱼ), sign-matched
    coupling = V0.T @ dA @ V0
    gaps = w0[None, :] - w0[:, None]
    np.fill_diagonal(gaps, np.inf)
    dV0 = V0 @ (coupling / gaps)
    signs = np.sign(np.sum(values(V) * V0, axis=0))
    assert np.allclose(tangents(V) * signs, dV0, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("m,n", [(2, 2), (3, 3), (5, 3), (3, 5), (6, 6)])
def test_svd_singular_values_and_vectors(m, n):
    A, dA = rng(70 + m + n).standard_normal((m, n)), rng(80 + m + n).standard_normal((m, n))
    U, S, Vt = svd(dual_matrix(A, dA))
    U0, S0, Vt0 = np.linalg.svd(A, full_matrices=False)
    assert np.allclose(values(S), S0, atol=1e-12)
    closed = np.einsum("ji,jk,ik->i", U0, dA, Vt0)  # uᵢᵀ·dA·vᵢ
    assert np.allclose(tangents(S), closed, rtol=1e-10, atol=1e-10)
    fd = central_difference(lambda M: np.linalg.svd(M, compute_uv=False), A, dA)
    assert np.allclose(tangents(S), fd, rtol=1e-6, atol=1e-6)
    # the vectors' tangents: A = U·S·Vᵀ differentiates to dA = dU·S·Vᵀ + U·dS·Vᵀ + U·S·dVᵀ
    Uv, Ut, Vv, Vtt = values(U), tangents(U), values(Vt), tangents(Vt)
    rebuilt = Ut @ np.diag(S0) @ Vv + Uv @ np.diag(tangents(S)) @ Vv + Uv @ np.diag(S0) @ Vtt
    assert np.allclose(rebuilt, dA, atol=1e-9)


def test_cholesky_and_qr_against_finite_differences():
    B = rng(90).standard_normal((4, 4))
    A, dA = B @ B.T + 4 * np.eye(4), symmetric(4, 91)
    L = cholesky(dual_matrix(A, dA))
    fd = central_difference(np.linalg.cholesky, A, dA)
    assert np.allclose(tangents(L), fd, rtol=1e-6, atol=1e-6)
    M, dM = rng(92).standard_normal((5, 3)), rng(93).standard_normal((5, 3))
    Q, R = qr(dual_matrix(M, dM))
    fdq = central_difference(lambda X: qr(X.tolist())[0], M, dM)
    fdr = central_difference(lambda X: qr(X.tolist())[1], M, dM)
    assert np.allclose(tangents(Q), fdq, rtol=1e-6, atol=1e-6)
    assert np.allclose(tangents(R), fdr, rtol=1e-6, atol=1e-6)


def test_lstsq_against_finite_differences():
    A, dA = rng(94).standard_normal((6, 3)), rng(95).standard_normal((6, 3))
    b, db = rng(96).standard_normal(6), rng(97).standard_normal(6)
    x, residuals, rank, _ = lstsq(dual_matrix(A, dA), dual_vector(b, db))
    assert rank == 3
    fd = (
        np.linalg.lstsq(A + H * dA, b + H * db)[0] - np.linalg.lstsq(A - H * dA, b - H * db)[0]
    ) / (2 * H)
    assert np.allclose(tangents(x), fd, rtol=1e-6, atol=1e-6)
    fdr = (
        np.linalg.lstsq(A + H * dA, b + H * db)[1] - np.linalg.lstsq(A - H * dA, b - H * db)[1]
    ) / (2 * H)
    assert residuals[0].tangent == pytest.approx(fdr[0], rel=1e-6)


def test_several_tangents_at_once_match_one_at_a_time():
    n = 4
    A = rng(100).standard_normal((n, n))
    S = A + A.T
    directions = [rng(101 + k).standard_normal((n, n)) for k in range(3)]
    sym_directions = [d + d.T for d in directions]
    b = rng(105).standard_normal(n).tolist()
    many = {
        "det": tangents(det(dual_matrix(A, directions))),
        "inv": tangents(inv(dual_matrix(A, directions))),
        "solve": tangents(solve(dual_matrix(A, directions), b)),
        "eigh": tangents(eigh(dual_matrix(S, sym_directions))[0]),
        "svd": tangents(svd(dual_matrix(A, directions))[1]),
    }
    for k in range(3):
        one = {
            "det": tangents(det(dual_matrix(A, directions[k]))),
            "inv": tangents(inv(dual_matrix(A, directions[k]))),
            "solve": tangents(solve(dual_matrix(A, directions[k]), b)),
            "eigh": tangents(eigh(dual_matrix(S, sym_directions[k]))[0]),
            "svd": tangents(svd(dual_matrix(A, directions[k]))[1]),
        }
        for name, value in one.items():
            assert np.allclose(many[name][..., k], value, rtol=1e-12, atol=1e-12), name


def test_the_transforms_see_through_linalg():
    A = rng(110).standard_normal((3, 3))
    flat = A.ravel().tolist()

    def f(*xs):
        return det([list(xs[0:3]), list(xs[3:6]), list(xs[6:9])])

    gradient = np.array(tang.jacobian(f)(*flat)[0]).reshape(3, 3)
    assert np.allclose(gradient, np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-10)
    # second order, nested Duals: x(t) = (A + t·B)⁻¹·b has x'' = 2·A⁻¹·B·A⁻¹·B·x at t = 0
    B = rng(111).standard_normal((3, 3))
    b = [1.0, -2.0, 0.5]

    def first_entry(t):
        return solve(
            (A + t * B).tolist()
            if isinstance(t, float)
            else [[A[i, j] + t * B[i, j] for j in range(3)] for i in range(3)],
            b,
        )[0]

    Ai = np.linalg.inv(A)
    expected = 2 * Ai @ B @ Ai @ B @ Ai @ np.array(b)
    assert tang.derivative(first_entry, 2)(0.0) == pytest.approx(expected[0], rel=1e-9)


# ---------------------------------------------------------------------------------------
# traced: reverse mode on the graph agrees with the Dual derivative

NAMES = [f"a{i}{j}" for i in range(3) for j in range(3)]


def matrix3(*xs):
    return [list(xs[0:3]), list(xs[3:6]), list(xs[6:9])]


def symmetric3(*xs):
    """A symmetric 3×3 from its 9 inputs (the upper triangle mirrors the lower)."""
    return [[xs[0], xs[3], xs[6]], [xs[3], xs[4], xs[7]], [xs[6], xs[7], xs[8]]]


def dual_gradient(f, point):
    return np.array(tang.jacobian(f)(*point)[0])


def graph_gradient(graph, point):
    value, *partials = tang.grad(graph).eval(point)
    return value, np.array(partials)


def test_traced_det_2x2():
    g = tang.trace(lambda a, b, c, d: det([[a, b], [c, d]]))
    value, partials = graph_gradient(g, [1.0, 2.0, 3.0, 4.0])
    assert value == pytest.approx(-2.0)
    assert np.allclose(partials, [4.0, -3.0, -2.0, 1.0])
    # Berkowitz is division-free: fine where a pivot-free elimination would divide by zero
    value, partials = graph_gradient(g, [0.0, 1.0, 1.0, 0.0])
    assert value == -1.0 and np.allclose(partials, [0.0, -1.0, -1.0, 0.0])


CASES = {
    "det": lambda *x: det(matrix3(*x)),
    "solve": lambda *x: solve(matrix3(*x), [1.0, -2.0, 0.5])[1],
    "inv": lambda *x: inv(matrix3(*x))[2][0],
    "qr": lambda *x: qr(matrix3(*x))[1][1][2],
    "cholesky": lambda *x: cholesky(
        [[r + 4.0 * (i == j) for j, r in enumerate(row)] for i, row in enumerate(symmetric3(*x))]
    )[2][1],
    "eigh": lambda *x: eigh(symmetric3(*x))[0][0],
    "eigh vector": lambda *x: eigh(symmetric3(*x))[1][1][2],
    "svd": lambda *x: svd(matrix3(*x))[1][1],
}


@pytest.mark.parametrize("name", list(CASES))
def test_traced_3x3_gradient_matches_the_dual_derivative(name):
    f = CASES[name]
    graph = tang.trace(f, NAMES)
    A = rng(120).standard_normal((3, 3))
    point = A.ravel().tolist()
    value, partials = graph_gradient(graph, point)
    reference = dual_gradient(f, point)
    if name == "eigh vector":  # an eigenvector's sign is a convention: match the float run's
        sign = np.sign(value * f(*point))
        value, partials = sign * value, sign * partials
    assert value == pytest.approx(f(*point), rel=1e-10, abs=1e-12)
    assert np.allclose(partials, reference, rtol=1e-8, atol=1e-10)


def test_traced_solve_with_a_pivot_order_from_a_float_factorisation():
    A = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])  # a₀₀ = 0: no natural LU
    point = A.ravel().tolist()
    perm = lu_factor(A.tolist()).perm
    pivoted = tang.trace(lambda *x: solve(matrix3(*x), [1.0, 2.0, 3.0], pivots=perm)[0], NAMES)
    value, partials = graph_gradient(pivoted, point)
    assert value == pytest.approx(np.linalg.solve(A, [1.0, 2.0, 3.0])[0])
    reference = dual_gradient(lambda *x: solve(matrix3(*x), [1.0, 2.0, 3.0])[0], point)
    assert np.allclose(partials, reference)
    natural = tang.trace(lambda *x: solve(matrix3(*x), [1.0, 2.0, 3.0])[0], NAMES)
    assert not np.isfinite(natural.eval(point)[0])  # the documented failure of a fixed order


def test_traced_eigh_and_svd_evaluate_like_the_float_code_with_the_same_sweeps():
    graph = tang.trace(
        lambda *x: [*eigh(symmetric3(*x), sweeps=3)[0], *svd(matrix3(*x), sweeps=3)[1]], NAMES
    )
    point = rng(130).standard_normal(9).tolist()
    expected = eigh(symmetric3(*point), sweeps=3)[0] + svd(matrix3(*point), sweeps=3)[1]
    assert np.allclose(graph.eval(point), expected, rtol=1e-13, atol=1e-13)


def test_traced_factorisations_reconstruct_their_matrix():
    names = ["a", "b", "c", "d", "e", "f"]
    point = [1.0, 2.0, 0.5, -1.0, 3.0, 0.2]
    tall = np.array(point).reshape(3, 2)

    def flat(*factors):
        return [x for factor in factors for row in factor for x in row]

    def evaluate(f):
        return np.array(tang.trace(f, names).eval(point))

    Q, R = np.split(evaluate(lambda *x: flat(*qr(matrix_of(x), "complete"))), [9])
    Q, R = Q.reshape(3, 3), R.reshape(3, 2)
    assert np.allclose(Q @ R, tall) and np.allclose(Q.T @ Q, np.eye(3))
    out = evaluate(
        lambda *x: flat(svd(matrix_of(x), full_matrices=True)[0], [svd(matrix_of(x))[1]])
    )
    U, S = out[:9].reshape(3, 3), out[9:]
    assert np.allclose(U.T @ U, np.eye(3)) and np.allclose(S, np.linalg.svd(tall, compute_uv=False))
    P, L, U = np.split(evaluate(lambda *x: flat(*lu(matrix_of(x)))), [9, 15])
    assert np.allclose(P.reshape(3, 3) @ L.reshape(3, 2) @ U.reshape(2, 2), tall)


def matrix_of(xs):
    """3×2 from six inputs."""
    return [list(xs[0:2]), list(xs[2:4]), list(xs[4:6])]


def test_traced_2x2_eigh_is_exact_at_a_diagonal_point():
    # a diagonal matrix has a_pq = 0 = h nowhere here, but the off-diagonal is zero: the
    # branch-free rotation must give finite values and gradients there
    g = tang.trace(lambda a, b, c: eigh([[a, b], [b, c]])[0][1], ["a", "b", "c"])
    value, partials = graph_gradient(g, [1.0, 0.0, 3.0])
    assert value == pytest.approx(3.0) and np.allclose(partials, [0.0, 0.0, 1.0])
    value, partials = graph_gradient(g, [2.0, 0.0, 2.0])  # a double eigenvalue
    assert value == pytest.approx(2.0) and np.all(np.isfinite(partials))


def test_a_derivative_taken_inside_a_trace():
    # forward over traced: linalg sees Duals whose values are graph nodes (no values either)
    def slope(x):
        return tang.derivative(lambda t: det([[t, x, 1.0], [x, t, 2.0], [0.5, 1.0, t]]))(x)

    def eigen_slope(x):
        return tang.derivative(lambda t: eigh([[t, x], [x, 2.0 * t]])[0][1])(x)

    for f in (slope, eigen_slope):
        graph = tang.trace(f, ["x"])
        assert graph.eval([0.7])[0] == pytest.approx(f(0.7), rel=1e-12)


def test_lstsq_cannot_be_traced():
    with pytest.raises(TypeError, match="lstsq decides the rank on values"):
        tang.trace(lambda a, b: lstsq([[a], [b]], [1.0, 2.0])[0][0])


def test_traced_input_skips_the_value_checks_it_cannot_make():
    # symmetry and definiteness need values: a traced cholesky or eigh reads the lower
    # triangle, and a singular traced solve evaluates to inf/nan instead of raising
    g = tang.trace(lambda a, b: solve([[a, b], [b, a]], [1.0, 1.0])[0])
    assert np.isfinite(g.eval([2.0, 1.0])[0])
    assert not np.isfinite(g.eval([1.0, 1.0])[0])
    with pytest.raises(LinAlgError, match="singular"):
        solve([[1.0, 1.0], [1.0, 1.0]], [1.0, 1.0])
