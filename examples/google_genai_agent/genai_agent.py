"""A weather agent on the Google Gen AI SDK, written as Google's docs write it, with no Stepfork import.

``genai.Client()`` reads ``GEMINI_API_KEY`` (and ``GOOGLE_GEMINI_BASE_URL``, here the local Gemini API of
``gemini_server.py`` on 127.0.0.1; unset, the real API). The agent asks ``gemini-2.5-flash`` about the
weather in a chat with ``get_weather`` as a Python tool, which the SDK calls itself (automatic function
calling: two ``generateContent`` requests, the function's result sent back in between), then streams a
forecast (``generate_content_stream``, Server-Sent Events) and prints both as JSON::

    python gemini_server.py 8766 &
    export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8766 GEMINI_API_KEY=local-key
    stepfork record -o weather.sftrace -- python genai_agent.py Paris
    stepfork replay weather.sftrace -- python genai_agent.py Paris
"""

from __future__ import annotations

import json
import sys

from google import genai
from google.genai import types

MODEL = "gemini-2.5-flash"


def get_weather(city: str) -> dict[str, object]:
    """Returns the current weather in a city.

    Args:
        city: The city name, for example Paris.
    """
    return {"city": city, "temperature_c": 21, "conditions": "sunny"}


def main(city: str) -> None:
    client = genai.Client()
    chat = client.chats.create(
        model=MODEL, config=types.GenerateContentConfig(tools=[get_weather], temperature=0)
    )
    response = chat.send_message(f"What is the weather like in {city}?")
    forecast = ""
    for chunk in client.models.generate_content_stream(
        model=MODEL, contents=f"Write a one-line forecast for tomorrow in {city}."
    ):
        forecast += chunk.text or ""
    print(json.dumps({"city": city, "answer": response.text, "forecast": forecast}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Paris")
