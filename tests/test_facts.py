"""Structured data → facts, checked against the expectations shipped with the fixture pages."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import msgspec
import pytest
from selectolax.lexbor import LexborHTMLParser

from ingest.facts import extract_facts, extract_structured, facts_from_jsonld
from ingest.facts.read import MAX_DATA_BYTES, parse_json_ld_block
from ingest.facts.render import MAX_FACT_CHARS
from ingest.facts.wording import amount, human_date, human_duration, money, opening_hours_text

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
JSONLD = FIXTURES / "jsonld"
EXTRUCT = JSONLD / "extruct"
RECIPES = JSONLD / "recipe-scrapers"

pytestmark = pytest.mark.skipif(not JSONLD.is_dir(), reason="shared fixtures not checked out")

URL = "https://example.com/page"


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", "replace")


def facts_of(path: Path):
    return extract_facts(read(path), URL)


def json_ld_of(path: Path) -> list[dict]:
    """The page's JSON-LD items, read independently of the code under test."""
    items: list[dict] = []
    for script in LexborHTMLParser(path.read_bytes()).css('script[type="application/ld+json"]'):
        try:
            data = json.loads(script.text(), strict=False)
        except ValueError:
            continue
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict):
                items.extend(
                    item.get("@graph", [item]) if isinstance(item.get("@graph"), list) else [item]
                )
    return items


def types_of(item: dict) -> list[str]:
    raw = item.get("@type")
    return raw if isinstance(raw, list) else [raw]


ALL_PAGES = sorted(JSONLD.rglob("*.html")) if JSONLD.is_dir() else []


# --- every fixture page ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_PAGES, ids=lambda p: str(p.relative_to(JSONLD)))
def test_every_fixture_page_gives_clean_bounded_facts(path):
    facts, breadcrumbs = facts_of(path)
    for fact in facts:
        assert fact.text.strip()
        assert "\n" not in fact.text, "fact text is one paragraph"
        assert not re.search(r"</?[a-zA-Z][^>]*>", fact.text), "no markup in fact text"
        assert len(fact.text) <= MAX_FACT_CHARS
        assert fact.kind in ("fact", "faq")
        assert fact.source in ("json-ld", "microdata", "opengraph")
        encoded = msgspec.json.encode(fact.data)
        assert len(encoded) <= MAX_DATA_BYTES * 1.1
        json.loads(encoded)
    assert all(isinstance(b, str) and b for b in breadcrumbs)


# --- extruct expectations --------------------------------------------------------------------


def _properties(expected: dict) -> dict:
    return expected.get("properties", expected)


def test_microdata_product_matches_extruct_expectation():
    expected = _properties(json.loads((EXTRUCT / "schema.org" / "product.json").read_text())[0])
    offer = _properties(expected["offers"])
    facts, _ = facts_of(EXTRUCT / "schema.org" / "product.html")
    (product,) = [f for f in facts if f.type == "Product"]
    assert product.source == "microdata"
    assert product.text.startswith(f"{expected['name']} — ${offer['price']}, in stock")
    assert f"Brand: {expected['brand']}" in product.text
    rating = _properties(expected["aggregateRating"])
    assert f"Rated {rating['ratingValue']}/5 ({rating['reviewCount']} reviews)" in product.text
    assert product.data["name"] == expected["name"]
    assert product.data["offers"]["price"] == offer["price"]


def test_microdata_event_matches_extruct_expectation():
    expected = _properties(json.loads((EXTRUCT / "schema.org" / "Event.001.json").read_text())[0])
    facts, _ = facts_of(EXTRUCT / "schema.org" / "Event.001.html")
    (event,) = facts
    assert event.type == "Event"
    assert event.text.startswith(expected["name"])
    assert "21 April 2016, 20:00" in event.text  # startDate 2016-04-21T20:00
    address = _properties(_properties(expected["location"])["address"])
    assert f"{address['addressLocality']}, {address['addressRegion']}" in event.text
    assert f"Tickets: from {_properties(expected['offers'])['lowPrice']}" in event.text


def test_microdata_restaurant_has_contact_and_opening_hours():
    expected = _properties(
        json.loads((EXTRUCT / "schema.org" / "LocalBusiness.002.json").read_text())[0]
    )
    facts, _ = facts_of(EXTRUCT / "schema.org" / "LocalBusiness.002.html")
    (restaurant,) = facts
    assert restaurant.type == "Restaurant"
    assert restaurant.text.startswith(f"{expected['name']} (restaurant).")
    assert f"Phone: {expected['telephone']}" in restaurant.text
    assert (
        "Opening hours: Mon–Sat 11:00–14:30; Mon–Thu 17:00–21:30; Fri–Sat 17:00–22:00."
        in restaurant.text
    )
    assert _properties(expected["address"])["streetAddress"] in restaurant.text


@pytest.mark.parametrize("name", ["elysianfields", "tovestyrke"])
def test_songkick_events_match_extruct_expectation(name):
    expected = json.loads((EXTRUCT / "songkick" / f"{name}.json").read_text())["json-ld"]
    facts, _ = facts_of(EXTRUCT / "songkick" / f"{name}.html")
    texts = [f.text for f in facts if f.type == "MusicEvent"]
    events = [e for e in expected if e.get("@type") == "MusicEvent"]
    assert len(texts) == len(events)
    for event, text in zip(events, texts, strict=True):
        assert text.startswith(f"{event['name']} — music event on {human_date(event['startDate'])}")
        assert (
            f"at {event['location']['name']}, {event['location']['address']['streetAddress']}"
            in text
        )


def test_local_business_json_ld_matches_expectation():
    expected = json.loads((EXTRUCT / "misc" / "null_ld_mock.jsonld").read_text())[0]
    facts, _ = facts_of(EXTRUCT / "misc" / "null_ld_mock.html")
    (business,) = [f for f in facts if f.type == "LocalBusiness"]
    assert business.text.startswith(expected["name"])
    assert expected["address"]["streetAddress"] in business.text
    assert "Rated 5/5 (280 reviews)" in business.text


def test_book_with_offers_reads_like_a_product():
    facts, _ = facts_of(EXTRUCT / "schema.org" / "CreativeWork.001.html")
    (book,) = [f for f in facts if f.type == "Book"]
    assert book.text.startswith("The Catcher in the Rye (book) — $6.99, in stock.")


# --- invalid JSON-LD -------------------------------------------------------------------------

INVALID_PAGES = sorted(
    [*(EXTRUCT / "custom.invalid").glob("*.html"), *(EXTRUCT / "schema.org.invalid").glob("*.html")]
)


@pytest.mark.parametrize("path", INVALID_PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_invalid_json_ld_is_repaired_like_extruct_does(path):
    """Comments, control characters and HTML comments inside the script still give the items
    extruct's own test suite expects."""
    expected = json.loads(path.with_suffix(".jsonld").read_text())
    script = LexborHTMLParser(path.read_bytes()).css_first('script[type="application/ld+json"]')
    assert parse_json_ld_block(script.text()) == expected
    facts_of(path)  # and the whole page goes through without raising


def test_news_article_from_commented_json_ld_becomes_a_fact():
    path = EXTRUCT / "custom.invalid" / "JSONLD_with_JS_comment.html"
    expected = json.loads(path.with_suffix(".jsonld").read_text())[0]
    facts, _ = facts_of(path)
    assert [f.type for f in facts] == ["NewsArticle"]
    assert facts[0].text.startswith(expected["headline"])


def test_a_broken_block_loses_only_itself():
    page = """<html><head>
    <script type="application/ld+json">{"@type": "Product", "name": "Broken", "offers": {</script>
    <script type="application/ld+json">{"@context": "https://schema.org", "@type": "Product",
      "name": "Red Dress", "offers": {"@type": "Offer", "price": "40", "priceCurrency": "USD",
      "availability": "https://schema.org/InStock"}}</script>
    <script type="application/ld+json">[1, "two", null, {"@type": "Thing"}]</script>
    <script type="application/ld+json"></script>
    </head><body></body></html>"""
    facts, _ = extract_facts(page, URL)
    assert [f.text for f in facts] == ["Red Dress — $40, in stock."]


@pytest.mark.parametrize(
    "page",
    ["", "   ", "\x00\x01\x02", "<<<<>>>>", "<!-- only a comment -->", "no markup at all", "<html>" * 10_000,
     '<script type="application/ld+json">' + "[" * 50_000 + "</script>",
     '<div itemscope itemtype="http://schema.org/Product"><span itemprop="name">'],
)  # fmt: skip
def test_garbage_never_raises(page):
    facts, breadcrumbs = extract_facts(page, URL)
    assert isinstance(facts, list)
    assert isinstance(breadcrumbs, list)


# --- recipe-scrapers pages -------------------------------------------------------------------

FAQ_PAGES = sorted(
    p for p in RECIPES.glob("*.html") if any("FAQPage" in types_of(i) for i in json_ld_of(p))
)


def _faq_pairs(path: Path) -> list[tuple[str, str]]:
    items = json_ld_of(path)
    by_id = {i["@id"]: i for i in items if isinstance(i.get("@id"), str)}
    pairs = []
    for page in (i for i in items if "FAQPage" in types_of(i)):
        for question in page.get("mainEntity", []):
            question = by_id.get(question.get("@id"), question)
            answer = question["acceptedAnswer"]["text"]
            plain = " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", answer)).split())
            pairs.append((" ".join(question["name"].split()), plain))
    return pairs


def test_there_are_faq_pages_to_check():
    assert len(FAQ_PAGES) >= 8


@pytest.mark.parametrize("path", FAQ_PAGES, ids=lambda p: p.name)
def test_faq_pages_give_one_fact_per_question(path):
    expected = _faq_pairs(path)
    facts, _ = facts_of(path)
    faq = [f for f in facts if f.kind == "faq"]
    assert len(faq) == len(expected)
    for fact, (question, answer) in zip(faq, expected, strict=True):
        assert fact.type == "FAQPage"
        assert fact.text.startswith(f"Q: {question}")
        assert " A: " in fact.text
        # Answers lose their markup; compare words, not spacing around removed tags.
        answer_words = re.sub(r"\s+([.,!?;:])", r"\1", answer)
        fact_words = re.sub(r"\s+([.,!?;:])", r"\1", fact.text)
        assert answer_words[:60] in fact_words
        assert fact.data["name"] == question


ORGANIZATION_PAGES = [
    "preppykitchen.com__preppykitchen_1",
    "chefsavvy.com__chefsavvy_2",
    "ourbestbites.com__ourbestbites_1",
]


@pytest.mark.parametrize("name", ORGANIZATION_PAGES)
def test_yoast_organization_becomes_a_fact(name):
    path = RECIPES / f"{name}.html"
    (org,) = [i for i in json_ld_of(path) if "Organization" in types_of(i)]
    facts, _ = facts_of(path)
    (fact,) = [f for f in facts if f.type == "Organization"]
    assert fact.text == f"{org['name']} (organization). Website: {org['url']}."


RECIPE_PAGES = [
    "bluejeanchef.com__bluejeanchef_1", "chefsavvy.com__chefsavvy_2", "dinnerthendessert.com__dinnerthendessert_1",
    "epicurious.com__epicurious", "hogarmania.com__hogarmania_3", "kuchynalidla.sk__kuchynalidla",
    "marmiton.org__marmiton", "sunset.com__sunset_1", "theguardian.com__theguardian_1",
    "velocidadcuchara.com__velocidadcuchara_1", "williams-sonoma.com__williamssonoma_2",
]  # fmt: skip


@pytest.mark.parametrize("name", RECIPE_PAGES)
def test_recipe_fact_matches_recipe_scrapers_expectation(name):
    expected = json.loads((RECIPES / f"{name}.expected.json").read_text())
    facts, _ = facts_of(RECIPES / f"{name}.html")
    (recipe,) = [f for f in facts if f.type == "Recipe"]
    assert recipe.text.startswith(expected["title"])
    for ingredient in expected["ingredients"]:
        assert amount(ingredient) in recipe.text
    assert "Steps: 1. " in recipe.text


def test_ingredient_amounts_read_as_a_cook_writes_them():
    """The Guardian's Recipe data says "3.0tbsp gochujang"; a visitor reads "3 tbsp gochujang"."""
    facts, _ = facts_of(RECIPES / "theguardian.com__theguardian_1.html")
    (recipe,) = [f for f in facts if f.type == "Recipe"]
    assert "3 tbsp gochujang; 2 tsp rice vinegar" in recipe.text and "3.0tbsp" not in recipe.text
    assert "0.25 tsp fine salt" in recipe.text and "1 large leek (200 g)" in recipe.text
    assert amount("1.5tbsp black garlic paste") == "1.5 tbsp black garlic paste"
    assert amount("2 cups flour, sifted") == "2 cups flour, sifted"
    assert amount("version 2.0.1") == "version 2.0.1"


def test_breadcrumbs_come_from_the_breadcrumb_list():
    facts, breadcrumbs = facts_of(RECIPES / "preppykitchen.com__preppykitchen_1.html")
    assert breadcrumbs == ["Preppy Kitchen", "Recipes", "Cookies", "Rocky Road Cookies"]
    assert not any("Breadcrumb" in f.type for f in facts)


def test_page_modification_date_is_reported():
    structured = extract_structured(read(RECIPES / "preppykitchen.com__preppykitchen_1.html"), URL)
    assert structured.date_modified == "2024-12-19T00:14:31+00:00"


def test_article_names_author_and_dates():
    facts, _ = facts_of(RECIPES / "tastinghistory.com__tastinghistory_2.html")
    (article,) = [f for f in facts if f.type == "Article"]
    assert article.text == (
        "Spiced Hot Chocolate — article by Max Miller, published 23 February 2024, "
        "updated 14 February 2025 (Tasting History)."
    )


# --- OpenGraph ---------------------------------------------------------------------------------


def test_opengraph_gives_one_fact_when_nothing_richer_exists():
    facts, _ = facts_of(EXTRUCT / "misc" / "opengraph_test.html")
    assert [f.source for f in facts] == ["opengraph"]
    assert facts[0].text.startswith(
        "Himanshu's Open Graph Protocol (article). Event Education provides"
    )


def test_opengraph_is_dropped_when_richer_data_exists():
    page = """<html><head><meta property="og:title" content="Red Dress page">
    <script type="application/ld+json">{"@type": "Product", "name": "Red Dress",
      "offers": {"price": 40, "priceCurrency": "EUR", "availability": "OutOfStock"}}</script>
    </head></html>"""
    facts, _ = extract_facts(page, URL)
    assert [f.text for f in facts] == ["Red Dress — €40, out of stock."]


# --- rendering details ------------------------------------------------------------------------


def test_opening_hours_specification_is_grouped_into_day_ranges():
    page = """<script type="application/ld+json">{"@context": "https://schema.org",
      "@type": "Bakery", "name": "Crumbs", "telephone": "+1-555-0100", "email": "mailto:hi@crumbs.example",
      "address": {"@type": "PostalAddress", "streetAddress": "1 Main St", "addressLocality": "Springfield",
                  "postalCode": "12345", "addressCountry": "US"},
      "openingHoursSpecification": [
        {"@type": "OpeningHoursSpecification", "dayOfWeek": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
         "opens": "09:00:00", "closes": "17:00:00"},
        {"@type": "OpeningHoursSpecification", "dayOfWeek": "https://schema.org/Saturday",
         "opens": "10:00", "closes": "14:00"},
        {"@type": "OpeningHoursSpecification", "dayOfWeek": "Sunday", "opens": "00:00", "closes": "00:00"}]}
    </script>"""
    facts, _ = extract_facts(page, URL)
    assert facts[0].text == (
        "Crumbs (bakery). Address: 1 Main St, Springfield, 12345, US. Phone: +1-555-0100. "
        "Email: hi@crumbs.example. Opening hours: Mon–Fri 09:00–17:00; Sat 10:00–14:00; Sun closed."
    )


def test_graph_references_resolve_to_names():
    page = """<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
      {"@type": "BlogPosting", "headline": "Hello", "author": {"@id": "#me"}, "datePublished": "2024-03-05"},
      {"@type": "Person", "@id": "#me", "name": "Ada Lovelace"}]}</script>"""
    facts, _ = extract_facts(page, URL)
    assert [f.text for f in facts] == [
        "Hello — blog posting by Ada Lovelace, published 5 March 2024."
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("Mo-Fr 09:00-17:00", "Mon–Fri 09:00–17:00"),
     (["Mo,We 10:00-12:00", "Sa 09:00-13:00"], "Mon,Wed 10:00–12:00; Sat 09:00–13:00")],
)  # fmt: skip
def test_opening_hours_strings(value, expected):
    assert opening_hours_text(value) == expected


@pytest.mark.parametrize(
    ("price", "currency", "expected"),
    [("119.99", "USD", "$119.99"), (40, "EUR", "€40"), ("1234.5", "SEK", "1,234.50 SEK"), ("0", "USD", "free"),
     ("$35", None, "$35"), ("16.00", "USD", "$16.00"), ("1,200", "USD", "$1,200")],
)  # fmt: skip
def test_money(price, currency, expected):
    assert money(price, currency) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("PT1H30M", "1 h 30 min"), ("PT20M", "20 min"), ("P0DT0H45M", "45 min"), ("P2D", "2 days"),
     ("20 minutes", "20 minutes")],
)  # fmt: skip
def test_durations(value, expected):
    assert human_duration(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2017-06-10T19:30:00-0400", "10 June 2017, 19:30"), ("2016-10-11T11:01:00ZZ", "11 October 2016, 11:01"),
     ("2024-01-01", "1 January 2024"), ("2024-13-01", "2024-13-01"), ("next Tuesday", "next Tuesday")],
)  # fmt: skip
def test_dates(value, expected):
    assert human_date(value) == expected


def test_huge_values_are_bounded_in_data():
    big = "x" * 100_000
    reviews = ",".join([json.dumps({"reviewBody": "y" * 400})] * 200)
    page = (
        '<script type="application/ld+json">'
        f'{{"@type": "Product", "name": "Big", "description": "{big}", "review": [{reviews}]}}'
        "</script>"
    )
    facts, _ = extract_facts(page, URL)
    (fact,) = facts
    assert len(msgspec.json.encode(fact.data)) <= MAX_DATA_BYTES * 1.1
    assert len(fact.data["description"]) <= 500
    assert len(fact.text) <= MAX_FACT_CHARS


def test_facts_from_already_parsed_json_ld():
    items = [
        {"@type": "Product", "name": "Red Dress", "offers": {"price": 40, "priceCurrency": "USD"}},
        "not an object",
        None,
        {"@type": "FAQPage", "mainEntity": [{"@type": "Question", "name": "Returns?",
                                             "acceptedAnswer": {"text": "<p>Within 30 days.</p>"}}]},
    ]  # fmt: skip
    facts = facts_from_jsonld(items)
    assert [(f.kind, f.text) for f in facts] == [
        ("fact", "Red Dress — $40."),
        ("faq", "Q: Returns? A: Within 30 days."),
    ]
    assert facts_from_jsonld("garbage") == []
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["mainEntity"] = {"@type": "Thing"}
        node = node["mainEntity"]
    assert facts_from_jsonld([deep]) == []
