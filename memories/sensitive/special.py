"""GDPR's special categories said of a person: health, sex life and orientation, religion, political
opinions (and, beside them, racial or ethnic origin and trade-union membership)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from memories.sensitive.common import Match, sentence_of

# Health, sex life and orientation, religion, political opinions (GDPR art. 9): a term that names one, said of
# a person (the speaker, the user, someone named or related), and not of a pet, a book, a charity or a sign.
# Allergies, intolerances and diets are not held: they are what an assistant must know to be safe (docs).
_PERSON_EN = re.compile(r"\b(?:(?i:I|I'm|I’m|I've|I’ve|I'd|me|my|we|we're|our|he|he's|she|she's|his|her|him|they|"
                        r"their|user|mom|mum|dad|mother|father|wife|husband|partner|son|daughter|brother|sister|"
                        r"grandma|grandpa|grandmother|grandfather|aunt|uncle|cousin|friend|boss|colleague|boyfriend|"
                        r"girlfriend|fiancée?)|[A-Z][a-z]+(?=\s+(?:has|had|is|was|takes|took|sees|got|'s|’s)\b))\b")
_PERSON_ZH = re.compile(r"我|他|她|用户|妈|爸|老婆|老公|丈夫|妻子|儿子|女儿|哥|姐|弟|妹|爷爷|奶奶|外公|外婆|朋友|同事|"
                        r"得了|患有|患了|确诊|查出")
_NOT_A_PERSON = re.compile(r"\b(?:dog|dogs|cat|cats|pet|pets|puppy|kitten|horse|hamster|parrot|research|researcher|"
                           r"charity|fundrais\w*|awareness|donat\w*|documentary|movie|film|novel|book|article|podcast|"
                           r"lecture|course|textbook|museum|zodiac|horoscope|star sign|season|essay|exam|quiz|"
                           r"campaign for|walk for|run for|ride for|a cure)\b|"
                           r"狗|猫|宠物|研究|纪录片|电影|小说|书|课|讲座|"
                           r"公益|捐|星座|考试|论文", re.IGNORECASE)

_HEALTH_EN = re.compile(
    r"\b(?:AIDS|(?i:HIV(?:[\- ]positive)?|chemo(?:therapy)?|radiotherapy|antidepressants?|SSRIs?|insulin|metformin|"
    r"schizophreni\w*|bipolar|PTSD|ADHD|OCD|autis(?:m|tic)|dementia|alzheimer'?s|parkinson'?s|epilep(?:sy|tic)|"
    r"multiple sclerosis|miscarriage|abortion|IVF|infertil\w*|STDs?|STIs?|herpes|chlamydia|syphilis|"
    r"gonorrh?oea|hepatitis(?: [ABC])?|tuberculosis|diabet(?:es|ic)|cancer|leuka?emia|lymphoma|tumou?rs?|"
    r"(?:clinical |severe |postpartum |major )?depression|depressive|anxiety(?: disorder)?|panic attacks?|"
    r"eating disorder|anorexi[ac]|bulimi[ac]|rehab|alcoholi(?:c|sm)|"
    r"(?:drug|alcohol|opioid|gambling) (?:addiction|abuse)|"
    r"addiction|asthma|psoriasis|crohn'?s|c[oe]eliac disease|lupus|arthritis|hypertension|high blood pressure|"
    r"heart (?:condition|disease|failure|attack)|pregnan(?:t|cy)|expecting a baby|diagnos(?:ed|is)|prescribed|"
    r"disabilit(?:y|ies)|disabled|wheelchair|suicid\w*|self[\- ]harm|HPV|mental illness|"
    r"(?:my|his|her|their) mental health (?:issues|problems|struggles|condition|crisis|diagnosis)|"
    r"struggl\w* with (?:my |his |her )?mental health|"
    r"(?:my|his|her|our|a|the) (?:therapist|psychiatrist|psychologist|oncologist|counsell?or)(?! in\b| at\b| for\b)|"
    r"(?:in|started|starting|going to) therapy|therapy sessions?|"
    r"(?:my|his|her) (?:meds|medication|diagnosis|prescription|treatment|surgery|condition)))\b")
_HEALTH_COLLOQUIAL = re.compile(r"\b(?:(?:a|an|I'm a|I am a) Cancer\b|Cancer (?:season|sign)|Great Depression|"
                                r"tropical depression|economic depression|so OCD|addicted to|diagnosed the (?:problem|"
                                r"issue|bug|fault)|AIDS (?:for|to)\b|teaching aids|hearing aids?)", re.IGNORECASE)
_HEALTH_ZH = re.compile(r"艾滋|HIV|癌|肿瘤|化疗|放疗|白血病|淋巴瘤|糖尿病|抑郁症|抑郁|焦虑症|双相|躁郁|精神分裂|自闭症|"
                        r"孤独症|多动症|强迫症|癫痫|老年痴呆|阿尔茨海默|帕金森|乙肝|丙肝|肝炎|肺结核|结核|性病|梅毒|"
                        r"淋病|疱疹|怀孕|怀上了|流产|堕胎|打胎|试管婴儿|不孕|不育|哮喘|高血压|心脏病|心梗|中风|"
                        r"抗抑郁药|胰岛素|心理医生|心理咨询|精神科|心理治疗|住院治疗|残疾|轮椅|戒毒|戒酒|酗酒|"
                        r"毒瘾|自杀|自残|进食障碍|厌食症|红斑狼疮|类风湿")
_HEALTH_ZH_COLLOQUIAL = re.compile(r"巨蟹|癌症研究|抗癌公益")

SEX_EN = re.compile(
    r"\b(?:(?:I'm|I’m|I am|he's|she's|he is|she is|they're|we're|my \w+ is)\s+(?:a\s+)?(?:gay|lesbian|bisexual|"
    r"queer|pansexual|asexual|transgender|trans (?:man|woman)|non-binary|a virgin)(?![\-\w])|"
    r"(?:I'm|I am) straight(?=[.,!?;]|$| and| but)|"
    r"(?:came|coming|come) out (?:as|to (?:my|his|her))|sex life|(?:have|had|having|has) sex|"
    r"sexual (?:partner|partners|"
    r"health|orientation|history|problems?)|one[\- ]night stand|hook(?:ed|ing)? up with|hookups?|Grindr|"
    r"friends with benefits|open relationship|polyamor\w*|swingers?|erectile dysfunction|(?:my|his|her) libido|"
    r"lost (?:my|his|her) virginity|BDSM|threesomes?|sexting|OnlyFans)\b", re.IGNORECASE)
SEX_ZH = re.compile(r"(?:我|他|她)是(?:同性恋|gay|GAY|拉拉|les|双性恋|无性恋|跨性别者?|异性恋)|"
                     r"出柜|性取向|性生活|约炮|"
                     r"一夜情|炮友|开放式关系|(?:跟|和|同)[^，。,.!?！？]{1,8}(?:发生了?关系|上床)|性伴侣|阳痿|早泄|处男|处女(?![座作地航秀])")

_FAITHS = (r"(?:Muslim|Christian|Catholic|Protestant|Jewish|Jew|Hindu|Buddhist|Sikh|Mormon|Jain|Baptist|Methodist|"
           r"Evangelical|Orthodox|atheist|agnostic|Jehovah's Witness|Quaker|Anglican|Lutheran|Pentecostal|"
           r"Presbyterian|Shia|Sunni|Taoist)")
RELIGION_EN = re.compile(
    rf"\b(?:(?:I'm|I’m|I am|I was|we're|we are|he's|she's|he is|she is|they're|is|are|was|were|became|become|"
    rf"raised|born|grew up)\s+(?:a\s+|an\s+)?(?:devout\s+|practi[cs]ing\s+|born-again\s+|lapsed\s+|strict\s+|"
    rf"non-practi[cs]ing\s+)?{_FAITHS}\b(?!\s+(?:school|college|university|hospital|charity|deli|restaurant|name))"
    r"|(?:go|goes|went|attend|attends|attended|going)\s+(?:to\s+)?(?:church|mass|mosque|synagogue|temple|gurdwara|"
    r"Bible study|confession|Friday prayers?)\b(?!\s+(?:to see|to look|to photograph|for the architecture))"
    r"|\bI\s+(?:\w+\s+)?pray(?:ed|s)?\b(?:\s+(?:five times|daily|every|to|at|before|for))|"
    r"fast(?:ing)? (?:for|during) Ramadan|observ(?:e|es|ing) Ramadan|keep(?:s|ing)? kosher|(?:only )?eat(?:s)? only "
    r"halal|only eat halal|keep(?:s|ing)? (?:the )?Sabbath|observ(?:e|es|ing) (?:the )?Sabbath|converted to (?:Islam|"
    r"Christianity|Judaism|Buddhism|Catholicism|Hinduism)|(?:was|got|been) bapti[sz]ed|(?:my|our|his|her) "
    r"(?:faith|religion|pastor|imam|rabbi|priest|parish|congregation|church|mosque|synagogue|guru)\b|"
    r"(?:don't|do not|doesn't|does not) believe in God|believe in God|accepted Jesus|born again|my religious)",
    re.IGNORECASE)
RELIGION_ZH = re.compile(r"(?:我|他|她|我们|全家|我妈|我爸)(?:是|信|信仰|皈依了?|成了|改信了?)(?:一名|一个|虔诚的)?"
                          r"(?:基督徒|天主教徒|穆斯林|佛教徒|道教徒|伊斯兰教|基督教|天主教|犹太教|耶稣|主|佛教?|道教|"
                          r"无神论者?)|做礼拜|望弥撒|受洗|斋月|封斋|吃斋念佛|念佛|守安息日|祷告|去清真寺礼拜|"
                          r"每(?:周|个星期|个礼拜)[日天]?(?:都)?去(?:教堂|清真寺|寺庙)")

_PARTIES = (r"(?:Labour|Tory|Tories|Conservatives?|Democrats?|Republicans?|Greens?|Lib Dems?|Liberal Democrats?|"
            r"Reform UK|SNP|Communists?|Socialists?|Libertarians?|GOP|MAGA)")
POLITICS_EN = re.compile(
    rf"\b(?:I|we|he|she|they|my \w+)\s+(?:\w+\s+)?vot(?:ed|e|es|ing)\s+(?:for\s+|against\s+)?(?:the\s+)?"
    rf"(?:{_PARTIES}|Trump|Biden|Harris|Obama|Clinton|Sanders|Brexit|Leave|Remain|Le Pen|Macron|Starmer|Sunak|Modi)"
    rf"|(?:I'm|I am|he's|she's|he is|she is|I've always been|we're)\s+(?:a\s+)?(?:lifelong\s+|registered\s+|"
    rf"card-carrying\s+|proud\s+|staunch\s+)?(?:{_PARTIES}|Democrat|Republican|socialist|communist|libertarian|"
    rf"Marxist|anarchist|Brexiteer|Remainer|pro-life|pro-choice|anti-abortion|left-wing|right-wing|"
    rf"conservative|liberal|progressive)\b(?!\s+(?:with|about|when|in how|in my|estimate|amount))"
    rf"|(?:member of|joined|support|supports|supported|back|backs|campaign(?:ed|ing)? for|donate[sd]? to|"
    rf"canvass(?:ed|ing)? for)\s+(?:the\s+)?(?:Labour|Conservative|Tory|Green|Democratic|Republican|"
    rf"Liberal Democrat|Reform|Communist|Socialist|Libertarian|[A-Z][a-z]+) Party"
    r"|(?i:union member|member of the (?:\w+ )?(?:trade )?union|joined the (?:[\w'’]+ )?union|shop steward"
    r"|my political (?:views|opinions|beliefs)|my politics|politically,? I'm|I lean (?:left|right)|"
    r"I'm on the (?:left|right)(?=[.,!;?]|$|,? politically| of (?:the party|politics)))|"
    r"(?:I|we)\s+(?:support|hate|love|can't stand|despise|admire|oppose)\s+"
    r"(?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris|Netanyahu|Erdogan|Bolsonaro|Lula)|"
    r"I think (?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris) (?:is|was|should|will)")
POLITICS_ZH = re.compile(r"(?:我|他|她)是(?:一名)?(?:中共|共产)?党员|(?:我|他|她)(?:入党了|入了党)|"
                          r"(?:我|他|她)(?:支持|反对|讨厌|拥护)(?:民进党|国民党|共产党|民主党|共和党|工党|保守党|"
                          r"川普|特朗普|拜登|政府|台独|港独)|(?:我|他|她)投(?:票)?给了?(?:民进党|国民党|民主党|共和党|"
                          r"工党|保守党|川普|特朗普|拜登|赖清德|侯友宜|柯文哲)|(?:我|他|她)是(?:自由派|左派|右派|保守派|"
                          r"民族主义者|共产主义者|社会主义者|无政府主义者)|工会会员|加入了工会|我的政治(?:立场|观点)")


def _said_of_a_person(view: str, start: int, end: int, *, chinese: bool) -> bool:
    sentence = sentence_of(view, start, end)
    if _NOT_A_PERSON.search(sentence):
        return False
    return bool((_PERSON_ZH if chinese else _PERSON_EN).search(sentence))


def find_health(view: str) -> Iterator[Match]:
    for m in _HEALTH_EN.finditer(view):
        sentence = sentence_of(view, *m.span())
        if not _HEALTH_COLLOQUIAL.search(sentence) and _said_of_a_person(view, *m.span(), chinese=False):
            yield m.span()
    for m in _HEALTH_ZH.finditer(view):
        sentence = sentence_of(view, *m.span())
        if not _HEALTH_ZH_COLLOQUIAL.search(sentence) and _said_of_a_person(view, *m.span(), chinese=True):
            yield m.span()


_ABOUT_A_WORK = re.compile(r"\b(?:documentary|movie|film|novel|book|biography|article|podcast|lecture|course|"
                           r"textbook|museum|essay|exam|quiz|class)\b|纪录片|电影|小说|书|讲座|考试|论文",
                           re.IGNORECASE)


def topic_finder(english: re.Pattern[str], chinese: re.Pattern[str]) -> Callable[[str], Iterator[Match]]:
    """A special category other than health: its patterns already say it of a person; a sentence about
    a book or a film about it is not the person's."""
    def find(view: str) -> Iterator[Match]:
        for pattern in (english, chinese):
            for m in pattern.finditer(view):
                if not _ABOUT_A_WORK.search(sentence_of(view, *m.span())):
                    yield m.span()
    return find
