"""Shared pieces of the OpenTelemetry import tests (issue 15): the real ``stepfork`` CLI in a subprocess,
the weather agent of ``agent/`` run under real instrumentations, and spans built with the real OTel SDK."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
AGENT = HERE / "agent" / "weather_otel.py"
FAKE = HERE.parent / "integrations" / "helpers" / "fake_providers.py"
GENAI_CONTENT = {
    "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
}


@dataclass
class Done:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def stepfork_exe() -> str:
    beside = Path(sys.executable).parent / "stepfork"
    found = str(beside) if beside.exists() else shutil.which("stepfork")
    if found is None:  # pragma: no cover - the test environment installs stepfork-cli
        pytest.skip("the stepfork executable is not installed")
    return found


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "WEATHER_"))}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "120", "NO_COLOR": "1"})
    env.pop("STEPFORK_DEBUG", None)
    env.update(extra or {})
    return env


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Done:
    done = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, env=_env(env), timeout=180, check=False
    )
    return Done(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder holding the agent and its fake provider (the user's project)."""
    shutil.copy2(AGENT, tmp_path / AGENT.name)
    shutil.copy2(FAKE, tmp_path / FAKE.name)
    return tmp_path


@pytest.fixture
def cli(work: Path) -> Callable[..., Done]:
    """``cli("replay", ..., env={...})``: the real stepfork executable, in ``work``."""

    def call(*args: str, env: dict[str, str] | None = None) -> Done:
        return run([stepfork_exe(), *args], work, env)

    return call


@pytest.fixture
def produce(work: Path) -> Callable[..., Path]:
    """``produce("genai", "spans.pb", env)``: run the agent once in production (real instrumentation,
    the OTel SDK's exporters) in a fresh interpreter; return the spans file."""

    def call(style: str, name: str, env: dict[str, str] | None = None) -> Path:
        done = run([sys.executable, AGENT.name, "produce", style, name], work, env)
        assert done.code == 0, done.text
        return work / name

    return call


@pytest.fixture
def sdk_spans(tmp_path: Path) -> Callable[..., Path]:
    """``sdk_spans(build, "x.json")``: run ``build(tracer)`` under a real TracerProvider and write its
    spans as an OTLP/JSON document (.json), JSON lines (.jsonl, the file exporter) or protobuf (.pb)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def call(build: Callable[[Any], None], name: str) -> Path:
        memory = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agent"}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        build(provider.get_tracer("tests"))
        provider.shutdown()
        spans = memory.get_finished_spans()
        target = tmp_path / name
        if name.endswith(".pb"):
            target.write_bytes(encode_spans(spans).SerializeToString())
        elif name.endswith(".jsonl"):
            from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter

            exporter = FileSpanExporter(target)
            exporter.export(spans)
            exporter.shutdown()
        else:
            import json

            from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json

            target.write_text(json.dumps(encode_json(spans).to_dict()))
        return target

    return call
