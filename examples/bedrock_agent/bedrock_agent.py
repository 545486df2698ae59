"""A weather agent on Amazon Bedrock through boto3, written as the AWS docs write it, with no Stepfork import.

``boto3.client("bedrock-runtime")`` takes its credentials and region from the environment
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``) and its endpoint from
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` (here the local Bedrock API of ``bedrock_server.py`` on 127.0.0.1;
unset, the real one). The agent asks the model with the Converse API and a ``get_weather`` tool, runs the
tool the model asks for and sends its result back (two ``converse`` calls), then streams a forecast
(``converse_stream``, an AWS event stream) and prints both as JSON::

    python bedrock_server.py 8767 &
    export AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:8767 AWS_DEFAULT_REGION=us-east-1
    export AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=local-secret
    stepfork record -o weather.sftrace -- python bedrock_agent.py Paris
    stepfork replay weather.sftrace -- python bedrock_agent.py Paris
"""

from __future__ import annotations

import json
import sys

import boto3

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Get the current weather in a city.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"city": {"type": "string", "description": "The city name."}},
                        "required": ["city"],
                    }
                },
            }
        }
    ]
}


def get_weather(city: str) -> dict[str, object]:
    return {"city": city, "temperature_c": 21, "conditions": "sunny"}


def ask(client, city: str) -> str:
    messages = [{"role": "user", "content": [{"text": f"What is the weather like in {city}?"}]}]
    response = client.converse(modelId=MODEL_ID, messages=messages, toolConfig=TOOL_CONFIG)
    output_message = response["output"]["message"]
    messages.append(output_message)
    if response["stopReason"] == "tool_use":
        results = []
        for content in output_message["content"]:
            if "toolUse" in content:
                tool = content["toolUse"]
                weather = get_weather(**tool["input"])
                results.append(
                    {"toolResult": {"toolUseId": tool["toolUseId"], "content": [{"json": weather}]}}
                )
        messages.append({"role": "user", "content": results})
        response = client.converse(modelId=MODEL_ID, messages=messages, toolConfig=TOOL_CONFIG)
    return "".join(block.get("text", "") for block in response["output"]["message"]["content"])


def forecast(client, city: str) -> str:
    response = client.converse_stream(
        modelId=MODEL_ID,
        messages=[
            {"role": "user", "content": [{"text": f"Write a one-line forecast for tomorrow in {city}."}]}
        ],
        inferenceConfig={"maxTokens": 256, "temperature": 0.5},
    )
    text = ""
    for event in response["stream"]:
        if "contentBlockDelta" in event:
            text += event["contentBlockDelta"]["delta"]["text"]
    return text


def main(city: str) -> None:
    client = boto3.client("bedrock-runtime")
    print(json.dumps({"city": city, "answer": ask(client, city), "forecast": forecast(client, city)}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "Paris")
