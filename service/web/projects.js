// dpal serve's page, the project view: a pool active-learning project for
// the annotator (claim the next selected record, see it, pick its class
// or skip it with a reason) and for the officer (state and progress, the
// plan's σ and ε per record, ε per group read from the ledger, the
// releases). It calls only the documented API, through app.js's api().
"use strict";

let projectRecord = null; // the claimed record {index, x, image, classes}

// projectsSignIn shows the project view to an annotator, officer or admin
// and lists the projects; app.js calls it after sign-in.
async function projectsSignIn(role) {
  const annotator = role === "annotator" || role === "admin";
  const officer = role === "officer" || role === "admin";
  $("project-view").hidden = !(annotator || officer);
  if ($("project-view").hidden) return;
  $("project-annotate").hidden = !annotator;
  $("project-officer").hidden = !officer;
  const list = await api("GET", "/v1/projects");
  const sel = $("project");
  sel.replaceChildren(...list.projects.map((p) => el("option", { value: p.name }, p.name)));
  $("project-count").textContent = `${list.projects.length} project(s)`;
  if (list.projects.length) await projectRefresh();
}

function projectName() { return $("project").value; }

// projectRefresh draws the selected project's state (and, for the
// officer, its plan, ε per group and releases).
async function projectRefresh() {
  const name = projectName();
  if (!name) return;
  const p = await api("GET", "/v1/projects/" + encodeURIComponent(name));
  let line = `${p.state}: round ${p.round} of ${p.rounds}, ${p.pooled}/${p.settings.pool_size} records, ` +
    `${p.labels} labels, ${p.dropped} dropped, ε per record ${p.epsilon_per_record.toFixed(4)}`;
  if (p.phase !== undefined) line += `; labelling phase ${p.phase}`;
  if (p.progress) line += `; training round ${p.progress.round}: step ${p.progress.steps} of ${p.progress.total}`;
  if (p.error) line += ` (${p.error})`;
  $("project-state").textContent = line;
  if (!$("project-officer").hidden) await projectOfficer(name);
}

async function projectOfficer(name) {
  const base = "/v1/projects/" + encodeURIComponent(name);
  const [plan, priv, rels] = await Promise.all([api("GET", base + "/plan"), api("GET", base + "/privacy"), api("GET", base + "/releases")]);
  $("project-plan").textContent = `plan (fixed before any record was read): ε = ${plan.settings.epsilon}, δ = ${plan.delta}, ` +
    `${plan.settings.selection} selection, ε charged per record ${plan.epsilon_per_record.toFixed(6)}; σ per phase ` +
    plan.plan.phases.map((ph) => ph.noise_multiplier.toFixed(3)).join(", ");
  const groups = (priv.privacy.trained || []).concat([priv.privacy.not_selected]);
  $("project-privacy").replaceChildren(
    el("tr", {}, el("th", {}, "group"), el("th", {}, "records"), el("th", {}, "planned ε"), el("th", {}, "ledger ε min"), el("th", {}, "ledger ε max")),
    ...groups.map((g) => el("tr", {}, el("td", {}, g.group), el("td", {}, String(g.records)), el("td", {}, g.planned_epsilon.toFixed(6)),
      el("td", {}, g.ledger_epsilon.min.toFixed(6)), el("td", {}, g.ledger_epsilon.max.toFixed(6)))));
  $("project-releases").replaceChildren(
    el("tr", {}, el("th", {}, "round"), el("th", {}, "labelled"), el("th", {}, "steps"), el("th", {}, "ε max (ledger)"), el("th", {}, "model")),
    ...rels.releases.map((r) => el("tr", {}, el("td", {}, String(r.round)), el("td", {}, String(r.labelled)), el("td", {}, String(r.steps)),
      el("td", {}, r.epsilon_max.toFixed(6)), el("td", {}, modelLink(name, r.round)))));
}

// modelLink downloads a release's model file with the token (a plain link
// would send none).
function modelLink(name, round) {
  const b = el("button", { type: "button", class: "model" }, "download");
  b.addEventListener("click", async () => {
    const resp = await fetch(`/v1/projects/${encodeURIComponent(name)}/model?round=${round}`, { headers: { Authorization: "Bearer " + token } });
    const url = URL.createObjectURL(await resp.blob());
    const a = el("a", { href: url, download: `${name}-round-${round}.json` });
    a.click();
    URL.revokeObjectURL(url);
  });
  return b;
}

// projectClaim claims the first open record of the phase and shows it.
async function projectClaim() {
  const name = projectName();
  const q = await api("GET", `/v1/projects/${encodeURIComponent(name)}/queue?limit=1000`);
  $("project-queue").textContent = `${q.open} open, ${q.labelled} labelled, ${q.skipped} skipped`;
  const item = q.items.find((it) => !it.claimed) || q.items[0];
  if (!item) { status("no open record in this phase"); $("project-record-box").hidden = true; return; }
  projectRecord = await api("POST", `/v1/projects/${encodeURIComponent(name)}/queue/${item.index}/claim`);
  $("project-record-id").textContent = `${item.index}${projectRecord.id ? " (" + projectRecord.id + ")" : ""}`;
  drawRecord(projectRecord);
  $("project-classes").replaceChildren(...projectRecord.classes.map((c) => {
    const b = el("button", { type: "button", class: "class" }, c);
    b.addEventListener("click", () => projectAnswer("label", { label: c }));
    return b;
  }));
  $("project-record-box").hidden = false;
}

// drawRecord shows an image record as pixels, any other as a table.
function drawRecord(r) {
  const box = $("project-record");
  if (r.image && r.image.length === 3) {
    const [h, w, c] = r.image;
    const canvas = el("canvas", { width: String(w), height: String(h), class: "pixels" });
    const ctx = canvas.getContext("2d");
    const img = ctx.createImageData(w, h);
    for (let i = 0; i < h * w; i++) {
      for (let k = 0; k < 3; k++) {
        const v = r.x[i * c + (c === 3 ? k : 0)];
        img.data[4 * i + k] = Math.round(255 * Math.max(0, Math.min(1, v)));
      }
      img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    box.replaceChildren(canvas);
    return;
  }
  box.replaceChildren(el("table", {}, el("tr", {}, ...r.x.map((v) => el("td", {}, v.toPrecision(4))))));
}

// projectAnswer labels or skips the claimed record, then claims the next.
async function projectAnswer(verb, body) {
  if (!projectRecord) return;
  const name = projectName();
  try {
    const a = await api("POST", `/v1/projects/${encodeURIComponent(name)}/queue/${projectRecord.index}/${verb}`, body);
    status(`record ${a.index} ${a.status}` + (a.phase_done ? ": the phase is complete, the next round is training" : ""));
    projectRecord = null;
    $("project-record-box").hidden = true;
    await projectRefresh();
  } catch (e) {
    status(e.message);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("project").addEventListener("change", projectRefresh);
  $("project-refresh").addEventListener("click", projectRefresh);
  $("project-claim").addEventListener("click", () => { status(""); projectClaim().catch((e) => status(e.message)); });
  $("project-skip").addEventListener("click", () => projectAnswer("skip", { reason: $("project-reason").value.trim() }));
});
