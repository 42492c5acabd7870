"""`make up`: honcho, running the Procfile, given time to stop its processes gracefully.

honcho sends SIGTERM to every process on Ctrl-C and SIGKILL five seconds later (its KILL_WAIT, not a
setting). Gunicorn finishes its requests within graceful_timeout (30 s) and a Celery worker finishes
the task it holds, so five seconds cut work off mid-way. UP_STOP_SECONDS (default 35) is the wait
used instead.
"""

import os
import sys

import honcho.manager
from honcho.command import main

if __name__ == "__main__":
    honcho.manager.KILL_WAIT = int(os.environ.get("UP_STOP_SECONDS", "35"))
    sys.exit(main())
