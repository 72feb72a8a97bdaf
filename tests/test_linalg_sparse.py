"""tang.linalg.sparse: CSR matrices, conjugate gradients and the sparse Cholesky solve,
checked against numpy (dense products, numpy.linalg.solve/cholesky/slogdet), closed-form
derivatives dx = A⁻¹(db − dA·x) and exact fill counts."""

from __future__ import annotations

import numpy as np
import pytest

import tang
from tang import Dual, Tangents
from tang.linalg import LinAlgError, sparse
from tang.linalg.sparse import CSR

# ---------------------------------------------------------------------------------------
# matrices


def grid_laplacian(m: int, scale: np.ndarray | None = None) -> CSR:
    """The 5-point Laplacian of an m×m grid (Dirichlet), optionally D·A·D with D = diag(scale)."""
    rows, cols, vals = [], [], []
    for i in range(m):
        for j in range(m):
            k = i * m + j
            for di, dj, v in (
                (0, 0, 4.0),
                (1, 0, -1.0),
                (-1, 0, -1.0),
                (0, 1, -1.0),
                (0, -1, -1.0),
            ):
                a, b = i + di, j + dj
                if 0 <= a < m and 0 <= b < m:
                    rows.append(k)
                    cols.append(a * m + b)
                    vals.append(v if scale is None else scale[k] * v * scale[a * m + b])
    return CSR.from_coo(rows, cols, vals, (m * m, m * m))


def random_spd(n: int, seed: int, density: float = 0.05, dominant: bool = True) -> np.ndarray:
    """A sparse symmetric positive definite matrix: diagonally dominant, or BᵀB + I/10."""
    rng = np.random.default_rng(seed)
    b = (rng.random((n, n)) < density) * rng.standard_normal((n, n))
    if dominant:
        s = np.triu(b, 1)
        s = s + s.T
        return s + np.diag(np.abs(s).sum(axis=1) + rng.uniform(0.5, 2.0, n))
    return b.T @ b + 0.1 * np.eye(n)


def dense(a: CSR) -> np.ndarray:
    return np.array(a.to_dense(), dtype=float)


def values(xs: list) -> np.ndarray:
    return np.array([x.value if isinstance(x, Dual) else x for x in xs], dtype=float)


def tangents(xs: list) -> np.ndarray:
    return np.array([list(x.tangent) if isinstance(x, Dual) else 0.0 for x in xs], dtype=float)


def dual_system(a: np.ndarray, seed: int, directions: int = 2):
    """A Dual CSR and Dual b carrying ``directions`` symmetric perturbations dA (on A's
    pattern) and db, with the closed-form value and slopes of x = A⁻¹b."""
    rng = np.random.default_rng(seed)
    n = len(a)
    das = []
    for _ in range(directions):
        da = np.triu(rng.standard_normal((n, n)) * (a != 0))
        das.append(da + np.triu(da, 1).T)
    b, dbs = rng.standard_normal(n), rng.standard_normal((directions, n))
    rows, cols = np.nonzero(a)
    entries = [Dual(a[i, j], Tangents(d[i, j] for d in das)) for i, j in zip(rows, cols)]
    ad = CSR.from_coo(rows.tolist(), cols.tolist(), entries, (n, n))
    bd = [Dual(b[i], Tangents(dbs[:, i])) for i in range(n)]
    x = np.linalg.solve(a, b)
    dx = np.stack([np.linalg.solve(a, dbs[k] - das[k] @ x) for k in range(directions)], axis=1)
    return ad, bd, x, dx


# ---------------------------------------------------------------------------------------
# CSR


def test_from_dense_round_trips_and_products_match_numpy():
    rng = np.random.default_rng(0)
    d = (rng.random((7, 5)) < 0.4) * rng.standard_normal((7, 5))
    d[3] = 0.0  # an empty row
    a = CSR.from_dense(d.tolist())
    assert a.shape == (7, 5) and a.nnz == np.count_nonzero(d)
    assert len(a.indptr) == 8 and len(a.indices) == len(a.data) == a.nnz
    assert np.array_equal(dense(a), d)
    x, y = rng.standard_normal(5), rng.standard_normal(7)
    assert np.allclose(a @ x.tolist(), d @ x) and np.allclose(a.matvec(list(x)), d @ x)
    assert np.allclose(a.rmatvec(y.tolist()), d.T @ y)
    assert np.allclose(y.tolist() @ a, y @ d)  # a row vector times A
    assert np.array_equal(dense(a.transpose()), d.T) and a.T.transpose() is a
    assert np.array_equal(a.diagonal(), np.diag(d))
    assert a[2, 4] == d[2, 4] and a[3, 0] == 0.0
    for i in range(7):
        cols = a.indices[a.indptr[i] : a.indptr[i + 1]]
        assert cols == sorted(set(cols))


def test_from_coo_sums_duplicates_and_sorts_columns():
    rows, cols, vals = [2, 0, 2, 1, 2, 0], [3, 1, 0, 1, 3, 1], [1.0, 2.0, 3.0, 4.0, 5.0, 0.5]
    a = CSR.from_coo(rows, cols, vals, (3, 4))
    expected = np.zeros((3, 4))
    np.add.at(expected, (rows, cols), vals)
    assert np.array_equal(dense(a), expected)
    assert a.nnz == 4 and a.indices == [1, 1, 0, 3] and a.indptr == [0, 1, 2, 4]


def test_identity_arithmetic_and_sparse_products():
    rng = np.random.default_rng(1)
    p = (rng.random((6, 6)) < 0.3) * rng.standard_normal((6, 6))
    q = (rng.random((6, 4)) < 0.3) * rng.standard_normal((6, 4))
    a, b = CSR.from_dense(p.tolist()), CSR.from_dense(q.tolist())
    assert np.array_equal(dense(CSR.identity(4)), np.eye(4))
    assert np.allclose(dense(a @ b), p @ q)
    assert np.allclose(dense(2.0 * a - a * 0.5 + CSR.identity(6)), 1.5 * p + np.eye(6))
    assert np.allclose(dense(-a / 4.0), -p / 4.0)
    assert np.allclose(dense(sum([a, a])), 2 * p)


def test_entries_of_any_number_type_are_kept():
    a = CSR.from_dense([[0.0, Dual(0.0, 1.0)], [0, 2.0]])
    assert a.nnz == 2 and a.indices == [1, 1]  # a plain 0 is dropped; a slope is not
    y = a @ [Dual(1.0, 0.0), 3.0]
    assert y[0].value == 0.0 and y[0].tangent == 3.0 and y[1] == 6.0


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: CSR.from_dense([[1.0, 2.0], [3.0]]), ValueError, "ragged input: row 1"),
        (lambda: CSR.from_coo([0, 2], [0, 0], [1.0, 1.0], (2, 2)), IndexError, "row index 2"),
        (lambda: CSR.from_coo([0], [-1], [1.0], (2, 2)), IndexError, "column index -1"),
        (lambda: CSR.from_coo([0, 1], [0], [1.0, 1.0], (2, 2)), ValueError, "equally long"),
        (lambda: CSR.from_coo([0], [0], [1.0], (2, -1)), ValueError, "non-negative"),
        (lambda: CSR([1.0, 2.0], [1, 0], [0, 2], (1, 2)), ValueError, "strictly increasing"),
        (lambda: CSR([1.0], [0], [0, 1, 1], (1, 1)), ValueError, "indptr has length 3"),
        (lambda: CSR.identity(2) @ [1.0, 2.0, 3.0], ValueError, "x has length 3"),
        (lambda: CSR.identity(2) @ CSR.identity(3), ValueError, "do not chain"),
        (lambda: CSR.identity(2) + 1.0, TypeError, "dense"),
        (lambda: CSR.identity(2) + CSR.identity(3), ValueError, "shapes"),
        (lambda: CSR.identity(2) * CSR.identity(2), TypeError, "A @ B"),
        (lambda: CSR.identity(2) @ [[1.0], [2.0]], TypeError, "list of lists"),
    ],
)
def test_bad_input_is_named(make, error, words):
    with pytest.raises(error, match=words):
        make()


# ---------------------------------------------------------------------------------------
# conjugate gradients


@pytest.mark.parametrize(("m", "preconditioner"), [(20, "jacobi"), (50, "ic0")])
def test_cg_solves_the_poisson_matrix(m, preconditioner):
    a = grid_laplacian(m)
    b = np.random.default_rng(m).standard_normal(m * m)
    result = sparse.cg(a, b.tolist(), preconditioner=preconditioner)
    exact = np.linalg.solve(dense(a), b)
    residual = np.linalg.norm(b - dense(a) @ result.x)
    assert result.converged and "converged in" in result.message
    assert residual <= 1e-10 * np.linalg.norm(b) and result.residual_norm == pytest.approx(residual)
    assert np.max(np.abs(np.array(result.x) - exact)) <= 1e-8 * np.max(np.abs(exact))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("preconditioner", [None, "jacobi", "ic0"])
def test_cg_on_random_spd_matrices_matches_numpy(seed, preconditioner):
    d = random_spd(120, seed, dominant=seed % 2 == 0)
    b = np.random.default_rng(seed).standard_normal(120)
    result = sparse.cg(CSR.from_dense(d.tolist()), b.tolist(), preconditioner=preconditioner)
    exact = np.linalg.solve(d, b)
    assert result.converged
    assert np.linalg.norm(b - d @ result.x) <= 1e-10 * np.linalg.norm(b)
    assert np.allclose(result.x, exact, rtol=0, atol=1e-7 * np.max(np.abs(exact)))


def test_preconditioners_cut_the_iterations_on_a_badly_scaled_matrix():
    scale = 10.0 ** np.random.default_rng(3).uniform(-1.0, 1.0, 144)
    a = grid_laplacian(12, scale)
    b = np.random.default_rng(4).standard_normal(144).tolist()
    runs = {p: sparse.cg(a, b, rtol=1e-8, preconditioner=p) for p in (None, "jacobi", "ic0")}
    assert all(r.converged for r in runs.values())
    assert runs["jacobi"].iterations <= runs[None].iterations
    assert runs["ic0"].iterations <= runs[None].iterations
    assert runs["ic0"].iterations <= runs["jacobi"].iterations
    exact = np.linalg.solve(dense(a), b)
    for r in runs.values():
        assert np.allclose(r.x, exact, rtol=1e-5, atol=0)


def test_a_callable_preconditioner_an_operator_and_a_warm_start():
    d = random_spd(60, 7)
    b = np.random.default_rng(7).standard_normal(60)
    exact = np.linalg.solve(d, b)
    inverse_diagonal = 1.0 / np.diag(d)
    own = sparse.cg(
        CSR.from_dense(d.tolist()), b.tolist(), preconditioner=lambda r: r * inverse_diagonal
    )
    assert own.converged and np.allclose(own.x, exact, atol=1e-8)

    class Operator:  # matrix-free: only a shape and a product
        shape = (60, 60)

        def matvec(self, v):
            return list(d @ np.array(v, dtype=float))

    matrix_free = sparse.cg(Operator(), b.tolist())
    assert matrix_free.converged and np.allclose(matrix_free.x, exact, atol=1e-8)
    assert "without the Jacobi preconditioner" in matrix_free.message
    warm = sparse.cg(CSR.from_dense(d.tolist()), b.tolist(), x0=exact.tolist())
    assert warm.converged and warm.iterations == 0
    short = sparse.cg(grid_laplacian(10), [1.0] * 100, maxiter=3)
    assert not short.converged and short.iterations == 3 and "not converged" in short.message


@pytest.mark.parametrize(
    ("a", "options", "words"),
    [
        (CSR.from_dense([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), {}, "square"),
        (CSR.from_dense([[2.0, 1.0], [0.0, 2.0]]), {}, "symmetric"),
        (CSR.from_dense([[1.0, 0.0], [0.0, -1.0]]), {"preconditioner": None}, "pᵀAp"),
        (CSR.from_dense([[1.0, 0.0], [0.0, -1.0]]), {}, "positive diagonal.*A\\[1, 1\\]"),
        (CSR.from_dense([[1.0, 3.0], [3.0, 1.0]]), {"preconditioner": "ic0"}, r"IC\(0\) broke"),
        (CSR.from_dense([[1.0, 2.0], [2.0, 1.0]]), {"preconditioner": "ic0"}, "not positive def"),
    ],
)
def test_cg_rejects_unsuitable_matrices(a, options, words):
    with pytest.raises(LinAlgError, match=words):
        sparse.cg(a, [1.0] * a.shape[0], **options)


def test_cg_rejects_bad_arguments():
    a = grid_laplacian(3)
    with pytest.raises(ValueError, match="b has length 2"):
        sparse.cg(a, [1.0, 2.0])
    with pytest.raises(ValueError, match="unknown preconditioner"):
        sparse.cg(a, [1.0] * 9, preconditioner="ilu")
    with pytest.raises(ValueError, match="non-negative"):
        sparse.cg(a, [1.0] * 9, rtol=-1.0)
    with pytest.raises(ValueError, match="non-finite"):
        sparse.cg(a, [float("nan")] * 9)


@pytest.mark.parametrize("preconditioner", [None, "jacobi", "ic0"])
def test_cg_slopes_match_the_closed_form(preconditioner):
    d = np.array(grid_laplacian(8).to_dense())
    ad, bd, x, dx = dual_system(d, seed=11)
    result = sparse.cg(ad, bd, preconditioner=preconditioner)
    assert result.converged
    assert np.allclose(values(result.x), x, rtol=0, atol=1e-9 * np.max(np.abs(x)))
    assert np.allclose(tangents(result.x), dx, rtol=0, atol=1e-8 * np.max(np.abs(dx)))


def test_cg_slopes_from_a_zero_b_a_matrix_free_operator_and_second_derivatives():
    d = np.array(grid_laplacian(6).to_dense())
    db = np.random.default_rng(2).standard_normal(36)
    a = CSR.from_dense(d.tolist())
    out = sparse.cg(a, [Dual(0.0, t) for t in db]).x  # the value is 0, the slope is not
    assert np.allclose([v.tangent for v in out], np.linalg.solve(d, db), atol=1e-9)

    class Operator:  # A(t) = d + t·I, matrix-free
        shape = (36, 36)

        def __init__(self, t):
            self.t = t

        def matvec(self, v):
            return [
                sum(d[i, j] * v[j] for j in range(36) if d[i, j]) + self.t * v[i] for i in range(36)
            ]

    b = np.ones(36)
    x = np.linalg.solve(d, b)
    first = tang.derivative(lambda t: sum(sparse.cg(Operator(t), b.tolist()).x))
    second = tang.derivative(lambda t: sum(sparse.cg(Operator(t), b.tolist()).x), order=2)
    dx = -np.linalg.solve(d, x)  # x' = −A⁻¹·I·x, x'' = −2·A⁻¹·I·x'
    assert first(0.0) == pytest.approx(dx.sum(), rel=1e-8)
    assert second(0.0) == pytest.approx(-2 * np.linalg.solve(d, dx).sum(), rel=1e-8)


def test_cg_on_traced_entries_runs_a_fixed_number_of_iterations():
    def solve(p, q, r):
        a = CSR.from_dense([[p, 1.0, 0.0], [1.0, q, 1.0], [0.0, 1.0, r]])
        return sparse.cg(a, [1.0, 2.0, 3.0], maxiter=3).x

    graph = tang.trace(solve, ["p", "q", "r"])
    expected = np.linalg.solve([[4.0, 1.0, 0.0], [1.0, 5.0, 1.0], [0.0, 1.0, 6.0]], [1, 2, 3])
    assert np.allclose(graph.eval([4.0, 5.0, 6.0]), expected, atol=1e-12)
    with pytest.raises(ValueError, match="pass maxiter"):
        tang.trace(lambda p: sparse.cg(CSR.from_dense([[p]]), [1.0]).x, ["p"])


# ---------------------------------------------------------------------------------------
# sparse Cholesky


def permuted(d: np.ndarray, perm: list[int]) -> np.ndarray:
    return d[np.ix_(perm, perm)]


@pytest.mark.parametrize("ordering", ["amd", "rcm", "natural"])
@pytest.mark.parametrize("seed", range(3))
def test_cholesky_reconstructs_and_solves(ordering, seed):
    d = random_spd(80, seed, density=0.04, dominant=seed != 1)
    factor = sparse.cholesky(CSR.from_dense(d.tolist()), ordering=ordering)
    lower = dense(factor.L)
    assert sorted(factor.perm) == list(range(80)) and np.array_equal(lower, np.tril(lower))
    assert np.allclose(lower @ lower.T, permuted(d, factor.perm), atol=1e-12 * np.abs(d).max())
    # the symbolic pattern is exactly the fill of the dense factor (random values cancel never)
    exact = np.linalg.cholesky(permuted(d, factor.perm))
    assert factor.nnz == np.count_nonzero(np.abs(exact) > 1e-300)
    b = np.random.default_rng(seed).standard_normal(80)
    assert np.allclose(factor.solve(b.tolist()), np.linalg.solve(d, b), atol=1e-10)
    assert factor.logdet() == pytest.approx(np.linalg.slogdet(d)[1], rel=1e-12)


def test_fill_reducing_orderings_beat_the_natural_one_on_a_grid():
    a = grid_laplacian(20)
    fill = {o: sparse.cholesky(a, ordering=o).nnz for o in ("natural", "rcm", "amd")}
    assert fill["natural"] == np.count_nonzero(np.linalg.cholesky(dense(a)))  # the band fills
    assert fill["amd"] < fill["rcm"] < fill["natural"]
    b = np.ones(400)
    for o in fill:
        assert np.allclose(sparse.spsolve(a, b.tolist(), ordering=o), np.linalg.solve(dense(a), b))


def test_amd_eliminates_the_hub_of_an_arrow_last():
    n = 30
    d = np.eye(n) * n
    d[0, 1:] = d[1:, 0] = 1.0  # node 0 touches every other: eliminating it first fills all
    a = CSR.from_dense(d.tolist())
    assert sparse.cholesky(a, ordering="natural").nnz == n * (n + 1) // 2
    factor = sparse.cholesky(a, ordering="amd")
    assert factor.nnz == 2 * n - 1 and 0 in factor.perm[-2:]  # the last two tie


def test_orderings_are_permutations_on_disconnected_and_tiny_matrices():
    blocks = np.kron(np.eye(3), np.array([[2.0, -1.0], [-1.0, 2.0]]))
    d = np.zeros((8, 8))
    d[:6, :6] = blocks
    d[6, 6] = d[7, 7] = 1.0  # isolated nodes
    a = CSR.from_dense(d.tolist())
    for o in ("amd", "rcm", "natural"):
        assert sorted(sparse.ordering(a, o)) == list(range(8))
        assert np.allclose(sparse.spsolve(a, [1.0] * 8, ordering=o), np.linalg.solve(d, np.ones(8)))
    assert sparse.cholesky(CSR.from_dense([]), ordering="amd").solve([]) == []
    assert sparse.spsolve([[4.0]], [2.0]) == [0.5]
    assert sparse.cholesky(a, ordering=[7, 6, 5, 4, 3, 2, 1, 0]).perm == [7, 6, 5, 4, 3, 2, 1, 0]
    with pytest.raises(ValueError, match="not a permutation"):
        sparse.cholesky(a, ordering=[0, 0, 1, 2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match="unknown ordering"):
        sparse.cholesky(a, ordering="metis")


def test_cholesky_rejects_indefinite_nonsymmetric_and_non_square_input():
    a = grid_laplacian(4) - 3.5 * CSR.identity(16)  # eigenvalues from 0.38 − 3.5 < 0
    with pytest.raises(LinAlgError, match=r"not positive definite: the pivot of column \d+"):
        sparse.cholesky(a, ordering="natural")
    with pytest.raises(LinAlgError, match="pivot of column 0 is -1 "):
        sparse.cholesky(CSR.from_dense([[-1.0, 0.0], [0.0, 1.0]]), ordering="natural")
    with pytest.raises(LinAlgError, match=r"not symmetric: A\[0, 1\] = 1\.0 but A\[1, 0\] = 2\.0"):
        sparse.cholesky(CSR.from_dense([[4.0, 1.0], [2.0, 4.0]]))
    with pytest.raises(LinAlgError, match="square"):
        sparse.cholesky(CSR.from_dense([[1.0, 0.0]]))
    asymmetric_slope = [[Dual(4.0, 0.0), Dual(1.0, 1.0)], [Dual(1.0, 0.0), Dual(4.0, 0.0)]]
    with pytest.raises(LinAlgError, match="not symmetric"):
        sparse.cholesky(CSR.from_dense(asymmetric_slope))


@pytest.mark.parametrize("ordering", ["amd", "natural"])
def test_spsolve_slopes_match_the_closed_form(ordering):
    d = random_spd(40, 5, density=0.08)
    ad, bd, x, dx = dual_system(d, seed=5)
    out = sparse.spsolve(ad, bd, ordering=ordering)  # the values' factor reused for the slopes
    assert np.allclose(values(out), x, atol=1e-12) and np.allclose(tangents(out), dx, atol=1e-10)
    through = sparse.cholesky(ad, ordering=ordering).solve(bd)  # Duals through the factor
    assert np.allclose(values(through), x, atol=1e-12)
    assert np.allclose(tangents(through), dx, atol=1e-10)


def test_spsolve_second_derivatives():
    d = random_spd(30, 9, density=0.1)
    a1 = np.diag(np.linspace(0.5, 1.5, 30))
    b = np.random.default_rng(9).standard_normal(30)

    base, change = CSR.from_dense(d.tolist()), CSR.from_dense(a1.tolist())

    def total(t):
        return sum(sparse.spsolve(base + t * change, b.tolist()))

    x = np.linalg.solve(d, b)
    dx = -np.linalg.solve(d, a1 @ x)
    assert tang.derivative(total)(0.0) == pytest.approx(dx.sum(), rel=1e-10)
    second = -2 * np.linalg.solve(d, a1 @ dx)
    assert tang.derivative(total, order=2)(0.0) == pytest.approx(second.sum(), rel=1e-10)


def test_spsolve_traces_to_a_graph_that_evaluates_and_differentiates():
    def solve(p, q):
        a = CSR.from_dense([[p, 1.0, 0.0], [1.0, q, 1.0], [0.0, 1.0, p]])
        return sum(sparse.spsolve(a, [1.0, 2.0, 3.0]))

    graph = tang.trace(solve, ["p", "q"])
    a = np.array([[4.0, 1.0, 0.0], [1.0, 5.0, 1.0], [0.0, 1.0, 4.0]])
    x = np.linalg.solve(a, [1.0, 2.0, 3.0])
    assert graph.eval([4.0, 5.0])[0] == pytest.approx(x.sum(), rel=1e-14)
    w = np.linalg.solve(a, np.ones(3))  # d(1ᵀx) = −wᵀ·dA·x with Aw = 1
    dp = -(w[0] * x[0] + w[2] * x[2])
    dq = -(w[1] * x[1])
    value, *partials = tang.grad(graph).eval([4.0, 5.0])
    assert value == pytest.approx(x.sum(), rel=1e-14)
    assert np.allclose(partials, [dp, dq], rtol=1e-12, atol=0)
