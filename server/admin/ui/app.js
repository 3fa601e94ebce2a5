/* SPDX-License-Identifier: BSD-2-Clause */
/* Copyright (c) The Sluice authors */
/*
 * app.js - the dashboard's script: asks for the admin token once (kept in
 * sessionStorage, sent as Authorization: Bearer, never a cookie), reads
 * GET /v1/stats every second, keeps 15 minutes of per-second series in the
 * page, and draws them as SVG; lists the top limited keys with a reset
 * (DELETE /v1/keys), the rules with their current rates and a shadow
 * switch per domain (PUT /v1/killswitch), the kill switches, the store,
 * and each proxy route's adaptive concurrency limit against its requests
 * in flight (the server keeps no history of those: the page keeps what it
 * polled, one point a poll, for as long as the decisions' history), and
 * the RLQS pools: each counter's Envoy instances, the rate assigned over
 * them against its limit, and what they reported allowing and denying.
 *
 * Same-origin requests only; writes send Content-Type: application/json.
 * Every text that comes from the server (keys are what clients sent) is
 * put in the page as text, never as markup. No library, no build step.
 */
"use strict";

const HISTORY = 900; /* seconds kept in the page, as the server keeps */
const POLL_MS = 1000;
const OUTCOMES = ["allow", "delay", "deny", "shadow_deny"];
const CLASSES = { allow: "allow", delay: "delay", deny: "deny", shadow_deny: "shadow" };
const SVGNS = "http://www.w3.org/2000/svg";

const state = {
  token: sessionStorage.getItem("sluice-token"),
  series: new Map(), /* "domain\u0000limit" -> {domain, limit, byTime: Map(second -> [4])} */
  store: new Map(), /* second -> {calls, failures, p50, p99} */
  adaptive: new Map(), /* route -> [{t, limit, inflight}], oldest first */
  now: 0,
  last: null, /* the last answer */
  timer: null,
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function setStatus(text, bad) {
  const s = $("status");
  s.textContent = text;
  s.className = bad ? "bad" : "muted";
}

/* ------------------------------------------------------------ the admin API */

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + state.token };
  const init = { method, headers, credentials: "omit", cache: "no-store" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  if (r.status === 401) {
    forget();
    throw new Error("the admin token was refused");
  }
  const text = await r.text();
  let doc = null;
  try { doc = text ? JSON.parse(text) : null; } catch (e) { doc = { error: text }; }
  if (!r.ok) throw new Error((doc && doc.error) || r.status + " " + r.statusText);
  return doc;
}

/* ------------------------------------------------------------ keeping the series */

function merge(doc) {
  const first = doc.now - doc.seconds + 1;
  for (const s of doc.series) {
    const id = s.domain + "\u0000" + s.limit;
    let mine = state.series.get(id);
    if (!mine) {
      mine = { domain: s.domain, limit: s.limit, byTime: new Map() };
      state.series.set(id, mine);
    }
    for (let t = 0; t < doc.seconds; t++)
      mine.byTime.set(first + t, OUTCOMES.map((o) => s[o][t]));
    mine.last = s;
  }
  const st = doc.store;
  for (let t = 0; t < doc.seconds; t++)
    state.store.set(first + t, { calls: st.calls[t], failures: st.failures[t], p50: st.p50_ns[t], p99: st.p99_ns[t] });
  state.now = doc.now;
  const oldest = doc.now - HISTORY + 1;
  for (const m of state.series.values())
    for (const t of m.byTime.keys()) if (t < oldest) m.byTime.delete(t);
  for (const t of state.store.keys()) if (t < oldest) state.store.delete(t);
  state.last = doc;
}

/* One point per route and poll: the server reports only the present. */
function mergeAdaptive(doc) {
  const seen = new Set();
  for (const a of doc.adaptive || []) {
    seen.add(a.route);
    let pts = state.adaptive.get(a.route);
    if (!pts) state.adaptive.set(a.route, (pts = []));
    if (!pts.length || pts[pts.length - 1].t !== doc.now)
      pts.push({ t: doc.now, limit: a.limit, inflight: a.inflight });
    while (pts.length && pts[0].t <= doc.now - HISTORY) pts.shift();
  }
  for (const r of [...state.adaptive.keys()]) if (!seen.has(r)) state.adaptive.delete(r);
}

/* ------------------------------------------------------------ charts */

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function fmt(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(v >= 1e7 ? 0 : 1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(v >= 1e4 ? 0 : 1) + "k";
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function fmtNs(ns) {
  if (!ns) return "-";
  if (ns >= 1e9) return (ns / 1e9).toFixed(2) + " s";
  if (ns >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + " \u00b5s";
  return ns + " ns";
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

/* Draw lines (name -> values, oldest first, one a second, the last
 * `span` seconds) into container. */
function chart(container, lines, format) {
  const n = Object.values(lines)[0].length;
  const w = Math.max(container.clientWidth, 300), h = Math.max(container.clientHeight, 100);
  const left = 58, bottom = 16, top = 6, right = 8;
  let max = 0;
  for (const vals of Object.values(lines)) for (const v of vals) if (v > max) max = v;
  max = niceMax(max);
  const root = svg("svg", { viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none" });
  const x = (i) => left + (i / (n - 1)) * (w - left - right);
  const y = (v) => top + (1 - v / max) * (h - top - bottom);
  for (const f of [0, 0.5, 1]) {
    root.append(svg("line", { class: "axis", x1: left, x2: w - right, y1: y(max * f), y2: y(max * f) }));
    const label = svg("text", { x: left - 4, y: y(max * f) + 3, "text-anchor": "end" });
    label.textContent = format(max * f);
    root.append(label);
  }
  const ago = (sec) => sec >= 60 ? "-" + sec / 60 + " min" : "-" + sec + " s";
  for (const [m, text] of [[0, ago(n)], [Math.floor((n - 1) / 2), ago(Math.ceil(n / 2))], [n - 1, "now"]]) {
    const t = svg("text", { x: x(m), y: h - 3, "text-anchor": m === 0 ? "start" : m === n - 1 ? "end" : "middle" });
    t.textContent = text;
    root.append(t);
  }
  for (const [name, vals] of Object.entries(lines)) {
    let d = "";
    vals.forEach((v, i) => { d += (i ? "L" : "M") + x(i).toFixed(1) + " " + y(v).toFixed(1); });
    const sum = vals.reduce((a, b) => a + b, 0);
    root.append(svg("path", { class: name, d, "data-series": name, "data-sum": String(sum) }));
  }
  container.replaceChildren(root);
}

function span() {
  return Number($("span-select").value) || HISTORY;
}

function drawDecisions() {
  const pick = $("pair").value;
  const lines = { allow: [], delay: [], deny: [], shadow: [] };
  const first = state.now - span() + 1;
  for (let t = first; t <= state.now; t++) {
    const sum = [0, 0, 0, 0];
    for (const [id, m] of state.series) {
      if (pick && id !== pick) continue;
      const v = m.byTime.get(t);
      if (v) for (let k = 0; k < 4; k++) sum[k] += v[k];
    }
    lines.allow.push(sum[0]); lines.delay.push(sum[1]); lines.deny.push(sum[2]); lines.shadow.push(sum[3]);
  }
  chart($("chart-decisions"), lines, fmt);
}

function drawStore() {
  const lines = { p50: [], p99: [] };
  const first = state.now - span() + 1;
  for (let t = first; t <= state.now; t++) {
    const v = state.store.get(t);
    lines.p50.push(v ? v.p50 : 0);
    lines.p99.push(v ? v.p99 : 0);
  }
  chart($("chart-store"), lines, fmtNs);
}

/* ------------------------------------------------------------ tables */

function keysQuery(domain, entries) {
  const q = new URLSearchParams();
  q.append("domain", domain);
  for (const e of entries) q.append(e.key, e.value);
  return q.toString();
}

function done(text) {
  $("last-action").textContent = text + " at " + new Date().toLocaleTimeString();
}

async function resetKey(domain, key, entries, button) {
  button.disabled = true;
  try {
    await api("DELETE", "/v1/keys?" + keysQuery(domain, entries));
    button.textContent = "reset \u2713";
    done(`reset ${domain} ${key}`);
    setTimeout(() => { button.disabled = false; button.textContent = "reset this key"; }, 3000);
  } catch (e) {
    setStatus("reset failed: " + e.message, true);
    button.disabled = false;
  }
}

async function setSwitch(domain, mode) {
  try {
    await api("PUT", "/v1/killswitch", { domain, mode });
    done(`${domain}: ${mode}`);
    await poll();
  } catch (e) {
    setStatus("kill switch: " + e.message, true);
  }
}

function modeOf(doc, domain) {
  let mode = "enforce";
  for (const s of doc.killswitches) {
    if (s.domain === domain) return s.mode;
    if (s.domain === "*") mode = s.mode;
  }
  return mode;
}

/* Rows kept across refreshes by their id, their texts updated in place,
 * so that a button is the same element from one second to the next (a
 * click whose press and release straddle a refresh still lands). items:
 * {id, cells: [text, {text, class}], action: () => Node | null, attrs}. */
function syncRows(body, items, empty, span) {
  const old = new Map();
  for (const r of [...body.rows]) {
    if (r.dataset.id !== undefined) old.set(r.dataset.id, r);
    else r.remove();
  }
  const rows = items.map((it) => {
    let r = old.get(it.id);
    old.delete(it.id);
    if (!r) {
      r = el("tr", { "data-id": it.id, ...it.attrs });
      for (const c of it.cells) r.append(el("td", { class: (c && c.class) || "" }));
      const act = el("td", {});
      const node = it.action && it.action();
      if (node) act.append(node);
      r.append(act);
    }
    it.cells.forEach((c, i) => {
      const text = String(c && typeof c === "object" ? c.text : c);
      if (r.cells[i].textContent !== text) r.cells[i].textContent = text;
    });
    return r;
  });
  for (const r of old.values()) r.remove();
  rows.forEach((r, i) => { if (body.rows[i] !== r) body.insertBefore(r, body.rows[i] || null); });
  if (!rows.length) body.append(el("tr", {}, el("td", { colSpan: span, class: "muted" }, empty)));
}

function drawTopKeys(doc) {
  const items = [];
  for (const s of doc.series) {
    for (const k of s.top) {
      items.push({
        id: s.domain + "\u0000" + s.limit + "\u0000" + k.key,
        attrs: { "data-key": k.key, "data-domain": s.domain },
        count: k.count,
        cells: [s.domain, s.limit, { text: k.key, class: "key" }, { text: k.count, class: "num" },
          { text: k.error, class: "num" }],
        action: () => {
          if (!k.entries || k.partial)
            return el("span", { class: "muted", title: "shown cut or hashed (stats.keys): reset it with its full entries" }, "partial");
          const b = el("button", { type: "button", class: "reset-key", "data-domain": s.domain }, "reset this key");
          b.addEventListener("click", () => resetKey(s.domain, k.key, k.entries, b));
          return b;
        },
      });
    }
  }
  items.sort((a, b) => b.count - a.count);
  syncRows($("top-keys").tBodies[0], items, "no key limited in this window", 6);
  $("window").textContent = "over the last " + (doc.top_window_ms / 1000) + "-" + (2 * doc.top_window_ms / 1000) +
    " s (" + doc.keys + ")";
}

function drawRules(doc) {
  const byLimit = new Map(doc.series.map((s) => [s.domain + "\u0000" + s.limit, s]));
  const items = [];
  let lastDomain = null;
  for (const r of doc.rules) {
    const s = byLimit.get(r.domain + "\u0000" + (r.name || ""));
    const rate = s ? s.rate : { allow: 0, deny: 0, shadow_deny: 0 };
    const limit = r.unlimited ? "unlimited"
      : `${r.name}: ${r.requests} per ${r.period_ms / 1000} s (${r.algorithm})${r.shadow ? ", shadow" : ""}`;
    const head = r.domain !== lastDomain;
    const mode = modeOf(doc, r.domain);
    items.push({
      id: [r.domain, r.path, limit, head ? mode : ""].join("\u0000"),
      attrs: { "data-domain": r.domain, "data-path": r.path },
      cells: [head ? r.domain : "", r.path.slice(r.domain.length + 1), limit,
        { text: fmt(rate.allow), class: "num" }, { text: fmt(rate.deny), class: "num" },
        { text: fmt(rate.shadow_deny), class: "num" }],
      action: () => {
        if (!head) return null;
        const next = mode === "shadow" ? "enforce" : "shadow";
        const b = el("button", { type: "button", class: "shadow-domain", "data-domain": r.domain },
          next === "shadow" ? "shadow this domain" : "enforce this domain");
        b.addEventListener("click", () => setSwitch(r.domain, next));
        return mode === "enforce" ? b : el("span", {}, b, " ", el("span", { class: "mode-" + mode }, mode));
      },
    });
    lastDomain = r.domain;
  }
  syncRows($("rules").tBodies[0], items, "no rules loaded", 7);
}

function drawSwitches(doc) {
  syncRows($("switches").tBodies[0], doc.killswitches.map((s) => ({
    id: s.domain + "\u0000" + s.mode,
    attrs: { "data-domain": s.domain },
    cells: [s.domain, { text: s.mode, class: "mode-" + s.mode }],
    action: () => {
      if (s.mode === "enforce") return null;
      const b = el("button", { type: "button" }, "enforce");
      b.addEventListener("click", () => setSwitch(s.domain, "enforce"));
      return b;
    },
  })), "every domain enforced", 3);
}

function fmtMs(ms) {
  return ms === null || ms === undefined ? "-" : fmtNs(Math.round(ms * 1e6));
}

/* Per adaptive route: its limit and requests in flight over the span kept
 * (a second without a point repeats the one before it), and its classes. */
function drawAdaptive(doc) {
  const routes = doc.adaptive || [];
  const box = $("adaptive");
  $("adaptive-panel").hidden = routes.length === 0;
  const keep = new Set();
  for (const a of routes) {
    keep.add(a.route);
    let div = [...box.children].find((d) => d.dataset.route === a.route);
    if (!div) {
      div = el("div", { class: "adaptive-route", "data-route": a.route },
        el("h3", {}), el("div", { class: "chart small" }),
        el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "class"), el("th", { class: "num" }, "share"),
          el("th", { class: "num" }, "in flight"), el("th", { class: "num" }, "admitted"),
          el("th", { class: "num" }, "shed"), el("th", {}))), el("tbody", {})));
      box.append(div);
    }
    div.children[0].textContent = `${a.route} (${a.algorithm}): limit ${a.limit}, in flight ${a.inflight}, ` +
      `latest sample ${fmtMs(a.sample_rtt_ms)}` + (a.min_rtt_ms !== undefined && a.min_rtt_ms !== null
        ? `, min RTT ${fmtMs(a.min_rtt_ms)}` : "") + `, ${a.workers} worker${a.workers === 1 ? "" : "s"}`;
    const pts = state.adaptive.get(a.route) || [];
    const first = Math.max(state.now - span() + 1, pts.length ? pts[0].t : state.now);
    const lines = { limit: [], inflight: [] };
    let k = 0, cur = pts[0] || { limit: a.limit, inflight: a.inflight };
    for (let t = first; t <= state.now; t++) {
      while (k < pts.length && pts[k].t <= t) cur = pts[k++];
      lines.limit.push(cur.limit);
      lines.inflight.push(cur.inflight);
    }
    if (lines.limit.length < 2) { lines.limit.unshift(lines.limit[0]); lines.inflight.unshift(lines.inflight[0]); }
    chart(div.children[1], lines, fmt);
    syncRows(div.children[2].tBodies[0], a.classes.map((c) => ({
      id: c.name,
      attrs: { "data-class": c.name },
      cells: [c.name, { text: c.share_pct + " %", class: "num" }, { text: c.inflight, class: "num" },
        { text: c.admitted, class: "num" }, { text: c.shed, class: "num" }],
    })), "no class", 6);
  }
  for (const d of [...box.children]) if (!keep.has(d.dataset.route)) d.remove();
}

/* The RLQS pools (GET /v1/stats' "rlqs"): shown once an Envoy has a
 * stream open or a pool is left. */
function drawRlqs(doc) {
  const q = doc.rlqs;
  const used = q && (q.streams > 0 || q.buckets > 0 || q.by_pool.length > 0);
  $("rlqs-panel").hidden = !used;
  if (!used) return;
  $("rlqs-summary").textContent = `${q.streams} stream${q.streams === 1 ? "" : "s"}, ` +
    `${q.buckets} bucket${q.buckets === 1 ? "" : "s"}, ${q.pools} pool${q.pools === 1 ? "" : "s"}` +
    (q.by_pool.length < q.pools ? ` (the first ${q.by_pool.length} listed)` : "") +
    `; reported ${q.allowed} allowed, ${q.denied} denied` +
    (q.shadow_denied ? `, ${q.shadow_denied} a shadow limit would have denied` : "");
  const body = $("rlqs").tBodies[0];
  const pct = (p) => (p.limit_rate > 0 ? Math.round((100 * p.assigned_rate) / p.limit_rate) : 0);
  syncRows(body, q.by_pool.map((p) => ({
    id: p.pool,
    attrs: { "data-pool": p.pool },
    cells: [p.rule + (p.shadow ? " (shadow)" : ""), { text: p.instances, class: "num" },
      { text: fmt(p.assigned_rate), class: "num" }, { text: fmt(p.limit_rate), class: "num" },
      { text: pct(p) + " %", class: "num" }, { text: p.allowed, class: "num" },
      { text: p.denied, class: "num" }],
    action: () => el("div", { class: "share-bar" }, el("span", {})),
  })), "no pool", 8);
  for (const r of body.rows) {
    const p = q.by_pool.find((x) => x.pool === r.dataset.pool);
    const bar = r.querySelector(".share-bar span");
    if (p && bar) bar.style.width = Math.min(100, pct(p)) + "%";
  }
}

function flat(prefix, v, out) {
  if (Array.isArray(v)) v.forEach((x, i) => flat(`${prefix}[${i}]`, x, out));
  else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) flat(prefix ? prefix + "." + k : k, x, out);
  else out.push([prefix, String(v)]);
  return out;
}

function drawStoreTable(doc) {
  const st = doc.store;
  const n = st.calls.length;
  const recent = (a) => a.slice(Math.max(0, n - 10)).reduce((x, y) => x + y, 0) / 10;
  const rows = [
    ["type", st.type],
    ["ready", st.ready ? "yes" : "NO"],
    ["round trip p50 / p99 (10 s)", fmtNs(st.p50_ns_recent) + " / " + fmtNs(st.p99_ns_recent)],
    ["calls/s (10 s)", fmt(recent(st.calls))],
    ["failures/s (10 s)", fmt(recent(st.failures))],
    ...flat("", st.state, []),
    ["workers", doc.workers],
    ["pairs over stats.max_series (decisions)", doc.dropped],
  ];
  $("store").tBodies[0].replaceChildren(...rows.map(([k, v]) =>
    el("tr", {}, el("th", {}, k), el("td", { class: k === "ready" ? (st.ready ? "ok" : "bad") : "" }, v))));
}

function drawPairs(doc) {
  const sel = $("pair");
  const have = new Set([...sel.options].map((o) => o.value));
  for (const s of doc.series) {
    const id = s.domain + "\u0000" + s.limit;
    if (!have.has(id)) sel.append(el("option", { value: id }, s.domain + " / " + s.limit));
  }
}

function draw() {
  const doc = state.last;
  if (!doc) return;
  drawPairs(doc);
  drawDecisions();
  drawStore();
  drawTopKeys(doc);
  drawRules(doc);
  drawSwitches(doc);
  drawStoreTable(doc);
  drawAdaptive(doc);
  drawRlqs(doc);
}

/* ------------------------------------------------------------ the loop */

async function poll() {
  /* the whole history once, then the last seconds (a missed poll is filled in) */
  const seconds = state.now ? 30 : HISTORY;
  try {
    const doc = await api("GET", `/v1/stats?seconds=${seconds}&top=10`);
    mergeAdaptive(doc); /* the proxy's limits and RLQS are shown whatever stats.enabled says */
    if (!doc.enabled) {
      state.now = doc.now;
      drawAdaptive(doc);
      drawRlqs(doc);
      setStatus("statistics are off (stats.enabled: false)", true);
      return;
    }
    merge(doc);
    draw();
    setStatus("updated " + new Date(doc.now * 1000).toLocaleTimeString());
  } catch (e) {
    setStatus(e.message, true);
  }
}

function start() {
  $("login").hidden = true;
  $("main").hidden = false;
  $("logout").hidden = false;
  poll();
  state.timer = setInterval(poll, POLL_MS);
}

function forget() {
  sessionStorage.removeItem("sluice-token");
  state.token = null;
  clearInterval(state.timer);
  $("main").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("token").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem("sluice-token", state.token);
    start();
  });
  $("logout").addEventListener("click", forget);
  $("pair").addEventListener("change", drawDecisions);
  $("span-select").addEventListener("change", draw);
  if (state.token !== null) start();
  else forget();
});
