"""Crawling a site: everything between a start URL and the fetched bytes of its pages.

The pipeline (``ingest/pipeline.py``) composes these modules; import from them directly:

- ``urls``: URL normalisation, RFC 3986 dot-segment removal, href resolution (``http_url``,
  ``LinkResolver``) and ``UrlPolicy`` (allowed hosts, allow/deny patterns, crawler traps).
- ``robots``: robots.txt (RFC 9309) parsing and fetching.
- ``netguard``: the SSRF guard, an httpx transport that connects only to vetted addresses.
- ``fetch``: ``Fetcher``, polite guarded GETs with retries and a size-capped decoder.
- ``sitemaps``: sitemap and sitemap-index discovery.
- ``frontier``: ``Frontier``, the breadth-first queue of URLs to visit.

Failures leave the package as ``store.errors.FetchError`` with a ``reason``.
"""
