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
from collections.abc import Iterable, Iterator

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
    | \b(?P<npm>npm_[A-Za-z0-9]{36})\b
    | \b(?P<huggingface>hf_[A-Za-z0-9]{30,}+)
    | \b(?P<shopify>shp(?:at|ss|ca|pa)_[A-Fa-f0-9]{32})\b
    | \b(?P<digitalocean>do[por]_v1_[a-f0-9]{64})\b
    | \b(?P<heroku>HRKU-[A-Za-z0-9_-]{20,}+)
    | \b(?P<postman>PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b
    | \b(?P<newrelic>NRAK-[A-Z0-9]{27})\b
    | \b(?P<sentry>sntry[us]_[A-Za-z0-9_=+/-]{30,}+)
    | \b(?P<atlassian>ATATT[A-Za-z0-9_=-]{30,}+)
    | \b(?P<square>EAAA[A-Za-z0-9_-]{50,}+)
    | \b(?P<mailgun>key-[a-f0-9]{32})\b
    | \b(?P<sendgrid>SG\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+)
    | \b(?P<pypi>pypi-AgE[A-Za-z0-9_-]{40,}+)
    | \b(?P<stripe_webhook>whsec_[A-Za-z0-9]{24,}+)
    | \b(?P<google_oauth>GOCSPX-[A-Za-z0-9_-]{20,}+|ya29\.[A-Za-z0-9_-]{20,}+)
    | \b(?P<databricks>dapi[a-f0-9]{32})\b
    """,
    re.VERBOSE,
)
_NEEDS_A_DIGIT = {"openai", "slack", "heroku", "sentry", "atlassian", "square", "sendgrid", "google_oauth"}
_NEEDS_MIXED_CASE = {"huggingface"}  # 34 letters, often without a digit
# Only the credential after "Bearer" is secret; the word stays so the text still reads.
_BEARERS = [(word, re.compile(word + r"\s+([A-Za-z0-9._~+/-]{16,}+=*+)")) for word in ("Bearer", "Token", "Basic")]
_WORD_CHAR = re.compile(r"\w")
# Long runs of key-like characters; a run of hex digits is judged as hex, others as base64.
# Long runs of key-like characters, found without look-around (so a character class leads the
# search, which is fast); `_token_runs` checks the run's two edges.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}+={0,2}+")
_TOKEN_EDGE = re.compile(r"[\w/+=-]")
_HEX = re.compile(r"[0-9a-fA-F]+")
# Digests named as such ("sha256:…", "md5=…", "commit …") are checksums, not credentials; so is a
# hex run with a digest's name in the 80 characters before it, markup left out (`_digest_named_before`:
# `{sha256 = '…'}`, "SHA-256 checksum for installer.msi:" above the digest), since the raw-HTML
# cache, scrubbed as markup, must hold what the index holds (a re-parse would re-embed what differs).
_DIGEST_LABEL = re.compile(
    r"(?:sha\d*|md5|blake2[bs]?|digest|checksum|commit|hash)[\s:=#-]*$", re.IGNORECASE
)


# A digest named a line or so before it: "SHA-256 checksum for installer.msi:\n<hex>", "$ md5sum
# backup.tar.gz\n<hex> backup.tar.gz".
_DIGEST_NEARBY = re.compile(r"\b(?:sha-?\d+\w*|md5\w*|blake2\w*|checksums?|digests?|hash(?:es)?)\b", re.IGNORECASE)
# What pages publish that looks random: data URIs ("data:image/png;base64,…"), subresource
# integrity ("sha384-…"), public SSH keys ("ssh-ed25519 AAAA…") and certificates or public keys
# between their PEM lines.
_PUBLIC_KEY_TYPE = re.compile(r"(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com)\s+$")
_PUBLIC_PEM = re.compile(r"-----BEGIN (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK)-----"
                         r"[\s\S]*?-----END (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK)-----")


_TAG = re.compile(r"<[^>]*>")


def _digest_named_before(text: str, start: int) -> bool:
    """Whether a digest's name comes within 80 characters before `start`, markup left out: the
    raw-HTML cache is scrubbed as markup and must keep what the index keeps."""
    return _DIGEST_NEARBY.search(_TAG.sub("", text[max(0, start - 400) : start])[-80:]) is not None


def _published(text: str, start: int, token: str, public_blocks: list[tuple[int, int]]) -> bool:
    """Whether a token run is what pages publish (see above); `public_blocks`: the spans of the
    text's certificates and public keys."""
    before = text[max(0, start - 40) : start]
    if before.endswith("base64,") or token.startswith(("sha256-", "sha384-", "sha512-")):
        return True
    if token.startswith("AAAA") and _PUBLIC_KEY_TYPE.search(before):
        return True
    return any(block_start < start < block_end for block_start, block_end in public_blocks)


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
# The formats added later, each with its literal start: found with plain searches, which cost far
# less than a pattern's scan each (and most pages hold none of them).
_LITERAL_TOKEN_STARTS = (
    "npm_", "hf_", "shpat_", "shpss_", "shpca_", "shppa_", "dop_v1_", "doo_v1_", "dor_v1_", "HRKU-", "PMAK-",
    "NRAK-", "sntrys_", "sntryu_", "EAAA", "key-", "SG.", "pypi-AgE", "whsec_", "GOCSPX-", "ya29.", "dapi",
)  # fmt: skip
_KNOWN_TOKEN_PREFIXES = (
    "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "sk-", "sk_", "rk_",
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "AIza", "eyJ",
    "-----BEGIN", "ATATT", *_LITERAL_TOKEN_STARTS,
)  # fmt: skip


# Where the older prefixes occur, found by one scan per leading literal: cheaper than 22 substring
# searches of the page (~2.7 ms on a 170 kB one). Each pattern consumes no more than a prefix's
# own start that cannot begin another prefix, so no occurrence is skipped
# (tests/test_clean.py checks them, with the literal starts, against the prefixes).
_KNOWN_TOKEN_STARTS = tuple(re.compile(pattern) for pattern in (
    r"A(?=KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA|Iza|TATT)", r"sk(?=[-_])", r"rk_", r"g(?=h[pousr]_|ithub_pat_|lpat-)",
    r"xo(?=x)", r"eyJ", r"-----BEGIN",
))  # fmt: skip


def _occurrences(text: str, literals: Iterable[str]) -> Iterator[int]:
    """Every position where one of `literals` starts in `text`, found with plain searches (far
    cheaper than a pattern scanned at every character)."""
    for literal in literals:
        at = text.find(literal)
        while at != -1:
            yield at
            at = text.find(literal, at + 1)


def _known_token_starts(text: str) -> list[int]:
    """Every position where one of `_KNOWN_TOKEN_PREFIXES` occurs, in order."""
    starts = {match.start() for pattern in _KNOWN_TOKEN_STARTS for match in pattern.finditer(text)}
    starts.update(_occurrences(text, _LITERAL_TOKEN_STARTS))
    return sorted(starts)


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


# A credential written as a value: `TWILIO_AUTH_TOKEN=a2bed2…`, `password: "hV3#pR8…"`, `api_key=Lj…`
# in a URL, `AccountKey=…;` in a connection string, `sessionid=…` in a cookie, `--access-token …`,
# "the password I set was Gl4cier!Moth-82", `postgres://app:Pa55word@db`. Only the value goes.
# Found from the name's key word (one scan), then read on from it: a lazy pattern tried at every
# character of a page cost ~28 ms a fastapi page.
#: A password named in the other languages frontdesk indexes most ("Passwort:", "contraseña:", "mot
#: de passe :", "senha:", "wachtwoord", "lösenord", "hasło").
_PASSWORD_WORDS = (r"passw(?:or)?d|passwd|pwd|passwort|kennwort|contrase[ñn]a|mot\s*de\s*passe|senha|wachtwoord"
                   r"|l[öo]senord|has[łl]o")
_KEY_WORD = re.compile(
    rf"api[_-]?key|apikey|secret|token|{_PASSWORD_WORDS}|access[_-]?key|accountkey|private[_-]?key"
    r"|sess(?:ion)?(?:[_-]?id)?|auth[_-]?key",
    re.IGNORECASE,
)
_PASSWORD_WORD = re.compile(_PASSWORD_WORDS, re.IGNORECASE)
_AFTER_NAME = re.compile(r"""[\w.-]*["']?[ \t]*(?:[:=]|=>|:=)[ \t]*["'`]?([^\s"'`,;&<>()\[\]{}]{6,})""")
_IN_PROSE = re.compile(
    rf"""(?:pass(?:code|phrase)?|{_PASSWORD_WORDS}|token|secret|api[_ -]?key|clave|chiave)\w*\b"""
    r"""(?:[^.\n]{0,40}?\b(?:is|was|are|es|era|ist|lautet|lautete|war|est|était|é|è|är|var|jest)\b[ \t]*[:"'“‘„«]?"""
    r"""[ \t]*([^\s"'”’“»,;]{6,})"""
    # The name, perhaps a few words, a colon: "Hasło do panelu administracyjnego: Zubr!Krakow2023".
    r"""|(?:[ \t]+[\w'’-]+){1,4}[ \t]*:[ \t]*([^\s"'”’“»,;]{6,})"""
    # The name and the value alone, when it is plainly one: "mot de passe R4v!oli_88".
    r"""|[ \t]+([^\s"'”’“»,;]*[!#%^&*?~][^\s"'”’“»,;]*))""", re.IGNORECASE)
#: `curl -u admin:Ms82!xPq`: the password of a user given on the command line.
_USER_FLAG = re.compile(r"""(?:^|\s)-u[ \t]+[^\s:'"]+:([^\s@'"]{4,})""")
_FLAG = re.compile(r"""--(?:auth-|access-|api-)?(?:token|key|password|secret)(?:=|[ \t]+)["']?([^\s"']{8,})""")
_USERINFO = re.compile(r"""://[^\s:/@'"]{1,64}:([^\s@/'"]{3,128})@""")
_PLACEHOLDER = re.compile(
    r"your|xxx|example|placeholder|changeme|redacted|here|\*\*\*|\.\.\.|…|[•●]|<|\{|^\$|\$[({]|%|environ|process\.env"
    r"|getenv"
    r"|dummy|sample|insert|replace|secret_?key|password|passwd|token|null|none|true|false|undefined|string|required",
    re.I,
)
_CREDENTIAL_SYMBOL = re.compile(r"[!@#%^*+=?~/]")


def _credential_like(value: str, short_ok: bool) -> bool:
    """Whether a value written after a credential's name is one: not a placeholder, a variable, a
    path or a word ("Annotated", "oauth2_scheme", "sha256"), but a run with symbols, or with
    letters and at least two digits, or (for a password) eight digits."""
    value = value.rstrip(".:")
    if len(value) < (6 if short_ok else 8) or _PLACEHOLDER.search(value) or value.startswith(("http", "/", "./", "~")):
        return False
    digits = sum(c.isdigit() for c in value)
    if digits == len(value):
        return short_ok and digits >= 8
    letters = sum(c.isalpha() for c in value)
    # A long random run, mixed case with a digit: a base64 password in a Kubernetes secret.
    random_run = len(value) >= 16 and digits >= 1 and value.lower() != value and value.upper() != value
    symbol = letters > 0 and _CREDENTIAL_SYMBOL.search(value) is not None
    return symbol or (digits >= 2 and letters >= 2) or random_run


# A US social security number, where the text says it is one.
_SSN = re.compile(
    r"(?:SSN|[Ss]ocial\s+[Ss]ecurity(?:\s+(?:[Nn]umber|[Nn]o\.?|#))?)\b[^\d\n]{0,20}(\d{3}-\d{2}-\d{4})\b")


# "api" alone is in every "fastapi": the key's own spellings are looked for.
_KEY_WORD_STARTS = ("api_key", "api-key", "apikey", "secret", "token", "pass", "pwd", "access_key", "access-key",
                    "accesskey", "accountkey", "private_key", "private-key", "privatekey", "sess", "auth_key",
                    "auth-key", "authkey", "kennwort", "contrase", "mot de passe", "motdepasse", "senha", "wachtwoord",
                    "lösenord", "losenord", "hasło", "haslo")


def _key_words(text: str) -> Iterator[re.Match[str]]:
    """`_KEY_WORD.finditer(text)`, tried only where one of its words starts (found in the lowered
    text with plain searches: an IGNORECASE alternation scanned at every character was the cost)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        yield from _KEY_WORD.finditer(text)
        return
    end = 0
    for start in sorted(set(_occurrences(lowered, _KEY_WORD_STARTS))):
        if start >= end and (match := _KEY_WORD.match(text, start)) is not None:
            end = match.end()
            yield match


def _keyed_credentials(text: str) -> Iterator[Span]:
    for at in sorted(set(_occurrences(text, ("SSN", "ocial security", "ocial Security")))):
        # "ocial…" begins one character into "Social": the pattern starts at its capital.
        if (ssn := _SSN.match(text, at if text.startswith("SSN", at) else at - 1)) is not None:
            yield ssn.start(1), ssn.end(1), SECRET_TOKEN
    found: list[tuple[re.Match[str], bool]] = []
    for word in _key_words(text):
        password = _PASSWORD_WORD.fullmatch(word.group()) is not None
        if (match := _AFTER_NAME.match(text, word.end())) is not None:
            found.append((match, password))
        # In prose the word stands alone: not the "Password" of `OAuth2PasswordBearer(tokenUrl=…)`.
        alone = not (word.start() and text[word.start() - 1].isalnum())
        if alone and (match := _IN_PROSE.match(text, word.start())) is not None:
            found.append((match, password))
    found += [(match, "password" in match.group()) for match in _FLAG.finditer(text)]
    found += [(match, True) for match in _USERINFO.finditer(text)]
    found += [(match, True) for match in _USER_FLAG.finditer(text)] if "-u" in text else []
    for match, short_ok in found:
        group = next(index for index in range(1, (match.re.groups or 1) + 1) if match.group(index) is not None)
        value = match.group(group)
        if text.startswith(("(", "["), match.end(group)):
            continue  # a call or a subscript: `password_hash = sha256(password)`
        if _credential_like(value, short_ok):
            yield match.start(group), match.start(group) + len(value.rstrip(".:")), SECRET_TOKEN


def find_secrets(text: str) -> Iterator[Span]:
    for match in _known_tokens(text):
        token = match.group()
        if match.lastgroup in _NEEDS_MIXED_CASE and not (any(c.isupper() for c in token[3:])
                                                         and any(c.islower() for c in token[3:])):
            continue
        if match.lastgroup not in _NEEDS_A_DIGIT or has_digit(token):
            yield match.start(), match.end(), SECRET_TOKEN
    credentials = [
        match for word, pattern in _BEARERS if word in text  # each starts with its word: a fast search
        for match in pattern.finditer(text)
        if not (match.start() and _WORD_CHAR.match(text, match.start() - 1))  # not inside a longer word
    ]
    for match in sorted(credentials, key=lambda m: m.start()):
        if has_digit(match.group(1)):
            yield match.start(1), match.end(1), SECRET_TOKEN
    yield from _keyed_credentials(text)
    public_blocks = [m.span() for m in _PUBLIC_PEM.finditer(text)] if "-----BEGIN" in text else []
    for match in _TOKEN_RUN.finditer(text):
        start, end = match.span()
        if (start and _TOKEN_EDGE.match(text, start - 1)) or (end < len(text) and _TOKEN_EDGE.match(text, end)):
            continue  # part of a longer word, path or run
        token = match.group()
        if _published(text, start, token, public_blocks):
            continue
        if _HEX.fullmatch(token):
            secret = _looks_like_a_hex_key(token, text[max(0, match.start() - 16) : match.start()])
            secret = secret and not _digest_named_before(text, start)
        else:
            secret = _looks_random_base64(token)
        if secret:
            yield match.start(), match.end(), SECRET_TOKEN
