"""Calls an agentry server's OpenAI-compatible door with the official `openai` client and
prints what it saw as one JSON object: argv[1] is the server's base URL."""

import json
import sys

import openai

base = sys.argv[1]
client = openai.OpenAI(base_url=base + "/v1", api_key="not-checked-without-a-token")
seen = {"version": openai.__version__}

seen["models"] = sorted(m.id for m in client.models.list())

r = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hello"}])
seen["chat"] = {"text": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
                "total_tokens": r.usage.total_tokens, "id": r.id}

stream = client.chat.completions.create(
    model="echo",
    messages=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "echo: first"},
        {"role": "user", "content": "second"},
    ],
    stream=True,
    stream_options={"include_usage": True},
)
pieces, finish, usage = [], None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.total_tokens
    for choice in chunk.choices:
        if choice.delta.content:
            pieces.append(choice.delta.content)
        if choice.finish_reason:
            finish = choice.finish_reason
seen["chat_stream"] = {"pieces": pieces, "finish": finish, "usage": usage}

png = "data:image/png;base64,iVBORw0KGgo="
r = client.chat.completions.create(model="echo", messages=[{"role": "user", "content": [
    {"type": "text", "text": "what is this?"},
    {"type": "image_url", "image_url": {"url": png}},
]}])
seen["chat_image"] = r.choices[0].message.content
r = client.responses.create(model="echo", input=[{"role": "user", "content": [
    {"type": "input_text", "text": "and this?"},
    {"type": "input_image", "image_url": png, "detail": "auto"},
]}])
seen["responses_image"] = r.output_text

paused = client.chat.completions.create(model="ops", messages=[{"role": "user", "content": "restart"}])
seen["paused"] = paused.choices[0].message.content

first = client.responses.create(model="echo", input="one")
second = client.responses.create(model="echo", input="two", previous_response_id=first.id)
seen["responses"] = {"first": first.output_text, "second": second.output_text,
                     "status": second.status, "tokens": second.usage.total_tokens}

kinds, deltas = [], []
for event in client.responses.create(model="echo", input="streamed", stream=True):
    kinds.append(event.type)
    if event.type == "response.output_text.delta":
        deltas.append(event.delta)
seen["responses_stream"] = {"kinds": kinds, "deltas": deltas}

with client.responses.stream(model="echo", input="helper") as s:
    for _ in s:
        pass
    seen["responses_helper"] = s.get_final_response().output_text

try:
    client.chat.completions.create(model="nobody", messages=[{"role": "user", "content": "hi"}])
    seen["unknown_model"] = "no error"
except openai.NotFoundError as e:
    seen["unknown_model"] = e.body.get("message") if isinstance(e.body, dict) else str(e.body)

print(json.dumps(seen))
