// The dashboard's live rows: server-sent events applied to the page with textContent only (no HTML is ever parsed).
// Without this script the page is plain forms and links, and a reload shows the current state.
"use strict";

// The CLI's escaping of cluster text: every control, format and separator character shown as an escape.
const SUSPECT = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
function safe(value) {
  if (value === null || value === undefined || value === "") return "-";
  if (value === true) return "yes";
  if (value === false) return "no";
  return String(value).replace(SUSPECT, (c) => {
    if (c === "\t") return c;
    const code = c.codePointAt(0);
    if (code < 0x100) return "\\x" + code.toString(16).padStart(2, "0");
    if (code <= 0xffff) return "\\u" + code.toString(16).padStart(4, "0");
    return "\\U" + code.toString(16).padStart(8, "0");
  });
}

function span(seconds) {
  seconds = Math.floor(Math.abs(seconds));
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
  const m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
  if (d) return d + "d" + h + "h";
  if (h) return h + "h" + m + "m";
  return m ? m + "m" + s + "s" : s + "s";
}

// The CLI's words of list -o wide (the server renders them at a load; these follow the changes).
function approvalText(a) {
  if (a.revocation) return "revoked by " + safe(a.revocation.user);
  if (a.user) return "approved by " + safe(a.user) + " until " + safe(a.expires);
  return a.required ? "pending" : "not required";
}

function deadlineText(text) {
  if (!text) return "-";
  const left = (Date.parse(text) - Date.now()) / 1000;
  if (Number.isNaN(left)) return safe(text);
  return safe(text) + " (" + (left > 0 ? "in " + span(left) : "passed") + ")";
}

function assessmentText(a) {
  return a.status === "verified" ? safe(a.verdict) : safe(a.status);
}

function cells(item) {
  return {
    "context": safe(item.context),
    "name": safe(item.name),
    "phase": safe(item.phase),
    "approval": approvalText(item.approval),
    "deadline": deadlineText(item.deadline),
    "waiting-on": safe(item.waitingOn),
    "assessment": assessmentText(item.assessment),
  };
}

function segment(text) {
  const bytes = new TextEncoder().encode(text);
  let out = "";
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9_~-]/.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

function newRow(item) {
  const row = document.createElement("tr");
  row.dataset.key = item.context + "/" + item.name;
  for (const name of ["context", "name", "phase", "approval", "deadline", "waiting-on", "assessment"]) {
    const cell = document.createElement("td");
    cell.className = name;
    if (name === "name") {
      const link = document.createElement("a");
      link.href = "/c/" + segment(item.context) + "/r/" + segment(item.name);
      cell.appendChild(link);
    }
    row.appendChild(cell);
  }
  return row;
}

function fill(row, item) {
  const texts = cells(item);
  for (const cell of row.cells) {
    const target = cell.firstElementChild || cell;
    if (cell.className in texts) target.textContent = texts[cell.className];
  }
  row.classList.remove("stale");
}

function findRow(body, key) {
  for (const row of body.rows) if (row.dataset.key === key) return row;
  return null;
}

function countRows() {
  const body = document.querySelector("#inbox tbody");
  const count = document.getElementById("count");
  if (!body || !count) return;
  count.textContent = String(body.rows.length);
  document.title = "(" + body.rows.length + ") waiting for a person - kubectl aicr dashboard";
  const none = document.getElementById("none");
  if (none) none.hidden = body.rows.length > 0;
}

function applyRollout(item) {
  const body = document.querySelector("#inbox tbody");
  if (body) {
    const key = item.context + "/" + item.name;
    let row = findRow(body, key);
    const shown = !item.removed && item.phase !== "Ended" && item.waitingForPerson;
    if (!shown) {
      if (row) row.remove();
    } else {
      if (!row) { row = newRow(item); body.appendChild(row); }
      fill(row, item);
    }
    countRows();
  }
  const heading = document.getElementById("rollout");
  if (heading && heading.dataset.context === item.context && heading.dataset.name === item.name && !item.removed) {
    const phase = document.getElementById("phase");
    if (phase) phase.textContent = safe(item.phase) + (item.outcome ? " (" + safe(item.outcome) + ")" : "");
    described(heading);
  }
}

// The rest of what describe shows (the message, the steps' states) is not in a listing's item: this page's
// rollout changed, so its describe document is read again (the dashboard serves it from what the watch
// keeps), one read at a time; a change during a read asks for one more.
let reading = null;
function described(heading) {
  if (reading) { reading.again = true; return; }
  reading = {again: false};
  const url = "/api/c/" + segment(heading.dataset.context) + "/r/" + segment(heading.dataset.name);
  fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"})
    .then((answer) => answer.ok ? answer.json() : null)
    .then((document_) => { if (document_) applyDescription(document_); })
    .catch(() => {})
    .finally(() => { const again = reading.again; reading = null; if (again) described(heading); });
}

function applyDescription(d) {
  const message = document.getElementById("message");
  if (message) message.textContent = safe(d.message);
  const body = document.querySelector("table.steps tbody");
  if (!body || !Array.isArray(d.steps)) return;
  d.steps.forEach((step, index) => {
    const row = body.rows[index];
    if (!row || row.cells.length < 6) return;
    row.cells[4].textContent = safe(step.state);
    row.cells[5].textContent = safe(step.message);
  });
}

function applyCluster(line) {
  const body = document.querySelector("#clusters tbody");
  if (!body) return;
  for (const row of body.rows) {
    if (row.dataset.context !== line.context) continue;
    const set = (name, text) => { const cell = row.querySelector("td." + name); if (cell) cell.textContent = text; };
    set("user", safe(line.user));
    set("may-approve", safe(line.mayApprove));
    let state = "connecting";
    if (line.connected) state = "connected";
    else if (line.error) {
      state = "disconnected: [" + safe(line.error.code) + "] " + safe(line.error.message);
      if (line.lastAnswer) state += " (last answer " + safe(line.lastAnswer) + ")";
    }
    set("state", state);
  }
}

function follow() {
  if (!window.EventSource) return;
  const events = new EventSource("/events");
  events.addEventListener("rollout", (e) => applyRollout(JSON.parse(e.data)));
  events.addEventListener("cluster", (e) => applyCluster(JSON.parse(e.data)));
}

document.addEventListener("DOMContentLoaded", follow);
