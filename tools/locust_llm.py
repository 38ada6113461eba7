"""The Locust task that made tests/data/locust/ (tests/data/SOURCES.md gives the runs).

Two endpoints of tools/mock_llm_server.py, as a team load-testing its LLM service would:
a streamed chat completion and a whole (not streamed) completion. Locust times what the task
tells it to: with `stream=True` its own clock stops when the response headers arrive, so the
chat task sets the request's `response_time` to the time of the last streamed chunk (the
request's end to end, as a client sees it); the completion task is timed by Locust as it is
(the whole response). A response other than 200 is a failure.

    locust -f tools/locust_llm.py --headless -H http://127.0.0.1:8111 \
        -u 4 -r 4 -t 30s --csv run --json-file run
"""

import time

from locust import HttpUser, constant, task

MAX_TOKENS = 24


class LLMUser(HttpUser):
    wait_time = constant(0.05)

    @task(3)
    def chat_stream(self) -> None:
        body = {
            "model": "mock-model",
            "messages": [{"role": "user", "content": "Say something short."}],
            "max_tokens": MAX_TOKENS,
            "stream": True,
        }
        start = time.perf_counter()
        with self.client.post(
            "/v1/chat/completions",
            json=body,
            stream=True,
            catch_response=True,
            name="chat (stream)",
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")
                return
            chunks = sum(1 for line in response.iter_lines() if line.startswith(b"data: {"))
            response.request_meta["response_time"] = (time.perf_counter() - start) * 1000
            if chunks == 0:
                response.failure("no chunk streamed")

    @task(1)
    def completion(self) -> None:
        body = {"model": "mock-model", "prompt": "Say something short.", "max_tokens": MAX_TOKENS}
        with self.client.post(
            "/v1/completions", json=body, catch_response=True, name="completion"
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")
