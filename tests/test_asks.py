"""What a question asks, read from its words alone (no model, no index): where the place is, how
to reach it, when a visitor means to come, which figure an answer must write, whether it leans on
the conversation, and the names and things it asks for that a site may never mention. How the
answer then chooses what to quote is tests/test_extractive.py."""

from __future__ import annotations

import pytest

from app.answerability import question_names, unknown_names
from app.followup import carried_subject, leans_on_history


def test_how_hot_a_sauce_is_asks_for_its_heat_not_degrees():
    """"How hot is the sriracha mayo really?" asks how spicy it is ("5 out of 10"); it was refused
    as giving no temperature."""
    from app.asks import must_carry

    assert must_carry("my husband is a wimp with spice lol, how hot is the sriracha mayo really") == ()
    assert must_carry("how hot is the salsa verde?") == ()
    assert must_carry("How hot should the oven be for the muffins?") == (("temperature", "temperature"),)
    assert must_carry("how hot should the oven be for the chili?") == (("temperature", "temperature"),)


def test_how_long_something_keeps_asks_for_hours_or_longer():
    """"Do the muffins freeze ok, and how long do they last on the counter?" had been answered with
    "process 1 minute"; a keeping time is hours or longer. A cooking time stays a length of time."""
    from app.asks import must_carry
    from app.carries import carries

    keeping = (("keeping_time", "length of time"),)
    assert must_carry("do the pumpkin oat muffins freeze ok, and how long do they last on the counter") == keeping
    assert must_carry("How long will the leftovers keep in the fridge?") == keeping
    cooking = (("length_of_time", "length of time"),)
    assert must_carry("how long does it bake?") == cooking
    assert must_carry("how long do I cook it if the chicken is still frozen?") == cooking
    # A walk lasts too, and "3 km" or "16:00 to 18:00" says how long; a dough rests in the fridge for minutes.
    assert must_carry("How long does the lantern walk last?") == cooking
    assert must_carry("¿Cuánto tiempo dura el taller?") == cooking
    assert must_carry("how long does the dough rest in the fridge?") == cooking
    assert carries("Store in the fridge for up to 3 days.", "keeping_time")
    assert carries("Keeps three days in a bread bag.", "keeping_time")
    assert carries("Best within 24 hours", "keeping_time")
    assert not carries("In a blender add oats and process 1 minute.", "keeping_time")
    assert not carries("Bake for 25 minutes, then cool.", "keeping_time")


@pytest.mark.parametrize("question, where", [
    ("Where are you located?", True), ("What's your address?", True), ("Where can I find you?", True),
    ("where is the bakery", True), ("How do I get to your shop?", True), ("¿Dónde estáis?", True),
    ("address pls", True), ("zip code for the bakery?", True), ("which town is Harbor & Pine in?", True),
    ("I'm driving up on Saturday, where exactly is the café?", True), ("the address for the satnav please", True),
    ("necesito la dirección para el GPS porfa", True),
    ("¿Cuál es vuestra dirección?", True), ("Wo finde ich euch?", True), ("Où êtes-vous ?", True),
    # Documentation asks where things are, and about addresses, without asking where the place is.
    ("where is the config file located?", False), ("How do I get the client's IP address?", False),
    ("¿dónde está la dirección IP del cliente?", False), ("where do I leave my car when I visit?", False),
    ("How do I change the address the server listens on?", False), ("necesito la dirección IP", False),
])
def test_which_questions_ask_where_the_place_is(question, where):
    from app.asks import asks_of, where_the_place_is

    assert asks_of(question).location is where
    assert bool(where_the_place_is(question, "en")[0]) is where


def test_the_device_an_address_is_for_is_asked_not_named():
    """"Necesito la dirección para el GPS" was refused as naming what the site never mentions (GPS)."""
    from app.asks import where_words

    assert "gps" in where_words("necesito la dirección para el GPS porfa")
    assert "satnav" in where_words("can you give me the address for the satnav")


@pytest.mark.parametrize("question, kind", [
    ("what's your phone number?", "phone"), ("can I call you?", "phone"),
    ("what number do I call to order a cake?", "phone"),
    ("what is your email address?", "email"), ("what email can I write to about a cake order", "email"),
    ("how do I get in touch?", "contact"), ("¿cuál es vuestro teléfono?", "phone"), ("¿puedo escribiros?", "email"),
    ("Wie kann ich euch erreichen?", "contact"), ("Wie ist eure Telefonnummer?", "phone"),
    ("Quel est votre numéro de téléphone ?", "phone"),
    # Documentation asks about phone numbers, e-mails and calls without asking how to reach the site.
    ("send an email after signup without making the client wait", ""), ("validate the phone number field", ""),
    ("how do I call an async function from a sync one?", ""), ("where do I put your version number?", ""),
    ("what number on quay street are you?", ""), ("¿cómo envío un correo en segundo plano?", ""),
])
def test_which_questions_ask_how_to_reach_the_place(question, kind):
    from app.asks import asks_of

    assert asks_of(question).own_contact == kind


def test_a_price_alone_answers_no_question_of_how_where_who_or_why():
    from app.asks import only_a_price_answers_nothing

    for question in ("How do you make a chai latte at home?", "¿cómo se prepara un chai latte en casa?",
                     "where is the smoked haddock from?", "who bakes the bread?", "Wie bereitet man Chai zu?"):
        assert only_a_price_answers_nothing(question), question
    for question in ("how much is a chai latte?", "what do you have for breakfast?", "do you have a crab sandwich?",
                     "cuánto sale el bocadillo?", "where can I see your prices?", "Wie viel kostet der Chai?"):
        assert not only_a_price_answers_nothing(question), question


def test_irregular_past_forms_stem_as_their_verb():
    """"How long will it keep?" is answered by "can be kept … for up to 5 days"; "building" is not
    "built" (a table "built that spring" answered "how old is the building?")."""
    from app.stems import stem

    assert stem("kept") == stem("keep") and stem("frozen") == stem("freeze") == stem("froze")
    assert stem("sold") == stem("sell") and stem("paid") == stem("pay")
    assert stem("built") != stem("building")


def test_what_carries_an_address():
    from app.carries import carries

    for text in ("Address: 14 Quay Street, Port Wren", "Harbor & Pine\n14 Quay Street\nPort Wren, ME",
                 "Calle Mayor 12, Madrid", "Hauptstraße 5, 10115 Berlin", "Dirección: Calle Mayor 12"):
        assert carries(text, "address"), text
    for text in ("Email address (required)", "We have 3 Python versions", "Port 8000 on 127.0.0.1",
                 "Set the client's IP address: request.client.host"):
        assert not carries(text, "address"), text


def test_the_days_a_range_spans_in_each_language():
    from app.visits import days_spanned

    assert days_spanned("Tuesday to Friday: 7:30 am – 5:00 pm") == {"tuesday", "wednesday", "thursday", "friday"}
    assert days_spanned("Opening hours: Tue–Fri 07:30–17:00; Sat 08:00–18:00") == {
        "tuesday", "wednesday", "thursday", "friday"}
    assert days_spanned("De martes a viernes: 7:30 – 17:00") == {"martes", "miércoles", "jueves", "viernes"}
    assert days_spanned("Freitag bis Montag") == {"freitag", "samstag", "sonntag", "montag"}
    assert days_spanned("how to use it") == set() and days_spanned("from 8 to 5") == set()


def test_a_visit_proposed_at_a_time_on_a_day_asks_the_hours():
    """"Can I swing by Thursday around 4?" asks the hours in words no hours table uses: they were
    counted as words the site never uses and the question refused."""
    from app.asks import asks_of
    from app.visits import visit_words, when_to_visit

    assert visit_words("Is it too late to show up at 4:45 on a Wednesday?") == {"late", "show", "up", "4", "45"}
    assert visit_words("can I swing by thursday afternoon around 4?") == {"swing", "by", "afternoon", "around", "4"}
    assert {"tarde", "cuatro", "ir"} <= visit_words("¿El domingo por la tarde abrís? Quería ir sobre las cuatro")
    assert "earliest" in visit_words("what's the earliest I can come in on a tuesday?")
    assert "mañana" in visit_words("¿A qué hora abrís el miércoles por la mañana?")
    assert asks_of("can I swing by thursday afternoon around 4?").time
    assert when_to_visit("Si paso el viernes a las seis de la tarde, ¿todavía estará abierto?", "es")[0] == "horario"
    # A number is a time only as one is written or said ("at 10", "4:45", "5pm"), and a day is needed.
    for question in ("can we book a table for 10 people on saturday", "Do you have croissants on Saturday?",
                     "the counts look about ten times too small compared to today, is that a known problem?",
                     "is the shop open late?", "what did the 2017 Saturday market sell?"):
        assert visit_words(question) == frozenset(), question
        assert when_to_visit(question, "en") == ("", frozenset())


@pytest.mark.parametrize("question, lang, searched", [
    ("¿Hasta qué hora estáis abiertos el jueves?", "es", "horario"),
    ("¿A qué hora abrís el jueves?", "es", "horario"),
    ("What time do you shut on Thursdays?", "en", "opening hours"),
    ("are you guys open on monday", "en", "opening hours"),
    ("Habt ihr am Montag geöffnet?", "de", "Öffnungszeiten"),
    ("What time does the ferry leave on Thursdays?", "en", ""),
    ("¿A qué hora abre la nevera solidaria?", "es", ""),
])
def test_when_the_place_itself_opens_is_searched_with_its_hours_heading(question, lang, searched):
    """"¿A qué hora abrís el jueves?" shares no word with "Horario / De martes a viernes: 7:30 –
    17:00": the contact page's hours were not among the passages and the delivery days answered."""
    from app.visits import when_to_visit

    assert when_to_visit(question, lang)[0] == searched


def test_the_weekend_and_the_working_week_are_searched_as_their_days():
    from app.visits import period_days

    assert period_days("how early do you open on weekends", "en") == "saturday sunday"
    assert period_days("¿abrís el fin de semana?", "es") == "sábado domingo"
    assert period_days("Habt ihr am Wochenende offen?", "de") == "samstag sonntag"
    assert period_days("what time do you open on weekdays?", "en") == "monday tuesday wednesday thursday friday"
    assert period_days("¿a qué hora abrís entre semana?", "es") == "lunes martes miércoles jueves viernes"
    assert period_days("Wann öffnet ihr unter der Woche?", "de").startswith("montag dienstag")
    assert period_days("do you open on Saturdays?", "en") == ""


@pytest.mark.parametrize("question, leans", [
    ("and on Saturdays?", True), ("how much is it?", True), ("¿y los sábados?", True),
    ("und am Sonntag?", True), ("what about gluten free bread", True),
    ("how do I pip install my package from it afterwards?", True),  # "it": the subject before
    ("could I make it a couple of days early? how would I warm it back up?", True),  # six words, "it"
    ("How many calories are in a serving?", True),  # "how many" asks; the rest names no subject
    ("How many calories are in the banana cue?", False),
    ("does this guide explain how wheel files store compiled extension modules for several platforms?",
     False),  # a pronoun, but a subject of its own
    ("do you sell gift cards for christmas", False), ("¿tenéis opciones sin gluten para celíacos?", False),
])
def test_which_questions_lean_on_the_conversation(question, leans):
    assert leans_on_history(question) is leans
    assert bool(carried_subject(question, [("When do you open on Sunday?", "…")])) is leans
    assert carried_subject(question, []) == ""  # a first question starts fresh


@pytest.mark.parametrize("question, lang, names", [
    ("How do I deploy the FastAPI app as serverless functions on Vercel?", "en", ["FastAPI", "Vercel"]),
    ("How do I deploy my FastAPI app on Vercel?", "en", ["Vercel"]),  # "my FastAPI app": the visitor's
    ("what's the largest upload in MB you accept?", "en", ["MB"]),
    ("¿Puedo exportar la documentación a un archivo PDF?", "es", ["PDF"]),  # "¿Puedo" opens the sentence
    ("Is it open then? Tuesday works best.", "en", []),  # each sentence's first word is no name
    ("Do you ship to Toronto (Canada)?", "en", ["Toronto", "Canada"]),
    ("Wie binde ich einen Gruppenchat mit Socket.IO ein?", "de", ["Socket.IO"]),  # German capitalises nouns
    ("DO YOU DELIVER ON SUNDAYS", "en", []),  # capitals throughout say nothing
    ("How Do I Upload My Package To Test Index", "en", []),  # nor does Title Case
    ("how do i upload my package", "en", []),
    ("My UserModel fails with a 422 when I post a field called TotalCost", "en", []),  # the visitor's own
    ("why does `ItemOut` drop the price?", "en", []),  # code as the visitor wrote it
    ("Does the soup freeze OK, and is it still good at 9 AM?", "en", []),  # capitals that name nothing
])
def test_the_names_a_question_uses(question, lang, names):
    assert question_names(question, lang) == names


def test_a_name_is_unknown_only_when_no_chunk_and_not_the_visitors_page_has_it():
    """A near miss in the site's vocabulary that names another product ("on Vercel") is refused by
    the name, not by its other words; a name the page being read has, or a word never counted
    (beyond the words looked up), is not unknown."""
    question = "How do I deploy my FastAPI app as serverless functions on Vercel?"
    counts = {"deploy": 40, "fastapi": 900, "app": 800, "serverless": 0, "functions": 30, "vercel": 0}
    assert unknown_names(question, counts, "en") == ["Vercel"]
    assert unknown_names(question, counts, "en", known="Deploying to Vercel takes one click.") == []
    assert unknown_names(question, {t: n for t, n in counts.items() if t != "vercel"}, "en") == []
    assert unknown_names(question, {**counts, "vercel": 2}, "en") == []


def test_a_thing_asked_for_that_the_site_never_mentions_is_unknown():
    """"Do you sell mugs?" on a bakery that sells none: the thing asked for, up to its first
    preposition, has a word no chunk uses. Not where the place or a time is asked ("do you ship
    coffee to Ohio?" asks about coffee), nor in a question that asks what or when."""
    from app.answerability import unknown_wanted_thing

    counts = {"sell": 3, "mugs": 0, "tote": 0, "bags": 2, "online": 9, "shop": 20, "coffee": 12, "ship": 4,
              "ohio": 0, "zumo": 0, "naranja": 3, "natural": 2, "horario": 5, "fin": 0, "semana": 4,
              "tipo": 0, "descuento": 0, "algún": 0}
    assert unknown_wanted_thing("Do you sell Harbor & Pine mugs or tote bags in the online shop?", counts)
    assert unknown_wanted_thing("¿Tenéis zumo de naranja natural?", counts) == "zumo"
    assert unknown_wanted_thing("Do you ship coffee to Ohio?", counts) == ""
    assert unknown_wanted_thing("¿Qué horario tienen el fin de semana?", counts) == ""
    assert unknown_wanted_thing("¿Tenéis algún tipo de descuento?", counts) == ""
    assert unknown_wanted_thing("¿Tenéis zumo?", counts, known="Zumo de naranja: $4") == ""
    assert unknown_wanted_thing("Do you sell mugs?", {**counts, "mugs": 1}) == ""
    # "Is there…?", "¿hay…?", "gibt es…?" ask for a thing too; "somewhere", "a risk" name none.
    counts |= {"minimum": 0, "age": 3, "workshop": 4, "somewhere": 0, "park": 3, "risk": 0, "empfehlung": 0}
    assert unknown_wanted_thing("is there a minimum age for the sourdough workshop?", counts) == "minimum age"
    assert unknown_wanted_thing("Gibt es eine Empfehlung, stattdessen alpine zu verwenden?", counts)
    assert unknown_wanted_thing("Is there somewhere to park nearby?", counts) == ""
    assert unknown_wanted_thing("Is there a risk that the build breaks?", counts) == ""
    # A word that says where or when ends the thing: "is there parking nearby?" asks for parking.
    counts |= {"parking": 2, "nearby": 0, "hoy": 0, "pan": 9}
    assert unknown_wanted_thing("Is there parking nearby?", counts) == ""
    assert unknown_wanted_thing("¿Hay pan hoy?", counts) == ""
    assert unknown_wanted_thing("Is there a minimum age nearby?", counts) == "minimum age"
    # What a tool is asked to support ("does fastapi come with…?", "unterstützt fastapi…?").
    counts |= {"fastapi": 900, "graphql": 12, "zwei": 5, "faktor": 0, "anmeldung": 3}
    assert unknown_wanted_thing("Does FastAPI support GraphQL?", counts) == ""
    assert unknown_wanted_thing("unterstützt fastapi eine zwei-faktor-anmeldung mit codes per sms?", counts)
