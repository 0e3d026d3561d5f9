"""The app-shell detector: does a page's static HTML need a browser before it can be read?

Pure and cheap (one selectolax parse, nothing fetched). ``crawl.render: auto`` renders a page
only when this says so; the reason is recorded with the page (``frontdesk stats``).
"""

from __future__ import annotations

import re

import msgspec
from selectolax.lexbor import LexborHTMLParser, LexborNode

#: Ids and attributes client-side frameworks mount their app on (React, Next.js, Vue, Nuxt,
#: Gatsby, Angular, Quasar, SvelteKit, Ember, Remix/Vite templates).
MOUNT_SELECTORS = (
    "#root, #__next, #app, #__nuxt, #___gatsby, #q-app, #svelte, #ember-app, #main-app, "
    "#react-root, #vue-app, [data-reactroot], [data-v-app], [ng-app], [ng-version], app-root"
)
#: Fewer visible characters than this in the whole <body> (scripts, styles, <noscript> and
#: <template> left out) is an empty page whatever else it has. The fixture documentation sites
#: never go below 3,000 (navigation and footer alone carry that much); an app shell has ~0-100.
SHELL_BODY_CHARS = 300
#: A mount point with less text than this is empty (a spinner or "Loading…").
EMPTY_MOUNT_CHARS = 60
#: Body text a page may have and still be judged a shell by its mount point or <noscript>: a
#: server-rendered header and footer around a client-rendered main part.
SHELL_WITH_CHROME_CHARS = 1500
#: A page with this much main text has its content in the HTML: no parse, no render.
ENOUGH_MAIN_CHARS = 2000
#: Script weight counted for one external script (its size is unknown without fetching it).
EXTERNAL_SCRIPT_WEIGHT = 10_000

# "You need to enable JavaScript to run this app.", "This site requires JavaScript", "Please
# enable JavaScript to view the page". A feature that needs JavaScript ("…to enable the search
# functionality", Sphinx's search page) is not the page needing it.
_NOSCRIPT_ASKS = re.compile(
    r"(enable|activate|turn on|switch on|allow|requires?|need|needs|without)\b[^.!?]{0,40}\bjavascript"
    r"|javascript\b[^.!?]{0,30}\b(is |be )?(required|disabled|needed|must be enabled|to be enabled)",
    re.IGNORECASE,
)
_WHOLE_THING = re.compile(
    r"\b(this|the|our)\s+(app|application|site|website|web site|page|web page|content|shop|store)\b"
    r"|\brun\b|\bview\b|\bwork properly\b",
    re.IGNORECASE,
)
_EXECUTABLE_TYPES = ("", "text/javascript", "application/javascript", "module", "text/ecmascript",
                     "application/ecmascript", "text/babel", "jsx")


class ShellVerdict(msgspec.Struct, frozen=True):
    """Whether to render, and why (a short stable reason such as ``empty_mount:#root``)."""

    render: bool
    reason: str
    body_chars: int = -1
    """Visible characters in <body> without scripts (-1: not measured, the fast path)."""
    script_weight: int = 0
    """Inline script bytes plus EXTERNAL_SCRIPT_WEIGHT per external script."""


def _visible_chars(node: LexborNode | None) -> int:
    if node is None:
        return 0
    return len("".join(node.text(deep=True, separator=" ").split()))


def _node_label(node: LexborNode) -> str:
    ident = node.attributes.get("id")
    if ident:
        return f"#{ident}"
    for name in ("data-reactroot", "data-v-app", "ng-app", "ng-version"):
        if name in node.attributes:
            return f"[{name}]"
    return node.tag or "?"


def noscript_asks_for_javascript(text: str) -> bool:
    """Whether a <noscript> text asks for JavaScript to see the page itself."""
    text = " ".join(text.split())
    return bool(_NOSCRIPT_ASKS.search(text) and _WHOLE_THING.search(text))


def detect_shell(html: str, *, main_chars: int | None = None) -> ShellVerdict:
    """Judge a page's static HTML. ``main_chars`` (the extracted main text's length, when the
    caller has it) lets a page with plenty of text skip the parse.

    Renders when the page has scripts and any of: an empty mount point (``#root``, ``#__next``,
    ``#app``, ``[data-reactroot]``…), or no mount point and a ``<noscript>`` asking for
    JavaScript to see the page — each with little main text and little text around it (a
    server-rendered header and footer), and no mount point holding text; almost no visible
    text at all.
    """
    if main_chars is not None and main_chars >= ENOUGH_MAIN_CHARS:
        return ShellVerdict(render=False, reason="static_content")
    tree = LexborHTMLParser(html)
    scripts = tree.css("script")
    external = 0
    inline = 0
    for script in scripts:
        kind = (script.attributes.get("type") or "").strip().lower()
        if kind not in _EXECUTABLE_TYPES:
            continue  # JSON-LD, templates, import maps: data, not code
        if script.attributes.get("src"):
            external += 1
        else:
            inline += len(script.text(deep=True))
    weight = inline + EXTERNAL_SCRIPT_WEIGHT * external
    noscript_texts = [n.text(deep=True) for n in tree.css("noscript")]
    body = tree.body
    if body is None:
        return ShellVerdict(render=weight > 0, reason="no_body" if weight else "no_scripts",
                            body_chars=0, script_weight=weight)
    mounts = body.css(MOUNT_SELECTORS)
    for node in body.css("script, style, noscript, template"):
        node.decompose()
    body_chars = _visible_chars(body)

    def verdict(render: bool, reason: str) -> ShellVerdict:
        return ShellVerdict(render=render, reason=reason, body_chars=body_chars, script_weight=weight)

    if weight == 0:
        return verdict(False, "no_scripts")  # nothing could ever add content
    # Main content: the extractor's, when the caller has it (header, nav and footer left out).
    main = body_chars if main_chars is None else main_chars
    # A mount point with text in it was rendered on the server (or saved after rendering): its
    # page is read as served, however short, whatever its <noscript> says.
    mount_chars = [_visible_chars(mount) for mount in mounts]
    filled = any(chars >= EMPTY_MOUNT_CHARS for chars in mount_chars)
    if body_chars < SHELL_WITH_CHROME_CHARS and main < SHELL_BODY_CHARS and not filled:
        if mounts:
            return verdict(True, f"empty_mount:{_node_label(mounts[0])}")
        if any(noscript_asks_for_javascript(text) for text in noscript_texts):
            return verdict(True, "noscript_asks_for_javascript")
    if body_chars < SHELL_BODY_CHARS and weight > body_chars and not filled:
        return verdict(True, "little_text")
    return verdict(False, "static_content")
