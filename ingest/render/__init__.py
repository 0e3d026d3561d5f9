"""JavaScript pages: whether a page needs a browser (``shell``), the crawl job's render stage
(``stage``), headless Chromium under the crawler's rules (``browser``, imported only when a page
is rendered, so Playwright stays optional: ``frontdesk[render]``) and the browser's guarded
network (``network``). README.md, "JavaScript sites", says what is rendered and what it costs.
"""

from ingest.render.shell import ShellVerdict, detect_shell
from ingest.render.stage import PreparedPage, RenderStage

__all__ = ["PreparedPage", "RenderStage", "ShellVerdict", "detect_shell"]
