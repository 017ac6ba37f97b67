"""The live dashboard in a real browser (headless Chromium driven by Playwright), while
a scripted scenario runs against `coord serve`'s HTTP API as three agents.

Checks that, without reloading the page: a new lock, a claimed task and an approval
request appear; that approving from the page unblocks the agent (its retried command
passes); that the person's messages, handoffs, memories (with usefulness) and spawned
agents show; that ending a session asks first and requeues its claim; that a change
without the CSRF token is refused; that the key never reaches
the page. Saves a screenshot of each main view (light and dark).

usage: dashboard_browser.py --url URL --key OPERATOR_KEY --chromium PATH --shots DIR
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright


def api(url, key, agent, method, path, body=None, agent_type="claude_code"):
    """One HTTP API call as `agent` (of `agent_type`) with the operator key."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("x-api-key", key)
    req.add_header("x-agent-id", agent)
    req.add_header("x-agent-type", agent_type)
    if data is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--chromium", required=True)
    p.add_argument("--shots", required=True)
    a = p.parse_args()
    os.makedirs(a.shots, exist_ok=True)
    url, key = a.url, a.key
    checks = []

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=a.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        expect.set_options(timeout=15000)

        # Sign in with the operator key.
        page.goto(url + "/")
        page.fill("input[name=key]", "not-a-key")
        page.click("button[type=submit]")
        expect(page.locator("p.error")).to_contain_text("does not open the dashboard")
        page.fill("input[name=key]", key)
        page.fill("input[name=name]", "ops-lead")
        page.click("button[type=submit]")
        page.wait_for_selector("body[data-refreshed]")
        expect(page.locator("#live")).to_have_text("live")
        checks.append("signed in")
        # Marks this page: a reload would lose it.
        page.evaluate("window.__same_page = true")

        # Agents register; they appear.
        for agent in ("alice", "bob", "lead"):
            st, r = api(url, key, agent, "POST", "/sessions/register", {"capabilities": ["rust"]})
            assert st == 200, r
        expect(page.locator("#panel-agents")).to_contain_text("alice")
        expect(page.locator("#panel-agents")).to_contain_text("bob")
        expect(page.locator("#panel-agents")).to_contain_text("claude-code-cli")
        checks.append("agents appeared")

        # A new lock appears.
        st, r = api(url, key, "alice", "POST", "/locks/acquire",
                    {"file_path": "src/payments/ledger.rs", "reason": "refactor"})
        assert st == 200 and r["success"], r
        expect(page.locator("#panel-locks")).to_contain_text("src/payments/ledger.rs")
        expect(page.locator("#panel-locks")).to_contain_text("alice")
        checks.append("lock appeared")

        # A long name is cut with an ellipsis; the whole name is its tooltip.
        long_path = "src/" + "very_long_directory_name/" * 4 + "module.rs"
        st, r = api(url, key, "alice", "POST", "/locks/acquire", {"file_path": long_path})
        assert st == 200 and r["success"], r
        cut = page.locator('#panel-locks td[title="%s"]' % long_path)
        expect(cut).to_be_visible()
        shown = cut.inner_text()
        assert shown.endswith("\u2026") and len(shown) < len(long_path) and long_path.startswith(shown[:-1]), shown
        checks.append("long names cut, whole in the tooltip")

        # A lock holder that never registered is listed among the agents.
        st, r = api(url, key, "ghost-holder", "POST", "/locks/acquire", {"file_path": "src/ghost.rs"})
        assert st == 200 and r["success"], r
        expect(page.locator("#panel-agents")).to_contain_text("ghost-holder")
        expect(page.locator("#panel-agents")).to_contain_text("unregistered")
        checks.append("unregistered lock holders listed as agents")

        # A claimed task appears on the board; its dependent waits in the graph.
        st, t1 = api(url, key, "lead", "POST", "/work/submit",
                     {"task_type": "refactor", "task_description": "Split the ledger module", "priority": 1})
        assert st == 200, t1
        st, t2 = api(url, key, "lead", "POST", "/work/submit",
                     {"task_type": "review", "task_description": "Review the ledger split",
                      "depends_on": [t1["task_id"]]})
        assert st == 200, t2
        st, t3 = api(url, key, "lead", "POST", "/work/submit",
                     {"task_type": "docs", "task_description": "Document the ledger API", "priority": 9})
        assert st == 200, t3
        st, claimed = api(url, key, "bob", "POST", "/work/claim", {})
        assert st == 200 and claimed.get("task_id") == t1["task_id"], claimed
        card = page.locator('[data-column=claimed] [data-task="%s"]' % t1["task_id"])
        expect(card).to_contain_text("claimed by bob")
        expect(page.locator('[data-column=blocked] [data-task="%s"]' % t2["task_id"])).to_be_visible()
        expect(page.locator('svg.graph rect[data-node="%s"]' % t2["task_id"])).to_have_count(1)
        checks.append("claimed task appeared")

        # A workflow appears with its nodes' states.
        st, wf = api(url, key, "conductor", "POST", "/workflows", {
            "name": "fix-and-review",
            "nodes": [{"id": "test", "task": "Run the tests"}, {"id": "review", "task": "Review the change"}],
            "edges": [{"from": "test", "to": "review"}],
        }, agent_type="strands_agent")
        assert st == 200 and wf.get("success"), wf
        expect(page.locator("#panel-workflows")).to_contain_text("fix-and-review")
        expect(page.locator("#panel-workflows .chip", has_text="test:")).to_have_count(1)
        expect(page.locator("#panel-workflows .chip", has_text="review:")).to_have_count(1)
        checks.append("workflow and its node states appeared")

        # An approval request appears; approving it from the page unblocks the agent.
        force = {"command": "git push --force origin main"}
        st, refused = api(url, key, "bob", "POST", "/guardrails/check", force)
        assert st == 409 and refused.get("approval_id"), refused
        approval = refused["approval_id"]
        row = page.locator('#panel-approvals button[data-approve="%s"]' % approval)
        expect(row).to_be_visible()
        expect(page.locator("#panel-approvals")).to_contain_text("git push --force origin main")
        expect(page.locator("#panel-violations")).to_contain_text("git_force")
        expect(page.locator("#panel-violations")).to_contain_text("git push --force origin main")
        checks.append("approval appeared")

        # The views, before deciding.
        page.screenshot(path=os.path.join(a.shots, "dashboard.png"), full_page=True)
        page.locator("#panel-board").screenshot(path=os.path.join(a.shots, "queue.png"))
        page.locator("#panel-graph").screenshot(path=os.path.join(a.shots, "graph.png"))
        page.locator("#panel-approvals").screenshot(path=os.path.join(a.shots, "approvals.png"))
        page.locator("#panel-audit").screenshot(path=os.path.join(a.shots, "audit.png"))
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=os.path.join(a.shots, "dashboard-dark.png"), full_page=True)
        page.emulate_media(color_scheme="light")

        # A change without the CSRF token is refused, even from the page itself.
        forged = page.evaluate(
            """async (id) => {
                const r = await fetch('/ui/approvals/decide', {method: 'POST',
                    headers: {'content-type': 'application/json'},
                    body: JSON.stringify({approval_id: id, decision: 'approve'})});
                return r.status;
            }""",
            approval,
        )
        assert forged == 403, forged
        checks.append("no CSRF token, no change")

        row.click()
        expect(row).to_have_count(0)
        st, passed = api(url, key, "bob", "POST", "/guardrails/check", force)
        assert st == 200 and passed.get("approval_used") == approval, (st, passed)
        checks.append("approved from the page: the agent's command passes once")
        st, again = api(url, key, "bob", "POST", "/guardrails/check", force)
        assert st == 409, again

        # The rest of the coordination state: the person's own messages (threads,
        # unread), handoffs, memories with their usefulness, spawned agents.
        st, r = api(url, key, "alice", "POST", "/messages",
                    {"to": "ops-lead", "subject": "May I rename the ledger table?", "body": "It touches the migration."})
        assert st == 200 and r["success"], r
        expect(page.locator("#panel-inbox")).to_contain_text("May I rename the ledger table?")
        expect(page.locator("#panel-inbox h2")).to_have_text("Your messages (1 unread)")
        st, r = api(url, key, "alice", "POST", "/handoffs",
                    {"summary": "Ledger split half done", "in_progress": ["move the writers"]})
        assert st == 200 and r["success"], r
        expect(page.locator("#panel-handoffs")).to_contain_text("Ledger split half done")
        expect(page.locator("#panel-handoffs")).to_contain_text("move the writers")
        st, m = api(url, key, "alice", "POST", "/memory",
                    {"event_type": "fix", "summary": "Ledger tests need the fixture database", "outcome": "positive"})
        assert st == 200 and m["success"], m
        st, r = api(url, key, "bob", "POST", "/memory/feedback", {"memory_id": m["memory_id"], "useful": True})
        assert st == 200, r
        memory = page.locator("#panel-memories tr", has_text="Ledger tests need the fixture database")
        expect(memory).to_have_count(1)
        expect(memory).to_contain_text("100% (1)")
        expect(page.locator("#panel-spawned")).to_contain_text("no agent was spawned")
        checks.append("messages, handoffs, memories and spawned agents shown")

        # Ending a session from the page asks first; dismissed, nothing changes.
        end = page.locator('#panel-agents button[data-end-session="bob"]')
        page.once("dialog", lambda d: d.dismiss())
        end.click()
        page.wait_for_timeout(500)
        st, rows = api(url, key, "auditor", "GET", "/audit?operation=cleanup_dead_agents")
        assert st == 200 and rows["entries"] == [], rows
        expect(page.locator('[data-column=claimed] [data-task="%s"]' % t1["task_id"])).to_be_visible()
        page.once("dialog", lambda d: d.accept())
        end.click()
        expect(end).to_have_count(0)
        expect(page.locator('[data-column=ready] [data-task="%s"]' % t1["task_id"])).to_be_visible()
        st, rows = api(url, key, "auditor", "GET", "/audit?operation=cleanup_dead_agents")
        assert st == 200 and [e["agent_id"] for e in rows["entries"]] == ["ops-lead"], rows
        checks.append("a session ended from the page, after a confirmation, audited as the person")

        # A person's overrides, each confirmed: release another agent's lock, put a claimed
        # task back in the queue, cancel a task.
        page.once("dialog", lambda d: d.accept())
        page.locator('#panel-locks button[data-break="src/ghost.rs"]').click()
        expect(page.locator("#panel-locks")).not_to_contain_text("src/ghost.rs")
        st, claimed = api(url, key, "alice", "POST", "/work/claim", {})
        assert st == 200 and claimed.get("task_id") == t1["task_id"], claimed
        requeue = page.locator('[data-column=claimed] button[data-requeue="%s"]' % t1["task_id"])
        page.once("dialog", lambda d: d.accept())
        requeue.click()
        expect(page.locator('[data-column=ready] [data-task="%s"]' % t1["task_id"])).to_be_visible()
        st, r = api(url, key, "alice", "POST", "/work/complete", {"task_id": t1["task_id"], "success": True})
        assert st == 409, r
        page.once("dialog", lambda d: d.accept())
        page.locator('button[data-cancel="%s"]' % t3["task_id"]).click()
        expect(page.locator('[data-column=failed] [data-task="%s"]' % t3["task_id"])).to_be_visible()
        for op in ("break_lock", "requeue_task", "cancel_task"):
            st, rows = api(url, key, "auditor", "GET", "/audit?operation=" + op)
            assert st == 200 and [(e["agent_id"], e["success"]) for e in rows["entries"]] == [("ops-lead", True)], (op, rows)
        checks.append("a lock released, a task requeued and one cancelled from the page, audited as the person")

        # The audit trail, filtered as the CLI filters it.
        page.fill("#audit-filters input[name=operation]", "decide_approval")
        page.click("#audit-filters button[type=submit]")
        expect(page.locator("#panel-audit tbody tr")).to_have_count(1)
        expect(page.locator("#panel-audit")).to_contain_text("ops-lead")
        page.fill("#audit-filters input[name=operation]", "")
        page.fill("#audit-filters input[name=path]", "src/payments/ledger.rs")
        page.select_option("#audit-filters select[name=since]", "1h")
        page.click("#audit-filters button[type=submit]")
        expect(page.locator("#panel-audit tbody tr")).to_have_count(1)
        expect(page.locator("#panel-audit")).to_contain_text("acquire_lock")
        checks.append("audit filtered")

        assert page.evaluate("window.__same_page === true"), "the page reloaded"
        heard = int(page.evaluate("document.body.dataset.changes || '0'"))
        assert heard >= 8, "the page heard of the changes by server-sent events: %d" % heard
        html = page.content()
        assert key not in html, "the operator key reached the page"
        assert page.evaluate("document.cookie") == "", "the session cookie is readable by scripts"
        checks.append("never reloaded; no key or readable cookie in the page")
        browser.close()

    print(json.dumps({"ok": True, "checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
