// The dashboard's one script: draws /ui/snapshot, draws again when /ui/events says
// something changed (and every 15 s, for changes made by other processes on the same
// database), counts lock expiries down, and sends the person's changes (approve, deny,
// end a session, each confirmed where it cannot be undone) with the CSRF token.
// Every value is set as text (never as markup).
"use strict";

const csrf = document.querySelector('meta[name="csrf"]').content;
let filters = new URLSearchParams();
let pending = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function chip(status) {
  return el("span", { class: "chip s-" + String(status) }, status);
}

function ago(iso) {
  if (!iso) return "";
  const s = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  return (s / 3600).toFixed(1) + "h ago";
}

function countdown(iso) {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (s <= 0) return "expired";
  const m = Math.floor(s / 60);
  return m >= 60 ? Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m" : m + "m" + String(s % 60).padStart(2, "0") + "s";
}

function short(id) {
  return String(id || "").slice(0, 8);
}

// A text cell longer than this is cut with an ellipsis; the whole text is its tooltip.
const CELL_CHARS = 48;

function cell(c) {
  if (c instanceof Node && c.tagName === "TD") return c;
  if (typeof c === "string" && c.length > CELL_CHARS) return el("td", { title: c }, c.slice(0, CELL_CHARS - 1) + "…");
  return el("td", {}, c);
}

function table(headers, rows, empty) {
  if (!rows.length) return el("p", { class: "empty" }, empty);
  return el("table", {},
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map(cell))))
  );
}

function fill(id, content) {
  const body = document.querySelector("#" + id + " .body");
  body.replaceChildren(content);
}

function failed(panel) {
  return panel && panel.error ? el("p", { class: "error" }, panel.error + ": " + (panel.message || "")) : null;
}

function figures(stats) {
  const box = document.getElementById("figures");
  if (!stats || stats.error) {
    box.replaceChildren(el("p", { class: "error" }, "figures: " + (stats ? stats.error : "none")));
    return;
  }
  const t = stats.tasks;
  const blocks = stats.guardrail_blocks.reduce((n, c) => n + c.count, 0);
  const f = stats.memory_feedback;
  const votes = f.useful + f.not_useful;
  const items = [
    ["agents active", stats.agents.active],
    ["locks held", stats.locks_held],
    ["tasks ready", t.pending - t.waiting],
    ["tasks claimed", t.claimed],
    ["approvals pending", stats.approvals_pending],
    ["guardrail blocks", blocks],
    ["memory useful", votes ? Math.round((100 * f.useful) / votes) + "%" : "–"],
  ];
  box.replaceChildren(...items.map(([l, n]) => el("div", { class: "figure", "data-figure": l }, el("span", { class: "n" }, n), el("span", { class: "l" }, l))));
}

// Where an agent works: its worktree's last directory and its branch.
function place(a) {
  if (!a.worktree) return "";
  const dir = a.worktree.split("/").filter(Boolean).pop() || a.worktree;
  return a.branch ? `${dir} (${a.branch})` : dir;
}

// A change the person asked for from the page (approve, deny, end a session, release a
// lock, cancel or requeue a task): sent with
// the CSRF token; a refusal is shown; the page reads again either way.
async function act(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": csrf },
    body: JSON.stringify(body),
  });
  const answer = await r.json().catch(() => ({}));
  showError(r.ok ? null : (answer.error || r.status) + ": " + (answer.message || ""));
  refresh();
}

function endSession(a) {
  if (!confirm(`End ${a.agent_id}'s session? Its locks are released and its claimed tasks go back to the queue.`)) return;
  act("/ui/sessions/end", { session_id: a.session_id });
}

function agents(p) {
  const live = (a) => a.session_id && a.status !== "disconnected" && a.status !== "unregistered";
  fill("panel-agents", failed(p) || table(
    ["agent", "type", "profile", "trust", "status", "worktree", "session", "heartbeat", "task", "violations", ""],
    p.items.map((a) => [a.agent_id, a.agent_type, a.profile || "", a.trust ?? "", chip(a.status), place(a), ago(a.started_at), ago(a.last_heartbeat), short(a.current_task), a.guardrail_violations,
      el("td", {}, live(a) ? el("button", { type: "button", "data-end-session": a.agent_id, onclick: () => endSession(a) }, "End session") : null)]),
    "no agents have registered"
  ));
}

function breakLock(l) {
  if (!confirm(`Release ${l.locked_by}'s lock on ${l.file_path}? Its writes through coord will be refused.`)) return;
  act("/ui/locks/break", { file_path: l.file_path });
}

function locks(p) {
  fill("panel-locks", failed(p) || table(
    ["file", "holder", "held", "expires in", "token", ""],
    p.items.map((l) => [l.file_path, l.locked_by, ago(l.locked_at), el("td", { "data-expires": l.expires_at }, countdown(l.expires_at)), l.fencing_token,
      el("td", {}, el("button", { type: "button", "data-break": l.file_path, onclick: () => breakLock(l) }, "Release"))]),
    "no file is locked"
  ));
}

function cancelTask(t) {
  if (!confirm(`Cancel task ${short(t.task_id)} (${t.task_type})? The tasks that depend on it are cancelled too.`)) return;
  act("/ui/tasks/cancel", { task_id: t.task_id });
}

function requeueTask(t) {
  if (!confirm(`Put task ${short(t.task_id)} back in the queue? ${t.claimed_by}'s claim is dropped.`)) return;
  act("/ui/tasks/requeue", { task_id: t.task_id });
}

// A card's actions: a claimed task can go back to the queue; one not ended, cancelled.
function taskActions(t) {
  if (t.status !== "pending" && t.status !== "claimed") return null;
  return el("div", { class: "actions" },
    t.status === "claimed" ? el("button", { type: "button", "data-requeue": t.task_id, onclick: () => requeueTask(t) }, "Requeue") : null,
    " ",
    el("button", { type: "button", "data-cancel": t.task_id, onclick: () => cancelTask(t) }, "Cancel"));
}

function decide(id, decision) {
  return act("/ui/approvals/decide", { approval_id: id, decision: decision });
}

function approvals(p) {
  fill("panel-approvals", failed(p) || table(
    ["approval", "agent", "operation", "asked", "why", "expires in", ""],
    p.items.map((a) => [
      a.approval_id, a.agent_id, a.operation,
      el("td", { class: "wrap" }, el("code", {}, a.asked || "")),
      el("td", { class: "wrap" }, a.reason || a.error),
      countdown(a.expires_at),
      el("td", {},
        el("button", { class: "approve", type: "button", "data-approve": a.approval_id, onclick: () => decide(a.approval_id, "approve") }, "Approve"),
        " ",
        el("button", { class: "deny", type: "button", "data-deny": a.approval_id, onclick: () => decide(a.approval_id, "deny") }, "Deny")),
    ]),
    "nothing waits for a decision"
  ));
}

function column(task) {
  if (task.status === "pending") return task.pending_dependencies > 0 ? "blocked" : "ready";
  if (task.status === "completed") return "done";
  if (task.status === "cancelled") return "failed";
  return task.status;
}

function board(p, stats) {
  if (failed(p)) return fill("panel-board", failed(p));
  const cols = ["ready", "blocked", "claimed", "done", "failed"];
  // Column totals from the figures (the board holds every pending and claimed task up
  // to a bound, and a sample of the ended ones).
  const t = stats && stats.tasks;
  const totals = t ? { ready: t.pending - t.waiting, blocked: t.waiting, claimed: t.claimed, done: t.completed, failed: t.failed + t.cancelled } : {};
  const body = document.querySelector("#panel-board .body");
  body.replaceChildren(...cols.map((c) => {
    const tasks = p.items.filter((t) => column(t) === c);
    const total = totals[c] ?? tasks.length;
    const shown = Math.min(tasks.length, 30);
    return el("div", { class: "column", "data-column": c },
      el("h3", {}, c + " (" + (shown < total ? shown + " of " + total : total) + ")"),
      ...tasks.slice(0, 30).map((t) => el("div", { class: "card", "data-task": t.task_id },
        el("div", { class: "t" }, t.task_type + " · " + short(t.task_id)),
        el("div", { class: "d" }, t.task_description),
        t.claimed_by ? el("div", { class: "d" }, "claimed by " + t.claimed_by) : null,
        taskActions(t))));
  }));
}

// The dependency graph: tasks in layers by their longest chain of dependencies, an
// edge from each dependency to its dependent.
function graph(p) {
  if (failed(p)) return fill("panel-graph", failed(p));
  const tasks = p.items.filter((t) => t.depends_on && t.depends_on.length || p.items.some((o) => (o.depends_on || []).includes(t.task_id)));
  if (!tasks.length) return fill("panel-graph", el("p", { class: "empty" }, "no task depends on another"));
  const byId = new Map(tasks.map((t) => [t.task_id, t]));
  const depth = new Map();
  const layer = (t, seen) => {
    if (depth.has(t.task_id)) return depth.get(t.task_id);
    if (seen.has(t.task_id)) return 0;
    seen.add(t.task_id);
    const d = Math.max(0, ...(t.depends_on || []).filter((id) => byId.has(id)).map((id) => layer(byId.get(id), seen) + 1));
    depth.set(t.task_id, d);
    return d;
  };
  tasks.forEach((t) => layer(t, new Set()));
  const layers = [];
  tasks.forEach((t) => (layers[depth.get(t.task_id)] ||= []).push(t));
  const W = 150, H = 34, GX = 50, GY = 14;
  const pos = new Map();
  layers.forEach((ts, i) => ts.forEach((t, j) => pos.set(t.task_id, { x: 10 + i * (W + GX), y: 10 + j * (H + GY) })));
  const width = 20 + layers.length * (W + GX), height = 20 + Math.max(...layers.map((l) => l.length)) * (H + GY);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "graph");
  svg.setAttribute("viewBox", "0 0 " + width + " " + height);
  // Drawn at its own size (the page's policy forbids inline styles; the panel scrolls).
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  tasks.forEach((t) => (t.depends_on || []).filter((id) => pos.has(id)).forEach((id) => {
    const a = pos.get(id), b = pos.get(t.task_id);
    add("path", { d: "M" + (a.x + W) + "," + (a.y + H / 2) + " C" + (a.x + W + GX / 2) + "," + (a.y + H / 2) + " " + (b.x - GX / 2) + "," + (b.y + H / 2) + " " + b.x + "," + (b.y + H / 2) });
  }));
  tasks.forEach((t) => {
    const q = pos.get(t.task_id);
    add("rect", { x: q.x, y: q.y, width: W, height: H, rx: 4, class: "s-" + t.status, "data-node": t.task_id });
    add("text", { x: q.x + 6, y: q.y + 14 }, t.task_type + " · " + short(t.task_id));
    add("text", { x: q.x + 6, y: q.y + 28 }, column(t));
  });
  fill("panel-graph", svg);
}

function workflows(p, nodes) {
  if (failed(p)) return fill("panel-workflows", failed(p));
  const states = new Map((nodes || []).map((w) => [w.workflow_id, w.nodes || []]));
  fill("panel-workflows", table(
    ["name", "kind", "status", "nodes", "started"],
    p.items.map((w) => [w.name, w.kind, chip(w.status),
      el("td", { class: "wrap" }, ...(states.get(w.workflow_id) || []).map((n) => el("span", { class: "chip s-" + n.status, title: n.task_type }, n.id + ": " + n.status)), states.has(w.workflow_id) ? null : String(w.nodes)),
      ago(w.created_at)]),
    "no workflow or swarm yet"
  ));
}

function violations(stats, p) {
  const by = stats && stats.guardrail_blocks ? stats.guardrail_blocks : [];
  const list = failed(p) || table(["when", "agent", "category", "asked"],
    p.items.map((v) => [ago(v.timestamp), v.agent_id, v.category || v.operation, el("td", { class: "wrap" }, el("code", {}, v.asked || ""))]),
    "nothing was blocked");
  fill("panel-violations", el("div", {},
    by.length ? el("p", {}, ...by.map((c) => el("span", { class: "chip s-refused" }, c.category + " " + c.count)), " ") : null,
    list));
}

function inbox(p) {
  if (failed(p)) return fill("panel-inbox", failed(p));
  document.querySelector("#panel-inbox h2").textContent = "Your messages" + (p.unread ? " (" + p.unread + " unread)" : "");
  fill("panel-inbox", table(
    ["from", "subject", "message", "importance", "thread", "sent", ""],
    p.items.map((m) => [m.from, m.subject, m.body, m.importance, short(m.thread_id), ago(m.created_at), m.read_at ? "" : chip("unread")]),
    "no agent has written to you"
  ));
}

function handoffs(p) {
  fill("panel-handoffs", failed(p) || table(
    ["agent", "summary", "in progress", "next", "when"],
    p.items.map((h) => [h.agent_name, h.summary, (h.in_progress || []).join("; "), (h.next_steps || []).join("; "), ago(h.created_at)]),
    "no handoff yet"
  ));
}

function memories(p) {
  const pct = (u) => (u === null || u === undefined ? "–" : Math.round(100 * u) + "%");
  fill("panel-memories", failed(p) || table(
    ["memory", "kind", "by", "seen", "useful (votes)", "last seen"],
    p.items.map((m) => [m.content, m.memory_type, m.agent_id, m.occurrences, m.votes ? pct(m.usefulness) + " (" + m.votes + ")" : "–", ago(m.last_seen_at)]),
    "no memory yet"
  ));
}

function spawned(p) {
  fill("panel-spawned", failed(p) || table(
    ["agent", "definition", "parent", "runtime", "status", "task", "started", "exit"],
    p.items.map((a) => [a.agent_id, a.agent, a.parent_agent_id, a.runtime, chip(a.status), a.task_status ? short(a.task_id) + " " + a.task_status : short(a.task_id), ago(a.created_at), a.exit_code ?? (a.error || "")]),
    "no agent was spawned"
  ));
}

function audit(p) {
  fill("panel-audit", failed(p) || table(
    ["#", "when", "agent", "type", "operation", "result", "ms"],
    p.items.map((e) => [e.id, ago(e.timestamp), e.agent_id, e.agent_type, e.operation,
      e.success ? chip("allowed") : chip(e.error_code || "refused"), Number(e.duration_ms).toFixed(1)]),
    "no audit rows match"
  ));
}

function showError(message) {
  const box = document.getElementById("error");
  box.hidden = !message;
  box.textContent = message || "";
}

let running = false;
let again = false;
let last = 0;

// One read at a time, at most one a second: a busy fleet wakes the page often, and each
// read is a handful of audited operations.
async function refresh() {
  pending = null;
  if (running) {
    again = true;
    return;
  }
  const wait = last + 1000 - Date.now();
  if (wait > 0) {
    pending = setTimeout(refresh, wait);
    return;
  }
  running = true;
  last = Date.now();
  try {
    const r = await fetch("/ui/snapshot?" + filters.toString(), { headers: { accept: "application/json" } });
    if (r.status === 401) return location.reload();
    const s = await r.json();
    figures(s.stats);
    agents(s.agents);
    locks(s.locks);
    approvals(s.approvals);
    board(s.tasks, s.stats);
    graph(s.tasks);
    workflows(s.workflows, s.workflow_nodes);
    violations(s.stats, s.violations);
    inbox(s.inbox);
    handoffs(s.handoffs);
    memories(s.memories);
    spawned(s.spawned);
    audit(s.audit);
    document.body.dataset.refreshed = String(Date.now());
  } catch (e) {
    showError("could not refresh: " + e);
  } finally {
    running = false;
    if (again) {
      again = false;
      soon();
    }
  }
}

function soon() {
  if (!pending) pending = setTimeout(refresh, 250);
}

function listen() {
  const live = document.getElementById("live");
  const events = new EventSource("/ui/events");
  events.addEventListener("open", () => { live.textContent = "live"; live.className = "live on"; });
  events.addEventListener("change", () => {
    document.body.dataset.changes = String(Number(document.body.dataset.changes || 0) + 1);
    soon();
  });
  events.addEventListener("lagged", soon);
  events.addEventListener("error", () => { live.textContent = "reconnecting…"; live.className = "live off"; });
}

document.getElementById("audit-filters").addEventListener("submit", (ev) => {
  ev.preventDefault();
  filters = new URLSearchParams(new FormData(ev.target));
  refresh();
});
document.getElementById("logout").addEventListener("click", async () => {
  await fetch("/ui/logout", { method: "POST", headers: { "x-csrf-token": csrf } });
  location.href = "/";
});
setInterval(() => document.querySelectorAll("[data-expires]").forEach((td) => (td.textContent = countdown(td.dataset.expires))), 1000);
setInterval(soon, 15000);
listen();
refresh();
