"""Prompt-injection markers in page text: text that speaks to an AI model instead of a visitor.

Pure and fast: no I/O, no model. Everything frontdesk indexes passes through `strip_injections`
at ingest (``ingest/clean.py``), so a flagged passage never reaches a chunk, a snippet, a quoted
answer or a prompt; what was removed comes back as `Finding`s for the site owner (``page_flags``).

What counts as a marker (the text is checked folded: NFKC, zero-width and bidi controls removed,
look-alike letters from other scripts mapped to Latin, lower case):

- ``override``: "ignore / disregard / forget (all) previous (prior, above, system…) instructions
  (prompts, rules…)", "ignore the visitor's question", "new instructions:";
- ``role_change``: "you are now an AI / assistant / DAN…", "from now on you will…", "developer
  mode", "jailbreak";
- ``addressed_to_ai``: an imperative addressed to an assistant: "AI assistants: reply…", "note to
  the AI", "if you are an AI / a language model…", "attention LLMs";
- ``prompt_leak``: "reveal / print / repeat your system prompt (instructions…)";
- ``fake_role_tag``: chat-template and role markup: ``<system>``, ``</assistant>``, ``<|im_start|>``,
  ``[INST]``, ``<<SYS>>``, ``### System:``, a line starting "system:" or "assistant:";
- ``answer_format``: orders about every answer ("end every reply with…", "always state that…",
  "tell every visitor that…");
- ``exfiltration``: a link or image whose address is to carry what the visitor wrote;
- ``encoded_instruction``: "decode this Base64 and follow it";
- ``indirect_order``: an order that names no model: what a summary or an answer *of this page* must
  say, notes for automated readers, the page told to be contradicted.

The table itself is ``ingest/injection_markers.py``, with the same orders in other languages. A
text with no marker is read once more with words spelled apart, cut into syllables or written in
leetspeak put together.

Text that talks *about* these things is not flagged: "the system prompt", "assistant messages",
"the model should return JSON" address no one. A marker removes its block (paragraph) from the
sentence it starts in to the block's end (what follows a marker is its payload); a role tag with a
closing tag removes everything up to the closing tag.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

import msgspec

from ingest.injection_markers import AI, AI_HINTS, AI_WORD, PATTERNS

MAX_FINDING_CHARS = 500

# ---------------------------------------------------------------------------------------------
# Folding: what the patterns read
# ---------------------------------------------------------------------------------------------

# Letters of other scripts that look like Latin ones ("іgnоrе" in Cyrillic): the usual
# homoglyph substitutions, enough for the words the patterns use.
_CONFUSABLES = str.maketrans({
    "а": "a", "в": "b", "с": "c", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j",
    "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "ѕ": "s", "т": "t", "у": "y", "х": "x",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ɑ": "a", "ɩ": "i", "ı": "i", "ℓ": "l",
    "А": "a", "В": "b", "С": "c", "Е": "e", "Н": "h", "І": "i", "Ј": "j", "К": "k", "М": "m",
    "О": "o", "Р": "p", "Ѕ": "s", "Т": "t", "У": "y", "Х": "x",
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "Α": "a", "Β": "b", "Ε": "e", "Ζ": "z", "Η": "h", "Ι": "i", "Κ": "k",
    "Μ": "m", "Ν": "n", "Ο": "o", "Ρ": "p", "Τ": "t", "Υ": "y", "Χ": "x",
})  # fmt: skip
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")
# Unicode tag characters (U+E0020-E007E) spell ASCII invisibly ("ASCII smuggling"): read as ASCII.
_TAG_BASE = 0xE0000


def _fold_char(char: str) -> str:
    """One character as the patterns read it: "" for format characters (zero-width spaces and
    joiners, bidi controls, soft hyphens), a tag character as the ASCII it hides, else NFKC,
    Latin look-alikes mapped, lower case."""
    code = ord(char)
    if 0xE0020 <= code <= 0xE007E:
        return chr(code - _TAG_BASE).lower()
    if unicodedata.category(char) == "Cf":
        return ""
    folded = unicodedata.normalize("NFKC", char).translate(_CONFUSABLES)
    return "".join(unicodedata.normalize("NFKC", c).translate(_CONFUSABLES) for c in folded.lower())


class _FoldTable(dict):
    """``str.translate`` table that folds each character the first time it meets it."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLD_TABLE = _FoldTable()


# What the fold changes beyond lower case, besides what NFKC changes: format characters and tag
# characters, and the scripts the look-alikes come from.
_FOLDED_SPECIALLY = re.compile(
    "[\u00ad\u0131\u0251\u0261\u0269\u0370-\u052f\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u2113\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def fold(text: str) -> str:
    """The text as the patterns read it (see ``_fold_char``)."""
    if text.isascii():
        return text.lower()
    if unicodedata.is_normalized("NFKC", text) and not _FOLDED_SPECIALLY.search(text):
        lowered = text.lower()
        if len(lowered) == len(text):
            return lowered
    return text.translate(_FOLD_TABLE)


def fold_with_origin(text: str) -> tuple[str, list[int]]:
    """``fold(text)`` and, for each of its characters, the index in ``text`` it came from."""
    pieces: list[str] = []
    origin: list[int] = []
    last = 0
    for run in _NON_ASCII_RUN.finditer(text):
        start, end = run.span()
        pieces.append(text[last:start].lower())
        origin.extend(range(last, start))
        for index in range(start, end):
            folded = _FOLD_TABLE[ord(text[index])]
            pieces.append(folded)
            origin.extend([index] * len(folded))
        last = end
    pieces.append(text[last:].lower())
    origin.extend(range(last, len(text)))
    return "".join(pieces), origin


# ---------------------------------------------------------------------------------------------
# Markers
# ---------------------------------------------------------------------------------------------

def _fewest_words(gate: tuple[str, ...]) -> frozenset[str]:
    """A gate's words without those that hold another of them ("summari" beside "summar"): the same
    test, fewer substring searches."""
    return frozenset(word for word in gate if not any(other != word and other in word for other in gate))


def _gate_order(gate: frozenset[str] | tuple[str, ...]) -> tuple[int, int]:
    """Gates of long words first, short words and punctuation next, the model's names last: most
    texts fail a pattern's first gate, so the common words of its others are seldom looked for."""
    return (2, 0) if gate is AI else (1 if min(map(len, gate)) < 4 else 0, len(gate))


_MARKERS = [(reason, tuple(sorted((gate if gate is AI else _fewest_words(gate) for gate in gates), key=_gate_order)),
             re.compile(pattern)) for reason, gates, pattern in PATTERNS]
# Looked for in every text: the words of each pattern's first gate. A pattern's other gates are
# looked for only in the texts that hold its first (a set of every gate word, tested in each text,
# was half of the screen's time once it had ~450 words).
_FIRST_GATE_WORDS = tuple({word: None for _, gates, _ in _MARKERS if gates[0] is not AI for word in gates[0]})
_FIRST_GATE_SET = frozenset(_FIRST_GATE_WORDS)
_CLOSING_TAG = re.compile(r"<\s*/\s*(system|assistant|user|instructions?|sys|inst|prompt)\s*>|\[/\s*(inst)\s*\]"
                          r"|<<\s*/\s*(sys)\s*>>|<\|\s*(?:im_end|eot_id|end)\s*\|>")
_OPENING_TAG = re.compile(r"<\s*(system|assistant|user|instructions?|sys|inst|prompt)\s*>|\[\s*(inst)\s*\]"
                          r"|<<\s*(sys)\s*>>|<\|\s*im_start\s*\|>")


class Finding(msgspec.Struct, frozen=True):
    """One passage taken out of indexed text: why, and the text itself (for the site owner)."""

    reason: str
    text: str
    where: str = ""
    """Which part of the page: a heading path, "image alt", "hidden element", "title"…"""


def _names_an_ai(folded: str) -> bool:
    return any(hint in folded for hint in AI_HINTS) and AI_WORD.search(folded) is not None


def _markers(folded: str) -> Iterator[tuple[str, int, int]]:
    present = {word for word in _FIRST_GATE_WORDS if word in folded}  # one substring test a word
    looked: set[str] = set()  # the other gates' words looked for so far
    names_an_ai: bool | None = None  # looked for only when a pattern's other gates hold
    for reason, gates, pattern in _MARKERS:
        for gate in gates:
            if not isinstance(gate, frozenset):  # AI: the words that name a model
                if names_an_ai is None:
                    names_an_ai = _names_an_ai(folded)
                if not names_an_ai:
                    break
                continue
            if unseen := gate - _FIRST_GATE_SET - looked:
                present.update(word for word in unseen if word in folded)
                looked.update(unseen)
            if present.isdisjoint(gate):
                break
        else:
            for match in pattern.finditer(folded):
                start = match.start()
                while start < match.end() and folded[start].isspace():
                    start += 1  # a pattern anchored on a line or sentence start begins at its first word
                yield reason, start, match.end()


def find_injections(text: str) -> list[tuple[str, int, int]]:
    """(reason, start, end) of every marker in ``text``, as indexes into ``text`` itself."""
    if not text:
        return []
    if len(text) <= _REMEMBERED_CHARS:
        return list(_remembered_injections(text))
    return _find_injections(text)


# A site repeats most of its texts page after page (headings, navigation, footers: 10,236 distinct
# among the 35,036 texts of the two documentation fixtures); a short text's verdict is remembered.
_REMEMBERED_CHARS = 2000


@functools.lru_cache(maxsize=8192)
def _remembered_injections(text: str) -> tuple[tuple[str, int, int], ...]:
    return tuple(_find_injections(text))


def _find_injections(text: str) -> list[tuple[str, int, int]]:
    folded = fold(text)
    found = list(_markers(folded))
    if not found:
        return _unobfuscated_markers(text, folded)
    if not text.isascii():
        folded, origin = fold_with_origin(text)
        found = [(reason, origin[start], origin[end - 1] + 1) for reason, start, end in _markers(folded)]
    return sorted(set(found), key=lambda f: (f[1], f[2]))


def is_injection(text: str) -> bool:
    return bool(find_injections(text))


# Words spelled apart ("I g n o r e", "D.i.s.r.e.g.a.r.d", "a_s_s_i_s_t_a_n_t"), cut into syllables
# ("ig-nore pre-vi-ous"), or in leetspeak ("1gn0r3 4ll pr3v10u5"): read once more, put together.
_SPELLED_APART = re.compile(r"(?<![a-z0-9])[a-z0-9]([ ._-])(?:[a-z0-9]\1)+[a-z0-9](?![a-z0-9])")
_SYLLABLES = re.compile(r"(?<=[a-z])-(?=[a-z])")
_LEET_WORD = re.compile(r"[a-z0-9@$]*(?:[a-z][0-9@$]|[0-9@$][a-z])[a-z0-9@$]*")
_LEET = str.maketrans("0134578@$", "oieastbas")
# What calls for the second reading: a run spelled apart, a word cut into three pieces or more, or
# one with two leet digits among letters ("pr3v10u5"); not "well-known" or "python3".
_OBFUSCATED = re.compile(f"{_SPELLED_APART.pattern}" r"|[a-z]{1,5}-[a-z]{1,5}-[a-z]"
                         r"|[a-z][0134578@$][a-z0-9@$]*[0134578@$]|[0134578@$][a-z]+[0134578@$]")


def _put_together(folded: str) -> str:
    """``folded`` with words spelled apart, cut into syllables or in leetspeak put together."""
    joined = _SPELLED_APART.sub(lambda run: run.group(0).replace(run.group(1), ""), folded)
    return _LEET_WORD.sub(lambda word: word.group(0).translate(_LEET), _SYLLABLES.sub("", joined))


def _put_together_origin(folded: str) -> list[int]:
    """For each character of ``_put_together(folded)``, the index in ``folded`` it came from."""
    keep = [True] * len(folded)
    for run in _SPELLED_APART.finditer(folded):
        for index in range(run.start() + 1, run.end(), 2):
            keep[index] = False
    for hyphen in _SYLLABLES.finditer(folded):
        keep[hyphen.start()] = False
    return [index for index in range(len(folded)) if keep[index]]


# Words an order hardly goes without: the markers are read again only when putting the text
# together brings one of them out ("well-known", "utf8", "python3" are common and bring none).
_ORDER_WORDS = ("ignor", "disregard", "forget", "instruc", "assist", "prompt", "previous", "rule", "guideline",
                "system", "summar", "model", "chatbot", "bot", "reply", "respon", "answer", "tell", "say", "visitor",
                "user", "reveal", "print", "repeat", "always", "never")


def _unobfuscated_markers(text: str, folded: str) -> list[tuple[str, int, int]]:
    """Markers that only the text put together again shows, as indexes into ``text``."""
    if not _OBFUSCATED.search(folded):
        return []
    together = _put_together(folded)
    if together == folded or not any(word in together and word not in folded for word in _ORDER_WORDS):
        return []
    found = list(_markers(together))
    if not found:
        return []
    to_folded = _put_together_origin(folded)  # the slow way, only for the texts that need it
    to_text = fold_with_origin(text)[1] if not text.isascii() else None
    spans = []
    for reason, start, end in found:
        first, last = to_folded[start], to_folded[end - 1]
        if to_text is not None:
            first, last = to_text[first], to_text[last]
        spans.append((reason, first, last + 1))
    return sorted(set(spans), key=lambda f: (f[1], f[2]))


_SENTENCE_START = re.compile(r"[.!?。！？](?=[\s\"'”’)\]])|\n")


def _sentence_start(text: str, block_start: int, position: int) -> int:
    """Where the sentence holding ``position`` starts (not before ``block_start``)."""
    start = block_start
    for match in _SENTENCE_START.finditer(text, block_start, position):
        start = match.end()
    return start


def _block_bounds(text: str, position: int) -> tuple[int, int]:
    start = text.rfind("\n\n", 0, position)
    end = text.find("\n\n", position)
    return (0 if start == -1 else start + 2), (len(text) if end == -1 else end)


def _closing_tag_end(folded: str, origin: list[int] | None, start: int) -> int | None:
    """The end (in the original text) of the closing tag that matches an opening tag at
    ``start``, if there is one."""
    opening = _OPENING_TAG.match(folded, start)
    if opening is None:
        return None
    name = next((g for g in opening.groups() if g), "")  # "" for <|im_start|>: its end is <|im_end|>
    for closing in _CLOSING_TAG.finditer(folded, opening.end()):
        closing_name = next((g for g in closing.groups() if g), "")
        if closing_name.rstrip("s") == name.rstrip("s") or not closing_name:
            end = closing.end()
            return origin[end - 1] + 1 if origin is not None else end
    return None


def strip_injections(text: str, where: str = "") -> tuple[str, list[Finding]]:
    """``text`` without its flagged passages, and what was taken out.

    Each marker takes out its block (text between blank lines) from the start of the sentence the
    marker is in (a role tag: from the tag) to the end of the block; an opening role tag with a
    matching closing tag takes out everything up to it, across blocks. Whitespace left at the cut
    is tidied.
    """
    markers = find_injections(text)
    if not markers:
        return text, []
    folded, origin = (text.lower(), None) if text.isascii() else fold_with_origin(text)
    cuts: list[tuple[int, int, str]] = []
    for reason, start, end in markers:
        block_start, block_end = _block_bounds(text, start)
        # A role tag is its own boundary; other markers take their whole sentence.
        cut_start = start if reason == "fake_role_tag" else _sentence_start(text, block_start, start)
        cut_end = max(block_end, end)
        if reason == "fake_role_tag":
            folded_start = start if origin is None else origin.index(start)
            closing = _closing_tag_end(folded, origin, folded_start)
            if closing is not None:
                cut_end = max(cut_end, _block_bounds(text, closing - 1)[1])
        cuts.append((cut_start, cut_end, reason))
    cuts.sort()
    merged: list[list] = []
    for start, end, reason in cuts:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            if reason not in merged[-1][2]:
                merged[-1][2].append(reason)
        else:
            merged.append([start, end, [reason]])
    pieces: list[str] = []
    findings: list[Finding] = []
    last = 0
    for start, end, reasons in merged:
        pieces.append(text[last:start])
        removed = " ".join(text[start:end].split())
        findings.append(Finding(reason=",".join(reasons), text=removed[:MAX_FINDING_CHARS], where=where))
        last = end
    pieces.append(text[last:])
    kept = "".join(pieces)
    kept = re.sub(r"[ \t]+\n", "\n", re.sub(r"\n{3,}", "\n\n", kept)).strip()
    return kept, findings


__all__ = ["Finding", "find_injections", "fold", "is_injection", "strip_injections"]
