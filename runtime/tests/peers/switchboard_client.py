"""An MCP agent in an editor, as the Switchboard tests play it: the official MCP Python SDK's
SSE client. Prints one JSON object on stdout.

    switchboard_client.py URL TOKEN header|query|no-token

`header` and `query` authenticate with the token (`Authorization: Bearer`, or `?token=` in the
URL), register as the chat agent `editor`, ask `helper` on the floor what 2+2 is and read the
answer from the inbox (`check_inbox`, bounded to 20 s). `no-token` connects without the token
and reports the HTTP status it got.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.sse import sse_client


def status_of(exc):
    """The HTTP status inside an exception (or an exception group), if any."""
    seen = [exc]
    while seen:
        e = seen.pop()
        response = getattr(e, "response", None)
        if response is not None and getattr(response, "status_code", None) is not None:
            return response.status_code
        seen.extend(getattr(e, "exceptions", []) or [])
        if e.__cause__ is not None:
            seen.append(e.__cause__)
        if e.__context__ is not None:
            seen.append(e.__context__)
    return None


def text(result):
    return json.loads(result.content[0].text)


def failed(result):
    """Whether a tool call came back as an error (`is_error` in the SDK 2.x, `isError` in 1.x)."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def converse(url, headers):
    async with sse_client(url, headers=headers) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            registered = await session.call_tool(
                "register_chat_agent",
                {"name": "editor", "interface": "vscode", "capabilities": ["code"]},
            )
            if failed(registered):
                return {"error": registered.content[0].text}
            sent = await session.call_tool(
                "send_message",
                {"recipient": "helper", "action": "delegate_task", "payload": "what is 2+2?"},
            )
            if failed(sent):
                return {"error": sent.content[0].text}
            sent_id = text(sent)["id"]
            reply = None
            deadline = time.monotonic() + 20
            while reply is None and time.monotonic() < deadline:
                inbox = text(await session.call_tool("check_inbox", {"limit": 10}))
                for m in inbox["messages"]:
                    if m.get("replyTo") == sent_id:
                        reply = m
                if reply is None:
                    await asyncio.sleep(0.05)
            forged = await session.call_tool(
                "send_message",
                {"recipient": "helper", "action": "status_update", "payload": "x", "sender": "helper"},
            )
            return {
                "tools": sorted(t.name for t in tools.tools),
                "registered": text(registered),
                "sent": sent_id,
                "reply": reply,
                "forged": {"isError": failed(forged), "text": forged.content[0].text},
            }


async def main():
    url, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "no-token":
        try:
            async with sse_client(url) as _streams:
                print(json.dumps({"connected": True}))
        except BaseException as e:  # noqa: BLE001 - any failure is the answer
            print(json.dumps({"status": status_of(e)}))
        return
    if mode == "header":
        result = await converse(url, {"Authorization": f"Bearer {token}"})
    else:
        result = await converse(f"{url}?token={token}", None)
    print(json.dumps(result))


asyncio.run(main())
