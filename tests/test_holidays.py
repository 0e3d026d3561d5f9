"""Fixed-date holidays named in a question, read as the dates a site writes (pure logic)."""

from __future__ import annotations

from app.holidays import dated_in, holiday_dates, mentions_date, written_date


def test_a_holiday_is_read_as_its_date_in_the_site_s_language():
    found = holiday_dates("Are you open on Christmas Eve, and if so until what time?", "en")
    assert found.names == ["Christmas Eve"] and found.dates == "December 24"  # not Christmas Day too
    assert found.days == [(12, 24)]
    assert holiday_dates("qué horario tenéis en nochebuena", "es").dates == "24 de diciembre"
    assert holiday_dates("Habt ihr an Silvester offen?", "de").dates == "31. Dezember"
    typed = holiday_dates("Are you open on New Year’s Eve?", "en")  # a phone's apostrophe
    assert typed.names == ["New Year’s Eve"] and typed.dates == "December 31"
    both = holiday_dates("open on new year's eve and new year's day?", "en")
    assert both.dates == "December 31 January 1" and len(both.names) == 2


def test_a_holiday_is_a_date_only_when_the_question_asks_when_or_whether_open():
    """"Do you sell Christmas cookies?" asks about cookies: read as December 25 it was answered
    with the sample site's holiday closing days."""
    assert holiday_dates("Do you sell Christmas cookies?", "en") == ([], [], "")
    assert holiday_dates("Is there a New Year's Eve party?", "en").names == []
    assert holiday_dates("Are you closed on Boxing Day?", "en").dates == "December 26"
    assert holiday_dates("when are you open on saturdays? what about christmas day?", "en").dates == "December 25"


def test_words_that_only_contain_a_holiday_s_name_are_not_one():
    assert holiday_dates("what is the christmasy blend like?", "en").names == []
    assert holiday_dates("how do I publish to PyPI?", "en") == ([], [], "")
    assert holiday_dates("", None) == ([], [], "")


def test_dates_are_written_as_each_language_writes_them():
    assert written_date(12, 24, "en") == "December 24"
    assert written_date(1, 6, "de") == "6. Januar"
    assert written_date(2, 14, "fr") == "14 février"
    assert written_date(10, 31, "sv") == "October 31"  # a language without its months here: English


def test_a_passage_gives_a_date_in_the_ways_pages_write_it():
    for text in ("On December 24 and December 31 we open", "El 24 y el 31 de diciembre abrimos de 8:00 a 13:00",
                 "Am 24. Dezember geschlossen", "Dec. 24 only", "closed 24 December"):
        assert mentions_date(text, 12, 24), text
    for text in ("released in 2024, December", "December 240", "On December 25 we are closed", "24 hours a day"):
        assert not mentions_date(text, 12, 24), text
    found = holiday_dates("open on Christmas Eve or New Year's Eve?", "en")
    assert dated_in(found, "On December 24 we open at 8 am.") == ["Christmas Eve"]  # the 31st is not said


def test_a_date_the_question_writes_is_searched_as_the_site_writes_it():
    """"Are you open on the 26th of December?" shares no word with "closed on December 25,
    December 26 and January 1" ("26th" is not "26"): the holiday line for the 24th led instead."""
    found = holiday_dates("Are you open on the 26th of December?", "en")
    assert found.names == ["26th of December"] and found.days == [(12, 26)] and found.dates == "December 26"
    assert holiday_dates("Will you be open January 1st?", "en").dates == "January 1"
    assert holiday_dates("what time do you close on Dec. 31?", "en").dates == "December 31"
    assert holiday_dates("¿Está abierto el 1 de enero?", "es").dates == "1 de enero"
    assert holiday_dates("Habt ihr am 24. Dezember offen?", "de").dates == "24. Dezember"
    assert holiday_dates("r u open xmas day", "en").dates == "December 25"
    # Not a date: a year, a day out of range, a question that does not ask when.
    assert holiday_dates("open in december 2026?", "en").dates == ""
    assert holiday_dates("are you open on the 45th of May?", "en").dates == ""
    assert holiday_dates("Do you sell the December 24 gift box?", "en") == ([], [], "")
