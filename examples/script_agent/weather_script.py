"""A weather agent script with no Stepfork import: recorded and replayed from the command line.

It talks to the OpenAI API with the ordinary SDK (``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` from the
environment; ``fake_server.py`` serves a local fake on 127.0.0.1 for the example and CI). Both need the
OpenAI SDK (``pip install "openai>=3.50,<4"``; Stepfork does not install it)::

    python fake_server.py 8765 &
    export OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=sk-local
    stepfork record -o weather.sftrace -- python weather_script.py Paris
    stepfork replay weather.sftrace -- python weather_script.py Paris

The script asks the model, runs the ``get_weather`` tool call locally, streams the final answer and
prints it as JSON. Exit status 3 when the model calls no tool.
"""

from __future__ import annotations

import json
import sys

import openai

MODEL = "gpt-4o-mini"
SYSTEM = "You are a concise weather assistant."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> dict[str, object]:
    return {"city": city, "celsius": 21, "sky": "sunny"}


def main(city: str) -> None:
    client = openai.OpenAI(max_retries=0)
    messages: list[dict[str, object]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Should I take an umbrella in {city}?"},
    ]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, temperature=0)
    calls = first.choices[0].message.tool_calls
    if not calls:
        sys.exit(3)
    weather = get_weather(**json.loads(calls[0].function.arguments))
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": calls[0].id, "content": json.dumps(weather)},
    ]
    stream = client.chat.completions.create(model=MODEL, messages=messages, stream=True)
    answer = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    print(json.dumps({"city": city, "answer": answer}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Paris")
