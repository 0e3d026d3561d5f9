"""What a visitor can do on a site: forms, ``data-action`` elements and the ``actions.json``
manifest, plus the readable text that indexes them.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from selectolax.lexbor import LexborNode

from ingest.clean import looks_secret
from ingest.crawl.urls import http_url
from ingest.document import Action, Form, FormField
from ingest.text import collapse_whitespace

MAX_FORMS = 50
MAX_FIELDS = 100
MAX_OPTIONS = 100
MAX_ACTIONS = 200
MAX_MANIFEST_BYTES = 1_000_000
MAX_LABEL_CHARS = 200
MAX_DESCRIPTION_CHARS = 1000

# Controls that are not fields (hidden inputs are: the form sends them).
_SKIPPED_INPUT_TYPES = {"submit", "button", "reset", "image"}
MAX_HIDDEN_VALUE_CHARS = 200
_GROUPED_INPUT_TYPES = {"radio", "checkbox"}
_NOT_LABEL_TEXT = {"select", "textarea", "option", "script", "style", "template", "button"}
_SEARCH_FIELD_NAMES = {"q", "s", "query", "search", "keywords", "term"}


class _Queryable(Protocol):
    """A selectolax parser or node: anything with ``css``."""

    def css(self, query: str) -> list[LexborNode]: ...

    def css_first(self, query: str) -> LexborNode | None: ...


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def css_string(value: str) -> str:
    """``value`` as a double-quoted CSS string literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ")
    return f'"{escaped}"'


def humanise_name(name: str) -> str:
    """Identifier as words: "contactForm" / "contact-form" → "Contact form"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    words = [w for w in re.split(r"[\s_\-.\[\]]+", spaced) if w and not w.isdigit()]
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:]


def _attr(node: LexborNode, name: str) -> str:
    value = node.attributes.get(name)
    return value.strip() if isinstance(value, str) else ""


def _node_text(node: LexborNode) -> str:
    """Visible text of a small subtree, leaving out the text of form controls inside it."""
    pieces: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_text_node:
            pieces.append(current.text_content or "")
            continue
        if current is not node and (
            current.tag in _NOT_LABEL_TEXT or "hidden" in current.attributes
        ):
            continue
        if current.tag == "img" and current.attributes.get("alt"):
            pieces.append(" " + (current.attributes.get("alt") or "") + " ")
        stack.extend(reversed(list(current.iter(include_text=True))))
    return collapse_whitespace("".join(pieces))[:MAX_LABEL_CHARS]


def _text_by_ids(tree: _Queryable, ids: str) -> str:
    texts = []
    for element_id in ids.split():
        target = tree.css_first(f"[id={css_string(element_id)}]")
        if target is not None:
            texts.append(_node_text(target))
    return collapse_whitespace(" ".join(texts))


# ---------------------------------------------------------------------------------------------
# Forms
# ---------------------------------------------------------------------------------------------


def _labels_by_target(tree: _Queryable) -> dict[str, str]:
    labels: dict[str, str] = {}
    for label in tree.css("label[for]"):
        target = _attr(label, "for")
        if target and target not in labels:
            labels[target] = _node_text(label)
    return labels


def _wrapping_label(control: LexborNode, form: LexborNode) -> str:
    parent = control.parent
    while parent is not None and parent.mem_id != form.mem_id:
        if parent.tag == "label":
            return _node_text(parent)
        parent = parent.parent
    return ""


def _control_label(
    control: LexborNode, form: LexborNode, tree: _Queryable, labels: dict[str, str]
) -> str:
    control_id = _attr(control, "id")
    candidates = (
        labels.get(control_id, "") if control_id else "",
        _wrapping_label(control, form),
        _attr(control, "aria-label"),
        _text_by_ids(tree, _attr(control, "aria-labelledby")),
        _attr(control, "placeholder"),
        _attr(control, "title"),
    )
    for candidate in candidates:
        text = collapse_whitespace(candidate)
        if text:
            return text[:MAX_LABEL_CHARS]
    return ""


def _control_type(control: LexborNode) -> str:
    if control.tag == "select":
        return "select"
    if control.tag == "textarea":
        return "textarea"
    return (_attr(control, "type") or "text").lower()


def _is_required(control: LexborNode) -> bool:
    return "required" in control.attributes or _attr(control, "aria-required").lower() == "true"


def _select_options(select: LexborNode) -> tuple[str, ...]:
    options = []
    for index, option in enumerate(select.css("option")):
        text = collapse_whitespace(option.text()) or _attr(option, "value")
        # A first option without a value is the "Choose…" prompt, not a choice.
        is_prompt = index == 0 and option.attributes.get("value") == ""
        if text and not is_prompt:
            options.append(text[:MAX_LABEL_CHARS])
        if len(options) >= MAX_OPTIONS:
            break
    return tuple(options)


def _group_label(form: LexborNode, name: str) -> str:
    """The question a radio/checkbox group answers: its fieldset legend, if it has one."""
    for fieldset in form.css("fieldset"):
        if fieldset.css_first(f"input[name={css_string(name)}]") is not None:
            legend = fieldset.css_first("legend")
            if legend is not None:
                return _node_text(legend)
    return ""


def _form_fields(
    form: LexborNode, tree: _Queryable, labels: dict[str, str]
) -> tuple[FormField, ...]:
    fields: list[FormField] = []
    groups: dict[str, int] = {}  # radio/checkbox name → index in fields
    for control in form.css("input, select, textarea"):
        kind = _control_type(control)
        if kind in _SKIPPED_INPUT_TYPES:
            continue
        if kind == "hidden" or "hidden" in control.attributes:
            hidden = _hidden_field(control)
            if hidden is not None:
                fields.append(hidden)
            continue
        name = _attr(control, "name") or _attr(control, "id")
        label = _control_label(control, form, tree, labels)
        if not name and not label:
            continue
        if kind in _GROUPED_INPUT_TYPES and name:
            choice = label or _attr(control, "value")
            if name in groups:
                previous = fields[groups[name]]
                options = previous.options + ((choice,) if choice else ())
                fields[groups[name]] = FormField(
                    name=previous.name,
                    label=_group_label(form, name) or humanise_name(name),
                    type=previous.type,
                    required=previous.required or _is_required(control),
                    options=options[:MAX_OPTIONS],
                )
                continue
            groups[name] = len(fields)
            fields.append(
                FormField(
                    name=name,
                    label=label,
                    type=kind,
                    required=_is_required(control),
                    options=(choice,) if choice else (),
                )
            )
        else:
            options = _select_options(control) if kind == "select" else ()
            fields.append(
                FormField(
                    name=name,
                    label=label,
                    type=kind,
                    required=_is_required(control),
                    options=options,
                )
            )
        if len(fields) >= MAX_FIELDS:
            break
    return tuple(fields)


# Hidden fields whose value is a per-visit secret, by name: anti-forgery tokens, nonces, session
# ids, signatures, captcha state (Rails, Django, Laravel, ASP.NET, WordPress, Magento, Drupal…).
_SECRET_FIELD_NAME = re.compile(
    r"csrf|xsrf|token|nonce|authenticity|verification|captcha|recaptcha|session|sess_?id|^sid$|secret"
    r"|signature|^sig$|hmac|passw|api_?key|^key$|^auth|__viewstate|__eventvalidation|^state$|form_key"
    r"|form_build_id|honeypot|timestamp",
    re.IGNORECASE,
)


def withheld(name: str, value: str) -> bool:
    """Whether a hidden field's value must not be stored: a secret by its name, too long to be
    a plain value, or shaped like a token or personal data (the cleaner's detectors)."""
    return bool(_SECRET_FIELD_NAME.search(name)) or len(value) > MAX_HIDDEN_VALUE_CHARS or looks_secret(value)


def _hidden_field(control: LexborNode) -> FormField | None:
    """A hidden input as a field: its name and the value the form sends (None when withheld)."""
    name = _attr(control, "name")
    if not name:
        return None  # a hidden input without a name is never sent
    value = control.attributes.get("value") or ""
    return FormField(name=name[:MAX_LABEL_CHARS], type="hidden", value=None if withheld(name, value) else value)


def _form_name(form: LexborNode, tree: _Queryable) -> str:
    for candidate in (
        _attr(form, "aria-label"),
        _text_by_ids(tree, _attr(form, "aria-labelledby")),
        _attr(form, "name"),
        _attr(form, "id"),
        _attr(form, "title"),
    ):
        if candidate:
            return collapse_whitespace(candidate)[:MAX_LABEL_CHARS]
    return ""


_SUBMIT_CONTROLS = (
    'button:not([type]), button[type="submit" i], input[type="submit" i], input[type="image" i]'
)


def _can_submit(form: LexborNode, fields: tuple[FormField, ...]) -> bool:
    """A visitor can send it: it has a submit control, or a text field that Enter submits.

    Theme switchers and filter widgets built from bare radio buttons are not forms to offer; an
    add-to-cart form of hidden fields and a button is.
    """
    if any(f.type not in _GROUPED_INPUT_TYPES and f.type not in ("select", "hidden") for f in fields):
        return True
    return form.css_first(_SUBMIT_CONTROLS) is not None


def _submit_label(form: LexborNode) -> str:
    button = form.css_first(_SUBMIT_CONTROLS)
    if button is None:
        return ""
    return (_attr(button, "aria-label") or _node_text(button) or _attr(button, "value"))[:MAX_LABEL_CHARS]


def extract_forms(tree: _Queryable, url: str) -> list[Form]:
    """Every form a visitor can fill in and send, with its fields; others are left out.

    ``tree`` is a selectolax parser (or node); ``url`` is the page's base URL, against which
    the form's ``action`` is resolved (no action means the page itself).
    """
    labels = _labels_by_target(tree)
    forms: list[Form] = []
    for form in tree.css("form"):
        fields = _form_fields(form, tree, labels)
        if not fields or not _can_submit(form, fields):
            continue
        action_attr = _attr(form, "action")
        name = _form_name(form, tree)
        if not name and all(f.type == "hidden" for f in fields):
            name = _submit_label(form)  # "Add to cart": the button is all a visitor sees of it
        forms.append(
            Form(
                action=http_url(action_attr, url, keep_fragment=True) if action_attr else url,
                method=(_attr(form, "method") or "get").lower(),
                name=name,
                fields=fields,
            )
        )
        if len(forms) >= MAX_FORMS:
            break
    return forms


def _form_title(form: Form) -> str:
    if form.name:
        title = humanise_name(form.name)
        if title and "form" not in title.lower():
            title += " form"
        if title:
            return title
    if any(f.type == "search" or f.name.lower() in _SEARCH_FIELD_NAMES for f in form.fields):
        return "Search form"
    return "Form"


def _field_text(field: FormField) -> str:
    details: list[str] = []
    if field.required:
        details.append("required")
    shown_options = ", ".join(field.options[:10]) + (", …" if len(field.options) > 10 else "")
    if field.options and field.type == "radio":
        details.append(f"choose one: {shown_options}")
    elif field.type == "checkbox":
        # A lone checkbox's option is its own label; only a group offers choices.
        details.append(f"choose any: {shown_options}" if len(field.options) > 1 else "checkbox")
    elif field.options:
        details.append(f"{field.type}: {shown_options}")
    elif field.type not in ("text", "textarea"):
        details.append(field.type)
    name = field.label or humanise_name(field.name)
    return f"{name} ({', '.join(details)})" if details else name


def form_text(form: Form) -> str:
    """Readable text for indexing: "Contact form: Name (required), Email (required, email)".

    Hidden fields are left out: the visitor never fills them in (they stay in the stored form)."""
    shown = [_field_text(f) for f in form.fields if f.type != "hidden"]
    return f"{_form_title(form)}: {', '.join(shown)}" if shown else _form_title(form)


# ---------------------------------------------------------------------------------------------
# data-action elements
# ---------------------------------------------------------------------------------------------

_CSS_IDENTIFIER = re.compile(r"^-?[A-Za-z_][A-Za-z0-9_-]*$")


def action_selector(name: str, element_id: str) -> str:
    """A CSS selector for the element: ``[data-action="name"]``, narrowed by its id if any."""
    selector = f"[data-action={css_string(name)}]"
    if not element_id:
        return selector
    if _CSS_IDENTIFIER.match(element_id):
        return f"#{element_id}{selector}"
    return f"[id={css_string(element_id)}]{selector}"


def _action_label(element: LexborNode) -> str:
    for candidate in (
        _attr(element, "aria-label"),
        _node_text(element),
        _attr(element, "title"),
        _attr(element, "value"),
    ):
        if candidate:
            return collapse_whitespace(candidate)[:MAX_LABEL_CHARS]
    return ""


def _data_params(element: LexborNode) -> dict[str, str]:
    params = {}
    for key, value in element.attributes.items():
        if key.startswith("data-") and key != "data-action":
            params[key[5:]] = (value or "")[:MAX_DESCRIPTION_CHARS]
    return params


def extract_actions(tree: _Queryable, url: str) -> list[Action]:
    """One Action per distinct ``data-action`` element (name + selector), in page order."""
    actions: list[Action] = []
    seen: set[tuple[str, str]] = set()
    for element in tree.css("[data-action]"):
        name = _attr(element, "data-action")
        if not name:
            continue
        selector = action_selector(name, _attr(element, "id"))
        if (name, selector) in seen:
            continue
        seen.add((name, selector))
        href = _attr(element, "href") if element.tag in ("a", "area") else ""
        actions.append(
            Action(
                name=name[:MAX_LABEL_CHARS],
                label=_action_label(element),
                selector=selector,
                url=http_url(href, url, keep_fragment=True) if href else "",
                source="data-action",
                params=_data_params(element),
            )
        )
        if len(actions) >= MAX_ACTIONS:
            break
    return actions


# ---------------------------------------------------------------------------------------------
# actions.json manifest
# ---------------------------------------------------------------------------------------------


def _bounded_str(value: Any, limit: int) -> str:
    return collapse_whitespace(value)[:limit] if isinstance(value, str) else ""


def _manifest_action(entry: Any, base_url: str) -> Action | None:
    if not isinstance(entry, dict):
        return None
    name = _bounded_str(entry.get("name"), MAX_LABEL_CHARS)
    if not name:
        return None
    raw_url = entry.get("url")
    params = entry.get("params")
    if not isinstance(params, dict) or len(json.dumps(params)) > 4096:
        params = {}
    return Action(
        name=name,
        label=_bounded_str(entry.get("label"), MAX_LABEL_CHARS),
        selector=entry["selector"][:500] if isinstance(entry.get("selector"), str) else "",
        url=http_url(raw_url, base_url, keep_fragment=True)
        if isinstance(raw_url, str) and raw_url.strip()
        else "",
        source="manifest",
        params=params,
        description=_bounded_str(entry.get("description"), MAX_DESCRIPTION_CHARS),
    )


MANIFEST_PATH = "/actions.json"
"""Where a site's manifest is looked for first: at the root of the site's origin."""


def manifest_link(tree: _Queryable, base_url: str) -> str:
    """The manifest a page points at with ``<link rel="actions" href="…">`` (absolute, http(s)),
    or ""; the crawler fetches it besides ``/actions.json``."""
    for link in tree.css('link[rel~="actions" i][href]'):
        url = http_url(_attr(link, "href"), base_url)
        if url:
            return url
    return ""


def parse_actions_manifest(body: bytes | str, base_url: str) -> list[Action]:
    """Parse a site's ``/actions.json``; anything unusable yields fewer actions, never an error.

    Accepted format (UTF-8 JSON, at most 1 MB)::

        {"actions": [
            {"name": "book-table",                 # required, unique; later duplicates dropped
             "label": "Book a table",              # button text shown to visitors
             "url": "/reservations",               # resolved against base_url; http(s) only
             "selector": "#book",                  # CSS selector of the element on the page
             "description": "Reserve a table for up to 8 people.",
             "params": {"party_size": "number"}}   # free-form object, at most 4 KB as JSON
        ]}

    A bare list of action objects is accepted too. Entries that are not objects or have no
    ``name`` are skipped; fields of the wrong type are treated as absent.
    """
    if len(body) > MAX_MANIFEST_BYTES:
        return []
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return []
    entries = document.get("actions") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        return []
    actions: list[Action] = []
    names: set[str] = set()
    for entry in entries:
        action = _manifest_action(entry, base_url)
        if action is None or action.name in names:
            continue
        names.add(action.name)
        actions.append(action)
        if len(actions) >= MAX_ACTIONS:
            break
    return actions


def action_text(action: Action) -> str:
    """Readable text for indexing: "Book a table (site action "book-table"). Reserve … Link: …"."""
    label = action.label or humanise_name(action.name)
    text = f'{label} (site action "{action.name}").'
    if action.description:
        text += " " + action.description.rstrip(".") + "."
    if action.url:
        text += f" Link: {action.url}"
    return text
