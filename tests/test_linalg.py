"""tang.linalg on floats, against numpy.linalg (and scipy's lu, exact rationals, Leibniz's
formula): random, ill-conditioned (up to cond 1e12), rank-deficient and tiny matrices.

Accuracy is judged the way backward-stable algorithms are: reconstructions and residuals
relative to ‖A‖ (forward errors of ill-conditioned problems are legitimately large);
singular values and eigenvalues against numpy within a few n·ε·‖A‖.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from tang.linalg import (
    LinAlgError,
    cholesky,
    det,
    eigh,
    inv,
    lstsq,
    lu,
    lu_factor,
    lu_solve,
    qr,
    solve,
    svd,
)
from tang.linalg.determinant import berkowitz_det

EPS = np.finfo(float).eps
SQUARE = [1, 2, 3, 5, 8, 13]
RECTANGULAR = [(5, 3), (3, 5), (7, 2), (2, 7), (1, 4), (4, 1), (6, 6)]


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def orthogonal(n: int, r: np.random.Generator) -> np.ndarray:
    q, rr = np.linalg.qr(r.standard_normal((n, n)))
    return q * np.sign(np.diag(rr))


def with_singular_values(m: int, n: int, s: np.ndarray, seed: int) -> np.ndarray:
    """U·diag(s)·Vᵀ from random orthogonal factors."""
    r = rng(seed)
    k = min(m, n)
    return orthogonal(m, r)[:, :k] @ np.diag(s) @ orthogonal(n, r)[:, :k].T


def conditioned(m: int, n: int, cond: float, seed: int) -> np.ndarray:
    return with_singular_values(m, n, np.logspace(0, -math.log10(cond), min(m, n)), seed)


def rank_deficient(m: int, n: int, rank: int, seed: int) -> np.ndarray:
    r = rng(seed)
    return r.standard_normal((m, rank)) @ r.standard_normal((rank, n))


def arr(x) -> np.ndarray:
    return np.array(x, dtype=float)


def rel(err: np.ndarray, scale: float) -> float:
    return float(np.abs(err).max() / max(scale, np.finfo(float).tiny))


def norm(a: np.ndarray) -> float:
    return float(np.abs(a).max())


def test_inputs_may_be_tuples_generators_ints_and_numpy_arrays():
    A = ((4, 1), (2, 3))
    assert det(A) == pytest.approx(10.0)
    assert det(tuple(row) for row in A) == pytest.approx(10.0)
    assert det(np.array(A, dtype=np.float32)) == pytest.approx(10.0)
    x = solve(np.array(A, dtype=float), np.array([1.0, 2.0]))
    assert type(x) is list and all(type(v) is float for v in x)
    assert np.allclose(x, np.linalg.solve(np.array(A, float), [1.0, 2.0]))


def test_a_geometry_mat_and_vec_are_accepted():
    from tang import geometry

    A = geometry.Mat([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    b = geometry.Vec3(1.0, 2.0, 3.0)
    expected = np.linalg.solve(np.array(A.tolist()), [1.0, 2.0, 3.0])
    assert np.allclose(solve(A, b), expected)
    assert det(A) == pytest.approx(np.linalg.det(np.array(A.tolist())))
    assert np.allclose(eigh(A)[0], np.linalg.eigvalsh(np.array(A.tolist())))


# ---------------------------------------------------------------------------------------
# LU


@pytest.mark.parametrize("m,n", [(k, k) for k in SQUARE] + RECTANGULAR)
def test_lu_reconstructs_with_unit_lower_and_upper_factors(m, n):
    A = rng(m * 10 + n).standard_normal((m, n))
    P, L, U = map(arr, lu(A.tolist()))
    k = min(m, n)
    assert P.shape == (m, m) and L.shape == (m, k) and U.shape == (k, n)
    assert rel(P @ L @ U - A, norm(A)) < 10 * n * EPS
    assert np.array_equal(P @ P.T, np.eye(m)) and set(P.ravel()) <= {0.0, 1.0}
    assert np.array_equal(np.diag(L), np.ones(k)) and np.all(np.triu(L, 1) == 0)
    assert np.all(np.tril(U, -1) == 0)
    assert np.abs(L).max() <= 1.0  # partial pivoting: no multiplier above 1


@pytest.mark.parametrize("m,n", [(4, 4), (6, 3), (3, 6), (1, 1)])
def test_lu_matches_scipy(m, n):
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="scipy's lu is the oracle here")
    A = rng(m + 7 * n).standard_normal((m, n))
    for ours, theirs in zip(map(arr, lu(A.tolist())), scipy_linalg.lu(A), strict=True):
        assert np.allclose(ours, theirs, rtol=0, atol=1e-13)


def test_lu_factor_and_lu_solve():
    A = rng(1).standard_normal((6, 6))
    b = rng(2).standard_normal(6)
    B = rng(3).standard_normal((6, 2))
    factors = lu_factor(A.tolist())
    assert sorted(factors.perm) == list(range(6))
    assert np.allclose(lu_solve(factors, b.tolist()), np.linalg.solve(A, b))
    X = arr(lu_solve(factors, B.tolist()))
    assert X.shape == (6, 2) and np.allclose(X, np.linalg.solve(A, B))


def test_lu_with_a_given_row_order():
    A = [[0.0, 2.0], [3.0, 4.0]]
    P, L, U = lu(A, pivots=[1, 0])
    assert np.allclose(arr(P) @ arr(L) @ arr(U), A)
    with pytest.raises(LinAlgError, match="pivot 0 is zero in the given pivot order"):
        lu(A, pivots=[0, 1])
    with pytest.raises(ValueError, match="pivots must be a permutation"):
        lu(A, pivots=[0, 0])


def test_lu_of_singular_matrices_is_still_a_factorisation():
    for A in ([[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [0.0, 2.0]]):
        P, L, U = map(arr, lu(A))
        assert np.allclose(P @ L @ U, A)


# ---------------------------------------------------------------------------------------
# solve, inv, det


def backward_error(A: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    """‖b - A·x‖ / (‖A‖·‖x‖ + ‖b‖): what a backward-stable solver keeps near ε."""
    r = b - A @ x
    return float(np.linalg.norm(r) / (np.linalg.norm(A, 2) * np.linalg.norm(x) + np.linalg.norm(b)))


@pytest.mark.parametrize("n", SQUARE)
@pytest.mark.parametrize("cond", [None, 1e6, 1e12])
def test_solve_is_backward_stable(n, cond):
    A = rng(n).standard_normal((n, n)) if cond is None else conditioned(n, n, cond, n)
    b = rng(n + 1).standard_normal(n)
    x = arr(solve(A.tolist(), b.tolist()))
    assert backward_error(A, x, b) < 10 * n * EPS
    if cond is None:
        assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    B = rng(n + 2).standard_normal((n, 3))
    X = arr(solve(A.tolist(), B.tolist()))
    assert X.shape == (n, 3)
    for j in range(3):
        assert backward_error(A, X[:, j], B[:, j]) < 10 * n * EPS


@pytest.mark.parametrize("n", SQUARE)
@pytest.mark.parametrize("cond", [None, 1e12])
def test_inv(n, cond):
    A = rng(n + 20).standard_normal((n, n)) if cond is None else conditioned(n, n, cond, n)
    X = arr(inv(A.tolist()))
    # each column is a backward-stable solve of A·x = eⱼ
    for j in range(n):
        assert backward_error(A, X[:, j], np.eye(n)[:, j]) < 10 * n * EPS
    if cond is None:
        assert np.allclose(X, np.linalg.inv(A), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n", SQUARE)
def test_det_matches_numpy(n):
    A = rng(n + 40).standard_normal((n, n))
    assert det(A.tolist()) == pytest.approx(np.linalg.det(A), rel=1e-12 * n)
    A = conditioned(n, n, 1e12, n)  # |det| = product of the singular values
    assert abs(det(A.tolist())) == pytest.approx(np.prod(np.logspace(0, -12, n)), rel=1e-3)


def leibniz(A: list[list[Fraction]]) -> Fraction:
    """det by the permutation expansion: an oracle sharing nothing with elimination."""
    n = len(A)
    total = Fraction(0)
    for perm in itertools.permutations(range(n)):
        inversions = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
        term = Fraction(-1 if inversions % 2 else 1)
        for i, p in enumerate(perm):
            term *= A[i][p]
        total += term
    return total


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_fractions_stay_exact_in_det_solve_and_inv(n):
    r = rng(n + 60)
    A = [
        [Fraction(int(r.integers(-9, 10)), int(r.integers(1, 5))) for _ in range(n)]
        for _ in range(n)
    ]
    exact = leibniz(A)
    assert det(A) == exact and isinstance(det(A), Fraction)
    assert berkowitz_det(A) == exact
    if exact != 0:
        b = [Fraction(i + 1, 3) for i in range(n)]
        x = solve(A, b)
        assert all(isinstance(v, Fraction) for v in x)
        assert [sum(a * v for a, v in zip(row, x)) for row in A] == b
        X = inv(A)
        identity = [[sum(A[i][k] * X[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
        assert identity == [[int(i == j) for j in range(n)] for i in range(n)]


def test_berkowitz_det_agrees_with_numpy_on_floats():
    for n in (1, 2, 3, 6):
        A = rng(n + 80).standard_normal((n, n))
        assert berkowitz_det(A.tolist()) == pytest.approx(np.linalg.det(A), rel=1e-10)


def test_singular_matrices():
    singular = [[1.0, 2.0], [2.0, 4.0]]
    assert det(singular) == 0.0
    assert det([[0.0, 0.0], [0.0, 0.0]]) == 0.0
    assert det([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]) == pytest.approx(0.0, abs=1e-14)
    with pytest.raises(LinAlgError, match=r"A is singular: .* column 1"):
        solve(singular, [1.0, 2.0])
    with pytest.raises(LinAlgError, match="A is singular"):
        inv(singular)
    with pytest.raises(LinAlgError, match="A is singular"):
        inv([[0.0]])
    with pytest.raises(LinAlgError, match="A is singular"):
        lu_solve(lu_factor(singular), [1.0, 2.0])


# ---------------------------------------------------------------------------------------
# cholesky


def spd(n: int, cond: float, seed: int) -> np.ndarray:
    q = orthogonal(n, rng(seed))
    return (q * np.logspace(0, -math.log10(cond), n)) @ q.T


@pytest.mark.parametrize("n", SQUARE)
@pytest.mark.parametrize("cond", [10.0, 1e12])
def test_cholesky(n, cond):
    A = spd(n, cond, n)
    A = (A + A.T) / 2
    L = arr(cholesky(A.tolist()))
    assert np.all(np.triu(L, 1) == 0) and np.all(np.diag(L) > 0)
    assert rel(L @ L.T - A, norm(A)) < 10 * n * EPS
    if cond < 1e6:
        assert np.allclose(L, np.linalg.cholesky(A), rtol=0, atol=1e-12)


def test_cholesky_refuses_what_it_cannot_factor():
    with pytest.raises(
        LinAlgError, match=r"not symmetric: A\[1\]\[0\] = 0.5 but A\[0\]\[1\] = 1.0"
    ):
        cholesky([[2.0, 1.0], [0.5, 2.0]])
    with pytest.raises(LinAlgError, match="not positive definite: the leading minor of order 2"):
        cholesky([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(LinAlgError, match="not positive definite: the leading minor of order 1"):
        cholesky([[0.0]])
    with pytest.raises(LinAlgError, match="not positive definite"):
        cholesky([[1.0, 1.0], [1.0, 1.0]])  # semidefinite
    with pytest.raises(LinAlgError, match="must be square"):
        cholesky([[1.0, 2.0]])


# ---------------------------------------------------------------------------------------
# qr


@pytest.mark.parametrize("m,n", [(k, k) for k in SQUARE] + RECTANGULAR)
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(m, n, mode):
    A = rng(3 * m + n).standard_normal((m, n))
    Q, R = map(arr, qr(A.tolist(), mode))
    Q0, R0 = np.linalg.qr(A, mode)
    assert Q.shape == Q0.shape and R.shape == R0.shape
    assert rel(Q @ R - A, norm(A)) < 10 * max(m, n) * EPS
    assert np.abs(Q.T @ Q - np.eye(Q.shape[1])).max() < 10 * m * EPS
    assert np.all(np.tril(R, -1) == 0)
    k = min(m, n)  # full rank: R is unique up to the signs of its rows
    assert np.allclose(np.abs(R[:k]), np.abs(R0[:k]), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "A",
    [
        conditioned(6, 4, 1e12, 1),
        rank_deficient(6, 4, 2, 2),
        np.zeros((3, 2)),
        np.array([[1.0, 1.0], [0.0, 0.0]]),
    ],
)
def test_qr_of_ill_conditioned_and_rank_deficient_matrices(A):
    for mode in ("reduced", "complete"):
        Q, R = map(arr, qr(A.tolist(), mode))
        assert rel(Q @ R - A, max(norm(A), 1.0)) < 100 * EPS
        assert np.abs(Q.T @ Q - np.eye(Q.shape[1])).max() < 100 * EPS


def test_qr_mode_is_checked():
    with pytest.raises(ValueError, match="mode must be 'reduced' or 'complete'"):
        qr([[1.0]], mode="r")


# ---------------------------------------------------------------------------------------
# svd


def check_svd(A: np.ndarray, full: bool) -> None:
    m, n = A.shape
    k = min(m, n)
    U, S, Vt = svd(A.tolist(), full_matrices=full)
    U, S, Vt = arr(U), arr(S), arr(Vt)
    assert U.shape == ((m, m) if full else (m, k)) and Vt.shape == ((n, n) if full else (k, n))
    assert S.shape == (k,) and np.all(S[:-1] >= S[1:]) and np.all(S >= 0)
    scale = max(norm(A), 1e-300)
    tol = 20 * max(m, n) * EPS
    assert np.abs(S - np.linalg.svd(A, compute_uv=False)).max() <= tol * max(S[0], 1.0)
    assert rel(U[:, :k] @ np.diag(S) @ Vt[:k] - A, scale) < tol
    assert np.abs(U.T @ U - np.eye(U.shape[1])).max() < tol
    assert np.abs(Vt @ Vt.T - np.eye(Vt.shape[0])).max() < tol


@pytest.mark.parametrize("m,n", [(k, k) for k in SQUARE] + RECTANGULAR)
@pytest.mark.parametrize("full", [False, True])
def test_svd_random(m, n, full):
    check_svd(rng(5 * m + n).standard_normal((m, n)), full)


@pytest.mark.parametrize("m,n", [(6, 6), (8, 5), (5, 8), (12, 12)])
@pytest.mark.parametrize("cond", [1e6, 1e12])
def test_svd_ill_conditioned(m, n, cond):
    A = conditioned(m, n, cond, m + n)
    check_svd(A, full=True)
    # one-sided Jacobi gets even the small singular values to a few ulps relative to ‖A‖
    expected = np.logspace(0, -math.log10(cond), min(m, n))
    assert np.abs(arr(svd(A.tolist())[1]) - expected).max() < 50 * EPS


@pytest.mark.parametrize(
    "A",
    [
        rank_deficient(6, 4, 2, 3),
        rank_deficient(4, 6, 1, 4),
        rank_deficient(5, 5, 3, 5),
        np.zeros((3, 2)),
        np.zeros((1, 1)),
        np.ones((3, 3)),
        np.array([[1.0, 1.0], [1.0, 1.0]]),  # an exactly zero singular value
        np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]]),
        np.diag([3.0, 0.0, 2.0]),
    ],
)
def test_svd_rank_deficient(A):
    check_svd(A, full=False)
    check_svd(A, full=True)


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e160, 1e-160])
def test_svd_and_eigh_of_huge_and_tiny_matrices(scale):
    # the Jacobi methods square entries: a power-of-two scaling keeps that in range
    A = rng(11).standard_normal((5, 3)) * scale
    check_svd(A, full=True)
    assert np.allclose(svd(A.tolist())[1], np.linalg.svd(A, compute_uv=False), rtol=1e-13, atol=0)
    S = symmetric_from(rng(12).standard_normal((4, 4))) * scale
    check_eigh(S)


def symmetric_from(B: np.ndarray) -> np.ndarray:
    return B + B.T


def test_svd_tiny():
    U, S, Vt = svd([[-3.0]])
    assert S == [3.0] and U[0][0] * Vt[0][0] == -1.0
    check_svd(np.array([[2.0, 1.0], [1.0, 3.0]]), True)
    check_svd(np.array([[0.0, 2.0], [0.0, 0.0]]), True)


# ---------------------------------------------------------------------------------------
# eigh


def check_eigh(A: np.ndarray) -> None:
    n = A.shape[0]
    w, V = eigh(A.tolist())
    w, V = arr(w), arr(V)
    scale = max(norm(A), 1e-300)
    tol = 20 * n * EPS
    assert np.all(w[:-1] <= w[1:])
    assert np.abs(w - np.linalg.eigvalsh(A)).max() <= tol * scale
    assert rel(A @ V - V * w, scale) < tol
    assert np.abs(V.T @ V - np.eye(n)).max() < tol


@pytest.mark.parametrize("n", [*SQUARE, 20])
def test_eigh_random(n):
    B = rng(n + 90).standard_normal((n, n))
    check_eigh(B + B.T)


@pytest.mark.parametrize("n", [2, 5, 9])
@pytest.mark.parametrize("cond", [1e6, 1e12])
def test_eigh_ill_conditioned_and_indefinite(n, cond):
    q = orthogonal(n, rng(n))
    w = np.logspace(0, -math.log10(cond), n) * np.where(np.arange(n) % 2, -1.0, 1.0)
    A = (q * w) @ q.T
    check_eigh((A + A.T) / 2)


@pytest.mark.parametrize(
    "A",
    [
        np.zeros((3, 3)),
        np.eye(4),
        np.diag([3.0, -1.0, 2.0]),
        np.ones((4, 4)),  # rank one: a triple zero eigenvalue
        np.array([[2.0, 1.0], [1.0, 2.0]]),
        np.array([[1e-300, 0.0], [0.0, 1e300]]),
    ],
)
def test_eigh_special(A):
    check_eigh(A)


def test_eigh_refuses_non_symmetric_matrices():
    with pytest.raises(
        LinAlgError, match=r"A is not symmetric: A\[2\]\[0\] = 5.0 but A\[0\]\[2\] = 3.0"
    ):
        eigh([[1.0, 2.0, 3.0], [2.0, 1.0, 4.0], [5.0, 4.0, 1.0]])
    w, _ = eigh([[1.0, 2.0], [2.0 + 1e-14, 1.0]])  # within 1e-10 of the largest entry
    assert np.allclose(w, [-1.0, 3.0])


def test_eigh_with_fixed_sweeps_on_floats():
    B = rng(7).standard_normal((4, 4))
    A = B + B.T
    w, V = eigh(A.tolist(), sweeps=8)
    assert np.allclose(w, np.linalg.eigvalsh(A), rtol=0, atol=1e-13)
    assert np.allclose(arr(V).T @ arr(V), np.eye(4), rtol=0, atol=1e-14)
    w, _ = eigh(A.tolist(), sweeps=0)  # no rotation: the diagonal, sorted
    assert w == sorted(np.diag(A).tolist())
    with pytest.raises(ValueError, match="sweeps must be None or a non-negative integer"):
        eigh(A.tolist(), sweeps=-1)


# ---------------------------------------------------------------------------------------
# lstsq


def check_lstsq(A: np.ndarray, b: np.ndarray, rcond=None) -> None:
    x, residuals, rank, s = lstsq(A.tolist(), b.tolist(), rcond)
    x0, residuals0, rank0, s0 = np.linalg.lstsq(A, b, rcond=rcond)
    assert rank == rank0
    assert np.allclose(s, s0, rtol=0, atol=1e-12 * max(s0[0], 1.0))
    x = arr(x)
    assert x.shape == x0.shape
    # the same minimum-norm solution (well-conditioned on the numerical range of A here)
    assert np.allclose(x, x0, rtol=1e-9, atol=1e-10 * max(1.0, np.abs(x0).max()))
    assert len(residuals) == len(residuals0)
    assert np.allclose(residuals, residuals0, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("m,n", [(6, 3), (3, 6), (5, 5), (1, 1), (4, 1), (1, 4), (9, 4)])
def test_lstsq_full_rank(m, n):
    A = rng(m * 7 + n).standard_normal((m, n))
    check_lstsq(A, rng(1).standard_normal(m))
    check_lstsq(A, rng(2).standard_normal((m, 2)))


@pytest.mark.parametrize("m,n,rank", [(6, 4, 2), (4, 6, 2), (5, 5, 3), (3, 3, 1)])
def test_lstsq_rank_deficient_gives_the_minimum_norm_solution(m, n, rank):
    A = rank_deficient(m, n, rank, m + n)
    check_lstsq(A, rng(3).standard_normal(m))
    check_lstsq(A, rng(4).standard_normal((m, 3)))
    x, residuals, r, _ = lstsq(A.tolist(), rng(3).standard_normal(m).tolist())
    assert r == rank and residuals == []
    assert np.allclose(np.linalg.pinv(A) @ rng(3).standard_normal(m), x)


def test_lstsq_rcond_and_zero_matrix():
    A = np.diag([1.0, 1e-8, 0.0])
    b = np.array([1.0, 1.0, 1.0])
    check_lstsq(A, b)
    check_lstsq(A, b, rcond=1e-6)  # drops 1e-8: rank 1
    assert lstsq(A.tolist(), b.tolist(), rcond=1e-6)[2] == 1
    x, residuals, rank, s = lstsq([[0.0, 0.0], [0.0, 0.0]], [1.0, 2.0])
    assert x == [0.0, 0.0] and residuals == [] and rank == 0 and s == [0.0, 0.0]


@pytest.mark.parametrize("cond", [1e6, 1e10, 1e12])
def test_lstsq_of_ill_conditioned_full_rank_problems_is_backward_stable(cond):
    A = conditioned(8, 4, cond, 9)
    b = rng(5).standard_normal(8)
    x = arr(lstsq(A.tolist(), b.tolist())[0])
    x0 = np.linalg.lstsq(A, b)[0]
    # forward errors grow with cond (the x's differ in their last digits); the residual and
    # the normal equations stay at rounding level relative to ‖A‖·‖x‖ + ‖b‖ (‖A‖ = 1)
    scale = np.linalg.norm(x) + np.linalg.norm(b)
    assert abs(np.linalg.norm(A @ x - b) - np.linalg.norm(A @ x0 - b)) < 50 * EPS * scale
    assert np.linalg.norm(A.T @ (A @ x - b)) < 50 * EPS * scale


# ---------------------------------------------------------------------------------------
# errors: bad input gets a clear message


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda: det([]), LinAlgError, "A is empty: it has no rows"),
        (lambda: det([[]]), LinAlgError, "A is empty: its rows have no entries"),
        (
            lambda: svd([[1.0, 2.0], [3.0]]),
            LinAlgError,
            "ragged rows: row 0 has 2 entries but row 1 has 1",
        ),
        (lambda: det([[1.0, 2.0]]), LinAlgError, "A must be square, but it is 1×2"),
        (lambda: solve([[1.0, 2.0]], [1.0]), LinAlgError, "must be square"),
        (lambda: inv([[1.0], [2.0]]), LinAlgError, "must be square"),
        (lambda: eigh([[1.0, 2.0]]), LinAlgError, "must be square"),
        (lambda: lu_solve(lu_factor([[1.0, 2.0]]), [1.0]), LinAlgError, "square"),
        (
            lambda: solve([[1.0, 0.0], [0.0, 1.0]], [1.0]),
            LinAlgError,
            "b has 1 entries but A has 2 rows",
        ),
        (lambda: solve([[1.0]], [[1.0], [2.0]]), LinAlgError, "b has 2 rows but A has 1 rows"),
        (lambda: solve([[1.0]], []), LinAlgError, "b is empty"),
        (lambda: det([[float("nan")]]), LinAlgError, "non-finite entry nan at"),
        (lambda: svd([[1.0, float("inf")]]), LinAlgError, r"non-finite entry inf at \(0, 1\)"),
        (lambda: solve([[1.0]], [float("nan")]), LinAlgError, "b has a non-finite entry"),
        (lambda: qr([[1, "2"]]), TypeError, r"entry \(0, 1\) of A is str, not a number"),
        (lambda: det([[1j]]), TypeError, "complex: tang.linalg is real only"),
        (lambda: det(3.0), TypeError, "A must be a sequence of rows, not float"),
        (lambda: det("ab"), TypeError, "A must be a sequence of rows, not str"),
        (lambda: det([1.0, 2.0]), TypeError, "row 0 of A is float, not a sequence of numbers"),
        (lambda: det(["ab", "cd"]), TypeError, "row 0 of A is str"),
        (lambda: det([[10**400]]), LinAlgError, "too large for a float"),
        (lambda: solve([[1.0]], 2.0), TypeError, "b must be a vector or a matrix of rows"),
        (lambda: solve([[2.0]], [1.0], pivots=[1]), ValueError, "pivots must be a permutation"),
        (
            lambda: svd([[1.0]], sweeps=1.5),
            ValueError,
            "sweeps must be None or a non-negative integer",
        ),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_lin_alg_error_is_a_value_error():
    assert issubclass(LinAlgError, ValueError)
