"""Cleaning of extracted text before it is indexed: Unicode and whitespace normalisation,
scrubbing of e-mail addresses, phone numbers, secrets and card numbers (a tenant's `clean`
config chooses which: README.md, "Configuration"; what a secret looks like is
``ingest/secrets.py``), and removal of prompt injection (``ingest/injection.py``) from everything
a page's Document indexes or stores.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from urllib.parse import unquote, urlsplit

import msgspec

from ingest.document import Action, Document, Form, Section
from ingest.facts.render import is_organization_type
from ingest.injection import Finding, is_injection, strip_injections
from ingest.secrets import Span, find_secrets, has_digit, mixed_classes
from store.config import CleanSettings

EMAIL_TOKEN = "[email]"
PHONE_TOKEN = "[phone]"
CARD_TOKEN = "[card]"
ACCOUNT_TOKEN = "[account]"

# ---------------------------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------------------------

# NFKC folds these into plain digits, which changes numbers: "1⅔ cups" would become
# "12⁄3 cups" and "10²" would become "102". They are left exactly as written.
_NFKC_PROTECTED = re.compile(r"[\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u209f\u2150-\u215f\u2189]+")

# Invisible characters that carry no meaning in indexed text (zero-width space, word joiner,
# BOM, soft hyphen, Mongolian vowel separator, bidi embeddings and isolates, which can also
# disguise text). ZWJ and ZWNJ (U+200C/U+200D) are kept: Persian, Indic scripts and emoji
# sequences need them.
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
# C0/C1 control characters other than tab and newline (handled as whitespace).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile("\r\n?|[\u2028\u2029\x85]")
_HORIZONTAL_SPACE = re.compile(r"[^\S\n]+")
_LEADING_SPACE = re.compile(r"^[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalise_unicode(text: str) -> str:
    """NFKC everywhere except around vulgar fractions and super/subscripts (see above)."""
    if text.isascii():
        return text
    if not _NFKC_PROTECTED.search(text):
        return unicodedata.normalize("NFKC", text)
    pieces: list[str] = []
    last = 0
    for match in _NFKC_PROTECTED.finditer(text):
        pieces.append(unicodedata.normalize("NFKC", text[last : match.start()]))
        pieces.append(match.group())
        last = match.end()
    pieces.append(unicodedata.normalize("NFKC", text[last:]))
    return "".join(pieces)


def normalise_whitespace(text: str) -> str:
    """Collapse spaces within lines, keep single line breaks and one blank line per paragraph.

    Indentation at the start of a line is kept (tabs become four spaces): extracted prose has
    none, and in code blocks it carries meaning. The text as a whole is stripped.
    """
    lines = []
    for line in text.split("\n"):
        indent_match = _LEADING_SPACE.match(line)
        indent = indent_match.group().replace("\t", "    ") if indent_match else ""
        body = _HORIZONTAL_SPACE.sub(" ", line.strip())
        lines.append(indent + body if body else "")
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def normalise_text(text: str) -> str:
    text = _LINE_BREAKS.sub("\n", text)
    text = _CONTROL.sub("", _INVISIBLE.sub("", text))
    text = normalise_unicode(text)
    # NFKC can turn a compatibility character into a control or invisible one; sweep again.
    text = _CONTROL.sub("", _INVISIBLE.sub("", text))
    return normalise_whitespace(text)


# ---------------------------------------------------------------------------------------------
# Detectors: each yields (start, end, replacement) spans over the normalised text
# ---------------------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.%+-])[\w.%+-]{1,64}@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+([^\W\d_]{2,24})(?![\w@-])"
)
# "logo@2x.png" is an image name, not an address.
_FILE_SUFFIXES = {"png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff"}


_LOCAL_PART_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.%+-")


def _find_emails(text: str) -> Iterator[Span]:
    # Each address holds exactly one "@": the pattern is tried where its local part would start
    # before each "@", not at every character of the text.
    at = text.find("@")
    while at != -1:
        start = at
        while start > 0 and at - start <= 64 and (text[start - 1] in _LOCAL_PART_CHARS or
                                                   (text[start - 1].isalnum() and not text[start - 1].isascii())):
            start -= 1
        match = _EMAIL.match(text, start) if 0 < at - start <= 64 else None
        if match is not None and match.group(1).lower() not in _FILE_SUFFIXES:
            yield match.start(), match.end(), EMAIL_TOKEN
        at = text.find("@", at + 1)


# Phone numbers: deliberately narrow shapes, so that versions (3.11.2), dates, times, years,
# prices, ISBNs, IP addresses and ids inside URLs stay untouched.
_PHONE = re.compile(
    r"""
    # International: +44 20 7946 0958, +1 (415) 555-2671, +49-30-1234567, +14155552671.
    (?<![\w+/=\#&%-])\+\d{1,3}+(?:[\ .-]?\(\d{1,4}\))?+(?:[\ .-]?\d{1,5}+){1,6}+(?![\w/]|[.-]\d)
    # North American: (415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671.
    | (?<![\w/=\#&%.-])(?:\(\d{3}\)\ ?|\d{3}[\ .-])\d{3}[\ .-]\d{4}(?![\w/]|[.-]\d)
    # European national format with a trunk 0: 020 7946 0958, 030 1234567, 06 12 34 56 78,
    # 089 / 45 67 12 30.
    | (?<![\w/=\#&%.-])0\d{1,4}+(?:\ /\ |[\ /.-])\d{2,8}+(?:[\ /.-]\d{2,8}+){0,3}+(?![\w/]|[.-]\d)
    # Brazilian: (11) 97452-3816.
    | (?<![\w/=\#&%.-])\(\d{2}\)\ ?\d{4,5}-\d{4}(?![\w/]|[.-]\d)
    """,
    re.VERBOSE,
)
_DATE_LIKE = re.compile(r"^\d{1,4}[./-]\d{1,2}[./-]\d{1,4}$")
_ISBN_CONTEXT = re.compile(r"(?:ISBN|ISSN|DOI)[-:\s\d]*$", re.IGNORECASE)


def _digit_count(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


def _is_phone(candidate: str, preceding: str) -> bool:
    digits = _digit_count(candidate)
    if candidate.startswith("+"):
        return 8 <= digits <= 15
    if _DATE_LIKE.match(candidate) or _ISBN_CONTEXT.search(preceding):
        return False
    return 9 <= digits <= 13


# Every phone number and card number lies inside a run of these characters, and a run is found
# far faster than the patterns (a character class leads it): the patterns run on the runs alone,
# seeing the text around them for their look-behind and look-ahead.
_NUMBER_RUN = re.compile(r"[0-9][0-9 ().+/-]{6,}")


def _number_runs(text: str, min_digits: int) -> Iterator[tuple[int, int]]:
    for start, end, digits in _digit_runs(text):
        if digits >= min_digits:
            yield start, end


@functools.lru_cache(maxsize=2)
def _digit_runs(text: str) -> tuple[tuple[int, int, int], ...]:
    """Every run of `_NUMBER_RUN` with 8 digits or more (the fewest a detector asks for), and
    their count: found once per text for both the phone and the card detector."""
    runs = []
    for run in _NUMBER_RUN.finditer(text):
        digits = sum(map(run.group().count, "0123456789"))
        if digits >= 8:
            start = run.start()
            while start and text[start - 1] in "+(" and run.start() - start < 2:
                start -= 1  # "+1 …", "(415) …": the run starts at its first digit
            runs.append((start, run.end(), digits))
    return tuple(runs)


def _find_phones(text: str) -> Iterator[Span]:
    for start, end in _number_runs(text, 8):
        for match in _PHONE.finditer(text, start, min(len(text), end + 1)):
            if _is_phone(match.group(), text[max(0, match.start() - 24) : match.start()]):
                yield match.start(), match.end(), PHONE_TOKEN


_CARD = re.compile(r"(?<![\w.,/=#-])[2-6]\d{3}(?:[ -]?\d){9,15}(?![\w]|[.,-]\d)")


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _find_cards(text: str) -> Iterator[Span]:
    matches = (m for start, end in _number_runs(text, 13) for m in _CARD.finditer(text, start, min(len(text), end + 1)))
    for match in matches:
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 1:
            yield match.start(), match.end(), CARD_TOKEN


# A bank account number (IBAN) whose check digits hold: "DE94 1180 4938 8302 9874 77".
_IBAN = re.compile(r"\b([A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b")
_IBAN_HINT = re.compile(r"[A-Z]{2}\d{2}[ ]?[A-Z0-9]{4}")


def iban_valid(iban: str) -> bool:
    compact = iban.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _find_ibans(text: str) -> Iterator[Span]:
    # Every IBAN holds a run of 8 digits or more, which the phone and card detectors find anyway
    # (`_digit_runs`, remembered): the pattern is tried only just before and inside those.
    end = 0
    hints = (hint for run_start, run_end, _ in _digit_runs(text)
             for hint in _IBAN_HINT.finditer(text, max(0, run_start - 16), min(len(text), run_end + 4)))
    for hint in hints:
        if (hint.start() < end or (hint.start() and text[hint.start() - 1].isalnum())
                or (match := _IBAN.match(text, hint.start())) is None):
            continue
        end = match.end()
        candidate = match.group(1).rstrip()
        if iban_valid(candidate):
            yield match.start(1), match.start(1) + len(candidate), ACCOUNT_TOKEN


# An address written to dodge scrapers: "tomas.berger [at] klimatech [dot] de", "info(at)shop(dot)com".
_AT_WORD = r"(?:at|arroba|chiocciola|klammeraffe|snabel-a|małpa|malpa)"
_DOT_WORD = r"(?:dot|punto|punkt|point|ponto|punt|kropka)"
_OBFUSCATED_EMAIL = re.compile(
    rf"(?<![\w.])[\w.+-]{{1,64}}\s*(?:[\[({{]{_AT_WORD}[\])}}]|\s\[?at\]?\s)\s*[\w-]{{1,63}}"
    rf"(?:\s*(?:[\[({{]{_DOT_WORD}[\])}}]|\s\[?{_DOT_WORD}\]?\s|\.)\s*[\w-]{{1,63}}){{1,4}}", re.I)


_AT_WRITTEN_OUT = re.compile(rf"[\[({{]{_AT_WORD}[\])}}]", re.I)


def _find_obfuscated_emails(text: str) -> Iterator[Span]:
    if _AT_WRITTEN_OUT.search(text) is None:
        return
    for match in _OBFUSCATED_EMAIL.finditer(text):
        if _AT_WRITTEN_OUT.search(match.group()):
            yield match.start(), match.end(), EMAIL_TOKEN


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_+/=-]{16,}")
_HEX_TOKEN = re.compile(r"[0-9a-fA-F]{16,}")


def looks_secret(value: str) -> bool:
    """Whether a short value (a hidden form field's, say) is a credential, a random token or
    personal data: what the scrubber's detectors find, and strings of 16 or more token
    characters that are hex or mix upper case, lower case and digits. SKUs ("BRD-SOURDOUGH-01")
    and slugs ("sourdough-loaf-800g") are neither."""
    value = value.strip()
    if not value:
        return False
    if scrub(value, CleanSettings()) != value:
        return True
    if _TOKEN_CHARS.fullmatch(value) is None:
        return False
    return (_HEX_TOKEN.fullmatch(value) is not None and has_digit(value)) or mixed_classes(value)


# ---------------------------------------------------------------------------------------------
# Scrubbing
# ---------------------------------------------------------------------------------------------


def _detectors(settings: CleanSettings) -> list[Callable[[str], Iterator[Span]]]:
    # Order is priority: a secret's digits must not be half-claimed by the phone detector.
    chosen: list[Callable[[str], Iterator[Span]]] = []
    if settings.scrub_secrets:
        chosen.append(find_secrets)
    if settings.scrub_cards:
        chosen.append(_find_cards)
        chosen.append(_find_ibans)
    if settings.scrub_emails:
        chosen.append(_find_emails)
        chosen.append(_find_obfuscated_emails)
    if settings.scrub_phones:
        chosen.append(_find_phones)
    return chosen


def scrubs_anything(settings: CleanSettings) -> bool:
    """Whether the settings scrub anything at all (every detector may be switched off)."""
    return bool(_detectors(settings))


def _allowed_spans(text: str, allow: list[str]) -> list[tuple[int, int]]:
    spans = []
    for allowed in allow:
        needle = normalise_text(allowed)
        if not needle:
            continue
        start = text.find(needle)
        while start != -1:
            spans.append((start, start + len(needle)))
            start = text.find(needle, start + 1)
    return spans


def _touches_a_token(text: str, start: int, end: int) -> bool:
    """Whether a match is glued to a placeholder ("[email]+4912345678").

    Before scrubbing, the character there was part of the replaced item and so blocked the
    match; ignoring it now keeps a second cleaning from finding something the first did not.
    """
    return (start > 0 and text[start - 1] == "]") or (end < len(text) and text[end] == "[")


def _is_allowed(
    start: int, end: int, text: str, allowed: list[tuple[int, int]], allow_digits: set[str], token: str
) -> bool:
    if any(a_start <= start and end <= a_end for a_start, a_end in allowed):
        return True
    if token != PHONE_TOKEN:
        return False
    # "+1 555 123 4567" is the allow-listed "555-123-4567" written differently, and "(207) 555-0148"
    # the allow-listed "+1-207-555-0148" without its country code.
    digits = re.sub(r"\D", "", text[start:end])
    return len(digits) >= 7 and any(digits.endswith(d) or d.endswith(digits) for d in allow_digits)


def scrub(text: str, settings: CleanSettings) -> str:
    """Replace personal data and secrets in already-normalised text with placeholder tokens.

    Repeated until nothing changes: a replacement changes its neighbours' context ("x@y.zz+1234…"
    shows a phone number only once the address is gone), and cleaning must be idempotent.
    """
    for _ in range(4):
        scrubbed = _scrub_once(text, settings)
        if scrubbed == text:
            break
        text = scrubbed
    return text


def _scrub_once(text: str, settings: CleanSettings) -> str:
    detectors = _detectors(settings)
    if not detectors or not text:
        return text
    allowed = _allowed_spans(text, settings.allow)
    allow_digits = {d for d in (re.sub(r"\D", "", a) for a in settings.allow) if len(d) >= 7}
    taken: list[Span] = []
    for detector in detectors:
        for start, end, token in detector(text):
            if _touches_a_token(text, start, end):
                continue
            if any(start < t_end and t_start < end for t_start, t_end, _ in taken):
                continue
            if _is_allowed(start, end, text, allowed, allow_digits, token):
                continue
            taken.append((start, end, token))
    if not taken:
        return text
    taken.sort()
    pieces: list[str] = []
    last = 0
    for start, end, token in taken:
        pieces.append(text[last:start])
        pieces.append(token)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def clean_text(text: str, settings: CleanSettings) -> str:
    """Normalise Unicode and whitespace, then scrub PII and secrets per the tenant's settings."""
    if not text:
        return ""
    return scrub(normalise_text(text), settings)


# ---------------------------------------------------------------------------------------------
# The site's own contact points (clean.allow_site_contacts)
# ---------------------------------------------------------------------------------------------

# A contact page, by its address or its title: its tel:/mailto: links are the business's own.
_CONTACT_PATH = re.compile(
    r"(?:^|[/_.-])(?:contact|contacts|contact-?us|kontakt|contacto|contactenos|contatti|contato|contactez"
    r"|nous-contacter|impressum|get-in-touch|find-us|visit-us)(?:[/_.-]|$)",
    re.IGNORECASE,
)
_CONTACT_TITLE = re.compile(r"\b(?:contact|kontakt|contacto|contatti|contato|impressum)\b", re.IGNORECASE)
_CONTACT_KEYS = (("telephone", "phone"), ("faxNumber", "phone"), ("email", "email"))


def is_contact_page(doc: Document) -> bool:
    path = urlsplit(doc.canonical_url or doc.url).path
    return bool(_CONTACT_PATH.search(path) or _CONTACT_TITLE.search(doc.title))


def _contact_value(value: object, kind: str) -> str:
    """A published phone number or address as the allow-list keeps it ("" if it is not one)."""
    if not isinstance(value, str):
        return ""
    value = unquote(value.strip().split("?")[0])
    for scheme in ("mailto:", "tel:", "fax:"):
        if value.lower().startswith(scheme):
            value = value[len(scheme):].strip()
    if kind == "email":
        return value if "@" in value and len(value) <= 254 and " " not in value else ""
    return value if 7 <= _digit_count(value) <= 15 and len(value) <= 40 else ""


def site_contact_points(doc: Document) -> list[tuple[str, str]]:
    """The business's own phone numbers and e-mail addresses a page publishes, as (value, kind):
    those of its Organization / LocalBusiness structured data (and their contactPoint), and the
    tel:/mailto: links of a contact page."""
    found: dict[str, str] = {}
    for fact in doc.facts:
        if fact.kind != "fact" or not is_organization_type(fact.type):
            continue
        points = fact.data.get("contactPoint", [])
        items = [fact.data, *(p for p in (points if isinstance(points, list) else [points]) if isinstance(p, dict))]
        for item in items:
            for key, kind in _CONTACT_KEYS:
                values = item.get(key)
                for value in values if isinstance(values, list) else [values]:
                    if cleaned := _contact_value(value, kind):
                        found.setdefault(cleaned, kind)
    if is_contact_page(doc):
        for href in doc.contact_links:
            kind = "email" if href.lower().startswith("mailto:") else "phone"
            if cleaned := _contact_value(href, kind):
                found.setdefault(cleaned, kind)
    return list(found.items())


class _Cleaner:
    """Cleans every text of one page that gets indexed or stored, and keeps what it takes out as
    prompt injection (``ingest/injection.py``) for the site owner."""

    def __init__(self, settings: CleanSettings, flags: list[Finding]) -> None:
        self.settings = settings
        self.flags = flags

    def text(self, text: str, where: str) -> str:
        """Normalised, scrubbed, and without passages that address an AI model."""
        kept, found = strip_injections(clean_text(text, self.settings), where)
        for finding in found:
            if finding.text.startswith("Image:"):
                finding = msgspec.structs.replace(finding, where=f"image alt ({where})" if where else "image alt")
            self.flags.append(finding)
        return kept

    def value(self, value: object, where: str) -> object:
        """Structured data (JSON-LD items, action parameters) with its strings cleaned, as stored
        in the file and handed to agents (MCP): scrubbed, and a string that carries an injection
        is dropped. Whitespace inside strings is left as it was."""
        if isinstance(value, str):
            if not value:
                return value
            kept, found = strip_injections(scrub(value, self.settings), where)
            self.flags.extend(found)
            return kept
        if isinstance(value, dict):
            return {key: self.value(item, where) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, where) for item in value]
        return value

    def name(self, name: str) -> bool:
        """Whether a field or action name is usable: it reads as no instruction to a model."""
        from ingest.actions import humanise_name  # ingest.actions imports this module

        if is_injection(humanise_name(name)):
            self.flags.append(Finding(reason="name", text=name[:200], where="form or action name"))
            return False
        return True

    def form(self, form: Form) -> Form | None:
        fields = []
        for field in form.fields:
            if not self.name(field.name):
                continue
            options = tuple(o for o in (self.text(o, "form") for o in field.options) if o)
            fields.append(msgspec.structs.replace(field, label=self.text(field.label, "form"), options=options))
        if not fields:
            return None
        return msgspec.structs.replace(form, name=self.text(form.name, "form"), fields=tuple(fields))

    def action(self, action: Action) -> Action | None:
        if not self.name(action.name):
            return None
        return msgspec.structs.replace(
            action,
            label=self.text(action.label, "action"),
            description=self.text(action.description, "action"),
            params=self.value(action.params, "action"),
        )


def clean_actions(actions: list[Action], settings: CleanSettings,
                  where: str = "actions.json") -> tuple[list[Action], list[Finding]]:
    """Actions from a site's manifest, cleaned as a page's are; and what was taken out."""
    flags: list[Finding] = []
    cleaner = _Cleaner(settings, flags)
    kept = [a for a in (cleaner.action(action) for action in actions) if a is not None]
    return kept, [msgspec.structs.replace(f, where=f"{where}: {f.where}") for f in flags]


def clean_document(doc: Document, settings: CleanSettings) -> Document:
    """A copy of ``doc`` whose indexed and stored text (title, description, sections, facts,
    forms, actions, breadcrumbs) is cleaned: normalised, scrubbed per the tenant's settings, and
    rid of prompt injection, which lands in ``doc.flags``.

    Sections and facts left empty by cleaning are dropped.
    """
    flags = list(doc.flags)
    cleaner = _Cleaner(settings, flags)
    sections = []
    for section in doc.sections:
        path = tuple(h for h in (cleaner.text(h, "heading") for h in section.heading_path) if h)
        text = cleaner.text(section.text, " > ".join(path))
        if text:
            sections.append(Section(heading_path=path, text=text, kind=section.kind))
    facts = []
    for fact in doc.facts:
        text = cleaner.text(fact.text, f"structured data ({fact.type})")
        if text:
            data = cleaner.value(fact.data, f"structured data ({fact.type})")
            facts.append(msgspec.structs.replace(fact, text=text, data=data))
    return msgspec.structs.replace(
        doc,
        title=cleaner.text(doc.title, "title"),
        description=cleaner.text(doc.description, "description"),
        sections=sections,
        facts=facts,
        forms=[f for f in (cleaner.form(form) for form in doc.forms) if f is not None],
        actions=[a for a in (cleaner.action(action) for action in doc.actions) if a is not None],
        breadcrumbs=[c for c in (cleaner.text(b, "breadcrumbs") for b in doc.breadcrumbs) if c],
        flags=flags,
    )


__all__ = ["clean_document", "clean_text", "luhn_valid", "normalise_text", "scrub", "scrubs_anything"]
