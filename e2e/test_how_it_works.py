"""The "How it works" panels and the comparison table, on one page (no WebGPU needed): the
dual-number figure follows x and its numbers are tang.Dual's, computed again here; the
lowering figure shows one graph in all eight backends, linked by node."""

from __future__ import annotations

import math

import pytest
from test_gpu_page import open_page

import tang
from tang.lower import BACKENDS

DUAL = "#panel-how-dual .panel-body"
LOWER = "#panel-how-lower .panel-body"


def dual_rows(page) -> tuple[float, list[dict]]:
    """The figure's x and its table: formula, value and ε part of each row (full floats)."""
    return page.page.evaluate(
        """sel => {
             const el = document.querySelector(sel);
             const rows = [...el.querySelectorAll("tbody tr")].map((tr) => {
               const [value, eps] = [...tr.querySelectorAll("td.num")].map(
                 (td) => JSON.parse(td.dataset.value));
               return {formula: tr.querySelector("td code").textContent, value, eps};
             });
             return [Number(el.dataset.x), rows];
           }""",
        DUAL,
    )


def assert_dual_rows(x: float, rows: list[dict]) -> None:
    d = tang.Dual(x, 1.0)
    s = tang.sin(d)
    f = d * s
    assert [r["formula"] for r in rows] == ["x + 1·ε", "sin x", "x · v0"]
    for row, want in zip(rows, (d, s, f), strict=True):
        # the worker's libm (Pyodide) and this one may differ in the last bit
        assert row["value"] == pytest.approx(want.value, rel=4e-16, abs=1e-300)
        assert row["eps"] == pytest.approx(want.tangent, rel=4e-16, abs=1e-300)
    assert rows[-1]["eps"] == pytest.approx(math.sin(x) + x * math.cos(x), rel=1e-12, abs=1e-15)


def wait_x(page, x: float) -> None:
    page.page.wait_for_function(
        "([sel, x]) => Number(document.querySelector(sel).dataset.x) === x",
        arg=[DUAL, x],
        timeout=30_000,
    )


def test_how_it_works_and_the_comparison_table(launch, site):
    page = open_page(launch, site)
    wait_x(page, 2.0)
    x, rows = dual_rows(page)
    assert x == 2.0
    assert_dual_rows(x, rows)

    # keyboard: the slider moves x by 0.01 a step, and the table follows
    page.page.locator("#dual-x").focus()
    for _ in range(3):
        page.page.keyboard.press("ArrowLeft")
    wait_x(page, 1.97)
    assert_dual_rows(*dual_rows(page))
    summary = page.page.inner_text("#panel-how-dual .dual-summary")
    assert summary.startswith("f(1.97) = ")

    # drag on the plot: x follows the pointer, the numbers stay tang.Dual's
    box = page.page.locator("#panel-how-dual canvas").bounding_box()
    page.page.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    page.page.mouse.down()
    page.page.mouse.move(box["x"] + box["width"] * 0.15, box["y"] + box["height"] / 2, steps=4)
    page.page.mouse.up()
    page.page.wait_for_function(
        "sel => Number(document.querySelector(sel).dataset.x) < -2", arg=DUAL, timeout=30_000
    )
    page.page.wait_for_timeout(300)  # let the last debounced request land
    x, rows = dual_rows(page)
    assert -6 <= x < -2 and float(page.page.input_value("#dual-x")) == x
    assert_dual_rows(x, rows)

    # lowering: one graph, all eight backends, the same node lit everywhere
    page.page.wait_for_function(
        "sel => document.querySelector(sel).dataset.state === 'done'", arg=LOWER
    )
    names = page.page.eval_on_selector_all(
        "#panel-how-lower figure[data-backend]", "fs => fs.map((f) => f.dataset.backend)"
    )
    assert names == list(BACKENDS) and len(names) == 8
    sin_node = page.page.locator("#panel-how-lower .lower-nodes li", has_text="sin x").first
    page.page.mouse.move(2, 2)  # the page margin: no hover competes with the focus
    sin_node.focus()
    lit = page.page.eval_on_selector_all(
        "#panel-how-lower .lit",
        "es => es.map((e) => [e.closest('figure')?.dataset.backend ?? 'graph', e.textContent])",
    )
    assert sorted(b for b, _ in lit) == sorted(["graph", *BACKENDS])
    assert all("sin" in text for _, text in lit), lit
    # hover a line in one backend: its node lights up in the others and in the graph
    page.page.hover("#panel-how-lower figure[data-backend='cuda'] .line[data-serials]:nth-child(5)")
    lit = page.page.eval_on_selector_all(
        "#panel-how-lower .lit", "es => es.map((e) => e.closest('figure')?.dataset.backend)"
    )
    assert len(lit) >= 9 and set(BACKENDS) <= set(lit)
    # sections 3 and 4 are real panels now (how-views, how-derived), not placeholders
    assert page.page.locator("#panel-how-lower .placeholder").count() == 0

    # the comparison table: five tools, honest marks (tang loses on tensors)
    heads = page.page.eval_on_selector_all(
        "#panel-compare thead th", "ths => ths.map((t) => t.textContent)"
    )
    assert heads == ["What", "tang", "PyTorch", "JAX", "sympy", "tinygrad"]
    tensor = page.page.locator("#panel-compare tr", has_text="Big models")
    assert tensor.locator("td[data-tool='tang']").get_attribute("data-mark") == "no"
    assert "tang loses here" in tensor.locator("td[data-tool='tang']").inner_text()
    assert page.console_errors == []
