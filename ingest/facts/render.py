"""Per-schema rendering: one structured item (Product, Offer, Event, Organization and local
businesses, Article, Recipe, HowTo, FAQ) as one readable paragraph of fact text, the choice of
renderer by type, breadcrumb trails and the OpenGraph fallback fact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from ingest.document import Fact
from ingest.facts.read import MAX_DESCRIPTION_CHARS, Graph, item_types, normalise_data
from ingest.facts.wording import (
    amount,
    as_list,
    availability,
    clip,
    first,
    html_to_text,
    human_date,
    human_duration,
    humanise_type,
    money,
    opening_hours_specification_text,
    opening_hours_text,
    sentence,
    vocabulary_word,
)

MAX_FACT_CHARS = 4000


# -- shared pieces of several renderers ---------------------------------------------------------


def _join_sentences(parts: Iterable[str]) -> str:
    return clip(" ".join(sentence(p) for p in parts if p and p.strip()), MAX_FACT_CHARS)


def _rating(item: dict, graph: Graph) -> str:
    rating = graph.resolve(first(item.get("aggregateRating")))
    if not isinstance(rating, dict):
        return ""
    value = first(rating.get("ratingValue"))
    try:
        score = f"{float(str(value)):.1f}".removesuffix(".0")
    except (TypeError, ValueError):
        return ""
    best = first(rating.get("bestRating")) or 5
    count = first(rating.get("reviewCount")) or first(rating.get("ratingCount"))
    text = f"Rated {score}/{html_to_text(str(best))}"
    if count not in (None, "", 0, "0"):
        count_text = html_to_text(str(count))
        text += f" ({count_text} review{'' if count_text == '1' else 's'})"
    return text


def _offer_summary(offers: Any, graph: Graph) -> str:
    """Price and availability ("$40, in stock") of an Offer, AggregateOffer or offer list."""
    resolved = [graph.resolve(o) for o in as_list(offers)]
    offer_items = [o for o in resolved if isinstance(o, dict)]
    if not offer_items:
        return ""
    lead = offer_items[0]
    currency = lead.get("priceCurrency")
    spec = graph.resolve(first(lead.get("priceSpecification")))
    if "AggregateOffer" in item_types(lead) or "lowPrice" in lead:
        low = money(lead.get("lowPrice"), currency)
        high = money(lead.get("highPrice"), currency)
        price = f"{low}–{high}" if low and high and low != high else (f"from {low}" if low else "")
        price = price or money(lead.get("price"), currency)
    else:
        prices = {
            money(o.get("price"), o.get("priceCurrency") or currency)
            for o in offer_items
            if o.get("price") not in (None, "")
        }
        if not prices and isinstance(spec, dict):
            prices = {money(spec.get("price"), spec.get("priceCurrency") or currency)}
        prices.discard("")
        price = (
            next(iter(prices)) if len(prices) == 1 else (f"{len(prices)} prices" if prices else "")
        )
        if len(prices) > 1:
            price = "from " + _lowest_price(offer_items, currency)
    parts = [p for p in (price, availability(lead.get("availability"))) if p]
    condition = vocabulary_word(lead.get("itemCondition")).removesuffix(" condition")
    if condition and condition != "new":
        parts.append(condition)
    return ", ".join(parts)


def _lowest_price(offers: list[dict], currency: Any) -> str:
    def amount(offer: dict) -> float:
        try:
            return float(str(first(offer.get("price"))).replace(",", ""))
        except ValueError:
            return math.inf

    cheapest = min(offers, key=amount)
    return money(cheapest.get("price"), cheapest.get("priceCurrency") or currency)


def _seller(offers: Any, graph: Graph) -> str:
    for offer in as_list(offers):
        offer = graph.resolve(offer)
        if isinstance(offer, dict) and (seller := graph.name(offer.get("seller"))):
            return seller
    return ""


# -- one renderer per schema family -------------------------------------------------------------


def render_product(item: dict, graph: Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "headline")
    if not name:
        return ""
    kind = types[0]
    head = name if kind == "Product" else f"{name} ({humanise_type(kind)})"
    offer = _offer_summary(item.get("offers"), graph)
    seller = _seller(item.get("offers"), graph)
    parts = [f"{head} — {offer}" if offer else head]
    if brand := graph.name(first(item.get("brand"))):
        parts.append(f"Brand: {brand}")
    if seller:
        parts.append(f"Sold by {seller}")
    for key, label in (("sku", "SKU"), ("gtin13", "GTIN"), ("mpn", "MPN"), ("isbn", "ISBN")):
        if code := graph.text(item, key, 60):
            parts.append(f"{label}: {code}")
            break
    parts.append(_rating(item, graph))
    parts.append(graph.text(item, "description"))
    return _join_sentences(parts)


def render_offer(item: dict, graph: Graph, types: list[str]) -> str:
    summary = _offer_summary(item, graph)
    what = graph.name(item.get("itemOffered")) or graph.text(item, "name")
    if not summary or not what:
        return ""
    parts = [f"{what} — {summary}"]
    if seller := graph.name(item.get("seller")):
        parts.append(f"Sold by {seller}")
    return _join_sentences(parts)


def postal_address(value: Any, graph: Graph) -> str:
    value = graph.resolve(first(value))
    if isinstance(value, str):
        return html_to_text(value)
    if not isinstance(value, dict):
        return ""
    region = " ".join(
        graph.name(value.get(k))
        for k in ("addressRegion", "postalCode")
        if graph.name(value.get(k))
    )
    parts = [
        graph.name(value.get("streetAddress")),
        graph.name(value.get("addressLocality")),
        region,
        graph.name(value.get("addressCountry")),
    ]
    seen: list[str] = []
    for part in parts:
        if part and part not in seen:
            seen.append(part)
    return ", ".join(seen) or graph.name(value)


def place_text(value: Any, graph: Graph) -> str:
    place = graph.resolve(first(value))
    if isinstance(place, str):
        return html_to_text(place)
    if not isinstance(place, dict):
        return ""
    if "VirtualLocation" in item_types(place):
        return "online"
    name = graph.name(place.get("name"))
    address = postal_address(place.get("address"), graph)
    if name and address and not address.startswith(name):
        return f"{name}, {address}"
    return name or address


def render_event(item: dict, graph: Graph, types: list[str]) -> str:
    name = graph.text(item, "name")
    if not name:
        return ""
    when = human_date(first(item.get("startDate")))
    if end := human_date(first(item.get("endDate"))):
        when = f"{when} to {end}" if when else f"until {end}"
    head = f"{name} — {humanise_type(types[0])}"
    if when:
        head += f" on {when}"
    if where := place_text(item.get("location"), graph):
        head += f" at {where}"
    parts = [head]
    status = vocabulary_word(item.get("eventStatus")).removeprefix("event ")
    if status and status != "scheduled":
        parts.append(f"Status: {status}")
    if offer := _offer_summary(item.get("offers"), graph):
        parts.append(f"Tickets: {offer}")
    performers = graph.name(item.get("performer"))
    if performers and performers != name:
        parts.append(f"Performers: {performers}")
    if organizer := graph.name(item.get("organizer")):
        parts.append(f"Organised by {organizer}")
    parts.append(graph.text(item, "description"))
    return _join_sentences(parts)


def render_organization(item: dict, graph: Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "legalName")
    if not name:
        return ""
    parts = [f"{name} ({humanise_type(types[0])})"]
    if address := postal_address(item.get("address"), graph) or place_text(
        item.get("location"), graph
    ):
        parts.append(f"Address: {address}")
    if phone := graph.text(item, "telephone", 60):
        parts.append(f"Phone: {phone}")
    if email := graph.text(item, "email", 120):
        parts.append(f"Email: {email.removeprefix('mailto:')}")
    hours = opening_hours_text(item.get("openingHours")) or opening_hours_specification_text(
        graph.resolve(spec) for spec in as_list(item.get("openingHoursSpecification"))
    )
    if hours:
        parts.append(f"Opening hours: {hours}")
    points = [graph.resolve(p) for p in as_list(item.get("contactPoint"))]
    for point in (p for p in points if isinstance(p, dict)):
        contact = ", ".join(
            x for x in (graph.name(point.get("telephone")), graph.name(point.get("email"))) if x
        )
        if contact:
            kind = graph.name(point.get("contactType")) or "Contact"
            parts.append(f"{kind[:1].upper() + kind[1:]}: {contact}")
    if cuisine := graph.name(item.get("servesCuisine")):
        parts.append(f"Cuisine: {cuisine}")
    if price_range := graph.text(item, "priceRange", 40):
        parts.append(f"Price range: {price_range}")
    parts.append(_rating(item, graph))
    if website := graph.text(item, "url", 200):
        parts.append(f"Website: {website}")
    parts.append(graph.text(item, "description"))
    if not any(parts[1:]):
        return ""  # a bare name (a band, a publisher logo) tells a visitor nothing
    return _join_sentences(parts)


def render_article(item: dict, graph: Graph, types: list[str]) -> str:
    title = graph.text(item, "headline") or graph.text(item, "name")
    if not title:
        return ""
    head = f"{title} — {humanise_type(types[0])}"
    author = graph.person(item.get("author"))
    if author:
        head += f" by {author}"
    dates = []
    # Publication times are mostly UTC timestamps of a CMS: the day is the useful part.
    if published := human_date(first(item.get("datePublished")), with_time=False):
        dates.append(f"published {published}")
    modified = human_date(first(item.get("dateModified")), with_time=False)
    if modified and modified != published:
        dates.append(f"updated {modified}")
    if dates:
        head += ", " + ", ".join(dates)
    if publisher := graph.name(item.get("publisher")):
        head += f" ({publisher})" if publisher != author else ""
    return _join_sentences([head, graph.text(item, "description")])


def _steps(value: Any, graph: Graph) -> list[str]:
    """HowToStep / HowToSection / plain strings flattened into step texts."""
    steps: list[str] = []
    stack = list(reversed(as_list(value)))
    while stack and len(steps) < 60:
        step = graph.resolve(stack.pop())
        if isinstance(step, str):
            steps.extend(s for s in (html_to_text(x) for x in re.split(r"\n+", step)) if s)
        elif isinstance(step, dict):
            nested = step.get("itemListElement")
            if nested:
                stack.extend(reversed(as_list(nested)))
            else:
                text = graph.name(step.get("text")) or graph.name(step.get("name"))
                if text:
                    steps.append(text)
    return steps


def _numbered(steps: list[str]) -> str:
    return " ".join(f"{i}. {sentence(step)}" for i, step in enumerate(steps, 1))


def _times(item: dict) -> str:
    labels = (
        ("prepTime", "prep"),
        ("cookTime", "cook"),
        ("performTime", "work"),
        ("totalTime", "total"),
    )
    times = [
        f"{label} {human_duration(item.get(key))}"
        for key, label in labels
        if human_duration(item.get(key))
    ]
    return ("Time: " + ", ".join(times)) if times else ""


def render_recipe(item: dict, graph: Graph, types: list[str]) -> str:
    name = graph.text(item, "name") or graph.text(item, "headline")
    if not name:
        return ""
    head = f"{name} — recipe"
    if author := graph.person(item.get("author")):
        head += f" by {author}"
    parts = [head, graph.text(item, "description"), _times(item)]
    yields = [graph.name(y) for y in as_list(item.get("recipeYield"))]
    if yields := [y for y in yields if y]:
        parts.append("Yield: " + max(yields, key=len))
    for key, label in (("recipeCuisine", "Cuisine"), ("recipeCategory", "Category")):
        if value := graph.name(item.get(key)):
            parts.append(f"{label}: {value}")
    parts.append(_rating(item, graph))
    ingredients = [
        amount(graph.name(i)) for i in as_list(item.get("recipeIngredient") or item.get("ingredients"))
    ]
    if ingredients := [i for i in ingredients if i]:
        parts.append("Ingredients: " + "; ".join(ingredients))
    if steps := _steps(item.get("recipeInstructions"), graph):
        parts.append("Steps: " + _numbered(steps))
    return _join_sentences(parts)


def render_howto(item: dict, graph: Graph, types: list[str]) -> str:
    name = graph.text(item, "name")
    steps = _steps(item.get("step"), graph)
    if not name or not steps:
        return ""
    parts = [f"{name} — how-to", graph.text(item, "description"), _times(item)]
    for key, label in (("supply", "Supplies"), ("tool", "Tools")):
        things = [graph.name(t) for t in as_list(item.get(key))]
        if things := [t for t in things if t]:
            parts.append(f"{label}: " + ", ".join(things))
    parts.append("Steps: " + _numbered(steps))
    return _join_sentences(parts)


def faq_pairs(item: dict, graph: Graph) -> list[tuple[str, str]]:
    """(question, answer) pairs of a FAQPage, or of a single Question item."""
    questions = [item] if "Question" in item_types(item) else as_list(item.get("mainEntity"))
    pairs = []
    for question in questions:
        question = graph.resolve(question)
        if not isinstance(question, dict):
            continue
        text = graph.text(question, "name", 1000) or graph.text(question, "text", 1000)
        answer = graph.resolve(
            first(question.get("acceptedAnswer") or question.get("suggestedAnswer"))
        )
        answer_text = graph.name(answer.get("text") if isinstance(answer, dict) else answer)
        if text and answer_text:
            pairs.append((text, clip(answer_text, MAX_FACT_CHARS - len(text) - 8)))
    return pairs


# -- choosing the renderer, and what is not one item's paragraph --------------------------------

_ORGANIZATION_TYPES = {
    "Organization", "Corporation", "NGO", "LocalBusiness", "Restaurant", "CafeOrCoffeeShop",
    "BarOrPub", "Bakery", "FastFoodRestaurant", "Winery", "Brewery", "Hotel", "Motel",
    "LodgingBusiness", "BedAndBreakfast", "Dentist", "Physician", "Pharmacy", "Hospital",
    "MedicalClinic", "Optician", "AutoRepair", "AutoDealer", "LegalService", "Attorney",
    "Notary", "RealEstateAgent", "TravelAgency", "BankOrCreditUnion", "InsuranceAgency",
    "HairSalon", "BeautySalon", "DaySpa", "NailSalon", "ExerciseGym", "Library", "Museum",
    "MovieTheater", "Plumber", "Electrician", "Locksmith", "HVACBusiness", "MusicGroup",
    "SportsTeam", "Airline", "Consortium", "PerformingGroup", "TouristInformationCenter",
    "ChildCare", "School", "CollegeOrUniversity", "Preschool", "VeterinaryCare",
}  # fmt: skip
_ORGANIZATION_SUFFIXES = (
    "Organization",
    "Business",
    "Store",
    "Service",
    "Agency",
    "Shop",
    "Restaurant",
)
_ARTICLE_TYPES = {
    "Article",
    "BlogPosting",
    "Report",
    "SocialMediaPosting",
    "LiveBlogPosting",
    "Blog",
}
_PRODUCT_TYPES = {
    "Product",
    "ProductModel",
    "ProductGroup",
    "IndividualProduct",
    "SomeProducts",
    "Vehicle",
    "Car",
}

Renderer = Callable[[dict, Graph, list[str]], str]


def is_organization_type(kind: str) -> bool:
    """Whether a schema.org type is an Organization or LocalBusiness (or one of their subtypes)."""
    return kind in _ORGANIZATION_TYPES or kind.endswith(_ORGANIZATION_SUFFIXES)


def _renderer_for(types: list[str], item: dict) -> tuple[Renderer, str] | None:
    """The renderer for the most specific type it knows, and that type."""
    for kind in types:
        if kind in _PRODUCT_TYPES:
            return render_product, kind
        if kind == "Recipe":
            return render_recipe, kind
        if kind == "HowTo":
            return render_howto, kind
        if kind.endswith("Event") or kind == "Festival":
            return render_event, kind
        if kind in _ARTICLE_TYPES or kind.endswith("Article"):
            return render_article, kind
        if is_organization_type(kind):
            return render_organization, kind
        if kind in ("Offer", "AggregateOffer"):
            return render_offer, kind
    if types and item.get("offers"):
        # Books, courses, software and services sold on the page read like products.
        return render_product, types[0]
    return None


def facts_for_item(item: dict, graph: Graph, source: str) -> list[Fact]:
    """The facts of one item: one per question of a FAQ, else one paragraph from the renderer
    of its most specific known type; [] when it has nothing a visitor could read."""
    types = item_types(item)
    if "FAQPage" in types or "Question" in types:
        return [
            Fact(
                type="FAQPage",
                text=f"Q: {sentence(question)} A: {answer}",
                data={
                    "@type": "Question",
                    "name": question,
                    "acceptedAnswer": {"@type": "Answer", "text": answer},
                },
                kind="faq",
                source=source,
            )
            for question, answer in faq_pairs(item, graph)
        ]
    chosen = _renderer_for(types, item)
    if chosen is None:
        return []
    renderer, kind = chosen
    text = renderer(item, graph, [kind, *types])
    if not text:
        return []
    return [Fact(type=kind, text=text, data=normalise_data(item), source=source)]


def breadcrumb_names(item: dict, graph: Graph) -> list[str]:
    elements = [graph.resolve(e) for e in as_list(item.get("itemListElement"))]
    entries = []
    for index, element in enumerate(elements):
        if not isinstance(element, dict):
            continue
        name = graph.name(element.get("name")) or graph.name(graph.resolve(element.get("item")))
        try:
            position = float(str(first(element.get("position"))))
        except (TypeError, ValueError):
            position = float(index)
        if name:
            entries.append((position, index, clip(name, 200)))
    return [name for _, _, name in sorted(entries)]


def opengraph_fact(og: dict) -> Fact | None:
    title = html_to_text(str(first(og.get("og:title")) or ""))
    description = html_to_text(str(first(og.get("og:description")) or ""))
    if not title and not description:
        return None
    kind = html_to_text(str(first(og.get("@type")) or ""))
    head = f"{title} ({kind})" if title and kind else title
    text = _join_sentences([head, clip(description, MAX_DESCRIPTION_CHARS)])
    return Fact(type="OpenGraph", text=text, data=normalise_data(og), source="opengraph")
