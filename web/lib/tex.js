// Typeset math with KaTeX: dist/math.js (bundled by build.py from web/editor/math.js) and its
// stylesheet and fonts under dist/katex/, all served by the site itself.
import { h } from "./dom.js";

let stylesheet = null;

/** An element that shows TeX `source` once KaTeX has loaded (its text until then, so the
 * idea reads even before). `display`: a centred block rather than inline. */
export function tex(source, { display = false, label = "" } = {}) {
  const el = h(display ? "div" : "span", { className: display ? "tex tex-display" : "tex" }, label || source);
  if (!stylesheet) {
    stylesheet = h("link", { rel: "stylesheet", href: new URL("../katex/katex.min.css", import.meta.url).href });
    document.head.append(stylesheet);
  }
  import("../math.js")
    .then(({ renderMath }) => {
      renderMath(el, source, { display });
      el.dataset.typeset = "katex";
    })
    .catch((err) => console.warn("KaTeX did not load:", err));
  return el;
}
