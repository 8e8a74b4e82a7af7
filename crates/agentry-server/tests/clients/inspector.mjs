// Drives the run inspector in headless Chromium with playwright-core: the runs list (a run
// started meanwhile appears without a reload), a paused run approved from its page, the
// timeline of a run with a sub-agent and a blocked call, state changes, a fork from a step,
// the approvals inbox, chat, dark theme and a narrow window. Prints what it saw as JSON; writes screenshots.
//   node inspector.mjs URL   (env: RUNS = JSON {ops, team, notes, echo}, SCREENSHOTS = dir,
//                             CHROMIUM = the browser, NODE_MODULES = where playwright-core is)
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_MODULES, "noop.js"));
const { chromium } = require("playwright-core");

const url = process.argv[2];
const runs = JSON.parse(process.env.RUNS);
const shots = process.env.SCREENSHOTS;
const seen = {};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const errors = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, colorScheme: "light" });
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.setDefaultTimeout(15000);
  const shot = (name, p = page) => p.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

  // The runs list, live.
  await page.goto(`${url}/`);
  await page.waitForSelector(`tr[data-run="${runs.ops}"]`);
  seen.rows = await page.locator("tr[data-run]").count();
  seen.ops_status = await page.locator(`tr[data-run="${runs.ops}"] .pill`).getAttribute("data-status");
  seen.long_tokens = await page.locator(`tr[data-run="${runs.long}"] td.tokens`).textContent();
  seen.long_cost = await page.locator(`tr[data-run="${runs.long}"] td.cost`).textContent();
  seen.echo_cost = await page.locator(`tr[data-run="${runs.echo}"] td.cost`).textContent();
  const started = await page.evaluate(async (u) => {
    const r = await fetch(`${u}/v1/runs`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ agent: "echo", input: "late", wait: true }) });
    return (await r.json()).run_id;
  }, url);
  await page.waitForSelector(`tr[data-run="${started}"] .pill[data-status="finished"]`);
  seen.late_run_appeared = true;
  await page.fill("input[type=search]", runs.team.slice(0, 8));
  seen.search_rows = await page.locator("tr[data-run]").count();
  await page.fill("input[type=search]", "");
  await page.keyboard.press("Escape");
  await shot("runs");

  // The keyboard: `/` focuses search, j moves down the rows, Enter opens one.
  await page.keyboard.press("/");
  seen.slash_focuses_search = await page.evaluate(() => document.activeElement.matches("input[type=search]"));
  await page.locator("tr[data-run]").first().focus();
  await page.keyboard.press("Enter");
  await page.waitForURL(/#\/runs\//);
  seen.enter_opens_a_run = true;

  // A run whose input carries an image: the page shows it, its bytes read by digest.
  await page.goto(`${url}/#/runs/${runs.picture}`);
  await page.waitForSelector("img.media");
  await page.waitForFunction(() => document.querySelector("img.media").naturalWidth > 0);
  seen.image_width = await page.evaluate(() => document.querySelector("img.media").naturalWidth);
  await shot("media");

  // A paused run: its approval panel, approved from the page; the timeline goes on live.
  await page.goto(`${url}/#/runs/${runs.ops}`);
  await page.waitForSelector(`.approval .call[data-call="c1"]`);
  seen.pending_input = await page.locator(".approval pre").first().textContent();
  await shot("run-waiting");
  await page.click(`.approval [data-decision="approve"]`);
  await page.waitForSelector(`.head .pill[data-status="finished"]`);
  await page.waitForSelector(`.item.tool[data-call="c1"] .result pre`);
  seen.ops_result = await page.locator(`.item.tool[data-call="c1"] .result pre`).textContent();
  seen.ops_output = await page.locator(".output pre").textContent();
  seen.ops_timeline = await page.locator(".timeline .item .label b").allTextContents();
  await shot("run-approved");

  // A sub-agent nested, a call a hook blocked with the hook's name and reason.
  await page.goto(`${url}/#/runs/${runs.team}`);
  await page.waitForSelector(".timeline details.agent");
  await page.waitForSelector(".item.tool .hook-line");
  seen.subagent = await page.locator(".timeline details.agent > summary").first().textContent();
  seen.subagent_text = await page.locator(".timeline details.agent .item.text .body").first().textContent();
  seen.hook_line = await page.locator(".item.tool .hook-line").first().textContent();
  seen.hooks_ran = await page.locator(".item.ran").allTextContents();
  const folded = () => page.locator(".timeline details.agent").first().evaluate((d) => !d.open);
  seen.subagent_folded_when_done = await folded();
  await page.locator(".timeline details.agent > summary").first().click();
  seen.subagent_unfolds = !(await folded());
  await shot("run-subagent");

  // A call whose input a hook rewrote: what the model asked beside what ran, and the hook's
  // change among the hooks that ran.
  if (runs.tidy) {
    await page.goto(`${url}/#/runs/${runs.tidy}`);
    await page.waitForSelector(".item.tool pre.asked");
    await page.waitForSelector(".hook-run .tag.changed");
    seen.tidy_asked = await page.locator(".item.tool pre.asked").textContent();
    seen.tidy_input = await page.locator(".item.tool .kv > pre").nth(1).textContent();
    seen.tidy_changed = await page.locator(".hook-run .tag.changed").allTextContents();
    await shot("run-rewritten");
  }

  // Two calls of one sub-agent at once: a run of it in each call.
  if (runs.pair) {
    await page.goto(`${url}/#/runs/${runs.pair}`);
    await page.waitForFunction(() => document.querySelectorAll(".timeline details.agent").length >= 2);
    await page.locator(".timeline .item.end").last().waitFor();
    seen.pair_agents = await page.locator(".timeline details.agent").count();
    seen.pair_in_calls = await page.locator(".timeline .item.tool").evaluateAll((calls) => calls.map((c) => c.querySelectorAll(":scope > details.agent").length));
    seen.pair_texts = await page.locator(".timeline details.agent").evaluateAll((runs) => runs.map((r) => r.querySelector(".item.text")?.textContent || ""));
  }

  // State changes as diffs.
  await page.goto(`${url}/#/runs/${runs.notes}`);
  await page.waitForSelector(".item.state .diff div");
  seen.state_diffs = await page.locator(".item.state .diff div").allTextContents();

  // A fork from the end of step 1 of the notes run, with another state: the page moves to the
  // new run, which names where it came from and notes the rest onto that state.
  await page.hover(`.timeline details.step[data-step="1"] > summary`);
  await page.click(`.timeline details.step[data-step="1"] .fork-here`);
  await page.waitForSelector("#fork-panel .fork");
  seen.fork_from = await page.locator("#fork-step").inputValue();
  await page.fill("#fork-state", '{"items": ["bread"]}');
  await shot("fork-form");
  await page.click("#fork-start");
  await page.waitForSelector("#forked-from");
  await page.waitForSelector(`.head .pill[data-status="finished"]`);
  seen.forked_from = await page.locator("#forked-from").textContent();
  seen.fork_url_is_new = !page.url().includes(runs.notes);
  await page.waitForFunction(() => document.querySelectorAll(".item.state .diff div").length >= 2);
  seen.fork_state_diffs = await page.locator(".item.state .diff div").allTextContents();
  seen.fork_steps = await page.locator(".timeline details.step").evaluateAll((els) => els.map((e) => e.dataset.step));
  seen.fork_output = await page.locator(".output pre").textContent();
  await shot("run-forked");
  await page.click("#forked-from");
  await page.waitForSelector(`.timeline details.step[data-step="1"]`);
  seen.fork_back_to_original = page.url().includes(runs.notes);

  // The approvals inbox: a second paused run, rejected with a reason.
  await page.goto(`${url}/#/approvals`);
  await page.waitForSelector(`.approval .call[data-call="c1"]`);
  seen.inbox_count = await page.locator(".approval").count();
  await shot("approvals");
  await page.fill(`.approval input`, "not during business hours");
  await page.click(`.approval [data-decision="reject"]`);
  await page.waitForSelector(".empty");
  seen.inbox_empty_after = await page.locator(".empty").textContent();

  // Chat.
  await page.goto(`${url}/#/chat/echo`);
  await page.fill("textarea", "hi there");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".turn.agent .links a");
  seen.chat_answer = await page.locator(".turn.agent").first().evaluate((t) => t.firstChild.textContent);
  await page.fill("textarea", "again");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.querySelectorAll(".turn.agent .links a").length === 2);
  seen.chat_second = await page.locator(".turn.agent").nth(1).evaluate((t) => t.firstChild.textContent);
  await shot("chat");

  // Dark, and narrow.
  await page.goto(`${url}/#/runs/${runs.team}`);
  await page.waitForSelector(".timeline details.agent");
  await page.click("#theme");
  seen.theme = await page.evaluate(() => document.documentElement.dataset.theme);
  seen.dark_background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await shot("run-dark");
  const narrow = await context.newPage();
  await narrow.setViewportSize({ width: 390, height: 800 });
  await narrow.goto(`${url}/`);
  await narrow.waitForSelector("tr[data-run]");
  seen.narrow_overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await shot("runs-narrow", narrow);

  // Replay with today's hooks: the same for a run the hooks did not change; side by side where
  // a new guard blocks calls.
  if (process.env.TODAY_URL) {
    const today = await context.newPage();
    today.on("pageerror", (e) => errors.push(String(e)));
    await today.goto(`${process.env.TODAY_URL}/#/runs/${runs.echo}`);
    await today.click("#replay");
    await today.waitForSelector(".replay h2");
    seen.replay_same = await today.locator(".replay h2").textContent();
    await today.goto(`${process.env.TODAY_URL}/#/runs/${runs.notes}`);
    await today.click("#replay");
    await today.waitForSelector(".replay h2");
    seen.replay_heading = await today.locator(".replay h2").textContent();
    seen.replay_rows = await today.locator(".replay tbody tr").allTextContents();
    await shot("replay", today);
  }

  // A server with a token: the page asks for it once, then reads with it.
  if (process.env.TOKEN_URL) {
    const guarded = await context.newPage();
    guarded.on("pageerror", (e) => errors.push(String(e)));
    await guarded.goto(`${process.env.TOKEN_URL}/`);
    await guarded.waitForSelector("#token-dialog[open]");
    await shot("token", guarded);
    await guarded.fill("#token-input", process.env.TOKEN);
    await guarded.click("#token-form button[type=submit]");
    await guarded.waitForSelector("tr[data-run]");
    seen.token_rows = await guarded.locator("tr[data-run]").count();
    seen.token_kept_in = await guarded.evaluate(() => (sessionStorage.getItem("agentry.token") ? "session" : "") + (document.cookie ? " cookie" : ""));
  }

  // A long run: its page loads, and scrolls to its end, within the budget the test measures.
  if (runs.long) {
    const long = await context.newPage();
    long.on("pageerror", (e) => errors.push(String(e)));
    const t0 = Date.now();
    await long.goto(`${url}/#/runs/${runs.long}`);
    await long.waitForSelector(`.head .pill[data-status="finished"]`);
    await long.waitForFunction((n) => document.querySelectorAll(".timeline details.step").length >= n, runs.long_steps, { timeout: 120000 });
    await long.waitForSelector(".timeline .item.end");
    seen.long_load_ms = Date.now() - t0;
    seen.long_steps_shown = await long.locator(".timeline details.step").count();
    seen.long_step_meta = await long.locator(`.timeline details.step[data-step="1"] .meta`).first().textContent();
    // Its earlier steps are listed, not loaded: only the last ones' events are in the page.
    seen.long_steps_listed = await long.locator(".timeline details.step[data-lazy]").count();
    seen.long_tools_in_page = await long.locator(".timeline .item.tool").count();
    const t1 = Date.now();
    for (let i = 0; i < 20; i++) await long.mouse.wheel(0, 4000);
    await long.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await long.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    seen.long_scroll_ms = Date.now() - t1;
    await long.screenshot({ path: path.join(shots, "run-long-end.png") });
    // A listed step opened by keyboard: its events fetched then, shown as a streamed step's.
    const early = long.locator(`.timeline > details.step[data-step="2"]`);
    await early.locator(":scope > summary").focus();
    await long.keyboard.press("Enter");
    await early.locator(".item.tool").waitFor();
    await long.waitForFunction(() => !document.querySelector(`.timeline > details.step[data-step="2"] .loading`));
    seen.long_step2_open = await early.evaluate((el) => el.open && !("lazy" in el.dataset));
    seen.long_step2_tool = await early.locator(".item.tool b").first().textContent();
    seen.long_step2_meta = await early.locator(":scope > summary .meta").textContent();
    seen.long_step2_text = await early.locator(".items").first().textContent();
  }

  // A run of a thousand sub-agent calls: each call's run nested in its step, from the store.
  if (runs.crowd) {
    const crowd = await context.newPage();
    crowd.on("pageerror", (e) => errors.push(String(e)));
    const t0 = Date.now();
    await crowd.goto(`${url}/#/runs/${runs.crowd}`);
    await crowd.waitForSelector(`.head .pill[data-status="finished"]`);
    await crowd.waitForFunction((n) => document.querySelectorAll(".timeline details.step:not(details.agent details.step)").length >= n, runs.crowd_calls + 1, { timeout: 120000 });
    // The run's own end, after its sub-agents' (folded, so hidden).
    await crowd.locator(".timeline .item.end").last().waitFor();
    seen.crowd_load_ms = Date.now() - t0;
    seen.crowd_agents_shown = await crowd.locator(".timeline details.agent").count();
    seen.crowd_steps_shown = await crowd.locator(".timeline details.step:not(details.agent details.step)").count();
    seen.crowd_last_answer = await crowd.locator(".timeline details.agent").last().locator(".item.text").last().textContent();
    const t1 = Date.now();
    for (let i = 0; i < 20; i++) await crowd.mouse.wheel(0, 4000);
    await crowd.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await crowd.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    seen.crowd_scroll_ms = Date.now() - t1;
    // The first step, listed: opened, its sub-agent's run is fetched and nested in its call.
    const first = crowd.locator(`.timeline > details.step[data-step="1"]`);
    await first.locator(":scope > summary").click();
    await first.locator("details.agent .item.end").waitFor({ state: "attached" });
    seen.crowd_first_answer = await first.locator("details.agent .item.text").last().textContent();
    seen.crowd_first_nested = await first.locator(".item.tool details.agent").count();
    await crowd.screenshot({ path: path.join(shots, "run-crowd.png") });

    // The list: runs of their own, and the sub-agents' runs when asked for.
    await crowd.goto(`${url}/#/`);
    await crowd.waitForSelector("tr[data-run]");
    seen.sub_agent_rows = await crowd.locator("tr[data-run] .tag").count();
    await crowd.check("#sub-agent-runs");
    await crowd.waitForSelector("tr[data-run] .tag");
    seen.sub_agent_rows_asked = await crowd.locator("tr[data-run] .tag").count();
  }
} finally {
  await browser.close();
}
seen.errors = errors;
console.log(JSON.stringify(seen));
