"""The extractive answer and follow-ups: units, scoring and choosing (pure logic, no model). What a
question asks, read from its words alone, is tests/test_asks.py; the whole pipeline on the
quickstart's sample site, crawled for real and asked over HTTP, tests/test_sample_site_answers.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.answerability import (
    answerability,
    names_in_passing,
    unknown_timed_subject,
    verdict_without_sentence,
)
from app.eval import answer_precision
from app.extractive import LEAD_CHARS, select, term_weights
from app.followup import carried_subject
from app.prompt import Source
from app.sources import quoted_first
from app.units import is_code, row_text, units_of


def source(n: int, text: str, *, title: str = "", kind: str = "prose", context: str = "",
           similarity: float = 0.5) -> Source:
    return Source(n=n, title=title or f"Page {n}", url=f"https://site.test/p{n}", text=text, kind=kind,
                  context=context, similarity=similarity)


HOURS = source(1, "Opening hours\n\nDay | Hours\nMonday | Closed\nSaturday | 8:00 am – 4:00 pm\n"
                  "Sunday | 8:00 am – 3:00 pm", title="Contact and opening hours")
MENU = source(2, "Dish | Price\nChowder of the day with sourdough | $12.50\nCrab roll with slaw | $19.00",
              title="Menu and prices")
PRODUCT = source(3, "Sea Salt Sourdough — $9.50, in stock. A 900 g naturally leavened loaf.",
                 title="Sea Salt Sourdough", kind="fact")
HISTORY = source(4, "The bookshop opened upstairs in 2017. Out of the oven at 7 am every day we are open.",
                 title="Our history")
COUNTS = {"sunday": 2, "sundays": 2, "open": 30, "price": 20, "sourdough": 6, "saturday": 2,
          "saturdays": 2, "bookshop": 3}


def quoted(question: str, sources: list[Source], carried: str = "") -> list[tuple[int, str]]:
    selection = select(question, sources, term_weights(question, COUNTS, 100, carried=carried))
    return [(sources[q.source].n, q.text) for q in selection.quotes]


def test_the_lead_handed_to_the_answerability_embedding_is_cut_at_lead_chars():
    """A long lead sentence is quoted whole, but only its first LEAD_CHARS characters are embedded
    (its cost grows with its tokens); a table row keeps its header in front."""
    long_sentence = ("Our sourdough is proofed for forty-eight hours in the cold room before it is baked, "
                     "which gives the crust its blistered look and the crumb its open, glossy holes; "
                     "we shape every loaf by hand, score it with a razor, and bake it on the stone hearth "
                     "of the old oven at a heat that the bakers check three times every single morning.")
    assert len(long_sentence) > LEAD_CHARS
    question = "how long is the sourdough proofed?"
    selection = select(question, [source(1, long_sentence, title="Bread")], term_weights(question, COUNTS, 100))
    assert selection.quotes[0].text == long_sentence
    assert selection.lead == long_sentence[:LEAD_CHARS]
    selection = select("what does the chowder cost?", [MENU], term_weights("chowder cost", COUNTS, 100))
    assert selection.lead.startswith("Dish Price") and len(selection.lead) <= LEAD_CHARS


def test_a_table_row_is_read_with_its_header():
    assert row_text(["Day", "Hours"], ["Sunday", "8:00 am – 3:00 pm"]) == "Sunday: 8:00 am – 3:00 pm"
    assert row_text(["Dish", "Price", "Allergens"], ["Chowder", "$12.50", "fish"]) == \
        "Chowder — Price: $12.50; Allergens: fish"
    units = units_of(HOURS, 0)
    assert [u.kind for u in units] == ["sentence", "row", "row", "row"]
    assert units[-1].text == "Sunday: 8:00 am – 3:00 pm" and "Day Hours" in units[-1].about


def test_an_faq_answer_is_one_unit_and_code_stays_whole():
    faq = source(1, "Q: Do you deliver? A: Yes, within 10 km. Orders before noon arrive the same day.")
    assert [(u.kind, u.text) for u in units_of(faq, 0)] == \
        [("faq", "Yes, within 10 km. Orders before noon arrive the same day.")]
    code = "from fastapi import FastAPI\n\napp = FastAPI()"
    assert is_code("from fastapi import FastAPI\napp = FastAPI()")
    assert not is_code("We bake every morning.\nThe shop opens at eight and closes at six in the evening.")
    doc = source(1, "Create an app with FastAPI:\n\n" + code.replace("\n\n", "\n"))
    assert [u.kind for u in units_of(doc, 0)] == ["sentence", "code"]


def test_a_listing_cut_inside_a_docstring_is_never_quoted():
    """An API reference page shows its source; a chunk that opens inside a docstring would be quoted
    as broken code ("Read more about it in the … \"\"\" return super()…"). A whole function is kept."""
    cut = ('Read more about it in the\n    [FastAPI docs for Background Tasks](https://x.test/bg/)\n'
           '    """\n    return super().add_task(func, *args, **kwargs)')
    whole = 'def add_task(self, func):\n    """Add a task."""\n    return super().add_task(func)'
    page = source(1, f"Background tasks run after the response.\n\n{cut}\n\n{whole}")
    assert [(u.kind, u.text) for u in units_of(page, 0)] == \
        [("sentence", "Background tasks run after the response."), ("code", whole)]


def test_an_faq_answers_yes_only_to_a_question_that_asks_yes_or_no():
    """"Yes." answers the FAQ's own question: quoted for "can I order a cake?", left out for "how
    far ahead", where it would read as an answer to something the visitor did not ask."""
    cakes = source(1, "Q: Do you make custom cakes? A: Yes. Whole cakes need 72 hours' notice. "
                      "An 8-inch cake serves 10 to 12 people.", title="FAQ")
    counts = {"cake": 3, "cakes": 3, "order": 5, "advance": 1, "notice": 1}
    for question, opening in (("How far in advance do I order a whole cake?", "Whole cakes need"),
                              ("¿Con cuánta antelación encargo una tarta? cake", "Whole cakes need"),
                              ("Can I order a whole cake?", "Yes. Whole cakes need"),
                              ("Wie lange vorher bestelle ich einen cake?", "Whole cakes need")):
        selection = select(question, [cakes], term_weights(question, counts, 100))
        assert selection.quotes[0].text.startswith(opening), question


def test_a_word_that_names_nothing_does_not_bring_a_second_unit():
    """A unit that says what the lead does not joins it ("oat milk costs nothing extra" beside the
    latte's price), but not for a word like "come": the parking answer stands alone, without the
    table reservations' "first come, first served"."""
    faq = source(1, "Q: Can I reserve a table? A: We do not reserve tables for small groups: seating is first "
                    "come, first served. Groups of eight or more can book by phone.\n\n"
                    "Q: Where can I park? A: We have no car park of our own. The public Harbor Lot on Wharf "
                    "Road is a two-minute walk away; it costs $2 an hour.", title="FAQ")
    counts = {"leave": 1, "car": 1, "come": 1, "visit": 4}
    question = "where can i leave the car when i come to visit you?"
    texts = [q.text for q in select(question, [faq], term_weights(question, counts, 100)).quotes]
    assert texts == ["We have no car park of our own. The public Harbor Lot on Wharf Road is a two-minute walk "
                     "away; it costs $2 an hour."], texts
    latte = source(2, "Drink | Price\nLatte | $4.75\nCappuccino | $4.50\n\nOat, almond and soy milk cost nothing "
                      "extra.", title="Menu")
    question = "how much is a latte if I want it with oat milk?"
    weights = term_weights(question, {"latte": 1, "oat": 1, "milk": 2, "want": 1}, 100)
    texts = [q.text for q in select(question, [latte], weights).quotes]
    assert "Latte: $4.75" in texts and "Oat, almond and soy milk cost nothing extra." in texts, texts


def test_a_code_tab_s_label_is_not_a_sentence():
    """"Python 3.10+" above a listing labels a tab; quoted after "…you can write:" it stood where
    the code should have."""
    page = source(1, "To serve a 404.html page for missing paths, you can write:\n\nPython 3.10+\n\n"
                     "from fastapi import FastAPI\napp = FastAPI()\n\nThat response keeps a status code of 404.")
    assert [(u.kind, u.text) for u in units_of(page, 0)] == [
        ("sentence", "To serve a 404.html page for missing paths, you can write:"),
        ("code", "from fastapi import FastAPI\napp = FastAPI()"),
        ("sentence", "That response keeps a status code of 404.")]
    labelled = source(2, "Sunday\n\nWe open at 8 am.")  # a short line before prose stays
    assert [u.text for u in units_of(labelled, 0)] == ["Sunday", "We open at 8 am."]


def test_a_block_of_imports_alone_is_not_the_code_example():
    """The shortest block of a tutorial is often its imports: shown as the how-do-I example, it
    named the API and showed nothing of how. It stands only when it imports what was asked about."""
    page = source(1, "To test your app, use TestClient with pytest:\n\n"
                     "from fastapi import FastAPI, Header\nfrom pydantic import BaseModel\n\n"
                     "client = TestClient(app)\nresponse = client.get(\"/items/\")\n\n"
                     "Write functions whose names start with test_.", title="Testing")
    question = "how do I test my app?"
    weights = term_weights(question, {"test": 3, "app": 9}, 100)
    codes = [q.text for q in select(question, [page], weights).quotes if "\n" in q.text]
    assert codes == ["client = TestClient(app)\nresponse = client.get(\"/items/\")"], codes
    static = source(2, "Mount a folder to serve its files as they are:\n\n"
                       "from fastapi import FastAPI\nfrom fastapi.staticfiles import StaticFiles", title="Static")
    question = "how do I serve static files?"
    weights = term_weights(question, {"static": 2, "files": 5, "serve": 4}, 100)
    assert any("StaticFiles" in q.text for q in select(question, [static], weights).quotes)


def test_a_how_do_i_answer_names_the_api_its_page_is_about():
    """"¿Cómo ejecuto una tarea en segundo plano?" had been answered with the page's opening
    sentence alone, which names no API of the page: the page's sentence that names `BackgroundTasks`
    (a name its code uses and the other pages do not, unlike `FastAPI`, in every page's title) comes
    with it, and the code example that uses it."""
    page = source(1, "Con FastAPI puedes definir tareas en segundo plano para que se ejecuten después de devolver un "
                     "response.\n\nEsto es útil para operaciones lentas.\n\nPor ejemplo, enviar un correo.\n\n"
                     "Para las tareas en segundo plano, importa BackgroundTasks y declara un parámetro de ese tipo."
                     "\n\n"
                     "app = FastAPI()\n@app.post(\"/send\")\nasync def send(background_tasks: BackgroundTasks):\n"
                     "    background_tasks.add_task(write_log)", title="Tareas en segundo plano")
    other = source(2, "Un response puede llevar cookies.", title="Cookies - FastAPI")
    question = "cómo ejecuto una tarea en segundo plano después de responder"
    weights = term_weights(question, {"tarea": 3, "tareas": 3, "segundo": 4, "plano": 3, "después": 8,
                                      "responder": 2}, 100)
    texts = [q.text for q in select(question, [page, other], weights).quotes]
    assert texts[0].startswith("Con FastAPI puedes definir tareas"), texts
    assert any(t.startswith("Para las tareas en segundo plano, importa BackgroundTasks") for t in texts), texts
    assert any("background_tasks.add_task" in t for t in texts), texts


def test_a_where_question_leads_with_a_unit_that_names_a_place():
    """"Where does the lantern walk start from?" had been answered "lanterns are lent at the start",
    which names no place; the line that says where ("starts on our harbor terrace") answers."""
    from app.asks import asks_of
    from app.carries import carries

    page = source(1, "Lanterns are lent at the start.\n\nThe walk starts on our harbor terrace at 4 pm.",
                  title="Events")
    question = "where does the lantern walk start from?"
    weights = term_weights(question, {"lantern": 2, "walk": 3, "start": 6}, 100)
    assert select(question, [page], weights).lead == "The walk starts on our harbor terrace at 4 pm."
    assert asks_of("¿dónde empieza el paseo?").place and asks_of("wo beginnt der Spaziergang?").place
    assert not asks_of("when does the walk start?").place
    assert carries("upstairs in the bookshop", "place") and carries("aus Huila in Kolumbien", "place")
    assert carries("en la terraza del puerto", "place") and not carries("In stock", "place")
    assert not carries("we open on Monday", "place") and not carries("back in January", "place")


def test_rare_words_outweigh_common_ones_and_unknown_words_are_left_to_coverage():
    weights = term_weights("What's the price of the sourdough?", COUNTS, 100)
    assert weights["sourd"] > 3 * weights["price"]  # "price" says what kind of answer, not what of
    assert "blorf" not in term_weights("blorf sourdough", COUNTS, 100)
    carried = term_weights("and on Saturdays?", COUNTS, 100, carried="Do you open on Sundays?")
    assert carried["satur"] > carried["sunda"]  # the subject carried over counts half
    # "wie lange", "a qué temperatura": what kind of answer, like "how long" and "price".
    counts = {"lange": 4, "lachs": 4, "ofen": 4, "temperatura": 4, "bizcocho": 4}
    german = term_weights("wie lange muss der Lachs in den Ofen?", counts, 100)
    assert german["lange"] < 0.5 * german["lach"] and german["ofen"] == german["lach"]
    spanish = term_weights("¿a qué temperatura horneo el bizcocho?", counts, 100)
    assert spanish["tempe"] < 0.5 * spanish["bizco"]
    # "make", "get", "want": light words that name no subject ("can i get the stuffing done
    # before thanksgiving?") weigh a quarter of a word as rare.
    light = term_weights("can i get the stuffing done before thanksgiving?", {"get": 4, "stuffing": 4}, 100)
    assert light["get"] == 0.25 * light["stuff"]


def test_the_answer_leads_with_the_row_that_answers_and_cites_only_its_page():
    picked = quoted("Do you open on Sundays?", [HOURS, HISTORY, MENU])
    assert picked == [(1, "Sunday: 8:00 am – 3:00 pm")]


def test_a_price_question_prefers_the_product_fact_over_a_dish_that_mentions_it():
    picked = quoted("What's the price of the sourdough?", [MENU, PRODUCT, HISTORY])
    assert picked[0][0] == 3 and "$9.50" in picked[0][1]
    assert all(n == 3 for n, _ in picked)


RECIPE = source(5, "Harvest Pumpkin Muffins — recipe by Ana.\n\nTime: prep 10 min, cook 20 min.\n\n"
                   "Ingredients: 2 cups rolled oats; 1 cup pumpkin puree; 1/4 cup honey; 2 large eggs; "
                   "1 1/2 tsp baking powder.\n\nSteps: 1. Preheat the oven to 400°F.",
                kind="fact", title="Harvest Pumpkin Muffins")
STORAGE = source(6, "Image: Pumpkin muffins cooling on a rack\n\n- Image: Pumpkin bread on a rack\n- Pumpkin "
                    "bread\n\nThe muffins keep in an airtight container "
                    "for up to 5 days.\n\nThey are best the day they are baked.", title="Harvest Pumpkin Muffins")
MUFFIN_COUNTS = {**COUNTS, "pumpkin": 2, "muffins": 2, "honey": 1, "keep": 3, "oats": 1, "rack": 1}


def muffin_quotes(question: str) -> list[str]:
    selection = select(question, [RECIPE, STORAGE], term_weights(question, MUFFIN_COUNTS, 100))
    return [q.text for q in selection.quotes]


def test_the_sentence_before_the_lead_is_quoted_when_the_next_one_does_not_read_on():
    """"Conectar mi api a una base de datos sql" led with "Tendrías un solo objeto engine…" and left
    out the sentence before it, which says what an engine is: the next sentence (off the subject)
    stopped the lead's passage from being read backwards."""
    engine = source(1, "The engine keeps the connections to the SQL database your API uses. You need a single "
                       "engine object for all of your code to connect your API to the same SQL database. Weather "
                       "in the mountains changes quickly and hikers should always carry a warm jacket with them.",
                    title="SQL databases")
    counts = {**COUNTS, "connect": 3, "database": 4, "engine": 2, "connections": 2, "sql": 2, "api": 5}
    question = "connect my api to a sql database"
    quotes = [q.text for q in select(question, [engine], term_weights(question, counts, 100)).quotes]
    assert quotes == ["The engine keeps the connections to the SQL database your API uses.",
                      "You need a single engine object for all of your code to connect your API to the same SQL "
                      "database."]


def test_a_list_item_is_quoted_with_the_term_its_heading_names():
    """"How do I mark my project as archived?" was answered "- The index … MUST NOT allow uploads…",
    an item that does not say it is about "archived"; a section's heading ("Returns") is not added."""
    from store.pages import PagePassage

    status = source(1, "Project status markers.", title="Project Status Markers")
    passages = {0: [
        PagePassage(text="- The index hosting the project MUST NOT allow uploads of new distributions.\n"
                         "- The index MUST offer existing distributions of the project for download.", kind="prose",
                    heading_path=["Project Status Markers", "archived"]),
        PagePassage(text="- Books can be returned within 30 days.", kind="prose", heading_path=["Returns"]),
    ]}
    counts = {**COUNTS, "archived": 1, "uploads": 3, "allow": 3, "mark": 2, "project": 5, "returned": 1, "books": 2}
    question = "how do I mark my project as archived so no new uploads are allowed"
    quotes = [q.text for q in select(question, [status], term_weights(question, counts, 100), passages=passages).quotes]
    assert quotes[0] == "archived: The index hosting the project MUST NOT allow uploads of new distributions.", quotes
    question = "can I return the books"
    quotes = [q.text for q in select(question, [status], term_weights(question, counts, 100), passages=passages).quotes]
    assert quotes[0] == "- Books can be returned within 30 days.", quotes


def test_a_structured_list_is_quoted_by_the_item_that_answers():
    """"How much honey" quotes the honey, not the whole ingredient list (which, naming everything
    in the dish, would otherwise lead any question about it)."""
    assert muffin_quotes("How much honey goes in the pumpkin muffins?")[0] == "1/4 cup honey"
    # Also where a long fact's next chunk opens with the list.
    rest = source(8, "Ingredients: 2 cups rolled oats; 1 cup pumpkin puree; 1/4 cup honey.\n\nSteps: 1. Mix.",
                  kind="fact", title="Harvest Pumpkin Muffins")
    question = "How much honey goes in the pumpkin muffins?"
    assert select(question, [rest], term_weights(question, MUFFIN_COUNTS, 100)).lead == "1/4 cup honey"
    # And where the chunk opens in the middle of the list, with no label left.
    rest = source(8, "puree; 2 large eggs; 8 oz mascarpone (if you don't have mascarpone, you can use cream "
                     "cheese); 1/4 cup honey; 1 1/2 tsp baking powder.\n\nSteps: 1. Mix.",
                  kind="fact", title="Harvest Pumpkin Muffins")
    question = "I have no mascarpone, what can I use instead in the pumpkin muffins?"
    assert select(question, [rest], term_weights(question, {**MUFFIN_COUNTS, "mascarpon": 1}, 100)).lead == (
        "8 oz mascarpone (if you don't have mascarpone, you can use cream cheese)")


def test_how_long_asks_for_a_length_of_time_not_any_number():
    assert muffin_quotes("How long will the pumpkin muffins keep?")[0] == (
        "The muffins keep in an airtight container for up to 5 days.")
    # Both name the muffins and keeping them, both hold a number; only the second says how long.
    keeping = source(9, "Keep the muffins in a tin with 2 sheets of paper.\n\nKeep the muffins in a tin for 5 days.",
                     title="Harvest Pumpkin Muffins")
    question = "How long do the muffins keep in a tin?"
    counts = {**MUFFIN_COUNTS, "tin": 2}
    assert select(question, [keeping], term_weights(question, counts, 100)).lead == (
        "Keep the muffins in a tin for 5 days.")


def test_a_temperature_question_asks_for_degrees_not_any_number():
    # Both name the oven and the muffins; only the second says how hot.
    baking = source(7, "Bake the muffins in the oven for 20 minutes.\n\nHave the oven for the muffins at 400°F.",
                    title="Harvest Pumpkin Muffins")
    question = "How hot should the oven be for the muffins?"
    selection = select(question, [baking], term_weights(question, {**MUFFIN_COUNTS, "oven": 3}, 100))
    assert selection.lead == "Have the oven for the muffins at 400°F."


CONTACT = source(10, "Harbor & Pine\n14 Quay Street\nPort Wren, ME 04987\n\nPhone: [phone]\n\n"
                    "Email address (required)\n\nMessage (required)", title="Contact")
BUSINESS = source(11, "Harbor & Pine (local business). Address: 14 Quay Street, Port Wren, ME 04987, US. Opening "
                      "hours: Tue–Fri 07:30–17:00; Sat 08:00–18:00; Sun 08:00–15:00.", kind="fact", title="Contact")


def test_where_the_place_is_asks_for_its_address_not_the_word():
    """"What's your address?" is answered by the lines of the postal address, read as one, not by
    the form field that uses the word ("Email address (required)")."""
    counts = {**COUNTS, "address": 3, "located": 0}
    for question in ("What's your address?", "Where are you located?"):
        lead = select(question, [CONTACT], term_weights(question, counts, 100)).lead
        assert lead == "Harbor & Pine, 14 Quay Street, Port Wren, ME 04987", (question, lead)
    assert [u.text for u in units_of(CONTACT, 0)][:2] == ["Harbor & Pine, 14 Quay Street, Port Wren, ME 04987",
                                                         "Phone: [phone]"]


def test_an_organisation_s_fact_is_one_unit_not_a_list_cut_at_its_hours():
    """A fact's "Label: a; b; c" list is cut into its items (an ingredient list); an organisation's
    fact, whose first sentence ends before "Address:", is not a list."""
    assert [u.text for u in units_of(BUSINESS, 0)] == [BUSINESS.text]
    assert [u.text for u in units_of(RECIPE, 0)][2:4] == ["2 cups rolled oats", "1 cup pumpkin puree"]


def test_a_question_for_a_time_a_price_a_temperature_a_count_or_a_length_of_time_needs_a_passage_writing_it():
    from app.asks import must_carry
    from app.carries import carries

    for question in ("What time does the Gull Island ferry leave?", "how late are you open on fridays?",
                     "¿A qué hora salen los paquetes?", "opening hours of the mill?"):
        assert must_carry(question) == (("clock", "time of day"),), question
    for question in ("how much is the gluten-free loaf?", "What does shipping cost?", "¿Cuánto cuesta el envío?",
                     "what's the price of a latte", "Was kostet ein Brot?", "how much would a 10-inch cake be?",
                     "¿cuánto me cuesta el envío?"):
        assert must_carry(question) == (("money", "price"),), question
    for question in ("When is the author evening?", "Do you open on Sundays?",
                     "How much water goes into the stew?", "does it cost extra for oat milk?",
                     "how much sugar goes into the cake?",
                     # How long before, not a time of day: "start soaking them at least 4 hours ahead".
                     "how early do i need to start soaking the chicken thighs?"):
        assert must_carry(question) == (), question
    for question in ("How many calories are in a cardamom bun?", "¿Cuántas calorías tiene una ración?",
                     "How much sodium is in a serving?", "Hur många kalorier blir det per portion?"):
        assert must_carry(question) == (("nutrition", "nutrition figure"),), question
    for question in ("How hot should the oven be for the potatoes?", "¿A qué temperatura pongo la airfryer?",
                     "Wie heiß muss der Ofen sein?"):
        assert must_carry(question) == (("temperature", "temperature"),), question
    for question in ("How many people can take part?", "How many pancakes does it make?"):
        assert must_carry(question) == (("count", "number"),), question
    # A recipe's yield, not any number on its page ("published 25 April 2021").
    for question in ("How many servings does the chili make?", "how many people will the pie feed?",
                     "Wie viele Portionen?", "¿Para cuántas personas es la receta?"):
        assert must_carry(question) == (("servings", "number of servings"),), question
    for text in ("Serves 4", "Yield: 16 servings", "Zutaten für 4 Personen", "makes 12 muffins", "2 servings"):
        assert carries(text, "servings"), text
    assert not carries("Hearty Chourico Chili, published 25 April 2021", "servings")
    # A length of time, and for "how many days…?" that rather than any number; "how hot, and for how
    # long?" must write the temperature, the length may follow.
    for question in ("Wie lange sind die Zertifikate gültig?", "¿Cuánto tiempo tarda el envío?"):
        assert must_carry(question) == (("length_of_time", "length of time"),), question
    # How long something keeps: hours or longer (tests/test_asks.py).
    for question in ("How long does the loaf keep?", "¿Cuántos días aguanta en la nevera?",
                     "How many months can I freeze it?"):
        assert must_carry(question) == (("keeping_time", "length of time"),), question
    assert must_carry("Wie heiß muss der Ofen sein und wie lange bleibt die Pfanne drin?") == (
        ("temperature", "temperature"),)
    for text in ("It keeps for 3 days.", "Keeps three days in a bread bag", "a 36-hour cold ferment", "1½ hours",
                 "freeze nicely for 3 to 4 months", "about an hour", "overnight", "2–3 business days",
                 "in 3 Werktagen", "durante cinco minutos", "Saturday, 9:00 am to 12:00 noon", "A 3 km walk",
                 "ACCESS_TOKEN_EXPIRE_MINUTES = 30", "for twenty minutes", "media hora", "eine halbe Stunde",
                 "ready the next day",
                 "max_age - a maximum time in seconds to cache responses. Defaults to 600"):
        assert carries(text, "length_of_time"), text
    for text in ("Bake until golden.", "A 900 g loaf", "Sourdough Basics Workshop, 12 December 2026", "$9.50",
                 "If you're not using it right away, wrap it well."):
        assert not carries(text, "length_of_time"), text
    # What a service charges, a deposit, the most characters allowed, a size limit: figures too.
    for question in ("What does BigQuery charge per terabyte past the free tier?",
                     "How much deposit do I get back for the jar?"):
        assert must_carry(question) == (("money", "price"),), question
    assert must_carry("What is the maximum number of characters a name may have?") == (("count", "number"),)
    for question in ("How much disk space does a full mirror need?", "Is there a size limit on the README, and how "
                     "many kilobytes is it?", "¿A partir de qué tamaño exacto pasa el archivo a disco?"):
        assert must_carry(question) == (("size", "size"),), question
    for question in ("What year was your building built?", "¿Desde cuándo existe la librería?",
                     "Seit wann gibt es das?"):
        assert must_carry(question) == (("year", "year"),), question
    assert carries("put up in 1903 as a sail loft", "year") and not carries("Open 7:30 to 17:00", "year")
    for question in ("How far in advance do I need to order a cake?", "¿Con cuánta antelación hay que encargarla?"):
        assert must_carry(question) == (("length_of_time", "length of time"),), question
    assert carries("Order it the day before.", "length_of_time") and carries("Whole cakes need 72 hours' notice",
                                                                           "length_of_time")
    for question in ("What size are your birthday cakes?", "Do you charge for delivery?"):
        assert must_carry(question) == (), question
    assert carries("up to 1 GB per file", "size") and carries("max_part_size=1024 * 1024", "size")
    assert not carries("a generous size limit applies", "size")
    for question in ("Which pip version started respecting Requires-Python?",
                     "What's the minimum version of twine I need?", "¿Desde qué versión de pip funciona?",
                     "Ab welcher Version geht das?"):
        assert must_carry(question) == (("number", "version number"),), question
    for question in ("Can I try the newest version of a CLI tool once?", "which version control system should I use?"):
        assert must_carry(question) == (), question
    # A tool's version leads with that tool's number ("added in Pip 9.0"), not any number ("Metadata 1.2+").
    from app.asks import lead_must_write
    assert lead_must_write("Which pip version started respecting that field?") == ("version of pip",)
    assert lead_must_write("¿Qué versión de Python necesito?") == ("version of Python",)
    assert lead_must_write("Which version should I pin?") == ("number",)
    assert carries("Support for the Metadata 1.2 specification has been added in Pip 9.0.", "version of pip")
    assert not carries("Metadata 1.2+ installers, such as Pip, will adhere to it", "version of pip")
    assert carries("Bake at 200°C", "temperature") and carries("vorheizen auf 250 Grad", "temperature")
    assert not carries("Bake until golden", "temperature")
    assert carries("up to eight people", "count") and carries("ocho personas", "count") and carries("12", "count")
    assert not carries("as many as you like", "count")
    assert carries("Per serving: 920 kcal, 38 g protein", "nutrition")
    assert not carries("Cardamom bun: $4.25", "nutrition")
    # Grams are a nutrition figure beside a nutrient, not a loaf's weight ("how many calories are
    # in a slice?" had been answered with "A 900 g naturally leavened loaf…").
    assert not carries("A 900 g naturally leavened loaf with a 36-hour cold ferment.", "nutrition")
    assert not carries("Ingredients: 225 g smoked tofu; 300 g Tenderstem", "nutrition")
    assert carries("Protein: 12 g; Fat: 3g", "nutrition") and carries("4 g de proteínas", "nutrition")
    for text in ("Tuesday to Friday: 7:30 am – 5:00 pm", "Monday: Closed", "served from noon", "we meet at 10 sharp",
                 "De martes a viernes: 7:30 – 17:00", "a las 8 en punto", "sale del horno a las siete de la mañana"):
        assert carries(text, "clock"), text
    for text in ("He skippered the Gull Island ferry for twelve years.", "Parcels leave on Tuesdays and Thursdays.",
                 "It keeps for 3 days."):
        assert not carries(text, "clock"), text


def test_hours_of_something_the_site_never_mentions_are_not_the_site_s():
    """"What time does the post office close on Saturdays?" was answered with the bakery's own
    Saturday hours."""
    counts = {"time": 9, "post": 0, "office": 2, "close": 5, "saturdays": 4, "banco": 0, "sábados": 3,
              "harbor": 6, "lot": 5, "wharf": 4, "road": 3, "lock": 1, "bakrey": 0}
    assert unknown_timed_subject("What time does the post office close on Saturdays?", counts) == "the post office"
    assert unknown_timed_subject("¿A qué hora cierra el banco los sábados?", counts) == "el banco los sábados"
    assert unknown_timed_subject("What time is sunset on the winter solstice?", {"sunset": 0}) == "sunset"
    # The place itself, something the site names, a word known besides the index, no hours asked.
    assert unknown_timed_subject("What time do you close on Saturdays?", counts) == ""
    assert unknown_timed_subject("When does the café open?", {"café": 0, "open": 3}) == ""
    assert unknown_timed_subject("What time does the Harbor Lot on Wharf Road lock up?", counts) == ""
    assert unknown_timed_subject("What time does the post office close?", counts, known="the post office") == ""
    assert unknown_timed_subject("Where is the post office?", counts) == ""
    # Two verbs of one ask: the place's own hours ("abren y cierran" had made "y cierran los
    # domingos" the subject, a thing the site never mentions).
    days = {"domingos": 2, "cierran": 0, "banco": 0}
    assert unknown_timed_subject("¿a qué hora abren y cierran los domingos?", days) == ""
    assert unknown_timed_subject("¿A qué hora abren y cierran el banco?", days) == "el banco"


def test_a_day_inside_an_hours_range_is_answered_by_its_row():
    """"What time do you close on Thursday?" is answered by "Tuesday to Friday", not by a
    delivery sentence that names Thursdays."""
    hours = source(12, "|\nMonday | Closed\nTuesday to Friday | 7:30 am – 5:00 pm\nSaturday | 8:00 am – 6:00 pm",
                   title="Contact and opening hours")
    delivery = source(13, "We deliver on Thursdays and Saturdays between 10 am and 1 pm.", title="Delivery")
    counts = {**COUNTS, "thursday": 1, "monday": 1, "close": 5, "time": 9}
    for question, answer in (("What time do you close on Thursday?", "Tuesday to Friday: 7:30 am – 5:00 pm"),
                             ("Are you open on Monday?", "Monday: Closed")):
        weights = term_weights(question, counts, 100)
        assert select(question, [delivery, hours], weights).quotes[0].text == answer, question


def lead_of_one_page(question: str, text: str, counts: dict[str, int]) -> str:
    """The unit an answer leads with, from one page whose title names nothing asked."""
    return select(question, [source(1, text, title="Shop")], term_weights(question, counts, 100)).lead


def test_a_temperature_on_the_lead_s_page_answers_however_far_down_it_scores():
    """"¿A cuántos grados pongo la freidora de aire para el bizcocho de limón?" was refused: the step
    that gives the temperature uses none of the question's words, and a price or a count that far
    down would be another item's, but a recipe writes its temperature once."""
    assert "165 ºC" in lead_of_one_page(
        "¿a cuántos grados pongo la freidora de aire para el bizcocho de limón?",
        "El bizcocho de limón en freidora de aire queda esponjoso.\n\n"
        "Vierte la masa en un molde. Introduce el molde en la cesta y cocina a 165 ºC durante 40 minutos.",
        {"freidora": 3, "aire": 5, "bizcocho": 4, "limón": 4})


def test_how_long_is_answered_by_the_length_of_time_on_the_lead_s_page_about_what_was_asked():
    """"Does it freeze OK, and for how long?" was refused as "no length of time": the sentence that
    says it ("should freeze nicely for 3 to 4 months") scored below the page's opening. It leads when
    it uses a word of the question besides the page's subject; a cooking time does not, and neither
    does "blend for five minutes" for how long the salmorejo keeps in the fridge."""
    soup = source(1, "Chicken tortilla soup is a great way to use up a lot of left over tortilla chips.\n\n"
                     "Pressure cook the chicken tortilla soup on HIGH for 8 minutes.\n\n"
                     "This soup should freeze nicely for 3 to 4 months.", title="Chicken Tortilla Soup")
    question = "We have a lot of the chicken tortilla soup left over. Does it freeze OK, and for how long?"
    counts = {"lot": 3, "chicken": 4, "tortilla": 3, "soup": 5, "left": 4, "freeze": 2, "long": 20}
    assert select(question, [soup], term_weights(question, counts, 100)).lead == \
        "This soup should freeze nicely for 3 to 4 months."
    salmorejo = source(2, "El salmorejo cordobés se guarda en la nevera hasta servir.\n\n"
                          "Tritura el salmorejo durante cinco minutos a velocidad máxima.",
                       title="Salmorejo cordobés con Thermomix")
    question = "¿Cuántos días aguanta el salmorejo en la nevera?"
    counts = {"días": 9, "aguanta": 1, "salmorejo": 3, "nevera": 2}
    assert "cinco minutos" not in select(question, [salmorejo], term_weights(question, counts, 100)).lead


def test_when_something_is_back_is_answered_with_a_date():
    """"Any idea when the honey granola is coming back?" had been answered with the product's
    description ("Currently sold out"); the sentence that says when leads when nearly as good."""
    from app.asks import lead_must_write

    assert lead_must_write("any idea when the honey granola is coming back?") == ("date",)
    assert lead_must_write("how much is the loaf?") == ("money",)
    assert lead_must_write("what time do you open on Sundays?") == ()  # a row's day leads instead
    assert lead_must_write("¿y qué días los mandáis?") == lead_must_write("which days do you ship?") == ("weekday",)
    assert lead_must_write("how many people does the easy banana cream pie feed?") == ("servings",)
    assert "16 servings" in lead_of_one_page(
        "how many people does the easy banana cream pie feed? having family over",
        "Easy banana cream pie, a family favourite: pudding, bananas and cream in a cookie crust.\n\n"
        "Yield: 16 servings of easy banana cream pie (2 pies).",
        {"people": 2, "easy": 4, "banana": 3, "cream": 3, "pie": 3, "family": 2})
    assert "martes" in lead_of_one_page(
        "¿y qué días mandáis los envíos?",
        "No hacemos envíos fuera de Estados Unidos; los envíos dentro del país cuestan $7.50.\n\n"
        "Los paquetes de los envíos salen los martes y los jueves.",
        {"días": 20, "mandáis": 0, "envíos": 3})
    assert "January 2027" in lead_of_one_page(
        "any idea when the honey granola is coming back?",
        "Honey granola with oats, baked with pine honey; the honey granola is sold out.\n\n"
        "The harvest was small; the next batch is expected in early January 2027.",
        {"honey": 3, "granola": 2, "coming": 9, "back": 9})


def test_a_price_question_leads_with_a_price_when_one_is_nearly_as_good():
    """"How much does it cost to send a bag of coffee to another state?" quoted the sentence about
    where parcels go, which shares more words with it, not the one with the price."""
    shipping = source(14, "Coffee, granola, books and printed gift cards ship anywhere in the United States. "
                          "Parcels go out on Tuesdays and Thursdays and take three to five working days to arrive "
                          "in any state. Shipping costs a flat $7.50 per order.", title="Delivery and returns")
    question = "How much does it cost to send a bag of coffee to another state?"
    counts = {**COUNTS, "cost": 3, "send": 2, "bag": 2, "coffee": 9, "another": 2, "state": 1}
    selection = select(question, [shipping], term_weights(question, counts, 100))
    assert "$7.50" in selection.lead, selection.quotes


def test_an_image_s_alt_text_is_never_quoted():
    quotes = muffin_quotes("Is there a picture of the pumpkin muffins on a rack?")
    assert quotes and not any("Image:" in q or "on a rack" in q for q in quotes)


def test_a_follow_up_is_answered_in_the_conversation_s_context():
    history = [("Do you open on Sundays?", "Sunday: 8:00 am – 3:00 pm [1]")]
    carried = carried_subject("and on Saturdays?", history)
    assert carried == "Do you open on Sundays?"
    assert quoted("and on Saturdays?", [HOURS, HISTORY], carried)[0] == (1, "Saturday: 8:00 am – 4:00 pm")


def test_quoted_sources_come_first_and_are_renumbered():
    sources = [source(1, "a"), source(2, "b"), source(3, "c")]
    reordered, quotes = quoted_first(sources, [(2, "c text", "sentence"), (0, "a text", "sentence")])
    assert [s.url for s in reordered] == ["https://site.test/p3", "https://site.test/p1", "https://site.test/p2"]
    assert [s.n for s in reordered] == [1, 2, 3] and quotes == [(1, "c text", "sentence"), (2, "a text", "sentence")]


def test_answer_precision_counts_sentences_by_the_page_they_cite():
    urls = ["https://site.test/a", "https://site.test/b"]
    assert answer_precision("One. Two. [1] Three. [2]", urls, {"https://site.test/a"}) == pytest.approx(2 / 3, abs=1e-3)
    assert answer_precision("no markers", urls, {"https://site.test/a"}) is None


def test_a_list_of_words_is_prose_not_code():
    """A changelog or navigation list is split into items, never quoted whole as a code block."""
    from app.units import is_code

    assert not is_code("- Added a document on migrating uploads to PyPI.org. (PR #339)\n"
                       "- Added documentation for python_requires. (PR #338)\n- Added a note (PR #335)")
    assert not is_code("- Installation\n  - Install packages in a virtual environment using pip and venv\n"
                       "  - Installing packages using virtualenv")
    assert not is_code("- Image: Basic Guacamole\n  No Bake Basic Guacamole\n- Image: Tuscan Bean Soup\n"
                       "  Pressure Cooker Tuscan Bean Soup")  # pictures of other recipes, with their captions
    # Items with an aside in parentheses, or a version number: still words.
    assert not is_code("- plain text\n- reStructuredText (without Sphinx extensions)\n"
                       "- Markdown (GitHub Flavored Markdown by default, or CommonMark)")
    assert not is_code("- twine 1.8.0\n- setuptools 27.0.0\n- Python 2.7.13 (distutils update)")
    # An ingredient list, quantities and all: quoted whole as code, it led "how many tins?".
    assert not is_code("- 2 1/2 cups (12 1/2 oz./390 g) all-purpose flour\n- 2 cups (1 lb./500 g) sugar\n"
                       "- 1 1/2 tsp. baking powder\n- 3 eggs")
    assert is_code("pip install foo\npython -m build\ntwine upload dist/*")
    assert is_code('from fastapi import FastAPI\napp = FastAPI()\n@app.get("/")\ndef root():\n    return {}')
    assert is_code("steps:\n  - uses: actions/checkout@v4\n  - name: Set up Python")  # YAML's lists
    assert is_code("- foo(1)\n- bar(x=2)")  # calls, not words


def test_a_sentence_that_introduces_a_list_is_quoted_with_the_whole_list():
    """"…README renderer are:" then three items: the answer is the list, not its first item alone."""
    readme = source(1, "For your README to display properly on PyPI, choose a markup language supported by "
                       "PyPI. Formats supported by PyPI's README renderer are:\n\n- plain text\n"
                       "- reStructuredText (without Sphinx extensions)\n"
                       "- Markdown (GitHub Flavored Markdown by default, or CommonMark)\n\n"
                       "It's customary to save your README file in the root of your project.",
                    title="Making a PyPI-friendly README")
    question = "which formats does the README renderer support?"
    counts = {"formats": 2, "readme": 6, "renderer": 2, "support": 9}
    text = " ".join(q.text for q in select(question, [readme], term_weights(question, counts, 100)).quotes)
    assert "Formats supported by PyPI's README renderer are:" in text
    assert "- plain text\n- reStructuredText (without Sphinx extensions)\n- Markdown (GitHub" in text
    assert "customary" not in text


def test_a_terminal_session_counts_by_the_commands_typed_not_by_what_they_print():
    """Twenty lines of `pipx list` output use the question's words ("apps", "PATH", "installed")
    and answer nothing: the sentence that names `pipx run` leads, and the log a server prints
    never does. Blocks of code and commands alone are not transcripts."""
    from app.terminal import typed_commands

    assert typed_commands("$ pipx list\nvenvs are in ~/.local/pipx/venvs\napps are on your $PATH") == "pipx list"
    assert typed_commands(">>> import sys\n>>> sys.prefix\n'/usr'\n>>> for p in sys.path:\n...     print(p)") == (
        "import sys\nsys.prefix\nfor p in sys.path:\n    print(p)")
    assert typed_commands("INFO: Will watch for changes\nINFO: Uvicorn running on http://127.0.0.1:8000") == ""
    assert typed_commands("Collecting example-pkg\n  Downloading example_pkg-0.0.1.whl\nSuccessfully installed") == ""
    assert typed_commands("$ pip install build\n$ python -m build") is None  # commands alone
    assert typed_commands("class P(Protocol):\n    def run(self) -> None:\n        ...") is None  # "..." is Ellipsis
    assert typed_commands("export PATH=$HOME/.local/bin:$PATH\necho $PATH") is None
    page = source(1, "$ pipx list\nvenvs are in /home/user/.local/pipx/venvs\n"
                     "apps are exposed on your $PATH at /home/user/.local/bin\n"
                     "manual pages are exposed at /home/user/.local/share/man\n"
                     "   package black 24.2.0, installed using Python 3.12.2\n    - black\n    - blackd\n"
                     "   package cowsay 6.1, installed using Python 3.12.2\n    - cowsay\n\n"
                     "To try an application once without installing it, use pipx run, which runs it in a "
                     "temporary environment.", title="Installing stand alone command line tools")
    question = "can I try a command line tool once without installing the app on my PATH?"
    counts = {"try": 6, "comma": 30, "line": 20, "tool": 4, "once": 5, "insta": 50, "app": 9, "path": 12}
    selection = select(question, [page], term_weights(question, counts, 100))
    assert selection.lead.startswith("To try an application once"), selection.quotes


def test_a_sentence_that_finishes_the_lead_s_thought_is_quoted_with_it():
    """"But it is now deprecated." and "Default 600." are the answer, though they share no word
    with the question: they read on from the lead in its own paragraph, and a new paragraph does not."""
    docker = source(1, "There used to be an official FastAPI Docker image: tiangolo/uvicorn-gunicorn-fastapi. "
                       "But it is now deprecated.\n\nYou should build your own image from the official Python one.",
                    title="FastAPI in Containers - Docker")
    counts = {"tiangolo": 1, "uvicorn": 20, "gunicorn": 3, "fastapi": 90, "docker": 4, "imag": 5, "base": 10}
    question = "should I still build on the tiangolo/uvicorn-gunicorn-fastapi docker base image?"
    texts = [q.text for q in select(question, [docker], term_weights(question, counts, 100)).quotes]
    assert texts[:2] == ["There used to be an official FastAPI Docker image: tiangolo/uvicorn-gunicorn-fastapi.",
                         "But it is now deprecated."], texts
    cors = source(1, "- max_age - Sets a maximum time in seconds for browsers to cache CORS responses. Default 600.\n"
                     "- expose_headers - Indicate any response headers that should be made accessible to the browser.",
                  title="CORS")
    question = "how long may browsers cache the CORS responses?"
    texts = [q.text for q in select(question, [cors], term_weights(question, {"cach": 2, "cors": 5, "brows": 4},
                                                                   100)).quotes]
    assert texts[:2] == ["- max_age - Sets a maximum time in seconds for browsers to cache CORS responses.",
                         "Default 600."], texts
    assert not any(t.startswith("- expose_headers") for t in texts)  # the next item is another thought


@given(confidence=st.floats(0, 1), lexical=st.floats(0, 1), threshold=st.floats(0.01, 0.99),
       similarity=st.floats(-1, 1))
def test_the_lead_sentence_is_skipped_only_when_its_similarity_cannot_change_the_verdict(
        confidence, lexical, threshold, similarity):
    """`verdict_without_sentence` decides without the lead sentence's embedding only when every
    similarity the model can read gives the same verdict; the signals then carry the bound."""
    verdict = verdict_without_sentence(confidence, lexical, threshold)
    measured = answerability(confidence, 0.5, similarity, lexical).probability >= threshold
    if verdict is not None:
        assert measured is verdict
        skipped = answerability(confidence, 0.5, None, lexical, threshold=threshold)
        assert skipped.sentence_similarity is None and (skipped.probability >= threshold) is verdict
    else:
        low = answerability(confidence, 0.5, 0.0, lexical).probability
        high = answerability(confidence, 0.5, 1.0, lexical).probability
        assert low < threshold <= high


def test_a_how_question_in_any_phrasing_is_answered_with_the_example_that_uses_the_api():
    """"Wie lege ich fest…" asks how to do something as "how do I" does, and the example shown is
    the one that fits the question, not merely the shortest on the page."""
    from app.asks import asks_of

    assert asks_of("Wie lege ich fest, dass ein Query-Parameter höchstens 50 Zeichen lang sein darf?").howto
    assert asks_of("¿cómo le devuelvo un error 404?").howto
    assert asks_of("How does a program know it runs in a virtual environment?").howto
    # A clause may open with "how" after another ("Andere Frage: Wie …?", "I'm new. How do I …?").
    assert asks_of("Andere Frage: Wie verschicke ich nach der Antwort eine E-Mail im Hintergrund?").howto
    assert asks_of("I'm new to this. How do I start a project?").howto
    assert not asks_of("Do you sell bread? How much is it?").howto
    assert not asks_of("How much is a latte?").howto
    assert not asks_of("Wie lange dauert der Kurs?").howto
    page = source(1, "You can define background tasks, such as write_notification, to be run after returning a "
                     "response. "
                     "Sending an email, for one, takes seconds.\n\n"
                     "def write_notification(email: str):\n    save(email)\n\n"
                     "Declare a parameter of type BackgroundTasks and add the function to it:\n\n"
                     "@app.post(\"/send-notification/{email}\")\n"
                     "async def send_notification(email: str, background_tasks: BackgroundTasks):\n"
                     "    background_tasks.add_task(write_notification, email)\n"
                     "    return {\"message\": \"Notification sent in the background\"}",
                  title="Background Tasks")
    question = "how do I run a background task after returning the response"
    counts = {"background": 2, "task": 3, "run": 10, "return": 30, "respons": 40}
    quotes = select(question, [page], term_weights(question, counts, 100)).quotes
    assert quotes[0].text.startswith("You can define background tasks"), quotes
    code = [q.text for q in quotes if q.kind == "code"]
    assert len(code) == 1 and "background_tasks: BackgroundTasks" in code[0], quotes


def test_a_how_do_i_answer_leads_with_the_sentence_that_says_how_and_the_code_follows():
    """A long code block outscores a short sentence on its length; when the sentence uses more of
    the question's words it leads, and the example follows it."""
    fields = "".join(f'        "{name}": settings.{name},\n' for name in (
        "app_name", "admin_email", "items_per_user", "database_url", "debug", "log_level", "timezone",
        "cache_seconds", "max_upload", "region", "bucket"))
    page = source(1, "Settings\n\n@app.get(\"/info\")\n"
                     "async def info(settings: Annotated[Settings, Depends(get_settings)]):\n    return {\n"
                     f"{fields}    }}\n\n"
                     "Using @lru_cache lets you avoid reading the dotenv file again.\n\n"
                     "@lru_cache\ndef get_settings():\n    return Settings()",
                  title="Settings and Environment Variables")
    question = "How do I stop the settings file being read again on every request?"
    counts = {"stop": 5, "read": 3, "settings": 40, "file": 30, "every": 20, "request": 60}
    selection = select(question, [page], term_weights(question, counts, 100))
    assert selection.lead.startswith("Using @lru_cache"), selection.quotes
    assert [q.kind for q in selection.quotes] == ["sentence", "code"], selection.quotes
    # So does which library or tool, and what to install or run, though they ask no "how".
    question = "Which library keeps the settings file from being read again on every request?"
    selection = select(question, [page], term_weights(question, {**counts, "library": 4}, 100))
    assert selection.lead.startswith("Using @lru_cache"), selection.quotes
    question = "Is there anything I must install to stop the settings file being read on every request?"
    selection = select(question, [page], term_weights(question, counts, 100))
    assert selection.lead.startswith("Using @lru_cache"), selection.quotes


def test_a_name_the_site_mentions_in_passing_counts_only_if_the_quoted_passages_lack_it():
    """Below the coverage rule's bar (3 chunks on a large site) a name is incidental: the answer must
    come from a passage that has it. A name the site never uses is `unknown_names`' case."""
    question = "How do I deploy my FastAPI app to Azure App Service?"
    counts = {"deploy": 40, "fastapi": 900, "app": 800, "azure": 2, "service": 60}
    guide = "Deployment\nDeploy to FastAPI Cloud\nYou can deploy your FastAPI app with one command."
    assert names_in_passing(question, counts, "en", 3, guide) == ["Azure"]
    assert names_in_passing(question, counts, "en", 3, guide + " It also runs on Azure.") == []
    assert names_in_passing(question, counts, "en", 3, guide, known="Azure App Service guide") == []
    assert names_in_passing(question, {**counts, "azure": 3}, "en", 3, guide) == []  # the site talks about it
    assert names_in_passing(question, {**counts, "azure": 0}, "en", 3, guide) == []  # never: unknown_names
    assert names_in_passing(question, {k: v for k, v in counts.items() if k != "azure"}, "en", 3, guide) == []


def test_what_to_use_instead_favours_the_unit_that_names_a_substitute():
    """"No mascarpone — what can I use?" is answered by "if you don't have mascarpone cheese, you can
    use cream cheese", not by the recipe's best-matching step about mascarpone."""
    from app.asks import asks_of

    assert asks_of("my store has no mascarpone - what can I use for the topping?").substitute
    assert asks_of("Can I use soy milk instead of coconut milk?").substitute
    assert not asks_of("our build box has no internet, how do i install from wheels?").substitute
    page = source(1, "The fudgy base, the coffee-soaked cookie layer and the creamy mascarpone cream are a "
                     "match made in dessert heaven.\n\n"
                     "- 8 oz cold mascarpone cheese if you don't have mascarpone cheese, you can use cream cheese",
                  title="Tiramisu Brownies")
    question = "my store has no mascarpone, what can i use for the topping on the tiramisu brownies?"
    counts = {"store": 3, "mascarpone": 2, "topping": 4, "tiramisu": 2, "brownies": 2}
    selection = select(question, [page], term_weights(question, counts, 100))
    assert "you can use cream cheese" in selection.lead, selection.quotes


