"""The context block's sizes and shares (memories/context.py), each beside the measurement that chose it.
They are not settings: a new value is a new benchmark run. context.py looks them up here on every block,
so a benchmark or a test may patch this module.

`make bench-personas` asks 150 questions of 14 personas' blocks at 400 / 1,000 / 2,000 characters;
`make bench-context-evidence` checks whether a LoCoMo question's evidence reaches the block."""

# Long-term memory lines at least (seed 000 asks for 3-8). Without a request's limit the search is asked for
# one line per CONTEXT_CHARS_PER_MEMORY characters of max_chars, up to CONTEXT_MEMORY_MAX, and the block
# takes them best first until its characters run out: at 125 per line a Chinese block used a quarter of its
# budget (bench-personas; bench-context-evidence, "lines by budget").
CONTEXT_MEMORY_LIMIT = 6
CONTEXT_CHARS_PER_MEMORY = 32
CONTEXT_MEMORY_MAX = 64
CONTEXT_TRAIT_LIMIT = 5  # trait lines
CONTEXT_TRAIT_MIN_CONFIDENCE = 0.3  # a trait shows above this decayed confidence
CONTEXT_WORKING_LIMIT = 5  # fresh working-memory items
# The People section (docs/people.md): lines at most, within this share of max_chars; a person the question
# names brings this many of their facts, after this many of the search's lines, and a block shorter than
# CONTEXT_PEOPLE_MIN_CHARS has none. Bringing the person first had cost bench-personas dev 0.740 -> 0.699 at
# 400 characters; after the best two, and no section under 1,000 characters, it costs nothing there.
CONTEXT_PEOPLE_LIMIT = 6
CONTEXT_PEOPLE_SHARE = 0.15
CONTEXT_PERSON_FACTS = 4
CONTEXT_PERSON_FACTS_AFTER = 2
CONTEXT_PEOPLE_MIN_CHARS = 1000
CONTEXT_DUPLICATE_SIMILARITY = 0.8  # share of the shorter line's words that makes two lines one
# /context with session_id: the session's memories rank up by this share of their score (the block still shows
# the user's other sessions; search keeps session_id as a filter).
CONTEXT_SESSION_BOOST = 0.25
# An episode in the context shows its matching turns (with neighbours), at most this many characters.
# Chosen on LoCoMo by folds (bench-context-evidence, "What the agent is told"): 160 carried evidence for
# 0.78 of questions at 2,000 characters, 320 for 0.75; 160 was chosen in every fold.
CONTEXT_EPISODE_LINE_CHARS = 160
CONTEXT_CONDENSE_TIMEOUT = 5.0  # seconds for the optional LLM summary
