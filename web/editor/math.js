// KaTeX for the how-it-works panels, bundled by build.py (esbuild) into dist/math.js; its
// stylesheet and fonts are copied to dist/katex/ (nothing is fetched from elsewhere).
//
//   import { renderMath } from "../math.js";
//   renderMath(element, "f(x+\\varepsilon) = f(x) + f'(x)\\,\\varepsilon", { display: true });

import katex from "katex";

/** Typeset TeX `tex` into `element` (KaTeX: HTML and MathML, so screen readers read it). A
 * typo in our own TeX shows as red source text instead of throwing. */
export function renderMath(element, tex, { display = false } = {}) {
  katex.render(tex, element, { displayMode: display, throwOnError: false, output: "htmlAndMathml" });
  return element;
}
