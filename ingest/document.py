"""The Document: what extraction makes of one HTML page, and what chunking consumes.

Plain msgspec Structs with no behaviour, so every ingestion stage (extract, facts, actions,
clean, chunk) can be tested on its own and the pieces cross module boundaries as data.
"""

from __future__ import annotations

import msgspec

from ingest.injection import Finding

#: Chunk and section kinds, as stored in the tenant file (the CHECK in store/migrations.py).
KINDS = ("prose", "fact", "faq", "form", "action")
#: How a shown image's alt text opens its own block of a section's text ("Image: Banana Cue").
IMAGE_PREFIX = "Image: "


class Section(msgspec.Struct, frozen=True):
    """A run of main content under one heading path.

    ``text`` holds the section's blocks (paragraphs, list items, table rows as text)
    separated by blank lines, so the chunker can split along paragraph boundaries.
    """

    heading_path: tuple[str, ...]
    text: str
    kind: str = "prose"


class Fact(msgspec.Struct, frozen=True):
    """One structured-data item (JSON-LD, microdata or OpenGraph) from a page.

    ``text`` is the readable sentence that gets indexed ("Red Dress — $40, in stock");
    ``data`` is the normalised item kept as JSON. ``kind`` is ``fact`` or ``faq``.
    """

    type: str
    text: str
    data: dict = msgspec.field(default_factory=dict)
    kind: str = "fact"
    source: str = "json-ld"


class FormField(msgspec.Struct, frozen=True):
    name: str
    label: str = ""
    type: str = "text"
    required: bool = False
    options: tuple[str, ...] = ()
    value: str | None = None
    """A hidden field's value, which the form sends as it is (a product's SKU); None for other
    fields, and for a hidden value withheld as a secret (a CSRF token, session id or signature:
    an agent reads a fresh one from the live page)."""


class Form(msgspec.Struct, frozen=True):
    """A form on a page: what a visitor can submit, and where."""

    action: str
    method: str = "get"
    name: str = ""
    fields: tuple[FormField, ...] = ()


class Action(msgspec.Struct, frozen=True):
    """Something a visitor can do on the site: a ``data-action`` element or a manifest entry."""

    name: str
    label: str = ""
    selector: str = ""
    url: str = ""
    source: str = "data-action"  # data-action | manifest
    params: dict = msgspec.field(default_factory=dict)
    description: str = ""
    """What the action does, as the site describes it (actions.json ``description``)."""


class Document(msgspec.Struct):
    """Everything frontdesk keeps from one fetched HTML page."""

    url: str
    canonical_url: str
    title: str = ""
    description: str = ""
    lang: str = ""
    sections: list[Section] = msgspec.field(default_factory=list)
    facts: list[Fact] = msgspec.field(default_factory=list)
    forms: list[Form] = msgspec.field(default_factory=list)
    actions: list[Action] = msgspec.field(default_factory=list)
    breadcrumbs: list[str] = msgspec.field(default_factory=list)
    updated: str | None = None
    links: list[str] = msgspec.field(default_factory=list)
    noindex: bool = False
    nofollow: bool = False
    contact_links: list[str] = msgspec.field(default_factory=list)
    """The page's tel:, fax: and mailto: links (at most 20): a contact page's are the site's own."""
    actions_manifest: str = ""
    """The actions.json the page points at (``<link rel="actions">``), if any."""
    flags: list[Finding] = msgspec.field(default_factory=list)
    """Passages kept out of the index as prompt injection (``ingest/injection.py``): found in
    hidden elements and comments by extraction, in indexed text by cleaning."""
