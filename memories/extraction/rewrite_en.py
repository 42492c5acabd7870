"""English said of its speaker, rewritten: the third person with the speaker's name ("I love my dog" ->
"Maria loves Maria's dog"), verbs conjugated, a report without its subject made a sentence, openings
that are no part of a statement taken off, "you" between two people named. Rewriting only: what a
clause does is the intent model's call (memories/extraction/intent.py)."""

from __future__ import annotations

import re

from memories.text import has_han

_VERB_3RD = {"am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does", "go": "goes", "was": "was",
             "can": "can", "will": "will", "would": "would", "should": "should", "could": "could",
             "can't": "can't", "don't": "doesn't", "won't": "won't", "didn't": "didn't", "haven't": "hasn't",
             "wasn't": "wasn't", "couldn't": "couldn't", "wouldn't": "wouldn't", "shouldn't": "shouldn't",
             "must": "must", "may": "may", "might": "might", "shall": "shall"}


_PAST_TENSE = frozenset("""went got ran met bought saw took made wrote read lost won had did was were found left felt
    thought told gave came became began kept heard sat spent taught brought caught drove flew grew knew sang swam threw
    woke wore ate fell forgot held paid said sent slept sold spoke stood understood might may must chose drew fed fought
    hid hung led lent meant rode rose shook stole struck swore tore wept broke built dealt dreamt learnt bent froze
    forgave sank spun sprang""".split())


# Past forms a report starts with, and the habitual present a trait says them in ("ran" -> "runs").
HABITUAL_PRESENT = {"had": "has", "ran": "runs", "went": "goes", "did": "does", "took": "takes", "made": "makes",
                    "got": "gets", "swam": "swims", "rode": "rides", "ate": "eats", "drank": "drinks",
                    "walked": "walks", "cooked": "cooks", "played": "plays", "worked": "works", "jogged": "jogs",
                    "cycled": "cycles", "hiked": "hikes", "biked": "bikes", "read": "reads", "wrote": "writes",
                    "slept": "sleeps", "woke": "wakes", "practised": "practises", "practiced": "practices",
                    "meditated": "meditates", "stretched": "stretches", "lifted": "lifts", "trained": "trains"}
_REPORT_OPENERS = frozenset("another a an the one two three more early late morning evening quick long short "
                            "great good nice first usual".split())


def report_as_sentence(clause: str, name: str) -> str:
    """A report said without a subject, as a sentence about its speaker: "Ran 10k this morning" ->
    "User ran 10k this morning"; "Another early morning run today, 6am as usual" -> "User had another
    early morning run today, 6am as usual" (an event named by a noun: had)."""
    body = clause.strip().rstrip(" .!")
    first = body.split(" ", 1)[0].lower()
    lowered = body[0].lower() + body[1:] if first in _PAST_TENSE or first in HABITUAL_PRESENT \
        or first in _REPORT_OPENERS else body
    verb_first = first in _PAST_TENSE or first in HABITUAL_PRESENT or first.endswith("ed")
    return f"{name} {lowered}" if verb_first else f"{name} had {lowered}"


# Present forms that end in "ed" (need, feed, succeed, embed): not a past tense. "agreed", "freed" are.
_PRESENT_ENDING_IN_ED = re.compile(r"^(?!(?:agr|fr|decr|guarant|refer|disagr)eed$)\w*eed$|^(?:shed|wed|embed|bed)$")


def third_person_verb(verb: str) -> str:
    lower = verb.lower()
    if lower in _VERB_3RD:
        return _VERB_3RD[lower]
    if lower in _PAST_TENSE or (lower.endswith("ed") and not _PRESENT_ENDING_IN_ED.search(lower)):
        return verb
    if re.search(r"(s|sh|ch|x|z|o)$", lower):
        return verb + "es"
    if re.search(r"[^aeiou]y$", lower):
        return verb[:-1] + "ies"
    return verb + "s"


_PRONOUNS = [(re.compile(r"\bmyself\b", re.I), "{name}"), (re.compile(r"\bmy\b", re.I), "{name}'s"),
             (re.compile(r"\bmine\b", re.I), "{name}'s"), (re.compile(r"\bI'm\b"), "{name} is"),
             (re.compile(r"\bI've\b"), "{name} has"), (re.compile(r"\bI'd\b"), "{name} would"),
             (re.compile(r"\bI'll\b"), "{name} will"), (re.compile(r"\bI am\b"), "{name} is"),
             (re.compile(r"\bI\b"), "{name}"), (re.compile(r"\bme\b", re.I), "{name}")]



# Words between "I" and its verb: "I really am", "I definitely care", "I slowly formed". Verbs ending in "ly"
# (apply, rely, fly) are not among them.
_ADVERB = (r"(?:also|always|often|never|still|just|even|ever|sometimes|soon|"
           r"(?!(?:app|rep|supp|comp|imp|multip|re|f|a|bul|ta|ra)ly\b)[a-z]{2,}ly)")


_OUR_HOUSEHOLD = re.compile(r"\bour ((?:family|families|kids|children|sons?|daughters?|dogs?|cats?|pets?|puppy|"
                            r"kitty|home|house|garden|wedding|parents|grandkids|baby))\b", re.I)


def to_third_person(sentence: str, name: str) -> str:
    """'I love my dog' -> 'Alice loves Alice's dog' style rewrite, verbs conjugated, an adverb between the
    two left where it was ("I definitely care" -> "Alice definitely cares", "who I really am" -> "who Alice
    really is")."""
    def conjugate(match: re.Match) -> str:
        adverbs = match.group(2) or ""
        return f"{name} {adverbs}{third_person_verb(match.group(3))}"

    text = re.sub(rf"\b(I)\s+((?:{_ADVERB}\s+)*)(?!'m\b)([a-z']+)", conjugate,
                  sentence)  # every clause's verb: "... and I keep bees"
    # "keep my answers short": the answers the speaker gets, from the assistant, not the speaker's own.
    text = re.sub(r"\bmy (answers|replies|responses)\b", r"the \1", text, flags=re.I)
    # "our kids", "our family": the speaker's household, said by name ("we" itself stays: whose it is varies).
    text = _OUR_HOUSEHOLD.sub(lambda m: f"{name}'s {m.group(1)}", text)
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement.format(name=name), text)
    return text[0].upper() + text[1:] if text else text



# A greeting in front of a statement ("你好，我刚搬到杭州", "Hi, I just moved to Lisbon"): the statement stays.
GREETING_LEAD = re.compile(r"^(?:hi|hello|hey|你好|您好|嗨|哈喽|早上好|晚上好)(?:\s*[,，!！~]+\s*|\s+)(?=\S)", re.I)
DISCOURSE = re.compile(r"^(?:(?:actually|oh|well|hmm|ok|okay|so|also|and|but|wait|sorry|btw|by the way|fyi|"
                       r"yeah|yep|yup|yes|wow|woah|whoa|haha|lol|aww|omg|plus)[,!.\s]+)+|"
                       r"^(?:其实|对了|哦|嗯|好吧|还有|算了|等等|不对|那个|对不起|抱歉)[，,、\s]*", re.I)


def without_address(sentence: str, addressees: list[str]) -> str:
    """A sentence without what opens it and is no part of the statement: interjections and the name of the
    person spoken to ("Yeah, Caroline, my family's been great" -> "my family's been great"), which had
    been kept in the memory ("Yeah, Caroline, Melanie's family's been great")."""
    names = "|".join(re.escape(name) for name in addressees if name)
    opening = re.compile(rf"^(?:(?:{names})\s*[,!]\s*)" if names else r"^(?!)")
    while True:
        shorter = opening.sub("", DISCOURSE.sub("", sentence), count=1)
        if shorter == sentence:
            return sentence
        sentence = shorter


# "you" as the subject of what follows it: a helping verb or a verb people say of the person they talk to.
_YOU_VERB = frozenset("""are were have had do did can could will would should might must know think want need like
    love feel felt get got make made go went say said seem look""".split())
_YOU_ADVERBS = r"(?:always|never|really|just|also|ever|still|often|sometimes|usually|definitely|totally|truly)"
_YOU_FORMS = [(re.compile(r"\byou(?:'re| are)\b", re.I), "{name} is"), (re.compile(r"\byou were\b", re.I),
              "{name} was"), (re.compile(r"\byou(?:'ve| have)\b", re.I), "{name} has"),
              (re.compile(r"\byou'll\b", re.I), "{name} will"), (re.compile(r"\byou'd\b", re.I), "{name} would"),
              (re.compile(r"\byourself\b", re.I), "{name}"), (re.compile(r"\byours?\b", re.I), "{name}'s")]


def name_the_addressee(text: str, name: str) -> str:
    """A memory of a conversation between two people with "you" said as the other one's name: "Your words
    really motivate Jon" -> "Gina's words really motivate Jon", "Jon hopes you do too" -> "Jon hopes Gina
    does too". Read later by an assistant, "you" is the assistant."""
    for pattern, words in _YOU_FORMS:
        text = pattern.sub(words.format(name=name), text)

    def subject(match: re.Match) -> str:
        adverbs, verb = match.group(1) or "", match.group(2)
        if verb.lower() not in _YOU_VERB:
            return match.group(0)
        return f"{name} {adverbs}{third_person_verb(verb)}"

    text = re.sub(rf"\byou\s+((?:{_YOU_ADVERBS}\s+)*)([a-z']+)", subject, text, flags=re.I)
    return re.sub(r"\byou\b", name, text, flags=re.I)



# A first-person statement said without its "I" ("Just got back from a road trip", "Been running longer",
# "Gonna volunteer next month"): the subject is put back before the rules read it.
_SUBJECTLESS_EN = re.compile(
    r"^(?:(?P<doing>(?:(?:still|just|currently|now|finally|busy) )+\w{2,}ing)\b|"
    r"(?:(?:just|also|still|finally|recently|really|actually|now) )*(?:(?P<been>been)|(?P<gonna>gonna)|"
    r"(?P<wanna>wanna)|(?P<verb>(?:love|like|want|need|hope|plan|have|got|prefer|enjoy|used|tend|try)) to|"
    r"(?P<past>\w{3,}ed|" + "|".join(sorted(_PAST_TENSE - {"might", "may", "must", "was", "were"})) + r")))\b",
    re.I)


# Past participles said as how one is ("Stoked about the trip"): "I'm", not "I".
_FELT_NOT_DONE = frozenset("""excited tired stoked blessed bored scared surprised amazed impressed pleased thrilled
    relieved interested obsessed stressed exhausted worried married engaged retired inspired motivated determined
    focused pumped psyched hooked convinced overwhelmed delighted honored honoured grateful glad""".split())


def with_its_subject(sentence: str) -> str:
    """An English first-person statement said without its "I", with it: "Just got back from a road trip"
    -> "I just got back from a road trip", "Been running longer" -> "I've been running longer", "Gonna
    explore more" -> "I am going to explore more", "Stoked about the trip" -> "I'm stoked about the trip",
    "Still working on the studio" -> "I'm still working on the studio".
    Anything else comes back as it was."""
    match = _SUBJECTLESS_EN.match(sentence)
    past = (match.group("past") or "").lower() if match else ""
    if match is None or has_han(sentence) or past == "agreed" or past and _PRESENT_ENDING_IN_ED.search(past):
        return sentence
    if past and re.match(r"\s+(?:me|us)\b", sentence[match.end():], re.I):  # "Really made me think": it did
        return sentence
    lowered = sentence[0].lower() + sentence[1:]
    if past in _FELT_NOT_DONE or match.group("doing"):
        return "I'm " + lowered
    if match.group("been"):
        return "I've " + lowered
    if match.group("gonna") or match.group("wanna"):
        lowered = re.sub(r"\bgonna\b", "am going to", lowered, count=1, flags=re.I)
        lowered = re.sub(r"\bwanna\b", "want to", lowered, count=1, flags=re.I)
    return "I " + lowered
