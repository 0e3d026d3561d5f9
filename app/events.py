"""The wire contract: request bodies and every SSE event as msgspec Structs (README.md, "HTTP API").

Extend, don't break: fields may be added with defaults; names and codes never change.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class PageContext(msgspec.Struct, kw_only=True):
    """What the widget knows about the page the visitor is on."""

    url: str = ""
    title: str = ""
    description: str = ""
    headings: list[str] = msgspec.field(default_factory=list)
    jsonld: list[Any] = msgspec.field(default_factory=list)
    lang: str = ""
    local_time: str = ""
    """The visitor's clock, ISO 8601 with its UTC offset ("2026-12-21T09:15-05:00"): the day
    "today" and "tomorrow" in a question mean (app/visitor_day.py)."""


class ChatRequest(msgspec.Struct, kw_only=True):
    key: str
    question: str
    conversation_id: str | None = None
    page: PageContext | None = None


class FeedbackRequest(msgspec.Struct, kw_only=True):
    key: str
    message_id: str
    rating: Literal["up", "down"]
    conversation_id: str | None = None
    comment: str = ""


class Citation(msgspec.Struct, kw_only=True):
    title: str
    url: str
    snippet: str


class SuggestedAction(msgspec.Struct, kw_only=True):
    name: str
    label: str
    selector: str = ""
    url: str = ""


class MetaEvent(msgspec.Struct, kw_only=True):
    conversation_id: str
    confidence: float
    lang: str
    answered: bool = True
    source: str = "retrieval"  # retrieval | curated | cache | not_found


class TokenEvent(msgspec.Struct):
    text: str


class CitationsEvent(msgspec.Struct):
    citations: list[Citation]


class ActionsEvent(msgspec.Struct):
    actions: list[SuggestedAction]


class DoneEvent(msgspec.Struct, kw_only=True):
    message_id: str
    latency_ms: float
    ttft_ms: float | None = None


class ErrorEvent(msgspec.Struct):
    code: str
    message: str


Event = MetaEvent | TokenEvent | CitationsEvent | ActionsEvent | DoneEvent | ErrorEvent

EVENT_NAMES: dict[type, str] = {
    MetaEvent: "meta",
    TokenEvent: "token",
    CitationsEvent: "citations",
    ActionsEvent: "actions",
    DoneEvent: "done",
    ErrorEvent: "error",
}


def event_name(event: Event) -> str:
    return EVENT_NAMES[type(event)]


class ErrorBody(msgspec.Struct):
    """Errors before a stream starts, and every admin error: `{"code", "message"}` + a 4xx/5xx."""

    code: str
    message: str
