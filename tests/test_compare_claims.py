"""The "How tang compares" card (web/panels/compare.js) backs each of tang's marks with tests:
its ROWS literal lists, per tang cell, ``path::function`` ids. Read as JSON here (no browser),
every id must name a file of this repository that defines that function (a test under tests/
or e2e/, or a benchmark's measuring function), so a claim cannot outlive its test."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPARE = ROOT / "web" / "panels" / "compare.js"
STALE_WORDS = ("still to come", "(yet)", "scalar expressions only")


def table_rows(source: str) -> list:
    """compare.js's ROWS literal, parsed as JSON (trailing commas allowed)."""
    found = re.search(r"^const ROWS = (\[.*?^\]);$", source, re.S | re.M)
    assert found, "compare.js has no `const ROWS = [...];` literal"
    return json.loads(re.sub(r",(\s*[\]}])", r"\1", found.group(1)))


def missing_evidence(evidence: str, root: Path = ROOT) -> str | None:
    """Why `evidence` ("path::function") names nothing, or None when the function exists."""
    path, _, name = evidence.partition("::")
    file = root / path
    if not name or not file.is_file():
        return f"{evidence}: no file {path}" if name else f"{evidence}: no ::function"
    if path.startswith(("tests/", "e2e/")) and not name.startswith("test_"):
        return f"{evidence}: {name} is not a test function"
    defined = {
        n.name
        for n in ast.walk(ast.parse(file.read_text(), str(file)))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    return None if name in defined else f"{evidence}: {path} defines no {name}"


def tang_cells() -> list[tuple[str, list]]:
    rows = table_rows(COMPARE.read_text())
    return [(feature, cells[0]) for feature, cells in rows]


@pytest.mark.parametrize(("feature", "cell"), tang_cells(), ids=lambda v: str(v)[:40])
def test_each_tang_mark_names_tests_that_exist(feature: str, cell: list) -> None:
    mark, note, *rest = cell
    evidence = rest[0] if rest else []
    tests = [e for e in evidence if e.startswith(("tests/", "e2e/"))]
    assert tests, f"tang's cell in {feature!r} ({mark}) names no test"
    if mark == "no":  # a loss: the figure it quotes comes from a benchmark
        assert any(e.startswith("benchmarks/") for e in evidence), feature
    assert [m for e in evidence if (m := missing_evidence(e))] == []
    assert not any(w in note for w in STALE_WORDS), note


def test_the_table_covers_tensors_training_and_where_tang_loses() -> None:
    cells = dict(tang_cells())
    tensors = next(c for f, c in cells.items() if f.startswith("Tensors"))
    training = next(c for f, c in cells.items() if f.startswith("Training"))
    loses = [c for c in cells.values() if c[0] == "no"]
    assert tensors[0] == "yes" and "transformer" in tensors[1] and "attention" in tensors[1]
    assert training[0] == "yes" and "Quantum Poet" in training[1] and "WebGPU" in training[1]
    assert len(loses) == 1 and "tang loses here" in loses[0][1]
    assert "matmul" in loses[0][1] and "benchmarks/tensor.py::matmul" in loses[0][2]
    assert not any(w in COMPARE.read_text() for w in STALE_WORDS)


def test_a_missing_test_or_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_real():\n    assert True\n")
    assert missing_evidence("tests/test_x.py::test_real", tmp_path) is None
    assert "defines no test_gone" in missing_evidence("tests/test_x.py::test_gone", tmp_path)
    assert "no file" in missing_evidence("tests/test_y.py::test_real", tmp_path)
    assert "not a test" in missing_evidence("tests/test_x.py::helper", tmp_path)
