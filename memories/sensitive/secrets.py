"""Secrets: API keys and tokens by their published shapes, a value named as a key or token, a password,
passcode or PIN a person states, a login given as a pair."""

from __future__ import annotations

import re
from collections.abc import Iterator

from memories.sensitive.common import Match

# API keys and tokens by the shapes their issuers publish, and a password, passcode or PIN a person states.
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"sk-(?:proj-|live-|test-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,}"  # OpenAI, Anthropic
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"  # a JWT
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"  # Stripe secret keys
    r"|glpat-[0-9A-Za-z_\-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}"  # GitLab, npm, Hugging Face
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r")")
_NAMED_SECRET = re.compile(r"(?:api[ _\-]?key|secret(?: key)?|access[ _\-]?key|auth[ _\-]?token|bearer token|"
                           r"token|密钥|令牌)\s*(?:is|was|:|=|是|为|：)\s*[\"'“「]?([A-Za-z0-9_\-./+=]{16,})",
                           re.IGNORECASE)
_PASSWORD = re.compile(r"(?:password|passcode|passwd|pwd|passphrase|pin(?: code| number)?|密码|口令|PIN码)"
                       r"(?:\s+(?:for|to|of|on)\s+[^\s,.:;]+(?:\s+[^\s,.:;]+)?)?"
                       r"\s*(?:is|was|:|=|是|为|：|:)\s*[\"'“「『]?([^\s\"'”」』，。,;；]{3,64})", re.IGNORECASE)
_NOT_A_PASSWORD = frozenset("""too very so not still just a an the my your our their in on at case same different new
old weak strong long short expired wrong incorrect invalid correct right saved stored secure safe changed reset
forgotten hard easy simple complicated required needed set also being now written encrypted hashed protected
compromised leaked hidden private secret something nothing what where how why which that this it required
mandatory optional blank empty ready locked unlocked sent shared""".split())


# A login given as a pair ("Login for the NAS is admin / Winter2024!", "creds: root:hunter22", "username
# admin password Tr0ub4dor"): the second part is the secret when it is no plain word (a digit or a symbol).
_CREDENTIALS = re.compile(
    r"\b(?:log-?in|log in|sign-?in|credentials?|creds|user(?:name)?\s*(?:and|&|/)\s*pass(?:word)?|account)\b"
    r"(?:\s+(?:details\s+)?(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[^\s,.:;/]+(?:\s+[^\s,.:;/]+)?)?"
    r"\s*(?:is|are|was|were|:|=|是|为|：)\s*[\"'“]?[^\s/:|,\"'”]{2,64}[\"'”]?"
    r"(?:\s*[/:|,]\s*|\s+and\s+|\s+)(?:(?:pw|pass(?:word)?)\s*[:=]?\s*)?[\"'“]?([^\s\"'”,;]{4,64})",
    re.IGNORECASE)
_BARE_PASSWORD = re.compile(r"\b(?:password|passwd|pwd|pw|passcode)\s+([^\s\"'”,;]{6,64})", re.IGNORECASE)


def find_credentials(view: str) -> Iterator[Match]:
    for pattern in (_CREDENTIALS, _BARE_PASSWORD):
        for m in pattern.finditer(view):
            value = m.group(1).rstrip(".!?)")
            if value.isascii() and (any(c.isdigit() for c in value) or not value.isalnum()) \
                    and any(c.isalpha() for c in value) and value.lower() not in _NOT_A_PASSWORD:
                yield m.start(1), m.start(1) + len(m.group(1))


def find_secrets(view: str) -> Iterator[Match]:
    yield from find_credentials(view)
    for m in _KEY_SHAPES.finditer(view):
        yield m.span()
    for m in _NAMED_SECRET.finditer(view):
        value = m.group(1)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            yield m.span(1)
    for m in _PASSWORD.finditer(view):
        value = m.group(1).rstrip(".!?")
        word = m.group(0).lower()
        if value.lower() in _NOT_A_PASSWORD or not value.isascii():
            continue
        if ("pin" in word and "pin" == word[:3]) and not value.isdigit():
            continue
        yield m.start(1), m.start(1) + len(value)
