"""Answer providers behind one interface: `Provider.stream(prompt)` yields text pieces.

- `Extractive` (default, no LLM): the most relevant sentences of the top sources, in source
  order, with citation markers.
- `OpenAICompatible`: streaming chat completions over httpx (OpenAI, vLLM, llama.cpp, Ollama).
- `WithFallback`: a provider that falls back to another on timeout, 429, 5xx or a broken stream,
  so the visitor's stream never carries an error for a provider failure.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import re
from collections.abc import AsyncGenerator

import httpx

from app.extractive import select, term_weights
from app.prompt import Prompt
from app.settings import Settings
from store.errors import ProviderError

log = logging.getLogger(__name__)


class Provider(abc.ABC):
    name: str = "provider"
    #: Whether `stream` reads the prompt's system text and messages. The extractive provider quotes
    #: the chosen sentences only: building the messages (every source's text screened for
    #: injected instructions again, ~1.2 ms a question before its first token) is skipped for it.
    reads_messages: bool = True

    @abc.abstractmethod
    def stream(self, prompt: Prompt) -> AsyncGenerator[str, None]:
        """Yield the answer text piece by piece, as soon as each piece exists (an async generator:
        the answer path closes it when it stops early)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        pass


_PIECE = re.compile(r"\S+\s*|\s+")
#: Streamed text is sent in pieces of whole words up to about this many characters: a token event
#: per word cost more server time than the answer's own selection (one SSE event, one metrics
#: increment and one loop turn each), and text that exists whole gains nothing from being dripped.
PIECE_CHARS = 80


def word_pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """`text` cut between words into pieces of at most `size` characters (a longer word whole)."""
    out: list[str] = []
    current = ""
    for word in _PIECE.findall(text):
        if current and len(current) + len(word) > size:
            out.append(current)
            current = ""
        current += word
    if current:
        out.append(current)
    return out


class Extractive(Provider):
    """Answers by quoting the site: no model, no network, a few milliseconds. The quotes are
    chosen with the sources (`app/extractive.py`); a prompt without them is answered by the
    question's words alone."""

    name = "extractive"
    reads_messages = False

    async def stream(self, prompt: Prompt) -> AsyncGenerator[str, None]:
        quotes = prompt.quotes
        if quotes is None:
            selection = select(prompt.question, prompt.sources, term_weights(prompt.question, {}, 1))
            quotes = [(prompt.sources[q.source].n, q.text, q.kind) for q in selection.quotes]
        for position, (number, text, kind) in enumerate(quotes):
            following = quotes[position + 1] if position + 1 < len(quotes) else None
            if kind == "code":
                text = "\n" + text + "\n"
            for piece in word_pieces(text):
                yield piece
                await asyncio.sleep(0)  # hand each piece to the transport as it is made
            # One marker after each run of quotes from one source: cite only what is quoted.
            if following is None or following[0] != number:
                yield f" [{number}]"
                if following is not None:
                    yield "\n\n"
            else:
                yield " "


class OpenAICompatible(Provider):
    """Streaming chat completions (`POST {base_url}/chat/completions`, `stream: true`)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", *, timeout: float = 20.0,
                 max_tokens: int = 400, temperature: float = 0.2) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout, connect=min(5.0, timeout))
        )

    async def stream(self, prompt: Prompt) -> AsyncGenerator[str, None]:
        body = {"model": self.model, "messages": prompt.messages, "stream": True,
                "max_tokens": self.max_tokens, "temperature": self.temperature}
        try:
            async with self.client.stream("POST", self.url, json=body) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise ProviderError(f"LLM endpoint answered HTTP {response.status_code}")
                finished = False
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        finished = True
                        break
                    try:
                        payload = json.loads(data)
                    except json.JSONDecodeError as exc:
                        raise ProviderError("LLM stream sent malformed JSON") from exc
                    if "error" in payload:
                        raise ProviderError(f"LLM stream error: {str(payload['error'])[:200]}")
                    for choice in payload.get("choices") or []:
                        text = (choice.get("delta") or {}).get("content")
                        if text:
                            yield text
                if not finished:
                    raise ProviderError("LLM stream ended without [DONE]")
        except httpx.HTTPError as exc:
            raise ProviderError(f"LLM endpoint failed: {type(exc).__name__}") from exc

    async def aclose(self) -> None:
        await self.client.aclose()


class WithFallback(Provider):
    """Try `primary`; on any failure stream `fallback` instead (or after what was already sent)."""

    def __init__(self, primary: Provider, fallback: Provider) -> None:
        self.primary = primary
        self.fallback = fallback
        self.name = primary.name
        self.failures = 0

    async def stream(self, prompt: Prompt) -> AsyncGenerator[str, None]:
        sent = False
        try:
            async for piece in self.primary.stream(prompt):
                sent = True
                yield piece
            return
        except ProviderError as exc:
            self.failures += 1
            log.warning("provider %s failed (%s); falling back to %s", self.primary.name, exc, self.fallback.name)
        if sent:
            yield "\n\n"
        async for piece in self.fallback.stream(prompt):
            yield piece

    async def aclose(self) -> None:
        await self.primary.aclose()
        await self.fallback.aclose()


def make_provider(base_url: str, model: str, api_key: str, timeout: float) -> Provider:
    extractive = Extractive()
    if not base_url:
        return extractive
    return WithFallback(OpenAICompatible(base_url, model or "default", api_key, timeout=timeout), extractive)


def provider_from_settings(settings: Settings) -> Provider:
    """The provider the server settings name: the LLM endpoint with the extractive fallback, or
    extractive alone when no endpoint is set."""
    return make_provider(settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_timeout)
