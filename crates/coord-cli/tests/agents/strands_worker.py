"""A Strands agent (strands-agents, its own venv) that claims and completes a task
through coord's MCP server over stdio, its model the scripted one (Anthropic API).

    python strands_worker.py --coord PATH --cwd REPO --model-url http://127.0.0.1:PORT

Prints {"ok": true, "answer": ...} when the agent finished.
"""
import argparse
import json

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from strands import Agent
from strands.models.anthropic import AnthropicModel
from strands.tools.mcp import MCPClient


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--coord", required=True)
    p.add_argument("--cwd", required=True)
    p.add_argument("--model-url", required=True)
    args = p.parse_args()
    params = StdioServerParameters(command=args.coord, args=["mcp"], cwd=args.cwd,
                                   env={"COORD_AGENT_ID": "strands-worker", "COORD_AGENT_TYPE": "strands_agent",
                                        "COORD_RELEASE_GRACE_SECONDS": "0"})
    coord = MCPClient(lambda: stdio_client(params), startup_timeout=30)
    model = AnthropicModel(client_args={"api_key": "dummy", "base_url": args.model_url, "max_retries": 0},
                           model_id="fake-claude", max_tokens=1024)
    agent = Agent(model=model, tools=[coord], callback_handler=None,
                  system_prompt="You are a worker: claim one task from the coordinator and complete it.")
    try:
        result = agent("SCRIPT:S_work Claim one task and complete it.")
    finally:
        agent.cleanup()
    print(json.dumps({"ok": True, "answer": str(result).strip()}))


if __name__ == "__main__":
    main()
