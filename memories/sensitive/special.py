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
    r"|(?i:my political (?:views|opinions|beliefs)|my politics|politically,? I'm|I lean (?:left|right)|"
    r"I'm on the (?:left|right)(?=[.,!;?]|$|,? politically| of (?:the party|politics)))|"
    r"(?:I|we)\s+(?:support|hate|love|can't stand|despise|admire|oppose)\s+"
    r"(?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris|Netanyahu|Erdogan|Bolsonaro|Lula)|"
    r"I think (?:Trump|Biden|Obama|Putin|Xi Jinping|Modi|Macron|Starmer|Sunak|Harris) (?:is|was|should|will)")
POLITICS_ZH = re.compile(r"(?:我|他|她)是(?:一名)?(?:中共|共产)?党员|(?:我|他|她)(?:入党了|入了党)|"
                          r"(?:我|他|她)(?:支持|反对|讨厌|拥护)(?:民进党|国民党|共产党|民主党|共和党|工党|保守党|"
                          r"川普|特朗普|拜登|政府|台独|港独)|(?:我|他|她)投(?:票)?给了?(?:民进党|国民党|民主党|共和党|"
                          r"工党|保守党|川普|特朗普|拜登|赖清德|侯友宜|柯文哲)|(?:我|他|她)是(?:自由派|左派|右派|保守派|"
                          r"民族主义者|共产主义者|社会主义者|无政府主义者)|我的政治(?:立场|观点)")


# Who a statement is about, as a subject: the speaker, the user as a rewrite names them ("User is ...", "用户是
# ..."), someone named or related. `_WHO_EN` is used case-insensitively; a name keeps its capital.
_WHO_EN = (r"(?:I['’]m|I am|I was|I['’]ve (?:always )?been|"
           r"(?:the )?user(?:['’]s(?: \w+){1,2})? (?:is|was|has been|are)|"
           r"(?:my|his|her|their|our)(?: \w+){1,2} (?:is|are|was|were)|"
           r"(?-i:[A-Z][a-z]+)(?:['’]s \w+)? (?:is|was|are)|"
           r"(?:he|she|they|we)(?:['’]s|['’]re| is| are| was| were)|as an?)")
_WHO_ZH = (r"(?:我|他|她|我们|咱们|全家|用户|User|用户的[\u4e00-\u9fff]{1,3}|"
           r"我(?:的)?(?:妈|爸|老公|老婆|丈夫|妻子|儿子|女儿|哥|姐|弟|妹|奶奶|爷爷|外婆|外公|父母|家人|朋友|同事)|[老小阿][\u4e00-\u9fff]|[A-Z][a-z]+)"
           r"(?:的父母|的[\u4e00-\u9fff]{1,2})?(?:都|也|一直|本来|其实|现在|从小)?\s*")

# Health beyond the first list: medicines by name, procedures, conditions named the way a rewrite or a
# clinician says them ("User takes sertraline", "on tamoxifen", "colour-blind (deuteranopia)", "sectioned").
_HEALTH_MORE_EN = re.compile(
    r"\b(?:sertraline|zoloft|fluoxetine|prozac|citalopram|escitalopram|lexapro|venlafaxine|mirtazapine|lithium|"
    r"quetiapine|olanzapine|risperidone|aripiprazole|adderall|ritalin|methylphenidate|tamoxifen|letrozole|methadone|"
    r"buprenorphine|suboxone|naltrexone|amlodipine|lisinopril|atorvastatin|statins|warfarin|levothyroxine|"
    r"sumatriptan|ozempic|wegovy|semaglutide|truvada|(?-i:PrEP)|antiretrovirals?|HRT|CGM|insulin pump|"
    r"dialysis(?! (?:clinic|unit|centre|center|ward|nurse))|"
    r"mastectomy|hysterectomy|lumpectomy|laparoscopy|colonoscopy|biopsy|endometriosis|PCOS|stroke|aphasia|"
    r"psychotic|psychosis|sectioned|dyslexi[ac]|dyspraxi[ac]|colou?r[\- ]blind(?:ness)?|deuteranop\w*|"
    r"chronic (?:pain|migraines?|illness|fatigue|condition|back pain)|sexual health (?:screening|clinic|check)|"
    r"CAMHS|self[\- ]harms?|fibromyalgia|long covid|seizures?|kidney (?:failure|disease|transplant)|transplant|"
    r"pacemaker|thyroid|colitis|IBS|gout|glaucoma|cataracts?|asperger'?s|tourette'?s|flashbacks?|embryos?|"
    r"sober|sobriety|AA meetings?|relaps\w*|overdos\w*|deaf|hard of hearing|blind in|wheelchair user|amputee|"
    r"allergic to (?:penicillin|aspirin|ibuprofen|codeine|morphine|sulfa\w*|latex|antibiotics|NSAIDs)|"
    r"on (?:antidepressants|meds|medication|insulin|chemo)|in remission|terminal(?:ly ill)?|hospice|"
    r"bipolar disorder|depression|PTSD|panic attacks?|miscarr\w*|ivf|risperidone|clozapine|haloperidol|"
    r"lamotrigine|valproate|sodium valproate|levetiracetam|gabapentin|pregabalin|diazepam|lorazepam|clonazepam|"
    r"xanax|alprazolam|zopiclone|propranolol|bisoprolol|ramipril|losartan|furosemide|apixaban|rivaroxaban|"
    r"clopidogrel|omeprazole for|prednisone|prednisolone|methotrexate|adalimumab|humira|infliximab|"
    r"mounjaro|tirzepatide|saxenda|liraglutide|dapagliflozin|empagliflozin|glipizide|gliclazide|testosterone|"
    r"oestrogen|estrogen|progesterone|puberty blockers|spironolactone|finasteride|isotretinoin|accutane|"
    r"dementia|alzheimer\w*|autism|autistic|ADHD|OCD|schizo\w*|anorexi\w*|bulimi\w*|cancer|leuka?emia|"
    r"lymphoma|melanoma|tumou?r|diabet\w*|asthma|epilep\w*|HIV|AIDS|hepatitis|cirrhosis|multiple sclerosis|"
    r"MS diagnosis|motor neurone disease|ALS|cerebral palsy|spina bifida|down syndrome|cystic fibrosis|"
    r"sickle cell|haemophilia|hemophilia|lupus|arthritis|osteoporosis|heart failure|arrhythmia|AFib|angina|"
    r"bypass surgery|stent|hearing loss|cochlear implant|prosthe\w+|paralys\w+|paraplegic|quadriplegic|"
    r"in a wheelchair|registered blind|partially sighted|learning disabilit\w*|mental health (?:crisis|ward|team|"
    r"nurse)|psychiatric (?:ward|hospital|nurse)|rehab|detox|sectioned|suicidal|eating disorder|postnatal "
    r"depression|postpartum|pregnan\w*|expecting (?:a baby|twins)|due date|antenatal|maternity ward|"
    r"fertility (?:treatment|clinic)|egg freezing|vasectomy|abortion|termination)\b", re.IGNORECASE)
_HEALTH_MORE_ZH = re.compile(
    r"舍曲林|氟西汀|帕罗西汀|西酞普兰|艾司西酞普兰|文拉法辛|碳酸锂|喹硫平|奥氮平|他莫昔芬|美沙酮|氨氯地平|二甲双胍|"
    r"佐米曲普坦|舒马普坦|透析|病史|色盲|色弱|青霉素过敏|药物过敏|过敏性休克|中风|脑梗|心梗|乳腺|切除|偏瘫|失语|"
    r"惊恐发作|精神病|住院|确诊|停药|减药|做手术|动手术|手术|备孕|试管|阳性|痛风|甲亢|甲减|"
    r"读写障碍|阅读障碍|截肢|假肢|失明|视障|听障|聋|心理医生|心理咨询|戒断|成瘾|轻生|病假|病情|利培酮|氯氮平|奥卡西平|"
    r"丙戊酸|拉莫三嗪|左乙拉西坦|阿普唑仑|劳拉西泮|氯硝西泮|艾司唑仑|唑吡坦|普萘洛尔|华法林|阿司匹林肠溶|他汀|"
    r"激素治疗|免疫治疗|靶向药|透析|心脏支架|搭桥|起搏器|半身不遂|瘫痪|偏瘫|脑瘫|唐氏|白化病|血友病|地中海贫血|"
    r"红斑狼疮|强直性脊柱炎|痛风|肾衰|尿毒症|肝硬化|乙肝|丙肝|甲状腺|结节|囊肿|息肉|子宫肌瘤|宫外孕|剖腹产|顺产|"
    r"产检|孕期|怀孕|坐月子|产后抑郁|更年期|不孕|试管|取卵|冻卵|结扎|人流|药流|精神分裂|抑郁|焦虑|强迫症|躁郁|"
    r"双相|自闭|多动|阿尔茨海默|老年痴呆|帕金森|癫痫|中风|脑梗|心梗|冠心病|高血压|糖尿病|哮喘|癌|肿瘤|化疗|放疗")
# Health words of something else: a pet, a plant, a starter, a device, a game, a story.
_NOT_HEALTH = re.compile(
    r"\b(?:dog|dogs|cat|cats|pet|pets|puppy|kitten|horse|hamster|parrot|plant|monstera|succulent|root rot|"
    r"sourdough|starter|computer|laptop|phone|printer|game|patch|healer|character|heroine|hero|protagonist|"
    r"screenplay|scene|novel|film|movie|drama|series|episode of|documentary|podcast|article|textbook|research|"
    r"researcher|charity|fundrais\w*|awareness|donat\w*|zodiac|horoscope|star sign|essay|exam|quiz|a cure|"
    r"walk for|run for|ride for|campaign for|WHO|guidelines)\b|狗|猫|宠物|植物|多肉|电脑|病毒|游戏|角色|剧|电影|小说|"
    r"纪录片|研究|公益|捐|星座|考试|论文|《", re.IGNORECASE)
# Someone in the sentence: as the English and Chinese lists say, a Latin name before Chinese ("Kevin 有 ..."),
# a Chinese one by its 老/小/阿.
_PERSON_ANY = re.compile(_PERSON_EN.pattern + "|" + _PERSON_ZH.pattern
                         + r"|[A-Z][a-z]+(?=\s*[\u4e00-\u9fff])|[老小阿][\u4e00-\u9fff](?=[是有在得的])")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_GENERAL_QUESTION = re.compile(r"[?？吗呢]\s*$")


def _said_of_a_person(view: str, start: int, end: int) -> bool:
    """Chinese leaves the speaker out ("最近 PTSD 的 flashback 越来越多"): a sentence with Chinese in it is someone's
    unless it is a question with no one in it; an English one names someone."""
    sentence = sentence_of(view, start, end)
    if _NOT_HEALTH.search(sentence):
        return False
    if _PERSON_ANY.search(sentence):
        return True
    return bool(_HAN.search(sentence)) and not _GENERAL_QUESTION.search(sentence.strip(" 。.!！"))


def find_health(view: str) -> Iterator[Match]:
    for pattern, colloquial in ((_HEALTH_EN, _HEALTH_COLLOQUIAL), (_HEALTH_MORE_EN, _HEALTH_COLLOQUIAL),
                                (_HEALTH_ZH, _HEALTH_ZH_COLLOQUIAL), (_HEALTH_MORE_ZH, _HEALTH_ZH_COLLOQUIAL)):
        for m in pattern.finditer(view):
            if not colloquial.search(sentence_of(view, *m.span())) and _said_of_a_person(view, *m.span()):
                yield m.span()


SEX_MORE = re.compile(
    rf"(?i:\b{_WHO_EN}\s+(?:a\s+|an\s+|openly\s+|also\s+|actually\s+)*(?:gay|lesbian|bi|bisexual|queer|pansexual|"
    rf"asexual|aromantic|transgender|trans|non-binary)(?![\-\w])(?!\s+(?:laughter|apparel|bar|club|icon))|"
    rf"\b{_WHO_EN}\s+straight(?=[.,!?;]|$| and| but| too))|"
    r"(?i:\bopen (?:marriage|relationship)|\b(?:Grindr|Blued|Tinder|Hinge|Feeld)\b.{0,30}(?:hook|约|date|dating)|"
    r"come out|came out|coming out|closeted|\bmy (?:same-sex|gay|lesbian|trans) (?:partner|husband|wife|boyfriend|"
    r"girlfriend)\b|\b(?:sexual|romantic) (?:orientation|preference)s?\b|\b(?:kink|fetish|kinky)\b|"
    r"\b(?:we|I|he|she|they) (?:have|had|haven't had|hadn't had) sex\b|\bsleeping (?:with|together)\b|"
    r"\b(?:an|the|my|his|her) affair\b|\bcheat(?:ed|ing) on\b|\b(?:trying|trying hard) to conceive\b|"
    r"\b(?:birth control|the pill|contraception|contraceptive|morning-after pill|condoms?)\b|"
    r"\b(?:libido|sex drive)\b|\b(?:gender|sex)[\- ](?:reassignment|affirming) (?:surgery|care)\b|"
    r"\btransition(?:ed|ing)\b)|"
    rf"{_WHO_ZH}是\s*(?:男同|女同|同性恋|双性恋|无性恋|跨性别|gay|les|拉拉|bi|asexual|pansexual|queer|trans)(?![a-z])|"
    r"男同|女同|Blued|约人|(?:排卵期?|备孕)[^。！？\n]{0,8}同房|同房|同志(?=[，。,.\s]|$)|(?:我|他|她|用户)是同志|"
    r"性取向|性生活|外遇|出轨|一夜情|约炮|避孕|紧急避孕|性伴侣|性癖|变性|跨性别")

_FAITHS_MORE = (r"(?:Muslims?|Christians?|Catholics?|Protestants?|Jewish|Jews?|Hindus?|Buddhists?|Sikhs?|Mormons?|"
                r"Jains?|Baptists?|Methodists?|Evangelicals?|(?:Greek |Russian |Eastern )?Orthodox|atheists?|"
                r"agnostics?|Jehovah['’]s Witness(?:es)?|Quakers?|Anglicans?|Lutherans?|Pentecostals?|Presbyterians?|"
                r"Shia|Sunni|Taoists?|Wiccans?|pagans?|Baha['’]is?|Zoroastrians?|Rastafarians?|Scientologists?|"
                r"Adventists?|Latter-day Saints?|LDS)")
_RELIGIONS = r"(?:Buddhism|Christianity|Islam|Catholicism|Judaism|Hinduism|Taoism|Sikhism|Mormonism)"
RELIGION_MORE = re.compile(
    rf"(?i:\b{_WHO_EN}\s+(?:a\s+|an\s+|devout\s+|practi[cs]ing\s+|observant\s+|born-again\s+|lapsed\s+|strict\s+|"
    rf"non-practi[cs]ing\s+)*{_FAITHS_MORE}\b(?!\s+(?:school|college|university|hospital|charity|deli|restaurant|"
    rf"name|food|holiday))|"
    rf"\b(?:practi[cs]ing|devout|observant) {_FAITHS_MORE}\b|"
    r"\bmember of the (?:Church of Jesus Christ|\w+ church|local (?:mosque|synagogue|church)|congregation)|"
    r"\b(?:left|joined|quit) the (?:\w+ )?(?:church|faith|mosque|congregation)\b|"
    r"\b(?:I|she|he|user|they) (?:wears?|wear) an? (?:hijab|niqab|burqa|turban|kippah|yarmulke|headscarf)\b|"
    r"\bobserv(?:e|es|ing) (?:Lent|Ramadan|Shabbat|the Sabbath|Yom Kippur)\b|"
    r"\b(?:I|she|he|user|they|we) (?:pray|prays|prayed|tithe|tithes|fast|fasts|fasted) "
    r"(?:five times|daily|every|at the|"
    r"during|for Lent|on Fridays)|\b(?:my|his|her|our) (?:bar|bat) mitzvah\b|\b(?:did|doing|going on|made) (?:the )?"
    r"(?:Hajj|Umrah|pilgrimage)\b|\b(?:I|she|he|user|they|we) (?:only )?(?:eat|eats|keep|keeps) (?:halal|kosher)\b|"
    r"\b(?:I|she|he|user|they) (?:wears?|wear) (?:a )?(?:cross|crucifix|rosary|bindi|kara|tzitzit)\b|"
    r"\b(?:Sunday school|Bible study|Quran class|prayer group|youth group at (?:church|the mosque))\b|"
    r"\b(?:my|his|her|our) (?:church|mosque|synagogue|temple|gurdwara|parish|congregation|pastor|vicar|imam|rabbi|"
    r"priest|minister|bishop)\b|"
    r"(?:Ramadan|斋月)[^.!?。！？\n]{0,12}(?:fasting|fast\b|封斋|斋戒)|(?:fasting|封斋)[^.!?。！？\n]{0,12}(?:Ramadan|斋月))|"
    rf"{_WHO_ZH}(?:是|信|信仰|皈依了?|成了|改信了?)\s*(?:一名|一个|虔诚的)?\s*(?:{_FAITHS_MORE}|{_RELIGIONS}|"
    r"基督徒|天主教徒|穆斯林|佛教徒|道教徒|伊斯兰教|基督教|天主教|犹太教|东正教|摩门教|耶和华见证人|耶稣|佛教?|道教|"
    r"妈祖|无神论者?)|(?:在|是)教会|教会(?:执事|长老|同工)|查经班|团契|主日学|进香|信主|信佛|信教|拜佛|烧香拜佛|吃斋|"
    r"念经|去礼拜|受洗|朝觐|斋戒|(?:我|他|她|用户)[^。！？\n]{0,4}(?:去|上)(?:教堂|清真寺|寺庙|庙里|教会)(?:做|参加|礼拜|祈祷|"
    r"烧香|拜|望)|(?:我|他|她|用户)(?:是|信)(?:佛教|基督教|天主教|伊斯兰教|道教)徒?")

_PARTIES_MORE = (r"(?:Labour|Tory|Tories|Conservatives?|Democrats?|Republicans?|Greens?|Green Party|Lib Dems?|"
                 r"Liberal Democrats?|Reform(?: UK)?|SNP|Plaid Cymru|Sinn F[eé]in|DUP|UKIP|AfD|KMT|DPP|BJP|"
                 r"Communists?|Socialists?|Libertarians?|GOP|MAGA|Trump|Biden|Harris|Obama|Clinton|Sanders|"
                 r"Bernie(?: Sanders)?|Le Pen|Macron|Starmer|Sunak|Modi|Farage|Corbyn|CDU|CSU|SPD|FDP|Die Linke|"
                 r"PSOE|Podemos|Vox|Fidesz|PiS|Likud|ANC|LDP|NDP|ALP|Labor|One Nation|Rassemblement National|"
                 r"La France Insoumise|Lega|Five Star|Fratelli d'Italia|Morena|Sinn Fein|Alliance Party|Plaid|"
                 r"Greens|Green Party|Reform Party|Libertarian Party|Democratic Party|Republican Party|Tory Party|"
                 r"Labour Party|Conservative Party|Liberal Party|Liberals|Kamala|Obama|Putin|Zelensky|Netanyahu|"
                 r"Orb[aá]n|Meloni|Bolsonaro|Lula|Trudeau|Poilievre|Albanese|Dutton|Johnson|Truss|May|Badenoch)")
POLITICS_MORE = re.compile(
    rf"(?i:\b(?:I|we|he|she|they|(?:the )?user|(?:my|his|her|their|our|user['’]s) \w+|(?-i:[A-Z][a-z]+))\s+"
    rf"(?:\w+\s+)?(?:vot(?:ed|es|e|ing)|backs|backed|supports?|supported|canvass(?:ed|es)? for|campaign(?:ed|s)? for)"
    rf"\s+(?:for\s+|against\s+)?(?:the\s+)?{_PARTIES_MORE}\b|"
    rf"\b{_PARTIES_MORE}(?: [Pp]arty)? (?:member|supporter|voter|activist|councillor|candidate)\b|"
    rf"\bmember of the {_PARTIES_MORE}\b|"
    rf"\bI think (?:the )?{_PARTIES_MORE} (?:should|are|is|were|will|would|can't|cannot|never)\b|"
    rf"\bdonat\w* to (?:the )?(?:\w+ ){{1,3}}campaign\b|"
    r"\b(?:marched|protested|demonstrated|rallied|was arrested) (?:with|for|against|in|at|on)\b|"
    r"\b(?:Extinction Rebellion|Just Stop Oil|Black Lives Matter|Occupy|March for Life|Women's March|Palestine Action|"
    r"Stop the War|Momentum|Young Conservatives|Young Republicans|Young Democrats|DSA)\b|"
    r"\b(?:I|we|he|she|they|(?:the )?user|(?:my|his|her|their) \w+)\s+(?:\w+\s+)?(?:am|is|are|was|were)?\s*"
    r"(?:strongly\s+)?(?:pro|anti)[\- ](?:choice|life|abortion|Brexit|EU|immigration|Trump|Israel|Palestine|"
    r"Palestinian|Zionist|monarchy|gun|war|capitalist|communist|government)\b|"
    r"\b(?:I|we|he|she|they|(?:the )?user)\s+(?:\w+\s+)?(?:support|supports|oppose|opposes|am against|is against|"
    r"are against)\s+(?:the\s+)?(?:abortion rights|gun control|the death penalty|Brexit|Scottish independence|"
    r"independence|immigration|the monarchy|Israel|Palestine|the war|Ukraine|Russia|capitalism|socialism|"
    r"communism|same-sex marriage|gay marriage|unions|the government)\b|"
    r"\bvoted (?:Leave|Remain|yes|no) in the\b|\b(?:my|his|her) (?:vote|ballot) (?:went|goes) to\b|"
    rf"\b{_WHO_EN}\s+(?:a\s+|an\s+)?(?:staunch\s+|lifelong\s+|proud\s+|committed\s+)?(?:monarchist|republican|"
    r"nationalist|separatist|socialist|communist|marxist|anarchist|libertarian|centrist|populist|leftist|"
    r"right-winger|left-winger)\b)|"
    rf"{_WHO_ZH}[^。！？\n]{{0,10}}?(?:vote\w*|投(?:票)?(?:给)?了?|支持|support\w*)\s*了?\s*(?:the\s+)?(?:{_PARTIES_MORE}|"
    r"民进党|国民党|共产党|民主党|共和党|工党|保守党|绿党|哈里斯|特朗普|川普|拜登|赖清德|侯友宜|柯文哲|台湾独立|台独|港独)|"
    r"(?:民进党|国民党|共产党|民主党|共和党|工党|保守党|绿党)的?(?:支持者|党员|成员|铁粉)|"
    r"民盟盟员|盟员|九三学社|致公党|民革|民建|农工党|台盟|共青团员|团员|入党申请书|入党|党员|"
    r"我(?:觉得|认为)[^。！？\n]{0,16}(?:政府|政权|共产党|独裁|民主|言论|审查|专制)|"
    r"(?:我|他|她|用户)[^。！？\n]{0,6}(?:支持|反对|拥护)(?:统一|独立|台独|港独|藏独|疆独|民主化|示威|抗议|游行|政府|"
    r"同性婚姻|死刑|移民)|(?:参加|去)了?(?:游行|示威|抗议|集会)|(?:我|他|她|用户)是(?:建制派|泛民|蓝营|绿营|深蓝|深绿|"
    r"小粉红|公知|五毛|自干五|民主派|保皇党|左派|右派|自由派|保守派)")

_ETHNIC = (r"(?:Black|white|Asian|Latino|Latina|Latinx|Hispanic|Arab|Jewish|Roma|Romani|Traveller|Aboriginal|"
           r"Indigenous|Native American|First Nations|Inuit|M[aā]ori|S[aá]mi|Kurdish|Berber|Uyghur|Tamil|Sinhalese|"
           r"Igbo|Yoruba|Hausa|Zulu|Xhosa|Pashtun|Punjabi|Gujarati|Bengali|Han Chinese|Hakka|Tibetan|Mongolian|"
           r"Korean|Japanese|Chinese|Vietnamese|Cambodian|Filipino|Thai|Indian|Pakistani|Bangladeshi|Nigerian|"
           r"Ghanaian|Somali|Ethiopian|Eritrean|Mexican|Puerto Rican|Cuban|Dominican|Haitian|Jamaican|Caribbean|"
           r"Irish|Scottish|Welsh|Polish|Italian|Greek|Turkish|Armenian|Persian|Iranian|Cherokee|Navajo|Lakota|"
           r"mixed[\- ]race|biracial|mixed heritage|ABC|American-born Chinese|African American|Asian American|"
           r"Afro-Caribbean|Black British|British Asian|British Indian|British Pakistani|Arab American|"
           r"Pacific Islander|Native Hawaiian|Samoan|Tongan|Fijian|Maori|Aboriginal|Torres Strait Islander|"
           r"Romanichal|Gypsy|Sinti|Kurd|Hazara|Baloch|Uzbek|Kazakh|Tatar|Chechen|Hmong|Karen|Rohingya|Khmer|Lao|"
           r"Malay|Javanese|Sundanese|Tagalog|Ilocano|Sikh Punjabi|Tamil Nadu|Telugu|Kannada|Malayali|Marathi|"
           r"Sindhi|Kashmiri|Nepali|Sherpa|Bhutanese|Sri Lankan|Afghan|Syrian|Lebanese|Palestinian|Egyptian|"
           r"Moroccan|Algerian|Tunisian|Libyan|Sudanese|Kenyan|Ugandan|Tanzanian|Rwandan|Congolese|Cameroonian|"
           r"Senegalese|Malian|Ivorian|Sierra Leonean|Liberian|Zimbabwean|Zambian|Malawian|Mozambican|Angolan|"
           r"South African|Colombian|Venezuelan|Peruvian|Chilean|Argentine|Argentinian|Brazilian|Ecuadorian|"
           r"Bolivian|Guatemalan|Salvadoran|Honduran|Nicaraguan|Chicano|Chicana|Quechua|Aymara|Mapuche|Ojibwe|"
           r"Cree|Mohawk|Apache|Hopi|Sioux|Inuk|Métis|Metis|Ashkenazi|Sephardic|Mizrahi|Druze|Assyrian|Copt|"
           r"Ukrainian|Russian|Belarusian|Lithuanian|Latvian|Estonian|Czech|Slovak|Hungarian|Romanian|Bulgarian|"
           r"Serbian|Croatian|Bosnian|Albanian|Slovenian|Macedonian|Portuguese|Spanish|Catalan|Basque|Galician|"
           r"French|German|Dutch|Flemish|Danish|Swedish|Norwegian|Finnish|Icelandic|Cornish|Manx|Breton|"
           r"Taiwanese|Hong Konger|Cantonese|Hokkien|Teochew|Zhuang|Hui|Manchu|Yi|Miao|Tujia|Dong|Yao|Bai)")
ETHNICITY = re.compile(
    rf"(?i:\b{_WHO_EN}\s+(?:a\s+|an\s+|half\s+|part\s+|actually\s+|proudly\s+|ethnically\s+|of\s+|"
    rf"(?-i:[A-Z][a-z]+) )*(?-i:{_ETHNIC})(?:[\-\s](?-i:[A-Z][a-z]+))*(?:\s+(?:descent|heritage|origin|ancestry|"
    r"background|woman|man|person|British|American|Australian|Canadian|citizen))?\b(?!\s+(?:food|cuisine|"
    r"restaurant|place|class|lessons?|course|New Year|film|drama|Ocean|anime))|"
    r"\b(?:of|from) (?:\w+ ){0,2}(?:descent|heritage|ancestry|origin)\b|"
    r"\b(?:enrolled|tribal) (?:\w+ ){0,2}(?:citizen|member)\b|"
    r"\b(?:my|his|her|their|our) (?:ethnicity|race|ethnic background|heritage|ancestry)\b|"
    r"\b(?:person|people|woman|man|women|men) of colou?r\b|\b(?:POC|BIPOC|BAME)\b)|"
    rf"{_WHO_ZH}是\s*(?:{_ETHNIC}|(?:汉|满|蒙古|回|藏|维吾尔|苗|彝|壮|布依|朝鲜|侗|瑶|白|土家|哈尼|哈萨克|傣|黎|傈僳|"
    r"佤|畲|高山|拉祜|水|东乡|纳西|景颇|柯尔克孜|土|达斡尔|仫佬|羌|布朗|撒拉|毛南|仡佬|锡伯|阿昌|普米|塔吉克|怒|"
    r"乌孜别克|俄罗斯|鄂温克|德昂|保安|裕固|京|塔塔尔|独龙|鄂伦春|赫哲|门巴|珞巴|基诺)族)|民族一栏|客家人|"
    r"(?:背景|血统|混血)|(?:我|他|她|用户)[^。！？\n]{0,4}(?:是|属于)少数民族|(?:我|他|她|用户)(?:是|有)[^。！？\n]{0,4}"
    r"(?:血统|混血)")

_UNIONS = (r"(?:NEU|NUT|NASUWT|CWU|PCS|Unite|Unison|GMB|RMT|ASLEF|UCU|BMA|RCN|Equity|Teamsters|AFT|NEA|UAW|SEIU|"
           r"AFL-CIO|AFSCME|IBEW|USW|CUPE|SAG-AFTRA|Writers Guild(?: of America)?|WGA|IWW|NUJ|FBU|POA|Usdaw|Prospect|"
           r"Community|ver\.di|IG Metall|CGT|CFDT|ILWU|ILA|UNITE HERE|CWA|NALC|APWU|NNU|Unifor|CLC|ACTU|CFMEU|AMWU|"
           r"UFCW|IATSE|AFM|SMART|UBC|LIUNA|IUOE|ATU|TWU|NFFE|AFGE|NTEU|EIS|INTO|SIPTU|Fórsa|Mandate|"
           r"Musicians' Union|Royal College of Nursing|British Medical Association|National Education Union|"
           r"ver\.di|CCOO|UGT|CGIL|CISL|FNV|LO|Kommunal|IF Metall|CUT|COSATU|NUMSA|Zenroren|Rengo|KCTU|FKTU)")
UNION = re.compile(
    rf"(?i:\b(?:my|our|his|her|their|user['’]s) (?:\w+ )?union\b(?!\s+(?:bar|station|square|jack))|"
    rf"\b(?:member|members|rep|representative|steward|officer|organi[sz]er|branch secretary|executive) of "
    rf"(?:the |our |my |a )?(?:local )?(?:\w+ ){{0,3}}(?:union|guild|{_UNIONS})\b|"
    rf"\bon the executive of\b|\bshop steward\b|\bunion (?:member|membership|rep|card|dues|meeting|organi[sz]er|"
    rf"official|branch|ballot|chapter|local)\b|"
    rf"\b(?:I|we|he|she|they|(?:the )?user)(?:['’]re|['’]m| am| are| is| was| were)? (?:unionised|unionized|"
    rf"organising|organizing) (?:our|my|the|their) (?:workplace|shop|warehouse|office|store)\b|"
    rf"\b(?:I|we|he|she|they|(?:the )?user) (?:voted|vote) (?:to|for) (?:strike|industrial action|unionise|unionize)\b|"
    rf"\b(?:joined|join|left) (?:the |a |our |my )?(?:[\w'’]+ ){{0,2}}(?:union|guild)\b|"
    rf"\bcard-carrying member\b|"
    rf"\b(?-i:{_UNIONS})\b(?=[^.!?。！？\n]{{0,40}}(?:member|strike|picket|ballot|union|工会|罢工))|"
    rf"(?:member|picket line)[^.!?\n]{{0,30}}\b(?-i:{_UNIONS})\b)|"
    rf"(?:加入了?|join了?|是)\s*(?:{_UNIONS}|[\u4e00-\u9fff]{{0,6}}工会)|工会(?:会员|小组长|主席|积极分子|代表|干部)|"
    r"教协会员|职工代表|产业工会|(?<!欧)(?<!银)工会(?!大厦|路)|(?:入|加入|参加)了?(?:工会|工联|职工会)|工联会|职工会|"
    r"劳工组织|(?:我|他|她|用户)[^。！？\n]{0,6}(?:罢工|维权)")


def _said_of_someone(view: str, start: int, end: int) -> bool:
    """Not about a work; someone in it, or Chinese that leaves the speaker out and asks nothing ("昨晚约炮了")."""
    sentence = sentence_of(view, start, end)
    if _ABOUT_A_WORK.search(sentence):
        return False
    if _PERSON_ANY.search(sentence):
        return True
    return bool(_HAN.search(sentence)) and not _GENERAL_QUESTION.search(sentence.strip(" 。.!！"))


# "our union was blessed in June": a marriage, not a trade union.
NOT_A_UNION = re.compile(r"\bunion (?:was|is) blessed|\b(?:our|their) union (?:was|is|has been) "
                         r"(?:blessed|celebrated|happy|long)|\bwedding\b|\bmarriage\b", re.IGNORECASE)


_ABOUT_A_WORK = re.compile(r"\b(?:documentary|movie|film|novel|biography|article|podcast|lecture|textbook|museum|"
                           r"essay|exam|quiz|screenplay|protagonist|character|heroine|campaign setting|game|"
                           r"(?:a|the|this|that|my|his|her) (?:\w+ )?(?:book|course|class|thesis))\b|纪录片|电影|小说|"
                           r"讲座|考试|论文|作业|《", re.IGNORECASE)


def topic_finder(*patterns: re.Pattern[str], unless: re.Pattern[str] | None = None) -> Callable[[str], Iterator[Match]]:
    """A special category other than health: its patterns say it of a person; a sentence about a book, a
    film or a game about it is not the person's, nor one with no one in it, nor one `unless` finds."""
    def find(view: str) -> Iterator[Match]:
        for pattern in patterns:
            for m in pattern.finditer(view):
                if _said_of_someone(view, *m.span()) and not (
                        unless is not None and unless.search(sentence_of(view, *m.span()))):
                    yield m.span()
    return find
