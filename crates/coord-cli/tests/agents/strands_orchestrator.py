"""A Strands orchestrator (strands-agents, its own venv) that creates graph workflows and
reads their results through coord's MCP server over stdio, its model the scripted one
(Anthropic API). One run is one conversation: the script named picks its tool calls.

    python strands_orchestrator.py --coord PATH --cwd REPO --model-url http://127.0.0.1:PORT \
        --script NAME --prompt TEXT

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
    p.add_argument("--script", required=True, help="the scripted model's script (SCRIPT:<name>)")
    p.add_argument("--prompt", required=True, help="what the orchestrator is asked")
    args = p.parse_args()
    # The type strands_agent maps to the built-in strands-orchestrator profile: the one
    # with manage_swarm, which create_workflow needs.
    params = StdioServerParameters(command=args.coord, args=["mcp"], cwd=args.cwd,
                                   env={"COORD_AGENT_ID": "strands-orchestrator", "COORD_AGENT_TYPE": "strands_agent",
                                        "COORD_RELEASE_GRACE_SECONDS": "0"})
    coord = MCPClient(lambda: stdio_client(params), startup_timeout=30)
    model = AnthropicModel(client_args={"api_key": "dummy", "base_url": args.model_url, "max_retries": 0},
                           model_id="fake-claude", max_tokens=1024)
    agent = Agent(model=model, tools=[coord], callback_handler=None,
                  system_prompt="You are an orchestrator: you plan work as a graph workflow in the coordinator "
                                "(create_workflow), leave the nodes to workers, and report the workflow's "
                                "aggregated results (get_workflow_status). You do not do the nodes' work yourself.")
    try:
        result = agent(f"SCRIPT:{args.script} {args.prompt}")
    finally:
        agent.cleanup()
    print(json.dumps({"ok": True, "answer": str(result).strip()}))


if __name__ == "__main__":
    main()
