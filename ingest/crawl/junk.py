"""Junk pages: generated page families (calendar and archive chains, endless query families,
faceted filters, near-duplicate templates) found while crawling and kept out of the index.

Two signals, both gathered as the crawl goes:

- **URL families.** A URL's family is its host and path with the variable parts abstracted
  (digit runs become ``{n}``, dates ``{date}``) plus whether it has a query string:
  ``/events/2026/07/`` and ``/events/2026/08/`` are one family, every ``/shop?color=…&size=…``
  another. A family whose variable part is a date (a path date, a ``month=`` / ``date=``
  parameter) is a calendar family.
- **Content.** Each fetched page's main text (digits, month and weekday names abstracted, so a
  month page differs from the next only where it says something new) becomes a set of word
  3-gram hashes. A family member that adds almost nothing to what earlier members of its family
  (and, for a query family, the page without the query) already said is a near-duplicate.

A family becomes junk once at least ``VERDICT_DUPLICATES`` of its members are near-duplicates
and they are at least ``VERDICT_SHARE`` of the members compared. From then on its URLs are
refused before they are fetched, its near-duplicate members are left out (and taken out again
if they were indexed before the verdict); a calendar family loses its first member too, since
one generated month is no more "the" page than another. Members with text or structured facts
of their own stay. Legitimate families (paginated docs, dated blog posts, ``?id=`` pages) say
something new on every page and never reach a verdict.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

import numpy as np

from ingest.crawl.urls import split_url
from ingest.document import Document
from store.pages import JunkUrl as JunkRecord

#: A member adds nothing new when fewer of its 3-gram shingles than this (or than
#: ``NOVEL_SHARE`` of them) are new to its family: a generated month page adds 0-3.
MIN_NOVEL_SHINGLES = 12
NOVEL_SHARE = 0.05
#: Near-duplicate members, and their share of the members compared, that make a family junk.
VERDICT_DUPLICATES = 3
VERDICT_SHARE = 0.7
#: Shingles kept per page: the smallest hashes (a bottom-k sketch), so pages of any length
#: compare on a common hash range; a thin page keeps all of its shingles.
SKETCH_SIZE = 2048
#: Members whose shingles a family keeps as its baseline; a family still undecided after this
#: many is saying new things and needs no more evidence.
FAMILY_BASELINE_MEMBERS = 64
#: One-of-a-kind pages remembered as possible parents of query families, and the shingles kept
#: of each (a smaller sketch: memory stays ~2 KB a page).
MAX_PARENTS = 20_000
PARENT_SKETCH_SIZE = 512
#: URLs refused unfetched that are remembered for the record (the counts are always kept).
MAX_REFUSED_RECORDS = 5000

REASONS = {
    "calendar": "junk_calendar",  # a date in the URL: calendar and archive chains
    "query": "junk_query",  # query variants: faceted filters, endless ?page= / ?sort= families
    "template": "junk_template",  # near-duplicate pages of one numbered template
}

_HASH_SPACE = 1 << 32
_DIGITS = re.compile(r"\d+")
_HEX_ID = re.compile(r"^(?=[0-9a-f-]*\d)(?=[0-9a-f-]*[a-f])[0-9a-f-]{16,}$", re.IGNORECASE)
_YEAR = re.compile(r"^(19|20)\d\d$")
_DATE_SEGMENT = re.compile(r"^(19|20)\d\d[-_.]?(0?[1-9]|1[0-2])([-_.]?(0?[1-9]|[12]\d|3[01]))?$")
_SMALL_NUMBER = re.compile(r"^\d{1,2}$")
_DATE_VALUE = re.compile(r"(?<!\d)(19|20)\d\d[-/._]?(0[1-9]|1[0-2])(?!\d)|^(19|20)\d\d$")
_DATE_PARAMS = frozenset(
    """date day days month months year years week weeks yr y m d ym ymd when cal calendar
    from to start end since until period time""".split()  # noqa: SIM905
)
_WORD = re.compile(r"\w+")
# Month and weekday names (en, de, es, fr) read as one token: generated pages differ in them.
_CALENDAR_WORDS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday mon tue tues wed thu thur thurs fri sat sun januar februar märz juni juli
    oktober dezember montag dienstag mittwoch donnerstag freitag samstag sonntag enero febrero
    marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre lunes martes
    miércoles jueves viernes sábado domingo janvier février mars avril mai juin juillet août
    septembre octobre novembre décembre lundi mardi mercredi jeudi vendredi samedi
    dimanche""".split()  # noqa: SIM905
)  # fmt: skip


@dataclass(frozen=True)
class UrlFamily:
    """Which family a URL belongs to."""

    key: str
    """Host, path template and query marker: ``example.com/events/{date}/{date}/``."""
    kind: str
    """``calendar`` (a date varies), ``query`` (the query varies) or ``template`` (a number)."""
    parent: str | None
    """For a query URL: the same URL without its query, whose text the family builds on."""
    params: tuple[str, ...] = ()


def url_family(url: str) -> UrlFamily | None:
    """The family of a URL, or None for a URL with nothing variable in it (no digit, no query):
    such a page is one of a kind."""
    split = split_url(url)
    if split is None:
        return None
    scheme, host, port, path, query = split
    if not query and not any(char.isdigit() for char in path):
        return None
    dated = False
    segments = path.split("/")
    template: list[str] = []
    after_year = False
    for segment in segments:
        if not segment:
            template.append(segment)
            continue
        plain = unquote(segment)
        if _YEAR.match(plain) or _DATE_SEGMENT.match(plain) or (after_year and _SMALL_NUMBER.match(plain)):
            template.append("{date}")
            dated = True
            after_year = True
            continue
        after_year = False
        if _HEX_ID.match(plain):
            template.append("{id}")
        else:
            template.append(_DIGITS.sub("{n}", segment))
    names: list[str] = []
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        name = unquote(name).lower()
        names.append(name)
        if name in _DATE_PARAMS or _DATE_VALUE.search(unquote(value)):
            dated = True
    netloc = host if port is None else f"{host}:{port}"
    key = f"{netloc}{'/'.join(template)}" + ("?" if query else "")
    if query:
        kind = "calendar" if dated else "query"
        parent = f"{scheme}://{netloc}{path}"
    else:
        kind = "calendar" if dated else "template"
        parent = None
    return UrlFamily(key=key, kind=kind, parent=parent, params=tuple(sorted(set(names))))


class Fingerprint:
    """A page's content for comparison: its shingle sketch and the hashes of its facts."""

    __slots__ = ("sketch", "ceiling", "size", "facts")

    def __init__(self, shingles: Iterable[int], facts: Iterable[int], keep: int = SKETCH_SIZE) -> None:
        unique = np.unique(np.fromiter(shingles, dtype=np.uint32))
        self.size = int(unique.size)
        self.sketch = unique[:keep]
        # Every shingle below the ceiling is in the sketch: comparisons use that range only.
        self.ceiling = int(self.sketch[-1]) + 1 if unique.size > keep else _HASH_SPACE
        self.facts = frozenset(facts)

    def trimmed(self, keep: int) -> Fingerprint:
        """The same page with a smaller sketch."""
        if self.sketch.size <= keep:
            return self
        smaller = Fingerprint((), self.facts)
        smaller.size, smaller.sketch = self.size, self.sketch[:keep]
        smaller.ceiling = int(smaller.sketch[-1]) + 1
        return smaller


def fingerprint(doc: Document) -> Fingerprint:
    """The fingerprint of a page's main text, headings and structured facts."""
    parts = [doc.title]
    for section in doc.sections:
        if section.heading_path:
            parts.append(section.heading_path[-1])
        parts.append(section.text)
    parts.extend(fact.text for fact in doc.facts)
    words = [_token(word) for word in _WORD.findall(" ".join(parts).lower())]
    if len(words) < 3:
        shingles: Iterable[int] = (hash(word) & 0xFFFFFFFF for word in words)
    else:
        shingles = (hash((a, b, c)) & 0xFFFFFFFF for a, b, c in zip(words, words[1:], words[2:], strict=False))
    # Raw fact text (prices, names, dates as written): a page with a fact of its own is content.
    facts = (hash(fact.text) for fact in doc.facts if fact.text)
    return Fingerprint(shingles, facts)


def _token(word: str) -> str:
    if word in _CALENDAR_WORDS:
        return "@"
    return word if word.isalpha() else _DIGITS.sub("0", word)


def novel_shingles(page: Fingerprint, baseline: np.ndarray, ceiling: int) -> int:
    """Estimated shingles of ``page`` that are not in ``baseline`` (a sorted uint32 array
    complete below ``ceiling``)."""
    if page.size == 0:
        return 0
    limit = min(page.ceiling, ceiling)
    sample = page.sketch[page.sketch < limit] if limit < _HASH_SPACE else page.sketch
    if sample.size == 0:
        return page.size  # nothing comparable: do not call it a duplicate
    if baseline.size == 0:
        return page.size
    found = baseline[np.minimum(np.searchsorted(baseline, sample), baseline.size - 1)] == sample
    return round(np.count_nonzero(~found) / sample.size * page.size)


def is_near_duplicate(page: Fingerprint, baseline: np.ndarray, ceiling: int, facts: frozenset[int]) -> bool:
    """True when the page adds almost no text and no fact to the baseline."""
    if page.facts - facts:
        return False
    novel = novel_shingles(page, baseline, ceiling)
    return novel < MIN_NOVEL_SHINGLES or novel < NOVEL_SHARE * page.size


@dataclass
class _Member:
    url: str
    depth: int
    print: Fingerprint | None
    """Kept for the first FAMILY_BASELINE_MEMBERS members only (memory)."""
    duplicate: bool


@dataclass
class _Family:
    info: UrlFamily
    members: list[_Member] = field(default_factory=list)
    baseline: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    ceiling: int = _HASH_SPACE
    facts: frozenset[int] = frozenset()
    params: set[str] = field(default_factory=set)
    compared: int = 0
    duplicates: int = 0
    min_depth: int = 1 << 30
    max_depth: int = 0
    junk: bool = False

    @property
    def reason(self) -> str:
        return REASONS[self.info.kind]

    def detail(self) -> str:
        if not self.compared:
            return "judged junk by an earlier crawl"
        levels = self.max_depth - self.min_depth + 1
        chain = f", growing over {levels} link levels" if levels > 1 else ""
        params = f" (query parameters: {', '.join(sorted(self.params))})" if self.params else ""
        return f"{self.duplicates} of {self.compared} pages compared add no text of their own{params}{chain}"

    def add(self, member: _Member, page: Fingerprint) -> None:
        self.members.append(member)
        self.min_depth = min(self.min_depth, member.depth)
        self.max_depth = max(self.max_depth, member.depth)
        if len(self.members) > FAMILY_BASELINE_MEMBERS:
            return
        member.print = page
        self.baseline = np.union1d(self.baseline, page.sketch[page.sketch < self.ceiling])
        self.ceiling = min(self.ceiling, page.ceiling)
        if self.ceiling < _HASH_SPACE:
            self.baseline = self.baseline[self.baseline < self.ceiling]
        self.facts = self.facts | page.facts


@dataclass(frozen=True)
class Verdict:
    """What to do with a page just observed."""

    exclude: JunkRecord | None = None
    """Set when this page stays out of the index."""
    retract: tuple[JunkRecord, ...] = ()
    """Earlier members of the page's family, judged only now: take them out if indexed."""


class JunkDetector:
    """Groups a crawl's pages into URL families, compares each page with its family, and judges
    families junk (module docstring). Thread-safe: ``observe`` runs in worker threads beside
    extraction, ``refusal`` on the event loop as a frontier check."""

    def __init__(self, *, enabled: bool = True, exempt: Iterable[str] = ()) -> None:
        self.enabled = enabled
        # Pages indexed before (by an earlier crawl) are fetched and judged on their content,
        # never refused unseen: a family's verdict says nothing certain about one page in it.
        self._exempt = frozenset(exempt)
        self._families: dict[str, _Family] = {}
        self._junk_keys: set[str] = set()
        self._parents: dict[str, Fingerprint] = {}
        self._excluded: dict[str, JunkRecord] = {}
        self._refused: dict[str, JunkRecord] = {}
        self._refused_seen: set[str] = set()
        self._refused_counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def observe(self, url: str, depth: int, doc: Document) -> Verdict:
        """Compare a fetched page with its family; say whether it (and earlier members) stay out."""
        if not self.enabled:
            return Verdict()
        info = url_family(url)
        page = fingerprint(doc)
        with self._lock:
            if info is None:
                # A one-of-a-kind page; remembered in case query variants of it turn up.
                if len(self._parents) < MAX_PARENTS:
                    self._parents[url] = page.trimmed(PARENT_SKETCH_SIZE)
                return Verdict()
            return self._observe(url, depth, info, page)

    def _observe(self, url: str, depth: int, info: UrlFamily, page: Fingerprint) -> Verdict:
        family = self._families.get(info.key)
        if family is None:
            family = self._families[info.key] = _Family(info)
        family.params.update(info.params)
        parent = self._parents.get(info.parent) if info.parent else None
        duplicate = False
        if family.members or parent is not None:
            baseline, ceiling, facts = family.baseline, family.ceiling, family.facts
            if parent is not None:
                baseline = np.union1d(baseline, parent.sketch)
                ceiling = min(ceiling, parent.ceiling)
                facts = facts | parent.facts
            duplicate = is_near_duplicate(page, baseline, ceiling, facts)
            family.compared += 1
            family.duplicates += duplicate
        member = _Member(url, depth, None, duplicate)
        family.add(member, page)
        retract: tuple[JunkRecord, ...] = ()
        if not family.junk and self._is_junk(family):
            family.junk = True
            self._junk_keys.add(info.key)
            retract = tuple(self._record(family, m) for m in family.members[:-1] if self._leaves(family, m))
        exclude = self._record(family, member) if family.junk and self._leaves(family, member) else None
        return Verdict(exclude=exclude, retract=retract)

    @staticmethod
    def _is_junk(family: _Family) -> bool:
        return (family.duplicates >= VERDICT_DUPLICATES
                and family.duplicates >= VERDICT_SHARE * family.compared)

    @staticmethod
    def _leaves(family: _Family, member: _Member) -> bool:
        if member.duplicate:
            return True
        # A calendar's first month is generated like the rest; it goes too unless it carries
        # text or facts the others do not.
        first = family.members[0] is member
        if not first or family.info.kind != "calendar" or len(family.members) < 2 or member.print is None:
            return False
        others = [m.print for m in family.members[1:FAMILY_BASELINE_MEMBERS] if m.print is not None]
        ceiling = min(p.ceiling for p in others)
        baseline = np.unique(np.concatenate([p.sketch for p in others]))
        facts = frozenset().union(*(p.facts for p in others))
        return is_near_duplicate(member.print, baseline[baseline < ceiling], ceiling, facts)

    def _record(self, family: _Family, member: _Member) -> JunkRecord:
        record = JunkRecord(url=member.url, family=family.info.key, reason=family.reason,
                            detail=family.detail(), fetched=True)
        self._excluded[member.url] = record
        return record

    def presume(self, families: Mapping[str, str]) -> None:
        """Treat these families (key → reason) as junk from the start, as an earlier crawl judged
        them: their URLs are refused without being fetched again."""
        if not self.enabled:
            return
        kinds = {reason: kind for kind, reason in REASONS.items()}
        with self._lock:
            for key, reason in families.items():
                if reason in kinds:
                    family = self._families.setdefault(key, _Family(UrlFamily(key, kinds[reason], None)))
                    family.junk = True
                    self._junk_keys.add(key)

    def refusal(self, url: str) -> str | None:
        """A frontier check: the junk reason when the URL's family was judged junk, else None."""
        if not self._junk_keys:
            return None  # the common case, and no parsing for it
        info = url_family(url)
        if info is None or info.key not in self._junk_keys or url in self._exempt:
            return None
        with self._lock:
            family = self._families[info.key]
            family.params.update(info.params)
            if url not in self._refused_seen and url not in self._excluded:
                self._refused_seen.add(url)
                self._refused_counts[family.reason] += 1
                if len(self._refused) < MAX_REFUSED_RECORDS:
                    self._refused[url] = JunkRecord(
                        url=url, family=info.key, reason=family.reason,
                        detail="not fetched: " + family.detail(), fetched=False)
        return family.reason

    def excluded(self, url: str) -> JunkRecord | None:
        """Why a fetched page was judged junk (now or when its family was), or None."""
        return self._excluded.get(url)

    def records(self) -> list[JunkRecord]:
        """Every URL kept out so far: fetched and judged, then refused unfetched."""
        with self._lock:
            return [*self._excluded.values(), *self._refused.values()]

    def counts(self) -> dict[str, int]:
        """Distinct URLs kept out, by reason (refused URLs beyond the recorded ones included)."""
        with self._lock:
            counts = Counter(record.reason for record in self._excluded.values())
            counts.update(self._refused_counts)
            return dict(counts)
