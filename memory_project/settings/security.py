"""Who may do what, how often: the content security policy, trusted proxies, API keys, rate limits,
admin login lockout, storage quotas and what the review gate screens for."""

from __future__ import annotations

from memory_project.settings.env import env_bool, env_int, env_networks, env_str

# Sent on every response; empty turns it off. 'unsafe-inline' for styles only (the admin's style attributes).
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'")

# Reverse proxies allowed to name the client (X-Forwarded-For, Forwarded, X-Real-IP, one rule for all
# three): networks, comma-separated, empty by default (then the TCP peer is the client). Every
# per-address rule (/metrics, bad-key limits, admin login throttling, logs) uses the client found this
# way (memories/network.py, docs/deploy.md); limits count an IPv6 client per /64.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", "")

# A key found is remembered per process this long (no lookup per request); revoking it in another
# process takes effect within this bound, in the same process at once. 0: look it up every time.
KEY_CACHE_SECONDS = env_int("KEY_CACHE_SECONDS", 5)
# Each answer says where its time went (a Server-Timing header: auth, rate limit, validation, the
# work, serialization, rendering, the log line, SQL). Off by default: it tells callers about the inside.
SERVER_TIMING = env_bool("SERVER_TIMING", False)

# Rate limits (fixed windows; counters in Redis when configured, else the database). Per key and per
# tenant, requests per window: an agent in normal use (a few requests a turn) never meets them; one key
# sending as fast as the server answers does. Bad keys and admin logins are counted per client address
# (behind a proxy, see TRUSTED_PROXIES).
RATE_LIMIT_WINDOW_SECONDS = env_int("RATE_LIMIT_WINDOW_SECONDS", 10)
RATE_LIMIT_KEY_REQUESTS = env_int("RATE_LIMIT_KEY_REQUESTS", 300)  # 30/s on average, bursts within the window
RATE_LIMIT_TENANT_REQUESTS = env_int("RATE_LIMIT_TENANT_REQUESTS", 1000)
RATE_LIMIT_BAD_KEY_REQUESTS = 20  # per client address per window: a client guessing keys, not a typo
# A process reserves up to this many requests of a key's (and tenant's) window at a time, never more
# than 1/32 of a limit, instead of a round trip to the counters per request (memories/ratelimit.py).
RATE_LIMIT_LEASE_MAX = 16
# Admin login lockout: failures of one user name from one client, of any names from one client, and for how
# long; other clients are never locked out.
ADMIN_LOGIN_MAX_FAILURES = 5
ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT = 20
ADMIN_LOGIN_LOCKOUT_SECONDS = 900

# Per-tenant storage quotas (a tenant's own max_memories / max_bytes override them; 0: no limit).
TENANT_MAX_MEMORIES = env_int("TENANT_MAX_MEMORIES", 1_000_000)
TENANT_MAX_BYTES = env_int("TENANT_MAX_BYTES", 2 * 1024 ** 3)
QUOTA_USAGE_CACHE_SECONDS = 30  # how long a tenant's usage count is reused before it is counted again
# A tenant with this many conversations waiting or running gets 429 for the next one (one tenant's
# flood cannot queue unbounded work ahead of everyone else's).
TENANT_MAX_PENDING_JOBS = env_int("TENANT_MAX_PENDING_JOBS", 20)

# What the review gate screens saved, extracted and approved text for (memories/sensitive/).
SENSITIVE_DETECTORS = [d for d in env_str(
    "SENSITIVE_DETECTORS",
    "secret,email,phone,card,national_id,iban,address,birth_date,health,sex_life,religion,politics,"
    "ethnicity,union").split(",") if d]
