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
                           r"token|account sid|密钥|令牌)\s*(?:is|was|:|=|是|为|：|\s)\s*[\"'“「]?"
                           r"([A-Za-z0-9_\-./+=]{16,})", re.IGNORECASE)
# Credentials in a header or a cookie: HTTP Basic's base64 pair, a session cookie's value.
_HEADER_SECRET = re.compile(r"\bBasic\s+([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])|"
                            r"\b(?:SESSDATA|session(?:id|_id)?|sid|connect\.sid|auth_token|PHPSESSID|JSESSIONID)"
                            r"\s*[=:]\s*([A-Za-z0-9%._\-]{12,})", re.IGNORECASE)
# Codes that open something ("the door code for our building is 1739#", "garage keypad code: 5519", "the
# combination for the office safe is 36-12-48", "Set the hotel room safe to 1408", "front door code changed to
# 8364"), codes that prove who you are (one-time, 2FA backup, SMS codes), recovery phrases, unlock patterns and
# memorable words: the value after them, when it is one (digits, or the words of a phrase).
_CODE_WORDS = (r"(?:door|gate|front door|back door|building|entry|entrance|keypad|key ?pad|garage|alarm|safe|locker|"
               r"lock|padlock|bike lock|luggage|gym locker|room safe|hotel safe|alarm panel)")
_OPENING_CODE = re.compile(
    rf"\b(?:{_CODE_WORDS}(?:\s+\w+){{0,2}}\s+(?:code|combo|combination|pin|passcode)|(?:code|combo|combination|pin)"
    rf"\s+(?:for|to|of|on)\s+(?:the\s+|our\s+|my\s+|his\s+|her\s+)?(?:\w+\s+){{0,2}}{_CODE_WORDS}|"
    rf"set\s+(?:the\s+)?(?:\w+\s+){{0,2}}{_CODE_WORDS})\b[^\d\n]{{0,24}}?"
    r"(\d(?:[\s\-#*]?\d){2,9}[#*]?)(?!\d)", re.IGNORECASE)
_PROOF_CODE = re.compile(
    r"\b(?:one[\s\-]?time (?:code|password|passcode|pin)|otp|verification code|security code|sms code|"
    r"2fa (?:code|backup codes?)|backup codes?|recovery codes?|auth(?:entication)? code|login code)"
    r"[^\d\n]{0,30}?(\d{4,8}(?:[\s\-,]+\d{4,8})*)(?!\d)", re.IGNORECASE)
_PHRASE = re.compile(
    r"\b(?:(?:wallet\s+)?(?:recovery|seed|mnemonic|backup)\s+(?:phrase|words)|seed words|memorable word|"
    r"security answer|secret answer|(?:mother's|mum's|mom's) maiden name|unlock pattern|pattern lock)"
    r"\s*(?:is|was|:|=)?\s*:?\s*([^.\n;!?]{3,160})|"
    r"\b(?:password|passcode|pw|pin)\s+(?:is|:)\s+([A-Za-z0-9] as in \w+(?:,?\s+[^.\n]+)?)",  # spelled out
    re.IGNORECASE)
_NOT_A_PHRASE = frozenset("somewhere in on saved stored written safe hidden lost forgotten kept".split())
# Chinese: 密码 / 验证码 / 口令 / 助记词 / a safe's turns, the value after them (digits, or a value with letters and
# digits or symbols): "银行卡密码 661203", "密码 Zs#2024vpn", "小区大门密码改成 5173* 了", "钱包助记词：盐 爬 秘 …".
_ZH_SECRET = re.compile(
    r"(?:密码|口令|验证码|校验码|动态码|取款密码|支付密码|暗码|PIN码?)(?:是|为|：|:|改成了?|改为|换成了?|设成了?|\s)*"
    r"[^\dA-Za-z\n，。,;；？?]{0,8}?([A-Za-z0-9!@#$%^&*_\-.]*\d[A-Za-z0-9!@#$%^&*_\-.]*)(?![\u4e00-\u9fff])")
_ZH_PHRASE = re.compile(r"(?:助记词|恢复短语|私钥)\s*(?:是|为|：|:)?\s*([^。\n，,；;]{4,80})|"
                        r"(?:保险箱|保险柜)[^。\n]{0,6}?[：:]?\s*((?:[左右]转[^，。\n]{0,8}\d+[，,]?\s*){2,})")
_PASSWORD = re.compile(r"(?:password|passcode|passwd|pwd|pw|passphrase|pin(?: code| number)?|密码|口令|PIN码)"
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


def _codes_and_phrases(view: str) -> Iterator[Match]:
    for pattern in (_HEADER_SECRET, _OPENING_CODE, _PROOF_CODE, _PHRASE, _ZH_SECRET, _ZH_PHRASE):
        for m in pattern.finditer(view):
            group = next(index for index in range(1, (pattern.groups or 0) + 1) if m.group(index))
            value = m.group(group).strip()
            if pattern is _PHRASE and value.lower().split()[0] in _NOT_A_PHRASE:
                continue  # "my recovery phrase is somewhere safe"
            if pattern is _ZH_SECRET and len(value) < 4:
                continue  # "密码至少要8位": a rule about passwords, no password
            yield m.start(group), m.start(group) + len(m.group(group).rstrip())


def find_secrets(view: str) -> Iterator[Match]:
    yield from find_credentials(view)
    yield from _codes_and_phrases(view)
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
