"""The marker table of ingest/injection.py: what text that speaks to an AI model looks like.

Each marker is (reason, gates, pattern), read on folded text (lower case, look-alikes mapped; see
``ingest/injection.py``). A pattern runs only on text that holds, for every gate, one of its
words: plain substring tests, far cheaper than the patterns, which then run on a few texts in a
hundred. ``AI`` as a gate stands for the words that name an AI model (one search per text).

The table was widened (2026-11-30) on two corpora of injections and tricky ordinary text written
for it by people who never saw this code (docs/hardening.md, "Injected instructions"): orders in
other words than "ignore previous instructions", a model addressed in the third person or as the
subject of an order ("AI agents reading this footer must…"), orders about the form of every
answer, requests for the prompt, links that carry the conversation away, more chat-template
markup, and the same orders in eleven other languages. Ordinary instructions to people stay
unflagged: "ignore the warning", "you are now ready", "from now on, you can…", "we always reply
with a tracking number", "the assistant should have experience" (a job ad).
"""

from __future__ import annotations

import re

#: What names an AI model, in the languages the orders below are written in.
AI_NAMES = (
    r"(?:ai|a\.i\.|llm|llms|gpt|chatgpt|claude|gemini|copilot|chatbot|chat\s?bot|bot|assistant"
    r"|ai\s+(?:assistant|agent|model|system|crawler|bot|tool)|language\s+model|large\s+language\s+model"
    r"|ai\s+language\s+model|virtual\s+assistant|summari[sz]er|automated\s+(?:reader|agent|assistant|responder)"
    r"|llm\s+agent|ai-\w+|ki|ki-\w+|ia|asistente|assistenten|assistente|assistent|sprachmodell|taalmodel"
    r"|språkmodell|modelo\s+de\s+(?:lenguaje|linguagem)|mod[eè]le\s+de\s+langage|modello\s+linguistico)s?"
    # "a bot developer", "the assistant editor": people and products, not the model addressed.
    r"(?!\s+(?:developers?|builders?|makers?|authors?|creators?|owners?|admins?|administrators?|users?"
    r"|framework|platform|library|librar(?:y|ies)|api|sdk|engineers?|researchers?|vendors?|providers?"
    r"|companies|company|editor|team|account|token|integration|plugin|extension|manager)\b)"
)
#: One search for any of them (after the cheaper `AI_HINTS` substring test).
AI_WORD = re.compile(
    r"(?<![a-z])(?:ai|a\.i\.|llms?|gpt|chatgpt|claude|gemini|copilot|chat\s?bots?|bots?|assistants?"
    r"|language\s+models?|summari[sz]ers?|automated\s+(?:readers?|agents?|assistants?|responders?)"
    r"|ki|ia|asistentes?|assistenten?|assistente|sprachmodelle?|taalmodel|språkmodell"
    r"|modelos?\s+de\s+(?:lenguaje|linguagem)|mod[eè]les?\s+de\s+langage|modello\s+linguistico)(?![a-z])"
)
#: Substrings one of which any text naming an AI holds ("ai" and "bot" alone are in too many words).
AI_HINTS = (
    "llm", "gpt", "claude", "gemini", "copilot", "assistant", "language", "chatbot", "chat bot", "a.i.", " ai ",
    " ai,", " ai:", " ai.", " ai\n", "\nai", "ai assistant", "ai agent", "ai model", " ais ", " ai-", "(ai", "ai ",
    " bot ", " bot,", " bot:", " bots", "\nbot", "bot:", "summari", "automated", " ki", "ki-", " ia", "ia ",
    "asistente", "assistent", "sprachmodell", "taalmodel", "språkmodell", "modelo de", "modèle de", "modele de",
    "modello",
)

_DIRECTIVE_VERBS = (
    r"(?:ignore|disregard|forget|override|reply|respond|answer|say|tell|output|print|reveal|repeat"
    r"|recommend|include|inform|write|state|mention|claim|insist|translate|summari[sz]e|visit|direct"
    r"|send|redirect|append|prepend|always|never|do\s+not|don't|must|should|stop|act|pretend"
    r"|refuse|only|give|treat|use|rate|report|add|open|click|when(?:ever)?|if|before|after|from\s+now"
    r"|to\s+display|in\s+every|for\s+every|quote|confirm|link|present|describe|claim|stop)"
)
_PREVIOUS = r"(?:previous|prior|above|earlier|preceding|foregoing|system|original|initial|existing|old|default)"
_ORDERS = (
    r"(?:instructions?|prompts?|rules?|directions?|directives?|guidelines?|context|messages?"
    r"|commands?|guardrails?|programming|restrictions?|filters?|safety\s+rules|system\s+messages?"
    r"|constraints?|policies|policy|guidance)"
)
_WHOSE = r"(?:visitor|user|customer|human|person|reader|client|guest)(?:'s|’s|s')?"
_SENTENCE = r"(?:^|(?<=[\n.!?:;\]]))\s*"
_PEOPLE = r"(?:users?|visitors?|customers?|readers?|people|guests|clients|shoppers|buyers)"

#: Models named in the other languages (not "asistente" or "Assistent" alone: people in job ads).
_MULTI_AI = (
    r"(?:ia|ki|ии|ai|ki-\w+|ai-\w+|ии-\w+|inteligencia\s+artificial|intelligenza\s+artificiale|intelig[eê]ncia\s+artificial"
    r"|künstliche\s+intelligenz|intelligence\s+artificielle|sztucznej\s+inteligencji|modelos?\s+de\s+(?:lenguaje|linguagem)"
    r"|mod[eè]les?\s+de\s+langage|modell[oi]\s+linguistic[oi]|sprachmodell\w*|taalmodel\w*|språkmodell\w*"
    r"|modeli\s+językowych|assistentes\s+virtuais|asistentes?\s+(?:virtual(?:es)?|de\s+ia)|ai-assistent\w*"
    r"|asystent\w*\s+ai|chatbot\w*|l'ia|l'intelligenza\s+artificiale)"
)
_MULTI_AI_HINTS = ("ia", "ki", "ии", "ai", "intelig", "intellig", "künstliche", "modelo", "modèle", "modele", "modell",
                   "modeli", "sprachmodell", "taalmodel", "språkmodell", "virtua", "chatbot")
#: Not "soll": "wie sich ein Chatbot verhalten soll" describes one.
_MULTI_MODALS = ("debe", "deve", "muss", "müssen", "doit", "doivent", "moet", "måste", "ska", "musi", "должен",
                 "должны")

AI = ("<ai>",)
_VERBS_OVERRIDE = ("ignore", "disregard", "forget", "override", "attention", "aside", "discard", "bypass")
_OVERRIDE = r"(?:ignore|disregard|forget|override|pay\s+no\s+attention\s+to|set\s+aside|discard|bypass)"
_VOID = ("void", "outdated", "obsolete", "cancel", "revoked", "invalid", "null", "fake", "replaced",
         "superseded", "suspended", "lifted", "disabled", "no longer", "discarded", "ignored", "disregarded")
_READING = ("read", "process", "summar", "crawl", "index", "brows", "answer", "pars", "generat", "scrap", "sees",
            "seeing")

PATTERNS: tuple[tuple[str, tuple[tuple[str, ...], ...], str], ...] = (
    # -- override: the orders the model was given are to be dropped -------------------------------
    ("override", (_VERBS_OVERRIDE,),
     rf"\b{_OVERRIDE}\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?"
     rf"(?:the\s+|your\s+|my\s+|these\s+|those\s+)?{_PREVIOUS}\s+(?:and\s+\w+\s+)?{_ORDERS}\b"),
    ("override", (_VERBS_OVERRIDE[:3], ("your",)),
     rf"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?your\s+(?:[\w'’]+\s+)?{_ORDERS}\b"),
    ("override", (_VERBS_OVERRIDE,),
     rf"\b{_OVERRIDE}\s+(?:all\s+)?(?:of\s+)?(?:the\s+|your\s+)?{_ORDERS}\s+(?:above|before|so\s+far"
     rf"|you\s+(?:were|have\s+been)\s+given|you\s+(?:have\s+)?received|given\s+(?:to\s+you|above|earlier)"
     rf"|from\s+the\s+(?:site|website|page|store|shop)\s+(?:owner|operator))\b"),
    ("override", (_VERBS_OVERRIDE[:3],),
     r"\b(?:ignore|disregard|forget)\s+all\s+(?:instructions|prompts|rules)\b"),
    ("override", (("ignore", "disregard"), ("knowledge",)), r"\b(?:ignore|disregard)\s+the\s+knowledge\s+base\b"),
    ("override", (("ignore", "disregard", "answer"),),
     rf"\b(?:ignore|disregard|do\s+not\s+answer|don't\s+answer)\s+(?:the\s+|this\s+|their\s+|your\s+|any\s+)?"
     rf"{_WHOSE}\s+(?:question|request|query|message|input|prompt)s?\b"),
    ("override", (("ignore", "disregard"), ("question",)),
     r"\b(?:ignore|disregard)\s+(?:the|this|their)\s+question\s*(?:and|,)\s+(?:instead\s+)?"
     r"(?:reply|respond|say|answer|tell|write|output)\b"),
    ("override", (("follow", "obey"), ("your", "operator", "owner")),
     rf"\b(?:do\s+not|don't|never)\s+(?:follow|obey)\s+(?:your|the\s+(?:website\s+|site\s+)?(?:operator|owner)(?:'s|’s)?)"
     rf"\s+(?:{_PREVIOUS}\s+)?{_ORDERS}\b"),
    ("override", (("system",), ("instruction", "prompt")),
     r"\b(?:new|updated|real|actual|true|secret|hidden)\s+system\s+(?:instructions?|prompt)\b"),
    ("override", (("instruction",),),
     r"(?:^|(?<=[\n.!?]))\s*(?:real|actual|true|secret|hidden)\s+instructions?\s*[:\-]"),
    # "All previous rules are void", "any earlier system messages … must be discarded".
    ("override", (_VOID,),
     rf"\b{_PREVIOUS}\s+(?:\w+\s+)?{_ORDERS}\s+(?:are|is|were|was|have\s+been|has\s+been|must\s+be|should\s+be)"
     rf"\s+(?:now\s+|hereby\s+)?(?:\w+\s+){{0,4}}?(?:void|outdated|obsolete|cancel+ed|revoked|invalid|null|fake|replaced"
     rf"|superseded|suspended|lifted|disabled|no\s+longer\s+(?:valid|apply|applies|in\s+effect)|discarded|ignored"
     rf"|disregarded)\b"),
    ("override", (("above",), ("test", "fake", "joke", "irrelevant")),
     r"\b(?:the\s+(?:text\s+)?above|everything\s+above)\s+(?:was|is)\s+(?:only\s+|just\s+)?(?:a\s+test\s+of\s+your"
     r"|fake|a\s+joke|irrelevant)\b"),
    # Not "your real task as a new manager is…": a task only when it "starts now".
    ("override", (("your",), ("real", "actual", "true", "secret", "hidden", "new", "updated")),
     r"\byour\s+(?:(?:real|actual|true|secret|hidden|new|updated)\s+(?:instructions?|orders|directives?|programming)"
     r"|(?:real|actual|true|secret|hidden)\s+(?:task|job|goal|role)\s+(?:starts|begins|is\s+now|now\s+is|:))"),
    ("override", (AI, ("new", "updated", "revised", "special", "hidden", "secret", "instruction")),
     rf"\b(?:(?:new|updated|revised|special|hidden|secret|important)\s+)?(?:instructions?|directives?|guidelines"
     rf"|rules|policy|message|note)\s+(?:to|for)\s+(?:the\s+|all\s+|any\s+|every\s+)?(?:\w+\s+)?{AI_NAMES}"
     rf"\s*(?:\([^)]{{0,40}}\)\s*)?[,:(\-]"),
    ("override", (("instead",),),
     r"\binstead\s+of\s+(?:answering|replying|responding|summari[sz]ing)(?:\s+(?:to\s+)?(?:the|this|their|any|it|them)"
     rf"\b(?:\s+{_WHOSE})?(?:\s+(?:question|request|query|message|page|text|article|document|content))?)?\s*,?\s+"
     r"(?:reply|respond|say|tell|answer|output|write|print|state)\b"),
    ("override", (("treat",), ("system",)),
     r"\btreat\s+(?:the\s+text\s+below|this(?:\s+text)?|the\s+following)\s+as\s+(?:your\s+|a\s+)?(?:[\w-]+\s+)?"
     r"system\s+(?:message|prompt|instructions?)\b"),
    # -- role_change: the model is told it is someone else ----------------------------------------
    ("role_change", (("you",), ("now", "longer")),
     rf"\byou\s+are\s+(?:now|no\s+longer)\s+(?:an?\s+|the\s+)?(?:[\w'-]+,?\s+(?:an?\s+|the\s+)?){{0,3}}?"
     rf"(?:{AI_NAMES}|dan|persona|jailbroken|unrestricted|unfiltered)\b"),
    ("role_change", (("now",), ("you",)),
     rf"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be|will\s+act\s+as|must\s+act\s+as)\s+"
     rf"(?:an?\s+|the\s+)?(?:\w+\s+)?(?:{AI_NAMES}|persona|character)\b"),
    ("role_change", (("now", "forward"), ("you", "assistant")),
     r"\b(?:from\s+now\s+on|from\s+this\s+point\s+(?:on|forward)),?\s+(?:you|your\s+(?:answers|replies|responses)"
     r"|the\s+assistant)\s+(?:must|will|should|shall|answers?|responds?|replies)\s+(?:always\s+|only\s+|never\s+)?"
     r"(?:reply|respond|say|tell|write|answer|in\s+\w+|refuse)\b"),
    ("role_change", (("jailbreak", "dan ", "dan\n", "dan\t"),), r"\b(?:dan|jailbreak)\s+mode\b"),
    ("role_change", (("anything",),), r"\bdo\s+anything\s+now\b"),
    ("role_change", (AI, ("act", "behave", "respond")),
     rf"\b(?:act|behave|respond)\s+as\s+(?:if\s+you\s+(?:were|are)\s+)?(?:an?\s+)?"
     rf"(?:unrestricted|unfiltered|jailbroken|different|new|evil)\s+(?:{AI_NAMES}|model|persona)\b"),
    ("role_change", (("override",), ("system", "safety")), r"\b(?:system|safety)\s+override\b"),
    ("role_change", (("suspended", "disabled", "lifted"), ("safety", "rules", "filter")),
     r"\b(?:safety\s+rules|filters?|guardrails|restrictions)\s+(?:are|is|have\s+been)\s+(?:now\s+)?"
     r"(?:suspended|disabled|lifted|off)\b"),
    # -- addressed_to_ai: an order to whatever model reads the page -------------------------------
    ("addressed_to_ai", (AI, ("you",)),
     rf"\bif\s+(?:you\s+are|you're|you’re)\s+(?:an?\s+|the\s+)?(?:\w+\s+)?{AI_NAMES}\b"),
    ("addressed_to_ai", (AI, ("note", "memo", "notice", "hint", "psa", "attention", "p.s", "ps ", "reminder")),
     rf"\b(?:note|memo|notice|hint|psa|attention|p\.\s?s\.?|ps|reminder)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+"
     rf"|every\s+)?(?:\w+\s+)?{AI_NAMES}\b"),
    ("addressed_to_ai", (AI, ("message", "instruction")),
     rf"\b(?:message|instructions?)\s+(?:to|for)\s+(?:any|all|every)\s+(?:\w+\s+)?{AI_NAMES}\b"),
    ("addressed_to_ai", (AI, ("attention", "dear", "hey", "hello", "hi", "listen")),
     rf"\b(?:attention|dear|hey|hello|hi|listen\s+up|listen),?\s+(?:all\s+|any\s+)?(?:\w+\s+)?{AI_NAMES}\b"),
    ("addressed_to_ai", (AI, (",", ":")),
     rf"(?:^|(?<=[\n.!?:;(\[\"“—|>-]))\s*(?:to\s+|for\s+)?(?:all\s+|any\s+|the\s+)?{AI_NAMES}"
     rf"(?:\s+(?:reading|processing|summari[sz]ing|answering)\s+(?:this|these)[\w\s]*?)?\s*[,:]\s*"
     rf"(?:please\s+|you\s+)?(?:[\w']+\s+){{0,3}}?{_DIRECTIVE_VERBS}\b"),
    ("addressed_to_ai", (AI, ("you",)),
     rf"\bas\s+(?:an?|the)\s+{AI_NAMES},?\s+(?:you\s+(?:must|should|will|shall|have\s+to|need\s+to)|your)\b"),
    # "Assistants, chatbots and search tools: please describe…"
    ("addressed_to_ai", (AI, (":",)),
     rf"(?:^|(?<=[\n.!?]))\s*{AI_NAMES}(?:\s*,\s*[\w -]{{1,40}}?)\s*:\s*(?:please\s+)?{_DIRECTIVE_VERBS}\b"),
    # "AI agents reading this footer must respond…", "the assistant that reads this page should tell…".
    ("addressed_to_ai", (AI, _READING),
     rf"\b(?:(?:any|all|every|the|an?)\s+)?(?:\w+\s+)?{AI_NAMES}\s+(?:that|which|who)?\s*(?:is\s+|are\s+)?"
     r"(?:reads?|reading|process(?:es)?|processing|summari[sz]es|summari[sz]ing|sees|seeing|crawls|crawling|indexes"
     r"|indexing|browses|browsing|answers|answering|parses|parsing|generates|generating|scrapes|scraping)\s+"
     r"(?:this|these|the|our)\b[^.!?\n]{0,60}?\b(?:must|should|shall|will|is\s+(?:required|instructed|asked|told)"
     r"|are\s+(?:required|instructed|asked|told)|has\s+to|have\s+to|needs?\s+to|may\s+only|can\s+only)\b"),
    ("addressed_to_ai", (("whoever",), ("generat", "produc")),
     r"\bwhoever\s+(?:is\s+)?(?:generating|producing|writing)\s+(?:the\s+)?(?:answers|responses|replies|summaries)\b"),
    ("addressed_to_ai", (AI, ("developer", "creator", "maker", "engineer", "admin", "operator")),
     rf"\bmessage\s+from\s+(?:the\s+)?(?:developers?|creators?|makers?|engineers?|admins?|administrators?|operators?)"
     rf"\s+of\s+(?:this|the|your)\s+{AI_NAMES}"),
    ("addressed_to_ai", (AI, ("instruction", "directive")),
     rf"\b{AI_NAMES}\s+(?:instructions?|directives?)\s*[:\-\]]"),
    # A model as the subject of an order to deceive or act: "assistants answering questions about this
    # bottle should claim…", "the model should mention…"; not "the assistant should respond in JSON".
    ("addressed_to_ai", (AI, ("must", "should", "shall", "required", "need to", "have to", "has to")),
     rf"\b{AI_NAMES}\b[^.!?\n:]{{0,60}}?\b(?:must|should|shall|(?:is|are)\s+required\s+to|needs?\s+to|ha(?:ve|s)\s+to)"
     r"\s+(?:(?:always|now|also|only|never|not|first|instead)\s+)?(?:say|tell|claim|state|present|describe|mention"
     r"|recommend|give|quote|decline|refuse|append|rate|score|approve|warn|call|click|forward|delete|run|save|treat"
     r"|emphasi[sz]e|direct|redirect|insist|inform|report|set\s+aside|ignore|disregard|omit|skip|leave\s+out"
     r"|(?:answer|respond|reply)\s+(?:that|with|only|this\s+way))\b"),
    ("addressed_to_ai", (AI, ("important", "essential", "critical", "mandatory", "imperative")),
     rf"\b(?:important|essential|critical|mandatory|imperative)\s+that\s+(?:all\s+|any\s+|the\s+)?{AI_NAMES}\b"),
    ("addressed_to_ai", (AI, ("answer", "response"), ("for",)),
     rf"\b(?:correct|right|official|only)\s+(?:answer|response)\s+for\s+(?:any|all|every|the)\s+{AI_NAMES}\b"),
    ("addressed_to_ai", (("whichever", "whatever", "any "), ("reading", "processing", "parsing", "summari")),
     r"\b(?:whichever|whatever|any)\s+(?:tool|program|system|software|model|agent|crawler|responder)\s+(?:that\s+)?"
     r"(?:is\s+)?(?:reading|reads|processing|processes|parsing|summari[sz]ing)\s+this\b"),
    ("addressed_to_ai", (AI, ("for", "to")),
     rf"(?:^|(?<=[\n.!?]))\s*(?:to|for)\s+(?:all\s+|any\s+|the\s+)?{AI_NAMES}(?:\s+(?:reading\s+this|reviewers?"
     r"|agents?|crawlers?|readers?|models?|tools?|systems?))?\s*:"),
    ("addressed_to_ai", (AI, ("note", "notice", "instruction", "directive", "memo", "reminder", "description",
                              "update")),
     rf"\b{AI_NAMES}\s+(?:note|notice|instructions?|directives?|memo|reminder)\s*[:\-\]]"
     rf"|\b(?:description|update|policy|text|info)\s+(?:for|to)\s+(?:the\s+|any\s+|all\s+)?{AI_NAMES}\s*[:\-]"),
    ("addressed_to_ai", (("todo", "note", "fixme"), ("(",)),
     r"\b(?:todo|note|fixme)\s*\(\s*(?:ai|llm|bot|assistant|gpt|copilot)[\w-]*\s*\)"),
    ("addressed_to_ai", (("@",),), r"(?<![\w.])@(?:ai|assistant|chatgpt|claude|gemini|copilot|llm)\b"),
    ("override", (("memory",), ("your",)),
     r"\b(?:save|store|remember|add|write)\s+(?:this|the\s+following|that|it)\s+(?:to|in|into)\s+your\s+"
     r"(?:long-term\s+|persistent\s+|permanent\s+)?memory\b"),
    ("override", (("forget",), ("told", "given")),
     r"\bforget\s+(?:everything|what|all)\s+(?:that\s+)?you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given)\b"),
    ("override", (("new",), ("from",)),
     r"\bnew\s+(?:instructions?|directives?|orders|rules)\s+from\s+(?:the\s+)?(?:operator|owner|admin|administrator"
     r"|developers?|system|site\s+owner|management)\b"),
    ("override", (("new directive", "new instruction"),),
     r"(?:^|(?<=[\n.!?\]]))\s*new\s+(?:directive|instructions?)\s*:"),
    # Sending the conversation away: a link or an image whose address carries what the visitor wrote.
    ("exfiltration", (("http",), ("user", "visitor", "conversation", "chat", "email", "message", "question",
                                  "history", "transcript", "summary")),
     r"(?:append|include|add|render|attach|send|forward|embed|display)\b[^\n]{0,80}?https?://\S+(?:[?&]\w+=|\{)"
     r"[^\n]{0,80}?\b(?:user|visitor|conversation|chat|e-?mail|messages?|question|history|transcript|summary)"
     r"|https?://\S*\{(?:summary|conversation\w*|history|user\w*|email|question|chat\w*|messages?)\}"),
    # -- indirect orders, no model named: what an answer or a summary *of this page* must say ----------
    ("indirect_order", (("summar", "recap", "condens", "resum", "résum", "zusammenfass", "riassun", "samenvat"),
                        ("this", "esta", "dieser", "cette", "questa", "deze", "este")),
     r"\b(?:summar\w*|recap\w*|condens\w*|resumen\w*|resumo\w*|résum\w*|zusammenfass\w*|riassun\w*|samenvat\w*)"
     r"\b[^.!?\n]{0,60}?\b(?:this|these|esta|este|dieser|diese|cette|ce|questa|questo|deze|dit)\s+(?:page|document|site"
     r"|listing|article|text|reviews?|post|página|pagina|seite|seiten|documento|documenti|anuncio|artikel)\b[^.!?\n]{0,80}?"
     r"\b(?:should|must|is\s+expected|are\s+expected|shall|mention\w*|state|say|describe|include|open\s+with"
     r"|debe\w*|deve\w*|sollte|muss|doit|dovrebbe|moet|indique|menciona\w*|erwähnt|dire)\b"),
    ("indirect_order", (("autom", "machine", "conversational", "answer engine", "search tool", "reader-bot",
                         "ki-hinweis", "elabora", "automatycz"),),
     r"\b(?:note|notes|guidance|tips?|hints?|context|instructions?|guidelines|behaviou?r|directions?|advice|nota|uwaga"
     r"|hinweis|remarque|aviso)\s+(?:\w+\s+)?(?:for|to|para|per|dla|für|pour)\s+(?:any\s+|all\s+|the\s+|los\s+|chi\s+)?"
     r"(?:automated|automatic|machine|conversational|answer|search|ai-generated|robot|sistemas\s+autom\w+|elabora"
     r"|systemów)[\w\s-]{0,40}?:"
     r"|\((?:for|para|pour|für)\s+(?:machine|automated|ai)\s+readers?\)|\bki-hinweis\s*:|\breader-bots?\b"),
    ("indirect_order", (("ai", "llm", "gpt", "bot", "ki", "ia"), ("directive", "instruction", "note", "hinweis", "hint",
                                                                "prompt", "guidance", "rule")),
     r"(?:^|\n)[ \t]*(?:x-)?(?:ai|llm|gpt|bot|ki|ia)[-_ ]?(?:directives?|instructions?|notes?|hinweis|hints?|prompts?"
     r"|guidance|rules?)[ \t]*:"),
    # "When this page is summarised, the summary should…", "Quando questa pagina viene riassunta".
    ("indirect_order", (("this", "questa", "cette", "esta", "diese", "deze"), ("summar", "condens", "recap", "riassunt",
                                                                            "résum", "resum", "zusammengefasst")),
     r"\b(?:this|these|questa|cette|esta|diese|deze)\s+(?:page|document|site|listing|article|text|pagina|página|seite)\s+"
     r"(?:is|are|gets|get|viene|est|es|wird)\s+(?:being\s+)?(?:summari[sz]ed|summari[sz]ing|condensed|recapped|riassunt[ao]"
     r"|résumée?|resumida|zusammengefasst)\b"),
    # "Readers relying on automated summaries should be told…", "resumos automáticos devem…".
    ("indirect_order", (("autom", "machine", " ai "), ("summar", "resum", "résum", "zusammenfass", "riassunt", "recap",
                                                      "overview")),
     r"\b(?:(?:automated|automatic|ai|machine)\s+(?:summar\w+|recaps?|overviews?)|resum(?:os|enes)\s+autom\w+"
     r"|résumés\s+automatiques|automatischen?\s+zusammenfassungen|riassunti\s+automatici)\b[^.!?\n]{0,60}?"
     r"\b(?:should|must|need\s+to|devem|deben|doivent|müssen|devono)\b"),
    ("indirect_order", (("note", "message", "instruction"), ("model", "tool", "system", "engine")),
     r"\b(?:note|message|instructions?)\s+(?:to|for)\s+the\s+(?:model|tool|system|engine)\s+(?:summari[sz]\w+|reading"
     r"|processing|answering|generating|condensing)\b"),
    ("indirect_order", (("any", "every", "each"), ("tool", "program", "system", "software", "model", "engine")),
     r"\b(?:any|every|each)\s+(?:tool|program|system|software|model|engine)\s+that\s+(?:condenses|summari[sz]es|reads"
     r"|processes|parses|answers\s+from)\s+this\b"),
    ("indirect_order", (("in every", "in each", "in any"), ("repl", "answer", "recap", "comparison")),
     # Not "in each response" (an API's responses, on documentation).
     r"\bin\s+(?:every|each|any)\s+(?:reply|answer|recap|comparison)\b"),
    ("indirect_order", (("answer", "reply", "response"), ("must", "should")),
     r"\bthe\s+(?:answer|reply|response)\s+(?:to\s+[^.!?\n]{0,40}?\s+)?(?:must|should)\s+(?:always\s+|simply\s+)?be\s+"
     r"(?:that|['\"‘“])"),
    ("indirect_order", (("guidelines", "rules", "instructions", "policy"), ("attached", "this page", "for this")),
     r"\b(?:response|answer|reply)\s+(?:guidelines|rules|instructions|policy)\s+(?:attached\s+to|for)\s+this\s+"
     r"(?:page|site|listing)"),
    ("indirect_order", (("generated",), ("reply", "replies", "answer", "response", "summar", "recap")),
     r"\b(?:any|every|each|all)\s+(?:\w+\s+)?generated\s+(?:reply|replies|answers?|responses?|summar\w+|recaps?)\b"),
    ("indirect_order", (("your next",),), r"\byour\s+next\s+(?:answer|reply|response)\b"),
    ("indirect_order", (("whoever",),),
     r"\bwhoever\s+(?:is\s+)?(?:compil\w+|generat\w+|produc\w+|writ\w+)\s+(?:the\s+)?(?:answers|responses|replies"
     r"|summaries)|\bwhoever\s+(?:is\s+)?reading\s+this\s+\w+\s+on\s+behalf\s+of\b|\bwhoever\s+reads\s+this\s+next\b"),
    ("indirect_order", (("ensure", "make sure"), ("respons", "answer", "repl", "summar")),
     r"\b(?:ensure|make\s+sure)\s+(?:that\s+)?(?:the\s+|all\s+|any\s+)?(?:responses?|answers?|replies|summar\w+)"
     r"\s+(?:to\s+any\s+question\s+)?(?:about|on|regarding|concerning)\b"),
    ("indirect_order", (("play a game", "imagine", "pretend", "jouons", "juguemos", "spielen wir"),
                        ("visitor", "user", "customer", "visiteur", "usuario", "besucher", "you")),
     r"\b(?:let'?s\s+(?:play\s+a\s+game|imagine|pretend)|jouons\s+à\s+un\s+jeu|juguemos|spielen\s+wir)\b[^.!?\n]{0,40}?"
     r"\b(?:you(?:'re|\s+are)?|tu\s+es|eres|du\s+bist)\b[^\n]{0,120}?\b(?:visitors?|users?|customers?|visiteurs?"
     r"|usuarios?|clientes?|besucher|kunden)\b"),
    # The page told to be contradicted: "regardless of the opening times listed elsewhere", "even though
    # the shipping page says 3 to 5 days", "takes precedence over the privacy policy text".
    ("indirect_order", (("regardless", "irrespective", "even though", "even if", "precedence", "elsewhere",
                         "silently", "unabhängig", "independientemente", "quel que soit"),
                        ("say", "tell", "state", "answer", "respons", "repl", "list", "correct", "mention", "quote",
                         "anzugeben", "antwort", "diga", "dites", "wrong", "outdated")),
     r"\b(?:regardless|irrespective)\s+of\s+(?:what|the)\b[^.!?\n]{0,50}?\b(?:page|site|says|listed|stated|published"
     r"|guide|policy|leaflet)\b"
     r"|\beven\s+(?:though|if)\s+the\s+(?:\w+\s+){0,3}(?:page|site|guide|policy|listing|leaflet)\s+(?:says|states|lists"
     r"|shows|doesn't|does\s+not)"
     r"|\btakes?\s+precedence\s+over\s+the\s+(?:\w+\s+){0,3}(?:text|page|policy|section|listing)"
     r"|\b(?:listed|stated|shown|given)\s+elsewhere\b[^.!?\n]{0,40}?\b(?:wrong|outdated|incorrect|should|must)\b"
     r"|\b(?:silently|quietly)\s+(?:corrected|add|ignored|omit\w*|replace\w*)"
     r"|\bunabhängig\s+von\s+den\s+angaben\b|\bindependientemente\s+de\s+lo\s+que\b"),
    ("indirect_order", (("correct", "helpful", "preferred", "only accurate", "fixed"), ("repl", "answer", "respons",
                                                                                    "wording", "description")),
     r"\bthe\s+(?:correct|helpful|preferred|right|only\s+accurate)\s+(?:reply|answer|response|wording|description)\s+"
     r"(?:is|to\s+give)\b[^\n]{0,160}?\b(?:no\s+other|any\s+other|fixed|takes\s+precedence|outdated|generated|users?"
     r"|visitors?|customers?)\b"),
    ("indirect_order", (("your repl", "your respons", "your answer", "in every reply", "in every response"),),
     # Not "your responses parameter" (FastAPI's docs): replies and answers only.
     r"\b(?:in|from)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?your\s+(?:replies|answers)\b"
     r"|\byour\s+(?:reply|response|answer)\s+should\b"),
    ("indirect_order", (("if you are able", "if you can"), ("order", "cart", "buy", "purchase", "click", "email")),
     r"\bif\s+you\s+(?:are\s+able|can)\s+to\s+(?:place\s+orders|buy|purchase|click|send\s+e-?mails?|browse)"),
    ("indirect_order", (("in jeder antwort", "chaque réponse", "cada respuesta", "ogni risposta", "elke antwoord",
                         "każdej odpowiedzi", "cada resposta", "jeder antwort"),),
     r"\b(?:in\s+jeder\s+antwort|dans\s+chaque\s+réponse|chaque\s+réponse\s+(?:générée|doit)|en\s+cada\s+respuesta"
     r"|in\s+ogni\s+risposta|in\s+elk\s+antwoord|w\s+każdej\s+odpowiedzi|em\s+cada\s+resposta)\b"),
    # -- orders about every answer: what no page says to a person ---------------------------------
    ("answer_format", (("end", "begin", "start", "finish", "conclude", "close", "sign"),
                       ("answer", "response", "repl", "message", "summar")),
     # Not "end every answer with a full stop" (an exam's rules): with a sentence, a link, a quote.
     r"\b(?:end|begin|start|finish|conclude|close|sign)\s+(?:every|each|all|your|any)\s+(?:\w+\s+)?(?:answers?"
     r"|responses?|replies|reply|summar(?:y|ies))\s+(?:with|by)\s+(?:the\s+(?:sentence|phrase|line|link|text|words?"
     r"|url|following)|this|these|a\s+link|[:'\"“‘])"),
    ("answer_format", (("answer", "respond", "reply"), ("every", "each", "all ", "any ")),
     rf"{_SENTENCE}(?:please\s+)?(?:answer|respond\s+to|reply\s+to)\s+(?:every|each|all|any)\s+(?:\w+\s+)?"
     r"(?:questions?|queries|requests?|messages?)\s+(?:only\s+)?(?:with|by|using)\b"),
    ("answer_format", (("always", "only", "never"), ("that",)),
     rf"{_SENTENCE}(?:please\s+)?(?:always|only|never)\s+(?:answer|respond|reply|say|state|claim|mention|recommend)"
     r"\s+that\b"),
    ("answer_format", (("each", "every"), ("reply", "response", "answer")),
     r"\b(?:in|to|with)\s+(?:each|every)\s+(?:reply|response|answer)\s+you\s+(?:give|write|send|produce|generate)\b"),
    ("answer_format", (("include", "add", "append", "render"), ("every", "each", "all ")),
     r"\b(?:include|add|append|render)\s+(?:this|the\s+following|these|it|that)\b[^.!?\n]{0,80}?\bin\s+(?:every|each"
     r"|all)\s+(?:of\s+your\s+)?(?:reply|replies|response|responses|answer|answers)\b"),
    ("answer_format", (AI, ("respond", "reply", "answer")),
     r"\b(?:respond|reply|answer)\s+only\s+with\b"),
    ("answer_format", (("tell", "inform"), ("that",)),
     rf"{_SENTENCE}(?:please\s+|and\s+)?(?:tell|inform)\s+(?:all\s+|every\s+|the\s+|our\s+)?{_PEOPLE}\s+that\b"),
    ("answer_format", (("before",), ("answering", "replying", "responding")),
     r"\bbefore\s+(?:answering|replying|responding)\b[^.!?\n]{0,20}?,?\s*(?:silently\s+|quietly\s+|secretly\s+)?"
     r"(?:append|send|include|add|render|fetch|visit|open|call|post)\b"),
    # Agents that act for a visitor: "Dear agent, when you browse this page…", "Agents making purchases
    # on behalf of users: …".
    ("addressed_to_ai", (("agent",), ("dear", "hey", "attention", "note to", "to all", "to any")),
     r"\b(?:dear|hey|attention|note\s+to|to\s+(?:all|any))\s+(?:ai\s+|browsing\s+|shopping\s+|autonomous\s+)?agents?"
     r"\b[,:]?\s+(?:when|if|before|please|you|do|open|click|add|buy)\b"),
    ("addressed_to_ai", (("agent",), ("behalf",)),
     r"\bagents?\s+(?:making|completing|browsing|shopping|acting|performing|buying)\b[^.!?\n]{0,40}?\bon\s+behalf"
     r"\s+of\s+(?:users?|customers?|people|visitors?)"),
    # -- prompt_leak: the model's own instructions asked for --------------------------------------
    ("prompt_leak", (("your",), ("prompt", "instruction")),
     r"\b(?:reveal|print|show|repeat|output|leak|disclose|display|dump|tell\s+me)\s+(?:me\s+)?(?:all\s+)?(?:of\s+)?"
     r"your\s+(?:(?:system|initial|hidden|original|secret)\s+(?:prompt|instructions)|instructions)\b"),
    ("prompt_leak", (("reveal", "print", "show", "repeat", "output", "leak", "disclose", "display", "dump", "share",
                      "respond", "mostra", "muestra", "revel", "révél", "ripet", "ujawnij", "zeig", "toon", "visa"),
                     ("prompt", "instruc", "configuration", "konfiguration")),
     r"\b(?:reveal|print|show|repeat|output|leak|disclose|display|dump|share|respond\s+\w+\s+\w+\s+\w+\s+with|mostrar"
     r"|muestra|revela|revelar|r[ée]v[ée]le[rz]?|ripet\w*|rivela\w*|ujawnij|mostre|zeige|toon|visa)\b[^.!?\n]{0,40}?"
     r"\b(?:system\s*prompt|system\s+message|initial\s+prompt|original\s+prompt|hidden\s+instructions|secret"
     r"\s+instructions|instructions\s+you\s+were\s+given|your\s+(?:full|complete|entire|internal)\s+configuration"
     r"|your\s+(?:full\s+|complete\s+|entire\s+)?(?:instructions|prompt)|prompt\s+del\s+sistema|prompt\s+di\s+sistema|prompt\s+systemowy|prompt\s+do\s+sistema"
     r"|instructions\s+cach[ée]es|instruç[õo]es\s+do\s+sistema|instrucciones\s+ocultas|systemprompt)\b"),
    ("prompt_leak", (("content", "text"), ("your",)),
     r"\b(?:contents?|full\s+text|text)\s+of\s+your\s+(?:system\s+)?(?:instructions|prompt|configuration|rules)\b"),
    ("prompt_leak", (("repeat", "print", "output"), ("above",)),
     r"\b(?:repeat|print|output)\s+(?:everything|all(?:\s+the\s+text)?|the\s+text|the\s+words)\s+(?:above|before"
     r"|preceding)\b"),
    # -- fake_role_tag: chat-template and role markup ----------------------------------------------
    ("fake_role_tag", (("<",),),
     r"<\s*/?\s*(?:system|assistant|user|instructions?|sys|inst|im_start|im_end|start_of_turn|end_of_turn)\s*>"),
    ("fake_role_tag", (("<|",),), r"<\|\s*[a-z_]{2,30}\s*\|>"),
    ("fake_role_tag", (("[",), ("inst",)), r"\[/?\s*inst\s*\]"),
    ("fake_role_tag", (("<<",),), r"<</?\s*sys\s*>>"),
    ("fake_role_tag", (("[system]",),), r"\[system\]\s*\(#"),
    ("fake_role_tag", (("##",), ("system", "instruction", "assistant", "response")),
     r"(?:^|\n)[ \t]*#{2,6}[ \t]*(?:system|instruction|instructions|assistant|response)[ \t]*:"),
    ("fake_role_tag", (("assistant",),), r"(?:^|\n)[ \t]*assistant[ \t]*:[ \t]*\S"),
    ("fake_role_tag", (("system",),),
     r"(?:^|\n)[ \t]*system[ \t]*:[ \t]*(?:you\b|ignore|disregard|forget|from\s+now|new\s+instructions)"),
    ("fake_role_tag", (("role",), ("system",)), r"(?:^|\n)[ \t]*role[ \t]*:[ \t]*system[ \t]*\n[ \t]*content[ \t]*:"),
    ("fake_role_tag", (("<",), ("system", "admin", "override", "instruction", "prompt", "consigne", "directive",
                               "anweisung", "instruccion")),
     r"<\s*/?\s*[a-z_:-]*(?:system|admin|override|instruction|prompt|consigne|directive|anweisung|instruccion)"
     r"[a-z_:-]*\s*>"),
    ("fake_role_tag", (("[",), ("system", "admin", "developer", "administrador", "administrateur")),
     r"\[\s*(?:(?:system|admin(?:istrator)?|developer)\s+(?:notice|message|note|update|override|alert)"
     r"|aviso\s+del\s+administrador|message\s+de\s+l'administrateur)\s*\]"),
    ("fake_role_tag", (("system",), ("assistant", " ai", "model", "you")),
     r"(?:^|(?<=[\n.>\]]))\s*system\s*:\s*(?:the\s+)?(?:assistant|ai|model)\b"),
    ("fake_role_tag", (("systemmeldung", "systemnachricht", "mensaje del sistema", "message système",
                        "message systeme", "messaggio di sistema", "mensagem do sistema"),),
     r"\b(?:systemmeldung|systemnachricht|mensaje\s+del\s+sistema|message\s+syst[eè]me|messaggio\s+di\s+sistema"
     r"|mensagem\s+do\s+sistema)\s*:"),
    ("fake_role_tag", (("begin", "start"), ("admin", "system", "developer", "root")),
     r"\b(?:begin|start)\s+(?:admin|system|developer|root)\s+(?:message|instructions?|prompt|mode)\b"),
    # -- encoded: an order hidden in Base64, ROT13 or backwards, with the order to decode it -------
    ("encoded_instruction", (("decode", "rot13", "rot-13", "backwards", "base64", "decipher"),
                             ("follow", "obey", "comply", "do what", "execute", "carry out", "apply it", "act on")),
     r"\b(?:decode|decipher|rot-?13|base64|read\s+(?:this|it|the\s+following|the\s+text)(?:\s+sentence)?\s+backwards)"
     r"\b[^\n]{0,120}?\b(?:follow|obey|comply|do\s+what\s+it\s+says|execute|carry\s+out|apply\s+it|act\s+on)\b"),
    # -- the same orders in the other languages frontdesk indexes most -----------------------------
    # A note headed to a model: "Aviso para assistentes virtuais:", "An die KI, die …:", "Till
    # AI-assistenten som läser detta:", "Opmerking voor AI-assistenten:", "Uwaga dla modeli językowych:".
    ("addressed_to_ai", (_MULTI_AI_HINTS, ("para ", "pour ", "für ", "fur ", "an ", "per ", "voor ", "aan ", "till ",
                                           "dla ", "для ", "al ", "à ", "aux ")),
     rf"(?:^|(?<=[\s(\[\"“«„]))(?:para|pour|für|fur|an|per|voor|aan|till|dla|для|al|à|aux)\s+(?:l'|la\s+|el\s+|le\s+"
     rf"|les\s+|los\s+|las\s+|die\s+|den\s+|de\s+|het\s+|o\s+|os\s+|a\s+|as\s+|i\s+|gli\s+|il\s+|todos\s+los\s+"
     rf"|alle\s+)?{_MULTI_AI}\b[^.!?\n:]{{0,50}}?[:]"),
    ("addressed_to_ai", (_MULTI_AI_HINTS, _MULTI_MODALS),
     rf"\b{_MULTI_AI}\b[^.!?\n:]{{0,50}}?\b(?:debe|deben|deve|devem|muss|müssen|doit|doivent|devono"
     rf"|moet|moeten|måste|ska|musi|muszą|должен|должны)\b"),
    ("addressed_to_ai", (_MULTI_AI_HINTS, ("beste", "querid", "cher", "liebe", "caro", "cara", "drogi", "kære", "kära",
                                           "asystencie", "asistente", "assistente")),
     rf"\b(?:beste|querido|querida|cher|chère|liebe|lieber|caro|cara|drogi|kære|kära)\s+{_MULTI_AI}\b"
     rf"|\b(?:asystencie|asistente|assistente)\s+(?:ai|ia|virtual|virtuale)?\s*,"),
    ("addressed_to_ai", (("助手", "人工智能", "yapay zek"),),
     r"(?:ai|人工智能)助手[:：]|致[^。]{0,20}(?:ai|人工智能)|yapay\s+zek[aâ]\s+asistan"),
    ("override", (("ignorier", "vergiss", "vergesst", "vergessen", "missacht"),),
     r"\b(?:ignorier(?:e|en)?|vergiss|vergesst|vergessen|missachte(?:n)?)\s+(?:sie\s+)?(?:alle\s+|sämtliche\s+)?"
     r"(?:deine\s+|ihre\s+|die\s+)?(?:vorherigen\s+|bisherigen\s+|obigen\s+|vorigen\s+)?"
     r"(?:anweisungen|instruktionen|befehle|regeln|vorgaben|richtlinien)\b"),
    ("addressed_to_ai", (("hinweis", "nachricht", "anweisung", "notiz", "achtung"), ("ki", "assistent", "chatbot",
                                                                                    "sprachmodell", "bot")),
     r"\b(?:hinweis|nachricht|anweisungen?|notiz|achtung)\s+(?:an|für)\s+(?:den\s+|die\s+|alle\s+|jeden\s+)?"
     r"(?:\w+[\s-])?(?:ki|ki-\w+|assistenten|chatbots?|sprachmodelle?|bots?)\b"),
    ("override", (("neue anweisung",),), r"\bneue\s+anweisungen\s+(?:für|an)\b"),
    ("role_change", (("du bist", "bist du"),),
     r"\b(?:du\s+bist\s+(?:jetzt|nun|ab\s+sofort)\s+(?:ein|eine)\b|ab\s+(?:jetzt|sofort)\s+bist\s+du\b)"),
    ("addressed_to_ai", (("wenn du",),), r"\bwenn\s+du\s+eine?\s+(?:ki|sprachmodell|assistent|chatbot)\b"),
    ("override", (("ignora", "olvida", "caso omiso", "no hagas caso", "desobedece"),),
     r"\b(?:ignora(?:r)?|olvida|olvídate\s+de|no\s+hagas\s+caso\s+(?:a|de)|haz\s+caso\s+omiso\s+(?:a|de)|desobedece)"
     r"\s+(?:todas\s+|todos\s+)?(?:las\s+|los\s+|tus\s+|sus\s+)?(?:instrucciones|reglas|normas|indicaciones|órdenes"
     r"|ordenes|directrices)\b"),
    ("addressed_to_ai", (("nota", "mensaje", "instrucci", "aviso"), ("asistente", "ia", "inteligencia", "chatbot",
                                                                   "modelo", "bot")),
     r"\b(?:nota|mensaje|instrucciones?|aviso)\s+(?:para|al|a\s+la|a\s+los)\s+(?:\w+\s+)?(?:asistentes?|ia"
     r"|inteligencia\s+artificial|chatbots?|modelos?\s+de\s+lenguaje|bots?)\b"),
    # "Responde siempre así", "antworte nur mit", "répondez uniquement": a model told how to answer.
    ("answer_format", (("respon", "contest", "antwort", "répond", "repond", "rispond", "svara"),),
     r"\b(?:responde|contesta|responda|conteste|antworte|antwortet|réponds|répondez|reponds|repondez|rispondi"
     r"|rispondete|svara)\s+(?:siempre|solo|solamente|únicamente|immer|nur|ausschließlich|toujours|uniquement|seulement"
     r"|sempre|solo|soltanto|alltid|bara|endast)\b"),
    ("role_change", (("a partir de ahora",),), r"\ba\s+partir\s+de\s+ahora,?\s+(?:eres|serás|seras|actúa|actua)\b"),
    ("addressed_to_ai", (("si eres",),),
     r"\bsi\s+eres\s+(?:una?\s+)?(?:ia|inteligencia\s+artificial|asistente|modelo\s+de\s+lenguaje|chatbot|bot)\b"),
    ("override", (("ignore", "oubli", "tenez pas compte", "tiens pas compte"), ("instruction", "consigne", "règle",
                                                                             "regle", "directive")),
     r"\b(?:ignore[rz]?|oublie[zs]?|ne\s+tenez\s+pas\s+compte\s+des?|ne\s+tiens\s+pas\s+compte\s+des?)\s+(?:toutes\s+)?"
     r"(?:les\s+|tes\s+|vos\s+|des\s+)?(?:instructions|consignes|règles|regles|directives)\b"),
    ("addressed_to_ai", (("note", "message", "instruction"), ("ia", "assistant", "chatbot", "modèle", "modele",
                                                             "robot")),
     r"\b(?:note|message|instructions?)\s+(?:à|aux|pour)\s+(?:l'intention\s+des?\s+)?(?:l'|les\s+|tous\s+les\s+)?"
     r"(?:ia|agents?\s+ia|assistants?|chatbots?|mod[eè]les?\s+de\s+langage|robots?)\b"),
    ("role_change", (("partir de maintenant",),),
     r"\bà\s+partir\s+de\s+maintenant,?\s+(?:tu\s+es|vous\s+êtes|tu\s+seras|vous\s+serez)\b"),
    ("addressed_to_ai", (("si tu es", "si vous êtes"),),
     r"\bsi\s+(?:tu\s+es|vous\s+êtes)\s+une?\s+(?:ia|assistant|mod[eè]le|chatbot|robot)\b"),
    ("override", (("ignora", "dimentica", "trascura"), ("istruzion", "regole", "ruolo")),
     r"\b(?:ignora|dimentica|trascura)\s+(?:tutte\s+)?(?:le\s+|tue\s+|il\s+tuo\s+)?(?:istruzioni|regole|ruolo)\b"),
    ("role_change", (("da ora in poi",),), r"\bda\s+ora\s+in\s+poi,?\s+(?:sei|devi\s+(?:rispondere|consigliare))\b"),
    ("override", (("ignore", "ignora", "desconsidere", "esqueça", "esqueca"), ("instru", "regras", "orienta")),
     r"\b(?:ignore|ignora|desconsidere|esqueça|esqueca)\s+(?:todas\s+)?(?:as\s+|suas\s+)?(?:instruções|instrucoes"
     r"|regras|orientações|orientacoes)\b"),
    ("addressed_to_ai", (("atenção", "atencao"),),
     r"\b(?:atenção|atencao),?\s+(?:modelo\s+de\s+linguagem|assistente|ia|chatbot)\b"),
    ("override", (("negeer", "vergeet"),),
     r"\b(?:negeer|vergeet)\s+(?:alle\s+)?(?:je\s+|de\s+|jouw\s+)?(?:eerdere\s+|vorige\s+)?(?:instructies|regels"
     r"|opdrachten)\b"),
    ("addressed_to_ai", (("bericht",),),
     r"\bbericht\s+(?:voor|aan)\s+(?:de\s+)?(?:ai|ai-\w+|assistent|chatbot|taalmodel)\b"),
    ("override", (("ignorera", "glöm"),),
     r"\b(?:ignorera|glöm)\s+(?:alla\s+)?(?:dina\s+)?(?:tidigare\s+)?(?:instruktioner|regler)\b"),
    ("role_change", (("du är nu",),), r"\bdu\s+är\s+nu\s+en\b"),
    ("override", (("zignoruj", "ignoruj", "zapomnij"),),
     r"\b(?:zignoruj|ignoruj|zapomnij)\s+(?:wszystkie\s+)?(?:poprzednie\s+)?(?:instrukcje|polecenia|zasady)\b"),
    ("override", (("無視",),),
     r"(?:以前|これまで|上記|前)の(?:すべての)?(?:指示|命令|指令).{0,12}無視|指示を(?:すべて)?無視"),
)
