"""The whole answer pipeline on the sample site, crawled as the quickstart crawls it and asked over
HTTP as the widget asks: short right answers that cite what they quote, its own phone number and
address, FAQ answers whole, a day's hours row, follow-ups, and near misses refused honestly."""

from __future__ import annotations

import asyncio

import pytest

from tests.test_app import answer_of, ask


@pytest.fixture(scope="module")
def demo_served(tmp_path_factory):
    from app.demo import as_its_owner_would
    from app.demo.server import serve_demo_site
    from ingest.pipeline import CrawlOptions, crawl
    from tests.conftest import fresh_context
    from tests.server import run_server

    context = fresh_context(tmp_path_factory, "demo-answers")
    with serve_demo_site() as site:
        tenant, _ = context.create_tenant("demo", site.url + "/", allow_private_network=True,
                                          name="Harbor & Pine")
        tenant.set_config(as_its_owner_would(tenant.config()))  # as the quickstart sets it up
        summary = asyncio.run(crawl(tenant, context.tenant_embedder(tenant), CrawlOptions(rate=0)))
        assert summary.failed == 0, summary
        with run_server(context.data_dir, rate_per_ip=50, rate_burst_ip=200) as base:
            yield base, tenant, site.url
    context.close()


@pytest.mark.slow
def test_sample_site_answers_are_short_right_and_cite_what_they_quote(demo_served):
    base, tenant, site = demo_served
    sunday = answer_of(ask(base, tenant.widget_key, "Do you open on Sundays?", origin=site)[1])
    assert sunday["text"].startswith("Sunday: 8:00 am – 3:00 pm"), sunday["text"]
    assert "|" not in sunday["text"] and sunday["citations"] == [f"{site}/contact.html"]
    sourdough = answer_of(ask(base, tenant.widget_key, "What's the price of the sourdough?", origin=site)[1])
    assert "$9.50" in sourdough["text"].split("[1]")[0] and "$12.50" not in sourdough["text"], sourdough["text"]
    assert sourdough["citations"] == [f"{site}/shop/sea-salt-sourdough.html"]


@pytest.mark.slow
@pytest.mark.parametrize("question, contact", [
    ("what's your phone number?", "(207) 555-0148"), ("can I call you?", "(207) 555-0148"),
    ("¿cuál es vuestro teléfono?", "207 555 0148"),
    ("what email can I write to with a question about a cake order", "hello@harborandpine.example"),
])
def test_sample_site_gives_its_own_phone_number_and_email(demo_served, question, contact):
    """The shop's own published number and address are kept (app/demo `as_its_owner_would`, as the
    quickstart sets it up) and answer "how do I reach you?": "what's your phone number?" was refused,
    and the contact page read "Phone: [phone]"."""
    base, tenant, site = demo_served
    answer = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert answer["meta"]["answered"] is True and contact in answer["text"], answer["text"]
    assert any(c.endswith(("/contact.html", "/es/contacto.html")) for c in answer["citations"]), answer["citations"]


@pytest.mark.slow
@pytest.mark.parametrize("question, opening", [
    ("Do you buy second-hand books?", "Yes, on Tuesdays from 10 am to noon. We offer store credit"),
    ("¿tenéis tarjeta de puntos o algo así para el café?", "Sí, una tarjeta de sellos en papel"),
])
def test_sample_site_quotes_an_faq_answer_whole(demo_served, question, opening):
    """The FAQ's answer, not its second sentence alone ("We offer store credit worth 40%…" without
    "Yes, on Tuesdays…"), and nothing after it that only shares a filler word ("algo así")."""
    base, tenant, site = demo_served
    answer = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert answer["text"].startswith(opening), answer["text"]
    assert "gluten" not in answer["text"], answer["text"]


@pytest.mark.slow
@pytest.mark.parametrize("question", ["I use a wheelchair - where's the step-free way in?",
                                      "my mum uses a wheelchair - is there a way in without steps?"])
def test_sample_site_answers_from_a_page_about_many_things(demo_served, question):
    """The about page's passage (its history, its team, the step-free entrance) is little like the
    question, and it was refused as no passage similar enough; the sentence that answers is."""
    base, tenant, site = demo_served
    answer = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert answer["meta"]["answered"] is True and "Net Loft Lane" in answer["text"], answer["text"]


@pytest.mark.slow
@pytest.mark.parametrize("question, answered, quoted", [
    ("Is there parking nearby?", True, "Harbor Lot"), ("¿Hay aparcamiento cerca?", True, "Harbor Lot"),
    ("Do you sell mugs or tote bags?", False, ""), ("Is there a bus stop nearby?", False, ""),
])
def test_sample_site_asked_for_a_thing(demo_served, question, answered, quoted):
    """A thing the site never names is refused ("mugs", "bus stop"); a word that says where
    ("nearby", "cerca") is not part of the thing asked for: "is there parking nearby?" had been
    refused as "the site never mentions parking nearby"."""
    base, tenant, site = demo_served
    answer = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert answer["meta"]["answered"] is answered and quoted in answer["text"], answer["text"]


@pytest.mark.slow
def test_sample_site_names_who_does_the_baking(demo_served):
    base, tenant, site = demo_served
    answer = answer_of(ask(base, tenant.widget_key, "who actually does the baking there?", origin=site)[1])
    assert answer["meta"]["answered"] is True and "Mara Ellison" in answer["text"], answer["text"]


@pytest.mark.slow
def test_sample_site_follow_ups_use_the_conversation(demo_served):
    base, tenant, site = demo_served
    first = answer_of(ask(base, tenant.widget_key, "What time do you open on Sunday?", origin=site)[1])
    conversation = first["meta"]["conversation_id"]
    import time

    for _ in range(50):  # the first turn is stored just after its stream closes
        follow = answer_of(ask(base, tenant.widget_key, "and on Saturdays?", origin=site,
                               conversation_id=conversation)[1])
        if follow["text"].startswith("Saturday"):
            break
        time.sleep(0.1)
    assert follow["text"].startswith("Saturday: 8:00 am"), follow["text"]
    fresh = answer_of(ask(base, tenant.widget_key, "and on Saturdays?", origin=site)[1])
    assert not fresh["text"].startswith("Saturday: 8:00 am")  # without the conversation it means nothing


@pytest.mark.slow
def test_sample_site_follow_up_carries_the_everyday_words_of_its_subject(demo_served):
    """"Do you run any baking classes?" is about the Sourdough Basics Workshop ("classes" as sites
    write it); "how much is it?" after it is too, and was refused while only the first turn's own
    words were read as the site writes them."""
    import time

    base, tenant, site = demo_served
    first = answer_of(ask(base, tenant.widget_key, "do you guys run any baking classes?", origin=site)[1])
    assert first["meta"]["answered"] is True and "Workshop" in first["text"], first["text"]
    conversation = first["meta"]["conversation_id"]
    for _ in range(50):  # the first turn is stored just after its stream closes
        second = answer_of(ask(base, tenant.widget_key, "who teaches it?", origin=site,
                               conversation_id=conversation)[1])
        if "Mara Ellison" in second["text"]:
            break
        time.sleep(0.1)
    assert "Mara Ellison" in second["text"], second["text"]
    for _ in range(50):
        follow = answer_of(ask(base, tenant.widget_key, "how much is it?", origin=site,
                               conversation_id=conversation)[1])
        if "$65" in follow["text"]:
            break
        time.sleep(0.1)
    assert follow["meta"]["answered"] is True and "$65" in follow["text"], follow["text"]


@pytest.mark.slow
def test_sample_site_answers_a_holiday_by_the_date_it_writes(demo_served):
    """The contact page's holiday hours say "On December 24 and December 31 we open from 8:00 am
    to 1:00 pm" and never "Christmas Eve": the question was refused as naming what the site never
    mentions."""
    base, tenant, site = demo_served
    eve = answer_of(ask(base, tenant.widget_key, "Are you open on Christmas Eve, and if so until what time?",
                        origin=site)[1])
    assert eve["meta"]["answered"] is True and "1:00 pm" in eve["text"], eve["text"]
    assert eve["citations"][0] == f"{site}/contact.html"


@pytest.mark.slow
@pytest.mark.parametrize("question, row", [
    ("Are you open on Monday?", "Monday: Closed"),
    ("What time do you close on Thursday?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
    ("When do you open on Wednesday?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
    ("Do you open on Sundays?", "Sunday: 8:00 am – 3:00 pm"),
    ("can I swing by thursday afternoon around 4?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
    ("Is it too late to show up at 4:45 on a Wednesday?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
    ("how early do you open on weekends", "Saturday: 8:00 am – 6:00 pm"),
    ("what time do you open during the week?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
    ("Are you open on the 26th of December?", "We are closed on December 25, December 26"),
    # The Spanish contact page's retrieved passage was the holiday hours; its table is another.
    ("¿a qué hora abrís entre semana? quería pasar a desayunar un miércoles temprano",
     "De martes a viernes: 7:30 – 17:00"),
    # Two verbs of one ask: refused as the hours of "y cierran los domingos", a thing never mentioned.
    ("¿a qué hora abren y cierran los domingos?", "Domingo: 8:00 – 15:00"),
])
def test_sample_site_answers_a_day_with_its_hours_row(demo_served, question, row):
    """The contact page's hours table has no header row ("Monday | Closed" was read as one) and
    gives Tuesday to Friday as one row: Monday was answered with an event on a Monday, Thursday
    with the delivery days, and Wednesday, which no page names, was refused. A visit proposed at
    a time of day ("swing by", "show up", "4:45"), the weekend and a date the question writes
    itself were refused as words the site never uses, or answered with an event's time or the
    Christmas Eve hours."""
    base, tenant, site = demo_served
    found = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert found["meta"]["answered"] is True and found["text"].startswith(row), found["text"]


@pytest.mark.slow
@pytest.mark.parametrize("question, expected", [
    ("my daughter is coeliac, is there anything at all she can eat from the bakery?", "gluten-free"),
    ("soy intolerante a la lactosa, ¿con qué leche me podéis hacer el café?", "avena"),
    ("can I sit inside with my pup while I have my coffee?", "Dogs are welcome"),
    # "quiero", "cuánto", "podéis" say nothing of the subject: the coverage check no longer counts them.
    ("quiero saber cuánto tarda en llegar el paquete", "de tres a cinco días"),
    ("¿me podéis decir cuánto cuesta el envío?", "$7.50"),
    ("what's the least I can put on a voucher for a friend?", "$10"),  # the site writes "gift cards"
    # "kinda", "just curious" are how a visitor talks, not what the question is about.
    ("what kinda books do you have upstairs? just curious before I visit", "sea stories"),
    ("hasta q hora se puede desayunar?? siempre llego tarde jaja", "11:30"),  # the site writes "desayunos"
    ("my son is allergic to sesame, which of your breads should he avoid", "seeded rye"),  # "allergens"
])
def test_sample_site_answers_a_visitor_s_everyday_words(demo_served, question, expected):
    """"Coeliac", "lactosa", "pup": the site writes "gluten-free", "leche de avena", "Dogs"; the
    questions were refused as using words the site never does."""
    base, tenant, site = demo_served
    found = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert found["meta"]["answered"] is True and expected in found["text"], found["text"]


@pytest.mark.slow
@pytest.mark.parametrize("question", [
    "What time does the post office close on Saturdays?",  # the bakery's Saturday hours answered it
    "What time does the Gull Island ferry leave in the morning?",  # "he skippered the ferry…"
    "how much is the gluten-free loaf you bake on fridays?",  # "we bake a gluten-free loaf on Fridays"
])
def test_sample_site_refuses_the_hours_of_what_it_gives_no_time_for(demo_served, question):
    base, tenant, site = demo_served
    found = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert found["meta"]["answered"] is False, found["text"]


@pytest.mark.slow
@pytest.mark.parametrize("question, lang", [
    ("Where are you located?", "en"), ("What's your address?", "en"), ("Where are you based?", "en"),
    ("¿Dónde estáis?", "es"),
    ("Where can I find you?", "en"),  # the address led, and the answerability model refused it (0.44)
])
def test_sample_site_says_where_it_is(demo_served, question, lang):
    """The sample site gives its address on the contact page, never with "located" or "based":
    "Where are you located?" was refused as using words the site never does, "What's your
    address?" answered "Email address (required)"."""
    base, tenant, site = demo_served
    found = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert found["meta"]["answered"] is True, found["text"]
    assert "14 Quay Street" in found["text"] and "Port Wren" in found["text"], found["text"]
    assert "required" not in found["text"], found["text"]
    assert found["meta"]["lang"] == lang


@pytest.mark.slow
@pytest.mark.parametrize("question", [
    pytest.param("Are you opening a second shop?", marks=pytest.mark.xfail(strict=True, reason=(
        "known miss (docs/eval.md, 'How a question is refused'): every word is the site's own and the "
        "best passage is about the shop, so the answerability model answers it with the car-park FAQ"))),
    "are you hiring baristas right now?",
    # A holiday is read as its date only in a question about when or whether the shop opens: read
    # as December 25, this was answered with the holiday closing days (app/holidays.py).
    "Do you have a Christmas menu?",
    # No page gives a nutrition figure: the bun's price answered it ("the passages give no nutrition figure").
    "how many calories are in the seeded rye?",
    # Nor "A 900 g naturally leavened loaf…": grams are a nutrition figure only beside a nutrient.
    "How many calories are in a slice of the sea salt sourdough?",
    # A menu row gives a price, which answers neither how nor where ("Chai latte: $4.50").
    "How do you make a chai latte at home?", "where is the smoked haddock on the breakfast plate from?",
    # Half its words are the site's ("pine" of the granola, "car" of the car park), and no passage is close.
    "How do I get pine sap off my car's paintwork?",
])
def test_sample_site_near_misses_are_refused_honestly(demo_served, question):
    base, tenant, site = demo_served
    result = answer_of(ask(base, tenant.widget_key, question, origin=site)[1])
    assert result["meta"]["answered"] is False, result["text"]
    assert result["text"].startswith("I could not find that on this site")
