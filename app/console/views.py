"""What the console's templates are handed: number and time formats, the questions-per-day chart
as SVG geometry, the site-config form built from the config Structs (and read back, naming the
field that is wrong), and the widget preview's theme."""

from __future__ import annotations

import html
import re
import time
from typing import Any, NotRequired, TypedDict

import msgspec

from store.analytics import Day
from store.config import AnswerSettings, CleanSettings, CrawlSettings, SiteConfig
from store.errors import InvalidConfig


def when(epoch: float | None) -> str:
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def ago(epoch: float | None) -> str:
    if not epoch:
        return "never"
    seconds = time.time() - epoch
    future = seconds < 0
    seconds = abs(seconds)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            text = f"{n} {unit}{'s' if n != 1 else ''}"
            return f"in {text}" if future else f"{text} ago"
    return "in a moment" if future else "just now"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def num(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def size(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return str(value)


def install_filters(env) -> None:
    env.filters.update(when=when, ago=ago, pct=pct, num=num, size=size)


# -- the questions-per-day chart -------------------------------------------------------------

CHART_HEIGHT = 120


def day_chart(days: list[Day]) -> dict[str, Any]:
    """Bars for an inline SVG (no script, no inline style): all questions, answered inside."""
    top = max((d.questions for d in days), default=0) or 1
    step = 12 if len(days) <= 31 else 6
    bars = []
    for i, day in enumerate(days):
        total = round(day.questions / top * (CHART_HEIGHT - 10), 1)
        answered = round(day.answered / top * (CHART_HEIGHT - 10), 1)
        bars.append({"x": i * step + 1, "w": step - 2, "total": total, "answered": answered,
                     "y_total": CHART_HEIGHT - total, "y_answered": CHART_HEIGHT - answered, "day": day})
    return {"width": max(len(days) * step, 1), "height": CHART_HEIGHT, "bars": bars, "top": top}


# -- the site-config form --------------------------------------------------------------------

HELP = {
    "name": "Shown as the assistant's site name.",
    "allowed_origins": "One origin per line (https://shop.example.com) allowed to use the widget besides the site.",
    "crawl.seeds": "Extra start URLs, one per line.",
    "crawl.sitemaps": "Extra sitemap URLs, one per line.",
    "crawl.allow": "Regular expressions, one per line: when any is given, a URL must match one.",
    "crawl.deny": "Regular expressions, one per line: a URL matching any is never crawled.",
    "crawl.allowed_hosts": "Hosts the crawler may visit besides the site's own, one per line.",
    "crawl.rate": "Requests per second per host; 0 means no limit.",
    "crawl.allow_private_network": "Lets the crawler and webhooks reach private addresses. Server admin only.",
    "crawl.delta_every_hours": "Recrawl the sitemap's changes this often; 0 turns it off.",
    "crawl.full_every_days": "Refetch every page this often; 0 turns it off.",
    "clean.allow": "Exact strings never scrubbed (your published contact address), one per line.",
    "answer.avoid": "Topics the assistant must not discuss, one per line.",
    "answer.guardrails": "Rules for the assistant, one per line.",
    "answer.min_confidence": "0–1: below it visitors get the honest “not found on this site”.",
    "answer.min_term_coverage": "0–1: share of the question's words the site must use.",
    "answer.min_answerability": "0–1: how sure frontdesk must be that the site answers (else \"not found\").",
    "answer.refuse_unknown_names": "Answer \"not found\" when a question names something the site never "
                                   "mentions, or mentions only in passing and not where the answer comes from.",
}
SECTIONS: list[tuple[str, str, type[msgspec.Struct]]] = [
    ("", "Site", SiteConfig), ("crawl", "Crawling", CrawlSettings), ("clean", "Cleaning", CleanSettings),
    ("answer", "Answers", AnswerSettings),
]
READ_ONLY = {"model"}
ADMIN_ONLY = {"crawl.allow_private_network"}


def _kind(annotation: Any) -> str:
    if annotation is bool:
        return "bool"
    if annotation in (int, float):
        return "int" if annotation is int else "float"
    if getattr(annotation, "__origin__", None) is list:
        return "lines"
    return "text"


def config_sections(config: SiteConfig, *, admin: bool, posted=None, error_field: str = "") -> list[dict[str, Any]]:
    """The form's fields, grouped, with current (or just posted) values."""
    data = msgspec.to_builtins(config)
    sections = []
    for prefix, title, struct in SECTIONS:
        values = data.get(prefix, {}) if prefix else data
        fields = []
        for info in msgspec.structs.fields(struct):
            if info.name in ("crawl", "clean", "answer"):
                continue
            name = f"{prefix}.{info.name}" if prefix else info.name
            kind = _kind(info.type)
            value = values.get(info.name)
            if posted is not None and name not in READ_ONLY:
                raw = posted.get(name)
                value = (raw == "on") if kind == "bool" else (raw if raw is not None else "")
            elif kind == "lines":
                value = "\n".join(value or [])
            fields.append({"name": name, "id": "cfg-" + name.replace(".", "-"), "label": info.name.replace("_", " "),
                           "kind": kind, "value": value, "help": HELP.get(name, ""),
                           "disabled": name in READ_ONLY or (name in ADMIN_ONLY and not admin),
                           "error": error_field == name or error_field.startswith(name + "[")})
        sections.append({"title": title, "fields": fields})
    return sections


def config_from_form(form, current: SiteConfig, *, admin: bool) -> dict[str, Any]:
    """The config the form describes, as a dict for `decode_config`; a number that is not one
    is refused naming its field. Read-only and (for tenant sessions) admin-only fields keep
    their current values."""
    data = msgspec.to_builtins(current)
    for prefix, _, struct in SECTIONS:
        target = data.setdefault(prefix, {}) if prefix else data
        for info in msgspec.structs.fields(struct):
            if info.name in ("crawl", "clean", "answer"):
                continue
            name = f"{prefix}.{info.name}" if prefix else info.name
            if name in READ_ONLY or (name in ADMIN_ONLY and not admin):
                continue
            kind = _kind(info.type)
            raw = form.get(name)
            if kind == "bool":
                target[info.name] = raw == "on"
                continue
            text = str(raw or "").strip()
            if kind == "lines":
                target[info.name] = [line.strip() for line in text.splitlines() if line.strip()]
            elif kind in ("int", "float"):
                try:
                    target[info.name] = int(text) if kind == "int" else float(text)
                except ValueError:
                    raise InvalidConfig(f"{name} must be {'a whole number' if kind == 'int' else 'a number'}",
                                        field=name) from None
            else:
                target[info.name] = text
    return data


# -- the widget preview ----------------------------------------------------------------------

class ThemeField(TypedDict):
    """One field of the widget preview's form: a data-* attribute of the widget or a CSS variable."""

    name: str
    label: str
    kind: str  # text, color, select or number
    options: NotRequired[list[str]]  # a select's choices
    attr: NotRequired[str]
    var: NotRequired[str]


THEME_FIELDS: list[ThemeField] = [
    {"name": "title", "label": "Title", "kind": "text", "attr": "data-title"},
    {"name": "greeting", "label": "Greeting", "kind": "text", "attr": "data-greeting"},
    {"name": "color", "label": "Accent colour", "kind": "color", "attr": "data-color"},
    {"name": "position", "label": "Position", "kind": "select", "options": ["right", "left"], "attr": "data-position"},
    {"name": "lang", "label": "Interface language", "kind": "select", "options": ["", "en", "es", "de"],
     "attr": "data-lang"},
    {"name": "accent_fg", "label": "Text on the accent", "kind": "color", "var": "--fd-accent-fg"},
    {"name": "bg", "label": "Background", "kind": "color", "var": "--fd-bg"},
    {"name": "fg", "label": "Text", "kind": "color", "var": "--fd-fg"},
    {"name": "surface", "label": "Answer bubbles", "kind": "color", "var": "--fd-surface"},
    {"name": "radius", "label": "Corner radius (px)", "kind": "number", "var": "--fd-radius"},
]
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}")
DEFAULTS = {"color": "#1f5f8b", "position": "right", "lang": "", "accent_fg": "#ffffff", "bg": "#ffffff",
            "fg": "#1f2328", "surface": "#f1f3f5", "radius": "14"}


def theme_from_query(params, config: SiteConfig) -> dict[str, str]:
    """The preview's theme from the form's query; anything malformed falls back to the default."""
    theme = {"title": "", "greeting": "", **DEFAULTS}
    for field in THEME_FIELDS:
        raw = str(params.get(field["name"], "") or "").strip()[:120]
        if not raw:
            continue
        kind = field["kind"]
        if (kind == "color" and _COLOR.fullmatch(raw)) or (kind == "select" and raw in field["options"]) or \
                (kind == "number" and raw.isdigit() and int(raw) <= 40) or kind == "text":
            theme[field["name"]] = raw
    theme["title"] = theme["title"] or (f"Ask {config.name}" if config.name else "")
    return theme


def theme_vars(theme: dict[str, str]) -> dict[str, str]:
    """CSS custom properties that differ from the widget's defaults."""
    out = {}
    for field in THEME_FIELDS:
        var = field.get("var")
        if var and theme.get(field["name"]) and theme[field["name"]] != DEFAULTS.get(field["name"]):
            out[var] = theme[field["name"]] + ("px" if field["kind"] == "number" else "")
    return out


def widget_attrs(theme: dict[str, str]) -> dict[str, str]:
    return {f["attr"]: theme[f["name"]] for f in THEME_FIELDS
            if f.get("attr") and theme.get(f["name"]) and theme[f["name"]] != DEFAULTS.get(f["name"], "")}


def widget_snippet(base: str, key: str, theme: dict[str, str]) -> str:
    attrs = "".join(f' {name}="{html.escape(value)}"' for name, value in widget_attrs(theme).items())
    tag = f'<script src="{base}/widget.js" data-key="{key}"{attrs} defer></script>'
    variables = theme_vars(theme)
    if not variables:
        return tag
    css = "; ".join(f"{k}: {v}" for k, v in variables.items())
    return f"<style>frontdesk-widget {{ {css} }}</style>\n{tag}"
