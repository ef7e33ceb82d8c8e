"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions wire format, for the tests.

Not a mock object: Quire's client (the official `openai` package) connects over a socket, sends its
JSON and parses the answer. Each test scripts the answers with `server.answer = function(request)`
returning (status, body, headers); `server.requests` holds every request body received.
"""

import base64
import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def completion(top_logprobs, *, model="tiny-vlm", prompt_tokens=1000, token=None) -> dict:
    """A chat completion whose first (only) token has these (token, logprob) alternatives."""
    first = token or (top_logprobs[0][0] if top_logprobs else "Yes")
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": first},
                "logprobs": {
                    "content": [
                        {
                            "token": first,
                            "logprob": top_logprobs[0][1] if top_logprobs else 0.0,
                            "bytes": list(first.encode()),
                            "top_logprobs": [
                                {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top_logprobs
                            ],
                        }
                    ]
                },
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1},
    }


class ChatServer:
    def __init__(self):
        self.requests: list[dict] = []
        self.answer = lambda request: (200, completion([("Yes", -0.1), ("No", -2.4)]), {})
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    request = json.loads(raw)
                except ValueError:
                    request = {"_raw": raw.decode("utf-8", "replace")}
                request["_path"] = self.path
                with server._lock:
                    server.requests.append(request)
                status, body, headers = server.answer(request)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def p_yes(data: bytes) -> float:
    """The test model's P(yes) for an image: from its bytes, so the expected order is computable."""
    return 0.05 + 0.9 * int(hashlib.sha256(data).hexdigest()[:6], 16) / 0xFFFFFF


def model_answer(request):
    url = request["messages"][0]["content"][1]["image_url"]["url"]
    p = p_yes(base64.b64decode(url.split(",", 1)[1]))
    return 200, completion([("Yes", math.log(p)), ("No", math.log(1 - p))]), {}


def text_completion(text: str) -> dict:
    """A plain chat completion (a text model's answer)."""
    body = completion([("x", 0.0)])
    body["choices"][0]["message"]["content"] = text
    body["choices"][0]["logprobs"] = None
    body["choices"][0]["finish_reason"] = "stop"
    return body


def is_text_only(request) -> bool:
    return isinstance(request["messages"][0]["content"], str)


def images_response(pictures: list[bytes]) -> dict:
    """An images.generate answer with base64 images."""
    return {"created": int(time.time()), "data": [{"b64_json": base64.b64encode(p).decode()} for p in pictures]}
