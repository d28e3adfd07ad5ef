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
  const { learners } = await api("GET", "/v1/learners");
  const sel = $("learner");
  sel.replaceChildren(...learners.map((l) => new Option(l.name, l.name)));
  if (annotator) await refreshQueue();
  if (officer) await refreshOfficer(learners);
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

async function refreshOfficer(learners) {
  const boxes = [];
  for (const l of learners) {
    const [budget, rels, ledger] = await Promise.all([
      api("GET", `/v1/learners/${l.name}/budget`),
      api("GET", `/v1/learners/${l.name}/releases`),
      api("GET", `/v1/ledger?learner=${l.name}`),
    ]);
    boxes.push(learnerBox(l.name, budget, rels.releases, ledger));
  }
  $("budgets").replaceChildren(...boxes);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

function learnerBox(name, budget, releases, ledger) {
  const spent = Math.max(0, ...budget.groups.map((g) => g.epsilon));
  const total = budget.budget.epsilon;
  const frac = total > 0 ? Math.min(1, spent / total) : 0;
  const gauge = el("div", { class: "gauge" + (frac > 0.8 ? " high" : "") }, el("div", { style: `width:${(100 * frac).toFixed(1)}%` }));
  const s = budget.stats;
  const box = el("div", { class: "learner", id: "learner-" + name },
    el("h3", {}, name),
    el("p", { id: "budget-" + name }, `ε spent per record ${spent.toPrecision(4)} of ${total.toPrecision(4)}`),
    gauge,
    el("p", {}, `${s.observed} events, ${s.requested} requests, ${s.labelled} labels, ${s.updates} releases`),
    queueLine(name, budget.queue),
    chart(ledger),
    releaseTable(name, releases),
    exportButton(name, ledger));
  return box;
}

// queueLine says how full the learner's queue of open requests is.
function queueLine(name, q) {
  let text = `queue: ${q.open} open of at most ${q.max}`;
  if (q.open > 0) text += `, oldest ${age(q.oldest_age_seconds)}`;
  if (q.masked > 0) text += `; ${q.masked} selections masked while it was full`;
  return el("p", { id: "queue-" + name, class: q.open >= q.max ? "full" : "" }, text);
}

// chart draws each group's cumulative ε against time from the ledger.
function chart(ledger) {
  const W = 480, H = 120, pad = 4;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", H);
  const entries = ledger.entries || [];
  if (entries.length === 0) return svg;
  const t0 = Date.parse(entries[0].time), t1 = Math.max(t0 + 1, Date.now());
  const eMax = Math.max(ledger.meta.budget.epsilon, 1e-9);
  const groups = {};
  for (const e of entries) {
    for (const g of e.groups) {
      const pts = groups[g] || (groups[g] = [[t0, 0]]);
      const last = pts[pts.length - 1][1];
      pts.push([Date.parse(e.time), last + (e.loss.epsilon || 0)]);
    }
  }
  const colours = ["#3a7", "#37a", "#a73", "#a37"];
  Object.entries(groups).forEach(([g, pts], i) => {
    pts.push([t1, pts[pts.length - 1][1]]);
    const d = pts.map(([t, v]) => `${pad + (W - 2 * pad) * (t - t0) / (t1 - t0)},${H - pad - (H - 2 * pad) * Math.min(1, v / eMax)}`);
    const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    line.setAttribute("points", d.join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", colours[i % colours.length]);
    const title = document.createElementNS("http://www.w3.org/2000/svg", "title");
    title.textContent = g;
    line.append(title);
    svg.append(line);
  });
  return svg;
}

function releaseTable(name, releases) {
  const head = el("tr", {}, el("th", {}, "update"), el("th", {}, "observation"), el("th", {}, "‖w‖"), el("th", {}, "time"));
  const rows = releases.slice(-20).reverse().map((r) => el("tr", {},
    el("td", {}, String(r.update)), el("td", {}, String(r.observation)),
    el("td", {}, Math.hypot(...r.w).toPrecision(4)), el("td", {}, r.time)));
  return el("table", { id: "releases-" + name }, head, ...rows);
}

function exportButton(name, ledger) {
  const b = el("button", { type: "button" }, "Export ledger (JSON)");
  b.addEventListener("click", () => {
    const blob = new Blob([JSON.stringify(ledger, null, 2)], { type: "application/json" });
    const a = el("a", { href: URL.createObjectURL(blob), download: `ledger-${name}.json` });
    a.click();
  });
  return b;
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
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || $("annotator-view").hidden) return;
    if (ev.key === "n") { status(""); claimNext(); }
    if (ev.key === "j") label(-1);
    if (ev.key === "k") label(1);
  });
  if (token) signIn();
});
