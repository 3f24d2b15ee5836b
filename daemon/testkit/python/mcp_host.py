"""An MCP host for crabtalk's tests, on the official MCP Python SDK.

It starts `BRIDGE mcp` (crabtalkd) over stdio with the SDK's own client,
plays one scenario, and prints what it saw as one JSON object on the last
line of stdout. The Rust test that runs it asserts on that JSON.

    python3 mcp_host.py SCENARIO --bridge PATH --home DIR [options]

Scenarios:

  ask        initialize, tools/list, then ask_agent --message with a
             progress callback; reports the server, the tools, every
             progress notification and the result, each with the time it
             arrived
  cancel     ask_agent --message, wait for a progress notification that
             contains --until, cancel the call (the SDK sends
             notifications/cancelled), then ask_agent --then on the same
             conversation and report its result
  call       tools/list until it lists --tool (a component's tools come a
             moment after the handshake), then call it with the JSON
             --arguments

Needs the `mcp` package (`python3 -m pip install mcp`).
"""

import argparse
import json
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# How long any one wait may take; the Rust side bounds the whole run too.
PATIENCE = 30


def dump(model):
    """A pydantic model of the SDK as plain JSON."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def now():
    return time.monotonic()


async def open_session(args, stack):
    params = StdioServerParameters(
        command=args.bridge,
        args=["mcp"],
        env={"CRABTALK_HOME": args.home},
    )
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(read, write))
    init = await session.initialize()
    return session, init


def result_of(result):
    body = dump(result)
    return {
        "isError": bool(body.get("isError")),
        "text": "\n".join(
            block.get("text", "") for block in body.get("content", []) if block.get("type") == "text"
        ),
        "structured": body.get("structuredContent"),
        "at": now(),
    }


async def ask(args, session, report):
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message, "at": now()})

    tools = await session.list_tools()
    report["tools"] = [dump(tool) for tool in tools.tools]
    with anyio.fail_after(PATIENCE):
        result = await session.call_tool(
            "ask_agent", {"message": args.message}, progress_callback=on_progress
        )
    report["result"] = result_of(result)
    report["progress"] = progress


async def cancel(args, session, report):
    progress = []
    seen = anyio.Event()

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message, "at": now()})
        if message and args.until in message:
            seen.set()

    finished = {}

    async def first_call():
        result = await session.call_tool(
            "ask_agent", {"message": args.message}, progress_callback=on_progress
        )
        finished["result"] = result_of(result)

    async with anyio.create_task_group() as group:
        group.start_soon(first_call)
        with anyio.fail_after(PATIENCE):
            await seen.wait()
        report["pending_when_progress_arrived"] = "result" not in finished
        # Abandoning the call is how the SDK cancels it: it sends
        # notifications/cancelled for the request.
        group.cancel_scope.cancel()
    report["first_result"] = finished.get("result")
    report["progress"] = progress
    with anyio.fail_after(PATIENCE):
        second = await session.call_tool("ask_agent", {"message": args.then})
    report["second"] = result_of(second)


async def call(args, session, report):
    # A component's tools appear once the bridge has connected to it,
    # which may be a moment after the handshake: list until it is there.
    with anyio.fail_after(PATIENCE):
        while True:
            tools = await session.list_tools()
            if any(tool.name == args.tool for tool in tools.tools):
                break
            await anyio.sleep(0.05)
    report["tools"] = [dump(tool) for tool in tools.tools]
    with anyio.fail_after(PATIENCE):
        result = await session.call_tool(args.tool, json.loads(args.arguments))
    report["result"] = result_of(result)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["ask", "cancel", "call"])
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--message", default="hello")
    parser.add_argument("--until", default="")
    parser.add_argument("--then", default="and now?")
    parser.add_argument("--tool", default="list_agents")
    parser.add_argument("--arguments", default="{}")
    args = parser.parse_args()

    from contextlib import AsyncExitStack

    report = {}
    async with AsyncExitStack() as stack:
        # Not under fail_after: the contexts entered here outlive any scope
        # opened around them. The Rust side bounds the whole run.
        session, init = await open_session(args, stack)
        init = dump(init)
        report["server"] = init.get("serverInfo")
        report["protocol"] = init.get("protocolVersion")
        report["capabilities"] = init.get("capabilities")
        scenario = {"ask": ask, "cancel": cancel, "call": call}[args.scenario]
        await scenario(args, session, report)
    try:
        import importlib.metadata

        report["sdk"] = importlib.metadata.version("mcp")
    except Exception:  # noqa: BLE001 - the version is for the record only
        report["sdk"] = "unknown"
    print(json.dumps(report))


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as err:  # noqa: BLE001 - reported to the Rust test
        print(f"mcp_host.py: {type(err).__name__}: {err}", file=sys.stderr)
        raise
