"""The site's own published contact points (clean.allow_site_contacts): learned from its
Organization / LocalBusiness data and its contact page, kept in answers, while everybody else's
numbers and addresses are still scrubbed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec
import pytest

from app.__main__ import main
from app.demo.server import DemoSite
from ingest.clean import clean_text, site_contact_points
from ingest.document import Document, Fact
from ingest.pipeline import CrawlOptions, crawl
from store.config import CleanSettings
from store.contacts import site_contacts
from tests.conftest import fresh_context
from tests.sitesrv import serve_site

SITE = Path(__file__).parent / "sites" / "hostile"


def test_a_number_allowed_with_its_country_code_is_kept_in_its_national_form():
    settings = CleanSettings(allow=["+1-207-555-0148"])
    assert clean_text("Call (207) 555-0148 or +1 207 555 0148.", settings) == "Call (207) 555-0148 or +1 207 555 0148."
    assert clean_text("Or Tom on (207) 555-0199.", settings) == "Or Tom on [phone]."
    # The digits rule is for phone numbers only: a card ending in the same digits is still scrubbed.
    card = "Card 4111 0612 0755 50148."  # a valid card number whose digits end in the allowed phone's
    assert clean_text(card, CleanSettings(allow=["207-555-0148"])) == "Card [card]."


def test_contact_points_come_from_organization_data_and_a_contact_page():
    doc = Document(
        url="https://shop.example/contact/", canonical_url="https://shop.example/contact/", title="Contact us",
        facts=[
            Fact(type="Bakery", text="Crumb & Co (bakery).", data={
                "telephone": "+1-207-555-0199", "email": "mailto:hello@shop.example", "faxNumber": "+1 207 555 0100",
                "contactPoint": [{"telephone": "+1-207-555-0123", "contactType": "orders"}]}),
            Fact(type="Person", text="Jane Doe.", data={"telephone": "+44 20 7946 0958"}),
        ],
        contact_links=["tel:+12075550111", "mailto:orders@shop.example?subject=Order", "https://x.example/"],
    )
    assert site_contact_points(doc) == [
        ("+1-207-555-0199", "phone"), ("+1 207 555 0100", "phone"), ("hello@shop.example", "email"),
        ("+1-207-555-0123", "phone"), ("+12075550111", "phone"), ("orders@shop.example", "email"),
    ]
    # Links on any other page are not the site's own to claim.
    elsewhere = msgspec.structs.replace(doc, url="https://shop.example/team/", canonical_url="https://shop.example/team/",
                                        title="Our team", facts=[])
    assert site_contact_points(elsewhere) == []


def _crawl(ctx, site_url: str, *, allow: bool, model: str | None = None):
    tenant, _ = ctx.create_tenant("contacts" if allow else "plain", site_url + "/", model=model,
                                  allow_private_network=True)
    config = tenant.config()
    tenant.set_config(msgspec.structs.replace(
        config, clean=msgspec.structs.replace(config.clean, allow_site_contacts=allow)))
    summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0)))
    assert summary.status == "done" and summary.failed == 0, summary
    return tenant


def page_text(tenant, path: str) -> str:
    rows = tenant.reader().execute(
        "SELECT c.text FROM pages p JOIN page_chunks pc ON pc.page_id = p.id JOIN chunks c ON c.id = pc.chunk_id "
        "WHERE p.url LIKE ? ORDER BY pc.position", ("%" + path,)).fetchall()
    return "\n".join(r[0] for r in rows)


def test_the_business_keeps_its_numbers_and_the_baker_loses_his(tmp_path_factory):
    import tests.fakes  # noqa: F401  (the fake embedder: this is about what is scrubbed)
    from tests.fakes import FAKE_MODEL

    ctx = fresh_context(tmp_path_factory, "contacts")
    try:
        with serve_site(SITE, "http://127.0.0.1:8799") as site:
            tenant = _crawl(ctx, site.url, allow=True, model=FAKE_MODEL)
            plain = _crawl(ctx, site.url, allow=False, model=FAKE_MODEL)
        assert set(site_contacts(tenant.reader())) == {
            "+1-207-555-0199", "hello@crumbandco.example", "+12075550123", "orders@crumbandco.example"}
        contact = page_text(tenant, "/contact.html")
        assert "Call the bakery on (207) 555-0199 or write to hello@crumbandco.example." in contact
        assert "Orders: (207) 555-0123, orders@crumbandco.example." in contact
        assert "his own phone, [phone]" in contact  # Tom's mobile is nobody's business
        team = page_text(tenant, "/team.html")
        assert "jane.doe.private@gmail.com" not in team and "[email]" in team
        # Without the owner's opt-in everything is scrubbed, as before.
        assert "Call the bakery on [phone] or write to [email]." in page_text(plain, "/contact.html")
        assert site_contacts(plain.reader()) == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_the_demo_site_answers_with_its_real_phone_number(tmp_path_factory, capsys):
    """End to end on the bundled sample site, the real model: "what's your phone number?"."""
    ctx = fresh_context(tmp_path_factory, "demo-contacts")
    site = DemoSite().start()
    try:
        _crawl(ctx, site.url, allow=True)
        for question in ("What's your phone number?", "What is your phone number?"):
            assert main(["--data-dir", str(ctx.data_dir), "--json", "ask", "contacts", question]) == 0
            result = json.loads(capsys.readouterr().out)
            assert "(207) 555-0148" in result["answer"] or "+1-207-555-0148" in result["answer"], result["answer"]
            assert "[phone]" not in result["answer"]
        _crawl(ctx, site.url, allow=False)
        assert main(["--data-dir", str(ctx.data_dir), "--json", "ask", "plain", "What's your phone number?"]) == 0
        assert "555-0148" not in json.loads(capsys.readouterr().out)["answer"]
    finally:
        site.close()
        ctx.close()


@pytest.mark.slow
def test_the_quickstart_keeps_the_sample_shops_own_contact_points(tmp_path, capsys):
    """`frontdesk quickstart` sets the sample tenant up as its owner would (app/demo
    `as_its_owner_would`): a visitor who asks how to reach the shop gets its number, not a refusal."""
    assert main(["--data-dir", str(tmp_path), "quickstart", "--no-serve"]) == 0
    capsys.readouterr()
    for question, contact in (("Can I call you?", "(207) 555-0148"),
                              ("What email can I write to about a cake order?", "hello@harborandpine.example")):
        assert main(["--data-dir", str(tmp_path), "--json", "ask", "demo", question]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["answered"] is True and contact in result["answer"], result["answer"]
