"""The MCP server (`python -m app mcp --tenant T`) driven over stdio by the official MCP SDK client:
the tool list and schemas, kb.search / kb.get / kb.ask on a real tenant, and errors with stable codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from app.context import Context
from app.settings import Settings
from ingest.document import Document, Fact, Section
from ingest.indexer import PageIndexer
from store.migrations import set_meta
from tests.conftest import _MODEL_CACHE

ROOT = Path(__file__).resolve().parents[1]

PAGES = [
    ("https://bakery.test/bread", "Our bread", [
        (("Our bread", "Sourdough"), "Our sourdough bread is baked every morning from a ten-year-old starter."),
        (("Our bread", "Rye"), "Dark rye loaves are baked on Fridays and keep for a week."),
    ], "Q: Do you open on Sunday? A: Yes, the bakery opens at 8 am on Sundays."),
    ("https://bakery.test/delivery", "Delivery", [
        (("Delivery",), "We deliver within 5 km of the shop for 3 euros; orders over 30 euros ship free."),
    ], "Q: Can I pick up my order? A: Yes, pick up at the counter any day until 6 pm."),
]


def build_tenant(data: Path, tenant_id: str, database_url: str = "") -> None:
    ctx = Context(Settings(data_dir=str(data), database_url=database_url))
    try:
        tenant, _ = ctx.create_tenant(tenant_id, "https://bakery.test/")
        indexer = PageIndexer(tenant, ctx.tenant_embedder(tenant))
        for url, title, sections, faq in PAGES:
            indexer.index(Document(
                url=url, canonical_url=url, title=title, lang="en", description=f"{title} at the bakery",
                sections=[Section(heading_path=path, text=text) for path, text in sections],
                facts=[Fact(type="FAQPage", kind="faq", text=faq, data={"@type": "FAQPage"})],
            ))
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("mcp") / "data"
    folder.mkdir()
    _MODEL_CACHE.mkdir(parents=True, exist_ok=True)
    (folder / "models").symlink_to(_MODEL_CACHE, target_is_directory=True)
    build_tenant(folder, "bakery")
    return folder


def server_params(data: Path, tenant_id: str, database_url: str = "") -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    if database_url:
        env["FRONTDESK_DATABASE_URL"] = database_url
    return StdioServerParameters(command=sys.executable, cwd=ROOT, env=env,
                                 args=["-m", "app", "mcp", "--tenant", tenant_id, "--data-dir", str(data)])


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def mcp(request, data, tmp_path_factory):
    """One server process per backend for the module (the same tenant built in the SQLite files,
    or in a real PostgreSQL); tests call it through a blocking portal."""
    url = ""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        build_tenant(data, "bakery", url)
    log = tmp_path_factory.mktemp("mcp-log") / "server.stderr"
    with open(log, "w") as errlog, start_blocking_portal() as portal:
        client = Client(stdio_client(server_params(data, "bakery", url), errlog=errlog))
        with portal.wrap_async_context_manager(client):

            def call(name: str, arguments: dict | None = None):
                return portal.call(client.call_tool, name, arguments)

            yield portal, client, call


def error_of(call, name: str, arguments: dict | None) -> MCPError:
    with pytest.raises(MCPError) as raised:
        call(name, arguments)
    return raised.value


def test_lists_the_three_tools_with_schemas(mcp):
    portal, client, _ = mcp
    tools = {tool.name: tool for tool in portal.call(client.list_tools).tools}
    assert set(tools) == {"kb.search", "kb.get", "kb.ask"}
    assert tools["kb.search"].input_schema["required"] == ["query"]
    assert set(tools["kb.search"].input_schema["properties"]) == {"query", "filters", "k"}
    assert tools["kb.get"].input_schema["required"] == ["url"]
    assert tools["kb.ask"].input_schema["required"] == ["question"]
    assert tools["kb.search"].annotations.read_only_hint is True
    assert "passages" in tools["kb.search"].output_schema["properties"]


def test_search_returns_ranked_passages_with_their_pages(mcp):
    _, _, call = mcp
    result = call("kb.search", {"query": "sourdough bread starter", "k": 3})
    assert not result.is_error
    passages = result.structured_content["passages"]
    assert 1 <= len(passages) <= 3
    top = passages[0]
    assert top["url"] == "https://bakery.test/bread" and top["title"] == "Our bread"
    assert top["heading_path"] == ["Our bread", "Sourdough"] and "starter" in top["text"]
    assert [p["score"] for p in passages] == sorted((p["score"] for p in passages), reverse=True)
    assert '"passages"' in result.content[0].text  # the same data as text, for clients without structure


def test_search_filters(mcp):
    _, _, call = mcp
    faq = call("kb.search", {"query": "open sunday", "filters": {"kinds": ["faq"]}}).structured_content
    assert faq["passages"] and {p["kind"] for p in faq["passages"]} == {"faq"}
    prefix = call("kb.search", {"query": "bread delivery", "filters": {"url_prefix": "https://bakery.test/deliv"}})
    assert {p["url"] for p in prefix.structured_content["passages"]} == {"https://bakery.test/delivery"}
    german = call("kb.search", {"query": "bread", "filters": {"lang": "de"}}).structured_content
    assert german["passages"] == []


def test_get_returns_the_page_text_in_order_and_its_facts(mcp):
    _, _, call = mcp
    for spelling in ("https://bakery.test/bread", "/bread", "https://bakery.test/bread/#rye"):
        page = call("kb.get", {"url": spelling}).structured_content
        assert page["url"] == "https://bakery.test/bread", spelling
    assert (page["title"], page["description"], page["lang"]) == ("Our bread", "Our bread at the bakery", "en")
    texts = [chunk["text"] for chunk in page["chunks"]]
    assert texts.index(next(t for t in texts if "sourdough" in t)) < texts.index(next(t for t in texts if "rye" in t))
    assert page["facts"] == [{"type": "FAQPage", "kind": "faq", "data": {"@type": "FAQPage"},
                              "text": "Q: Do you open on Sunday? A: Yes, the bakery opens at 8 am on Sundays."}]


def test_ask_runs_the_answer_pipeline(mcp):
    _, _, call = mcp
    answer = call("kb.ask", {"question": "How much does delivery cost?"}).structured_content
    assert answer["answered"] is True and answer["source"] in ("retrieval", "cache")
    assert "3 euros" in answer["answer"]
    assert answer["citations"][0]["url"] == "https://bakery.test/delivery"
    assert 0 < answer["confidence"] <= 1
    unknown = call("kb.ask", {"question": "Who won the football world cup in 1986?"}).structured_content
    assert unknown["answered"] is False and unknown["source"] == "not_found"


@pytest.mark.parametrize(("name", "arguments", "code"), [
    ("kb.search", {}, "INVALID_QUERY"),
    ("kb.search", None, "INVALID_QUERY"),
    ("kb.search", {"query": "   "}, "INVALID_QUERY"),
    ("kb.search", {"query": "bread", "k": "ten"}, "INVALID_QUERY"),
    ("kb.search", {"query": "bread", "filters": {"kinds": ["poem"]}}, "INVALID_QUERY"),
    ("kb.search", {"query": "bread", "filters": {"colour": "red"}}, "INVALID_QUERY"),
    ("kb.get", {}, "INVALID_QUERY"),
    ("kb.get", {"url": "https://bakery.test/no-such-page"}, "NOT_FOUND"),
    ("kb.ask", {"question": ""}, "INVALID_QUERY"),
    ("kb.ask", {"question": "?" * 5000}, "INVALID_QUERY"),
    ("kb.shout", {"text": "hi"}, "NOT_FOUND"),
])
def test_bad_calls_are_mcp_errors_with_stable_codes(mcp, name, arguments, code):
    _, _, call = mcp
    error = error_of(call, name, arguments)
    assert error.data["code"] == code
    assert error.message.startswith(f"{code}: ")
    assert error.code == {"INVALID_QUERY": -32602, "NOT_FOUND": -32002}[code]


def test_a_broken_backend_is_backend_unavailable(data, tmp_path):
    """A file whose vectors no longer match the model is refused per call, with the fix named."""
    build_tenant(data, "stale")

    async def scenario() -> MCPError:
        with open(tmp_path / "server.stderr", "w") as errlog:
            async with Client(stdio_client(server_params(data, "stale"), errlog=errlog)) as client:
                assert (await client.call_tool("kb.search", {"query": "bread"})).structured_content["passages"]
                ctx = Context(Settings(data_dir=str(data)))
                try:  # as if the packaged weights changed under a running server
                    with ctx.registry.get("stale").write() as conn:
                        set_meta(conn, embedder_fingerprint="minilm-l6-v2-int8:other-weights")
                finally:
                    ctx.close()
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("kb.search", {"query": "bread"})
                return raised.value

    error = anyio.run(scenario)
    assert error.data["code"] == "BACKEND_UNAVAILABLE" and error.code == -32003
    assert "frontdesk reindex stale" in error.message


def test_an_unknown_tenant_is_refused_before_serving(data):
    finished = subprocess.run([sys.executable, "-m", "app", "mcp", "--tenant", "nosuch", "--data-dir", str(data)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert finished.returncode == 1
    assert finished.stdout == ""  # stdout belongs to the protocol
    assert finished.stderr.strip() == "frontdesk: tenant nosuch does not exist"
