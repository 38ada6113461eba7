"""The instrumented OpenAI client that made tests/data/otel-genai/ (runs: tests/data/SOURCES.md).

A plain `openai` client, instrumented by OpenTelemetry's official
`opentelemetry-instrumentation-openai-v2` (`--instrumentor v2`) or by OpenLLMetry's
`opentelemetry-instrumentation-openai` (`--instrumentor openllmetry`), sends `--requests`
streamed chat completions to tools/mock_llm_server.py from `--concurrency` threads; each
request is one `chat` span. The spans go to OTLP/JSON Lines (`opentelemetry-exporter-otlp-json-
file`'s FileSpanExporter) and to the SDK's ConsoleSpanExporter (`span.to_json()`), both at once.

    python tools/otel_genai_client.py --instrumentor v2 --base-url http://127.0.0.1:8131/v1 \
        --otlp spans.otlp.jsonl --console console_spans.txt

Retries are off (`max_retries=0`): a failed request is one span with status ERROR.
"""

import argparse
import concurrent.futures
import contextlib

import openai
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter


def instrument(kind: str) -> None:
    if kind == "v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument()


def one(client: openai.OpenAI, i: int, max_tokens: int) -> None:
    with contextlib.suppress(openai.APIError):
        stream = client.chat.completions.create(
            model="mock-model",
            messages=[{"role": "user", "content": f"Request {i}: say something short."}],
            max_tokens=max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        for _chunk in stream:
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instrumentor", choices=("v2", "openllmetry"), required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--otlp", required=True)
    parser.add_argument("--console", required=True)
    args = parser.parse_args()
    provider = TracerProvider(resource=Resource.create({"service.name": "llm-client"}))
    provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(args.otlp)))
    console = open(args.console, "w", encoding="utf-8")  # noqa: SIM115
    provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=console)))
    trace.set_tracer_provider(provider)
    instrument(args.instrumentor)
    client = openai.OpenAI(base_url=args.base_url, api_key="none", max_retries=0)
    with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
        list(pool.map(lambda i: one(client, i, args.max_tokens), range(args.requests)))
    provider.shutdown()
    console.close()


if __name__ == "__main__":
    main()
