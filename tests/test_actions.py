"""Forms, data-action elements and the actions.json manifest."""

from __future__ import annotations

import json

import msgspec
import pytest
from selectolax.lexbor import LexborHTMLParser

from ingest.actions import (
    action_selector,
    action_text,
    extract_actions,
    extract_forms,
    form_text,
    parse_actions_manifest,
)
from ingest.document import Action, Form, FormField

PAGE_URL = "https://shop.example/visit/"

PAGE = """<!doctype html><html><body>
<header><form role="search" action="/search"><input type="search" name="q" aria-label="Search the shop"></form></header>
<main>
  <form id="contact-form" action="../contact/send" method="POST">
    <label for="name">Your name</label> <input id="name" name="name" required>
    <label>Email address <input type="email" name="email" required></label>
    <input type="tel" name="phone" placeholder="Phone (optional)">
    <textarea name="message" aria-labelledby="message-label"></textarea><p id="message-label">Message</p>
    <select name="topic" aria-label="Topic" aria-required="true">
      <option value="">Choose a topic…</option><option>Orders</option><option value="ret">Returns</option>
    </select>
    <fieldset><legend>Preferred contact</legend>
      <input type="radio" name="via" id="via-mail" value="mail"><label for="via-mail">E-mail</label>
      <input type="radio" name="via" id="via-phone" value="phone"><label for="via-phone">Phone</label>
    </fieldset>
    <input type="checkbox" name="newsletter" id="nl"><label for="nl">Send me the newsletter</label>
    <input type="hidden" name="csrf" value="t0k3n">
    <input type="submit" value="Send"><button type="reset">Clear</button>
  </form>
  <form class="theme"><input type="radio" name="scheme" value="dark"><input type="radio" name="scheme" value="light"></form>
  <form action="javascript:void(0)"><button>Go</button></form>
  <button data-action="book-table" id="book" data-party-size="4" data-time="19:00">Book a table</button>
  <a data-action="see-menu" href="/menu#today" aria-label="See today's menu"><img src="m.png" alt="menu"></a>
  <button data-action="book-table" id="book-2">Book again</button>
  <div data-action="call" id="2nd call">Call <b>us</b></div>
  <span data-action='say "hi"'>Hi</span>
  <span data-action="  ">blank</span>
</main></body></html>"""


@pytest.fixture(scope="module")
def tree() -> LexborHTMLParser:
    return LexborHTMLParser(PAGE)


def _form_named(forms: list[Form], name: str) -> Form:
    return next(f for f in forms if f.name == name)


def test_forms_a_visitor_can_send_are_found(tree):
    forms = extract_forms(tree, PAGE_URL)
    assert [f.name for f in forms] == ["", "contact-form"]


def test_form_action_is_resolved_and_method_lowercased(tree):
    contact = _form_named(extract_forms(tree, PAGE_URL), "contact-form")
    assert contact.action == "https://shop.example/contact/send"
    assert contact.method == "post"
    search = extract_forms(tree, PAGE_URL)[0]
    assert search.action == "https://shop.example/search"
    assert search.method == "get"


def test_form_fields_have_labels_types_and_required_flags(tree):
    contact = _form_named(extract_forms(tree, PAGE_URL), "contact-form")
    assert contact.fields == (
        FormField(name="name", label="Your name", type="text", required=True),
        FormField(name="email", label="Email address", type="email", required=True),
        FormField(name="phone", label="Phone (optional)", type="tel"),
        FormField(name="message", label="Message", type="textarea"),
        FormField(name="topic", label="Topic", type="select", required=True, options=("Orders", "Returns")),
        FormField(name="via", label="Preferred contact", type="radio", options=("E-mail", "Phone")),
        FormField(name="newsletter", label="Send me the newsletter", type="checkbox", options=("Send me the newsletter",)),
        FormField(name="csrf", type="hidden", value=None),
    )  # fmt: skip


def test_submit_and_reset_controls_are_not_fields(tree):
    assert not any(
        f.type in ("submit", "reset", "button", "image")
        for form in extract_forms(tree, PAGE_URL)
        for f in form.fields
    )


CART_PAGE = """<main><h1>Sourdough loaf</h1>
<form action="/cart/add" method="post" id="add-to-cart">
  <input type="hidden" name="sku" value="BRD-SOURDOUGH-01">
  <input type="hidden" name="variant" value="sourdough-loaf-800g">
  <input type="hidden" name="csrf_token" value="x">
  <input type="hidden" name="authenticity_token" value="abc">
  <input type="hidden" name="ref" value="Zx81kLm2Qp0vR7tYb5Nw">
  <input type="hidden" name="contact" value="ann.smith@example.net">
  <input type="hidden" value="no name, never sent">
  <label>Quantity <input type="number" name="qty" value="1"></label>
  <button>Add to cart</button>
</form>
<form action="/cart/add" method="post"><input type="hidden" name="sku" value="BRD-RYE-02"><button>Add rye to cart</button></form>
<form action="/track"><input type="hidden" name="page" value="home"></form>
</main>"""


def test_hidden_fields_are_kept_with_their_values_unless_secret():
    """An agent submitting an add-to-cart form needs its hidden SKU; it never gets a CSRF token,
    a session id or a random token (a fresh one is on the live page), nor personal data."""
    forms = extract_forms(LexborHTMLParser(CART_PAGE), PAGE_URL)
    cart = forms[0]
    hidden = {f.name: f.value for f in cart.fields if f.type == "hidden"}
    assert hidden == {
        "sku": "BRD-SOURDOUGH-01",
        "variant": "sourdough-loaf-800g",
        "csrf_token": None,  # by name
        "authenticity_token": None,
        "ref": None,  # random-looking token
        "contact": None,  # personal data
    }
    assert [f.name for f in cart.fields if f.type != "hidden"] == ["qty"]
    # The visitor never fills hidden fields in: the indexed text leaves them out.
    assert form_text(cart) == "Add to cart form: Quantity (number)"


def test_a_form_of_hidden_fields_and_a_button_is_kept_and_named_by_the_button():
    forms = extract_forms(LexborHTMLParser(CART_PAGE), PAGE_URL)
    assert len(forms) == 2  # the tracking form has no submit control and nothing to fill in
    rye = forms[1]
    assert rye.name == "Add rye to cart"
    assert rye.fields == (FormField(name="sku", type="hidden", value="BRD-RYE-02"),)
    assert form_text(rye) == "Add rye to cart form"


def test_form_text_reads_like_a_sentence(tree):
    forms = extract_forms(tree, PAGE_URL)
    assert form_text(_form_named(forms, "contact-form")) == (
        "Contact form: Your name (required), Email address (required, email), "
        "Phone (optional) (tel), Message, Topic (required, select: Orders, Returns), "
        "Preferred contact (choose one: E-mail, Phone), Send me the newsletter (checkbox)"
    )
    assert form_text(forms[0]) == "Search form: Search the shop (search)"


def test_form_text_example_from_the_spec():
    form = Form(
        action="https://x.example/contact",
        name="contact",
        fields=(
            FormField(name="name", label="Name", required=True),
            FormField(name="email", label="Email", type="email", required=True),
            FormField(name="message", label="Message", type="textarea"),
        ),
    )
    assert form_text(form) == "Contact form: Name (required), Email (required, email), Message"


def test_page_without_forms_has_none():
    assert extract_forms(LexborHTMLParser("<p>No forms here</p>"), PAGE_URL) == []


# --- data-action ------------------------------------------------------------------------------


def test_data_action_elements_become_actions(tree):
    actions = extract_actions(tree, PAGE_URL)
    assert [a.name for a in actions] == ["book-table", "see-menu", "book-table", "call", 'say "hi"']
    book = actions[0]
    assert book == Action(
        name="book-table",
        label="Book a table",
        selector='#book[data-action="book-table"]',
        source="data-action",
        params={"party-size": "4", "time": "19:00"},
    )
    menu = actions[1]
    assert menu.label == "See today's menu"
    assert menu.url == "https://shop.example/menu#today"  # an action may open an anchor
    assert actions[3].label == "Call us"


def test_every_action_selector_finds_exactly_its_element(tree):
    for action in extract_actions(tree, PAGE_URL):
        matches = tree.css(action.selector)
        assert len(matches) == 1, action.selector
        assert matches[0].attributes["data-action"] == action.name


def test_selector_escapes_quotes_and_awkward_ids():
    assert action_selector('say "hi"', "") == '[data-action="say \\"hi\\""]'
    assert action_selector("call", "2nd call") == '[id="2nd call"][data-action="call"]'
    assert action_selector("go", "go-btn") == '#go-btn[data-action="go"]'


def test_action_text():
    action = Action(
        name="book-table",
        label="Book a table",
        url="https://shop.example/book",
        description="Reserve for up to 8",
    )
    assert action_text(action) == (
        'Book a table (site action "book-table"). Reserve for up to 8. Link: https://shop.example/book'
    )
    assert action_text(Action(name="open_chat")) == 'Open chat (site action "open_chat").'


# --- actions.json -----------------------------------------------------------------------------


def test_manifest_entries_become_actions():
    body = json.dumps(
        {
            "actions": [
                {
                    "name": "book-table",
                    "label": "Book a table",
                    "url": "/reservations?src=bot",
                    "selector": "#book",
                    "description": "Reserve a table for up to 8 people.",
                    "params": {"party_size": "number"},
                },
                {"name": "call-us", "url": "tel:+15551234567"},
            ]
        }
    ).encode()
    actions = parse_actions_manifest(body, "https://shop.example/")
    assert actions == [
        Action(
            name="book-table",
            label="Book a table",
            selector="#book",
            url="https://shop.example/reservations?src=bot",
            source="manifest",
            params={"party_size": "number"},
            description="Reserve a table for up to 8 people.",
        ),
        Action(name="call-us", source="manifest"),
    ]
    msgspec.json.encode(actions)  # storable as JSON


def test_manifest_may_be_a_bare_list_and_skips_bad_entries():
    body = json.dumps(
        [
            {"name": "ok"},
            {"name": ""},
            {"label": "no name"},
            "not an object",
            7,
            {"name": "ok"},  # duplicate name
            {"name": "typed", "label": 5, "params": [1, 2], "selector": None, "url": 3},
        ]
    )
    actions = parse_actions_manifest(body, "https://shop.example/")
    assert [a.name for a in actions] == ["ok", "typed"]
    assert actions[1] == Action(name="typed", source="manifest")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b"\xff\xfe\x00garbage",
        b"null",
        b"42",
        b'{"actions": "nope"}',
        b'{"actions": {"name": "x"}}',
        b"[" * 100_000,
        b'{"actions": [' + b'{"name": "x"},' * 10 + b"]",  # truncated
        b" " * 2_000_000,
    ],
)
def test_invalid_manifests_give_no_actions(body):
    assert parse_actions_manifest(body, "https://shop.example/") == []


def test_manifest_is_bounded():
    body = json.dumps({"actions": [{"name": f"a{i}", "label": "x" * 1000} for i in range(500)]})
    actions = parse_actions_manifest(body, "https://shop.example/")
    assert len(actions) == 200
    assert all(len(a.label) <= 200 for a in actions)
