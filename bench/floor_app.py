"""The floor of an HTTP request here: a WSGI app that answers `{}` at once, served by gunicorn
like the project (bench/request_cost.py measures the project against it)."""


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
    return [b"{}"]
