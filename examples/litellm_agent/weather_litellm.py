"""A weather assistant on LiteLLM: ``completion``, ``acompletion``, streaming, and the LiteLLM proxy.

Written as LiteLLM's docs write it (docs.litellm.ai: "Getting started", "Streaming + Async", "LiteLLM Proxy
- as a gateway"); there is no Stepfork line in it. The model is an OpenAI-compatible API at
``OPENAI_BASE_URL`` (the tests start a local one); ``proxy`` sends the same question through a LiteLLM
proxy at ``LITELLM_PROXY_URL`` (``litellm_proxy/...`` models). Record and replay it with no change:

    stepfork record -o run.sftrace -- python weather_litellm.py sync Paris
    stepfork replay run.sftrace -- python weather_litellm.py sync Paris

``sync`` calls ``completion`` twice (a question, then a follow-up with the first answer), ``async`` does the
same with ``acompletion``, ``stream`` streams the follow-up (``stream_options={"include_usage": True}`` asks
for the token counts, which a stream carries only when asked) and ``proxy`` asks through the proxy.
"""

import asyncio
import os
import sys

import litellm

MODEL = "openai/gpt-4o-mini"


def messages(question):
    return [{"role": "user", "content": question}]


def ask_sync(city):
    first = litellm.completion(model=MODEL, messages=messages(f"What is the weather in {city}?"))
    answer = first.choices[0].message.content
    second = litellm.completion(model=MODEL, messages=messages(f"Say it shorter: {answer} In {city}?"))
    return second.choices[0].message.content


async def ask_async(city):
    first = await litellm.acompletion(model=MODEL, messages=messages(f"What is the weather in {city}?"))
    answer = first.choices[0].message.content
    second = await litellm.acompletion(model=MODEL, messages=messages(f"Say it shorter: {answer} In {city}?"))
    return second.choices[0].message.content


def ask_streaming(city):
    first = litellm.completion(model=MODEL, messages=messages(f"What is the weather in {city}?"))
    answer = first.choices[0].message.content
    response = litellm.completion(
        model=MODEL,
        messages=messages(f"Say it shorter: {answer} In {city}?"),
        stream=True,
        stream_options={"include_usage": True},
    )
    parts = [part.choices[0].delta.content or "" for part in response if part.choices]
    return "".join(parts)


def ask_proxy(city):
    response = litellm.completion(
        model="litellm_proxy/gpt-4o-mini",
        api_base=os.environ["LITELLM_PROXY_URL"],
        api_key=os.environ.get("LITELLM_PROXY_API_KEY", "sk-1234"),
        messages=messages(f"What is the weather in {city}?"),
    )
    return response.choices[0].message.content


def main(how="sync", city="Paris"):
    if how == "async":
        return asyncio.run(ask_async(city))
    return {"sync": ask_sync, "stream": ask_streaming, "proxy": ask_proxy}[how](city)


if __name__ == "__main__":
    print(main(*sys.argv[1:3]))
