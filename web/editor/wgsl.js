// A small WGSL mode for CodeMirror's StreamLanguage: comments, attributes, keywords, types,
// numbers and function calls (what tang's kernels contain; not a full WGSL grammar).
import { StreamLanguage } from "@codemirror/language";

const KEYWORDS = new Set(
  "fn let var const struct return if else for loop while break continue switch case default override alias".split(" "),
);
const TYPES = new Set(
  "f32 f16 i32 u32 bool vec2 vec3 vec4 mat2x2 mat3x3 mat4x4 array atomic ptr uniform storage read read_write workgroup private function".split(" "),
);

export const wgsl = StreamLanguage.define({
  name: "wgsl",
  startState: () => ({ block: 0 }),
  token(stream, state) {
    if (state.block > 0) {
      while (!stream.eol()) {
        if (stream.match("*/")) {
          state.block -= 1;
          if (!state.block) break;
        } else if (stream.match("/*")) state.block += 1;
        else stream.next();
      }
      return "comment";
    }
    if (stream.eatSpace()) return null;
    if (stream.match("//")) {
      stream.skipToEnd();
      return "comment";
    }
    if (stream.match("/*")) {
      state.block = 1;
      return "comment";
    }
    if (stream.match(/^@\w+/)) return "meta";
    if (stream.match(/^(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fhiu]?/)) return "number";
    const word = stream.match(/^[A-Za-z_]\w*/);
    if (word) {
      if (KEYWORDS.has(word[0])) return "keyword";
      if (TYPES.has(word[0])) return "typeName";
      if (word[0] === "true" || word[0] === "false") return "bool";
      return stream.match(/^\s*\(/, false) ? "variableName.function" : "variableName";
    }
    if (stream.match(/^[-+*/%=<>!&|^~?:]+/)) return "operator";
    stream.next();
    return null;
  },
  languageData: { commentTokens: { line: "//", block: { open: "/*", close: "*/" } } },
});
