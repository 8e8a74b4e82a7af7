"""Calls an agentry server's A2A door with the official a2a-sdk client (JSON-RPC) and prints what
it saw as one JSON object: argv[1] is the server's base URL, $A2A_PROTOCOL the protocol
version to speak, 1.0 (the default) or 0.3 (the SDK's own 0.3 transport, chosen by keeping only the card's
0.3 interface)."""

import asyncio
import json
import os
import sys

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from google.protobuf import json_format

base = sys.argv[1]
version = os.environ.get("A2A_PROTOCOL", "1.0")
methods = set()


async def record(request):
    """Notes the JSON-RPC method of each call the client makes."""
    if request.method == "POST":
        try:
            methods.add(json.loads(request.content)["method"])
        except (ValueError, KeyError):
            pass


async def client(config, http, url):
    """A client of the agent at `url`, speaking `version`."""
    card = await A2ACardResolver(http, url).get_agent_card()
    kept = [i for i in card.supported_interfaces if i.protocol_version.startswith(version)]
    assert kept, f"the card has no {version} interface: {card.supported_interfaces}"
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return ClientFactory(config).create(card)


def text_message(text, context_id=None, task_id=None, n=[0]):
    n[0] += 1
    m = Message(message_id=f"m{n[0]}", role=Role.ROLE_USER, parts=[Part(text=text)])
    if context_id:
        m.context_id = context_id
    if task_id:
        m.task_id = task_id
    return SendMessageRequest(message=m)


async def last_task(client, request):
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    return task


def answer(task):
    return "".join(p.text for a in task.artifacts for p in a.parts)


async def main():
    seen = {}
    async with httpx.AsyncClient(timeout=30, event_hooks={"request": [record]}) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        echo = await client(config, http, base + "/a2a/echo")
        card = echo._card if hasattr(echo, "_card") else None
        seen["card"] = json_format.MessageToDict(card) if card is not None else None

        first = await last_task(echo, text_message("hello"))
        second = await last_task(echo, text_message("again", context_id=first.context_id))
        seen["send"] = {
            "state": TaskState.Name(first.status.state),
            "answer": answer(first),
            "second": answer(second),
            "same_context": first.context_id == second.context_id,
            "history": [json_format.MessageToDict(m)["parts"][0]["text"] for m in second.history],
        }
        # An image part beside the text: the agent gets it as an image, named.
        dot = bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
        )
        look = Message(message_id="m-img", role=Role.ROLE_USER, parts=[
            Part(raw=dot, media_type="image/png", filename="dot.png"), Part(text="what is this?")])
        seen["image"] = answer(await last_task(echo, SendMessageRequest(message=look)))
        got = await echo.get_task(GetTaskRequest(id=first.id))
        seen["get"] = {"state": TaskState.Name(got.status.state), "answer": answer(got)}

        # Approvals: input-required, answered by a message to the task.
        ops = await client(config, http, base + "/a2a/ops")
        paused = await last_task(ops, text_message("restart the api"))
        seen["paused"] = {
            "state": TaskState.Name(paused.status.state),
            "message": paused.status.message.parts[0].text,
        }
        done = await last_task(ops, text_message("approve", task_id=paused.id))
        seen["approved"] = {"state": TaskState.Name(done.status.state), "answer": answer(done), "same_task": done.id == paused.id}

        # Streaming.
        streaming = await client(ClientConfig(streaming=True, httpx_client=http), http, base + "/a2a/slow")
        kinds, chunks, states = [], [], []
        async for event in streaming.send_message(text_message("go")):
            kind = event.WhichOneof("payload")
            kinds.append(kind)
            if kind == "artifact_update":
                chunks.extend(p.text for p in event.artifact_update.artifact.parts if p.text)
            if kind == "status_update":
                states.append(TaskState.Name(event.status_update.status.state))
        seen["stream"] = {"kinds": kinds, "chunks": chunks, "states": states}

        # Cancel a task under way.
        running = await last_task(
            ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(streaming._card)
            if hasattr(streaming, "_card") else streaming,
            SendMessageRequest(message=text_message("go").message, configuration={"return_immediately": True}),
        )
        cancelled = await streaming.cancel_task(CancelTaskRequest(id=running.id))
        seen["cancel"] = TaskState.Name(cancelled.status.state)

        try:
            await echo.get_task(GetTaskRequest(id="no-such-task"))
            seen["missing"] = "no error"
        except Exception as e:  # the SDK's TaskNotFoundError
            seen["missing"] = type(e).__name__
    seen["methods"] = sorted(methods)
    print(json.dumps(seen))


asyncio.run(main())
