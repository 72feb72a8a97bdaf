"""The page's panels keep the shape issue 13 gave them, read from the JS source (no browser).

Every panel listed in web/panels/registry.js default-exports an object with `id`, `title` and
`mount`, and its `mount` function is at most MAX_MOUNT_LINES lines: DOM building and drawing
live in a view module (e.g. arm-view.js), `mount` only wires the controller. No file in web/
outside web/lib/ defines its own `h(`, `el(` or `svgEl(` DOM helper (web/lib/dom.js has one).

The JS is read with a small scanner, not a parser: `code_mask` blanks comments, string and
template literals and regex literals (newlines kept, so line numbers hold); what is left is
code, in which braces match and property names can be found by regular expressions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEB = ROOT / "web"
PANELS = WEB / "panels"
MAX_MOUNT_LINES = 80

# A regex literal may start after one of these characters or keywords (else "/" divides).
REGEX_AFTER_CHARS = set("(,=:[!&|?{};+-*%<>~^")
REGEX_AFTER_WORDS = ("return", "typeof", "case", "in", "of", "delete", "void", "throw", "else")


def code_mask(source: str) -> str:
    """`source` with comments and string, template and regex literals replaced by spaces.

    Newlines stay, so offsets and line numbers in the mask are those of the source. A
    template literal is blanked whole, `${…}` parts included (their braces balance).
    """
    out = list(source)
    n = len(source)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    def skip_string(i: int) -> int:  # i at the opening quote; returns the index after it
        quote = source[i]
        i += 1
        while i < n and source[i] != quote:
            if source[i] == "\\":
                i += 1
            elif source[i] == "\n":
                raise ValueError(f"unterminated string at offset {i}")
            i += 1
        return i + 1

    def skip_template(i: int) -> int:  # i at the opening backtick
        i += 1
        while i < n and source[i] != "`":
            if source[i] == "\\":
                i += 2
            elif source.startswith("${", i):
                i = skip_code(i + 2, until_brace=True)
            else:
                i += 1
        if i >= n:
            raise ValueError("unterminated template literal")
        return i + 1

    def skip_regex(i: int) -> int:  # i at the opening slash
        i += 1
        in_class = False
        while i < n and (in_class or source[i] != "/"):
            if source[i] == "\\":
                i += 1
            elif source[i] == "[":
                in_class = True
            elif source[i] == "]":
                in_class = False
            elif source[i] == "\n":
                raise ValueError(f"unterminated regex literal at offset {i}")
            i += 1
        i += 1
        while i < n and (source[i].isalnum() or source[i] == "_"):
            i += 1  # flags
        return i

    def regex_may_start(i: int) -> bool:
        k = i - 1
        while k >= 0 and out[k].isspace():  # blanked comments count as space
            k -= 1
        if k < 0 or out[k] in REGEX_AFTER_CHARS:
            return True
        word = re.search(r"[\w$]+$", "".join(out[max(0, k - 12) : k + 1]))
        return bool(word) and word.group(0) in REGEX_AFTER_WORDS

    def skip_code(i: int, until_brace: bool = False) -> int:
        depth = 0
        while i < n:
            c = source[i]
            if source.startswith("//", i):
                end = source.find("\n", i)
                end = n if end < 0 else end
                blank(i, end)
                i = end
            elif source.startswith("/*", i):
                end = source.find("*/", i + 2)
                if end < 0:
                    raise ValueError(f"unterminated comment at offset {i}")
                blank(i, end + 2)
                i = end + 2
            elif c in "\"'":
                end = skip_string(i)
                blank(i, end)
                i = end
            elif c == "`":
                end = skip_template(i)
                blank(i, end)
                i = end
            elif c == "/" and regex_may_start(i):
                end = skip_regex(i)
                blank(i, end)
                i = end
            else:
                if c == "{":
                    depth += 1
                elif c == "}":
                    if until_brace and depth == 0:
                        return i + 1
                    depth -= 1
                i += 1
        return i

    skip_code(0)
    return "".join(out)


def matching(mask: str, open_at: int) -> int:
    """The index of the bracket that closes the one at `open_at` (in a code mask)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opener = mask[open_at]
    closer = pairs[opener]
    depth = 0
    for k in range(open_at, len(mask)):
        if mask[k] == opener:
            depth += 1
        elif mask[k] == closer:
            depth -= 1
            if depth == 0:
                return k
    raise ValueError(f"no match for {opener!r} at offset {open_at}")


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def default_export_span(mask: str) -> tuple[int, int]:
    """(open, close) offsets of the braces of `export default { … }`."""
    found = re.search(r"\bexport\s+default\s*\{", mask)
    assert found, "no `export default {…}` object"
    start = found.end() - 1
    return start, matching(mask, start)


MEMBER = re.compile(r"[{,]\s*(?:async\s+)?(?:get\s+|set\s+)?([A-Za-z_$][\w$]*)\s*[:(,}]")


def top_level_members(mask: str, start: int, end: int) -> dict[str, int]:
    """The property names of the object literal mask[start:end + 1] and where each stands
    (only its own properties: what is nested one brace deeper or more is passed over)."""
    shallow = list(mask[start : end + 1])
    depth = 0
    for k, c in enumerate(shallow):
        if c == "}":
            depth -= 1
        if depth >= 2 and c != "\n":
            shallow[k] = " "
        if c == "{":
            depth += 1
    text = "".join(shallow)
    members = {}
    for m in MEMBER.finditer(text):
        members.setdefault(m.group(1), start + m.start(1))
    return members


def mount_span(source: str) -> tuple[int, int]:
    """First and last line of the panel's mount function: a method `mount(…) {…}`, a
    property `mount: (…) => {…}` / `mount: function (…) {…}`, or `mount: name` naming a
    function declared in the same module."""
    mask = code_mask(source)
    start, end = default_export_span(mask)
    at = top_level_members(mask, start, end).get("mount")
    assert at is not None, "the default export has no mount"
    after = mask[at + len("mount") :]
    named = re.match(r"\s*:\s*([A-Za-z_$][\w$]*)\s*[,}]", after)
    if named and named.group(1) not in ("async", "function"):
        decl = re.search(rf"\bfunction\s+{re.escape(named.group(1))}\s*\(", mask)
        assert decl, f"mount names {named.group(1)}, which this module does not declare"
        at = decl.start()
    params = mask.index("(", at)
    body = mask.index("{", matching(mask, params))
    return line_of(source, at), line_of(source, matching(mask, body))


def registry() -> list[str]:
    source = (PANELS / "registry.js").read_text(encoding="utf-8")
    mask = code_mask(source)
    found = re.search(r"\bexport\s+default\s*\[", mask)
    assert found, "web/panels/registry.js exports no array"
    listed = source[found.end() : matching(mask, found.end() - 1)]
    return re.findall(r"[\"']([\w.-]+\.js)[\"']", listed)


PANEL_FILES = registry()


def test_the_registry_lists_existing_panels() -> None:
    assert len(PANEL_FILES) >= 10, PANEL_FILES
    missing = [name for name in PANEL_FILES if not (PANELS / name).is_file()]
    assert not missing, f"registry.js lists files that do not exist: {missing}"


@pytest.mark.parametrize("name", PANEL_FILES)
def test_a_panel_exports_id_title_and_mount(name: str) -> None:
    source = (PANELS / name).read_text(encoding="utf-8")
    mask = code_mask(source)
    members = top_level_members(mask, *default_export_span(mask))
    assert {"id", "title", "mount"} <= members.keys(), f"{name} exports {sorted(members)}"


@pytest.mark.parametrize("name", PANEL_FILES)
def test_a_panels_mount_is_short(name: str) -> None:
    first, last = mount_span((PANELS / name).read_text(encoding="utf-8"))
    lines = last - first + 1
    assert lines <= MAX_MOUNT_LINES, (
        f"{name}: mount runs {lines} lines (lines {first}-{last}); move DOM building and "
        f"drawing into a view module, as in arm-view.js"
    )


HELPER_DEFINITION = re.compile(
    r"\bfunction\s+(h|el|svgEl)\s*\("
    r"|\b(?:const|let|var)\s+(h|el|svgEl)\s*=\s*(?:async\s+)?"
    r"(?:function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)"
)


def test_no_page_file_defines_its_own_dom_helper() -> None:
    found = []
    for path in sorted(WEB.rglob("*.js")):
        relative = path.relative_to(WEB)
        if relative.parts[0] in ("lib", "node_modules") or "node_modules" in relative.parts:
            continue
        source = path.read_text(encoding="utf-8")
        for m in HELPER_DEFINITION.finditer(code_mask(source)):
            found.append(f"web/{relative}:{line_of(source, m.start())} defines {m.group(0)!r}")
    assert not found, "use web/lib/dom.js (h, svg) instead:\n" + "\n".join(found)


# The scanner itself, on sources built to trip it.


def test_the_mask_blanks_strings_templates_comments_and_regexes() -> None:
    source = (
        'const a = "{"; // }\n'
        "const b = `x ${ {k: '}'}.k } y`; /* { */\n"
        "const c = s.replace(/[{}]/g, '');\n"
        "const d = 4 / 2 / 1;\n"
    )
    mask = code_mask(source)
    assert mask.count("\n") == source.count("\n")
    assert "{" not in mask and "}" not in mask
    assert "4 / 2 / 1" in mask  # division is code


def test_a_long_mount_is_measured_and_nested_objects_are_not_members() -> None:
    body = "\n".join(f"    const x{i} = {{ id: `{i}` }};" for i in range(90))
    source = (
        "export default {\n"
        '  id: "demo",\n'
        '  title: "A demo, { with braces }",\n'
        "  async mount(el, { call }) {\n"
        f"{body}\n"
        "  },\n"
        "};\n"
    )
    assert mount_span(source) == (4, 95)
    mask = code_mask(source)
    assert set(top_level_members(mask, *default_export_span(mask))) == {"id", "title", "mount"}


def test_a_mount_named_by_property_is_found() -> None:
    source = (
        "function mountIt(el) {\n  el.append(1);\n}\n"
        'export default { id: "x", title: "X", mount: mountIt };\n'
    )
    assert mount_span(source) == (1, 3)
    arrow = 'export default {\n  id: "x",\n  title: "X",\n  mount: async (el) => {\n  },\n};\n'
    assert mount_span(arrow) == (4, 5)


def test_a_local_dom_helper_is_recognised() -> None:
    for text in (
        "function h(tag) {}",
        "const el = (tag, props) => 1;",
        "const svgEl = function (t) {};",
    ):
        assert HELPER_DEFINITION.search(code_mask(text)), text
    for text in ("const el = view.root;", 'import { svg as svgEl } from "../lib/dom.js";'):
        assert not HELPER_DEFINITION.search(code_mask(text)), text
