// dpal serve's page: an annotator view (claim, label, keyboard shortcuts)
// and an officer view (budget gauges, ε over time, releases, ledger
// export). It only calls the documented API with the token the user gives;
// the token stays in this tab's sessionStorage.
"use strict";

const $ = (id) => document.getElementById(id);
let token = sessionStorage.getItem("dpal-token") || "";
let role = "";
let current = null; // the claimed request {id, x}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + token } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  const text = await resp.text();
  const data = text ? JSON.parse(text) : {};
  if (!resp.ok) {
    throw new Error((data.field ? data.field + ": " : "") + (data.error || resp.status));
  }
  return data;
}

function status(msg) { $("status").textContent = msg || ""; }

// age writes a duration in seconds for people.
function age(s) {
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} days`;
}

async function signIn() {
  try {
    const me = await api("GET", "/v1/whoami");
    role = me.role;
    sessionStorage.setItem("dpal-token", token);
  } catch (e) {
    status("sign-in failed: " + e.message);
    return;
  }
  $("whoami").textContent = role + " (token " + "…" + ")";
  $("login-view").hidden = true;
  document.activeElement?.blur(); // the shortcuts ignore keys typed into inputs
  const annotator = role === "annotator" || role === "admin";
  const officer = role === "officer" || role === "admin";
  $("annotator-view").hidden = !annotator;
  $("officer-view").hidden = !officer;
  if (role === "ingest") { status("an ingest token has no page: it only sends events"); return; }
  const work = [];
  if (annotator) work.push(loadLearnerNames());
  if (officer) { $("budgets").replaceChildren(); officerCursor = ""; work.push(officerMore()); }
  work.push(projectsSignIn(role)); // projects.js
  await Promise.all(work);
}

// loadLearnerNames fills the annotator's learner list page by page (a
// store may hold thousands), showing the first learner's queue as soon as
// the first page arrives.
async function loadLearnerNames() {
  const sel = $("learner");
  sel.replaceChildren();
  let after = "";
  for (;;) {
    const page = await api("GET", "/v1/learners?limit=500" + (after ? "&after=" + encodeURIComponent(after) : ""));
    sel.append(...page.learners.map((l) => new Option(l.name, l.name)));
    $("learner-count").textContent = `${page.total} learners`;
    if (after === "") await refreshQueue();
    if (!page.next) return;
    after = page.next;
  }
}

// ---- annotator ----

async function refreshQueue() {
  const name = $("learner").value;
  if (!name) { $("queue").textContent = "no learners"; return; }
  const q = await api("GET", `/v1/learners/${name}/requests`);
  // open and unclaimed are the server's counts over the whole queue, not
  // over this page of at most 1000.
  $("queue").textContent = `${q.open} open requests (${q.unclaimed} unclaimed)` +
    (q.open > 0 ? `, oldest ${age(q.oldest_age_seconds)}` : "") +
    (q.open >= q.max ? `; the queue is full (${q.max}): new selections are masked` : "");
  return q.requests;
}

async function claimNext() {
  const name = $("learner").value;
  const requests = (await refreshQueue()) || [];
  const next = requests.find((r) => !r.claimed);
  if (!next) { $("record-box").hidden = true; $("queue").textContent += "; nothing to label"; return; }
  try {
    current = await api("POST", `/v1/learners/${name}/requests/${next.id}/claim`);
  } catch (e) { status(e.message); return; }
  $("request-id").textContent = String(current.id) + (current.record ? " (" + current.record + ")" : "");
  const rows = current.x.map((v, i) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = "x" + (i + 1);
    const td = document.createElement("td");
    td.textContent = v.toPrecision(6);
    tr.append(th, td);
    return tr;
  });
  $("record").replaceChildren(...rows);
  $("record-box").hidden = false;
}

async function label(y) {
  if (!current) return;
  const name = $("learner").value;
  try {
    await api("POST", `/v1/learners/${name}/labels`, { id: current.id, y });
    status(`request ${current.id} labelled ${y > 0 ? "+1" : "−1"}`);
  } catch (e) { status(e.message); return; }
  current = null;
  $("record-box").hidden = true;
  await claimNext();
}

// ---- officer ----

// The officer view draws learners a page at a time: each box appears at
// once and fills in as its calls return, a few learners at a time.
const officerPage = 10;
let officerCursor = ""; // the name after which the next page starts; null: no more

async function officerMore() {
  if (officerCursor === null) return;
  const page = await api("GET", `/v1/learners?limit=${officerPage}` + (officerCursor ? "&after=" + encodeURIComponent(officerCursor) : ""));
  officerCursor = page.next || null;
  const boxes = page.learners.map((l) => el("div", { class: "learner", id: "learner-" + l.name }, el("h3", {}, l.name), el("p", { class: "loading" }, "loading…")));
  $("budgets").append(...boxes);
  const shown = $("budgets").children.length;
  $("officer-count").textContent = `${shown} of ${page.total} learners shown`;
  $("more-learners").hidden = officerCursor === null;
  await pool(page.learners.map((l, i) => () => fillBox(boxes[i], l.name)), 4);
}

// pool runs the tasks, at most n at a time.
async function pool(tasks, n) {
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const t = tasks[next++];
      try { await t(); } catch (e) { status(e.message); }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
}

// fillBox draws a learner's budget and queue first, then its chart, its
// last releases and the ledger export.
async function fillBox(box, name) {
  const budget = await api("GET", `/v1/learners/${name}/budget`);
  const spent = Math.max(0, ...budget.groups.map((g) => g.epsilon));
  const total = budget.budget.epsilon;
  const frac = total > 0 ? Math.min(1, spent / total) : 0;
  const gauge = el("div", { class: "gauge" + (frac > 0.8 ? " high" : "") }, el("div", { style: `width:${(100 * frac).toFixed(1)}%` }));
  const s = budget.stats;
  box.replaceChildren(el("h3", {}, name),
    el("p", { id: "budget-" + name }, `ε spent per record ${spent.toPrecision(4)} of ${total.toPrecision(4)}`),
    gauge,
    el("p", {}, `${s.observed} events, ${s.requested} requests, ${s.labelled} labels, ${s.updates} releases`),
    queueLine(name, budget.queue));
  box.append(chart(name, budget));
  const rels = await api("GET", `/v1/learners/${name}/releases?after=${Math.max(0, s.updates - 20)}`);
  box.append(releaseTable(name, rels.releases), exportButton(name));
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

// queueLine says how full the learner's queue of open requests is.
function queueLine(name, q) {
  let text = `queue: ${q.open} open of at most ${q.max}`;
  if (q.open > 0) text += `, oldest ${age(q.oldest_age_seconds)}`;
  if (q.masked > 0) text += `; ${q.masked} selections masked while it was full`;
  return el("p", { id: "queue-" + name, class: q.open >= q.max ? "full" : "" }, text);
}

const svgNS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// chart draws ε spent per record against time, one step line per ledger
// group (cumulative over its entries), with both axes labelled, the
// budget as a dashed line and a legend.
function chart(name, budgetView) {
  const W = 560, H = 220, L = 56, R = 12, T = 12, B = 40;
  const svg = svgEl("svg", { width: W, height: H, id: "chart-" + name, role: "img" });
  svg.append(svgEl("title", {}, `${name}: ε spent per record over time, per ledger group, against the budget`));
  const series = budgetView.series || {};
  const budget = budgetView.budget.epsilon;
  const times = Object.values(series).flat().map((p) => Date.parse(p.time));
  const t0 = times.length ? Math.min(...times) : Date.now() - 60000;
  const t1 = Math.max(t0 + 1000, Date.now());
  // Each group's composed ε after each of its entries (the server replays
  // the ledger), drawn as steps from 0.
  const groups = {};
  for (const [g, points] of Object.entries(series)) {
    const pts = groups[g] = [[t0, 0]];
    for (const p of points) {
      pts.push([Date.parse(p.time), pts[pts.length - 1][1]], [Date.parse(p.time), p.epsilon]);
    }
  }
  const top = Math.max(budget, ...Object.values(groups).map((p) => p[p.length - 1][1]), 1e-9) * 1.1;
  const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0);
  const y = (v) => H - B - (H - T - B) * v / top;
  // Axes, ticks and their labels.
  svg.append(svgEl("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#444" }),
    svgEl("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B, stroke: "#444" }));
  for (let k = 0; k <= 4; k++) {
    const v = top * k / 4;
    svg.append(svgEl("line", { x1: L - 4, y1: y(v), x2: L, y2: y(v), stroke: "#444" }),
      svgEl("text", { class: "tick", x: L - 6, y: y(v) + 4, "text-anchor": "end" }, v.toPrecision(2)));
  }
  const fmt = (t1 - t0) > 2 * 86400e3 ? (d) => d.toISOString().slice(5, 10) : (d) => d.toISOString().slice(11, 16);
  for (let k = 0; k <= 3; k++) {
    const t = t0 + (t1 - t0) * k / 3;
    svg.append(svgEl("line", { x1: x(t), y1: H - B, x2: x(t), y2: H - B + 4, stroke: "#444" }),
      svgEl("text", { class: "tick", x: x(t), y: H - B + 16, "text-anchor": "middle" }, fmt(new Date(t))));
  }
  svg.append(svgEl("text", { class: "axis-label", x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, "time (UTC)"),
    svgEl("text", { class: "axis-label", x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, "ε per record"));
  // The budget line.
  svg.append(svgEl("line", { class: "budget-line", x1: L, y1: y(budget), x2: W - R, y2: y(budget), stroke: "#c33", "stroke-dasharray": "6 4" }),
    svgEl("text", { class: "budget-label", x: W - R - 4, y: y(budget) - 4, "text-anchor": "end", fill: "#c33" }, `budget ε = ${budget.toPrecision(3)}`));
  // One line per group, and the legend.
  const colours = ["#3a7", "#37a", "#a73", "#a37"];
  const legend = svgEl("g", { class: "legend" });
  Object.entries(groups).forEach(([g, pts], i) => {
    pts.push([t1, pts[pts.length - 1][1]]);
    const c = colours[i % colours.length];
    const line = svgEl("polyline", { points: pts.map(([t, v]) => `${x(t)},${y(v)}`).join(" "), fill: "none", stroke: c, "stroke-width": 2 });
    line.append(svgEl("title", {}, g));
    svg.append(line);
    const ly = T + 4 + 14 * i;
    legend.append(svgEl("line", { x1: L + 10, y1: ly, x2: L + 28, y2: ly, stroke: c, "stroke-width": 2 }),
      svgEl("text", { x: L + 32, y: ly + 4 }, `${g} (${pts[pts.length - 1][1].toPrecision(3)})`));
  });
  if (times.length === 0) legend.append(svgEl("text", { x: L + 10, y: T + 8 }, "nothing spent yet"));
  svg.append(legend);
  return svg;
}

function releaseTable(name, releases) {
  const head = el("tr", {}, el("th", {}, "update"), el("th", {}, "observation"), el("th", {}, "‖w‖"), el("th", {}, "time"));
  const rows = releases.slice(-20).reverse().map((r) => el("tr", {},
    el("td", {}, String(r.update)), el("td", {}, String(r.observation)),
    el("td", {}, Math.hypot(...r.w).toPrecision(4)), el("td", {}, r.time)));
  return el("table", { id: "releases-" + name }, head, ...rows);
}

function exportButton(name) {
  const b = el("button", { type: "button" }, "Export ledger (JSON)");
  b.addEventListener("click", async () => {
    let ledger;
    try { ledger = await api("GET", `/v1/ledger?learner=${name}`); } catch (e) { status(e.message); return; }
    const blob = new Blob([JSON.stringify(ledger, null, 2)], { type: "application/json" });
    const a = el("a", { href: URL.createObjectURL(blob), download: `ledger-${name}.json` });
    a.click();
  });
  return b;
}

// lookupRecord shows what one record spent (a client id, or learner:event).
async function lookupRecord() {
  const id = $("record-id").value.trim();
  if (!id) return;
  try {
    const v = await api("GET", `/v1/records/${encodeURIComponent(id)}/epsilon`);
    $("record-eps").textContent = `record ${v.record}: learner ${v.learner}, event ${v.event}: ε = ${v.epsilon.toPrecision(4)}` +
      (v.delta ? `, δ = ${v.delta.toPrecision(2)}` : "") + (v.group ? ` (ledger group ${v.group})` : " (not screened: spent nothing)");
  } catch (e) { $("record-eps").textContent = `record ${id}: ${e.message}`; }
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    signIn();
  });
  $("claim").addEventListener("click", () => { status(""); claimNext(); });
  $("label-pos").addEventListener("click", () => label(1));
  $("label-neg").addEventListener("click", () => label(-1));
  $("learner").addEventListener("change", refreshQueue);
  $("more-learners").addEventListener("click", () => officerMore());
  $("record-form").addEventListener("submit", (ev) => { ev.preventDefault(); lookupRecord(); });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || $("annotator-view").hidden) return;
    if (ev.key === "n") { status(""); claimNext(); }
    if (ev.key === "j") label(-1);
    if (ev.key === "k") label(1);
  });
  if (token) signIn();
});
