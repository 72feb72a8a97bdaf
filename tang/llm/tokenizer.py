"""A GGUF's byte-level BPE tokenizer (``tokenizer.ggml.model`` = ``gpt2``) in pure Python.

Built from the metadata alone: ``tokenizer.ggml.tokens``, ``token_type``, ``merges``, the
special ids, ``tokenizer.ggml.pre`` and ``tokenizer.chat_template``. Encoding runs in three
steps, as Hugging Face's ``tokenizers`` and llama.cpp do:

1. control tokens written in the text (``<|im_start|>``) become their ids; the text between
   them is encoded on its own;
2. the pre-tokenizer cuts that text into pieces: GPT-2's pattern
   ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``,
   preceded for ``smollm`` (and the other starcoder-style vocabularies) by a split that isolates
   every ``\\p{N}`` character (llama.cpp's regex list; SmolLM2's ``tokenizer.json`` says
   ``Digits(individual_digits=True)``);
3. each piece's UTF-8 bytes, spelled in GPT-2's byte alphabet, are merged by BPE, lowest
   merge rank first. A byte whose symbol is missing from the vocabulary is dropped, as both
   references do.

Python's ``re`` has no ``\\p{L}``/``\\p{N}``: the classes are built once from ``unicodedata``
and the whole pre-tokenizer is one compiled ``re`` pattern.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from itertools import pairwise
from typing import Any

CONTROL = 3  # llama.cpp's token type for control (special) tokens
USER_DEFINED = 4  # an added token that is matched whole in text but is not special
CACHE_LIMIT = 1 << 16  # pieces remembered by the BPE cache (then it starts afresh)
# tokenizer.ggml.pre values llama.cpp splits with GPT-2's pattern alone, and those it splits
# with every \p{N} character isolated first (only smollm is checked here, against Hugging Face).
PLAIN_GPT2 = frozenset({"gpt2", "mpt", "olmo", "jais"})
DIGIT_SPLIT = frozenset({"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone"})
# Tokens that end a turn whatever the file calls eos (llama.cpp's end-of-generation names).
END_NAMES = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>", "<end_of_turn>")
# Oniguruma's \s in Unicode mode (White_Space); str.isspace also takes U+001C..U+001F.
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
SCAN_LIMIT = 0x40000  # planes 4 and up hold no letters or numbers (tags, private use)


@cache
def byte_alphabet() -> tuple[str, ...]:
    """GPT-2's printable spelling of each byte value 0..255 (printable Latin-1 stays itself)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    spelled = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in spelled:
            spelled[b] = chr(256 + extra)
            extra += 1
    return tuple(spelled[b] for b in range(256))


@cache
def _classes() -> tuple[str, str]:
    """``re`` character-class bodies for \\p{L} and \\p{N}, built once from ``unicodedata``."""
    letters: list[list[int]] = []
    numbers: list[list[int]] = []
    category = unicodedata.category
    for c in range(SCAN_LIMIT):
        kind = category(chr(c))
        runs = letters if kind[0] == "L" else numbers if kind[0] == "N" else None
        if runs is not None:
            if runs and runs[-1][1] == c - 1:
                runs[-1][1] = c
            else:
                runs.append([c, c])

    def body(runs: list[list[int]]) -> str:
        esc = re.escape
        return "".join(esc(chr(a)) if a == b else f"{esc(chr(a))}-{esc(chr(b))}" for a, b in runs)

    return body(letters), body(numbers)


@cache
def split_pattern(digits: bool) -> re.Pattern[str]:
    """The pre-tokenizer as one ``re`` pattern; ``digits`` first isolates each \\p{N} char."""
    letter, number = _classes()
    w = WHITESPACE
    contractions = "'s|'t|'re|'ve|'m|'ll|'d"
    if digits:
        # Each digit stands alone, so every other piece stops at a digit, and a whitespace run
        # ending at one is at the end of its stretch: (?!\S) there becomes (?![^\s\p{N}]).
        pattern = (
            f"[{number}]|{contractions}| ?[{letter}]+| ?[^{w}{letter}{number}]+"
            f"|[{w}]+(?![^{w}{number}])|[{w}]+"
        )
    else:
        pattern = (
            f"{contractions}| ?[{letter}]+| ?[{number}]+| ?[^{w}{letter}{number}]+"
            f"|[{w}]+(?![^{w}])|[{w}]+"
        )
    return re.compile(pattern)


class Tokenizer:
    """Byte-level BPE from a GGUF's vocabulary and merges: ``encode``, ``decode``, ``chat``."""

    def __init__(
        self,
        tokens: Sequence[str],
        merges: Sequence[str],
        *,
        token_types: Sequence[int] = (),
        bos_id: int | None = None,
        eos_id: int | None = None,
        pre: str = "gpt2",
        add_bos: bool = False,
        add_eos: bool = False,
        chat_template: str = "",
    ):
        self.tokens = list(tokens)
        self.vocab = {t: i for i, t in enumerate(self.tokens)}
        self.bos_id, self.eos_id = bos_id, eos_id
        self.add_bos, self.add_eos = add_bos, add_eos
        self.pre = pre
        if pre not in DIGIT_SPLIT and pre not in PLAIN_GPT2:
            raise ValueError(f"pre-tokenizer {pre!r} is not supported (known: smollm, gpt2, …)")
        self._split = split_pattern(pre in DIGIT_SPLIT).findall
        self.ranks: dict[tuple[str, str], int] = {}
        self._no_rank = len(merges)
        for rank, merge in enumerate(merges):
            a, _, b = merge.partition(" ")
            self.ranks.setdefault((a, b), rank)
        self._spell = dict(enumerate(byte_alphabet()))  # a str.translate table
        self._bytes = [_token_bytes(t) for t in self.tokens]
        types = list(token_types)
        whole = [i for i, k in enumerate(types) if k in (CONTROL, USER_DEFINED)]
        self.control_ids = frozenset(i for i in whole if types[i] == CONTROL)
        self._whole = {self.tokens[i]: i for i in whole}
        # Control tokens are matched in text only when asked (`special`); user-defined ones always.
        self._with_special = _alternation(self._whole)
        self._without_special = _alternation(
            t for t, i in self._whole.items() if types[i] == USER_DEFINED
        )
        ends = {eos_id} | {self.vocab[n] for n in END_NAMES if n in self.vocab}
        self.special_ids = frozenset(i for i in ends if i is not None)
        self.chat_template = chat_template
        self.default_system = default_system_prompt(chat_template)
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_gguf(cls, metadata: Mapping[str, Any]) -> Tokenizer:
        """The tokenizer a GGUF's metadata describes (strings as ``str``, arrays as lists)."""
        model = metadata.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"tokenizer.ggml.model is {model!r}; only byte-level BPE (gpt2) is")
        return cls(
            metadata["tokenizer.ggml.tokens"],
            metadata["tokenizer.ggml.merges"],
            token_types=metadata.get("tokenizer.ggml.token_type", ()),
            bos_id=metadata.get("tokenizer.ggml.bos_token_id"),
            eos_id=metadata.get("tokenizer.ggml.eos_token_id"),
            pre=metadata.get("tokenizer.ggml.pre", "gpt2"),
            # Hugging Face's GGUF loader reads these two flags and defaults both to off.
            add_bos=bool(metadata.get("tokenizer.ggml.add_bos_token", False)),
            add_eos=bool(metadata.get("tokenizer.ggml.add_eos_token", False)),
            chat_template=metadata.get("tokenizer.chat_template", ""),
        )

    @property
    def vocab_size(self) -> int:
        """Number of tokens in the vocabulary (the model's embedding rows)."""
        return len(self.tokens)

    def token(self, token_id: int) -> str:
        """The vocabulary's spelling of one id (GPT-2 byte alphabet: ``Ġ`` is a space)."""
        return self.tokens[token_id]

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one id stands for in decoded text."""
        return self._bytes[token_id]

    def encode(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids for ``text``; with ``special``, control tokens in it become their ids."""
        ids: list[int] = [self.bos_id] if self.add_bos and self.bos_id is not None else []
        found = self._with_special if special else self._without_special
        if found is None:
            self._encode_text(text, ids)
        else:
            start = 0
            for m in found.finditer(text):
                if m.start() > start:
                    self._encode_text(text[start : m.start()], ids)
                ids.append(self._whole[m.group()])
                start = m.end()
            if start < len(text):
                self._encode_text(text[start:], ids)
        if self.add_eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def _encode_text(self, text: str, ids: list[int]) -> None:
        cache = self._cache
        for piece in self._split(text):
            got = cache.get(piece)
            if got is None:
                got = self._bpe(piece)
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                cache[piece] = got
            ids.extend(got)

    def _bpe(self, piece: str) -> tuple[int, ...]:
        vocab, ranks = self.vocab, self.ranks
        spelled = piece.encode().decode("latin-1").translate(self._spell)
        parts = [c for c in spelled if c in vocab]  # a byte the vocabulary lacks is dropped
        while len(parts) > 1:
            best, best_rank = None, self._no_rank
            for pair in pairwise(parts):
                rank = ranks.get(pair)
                if rank is not None and rank < best_rank:
                    best, best_rank = pair, rank
            if best is None:
                break
            a, b = best
            merged: list[str] = []
            i, n = 0, len(parts)
            while i < n:
                if i < n - 1 and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return tuple(vocab[p] for p in parts)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; control tokens appear as written, bad UTF-8 as U+FFFD."""
        table = self._bytes
        return b"".join([table[i] for i in ids]).decode("utf-8", "replace")

    def decoder(self) -> StreamDecoder:
        """An incremental decoder for streaming: ``push(id)`` gives only complete characters."""
        return StreamDecoder(self._bytes)

    def chat(
        self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = True
    ) -> str:
        """ChatML text for ``messages`` (the template's default system prompt first if none)."""
        parts = []
        if messages and messages[0]["role"] != "system" and self.default_system is not None:
            parts.append(f"<|im_start|>system\n{self.default_system}<|im_end|>\n")
        parts += [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
        if add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)

    def encode_chat(
        self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = True
    ) -> list[int]:
        """The ids of ``chat(messages)``, where only the template's own markers are control
        tokens: a message that spells ``<|im_end|>`` cannot end its turn early."""
        start, end = self._whole["<|im_start|>"], self._whole["<|im_end|>"]
        turns = list(messages)
        if turns and turns[0]["role"] != "system" and self.default_system is not None:
            turns.insert(0, {"role": "system", "content": self.default_system})
        ids: list[int] = []
        for m in turns:
            ids.append(start)
            ids += self.encode(f"{m['role']}\n{m['content']}", special=False)
            ids.append(end)
            ids += self.encode("\n", special=False)
        if add_generation_prompt:
            ids += [start, *self.encode("assistant\n", special=False)]
        return ids


class StreamDecoder:
    """Turns ids into text one at a time, holding back an unfinished UTF-8 sequence."""

    def __init__(self, token_bytes: Sequence[bytes]):
        self._bytes = token_bytes
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")

    def push(self, token_id: int) -> str:
        """The complete text the id finishes (maybe ``""`` while a character is split)."""
        return self._utf8.decode(self._bytes[token_id])

    def flush(self) -> str:
        """Whatever is held back, an unfinished sequence as U+FFFD; resets the decoder."""
        text = self._utf8.decode(b"", final=True)
        self._utf8.reset()
        return text


@cache
def _unspell_table() -> dict[int, str]:
    """str.translate table: byte symbol -> the Latin-1 char of its byte, other chars below
    U+0144 -> U+FFFF (so that Latin-1 refuses them)."""
    table = dict.fromkeys(range(0x144), "\uffff")
    table.update((ord(ch), chr(b)) for b, ch in enumerate(byte_alphabet()))
    return table


def _token_bytes(token: str) -> bytes:
    """A token's bytes: its byte symbols decoded, or its own UTF-8 if it has any other char."""
    try:
        return token.translate(_unspell_table()).encode("latin-1")
    except UnicodeEncodeError:  # like tokenizers' ByteLevel decoder
        return token.encode()


def _alternation(names: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern matching any of ``names``, the longest where several start at one place."""
    ordered = sorted(names, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


_DEFAULT_SYSTEM = re.compile(
    r"messages\[0\]\['role'\]\s*!=\s*'system'\s*%\}\s*\{\{\s*"
    r"'<\|im_start\|>system(?:\n|\\n)(.*?)<\|im_end\|>(?:\n|\\n)'",
    re.DOTALL,
)


def default_system_prompt(template: str) -> str | None:
    """The system prompt a ChatML template writes when the conversation has none, if any."""
    m = _DEFAULT_SYSTEM.search(template or "")
    return m.group(1).replace("\\n", "\n").replace("\\'", "'") if m else None
