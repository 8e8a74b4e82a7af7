// The agentry run inspector: a page over the server's own run API (/v1/...), nothing else.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const main = $("#main");

// ---------------------------------------------------------------- small helpers

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function pretty(value) {
  if (typeof value === "string") {
    try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
  }
  return JSON.stringify(value, null, 2);
}

// JSON text with its object keys in order, so two values compare by content.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

// True when the model's arguments (JSON text, possibly malformed) say what `value` says.
function sameJson(text, value) {
  let asked = text;
  try { asked = JSON.parse(text); } catch { /* not JSON: compared as text */ }
  return canonical(asked) === canonical(value);
}

function ago(ms) {
  if (!ms) return "";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(ms).toLocaleString();
}

function duration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
}

function micros(us) {
  if (typeof us !== "number") return "";
  return us < 1000 ? `${(us / 1000).toFixed(us < 100 ? 3 : 2)} ms` : duration(us / 1000);
}

function statusLabel(status) {
  return { awaiting_approval: "waiting for a person" }[status] || status;
}

function pill(status) {
  return h("span", { class: `pill ${status}`, "data-status": status }, statusLabel(status));
}

function toast(message, kind = "") {
  const t = h("div", { class: `toast ${kind}`, role: "status" }, message);
  document.body.append(t);
  setTimeout(() => t.remove(), kind === "error" ? 6000 : 2500);
}

// Numbers as the reader's locale writes them (one formatter: a page may write ten thousand).
const counts = new Intl.NumberFormat();

function usageText(usage) {
  if (!usage || typeof usage !== "object") return "—";
  const input = usage.input_tokens ?? usage.prompt_tokens;
  const output = usage.output_tokens ?? usage.completion_tokens;
  if (input === undefined && output === undefined) return "—";
  return `${counts.format(input || 0)} in · ${counts.format(output || 0)} out`;
}

// What a run's tokens cost (`cost_usd`, when the server knows the agent's price).
function costText(run) {
  const cost = run && run.cost_usd;
  if (typeof cost !== "number") return "—";
  if (cost === 0) return "$0";
  return `$${cost.toFixed(cost < 0.01 ? 5 : 3)}`;
}

// What "Fork here" on step `n` does.
function forkTitle(n) {
  return `Start a new run from the end of step ${n}, with its history and state as they were then`;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// A step's line: messages sent, tool calls, tokens and their cost (when the server knows the
// agent's price), how long it took.
function stepMeta(sent, tools, usage, cost, took) {
  const used = usage ? usageText(usage) : "";
  return [
    sent ? `${sent} message${sent === 1 ? "" : "s"} sent` : "",
    tools ? `${tools} tool call${tools > 1 ? "s" : ""}` : "",
    used,
    used && typeof cost === "number" ? costText({ cost_usd: cost }) : "",
    typeof took === "number" ? duration(took) : "",
  ].filter(Boolean).join(" · ");
}

// ---------------------------------------------------------------- the server

const auth = {
  get token() { return sessionStorage.getItem("agentry.token") || ""; },
  set token(t) { sessionStorage.setItem("agentry.token", t); },
};

let asking = null;
function askToken() {
  if (asking) return asking;
  const dialog = $("#token-dialog");
  asking = new Promise((resolve) => {
    $("#token-form").onsubmit = () => {
      auth.token = $("#token-input").value.trim();
      asking = null;
      resolve();
    };
    dialog.showModal();
    $("#token-input").focus();
  });
  return asking;
}

function headers(extra = {}) {
  const out = { ...extra };
  if (auth.token) out.Authorization = `Bearer ${auth.token}`;
  return out;
}

async function api(path, options = {}) {
  for (;;) {
    const response = await fetch(path, {
      ...options,
      headers: headers(options.body ? { "Content-Type": "application/json" } : {}),
    });
    if (response.status === 401) { await askToken(); continue; }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = body.error?.message || body.message || `${response.status} ${response.statusText}`;
      throw new Error(message);
    }
    return body;
  }
}

const post = (path, body = {}) => api(path, { method: "POST", body: JSON.stringify(body) });

function size(n) {
  if (n === undefined || n === null) return "";
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} KB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}

// A media part's bytes as a URL the page can show: its own URL, its inline data, or the
// server's copy by digest (fetched with the token, so it works behind one).
async function mediaUrl(part) {
  if (part.data) return `data:${part.media_type};base64,${part.data}`;
  const response = await fetch(`/v1/media/${part.sha256}`, { headers: headers() });
  if (!response.ok) throw new Error(`${response.status}`);
  return URL.createObjectURL(await response.blob());
}

// Message content: text as it is; parts as text, images, players and file chips.
function contentView(content) {
  if (!Array.isArray(content)) return h("div", { class: "body" }, content ?? "");
  return h("div", { class: "body parts" }, content.map((part) => {
    if (part.type === "text") return h("div", {}, part.text);
    const label = [part.type, part.media_type, size(part.size), part.name].filter(Boolean).join(" · ");
    // Media elsewhere is linked, never loaded by the page: it talks to this server only.
    if (part.url) return h("a", { class: "file", href: part.url, rel: "noreferrer", target: "_blank" }, `🔗 ${label} · ${part.url}`);
    const el = part.type === "image"
      ? h("img", { class: "media", alt: label, title: label, loading: "lazy" })
      : part.type === "audio"
        ? h("audio", { class: "media", controls: true, title: label })
        : h("a", { class: "file", title: label, download: part.name || "file" }, `📄 ${label}`);
    mediaUrl(part)
      .then((url) => { if (el.tagName === "A") el.href = url; else el.src = url; })
      .catch(() => el.replaceWith(h("span", { class: "sub bad" }, `${label} (not available)`)));
    return el;
  }));
}

// Content as one line of text (for answers shown as text).
function contentText(content) {
  if (!Array.isArray(content)) return content ?? "";
  return content.map((p) => (p.type === "text" ? p.text : `[${p.type} ${p.media_type}]`)).join("\n");
}

// Server-Sent Events over fetch (EventSource cannot send a bearer token): calls `onEvent(kind,
// data, id)` for each event, reconnects with Last-Event-ID until the stream ends normally or
// `signal` aborts.
async function follow(path, onEvent, signal, setLive = () => {}, from = "") {
  let lastId = from;
  for (let attempt = 0; !signal.aborted; attempt++) {
    try {
      const response = await fetch(path, {
        headers: headers(lastId ? { "Last-Event-ID": lastId, Accept: "text/event-stream" } : { Accept: "text/event-stream" }),
        signal,
      });
      if (response.status === 401) { await askToken(); continue; }
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.error?.message || `${response.status}`);
      }
      setLive(true);
      attempt = 0;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end;
        while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
          let kind = "message", data = "", id = null;
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "event") kind = text;
            else if (field === "data") data += (data ? "\n" : "") + text;
            else if (field === "id") id = text;
          }
          if (id !== null) lastId = id;
          if (!data) continue;
          let parsed;
          try { parsed = JSON.parse(data); } catch { parsed = { text: data }; }
          onEvent(kind, parsed, id);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      setLive(false);
      await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** attempt)));
    }
  }
}

// ---------------------------------------------------------------- routing

let leave = () => {};
const views = [
  [/^#\/runs\/([^/]+)$/, (m, s) => runPage(decodeURIComponent(m[1]), s), "runs"],
  [/^#\/approvals$/, (m, s) => approvalsPage(s), "approvals"],
  [/^#\/chat(?:\/([^/]+))?$/, (m, s) => chatPage(m[1] && decodeURIComponent(m[1]), s), "chat"],
  [/^#?\/?$/, (m, s) => runsPage(s), "runs"],
];

function route() {
  leave();
  leave = () => {};
  main.replaceChildren();
  const hash = location.hash || "#/";
  for (const [pattern, view, nav] of views) {
    const m = hash.match(pattern);
    if (m) {
      for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("active", a.dataset.nav === nav);
      const controller = new AbortController();
      const timers = [];
      const scope = { signal: controller.signal, every: (ms, f) => timers.push(setInterval(f, ms)) };
      leave = () => { controller.abort(); timers.forEach(clearInterval); };
      view(m, scope);
      main.focus({ preventScroll: true });
      return;
    }
  }
  main.append(h("p", { class: "empty" }, "Nothing here. ", h("a", { href: "#/" }, "See the runs.")));
}

// ---------------------------------------------------------------- the runs list

const STATUSES = ["", "running", "awaiting_approval", "finished", "failed", "cancelled"];

function runsPage(s) {
  const state = { status: "", agent: "", search: "", subAgents: false, runs: [], next: null };
  const status = h("select", { "aria-label": "Status" },
    STATUSES.map((v) => h("option", { value: v }, v ? statusLabel(v) : "every status")));
  const agent = h("select", { "aria-label": "Agent" }, h("option", { value: "" }, "every agent"));
  const search = h("input", { type: "search", placeholder: "Search run, session, agent  ( / )", "aria-label": "Search" });
  // Sub-agents' runs are shown inside the run that called them; listed on their own on request.
  const subAgents = h("input", { type: "checkbox", id: "sub-agent-runs" });
  const subAgentsLabel = h("label", { class: "check", for: "sub-agent-runs", title: "Also list sub-agents' runs (each is shown inside the run that called it)" }, subAgents, "Sub-agents' runs");
  const body = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "Older runs");
  const table = h("table", { class: "runs" },
    h("thead", {}, h("tr", {},
      h("th", {}, "Status"), h("th", {}, "Agent"), h("th", {}, "Run"),
      h("th", { class: "hide-narrow" }, "Session"), h("th", {}, "Started"),
      h("th", { class: "num" }, "Steps"), h("th", { class: "num hide-narrow" }, "Tokens"),
      h("th", { class: "num hide-narrow" }, "Cost"), h("th", { class: "num hide-narrow" }, "Updated"))),
    body);
  const empty = h("div", { class: "empty", hidden: true }, "No runs yet. Start one from ", h("a", { href: "#/chat" }, "Chat"), " or POST /v1/runs.");
  main.append(
    h("div", { class: "head" }, h("h1", {}, "Runs"), h("span", { class: "sub", id: "runs-total" })),
    h("div", { class: "filters" }, search, status, agent, subAgentsLabel),
    h("div", { class: "panel scroll-x" }, table, empty, h("div", { class: "more" }, more)),
  );
  api("/v1/agents").then((agents) => {
    for (const a of agents) agent.append(h("option", { value: a.name }, a.name));
  }).catch(() => {});

  const query = (before) => {
    const q = new URLSearchParams({ limit: "100" });
    if (state.status) q.set("status", state.status);
    if (state.agent) q.set("agent", state.agent);
    if (!state.subAgents) q.set("top_level", "true");
    if (before) q.set("before", before);
    return `/v1/runs?${q}`;
  };
  const render = () => {
    const needle = state.search.toLowerCase();
    const shown = state.runs.filter((r) => !needle || [r.run_id, r.session_id, r.agent].some((v) => v && v.toLowerCase().includes(needle)));
    body.replaceChildren(...shown.map((r) => {
      const open = () => { location.hash = `#/runs/${encodeURIComponent(r.run_id)}`; };
      return h("tr", { tabindex: "0", "data-run": r.run_id, onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
        h("td", {}, pill(r.status)),
        h("td", {}, r.agent, r.parent_run_id ? [" ", h("span", { class: "tag", title: `called by run ${r.parent_run_id}` }, "sub-agent")] : ""),
        h("td", { class: "id", title: r.run_id }, r.run_id.slice(0, 8)),
        h("td", { class: "id hide-narrow", title: r.session_id || "" }, (r.session_id || "").slice(0, 8)),
        h("td", { title: new Date(r.created_ms).toLocaleString() }, ago(r.created_ms)),
        h("td", { class: "num" }, r.step),
        h("td", { class: "num hide-narrow tokens" }, usageText(r.usage)),
        h("td", { class: "num hide-narrow cost" }, costText(r)),
        h("td", { class: "num hide-narrow" }, ago(r.updated_ms)));
    }));
    empty.hidden = shown.length > 0;
    more.hidden = !state.next;
    $("#runs-total").textContent = `${shown.length}${state.next ? "+" : ""} shown`;
  };
  const refresh = async () => {
    try {
      const page = await api(query());
      // Keep older pages the person loaded; replace the newest with what the server says now.
      const fresh = new Set(page.runs.map((r) => r.run_id));
      const older = state.runs.slice(page.runs.length).filter((r) => !fresh.has(r.run_id));
      state.runs = page.runs.concat(older);
      if (!older.length) state.next = page.next_before;
      render();
      setLive(true);
    } catch (error) {
      setLive(false);
    }
  };
  status.onchange = () => { state.status = status.value; state.runs = []; refresh(); };
  agent.onchange = () => { state.agent = agent.value; state.runs = []; refresh(); };
  subAgents.onchange = () => { state.subAgents = subAgents.checked; state.runs = []; refresh(); };
  search.oninput = () => { state.search = search.value; render(); };
  more.onclick = async () => {
    const page = await api(query(state.next));
    state.runs = state.runs.concat(page.runs);
    state.next = page.next_before;
    render();
  };
  refresh();
  s.every(1500, refresh);
}

function setLive(on) {
  const live = $("#live");
  live.classList.toggle("on", on);
  live.classList.toggle("off", !on);
  live.title = on ? "Live" : "Not connected to the server";
}

// ---------------------------------------------------------------- a run's page

// The timeline of a run's events: steps, and inside them streamed text, tool calls with their
// hooks' decisions, state changes, compactions, approvals, sub-agents nested and foldable.
class Timeline {
  constructor(root, runPath) {
    this.root = root;
    this.agents = new Map();
    // The latest run of each sub-agent path, for events that do not name their run.
    this.latest = new Map();
    this.calls = new Map();
    this.rootPath = runPath;
    this.lastAt = null;
    // "Fork here" on any of the run's own steps, listed or streamed.
    root?.addEventListener("click", (ev) => {
      const button = ev.target.closest?.(".fork-here");
      if (!button || !this.onFork) return;
      ev.preventDefault();
      ev.stopPropagation();
      this.onFork(Number(button.closest("details.step").dataset.step));
    });
  }

  // The run an event belongs to: the run itself, or one run of a sub-agent (its path and run
  // id: calls of the same sub-agent at once share a path, not a run).
  agent(path, runId) {
    if (!this.rootPath) this.rootPath = path;
    const own = path === this.rootPath || !path.includes("/");
    const key = own ? path : runId ? `${path}#${runId}` : this.latest.get(path) || path;
    let a = this.agents.get(key);
    if (a) return a;
    if (own) {
      a = { items: this.root, step: null, text: null, steps: 0, calls: [] };
    } else {
      const parentPath = path.slice(0, path.lastIndexOf("/"));
      const parent = this.agent(parentPath, null);
      const name = path.split("/").pop();
      const items = h("div", { class: "items" });
      const meta = h("span", { class: "meta" });
      const el = h("details", { class: "agent", open: true, "data-run": runId || "" },
        h("summary", {}, h("span", {}, "Sub-agent ", h("b", {}, name)), meta), items);
      // Inside the call that started it, when the parent called it as a tool: the earliest of
      // its calls of this agent that has no run yet.
      const call = parent.calls.find((c) => c.name === name && !c.child);
      if (call) {
        call.child = true;
        call.el.append(el);
      } else (parent.step ? parent.step.items : parent.items).append(el);
      a = { items, step: null, text: null, steps: 0, meta, el, calls: [] };
    }
    this.agents.set(key, a);
    if (!own) this.latest.set(path, key);
    return a;
  }

  stepOf(a) {
    if (!a.step) this.newStep(a, a.steps + 1, null);
    return a.step;
  }

  newStep(a, n, at) {
    if (a.step && a.step.el.open && a === this.agents.get(this.rootPath) && n > 3) {
      // Earlier steps fold as new ones come, so long runs stay readable.
      const prev = a.step;
      if (!prev.pinned) prev.el.open = false;
    }
    const step = this.stepRow(a, n, at, true);
    step.el.addEventListener("toggle", () => { step.pinned = true; }, { once: true });
    a.step = step;
    a.steps = n;
    a.text = null;
    return step;
  }

  // A step's row: its summary line (number, meta, "Fork here" on the run's own steps) and
  // the place for its items.
  stepRow(a, n, at, open, into = a.items) {
    const items = h("div", { class: "items" });
    const meta = h("span", { class: "meta" });
    // The run's own steps can be forked from (a sub-agent's steps belong to its own run).
    const fork = this.onFork && a === this.agents.get(this.rootPath)
      ? h("button", { type: "button", class: "ghost fork-here", title: forkTitle(n) }, "Fork here")
      : "";
    const el = h("details", { class: "step", open, "data-step": n },
      h("summary", {}, h("span", {}, `Step ${n}`), meta, fork), items);
    into.append(el);
    return { el, items, meta, n, at, tools: 0 };
  }

  // The steps of a long run listed from the run's steps (`steps`, as /steps gives them),
  // folded: a step's events are fetched by `load` when a person first opens it, into a
  // timeline of their own. The rows go in as one piece of markup, with one listener for all.
  listSteps(steps, load) {
    const a = this.agent(this.rootPath, null);
    const listed = new Map();
    const rows = steps.map((s) => {
      listed.set(s.step, s);
      a.steps = s.step;
      const meta = stepMeta(s.messages_sent, s.tool_calls, s.usage, s.cost_usd, s.finished_at_ms && s.finished_at_ms - s.started_at_ms);
      const fork = this.onFork ? `<button type="button" class="ghost fork-here" title="${escapeHtml(forkTitle(s.step))}">Fork here</button>` : "";
      return `<details class="step${s.failed ? " failed" : ""}" data-step="${Number(s.step)}" data-lazy><summary><span>Step ${Number(s.step)}</span><span class="meta">${escapeHtml(meta)}</span>${fork}</summary><div class="items"></div></details>`;
    });
    a.items.insertAdjacentHTML("beforeend", rows.join(""));
    // `toggle` does not bubble: listened for on the way down.
    a.items.addEventListener("toggle", (ev) => {
      const el = ev.target;
      const s = el.parentElement === a.items && el.open && listed.get(Number(el.dataset.step));
      if (!s) return;
      listed.delete(s.step);
      const step = { el, items: $(":scope > .items", el), meta: $(":scope > summary .meta", el), n: s.step, at: s.started_at_ms, tools: 0 };
      this.loadStep(s, step, load);
    }, true);
  }

  // Fetches the events of listed step `s` into its row.
  loadStep(s, step, load) {
    step.items.append(h("div", { class: "sub loading" }, "loading…"));
    const inner = new Timeline(null, this.rootPath);
    inner.agents.set(this.rootPath, { items: step.items, step, text: null, steps: s.step, calls: [] });
    load(s, (kind, e) => {
      // Its own start is this row.
      if (kind === "step_started" && (e.agent_path || this.rootPath) === this.rootPath && !e.run_id) return;
      inner.add(kind, e);
    }).then(() => { $(".loading", step.items)?.remove(); delete step.el.dataset.lazy; },
      (err) => { step.items.replaceChildren(h("div", { class: "item fail" }, h("div", { class: "label" }, h("b", {}, "Could not load this step")), h("div", { class: "body" }, err.message))); });
  }

  item(a, kind, label, ...body) {
    const el = h("div", { class: `item ${kind}` }, h("div", { class: "label" }, label), ...body);
    if (a.step) a.step.items.append(el);
    else {
      a.intro ??= a.items.appendChild(h("div", { class: "items intro" }));
      a.intro.append(el);
    }
    return el;
  }

  add(kind, e) {
    const path = e.agent_path || this.rootPath || "";
    // A sub-agent called again (a later step, or a later call in the same step) is a run of its
    // own: it gets an element of its own, in the call that started it. Its events name its run;
    // a history recorded before they did is told apart by where each run started and ended.
    if (kind === "run_started" && this.rootPath && path !== this.rootPath && !e.run_id && this.agents.get(path)?.ended) {
      this.agents.delete(path);
    }
    const a = this.agent(path, e.run_id);
    const at = e.at_ms ?? Date.now();
    switch (kind) {
      case "run_started":
        if (a.meta) a.meta.textContent = (e.run_id || "").slice(0, 8);
        break;
      case "step_started":
        this.newStep(a, e.step, at);
        break;
      case "step_finished":
        if (a.step) a.step.meta.textContent = stepMeta(a.step.sent, a.step.tools, e.usage, e.cost_usd, a.step.at ? at - a.step.at : null);
        a.text = null;
        break;
      case "model_request": {
        // What the model was sent: the messages by number (in the step's line); the system
        // prompt, tools and parameters when new or changed, and messages hooks rewrote.
        const step = this.stepOf(a);
        step.sent = e.messages;
        const shown = [];
        if (e.messages_rewritten) shown.push(h("span", { class: "tag rewrite" }, "messages rewritten by hooks"), " ");
        if (Array.isArray(e.tools)) shown.push(h("span", { class: "sub" }, `tools: ${e.tools.join(", ") || "none"}`), " ");
        if (e.params && Object.keys(e.params).length) shown.push(h("span", { class: "sub mono" }, JSON.stringify(e.params)), " ");
        const system = typeof e.system === "string"
          ? h("details", { class: "system" }, h("summary", {}, e.system ? "system prompt" : "system prompt removed"), e.system ? h("pre", {}, e.system) : "")
          : "";
        if (shown.length || system) this.item(a, "request", [h("b", {}, "Request"), h("span", { class: "sub" }, `${e.messages} message${e.messages === 1 ? "" : "s"}`)], h("div", {}, ...shown), system);
        break;
      }
      case "text_delta": {
        if (!a.text) {
          const body = h("div", { class: "body cursor" });
          const el = this.item(a, "text", h("b", {}, "Model"), body);
          a.text = { body, el, text: "" };
        }
        a.text.text += e.text;
        a.text.body.textContent = a.text.text;
        break;
      }
      case "thinking_delta": {
        if (!a.thinking || a.thinking.step !== a.step) {
          const body = h("div", { class: "body" });
          this.item(a, "thinking", h("b", {}, "Reasoning"), body);
          a.thinking = { body, step: a.step };
        }
        a.thinking.body.textContent += e.text;
        break;
      }
      case "message": {
        const m = e.message || {};
        if (m.role === "assistant") {
          // What the model asked each call to run with, to show beside what hooks left.
          for (const c of m.tool_calls || []) (this.asked ??= new Map()).set(c.id, c.arguments);
          if (a.text) {
            a.text.body.classList.remove("cursor");
            if (Array.isArray(m.content)) a.text.body.replaceWith(contentView(m.content));
            else if (m.content) a.text.body.textContent = m.content;
          } else if (m.content && m.content.length) {
            this.item(a, "text", h("b", {}, "Model"), contentView(m.content));
          }
          a.text = null;
        } else if (m.role === "user") {
          this.item(a, "user", h("b", {}, "User"), contentView(m.content));
        }
        break;
      }
      case "tool_started": {
        const known = this.calls.get(e.call_id);
        if (known && !known.done) {
          // The same call going on (after a person's approval, or a resume): one card.
          known.input.textContent = pretty(e.input);
          known.result.replaceChildren(h("span", { class: "sub" }, "running…"));
          known.at = at;
          break;
        }
        const step = this.stepOf(a);
        step.tools++;
        const result = h("div", { class: "result" }, h("span", { class: "sub" }, "running…"));
        const input = h("pre", {}, pretty(e.input));
        const hooks = this.pendingHooks(e.call_id);
        const resultLabel = h("span", { class: "result-label" }, "result");
        // The input before hooks (as the model asked) when hooks changed it.
        const asked = this.asked?.get(e.call_id);
        this.asked?.delete(e.call_id);
        const rewritten = asked !== undefined && !sameJson(asked, e.input);
        const before = rewritten ? [h("span", {}, "model asked"), h("pre", { class: "asked" }, pretty(asked))] : [];
        const el = this.item(a, "tool",
          [h("b", {}, e.name), h("span", { class: "mono" }, e.call_id), h("span", { class: "took" })],
          hooks,
          h("div", { class: "kv" }, ...before, h("span", {}, rewritten ? "after hooks" : "input"), input, resultLabel, result));
        el.dataset.call = e.call_id;
        const call = { el, result, input, hooks, at, name: e.name, took: $(".took", el) };
        this.calls.set(e.call_id, call);
        a.calls.push(call);
        a.text = null;
        break;
      }
      case "tool_finished": {
        const r = e.result || {};
        let call = this.calls.get(r.call_id);
        if (!call) {
          this.add("tool_started", { call_id: r.call_id, name: r.name, input: null, agent_path: e.agent_path, at_ms: e.at_ms });
          call = this.calls.get(r.call_id);
        }
        call.result.replaceChildren(Array.isArray(r.content) ? contentView(r.content) : h("pre", {}, pretty(r.content)));
        call.done = true;
        call.el.classList.toggle("error", !!r.is_error);
        const tags = [r.is_error && h("span", { class: "tag error" }, "error"), r.mocked && h("span", { class: "tag mock" }, "answered by a hook")].filter(Boolean);
        call.took.replaceChildren(duration(at - call.at), ...tags.map((t) => [" ", t]).flat());
        break;
      }
      case "hook_decision": {
        const ran = this.ranBy(e.hook, e.event);
        const line = h("div", { class: "hook-line" },
          h("span", { class: `tag ${tone(e.decision)}` }, e.decision), " ",
          h("b", {}, e.hook), h("span", { class: "sub" }, ` on ${e.event}`),
          ran ? h("span", { class: "sub took" }, ` · ${micros(ran.duration_us)}`) : "",
          e.detail ? [" — ", e.detail] : "");
        const call = e.call_id && this.calls.get(e.call_id);
        if (call) call.hooks.append(line);
        else if (e.call_id) this.pendingHooks(e.call_id).append(line);
        else this.item(a, "hook", [h("b", {}, "Hook"), e.hook], line);
        break;
      }
      case "hook_failed":
        this.item(a, "fail", [h("b", {}, "Hook failed"), h("span", {}, `${e.hook} on ${e.event}`)], h("div", { class: "body" }, e.error));
        break;
      case "state_patch": {
        // The state a run starts with is recorded as one patch from nothing.
        const start = !a.step && (e.patch || []).length === 1 && e.patch[0].path === "" && sourceText(e.source) === "system";
        this.item(a, "state", [h("b", {}, "State"), h("span", {}, start ? "as the run began" : `changed by ${sourceText(e.source)}`)],
          h("div", { class: "diff" }, (e.patch || []).map((op) => h("div", { class: op.op }, patchLine(op)))));
        break;
      }
      case "compacted":
        this.item(a, "compact", [h("b", {}, "Compacted"), h("span", {}, `${e.removed} messages, ${typeof e.strategy === "string" ? e.strategy : JSON.stringify(e.strategy)}`)],
          h("pre", {}, e.summary || ""));
        break;
      case "custom":
        if (e.name === "hook_ran") this.hookRan(a, e.data || {});
        else this.item(a, "custom", [h("b", {}, e.name)], h("pre", {}, pretty(e.data)));
        break;
      case "awaiting_approval":
        for (const p of e.pending || []) {
          const call = this.calls.get(p.call_id);
          if (call && !call.done) call.result.replaceChildren(h("span", { class: "tag ask" }, "waiting for a person's approval"));
        }
        this.item(a, "approval-item", [h("b", {}, "Waiting for a person")],
          h("div", {}, (e.pending || []).map((p) => h("div", {}, h("b", {}, p.tool), " ", h("span", { class: "sub" }, p.reason || "")))));
        break;
      case "approval_resolved": {
        const d = e.decision || {};
        const verdict = d.decision || d.kind || Object.keys(d).find((k) => k !== "call_id") || "decided";
        this.item(a, "approval-item", [h("b", {}, "Decided"), h("span", { class: `tag ${verdict}` }, verdict), h("span", {}, `by ${e.by}`)],
          d.reason ? h("div", { class: "body" }, d.reason) : "");
        break;
      }
      case "run_finished":
        if (e.stop?.kind === "awaiting_approval") break;
        this.item(a, "end", [h("b", {}, "Finished"), h("span", {}, stopText(e.stop))]);
        if (a.el && a !== this.agents.get(this.rootPath)) a.el.open = false;
        a.ended = true;
        break;
      case "run_failed":
        this.item(a, "fail", [h("b", {}, "Failed")], h("div", { class: "body" }, e.error));
        a.ended = true;
        break;
      default:
        break;
    }
    this.lastAt = at;
  }

  // A hook ran (the server records each run with its duration): listed in its step, and
  // kept for the decision it may have taken.
  hookRan(a, r) {
    this.runs ??= [];
    this.runs.push(r);
    if (this.runs.length > 64) this.runs.shift();
    const step = a.step || a;
    if (!step.hooksRan) {
      const list = h("span", { class: "hooks-ran" });
      const count = h("span", { class: "sub" });
      this.item(a, "hook ran", [h("b", {}, "Hooks"), count], list);
      step.hooksRan = { list, count, n: 0 };
    }
    const ran = step.hooksRan;
    ran.n++;
    ran.count.textContent = `${ran.n} ran`;
    // What it changed of the event, by the names of the event's fields, and whether it decided.
    const fields = Array.isArray(r.changed) ? r.changed.filter((f) => f !== "decision") : [];
    const decided = Array.isArray(r.changed) && r.changed.includes("decision");
    const changed = [
      fields.length ? [" ", h("span", { class: "tag changed", title: `${r.hook} changed ${fields.join(", ")} of ${r.event}` }, `changed ${fields.join(", ")}`)] : "",
      decided ? [" ", h("span", { class: "tag changed", title: `${r.hook} took a decision on ${r.event}` }, "decided")] : "",
    ];
    ran.list.append(h("span", { class: "hook-run", title: `${r.hook} on ${r.event}` }, h("b", {}, r.hook), ` ${r.event} `, h("span", { class: "sub" }, micros(r.duration_us)), changed));
  }

  // The latest run of `hook` on `event` not yet matched to a decision.
  ranBy(hook, event) {
    const runs = this.runs || [];
    for (let i = runs.length - 1; i >= 0; i--) {
      const r = runs[i];
      if (!r.matched && r.hook === hook && r.event === event) { r.matched = true; return r; }
    }
    return null;
  }

  // Hook decisions on a call that arrive before the call starts (BeforeTool) wait here.
  pendingHooks(callId) {
    this.waiting ??= new Map();
    let el = this.waiting.get(callId);
    if (!el) { el = h("div", { class: "hooks" }); this.waiting.set(callId, el); }
    return el;
  }
}

// The colour of a hook's decision: what stopped a call, what changed it, what let it be.
function tone(decision) {
  const d = String(decision);
  if (/^(blocked|denied|stopped|rejected)/.test(d)) return "block";
  if (/^(mocked|asked|rewrote|answered|recovered)/.test(d)) return "mock";
  if (/^(allowed|approved)/.test(d)) return "approve";
  return "";
}

function sourceText(source) {
  if (!source) return "the run";
  if (typeof source === "string") return source;
  if (source.kind) return [source.kind, source.name || source.hook || ""].filter(Boolean).join(" ");
  return Object.entries(source).map(([k, v]) => (typeof v === "string" ? `${k} ${v}` : k)).join(", ");
}

function patchLine(op) {
  const sign = { add: "+", remove: "−", replace: "~", move: "→", copy: "⧉", test: "?" }[op.op] || op.op;
  const value = op.value === undefined ? "" : ` ${JSON.stringify(op.value)}`;
  const from = op.from ? ` from ${op.from}` : "";
  return `${sign} ${op.path}${from}${value}`;
}

// A stop reason (`{"kind": "final_answer"}`, `{"kind": "guard", "reason": ...}`, ...) in words.
function stopText(stop) {
  if (!stop) return "";
  if (typeof stop === "string") return stop.replaceAll("_", " ");
  const kind = String(stop.kind || Object.keys(stop)[0] || "").replaceAll("_", " ");
  if (stop.kind === "awaiting_approval") return "paused for a person's approval";
  const why = stop.reason || stop.message || stop.by || "";
  return why ? `${kind}: ${why}` : kind;
}

function runPage(runId, s) {
  const title = h("h1", {}, "Run ", h("span", { class: "mono" }, runId.slice(0, 8)));
  const status = h("span");
  const actions = h("div", { class: "actions" });
  const summary = h("dl", { class: "summary" });
  const approvals = h("div");
  const outcome = h("div");
  const timeline = h("div", { class: "timeline panel", "aria-live": "polite" });
  const forkPanel = h("div", { id: "fork-panel" });
  main.append(h("div", { class: "head" }, h("a", { href: "#/" }, "← Runs"), title, status, actions), summary, approvals, outcome, h("div", { id: "replay-panel" }), forkPanel, timeline);

  const t = new Timeline(timeline, null);
  let view = null;
  t.onFork = (n) => { if (view && view.status !== "running") openFork(forkPanel, view, n); else toast("A running run is forked once it has stopped", "error"); };
  const show = (v) => {
    view = v;
    status.replaceChildren(pill(v.status));
    const field = (k, val, attrs = {}) => h("div", {}, h("dt", {}, k), h("dd", attrs, val));
    summary.replaceChildren(
      field("Agent", v.agent),
      field("Run", v.run_id, { class: "mono", title: v.run_id }),
      field("Session", v.session_id || "—", { class: "mono", title: v.session_id || "" }),
      field("Steps", String(v.step)),
      field("Tokens", usageText(v.usage)),
      field("Cost", costText(v)),
      v.parent_run_id ? field("Parent", h("a", { href: `#/runs/${encodeURIComponent(v.parent_run_id)}` }, v.parent_run_id.slice(0, 8))) : "",
      v.metadata?.forked_from ? field("Forked from", h("a", { id: "forked-from", href: `#/runs/${encodeURIComponent(v.metadata.forked_from)}` }, `${String(v.metadata.forked_from).slice(0, 8)}, step ${v.metadata.forked_at_step ?? 0}`)) : "",
    );
    actions.replaceChildren(...runActions(v, reload, (n) => openFork(forkPanel, v, n)));
    approvals.replaceChildren(...(v.pending?.length ? [approvalPanel(v, reload)] : []));
    outcome.replaceChildren(...outcomePanel(v));
  };
  const reload = () => api(`/v1/runs/${encodeURIComponent(runId)}`).then(show).catch((e) => toast(e.message, "error"));
  const events = `/v1/runs/${encodeURIComponent(runId)}/events`;
  const onEvent = (kind, e) => {
    t.add(kind, e);
    if (["awaiting_approval", "run_finished", "run_failed", "approval_resolved"].includes(kind) && !(e.agent_path || "").includes("/")) reload();
    if (kind === "step_finished" && view && !(e.agent_path || "").includes("/")) {
      view.step = Math.max(view.step, e.step);
      summary.children[3].lastChild.textContent = String(view.step);
    }
  };
  reload().then(async () => {
    const from = view && view.step > LIST_STEPS_AFTER ? await listSteps(runId, events, t, onEvent, s.signal) : "";
    follow(events, onEvent, s.signal, setLive, from).then(reload);
  });
}

// A run longer than this many steps is shown from its list of steps (`/steps`): the earlier
// ones folded, each one's events fetched when a person opens it; only the last TAIL_STEPS are
// streamed with their events. So a run of 10,000 steps costs its list and a few steps.
const LIST_STEPS_AFTER = 200;
const TAIL_STEPS = 20;

// Lists a long run's earlier steps into `t` (its opening first), and returns the id of the
// event the stream of its last steps goes on after ("" to stream it whole).
async function listSteps(runId, events, t, onEvent, signal) {
  let steps;
  try {
    steps = (await api(`/v1/runs/${encodeURIComponent(runId)}/steps`)).steps;
  } catch (e) {
    toast(`${e.message}; streaming the run whole`, "error");
    return "";
  }
  if (steps.length <= TAIL_STEPS) return "";
  // The run's opening: what came before its first step (its input, its start state).
  await follow(`${events}?until=${steps[0].first - 1}`, onEvent, signal);
  const range = (s, each) => follow(`${events}?until=${s.last}`, each, signal, () => {}, String(s.first - 1));
  t.listSteps(steps.slice(0, -TAIL_STEPS), range);
  return String(steps[steps.length - TAIL_STEPS].first - 1);
}

function outcomePanel(v) {
  if (v.error) return [h("div", { class: "panel output error" }, h("h2", {}, "Failed"), h("pre", {}, v.error))];
  if (v.status === "finished" && (v.text || v.output !== undefined)) {
    const out = v.text ?? (typeof v.output === "string" ? v.output : pretty(v.output));
    return [h("div", { class: "panel output" }, h("h2", {}, "Output"), h("pre", {}, out))];
  }
  if (v.stop && v.status !== "awaiting_approval" && v.status !== "finished") {
    return [h("div", { class: "panel output" }, h("h2", {}, "Stopped"), h("div", {}, stopText(v.stop)))];
  }
  return [];
}

function runActions(v, reload, fork) {
  const id = encodeURIComponent(v.run_id);
  const act = (label, path, cls = "") => h("button", {
    type: "button", class: cls, onclick: async (ev) => {
      ev.target.disabled = true;
      try { await post(`/v1/runs/${id}/${path}`); toast(`${label}: done`); } catch (e) { toast(e.message, "error"); }
      ev.target.disabled = false;
      reload();
    },
  }, label);
  const out = [];
  if (v.status !== "running") {
    out.push(h("button", { type: "button", id: "replay", title: "Run it again with the hooks as they are now: recorded model turns and tool results, nothing called, nothing stored", onclick: (ev) => replay(v, ev.target) }, "Replay with today's hooks"));
    out.push(h("button", { type: "button", id: "fork", title: "Start a new run from the end of a step, with another input or state", onclick: () => fork(v.step) }, "Fork…"));
  }
  if (v.status === "running" || v.status === "awaiting_approval") out.push(act("Cancel", "cancel", "danger"));
  if (v.status === "failed" || v.status === "cancelled") out.push(act("Resume", "resume", "primary"));
  return out;
}

// A fork of a stopped run: a new run from the end of step `n` (0: its start), with another
// input or state if given; the page moves to the new run.
function openFork(panel, v, n) {
  const steps = [];
  for (let i = 0; i <= v.step; i++) steps.push(h("option", { value: String(i), selected: i === n }, i === 0 ? "the start (replace the input)" : `the end of step ${i}`));
  const step = h("select", { id: "fork-step", "aria-label": "Fork from" }, steps);
  const input = h("textarea", { id: "fork-input", rows: "3", "aria-label": "Input",
    placeholder: "At the start: the input instead of the run's. After a step: the user's next message (needed when the step ended with the model's answer)." });
  const state = h("textarea", { id: "fork-state", rows: "3", class: "mono", "aria-label": "State (JSON)",
    placeholder: "State as JSON, instead of the state as it was then (leave empty to keep it)" });
  const error = h("div", { class: "bad", role: "alert" });
  const start = h("button", { type: "button", class: "primary", id: "fork-start" }, "Start the fork");
  const close = h("button", { type: "button", class: "ghost", onclick: () => panel.replaceChildren() }, "Close");
  start.addEventListener("click", async () => {
    const body = { step: Number(step.value) };
    if (input.value.trim()) body.input = input.value;
    if (state.value.trim()) {
      try { body.state = JSON.parse(state.value); } catch (e) { error.textContent = `The state is not JSON: ${e.message}`; state.focus(); return; }
    }
    start.disabled = true;
    error.textContent = "";
    try {
      const forked = await post(`/v1/runs/${encodeURIComponent(v.run_id)}/fork`, body);
      toast(`Forked: run ${forked.run_id.slice(0, 8)}`);
      location.hash = `#/runs/${encodeURIComponent(forked.run_id)}`;
    } catch (e) {
      error.textContent = e.message;
      start.disabled = false;
    }
  });
  panel.replaceChildren(h("div", { class: "panel output fork", role: "region", "aria-label": "Fork" },
    h("h2", {}, "Fork this run"),
    h("div", { class: "sub" }, "A new run starts from the history and state as they were at that point; this run stays as it is."),
    h("label", {}, "From ", step), input, state, error,
    h("div", { class: "row" }, start, close)));
  (n > 0 ? input : step).focus();
  panel.scrollIntoView({ block: "nearest" });
}

// The replay of a run beside its recording: each call's outcome then and now, and the end.
async function replay(v, button) {
  const panel = $("#replay-panel");
  button.disabled = true;
  panel.replaceChildren(h("div", { class: "panel output" }, h("span", { class: "sub" }, "Replaying…")));
  try {
    const r = await post(`/v1/runs/${encodeURIComponent(v.run_id)}/replay`);
    const outcome = (o) => h("div", {},
      o.decisions.map((d) => h("div", {}, h("span", { class: `tag ${tone(d)}` }, d.split(":")[0]), " ", d.slice(d.indexOf(":") + 1).trim())),
      o.content === null || o.content === undefined ? h("div", { class: "sub" }, "no result") : h("pre", { class: o.is_error ? "bad" : "" }, o.content));
    const rows = r.calls.map((c) => h("tr", { class: c.same ? "same" : "differs", "data-call": c.call_id },
      h("td", {}, h("b", {}, c.tool), h("div", { class: "mono sub" }, c.call_id), h("pre", {}, pretty(c.arguments))),
      h("td", {}, outcome(c.recorded)),
      h("td", {}, outcome(c.replay)),
      h("td", {}, c.same ? h("span", { class: "tag approve" }, "same") : h("span", { class: "tag block" }, "differs"))));
    const endSame = r.recorded_end === r.replay_end;
    rows.push(h("tr", { class: endSame ? "same" : "differs", "data-call": "end" },
      h("td", {}, h("b", {}, "End")),
      h("td", {}, r.recorded_end || "did not end"),
      h("td", {}, r.replay_end || "did not end"),
      h("td", {}, endSame ? h("span", { class: "tag approve" }, "same") : h("span", { class: "tag block" }, "differs"))));
    panel.replaceChildren(h("div", { class: "panel output replay" },
      h("h2", {}, r.differences ? `Replay: ${r.differences} difference${r.differences > 1 ? "s" : ""} with today's hooks` : "Replay: the same with today's hooks"),
      h("div", { class: "sub" }, `${r.model_turns} recorded model turn${r.model_turns === 1 ? "" : "s"} played back; no model called, no tool run, nothing stored.`),
      h("div", { class: "scroll-x" }, h("table", { class: "compare" },
        h("thead", {}, h("tr", {}, h("th", {}, "Call"), h("th", {}, "Recorded"), h("th", {}, "Now"), h("th", {}, ""))),
        h("tbody", {}, rows)))));
  } catch (e) {
    panel.replaceChildren(h("div", { class: "panel output error" }, h("h2", {}, "Replay failed"), h("pre", {}, e.message)));
  }
  button.disabled = false;
}

function approvalPanel(v, done) {
  const id = encodeURIComponent(v.run_id);
  const decide = async (decisions) => {
    try {
      await post(`/v1/runs/${id}/approvals`, { decisions });
      toast("Decided; the run goes on");
    } catch (e) { toast(e.message, "error"); }
    done();
  };
  return h("div", { class: "panel approval", role: "region", "aria-label": "Approvals" },
    h("h2", {}, `Waiting for a person: ${v.pending.length} call${v.pending.length > 1 ? "s" : ""}`),
    v.pending.map((p) => {
      const reason = h("input", { type: "text", placeholder: "Reason (the model sees it)", "aria-label": `Reason for ${p.tool}` });
      const d = (decision) => () => decide([{ call_id: p.call_id, decision, reason: reason.value || undefined }]);
      return h("div", { class: "call", "data-call": p.call_id },
        h("div", {}, h("b", {}, p.tool), " ", h("span", { class: "mono sub" }, p.call_id), p.reason ? h("div", { class: "sub" }, p.reason) : ""),
        h("pre", {}, pretty(p.input)),
        h("div", { class: "row" },
          h("button", { type: "button", class: "primary", "data-decision": "approve", onclick: d("approve") }, "Approve"),
          reason,
          h("button", { type: "button", "data-decision": "reject", onclick: d("reject") }, "Reject"),
          h("button", { type: "button", class: "danger", "data-decision": "reject_and_stop", onclick: d("reject_and_stop") }, "Reject and stop")));
    }));
}

// ---------------------------------------------------------------- the approvals inbox

async function approvalsPage(s) {
  const list = h("div");
  main.append(h("div", { class: "head" }, h("h1", {}, "Approvals"), h("span", { class: "sub" }, "runs waiting for a person")), list);
  const refresh = async () => {
    try {
      const page = await api("/v1/runs?status=awaiting_approval&limit=100");
      const views = await Promise.all(page.runs.map((r) => api(`/v1/runs/${encodeURIComponent(r.run_id)}`).catch(() => null)));
      const waiting = views.filter((v) => v && v.pending?.length);
      if (!waiting.length) { list.replaceChildren(h("div", { class: "panel empty" }, "Nothing waits for a person.")); return; }
      // Keep what a person is typing: only redraw when the set of calls changed.
      const key = waiting.map((v) => v.pending.map((p) => p.call_id).join()).join("|");
      if (list.dataset.key === key) return;
      list.dataset.key = key;
      list.replaceChildren(...waiting.map((v) => h("div", {},
        h("div", { class: "sub" }, h("a", { href: `#/runs/${encodeURIComponent(v.run_id)}` }, `${v.agent} · ${v.run_id.slice(0, 8)}`)),
        approvalPanel(v, refresh))));
    } catch (e) { toast(e.message, "error"); }
  };
  refresh();
  s.every(2000, refresh);
}

async function countApprovals() {
  try {
    const page = await api("/v1/runs?status=awaiting_approval&limit=100");
    const c = $("#approvals-count");
    c.hidden = page.runs.length === 0;
    c.textContent = page.runs.length >= 100 ? "99+" : String(page.runs.length);
  } catch { /* the page shows the error where it matters */ }
}

// ---------------------------------------------------------------- chat

async function chatPage(name, s) {
  const agents = await api("/v1/agents").catch((e) => { toast(e.message, "error"); return []; });
  const chosen = name || (agents.find((a) => a.default) || agents[0] || {}).name;
  if (!chosen) { main.append(h("p", { class: "empty" }, "This server serves no agents.")); return; }
  const key = `agentry.chat.${chosen}`;
  let session = sessionStorage.getItem(key) || crypto.randomUUID();
  sessionStorage.setItem(key, session);
  const turns = h("div", { class: "turns", "aria-live": "polite" });
  const input = h("textarea", { placeholder: `Message ${chosen}  (Enter sends, Shift+Enter a new line)`, "aria-label": "Message", rows: "2" });
  const send = h("button", { type: "submit", class: "primary" }, "Send");
  const fresh = h("button", { type: "button", class: "ghost", onclick: () => { sessionStorage.removeItem(key); route(); } }, "New conversation");
  main.append(
    h("div", { class: "head" }, h("h1", {}, "Chat"), h("span", { class: "sub" }, `with ${chosen}`), h("div", { class: "actions" }, fresh)),
    h("div", { class: "chat" },
      h("nav", { class: "panel agents", "aria-label": "Agents" }, agents.map((a) => h("a", { href: `#/chat/${encodeURIComponent(a.name)}`, class: a.name === chosen ? "active" : "" }, a.name, a.description ? h("small", {}, a.description) : ""))),
      h("form", { class: "panel conversation", onsubmit: (e) => { e.preventDefault(); say(); } }, turns, h("div", { class: "compose" }, input, send))));
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); say(); } });
  input.focus();

  async function say() {
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    send.disabled = true;
    turns.append(h("div", { class: "turn user" }, text));
    const answer = h("div", { class: "turn agent cursor" });
    turns.append(answer);
    try {
      const run = await post("/v1/runs", { agent: chosen, input: text, session_id: session });
      const link = h("a", { href: `#/runs/${encodeURIComponent(run.run_id)}` }, "open the run");
      let said = "";
      await follow(run.events_url, (kind, e) => {
        if ((e.agent_path || "").includes("/")) return;
        if (kind === "text_delta") { said += e.text; answer.textContent = said; }
        if (kind === "message" && e.message?.role === "assistant" && e.message.content) { said = contentText(e.message.content); answer.textContent = said; }
        if (kind === "awaiting_approval") {
          answer.append(h("span", { class: "links" }, "Waiting for a person: ", h("a", { href: "#/approvals" }, "approve it"), " or ", link.cloneNode(true)));
        }
        if (kind === "run_failed") { answer.classList.add("error"); answer.textContent = e.error; }
      }, s.signal);
      answer.classList.remove("cursor");
      answer.append(h("span", { class: "links" }, link));
    } catch (e) {
      answer.classList.remove("cursor");
      answer.classList.add("error");
      answer.textContent = e.message;
    }
    send.disabled = false;
    turns.scrollTop = turns.scrollHeight;
  }
}

// ---------------------------------------------------------------- start

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("agentry.theme", theme);
}
applyTheme(localStorage.getItem("agentry.theme") || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
$("#theme").onclick = () => applyTheme(document.documentElement.dataset.theme === "dark" ? "light" : "dark");

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && e.target.matches("input[type=search]")) { e.target.blur(); return; }
  if (e.target.matches("input, textarea, select")) return;
  if (e.key === "/") { const s = $("input[type=search]"); if (s) { e.preventDefault(); s.focus(); } }
  if (e.key === "j" || e.key === "k") {
    const rows = [...document.querySelectorAll("tbody tr[tabindex]")];
    if (!rows.length) return;
    const at = rows.indexOf(document.activeElement);
    const next = rows[Math.max(0, Math.min(rows.length - 1, at + (e.key === "j" ? 1 : -1)))] || rows[0];
    next.focus();
  }
});

window.addEventListener("hashchange", route);
route();
countApprovals();
setInterval(countApprovals, 3000);
