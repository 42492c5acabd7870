"""`make up`: honcho, running the Procfile, given time to stop its processes gracefully.

honcho sends SIGTERM to every process on Ctrl-C and SIGKILL five seconds later (its KILL_WAIT, not a
setting). Gunicorn finishes its requests within graceful_timeout (30 s) and a Celery worker finishes
the task it holds, so five seconds cut work off mid-way: STOP_SECONDS, gunicorn's graceful_timeout and
five seconds more, is the wait used instead.
"""

import sys

import honcho.manager
from honcho.command import main

STOP_SECONDS = 35

if __name__ == "__main__":
    honcho.manager.KILL_WAIT = STOP_SECONDS
    sys.exit(main())
