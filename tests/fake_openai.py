"""A local OpenAI-compatible HTTP server with scripted responses.

Tests point the real `openai` client at it. Each endpoint has a queue of
scripted replies (status, JSON body or raw text, delay); when the queue is
empty a default handler answers (deterministic embeddings, or an empty chat). A chat
request with `stream: true` gets its reply as server-sent chunks.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: dict | None = None
    raw: str | None = None
    delay: float = 0.0


def _embedding(text: str, dims: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    values = [(digest[i % len(digest)] - 128) / 128.0 for i in range(dims)]
    return values


def chat_reply(content: str) -> Reply:
    return Reply(body={
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })


class FakeOpenAI:
    def __init__(self, dims: int = 8):
        self.dims = dims
        self.queues: dict[str, deque[Reply]] = {"/v1/embeddings": deque(), "/v1/chat/completions": deque()}
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append((self.path, payload))
                queue = fake.queues.get(self.path)
                reply = queue.popleft() if queue else fake.default(self.path, payload)
                if reply.delay:
                    time.sleep(reply.delay)
                if payload.get("stream") and reply.status == 200 and reply.raw is None:
                    self._stream(reply.body or {})
                    return
                data = reply.raw if reply.raw is not None else json.dumps(reply.body or {})
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data.encode())))
                    self.end_headers()
                    self.wfile.write(data.encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, body: dict) -> None:
                """A chat reply as OpenAI streams it (`stream: true`): server-sent chunks, then [DONE]."""
                content = body["choices"][0]["message"]["content"]
                chunks = [{"role": "assistant", "content": ""}, *({"content": content[i:i + 8]}
                                                                  for i in range(0, len(content), 8))]
                head = {"id": body["id"], "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
                events = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                          for delta in chunks]
                events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def default(self, path: str, payload: dict) -> Reply:
        if path == "/v1/embeddings":
            inputs = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
            return Reply(body={"object": "list", "model": payload.get("model"), "data": [
                {"object": "embedding", "index": i, "embedding": _embedding(t, self.dims)} for i, t in enumerate(inputs)
            ]})
        return chat_reply('{"memories": []}')

    def script(self, path: str, *replies: Reply) -> None:
        self.queues[path].extend(replies)

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
