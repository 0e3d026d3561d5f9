"""MCP over stdio for one tenant (`frontdesk mcp --tenant ID`): tools kb.search, kb.get and kb.ask,
served by the official MCP Python SDK's low-level `Server`; failures are JSON-RPC errors with a stable code."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

import anyio
import apsw
import msgspec
from mcp import types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from app.answer import Answerer
from app.context import Context
from app.events import (
    ChatRequest,
    Citation,
    PageContext,
)
from app.stack import answer_stack
from store.errors import FrontdeskError, InvalidInput, InvalidQuery, NotFound, PayloadTooLarge
from store.search import Filters
from store.tenants import Connection, Tenant

log = logging.getLogger("frontdesk.mcp")

# -- errors: stable codes in `data.code`, numeric JSON-RPC codes for generic clients -------------

INVALID_QUERY = "INVALID_QUERY"
NOT_FOUND = "NOT_FOUND"
BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"

RPC_CODES = {
    INVALID_QUERY: types.INVALID_PARAMS,  # -32602: the arguments are wrong
    NOT_FOUND: -32002,  # MCP's customary "resource not found"
    BACKEND_UNAVAILABLE: -32003,  # implementation-defined server error range
}


def tool_error(code: str, message: str) -> MCPError:
    return MCPError(RPC_CODES[code], f"{code}: {message}", data={"code": code, "message": message})


def translate(exc: Exception) -> MCPError:
    """The one error tree (store/errors.py) as MCP errors."""
    if isinstance(exc, InvalidInput | PayloadTooLarge):
        return tool_error(INVALID_QUERY, exc.message)
    if isinstance(exc, NotFound):
        return tool_error(NOT_FOUND, exc.message)
    if isinstance(exc, FrontdeskError):
        return tool_error(BACKEND_UNAVAILABLE, exc.message)
    if isinstance(exc, apsw.Error):
        log.warning("knowledge base read failed", exc_info=exc)
        return tool_error(BACKEND_UNAVAILABLE, "the knowledge base could not be read; try again")
    log.error("tool failed", exc_info=exc)
    return tool_error(BACKEND_UNAVAILABLE, "the tool failed unexpectedly; it has been logged")


# -- arguments and results: msgspec Structs, which also publish the tools' JSON schemas ----------

Kind = Literal["prose", "fact", "faq", "form", "action"]


class SearchFilters(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url_prefix: Annotated[str | None, msgspec.Meta(description="Only pages whose URL starts with this.")] = None
    kinds: Annotated[list[Kind] | None, msgspec.Meta(description="Only passages of these kinds.")] = None
    lang: Annotated[str | None, msgspec.Meta(description="Only passages in this language (e.g. 'en').")] = None


class SearchArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=2000, description="What to look for, in words.")]
    filters: SearchFilters | None = None
    k: Annotated[int, msgspec.Meta(ge=1, le=50, description="How many passages to return.")] = 8


class GetArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: Annotated[str, msgspec.Meta(min_length=1, max_length=2000,
                                     description="The page's URL (absolute, or a path on the site).")]


class AskArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    question: Annotated[str, msgspec.Meta(min_length=1, description="The question, as a visitor would ask it.")]
    page_url: Annotated[str | None, msgspec.Meta(description="Answer as if asked on this page of the site.")] = None


class Passage(msgspec.Struct, kw_only=True):
    url: str
    title: str
    heading_path: list[str]
    score: float
    """Fused rank score; compares passages of one search only."""
    similarity: float
    """Cosine similarity of query and passage: an absolute relevance signal (about 0.45+ is on topic)."""
    kind: str
    lang: str
    text: str


class SearchResults(msgspec.Struct, kw_only=True):
    query: str
    passages: list[Passage]


class PageChunk(msgspec.Struct, kw_only=True):
    heading_path: list[str]
    kind: str
    text: str


class PageFact(msgspec.Struct, kw_only=True):
    type: str
    kind: str
    text: str
    data: Any


class Page(msgspec.Struct, kw_only=True):
    url: str
    title: str
    description: str
    lang: str
    updated: str | None
    chunks: list[PageChunk]
    facts: list[PageFact]


class AgentAnswer(msgspec.Struct, kw_only=True):
    answer: str
    citations: list[Citation]
    confidence: float
    answered: bool
    """False when the site does not hold the answer (the text then says so)."""
    lang: str
    source: str
    """retrieval | curated | cache | not_found"""


def object_schema(kind: type) -> dict[str, Any]:
    """A Struct's JSON schema with its own object at the root (MCP wants `type: object` there)."""
    (_,), components = msgspec.json.schema_components([kind], ref_template="#/$defs/{name}")
    schema = dict(components.pop(kind.__name__))
    if components:
        schema["$defs"] = components
    return schema


# -- the knowledge base of one tenant -----------------------------------------------------------


def url_candidates(url: str, site: str) -> list[str]:
    """Ways an agent may spell a stored page URL: relative, with a fragment, with(out) a final slash."""
    absolute = urljoin(site, url.strip()).split("#", 1)[0]
    toggled = absolute[:-1] if absolute.endswith("/") else absolute + "/"
    return list(dict.fromkeys([absolute, toggled]))


def read_page(tenant: Tenant, conn: Connection, urls: list[str]) -> Page | None:
    found = tenant.store.page_content.page_content(conn, urls)
    return msgspec.convert(found, Page, from_attributes=True) if found is not None else None


class KnowledgeBase:
    """The three tools over one tenant. SQLite and embedding run in worker threads."""

    def __init__(self, ctx: Context, tenant_id: str, answerer: Answerer) -> None:
        self.ctx = ctx
        self.tenant_id = tenant_id
        self.answerer = answerer

    def _search(self, args: SearchArgs) -> SearchResults:
        if not args.query.strip():
            raise InvalidQuery("the query is empty")
        tenant = self.ctx.tenant(self.tenant_id)
        filters = None
        if args.filters is not None:
            filters = Filters(url_prefix=args.filters.url_prefix, kinds=list(args.filters.kinds or []) or None,
                              lang=args.filters.lang)
        hits = self.ctx.search(tenant, args.query, k=args.k, filters=filters).hits
        return SearchResults(query=args.query, passages=[
            Passage(url=h.url, title=h.title, heading_path=h.heading_path, score=round(h.score, 6),
                    similarity=round(h.similarity, 4), kind=h.kind, lang=h.lang, text=h.text)
            for h in hits
        ])

    async def search(self, args: SearchArgs) -> SearchResults:
        return await anyio.to_thread.run_sync(self._search, args)  # embeds the query: not only a read

    async def get(self, args: GetArgs) -> Page:
        tenant = await anyio.to_thread.run_sync(self.ctx.tenant, self.tenant_id)
        page = await tenant.read(
            lambda conn: read_page(tenant, conn, url_candidates(args.url, tenant.config(conn).site)))
        if page is None:
            raise NotFound(f"no page {args.url!r} in this knowledge base; kb.search finds page URLs")
        return page

    async def ask(self, args: AskArgs) -> AgentAnswer:
        tenant = await anyio.to_thread.run_sync(self.ctx.tenant, self.tenant_id)
        page = PageContext(url=args.page_url) if args.page_url else None
        request = ChatRequest(key=tenant.widget_key, question=args.question, page=page)
        found = await self.answerer.answer(tenant, request)
        return AgentAnswer(answer=found.answer, citations=found.citations, confidence=found.confidence,
                           answered=found.answered, lang=found.lang, source=found.source)


class ToolSpec(msgspec.Struct, frozen=True):
    name: str
    description: str
    args: type
    result: type
    read_only: bool


TOOLS = (
    ToolSpec("kb.search", "Hybrid (semantic + keyword) search of the site's pages. Returns the best "
             "passages with their page URL, title, heading path, score and text.", SearchArgs, SearchResults, True),
    ToolSpec("kb.get", "One page of the site by URL: title, description, language, its text in order "
             "and its structured facts (JSON-LD, FAQ).", GetArgs, Page, True),
    ToolSpec("kb.ask", "Ask a question; get the site's grounded answer with citations and a confidence. "
             "When the site does not say, `answered` is false.", AskArgs, AgentAnswer, False),
)


def build_server(kb: KnowledgeBase, *, instructions: str = "") -> Server:
    handlers: dict[str, Callable[[Any], Awaitable[msgspec.Struct]]] = {
        "kb.search": kb.search, "kb.get": kb.get, "kb.ask": kb.ask,
    }
    specs = {spec.name: spec for spec in TOOLS}
    listing = types.ListToolsResult(tools=[
        types.Tool(name=spec.name, description=spec.description, input_schema=object_schema(spec.args),
                   output_schema=object_schema(spec.result),
                   annotations=types.ToolAnnotations(read_only_hint=spec.read_only, open_world_hint=False))
        for spec in TOOLS
    ])

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            raise tool_error(NOT_FOUND, f"no tool {params.name!r}; this server has {', '.join(specs)}")
        try:
            args: msgspec.Struct = msgspec.convert(params.arguments or {}, spec.args)
        except msgspec.ValidationError as exc:
            raise tool_error(INVALID_QUERY, f"{spec.name}: {exc}") from None
        try:
            result = await handlers[spec.name](args)
        except Exception as exc:
            raise translate(exc) from None
        data = msgspec.to_builtins(result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    return Server("frontdesk", version="0.1.0", instructions=instructions or None,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(ctx: Context, tenant_id: str) -> None:
    """Serve one tenant over stdin/stdout until the client hangs up."""
    tenant = await anyio.to_thread.run_sync(ctx.tenant, tenant_id)  # refuse a bad tenant before serving
    await anyio.to_thread.run_sync(lambda: ctx.tenant_embedder(tenant).warm_up())
    site = (await tenant.read(tenant.config)).site
    async with answer_stack(ctx, cache_entries=256, cache_ttl=ctx.settings.cache_ttl) as stack:
        server = build_server(
            KnowledgeBase(ctx, tenant_id, stack.answerer),
            instructions=f"The knowledge base of {site}: search its pages (kb.search), read one page (kb.get), "
                         "or ask for a grounded, cited answer (kb.ask).",
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
