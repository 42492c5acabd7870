"""The numbers hybrid search was tuned to, each beside the measurement that chose it. They are not
settings: a deployer has no better value to give, and a new value is a new benchmark run (the bench
scripts that sweep them patch this module, and the readers look them up here on every search).

LoCoMo figures are from `make bench-quality` (the tune-on-two, check-on-the-third discipline: chosen
on conv-26 + conv-30, checked on conv-41; bench/results/2026-11-retrieval-quality.md)."""

# Weighted reciprocal rank fusion: each list's 1/(k + rank) times its weight. k=10 beat 60 on every
# conversation; BM25 keyword ranking is the stronger list with the English-only MiniLM, so semantic fills
# gaps and breaks ties (hit@10 0.621 -> 0.708, MRR 0.384 -> 0.487).
SEARCH_RRF_K = 10
SEARCH_KEYWORD_WEIGHT = 1.0
SEARCH_SEMANTIC_WEIGHT = 0.25
# The semantic side's weight for a question written in Chinese (blended with SEARCH_SEMANTIC_WEIGHT by the
# question's Han share): jieba's words rarely match a paraphrase, the multilingual vector does
# (`make bench-multilingual`; bench/results/2026-11-multilingual.md).
SEARCH_SEMANTIC_WEIGHT_HAN = 2.0
# bm25 (LoCoMo hit@10 0.708 vs 0.621) or ts_rank (about 1-2 ms cheaper per search; `make bench` compares).
SEARCH_KEYWORD_RANKING = "bm25"
# BM25's per-user counts: kept (read from the tables migration 0017's triggers maintain) or scanned (computed
# from the user's memories for every query, as before; `make bench` times both).
SEARCH_KEYWORD_STATISTICS = "kept"
# The conversation rules, chosen by folds over LoCoMo's conversations (bench/locomo.py, RULE_GRID): a top hit
# lends this share of its score to the memory saved right after it in the same session (0 turns it off),
# the best SEARCH_NEIGHBOUR_HITS of them (hit@10 0.708 -> 0.773: half the misses had their evidence one turn
# after a top-10 hit).
SEARCH_NEIGHBOUR_WEIGHT = 0.7
SEARCH_NEIGHBOUR_HITS = 5
# A "when" question: score x (1 + this) for memories that say when ("yesterday", "last May"); temporal
# hit@10 0.90 -> 0.91 and MRR +0.017 on top of neighbours.
SEARCH_TIME_MENTION_BONUS = 0.3
# A month or year named in the question: score x (1 + this) for memories true then (each of month and year).
SEARCH_TIME_PERIOD_BONUS = 0.5
# Episodes' score factor; apart from it, an episode always ranks below the facts that came from its turns.
SEARCH_EPISODE_WEIGHT = 1.0
# Users with more vectors than this are searched through the HNSW index; smaller ones by exact distance over
# their own rows (0.5 ms vs 100+ ms; `make bench`, "Core").
SEARCH_EXACT_MAX_ROWS = 5000
# hnsw.ef_search for tenant-wide and large-user searches: candidates the index walk keeps, at least this many
# (more when a search overfetches; `make bench`, "Core", times the HNSW plan with it).
SEARCH_HNSW_EF = 100
