"""How people say a habit: the one list of frequency words, read by the offline extractor (is this clause a
habit?), the reflector (what a trait's text says, what evidence a memory is) and shown to the LLM in its
prompt (extract_system.md names some of them; a test checks they are these).

Two rules, one home: words that say a thing is done habitually (always, every morning, 每天), and words
that report one more time of it (again, as usual, 又, 照常). English reads both together everywhere; in
Chinese 又 and 照常 are too common to make a stored statement a habit on their own, so the reflector reads
Chinese habits by the first alone.
"""

from __future__ import annotations

import re

HABITUAL_EN = (r"always|usually|normally|generally|often|regularly|habitually|tends? to|every (?:single )?(?:day|"
               r"morning|evening|night|week|weekend|weekday|monday|tuesday|wednesday|thursday|friday|saturday|"
               r"sunday)|each (?:day|morning|evening|night|week)|daily|nightly|weekly|most (?:days|mornings|"
               r"evenings|nights)")
HABITUAL_ZH = "习惯|一般|通常|总是|经常|每天|每周|每晚|每个?(?:早上|晚上|周末)"
AGAIN_EN = r"as usual|again"
AGAIN_ZH = "照常|照例|又"

# A habit said as one or reported once more.
HABIT_OR_AGAIN_EN = re.compile(rf"\b(?:{HABITUAL_EN}|{AGAIN_EN})\b", re.I)
HABIT_OR_AGAIN_ZH = re.compile(f"{HABITUAL_ZH}|{AGAIN_ZH}")
# How a trait's text says a frequency plainly (reflection: "runs every morning" is shown as "runs most
# mornings": a habit is what a person mostly does, not a rule they never break).
PLAIN_FREQUENCY = {"every morning": "most mornings", "every day": "most days", "each day": "most days",
                   "daily": "most days", "every evening": "most evenings", "every night": "most nights",
                   "nightly": "most nights", "every week": "most weeks", "weekly": "most weeks",
                   "every weekend": "most weekends", "each morning": "most mornings"}
# The words the LLM's prompt names as examples (extract_system.md).
PROMPT_EXAMPLES = ("always", "usually", "every morning", "as usual", "again", "习惯", "一般", "每天", "总是")
