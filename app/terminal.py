"""Terminal transcripts in code blocks: the commands a reader types, apart from what they print.

A documentation page shows `$ pipx list` followed by twenty lines of what it prints, or a server's
log ("INFO: Uvicorn running on …"). Those lines use the words of many questions ("apps", "PATH",
"installed", "docs") and answer none of them: the extractive answer scores such a block by its
commands alone (app/extractive.py) and still quotes it whole.
"""

from __future__ import annotations

import functools
import re

#: A shell or Python prompt before a typed command ("$ pip install …", ">>> import sys",
#: "PS C:\\> py -m pip …", "C:\\> py …"). "$HOME/bin" is not one: a prompt is followed by a space.
_PROMPT = re.compile(r"^\s*(?:\$|>>>|PS [^>\n]{0,60}>|[A-Z]:\\[^>\n]{0,60}>)[ \t](?=[ \t]*\S)")
#: Python's continuation prompt, a prompt only in a block that has ">>>" lines (elsewhere "..."
#: is Python's Ellipsis).
_CONTINUATION = re.compile(r"^\s*\.\.\.[ \t](?=[ \t]*\S)")
#: Lines of a program's log or an installer's progress, which a block of output alone is made of.
_PRINTED = re.compile(
    r"^\s*(?:(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:?|Collecting |Downloading |Installing collected |"
    r"Successfully (?:installed|built|uninstalled) |Requirement already satisfied|Building wheels? |"
    r"Created wheel |Using cached |Uninstalling |Attempting uninstall|Looking in indexes|--->)")


@functools.lru_cache(maxsize=8192)  # the same pages' code blocks are scored question after question
def typed_commands(block: str) -> str | None:
    """What a reader types in a code block that shows a terminal session, prompts removed: None
    when the block is code or commands alone (nothing printed), "" when it is only what a program
    printed (a log, an installer's progress)."""
    lines = [line for line in block.split("\n") if line.strip()]
    python_session = any(line.lstrip().startswith(">>>") for line in lines)
    typed = [line for line in lines
             if _PROMPT.match(line) or (python_session and _CONTINUATION.match(line))]
    if typed:
        if len(typed) == len(lines):
            return None
        return "\n".join(_CONTINUATION.sub("", _PROMPT.sub("", line, count=1), count=1) for line in typed)
    if lines and sum(bool(_PRINTED.match(line)) for line in lines) * 2 >= len(lines):
        return ""
    return None
