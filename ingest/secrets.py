"""What a secret looks like in page text: a vendor's key format (`sk-…`, `ghp_…`, `AKIA…`), a
credential after `Bearer` / `Token` / `Basic`, and a long run of token characters that reads as
random (high entropy, mixed classes, no words in it) or as a hex key in a key's context. The
scrubber (ingest/clean.py) replaces what `find_secrets` finds with `[secret]`; anchors, headings
and identifiers that only look long ("OAuth2PasswordRequestForm--source--__span-0-4") are kept.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

SECRET_TOKEN = "[secret]"

Span = tuple[int, int, str]
"""(start, end, the token that replaces it), as every detector of ingest/clean.py yields."""


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    length = len(text)
    return -sum(n / length * math.log2(n / length) for n in counts.values())


def has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def mixed_classes(token: str) -> bool:
    return has_digit(token) and any(c.isupper() for c in token) and any(c.islower() for c in token)


# Vendor formats in one pattern (one scan of the text instead of one per vendor). Groups whose
# format could also be an ordinary hyphenated word must contain a digit to count
# ("sk-learn-style-long-phrase" has none; a real key does).
_KNOWN_TOKENS = re.compile(
    r"""
    \b(?P<aws>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16})\b
    | \b(?P<openai>sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}+)
    | \b(?P<stripe>[rs]k_(?:live|test)_[A-Za-z0-9]{16,}+)
    | \b(?P<github>gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+)
    | \b(?P<gitlab>glpat-[A-Za-z0-9_-]{20,}+)
    | \b(?P<slack>xox[abposr]-[A-Za-z0-9-]{10,}+)
    | \b(?P<google>AIza[0-9A-Za-z_-]{35})
    | \b(?P<jwt>eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+)
    | (?P<private_key>-----BEGIN[A-Z\ ]{0,30}PRIVATE\ KEY-----[\s\S]*?-----END[A-Z\ ]{0,30}PRIVATE\ KEY-----)
    """,
    re.VERBOSE,
)
_NEEDS_A_DIGIT = {"openai", "slack"}
# Only the credential after "Bearer" is secret; the word stays so the text still reads.
_BEARERS = [(word, re.compile(word + r"\s+([A-Za-z0-9._~+/-]{16,}+=*+)")) for word in ("Bearer", "Token", "Basic")]
_WORD_CHAR = re.compile(r"\w")
# Long runs of key-like characters; a run of hex digits is judged as hex, others as base64.
# Long runs of key-like characters, found without look-around (so a character class leads the
# search, which is fast); `_token_runs` checks the run's two edges.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}+={0,2}+")
_TOKEN_EDGE = re.compile(r"[\w/+=-]")
_HEX = re.compile(r"[0-9a-fA-F]+")
# Digests named as such ("sha256:…", "md5=…", "commit …") are checksums, not credentials. Not
# widened to quoted labels (`{sha256 = '…'}`): in a page's markup a quote or a tag may stand
# between label and digest, and the raw-HTML cache, scrubbed as markup, must hold what the index
# holds (a re-parse would re-embed what differs).
_DIGEST_LABEL = re.compile(
    r"(?:sha\d*|md5|blake2[bs]?|digest|checksum|commit|hash)[\s:=#-]*$", re.IGNORECASE
)


def _looks_random_base64(token: str) -> bool:
    body = token.rstrip("=")
    return mixed_classes(body) and "//" not in body and shannon_entropy(body) >= 4.2 \
        and not _reads_as_words(body)


# Words and identifiers joined into one run ("403-Authentifizierungsfehler-Statuscodes",
# "OAuth2PasswordRequestForm--source--__span-0-4": headings and anchor ids on documentation)
# are not keys. A run reads as words when each of its pieces is made of humps (an optional
# short capital run, then lower case; a capital run; a short number), most letters are lower
# case, the lower-case runs are long (4 letters or more on average) and pronounceable (vowels,
# no four consonants without one), and no digit sits inside a word. Of 3 million random
# base64 runs of 32 characters 11 pass, of 40 characters none.
_WORD_PIECES = re.compile(r"[-_./+=]+")
# Each hump is atomic: a capital run of 26 before a long number tried every split of the capitals
# (exponential). Taken greedily, a hump is never split another way, so the test is linear.
_HUMPS = re.compile(r"(?>[A-Z]{0,5}[a-z]{2,}|[A-Z]{1,5}(?![a-z])|[0-9]{1,4}(?![0-9]))++")
_LOWER_RUN = re.compile(r"[a-z]+")
_DIGIT_INSIDE_A_WORD = re.compile(r"[a-zA-Z][0-9]++[a-z]")
_VOWELS = frozenset("aeiouy")


def _reads_as_words(token: str) -> bool:
    if _DIGIT_INSIDE_A_WORD.search(token):
        return False
    pieces = [piece for piece in _WORD_PIECES.split(token) if piece]
    if not pieces or not all(_HUMPS.fullmatch(piece) for piece in pieces):
        return False
    # A placeholder in capitals ("example_package_YOUR_USERNAME_HERE-0.0.1") is words too: such a
    # piece faces the tests below in lower case, so a random capital run ("QXZTK") still fails.
    token = " ".join(piece.lower() if len(piece) >= 3 and piece.isalpha() and piece.isupper() else piece
                     for piece in pieces)
    letters = [c for c in token if c.isalpha()]
    if sum(c.islower() for c in letters) < 0.7 * len(letters):
        return False
    runs = _LOWER_RUN.findall(token)
    lower = "".join(runs)
    if len(lower) < 4 * len(runs) or sum(c in _VOWELS for c in lower) < 0.3 * len(lower):
        return False
    return not any(len(run) >= 4 and _VOWELS.isdisjoint(run) for run in runs)


def _looks_like_a_hex_key(token: str, preceding: str) -> bool:
    return shannon_entropy(token) >= 3.0 and not _DIGEST_LABEL.search(preceding)


# Every vendor format starts with one of these (`_known_tokens` tries the pattern only there).
_KNOWN_TOKEN_PREFIXES = (
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "sk-", "sk_", "rk_",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "AIza", "eyJ",
    "-----BEGIN",
)  # fmt: skip


# Where those prefixes occur, found by one scan per leading literal: cheaper than 22 substring
# searches of the page (~2.7 ms on a 170 kB one). Each pattern consumes no more than a prefix's
# own start that cannot begin another prefix, so no occurrence is skipped
# (tests/test_clean.py checks them against the prefixes).
_KNOWN_TOKEN_STARTS = tuple(re.compile(pattern) for pattern in (
    r"A(?=KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA|Iza)", r"sk(?=[-_])", r"rk_", r"g(?=h[pousr]_|ithub_pat_|lpat-)",
    r"xo(?=x)", r"eyJ", r"-----BEGIN",
))  # fmt: skip


def _known_token_starts(text: str) -> list[int]:
    """Every position where one of `_KNOWN_TOKEN_PREFIXES` occurs, in order."""
    return sorted({match.start() for pattern in _KNOWN_TOKEN_STARTS for match in pattern.finditer(text)})


def _known_tokens(text: str) -> Iterator[re.Match[str]]:
    """`_KNOWN_TOKENS.finditer(text)`, tried only where one of the formats' prefixes occurs.

    Every alternative of the pattern starts with one of `_KNOWN_TOKEN_PREFIXES`, so a match can
    start nowhere else; the earliest match at or after the previous one's end is what finditer
    returns too. The scan itself tries nine alternatives (and a word boundary) at every position:
    ~40 ms on a 140 kB page, which "sk-" in every "task-" made it run on most documentation."""
    end = 0
    for start in _known_token_starts(text):
        if start < end:
            continue
        match = _KNOWN_TOKENS.match(text, start)
        if match is not None:
            end = match.end()
            yield match


def find_secrets(text: str) -> Iterator[Span]:
    for match in _known_tokens(text):
        if match.lastgroup not in _NEEDS_A_DIGIT or has_digit(match.group()):
            yield match.start(), match.end(), SECRET_TOKEN
    credentials = [
        match for word, pattern in _BEARERS if word in text  # each starts with its word: a fast search
        for match in pattern.finditer(text)
        if not (match.start() and _WORD_CHAR.match(text, match.start() - 1))  # not inside a longer word
    ]
    for match in sorted(credentials, key=lambda m: m.start()):
        if has_digit(match.group(1)):
            yield match.start(1), match.end(1), SECRET_TOKEN
    for match in _TOKEN_RUN.finditer(text):
        start, end = match.span()
        if (start and _TOKEN_EDGE.match(text, start - 1)) or (end < len(text) and _TOKEN_EDGE.match(text, end)):
            continue  # part of a longer word, path or run
        token = match.group()
        if _HEX.fullmatch(token):
            secret = _looks_like_a_hex_key(token, text[max(0, match.start() - 16) : match.start()])
        else:
            secret = _looks_random_base64(token)
        if secret:
            yield match.start(), match.end(), SECRET_TOKEN
