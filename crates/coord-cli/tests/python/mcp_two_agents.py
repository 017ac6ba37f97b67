"""Two agents coordinating through coord's MCP server, driven by the official MCP
Python SDK (a client nobody on this project wrote).

    python mcp_two_agents.py stdio --coord /path/to/coord --cwd /scratch/repo
    python mcp_two_agents.py http --url http://127.0.0.1:PORT/mcp

Exits 0 and prints a JSON summary when every step behaved; raises otherwise.
"""

import argparse
import asyncio
import json

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REQUIRED_TOOLS = {
    "acquire_lock", "release_lock", "check_locks", "get_work", "complete_work", "submit_work", "get_task",
    "write_handoff", "read_handoff", "discover_agents", "register_session", "heartbeat",
}
REQUIRED_RESOURCES = {"locks://current", "work://pending", "handoffs://recent"}


async def call(client, tool, **args):
    result = await client.call_tool(tool, args)
    assert not result.is_error, f"{tool}: tool error {result.content}"
    data = result.structured_content
    assert isinstance(data, dict), f"{tool}: no structured result: {result}"
    # The text content carries the same JSON for clients that only read text.
    assert json.loads(result.content[0].text) == data, f"{tool}: text and structured content differ"
    return data


async def scenario(a, b):
    tools = {t.name for t in (await a.list_tools()).tools}
    assert REQUIRED_TOOLS <= tools, f"missing tools: {REQUIRED_TOOLS - tools}"
    # Listing is not permission, nor its absence a refusal: a tool of another toolset
    # runs when called by name.
    assert "cleanup_dead_agents" not in tools, tools
    swept = await call(a, "cleanup_dead_agents", stale_threshold_minutes=60)
    assert swept["success"] is True, swept
    resources = {str(r.uri) for r in (await a.list_resources()).resources}
    assert REQUIRED_RESOURCES <= resources, f"missing resources: {REQUIRED_RESOURCES - resources}"

    # A locks, B is blocked, A releases, B acquires.
    got = await call(a, "acquire_lock", file_path="src/shared.py", reason="python SDK test")
    assert got["success"] is True and got["action"] == "acquired", got
    blocked = await call(b, "acquire_lock", file_path="src/shared.py")
    assert blocked["success"] is False and blocked["action"] == "blocked", blocked
    holder = blocked["locked_by"]
    released = await call(a, "release_lock", file_path="src/shared.py")
    assert released == {"success": True, "released": True, "file_path": "src/shared.py"}, released
    taken = await call(b, "acquire_lock", file_path="src/shared.py")
    assert taken["action"] == "acquired" and taken["fencing_token"] > got["fencing_token"], taken

    # submit -> claim -> complete, with a dependency.
    build = await call(a, "submit_work", task_type="build", task_description="build it", priority=5)
    deploy = await call(a, "submit_work", task_type="deploy", task_description="ship it", priority=1,
                        depends_on=[build["task_id"]])
    claimed = await call(b, "get_work")
    assert claimed["task_id"] == build["task_id"], "the dependent task must wait"
    assert (await call(a, "get_work")) == {"success": False, "reason": "no_tasks_available"}
    done = await call(b, "complete_work", task_id=build["task_id"], success=True, result={"artifact": "app"})
    assert done["status"] == "completed", done
    next_task = await call(a, "get_work", task_types=["deploy"])
    assert next_task["task_id"] == deploy["task_id"], next_task
    await call(a, "complete_work", task_id=deploy["task_id"], success=True)

    lock_view = json.loads((await a.read_resource("locks://current")).contents[0].text)
    assert [l["file_path"] for l in lock_view["locks"]] == ["src/shared.py"], lock_view
    await call(a, "write_handoff", summary="python scenario done", next_steps=["nothing"])
    handoffs = json.loads((await b.read_resource("handoffs://recent")).contents[0].text)
    assert handoffs["handoffs"][0]["summary"] == "python scenario done", handoffs

    bad = await a.call_tool("acquire_lock", {"ttl_minutes": "soon"})
    assert bad.is_error and "file_path" in bad.content[0].text or "ttl_minutes" in bad.content[0].text, bad
    return {"tools": len(tools), "first_holder_seen_by_b": holder}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--coord")
    parser.add_argument("--cwd")
    parser.add_argument("--url")
    parser.add_argument("--bound-key", help="HTTP: an API key bound to py-agent-a")
    parser.add_argument("--operator-key", help="HTTP: an operator API key (used by py-agent-b)")
    parser.add_argument("--db", help="database URL for the stdio servers (default: the repo's SQLite)")
    args = parser.parse_args()
    if args.transport == "stdio":
        def server(agent):
            db = ["--db", args.db] if args.db else []
            return StdioServerParameters(command=args.coord, args=[*db, "mcp"], cwd=args.cwd,
                                         env={"COORD_AGENT_ID": agent, "COORD_AGENT_TYPE": "python_sdk",
                                              "COORD_RELEASE_GRACE_SECONDS": "0"})
        async with Client(server("py-agent-a")) as a, Client(server("py-agent-b")) as b:
            summary = await scenario(a, b)
    else:
        def server(agent):
            # Agent A authenticates with a key bound to its identity and names none; agent B
            # uses an operator key and names itself in headers.
            if agent == "py-agent-a":
                headers = {"X-API-Key": args.bound_key}
            else:
                headers = {"Authorization": f"Bearer {args.operator_key}",
                           "X-Agent-Id": agent, "X-Agent-Type": "python_sdk"}
            http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
            return streamable_http_client(args.url, http_client=http)
        async with Client(server("py-agent-a")) as a, Client(server("py-agent-b")) as b:
            summary = await scenario(a, b)
    assert summary["first_holder_seen_by_b"] == "py-agent-a", summary
    print(json.dumps({"ok": True, "transport": args.transport, **summary}))


if __name__ == "__main__":
    asyncio.run(main())
