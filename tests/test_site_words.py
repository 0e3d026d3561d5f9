"""A visitor's question in the words the site writes (pure logic: app/site_words.py)."""

from __future__ import annotations

import datetime as dt

from app.events import PageContext
from app.prompt import Source
from app.site_words import in_site_words, known_besides_index, shorthand_written


def source(text: str) -> Source:
    return Source(n=1, title="Contact", url="https://site.test/contact", text=text, kind="prose")


HOURS = source("Monday: Closed\nTuesday to Friday: 7:30 am – 5:00 pm\nAddress: 14 Quay Street, Port Wren")


def test_a_question_is_searched_with_the_words_the_site_writes():
    # A holiday as the date the site writes; a question about the place's own opening, with the
    # word its hours are headed with.
    assert in_site_words("Are you open on Christmas Eve?", "", None, "en").query == (
        "Are you open on Christmas Eve? December 24 opening hours")
    assert in_site_words("Where are you located?", "", None, "es").query == "Where are you located? dirección address"
    visit = in_site_words("can I swing by thursday around 4?", "", None, "en")
    assert visit.query.endswith("opening hours") and {"swing", "4"} <= visit.visiting
    weekend = in_site_words("how early do you open on weekends", "", None, "en")
    assert weekend.weighed == "saturday sunday"
    follow = in_site_words("and on Saturdays?", "opening hours", None, "en")
    assert follow.query.startswith("opening hours and on Saturdays?")
    plain = in_site_words("Do you sell croissants?", "", None, "en")
    assert plain.query == "Do you sell croissants?" and plain.weighed == ""


def test_today_is_weighed_as_the_visitor_s_day():
    local = dt.datetime.now(dt.timezone(dt.timedelta(hours=-5)))
    words = in_site_words("Are you open today?", "", PageContext(local_time=local.isoformat()), "en")
    assert words.weighed == local.strftime("%A") and words.today.words == "today"


def test_the_question_s_own_words_are_known_where_a_passage_writes_what_they_stand_for():
    where = in_site_words("Where are you located?", "", None, "en")
    known, _ = known_besides_index(where, "Where are you located?", [HOURS], "")
    assert known == "Where are you"
    known, _ = known_besides_index(where, "Where are you located?", [source("We bake every day.")], "")
    assert known == ""
    question = "Is it too late to show up at 4:45 on a Wednesday?"
    known, spanned = known_besides_index(in_site_words(question, "", None, "en"), question, [HOURS], "")
    assert "wednesday" in spanned and {"late", "show", "45"} <= set(known.split())
    known, spanned = known_besides_index(in_site_words(question, "", None, "en"), question, [source("No hours.")], "")
    assert not spanned and "late" not in known.split()


def test_a_visitor_s_everyday_word_is_searched_as_sites_write_it():
    """"My daughter is coeliac" shares no word with "The almond-orange cake is gluten-free": the
    question was refused as using words the site never does."""
    from app.visitor_words import site_terms_for

    assert site_terms_for("my daughter is coeliac, is there anything she can eat?", "en") == (
        "gluten-free gluten", {"coeliac"})
    assert site_terms_for("mi hija es celiaca, ¿hay algo que pueda comer?", "es")[0] == "sin gluten gluten"
    assert site_terms_for("soy intolerante a la lactosa, ¿qué leche tenéis?", "es")[0].startswith("avena")
    assert site_terms_for("my mum uses a wheelchair", "en")[0].startswith("step-free")
    assert site_terms_for("can I sit inside with my pup?", "en") == ("dogs pets", {"pup"})
    assert site_terms_for("¿Cuánto me cobran por enviar un pedido?", "es")[0] == "envío envían"
    assert site_terms_for("my granola jar showed up smashed", "en")[0] == "damaged"
    assert site_terms_for("how much is postage to Oregon?", "en")[0] == "ship shipping"
    assert site_terms_for("any storytime kind of thing for my 4 yr old?", "en")[0] == "story hour"
    assert site_terms_for("what would you charge to bring a cake to my house?", "en")[0] == "delivery deliver"
    assert site_terms_for("¿me lo lleváis a casa?", "es")[0] == "reparto domicilio"
    assert site_terms_for("can I buy a gift voucher?", "en") == ("gift card gift cards", {"voucher"})
    assert site_terms_for("how many tins and what size for the cake?", "en")[0] == "pan pans"
    assert site_terms_for("can I swap the courgette for aubergine?", "en")[0] == "zucchini eggplant"
    assert site_terms_for("vale, ¿y cuánto cuesta?", "es") == ("", frozenset())  # "vale": okay
    assert site_terms_for("do you guys run any baking classes?", "en")[0] == "workshop workshops"
    assert site_terms_for("hasta q hora se puede desayunar??", "es")[0] == "desayuno desayunos"
    assert site_terms_for("my son is allergic to sesame, which bread?", "en") == (
        "allergens allergen", {"allergic"})  # was refused: "allergic" and "allergen" share no stem
    assert site_terms_for("¿tenéis algo para alérgicos al huevo?", "es")[0] == "alérgenos alérgeno"
    assert site_terms_for("how do I subclass a class in Python?", "en") == ("", frozenset())  # code
    for question in ("auto reload in uvicorn", "How do I deploy with Docker?", "how do I drive the API from a script?",
                     "i shipped a broken release", "how do I send a request with a body?", "POST a form",
                     "send the response back to my client"):
        assert site_terms_for(question, "en") == ("", frozenset()), question
    words = in_site_words("my daughter is coeliac, is there anything she can eat?", "", None, "en")
    assert words.weighed == "gluten-free gluten" and words.query.endswith("gluten-free gluten")
    assert "gluten" not in words.covered  # the coverage check reads the visitor's words only
    cake = source("The almond-orange cake is gluten-free and baked every day.")
    assert "coeliac" in known_besides_index(words, "my daughter is coeliac…", [cake], "")[0].split()
    assert "coeliac" not in known_besides_index(words, "my daughter is coeliac…", [HOURS], "")[0].split()


def test_where_the_visitor_is_is_not_a_name_the_site_should_know():
    """"I'm in Oregon - can I get your coffee beans mailed to me?" was refused as naming what the
    site never mentions; the site answers it ("we ship anywhere in the United States")."""
    from app.visitor_words import visitor_place

    assert visitor_place("I'm in Oregon - can I get your coffee beans mailed to me?") == "Oregon"
    assert visitor_place("driving in from Bangor, where's the best place to leave the car?") == "Bangor"
    assert visitor_place("vivo en México, ¿me podéis mandar un paquete de café?") == "México"
    for question in ("How do I migrate from Flask?", "I am in the Harbor Lot", "deploy to Azure from GitHub"):
        assert visitor_place(question) == "", question
    words = in_site_words("I'm in Oregon, do you ship?", "", None, "en")
    assert "Oregon" in known_besides_index(words, "I'm in Oregon, do you ship?", [HOURS], "")[0]


def test_who_does_something_is_searched_as_the_one_who_does_it():
    """"Who actually does the baking?" against "Mara Ellison is our head baker": "baking" and
    "baker" share no stem."""
    from app.visitor_words import agent_words

    assert agent_words("who actually does the baking there?").split()[0] == "baker"
    assert agent_words("who's in charge of the roasting?").split()[0] == "roaster"
    assert agent_words("how do I start baking bread?") == ""  # not a question about who


def test_a_shortened_country_is_known_where_a_passage_writes_it_in_full():
    """"¿Cuánto cuesta enviar una bolsa de café a otro estado de EE. UU.?" was refused as naming "EE"
    and "UU", which the site never writes: it writes "Estados Unidos"."""
    assert shorthand_written("¿…a otro estado de EE. UU.?", "se envían a todo Estados Unidos") == "EE. UU."
    assert shorthand_written("do you ship to the USA?", "We ship within the United States.") == "USA"
    assert shorthand_written("do you ship to the USA?", "We ship within Canada.") == ""
    assert shorthand_written("can you send it to us?", "We ship within the United States.") == ""
