// spades_env play page. The server decides every rule: this script sends action ids and shows
// the view it gets back. Nothing here checks legality (a refused move shows the server's reason).
"use strict";

const params = new URLSearchParams(location.search);
// game speed (settings and menu, remembered): ms before each bot move and a completed trick
// stays shown; ?delay= and ?pause= in the address override it
const SPEEDS = { slow: [1000, 1800], normal: [550, 1100], fast: [150, 500] };
let BOT_DELAY = 550, TRICK_PAUSE = 1100;
function applySpeed(name) {
  const sp = SPEEDS[name] || SPEEDS.normal;
  BOT_DELAY = Number(params.get("delay") ?? sp[0]);
  TRICK_PAUSE = Number(params.get("pause") ?? sp[1]);
}
const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const SUIT_NAME = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const BID_OFFSET = 52, BLIND_NIL = 66, LOOK = 67;
const COMPASS = { top: "north", left: "west", right: "east", bottom: "south" };
const store = {  // the page's own settings (never a rule): sound, hints, the order of the hand
  get(k, d) { try { const v = localStorage.getItem(`spades.${k}`); return v === null ? d : JSON.parse(v); } catch (e) { return d; } },
  set(k, v) { try { localStorage.setItem(`spades.${k}`, JSON.stringify(v)); } catch (e) { /* private mode */ } },
};

let state = null;       // the last view of the game from the server
let config = null;
let bidValue = 3;
let bidSending = false;  // a bid on its way to the server
let suggested = null;  // the hint's move, {seq, action}: raised in the hand
let showLastTrickUntil = 0;
let pumpGen = 0;        // each pump() starts a new generation; older loops stop
let paused = false;
let soundOn = store.get("sound", true);
let savedGames = [];
let hintSeq = null;     // the move the shown hint is for
let offline = false;

const $ = (id) => document.getElementById(id);
const esc = (x) => String(x).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// ------------------------------------------------------------------ talking to the server
async function api(path, body, method, headers) {
  const opts = body === undefined ? { method: method || "GET" } : {
    method: method || "POST", headers: { "Content-Type": "application/json", ...(headers || {}) },
    body: typeof body === "string" || body instanceof ArrayBuffer ? body : JSON.stringify(body),
  };
  let r;
  try {
    r = await fetch(path, opts);
  } catch (e) {
    const err = new Error("The server is not answering");
    err.status = 0; err.network = true;
    throw err;
  }
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = new Error((data && data.detail) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    err.summary = data && data.summary;  // a refused record: one line for the player
    throw err;
  }
  return data;
}

// run fn; while the server is down, say so and try again every second
async function withServer(fn, statusFn) {
  for (;;) {
    try {
      const out = await fn();
      if (offline) { offline = false; delete document.body.dataset.offline; }
      return out;
    } catch (e) {
      if (!e.network) throw e;
      offline = true;
      document.body.dataset.offline = "true";
      (statusFn || setStatus)("The server is not answering: trying again every second\u2026", true);
      await sleep(1000);
    }
  }
}

let chain = Promise.resolve();
function serial(fn) {  // one game request at a time, in order
  const p = chain.then(fn);
  chain = p.catch(() => {});
  return p;
}

// ------------------------------------------------------------------ loading the bots and the hint
// The server loads what a difficulty needs when it is chosen (POST /api/warm); before the first
// bot move of a game, and while a first hint waits, the page shows how far that is.
const warmed = new Set();  // games whose bots are loaded
function loadingText(st, only) {
  const items = st.items.filter((it) => !only || it.key === only);
  const waiting = items.filter((it) => it.state !== "ready" && it.state !== "failed");
  const secs = Math.max(0, ...waiting.map((it) => it.seconds));
  return `Loading ${waiting.map((it) => it.label).join(", ")} (first time only): ` +
    `${items.length - waiting.length} of ${items.length} ready, ${secs.toFixed(1)} s`;
}

function showLoading(st) {
  const box = $("loading");
  box.hidden = !st;
  if (!st) return;
  $("loading-text").textContent = loadingText(st);
  $("loading-bar").max = st.total;
  $("loading-bar").value = st.done;
}

function warmBody(extra) { return { hints: store.get("hints", true), ...extra }; }

async function waitForBots(id, my) {  // true once the game's bots are loaded (false: stopped)
  if (warmed.has(id)) return true;
  for (;;) {
    let st;
    try { st = await withServer(() => api("/api/warm", warmBody({ game: id }))); } catch (e) { showLoading(null); return true; }
    if (my !== pumpGen || !state || state.id !== id) { showLoading(null); return false; }
    if (st.items.filter((it) => it.key.startsWith("bot:")).every((it) => it.state === "ready" || it.state === "failed")) {
      warmed.add(id);
      showLoading(null);
      return true;
    }
    showLoading(st);
    await sleep(250);
  }
}

function show(screen) {
  for (const s of ["settings", "table", "results", "watch"]) $(`screen-${s}`).hidden = s !== screen;
  if (screen !== "table") { $("hand-table-box").hidden = true; closeTricks(); }
  hideAnalysis();
  // the analysis panel sits beside the table (below it on a narrow screen), never over it
  $(screen === "watch" ? "watch-side" : "table-side").appendChild($("analysis-box"));
  updateMenu();
}

// ------------------------------------------------------------------ sound (Web Audio, nothing downloaded)
let audio = null;
const TONES = { card: [520, 0.06, "triangle"], trick: [760, 0.12, "sine"], turn: [660, 0.09, "sine"],
  error: [180, 0.18, "square"], hand: [440, 0.3, "sine"] };
function sound(kind) {
  if (!soundOn) return;
  const [freq, dur, type] = TONES[kind];
  try {
    audio = audio || new (window.AudioContext || window.webkitAudioContext)();
    const t = audio.currentTime, o = audio.createOscillator(), g = audio.createGain();
    o.type = type; o.frequency.value = freq;
    g.gain.setValueAtTime(0.0001, t);
    g.gain.exponentialRampToValueAtTime(0.15, t + 0.01);
    g.gain.exponentialRampToValueAtTime(0.0001, t + dur);
    o.connect(g); g.connect(audio.destination);
    o.start(t); o.stop(t + dur + 0.02);
    document.body.dataset.sounds = String(Number(document.body.dataset.sounds || 0) + 1);
  } catch (e) { /* no audio device */ }
}

// ------------------------------------------------------------------ cards
const JOKERS = { BJ: "Big Joker", LJ: "Little Joker" };  // the jokers' deck (Rules.jokers)

function cardEl(card, opts = {}) {
  const el = document.createElement(opts.button ? "button" : "div");
  if (opts.button) el.type = "button";
  if (JOKERS[card]) {  // a joker: its two letters and a star, the big one red
    el.className = `card joker joker-${card}` + (opts.small ? " small" : "");
    el.dataset.card = card;
    el.innerHTML = `<span class="rank">${card}</span><span class="pip">\u2605</span>`;
    el.setAttribute("aria-label", JOKERS[card]);
    return el;
  }
  const rank = card.slice(0, -1), suit = card.slice(-1);
  el.className = `card suit-${suit}` + (opts.small ? " small" : "");
  el.dataset.card = card;
  el.innerHTML = `<span class="rank">${rank}</span><span class="pip">${SUIT_SYMBOL[suit]}</span>`;
  el.setAttribute("aria-label", `${rank} of ${SUIT_NAME[suit]}`);
  return el;
}

function backEl(small) {
  const el = document.createElement("div");
  el.className = "card back" + (small ? " small" : "");
  return el;
}

// ------------------------------------------------------------------ settings
async function loadSettings() {
  $("settings-error").hidden = true;
  const err = (text) => { $("settings-error").hidden = false; $("settings-error").textContent = text; };
  config = await withServer(() => api("/api/config"), err);
  $("settings-error").hidden = true;
  const sel = $("difficulty");
  sel.innerHTML = "";
  for (const lv of config.levels) {
    const o = document.createElement("option");
    o.value = lv.key;
    o.textContent = lv.key === "checkpoint" ? "Trained agent" : lv.key[0].toUpperCase() + lv.key.slice(1);
    sel.appendChild(o);
  }
  const remembered = sel.value || store.get("difficulty", "medium");
  sel.value = config.levels.some((l) => l.key === remembered) ? remembered : config.levels[0].key;
  lineupText();
  warmChosen();
  buildRulesPanel();
  $("hint-setting").checked = store.get("hints", true);
  $("speed-setting").value = store.get("speed", "normal");
  $("autoplay-setting").checked = store.get("autoplay", false);
  const list = await withServer(() => api("/api/games"), err);
  savedGames = list.games;
  renderSaved();
  const st = await withServer(() => api("/api/stats"), err);
  renderStats($("settings-stats"), st.stats);
}

// ------------------------------------------------------------------ the house-rules panel
// The presets come from the server (config.presets, the engine's PRESETS); the server checks
// every combination (POST /api/rules, Rules.parse) and its one-line reason is shown here.
const TARGET_CHOICES = [500, 400, 300, 250, 200, 150, 100];
const LOSS_CHOICES = [null, -100, -200, -250, -300, -500];
let rulesBuilt = false, rulesToken = 0;

function setOptions(sel, values, label) {
  sel.innerHTML = "";
  for (const v of values) {
    const o = document.createElement("option");
    o.value = v === null ? "" : String(v);
    o.textContent = label(v);
    sel.appendChild(o);
  }
}

function selectValue(sel, v, label) {  // choose v, adding it when the list lacks it
  const key = v === null || v === undefined ? "" : String(v);
  if (![...sel.options].some((o) => o.value === key)) {
    const o = document.createElement("option");
    o.value = key; o.textContent = label(v);
    sel.appendChild(o);
  }
  sel.value = key;
}

const targetLabel = (v) => (v === 500 ? "500 points (standard)" : `${v} points`);
const lossLabel = (v) => (v === null ? "Off" : `${v} or below`);
const minLabel = (v) => (v === 0 ? "Off" : `${v} tricks`);

function buildRulesPanel() {
  if (rulesBuilt) return;
  rulesBuilt = true;
  const ps = $("rules-preset");
  ps.innerHTML = "";
  for (const name of Object.keys(config.presets)) {
    const o = document.createElement("option");
    o.value = name; o.textContent = name[0].toUpperCase() + name.slice(1);
    ps.appendChild(o);
  }
  setOptions($("target"), TARGET_CHOICES, targetLabel);
  setOptions($("loss-threshold"), LOSS_CHOICES, lossLabel);
  setOptions($("min-team-bid"), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10], minLabel);
  const saved = store.get("rules", null);
  const preset = saved && config.presets[saved.preset] ? saved.preset : "standard";
  ps.value = preset;
  applyRules({ ...config.presets[preset], ...(saved || {}) });
  checkRules();
}

function applyRules(f) {  // show a rules dict (Rules.to_dict() fields) in the panel
  selectValue($("target"), f.target_score, targetLabel);
  selectValue($("loss-threshold"), f.loss_threshold, lossLabel);
  selectValue($("min-team-bid"), f.min_team_bid, minLabel);
  $("bid-variant").value = f.suicide ? "suicide" : f.mirror ? "mirror" : f.whiz ? "whiz" : "";
  selectValue($("nil-pass"), f.nil_pass, (v) => `${v} cards`);
  selectValue($("blind-nil-deficit"), f.blind_nil_deficit, String);
  $("blind-nil-rule").checked = !!f.blind_nil;
  $("bid-total-not-13").checked = !!f.bid_total_not_13;
  $("spades-any-time").checked = !!f.spades_lead_any_time;
  $("bags-score").checked = f.bags_score_points !== false;
  $("two-of-clubs").checked = !!f.two_of_clubs_leads;
  $("big-bid").checked = (f.big_bid_double || 0) > 0;
  $("moon-wins").checked = !!f.moon_wins;
  $("jokers").checked = !!f.jokers;
}

function panelRules() {  // the rules mapping of the panel: the preset and the fields it shows
  const v = $("bid-variant").value, loss = $("loss-threshold").value;
  return {
    preset: $("rules-preset").value,
    target_score: Number($("target").value),
    loss_threshold: loss === "" ? null : Number(loss),
    suicide: v === "suicide", mirror: v === "mirror", whiz: v === "whiz",
    min_team_bid: Number($("min-team-bid").value),
    bid_total_not_13: $("bid-total-not-13").checked,
    blind_nil: $("blind-nil-rule").checked,
    blind_nil_deficit: Number($("blind-nil-deficit").value),
    nil_pass: Number($("nil-pass").value),
    spades_lead_any_time: $("spades-any-time").checked,
    bags_score_points: $("bags-score").checked,
    two_of_clubs_leads: $("two-of-clubs").checked,
    big_bid_double: $("big-bid").checked ? 10 : 0,
    moon_wins: $("moon-wins").checked,
    jokers: $("jokers").checked,
  };
}

function rulesError(text) {
  $("rules-error").hidden = !text;
  $("rules-error").textContent = text || "";
  $("rules-panel").classList.toggle("refused", !!text);
}

async function checkRules() {  // the server's verdict on the panel: the rules line, or why not
  const token = ++rulesToken, rules = panelRules();
  store.set("rules", rules);
  try {
    const info = await api("/api/rules", { rules });
    if (token !== rulesToken) return;
    rulesError(null);
    $("rules-preview").textContent = info.line;
    $("rules-preview").title = info.items.join("\n");
  } catch (e) {
    if (token !== rulesToken) return;
    $("rules-preview").textContent = "";
    rulesError(e.message);
  }
}

function renderSaved() {
  const ul = $("saved-games");
  ul.innerHTML = "";
  $("continue-box").hidden = savedGames.length === 0;
  savedGames.forEach((g, i) => {
    const li = document.createElement("li");
    const suffix = i === 0 ? "" : `-${i + 1}`;
    li.dataset.game = g.id;
    const text = document.createElement("span");
    if (g.damaged) {
      li.classList.add("damaged");
      text.textContent = `A saved ${g.difficulty} game (${g.target} points) is damaged and cannot be continued: ${g.damaged}`;
    } else {
      text.textContent = `${g.difficulty}, ${g.rules}, hand ${g.hand_number}: ` +
        `${g.teams[0].name} ${g.teams[0].score} \u2013 ${g.teams[1].name} ${g.teams[1].score}`;
    }
    li.appendChild(text);
    const btns = document.createElement("span");
    btns.className = "buttons";
    if (!g.damaged) {
      const c = document.createElement("button");
      c.type = "button"; c.className = "primary"; c.textContent = "Continue";
      c.dataset.testid = `continue${suffix}`;
      c.onclick = () => continueGame(g.id);
      btns.appendChild(c);
    }
    const d = document.createElement("button");
    d.type = "button"; d.textContent = "Discard";
    d.dataset.testid = `discard${suffix}`;
    d.onclick = () => discardGame(g.id);
    btns.appendChild(d);
    li.appendChild(btns);
    ul.appendChild(li);
  });
}

async function continueGame(id) {
  try {
    enterGame(await withServer(() => api(`/api/games/${id}`)));
  } catch (e) {
    $("settings-error").hidden = false; $("settings-error").textContent = e.message;
    loadSettings();
  }
}

async function discardGame(id) {
  try { await withServer(() => api(`/api/games/${id}`, undefined, "DELETE")); } catch (e) { /* gone */ }
  await loadSettings();
}

function warmChosen() {  // load the chosen difficulty's bots (and the hint) ahead of Play
  const difficulty = $("difficulty").value;
  if (difficulty) api("/api/warm", warmBody({ difficulty })).catch(() => {});
}

function lineupText() {
  const lv = config && config.levels.find((l) => l.key === $("difficulty").value);
  $("lineup-text").textContent = lv ? `Opponents (Lily and Zoe): ${lv.opponents}. Your partner Max: ${lv.partner}.` : "";
}

function pct(x) { return x === null || x === undefined ? "\u2013" : `${Math.round(100 * x)}%`; }
function num(x, d = 1) { return x === null || x === undefined ? "\u2013" : x.toFixed(d); }

function renderStats(box, stats, only) {
  box.innerHTML = "";
  // one row per difficulty and rule set (the rules spec): games under other rules never mix
  const rows = (stats || []).filter((s) => !only || (s.difficulty === only.difficulty && s.rules === only.rules));
  if (!rows.length) { box.textContent = only ? "No finished game yet." : ""; return; }
  const t = document.createElement("table");
  t.className = "scoretable";
  t.innerHTML = "<tr><th>Level</th><th>Rules</th><th>Played</th><th>Won</th><th>Win rate</th>" +
    "<th>Points / hand</th><th>Contracts made</th><th>Nil made / bid</th></tr>";
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.dataset.difficulty = s.difficulty; tr.dataset.target = s.target; tr.dataset.rules = s.rules;
    tr.innerHTML = `<td>${esc(s.difficulty)}</td><td class="rules" title="${esc(s.rules)}">${esc(s.rules_line)}</td><td class="games">${s.games}</td>` +
      `<td class="wins">${s.wins}</td><td>${pct(s.win_rate)}</td><td>${num(s.avg_points_per_hand)}</td>` +
      `<td>${s.contracts_made} / ${s.contracts}</td><td>${s.nil_made} / ${s.nil_bids}</td>`;
    t.appendChild(tr);
  }
  box.appendChild(t);
}

function askNewGame() {
  const open = savedGames.filter((g) => !g.damaged).length;
  if (!open) { newGame(); return; }
  $("confirm-text").textContent = `You have ${open} unfinished game${open > 1 ? "s" : ""}. ` +
    "Start a new one? The unfinished ones stay saved and can be continued later.";
  $("confirm-box").hidden = false;
  $("play").hidden = true;
}

async function newGame() {
  $("confirm-box").hidden = true;
  $("play").hidden = false;
  try {
    const g = await withServer(() => api("/api/games", {
      difficulty: $("difficulty").value, rules: panelRules(),
    }));
    enterGame(g);
  } catch (e) {
    if (e.status === 422 && !/difficulty/.test(e.message)) rulesError(e.message);  // the engine's reason
    else { $("settings-error").hidden = false; $("settings-error").textContent = e.message; }
  }
}

// ------------------------------------------------------------------ the address: one entry per screen
// "" the settings, "#game=ID" a game (its table, or its results once over), "#watch" the replay
// view, "#watch=KEY" one replay; Back and Forward move between them (popstate -> routeFromHash)
function navigate(hash, replace) {
  if (location.hash === hash || (!hash && !location.hash)) return;
  const url = location.pathname + location.search + hash;
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
}

function enterGame(g, opts = {}) {
  const again = state && state.id === g.id;
  if (!again) releaseGame();
  state = g;
  showLastTrickUntil = 0;
  // back at a trick just completed (a reload, Back): it stays shown for the usual pause
  if (opts.restore && g.last_move && g.last_move.completed_trick && !g.trick.length) {
    showLastTrickUntil = Date.now() + TRICK_PAUSE;
  }
  if (!opts.fromAddress) navigate(`#game=${g.id}`);
  claimGame();
  route();
}

function toSettings(opts = {}) {
  releaseGame();
  state = null;
  pumpGen++;
  if (!opts.fromAddress) navigate("");
  show("settings");
  loadSettings();
}

// the screen the address names (page load, Back, Forward)
async function routeFromHash() {
  const h = location.hash;
  const m = /^#game=([A-Za-z0-9_-]{1,64})$/.exec(h);
  if (m) {
    if (state && state.id === m[1]) { route(); return; }
    try {
      const g = await withServer(() => api(`/api/games/${m[1]}`));
      if (location.hash === h) enterGame(g, { fromAddress: true, restore: true });
    } catch (e) {
      navigate("", true);
      toSettings({ fromAddress: true });
      $("settings-error").hidden = false;
      $("settings-error").textContent = `That game cannot be opened: ${e.message}`;
    }
    return;
  }
  if (h === "#watch" || h.startsWith("#watch=")) {
    releaseGame();
    state = null;
    const key = h.startsWith("#watch=") ? decodeURIComponent(h.slice(7)) : undefined;
    if (!replay || !key || replay.key !== key) await openWatch(key, { fromAddress: true });
    else show("watch");
    return;
  }
  toSettings({ fromAddress: true });
}

// ------------------------------------------------------------------ one game in several tabs
// The tab that opens a game plays it and says so to the others (BroadcastChannel); another tab
// on the same game stops its bots, says the game is open elsewhere, follows each move, and
// takes the game over with one click (or by itself when the playing tab leaves it).
const TAB = Math.random().toString(36).slice(2);
const channel = "BroadcastChannel" in window ? new BroadcastChannel("spades-play") : null;
let elsewhere = false;  // the game shown here is played in another tab

function tell(type, extra) {
  if (channel && state) channel.postMessage({ type, game: state.id, tab: TAB, ...(extra || {}) });
}

function claimGame() { elsewhere = false; tell("claim"); }

function releaseGame() {
  if (state && !elsewhere) tell("release");
  elsewhere = false;
}

async function refreshGame() {  // the game as it stands on the server, shown without a sound
  if (!state) return;
  const id = state.id;
  await serial(async () => {
    try {
      const g = await withServer(() => api(`/api/games/${id}`));
      if (!state || state.id !== id) return;
      state = g;
      if (g.result && !g.hand_table && elsewhere) { render(); return; }
      if (onTable()) render();
    } catch (e) { /* keep what is shown */ }
  });
}

async function takeOver() {
  if (!state) return;
  claimGame();
  await refreshGame();
  if (state) route();
}

if (channel) {
  channel.onmessage = (e) => {
    const m = e.data || {};
    if (!state || m.game !== state.id || m.tab === TAB) return;
    if (m.type === "claim") {
      elsewhere = true;
      pumpGen++;
      if (onTable()) render();
    } else if (m.type === "moved" && elsewhere) {
      refreshGame();
    } else if (m.type === "release" && elsewhere) {
      takeOver();
    }
  };
}

function route() {
  if (!state) { show("settings"); return; }
  if (elsewhere && state.result && !state.hand_table) { show("table"); render(); return; }
  if (state.result && !state.hand_table) { showResults(); return; }
  show("table");
  render();
  pump();
}

// ------------------------------------------------------------------ the table
function seatOf(pos) { return state.seats.find((s) => s.position === pos); }

function renderScore() {
  const parts = state.teams.map((t) => {
    const contract = t.bids_complete ? `${t.tricks}/${t.contract}` : `${t.tricks}/\u2013`;
    return `<span class="team${t.yours ? " yours" : ""}" data-team="${t.team}">` +
      `<b>${esc(t.name)}</b> <span class="pts">${t.score}</span> <span class="bags">(${t.bags})</span>` +
      ` <span class="contract" title="tricks / contract">tricks ${contract}</span></span>`;
  });
  $("score").innerHTML = parts.join("") +
    `<span class="meta">Hand ${state.hand_number} \u00b7 to ${state.target} \u00b7 ${esc(state.difficulty)}</span>`;
  renderRules();
}

function renderRules() {  // the compact rules line; the full list on tap (title on hover)
  const r = state.rules, chip = $("rules-chip");
  if (chip.dataset.spec === r.spec) return;
  chip.dataset.spec = r.spec;
  chip.textContent = r.line;
  chip.title = r.items.join("\n");
  chip.setAttribute("aria-label", `Rules: ${r.line}. Show all rules`);
  $("rules-list").innerHTML = r.items.map((x) => `<li>${esc(x)}</li>`).join("");
}

function toggleRules(open) {
  const list = $("rules-list");
  list.hidden = open === undefined ? !list.hidden : !open;
  $("rules-chip").setAttribute("aria-expanded", String(!list.hidden));
}

function renderSeat(pos) {
  const s = seatOf(pos);
  const box = $(`seat-${pos}`);
  box.className = `seat seat-${pos}` + (s.to_act ? " to-act" : "") + (s.team === 0 ? " us" : " them");
  const bid = s.bid_text === null ? "" : `<span class="bid">bid ${esc(s.bid_text)}</span>`;
  const tricks = s.bid === null ? `${s.tricks}` : `${s.tricks}/${s.bid}`;
  box.innerHTML =
    `<div class="name"><span class="pname" data-testid="seat-${COMPASS[pos]}">${esc(s.name)}</span>` +
    `${s.level ? ` <small>${esc(s.level)}</small>` : ""}` +
    `${s.dealer ? ' <span class="dealer" title="dealer">D</span>' : ""}</div>` +
    `<div class="info">${bid} <span class="tricks" title="tricks / bid">tricks ${tricks}</span></div>`;
  if (pos !== "bottom") {
    const backs = document.createElement("div");
    backs.className = "backs";
    for (let i = 0; i < s.cards_left; i++) backs.appendChild(backEl(true));
    box.appendChild(backs);
  }
}

let trickTimer = null;
function renderTrick() {
  const box = $("trick");
  box.innerHTML = "";
  let cards = state.trick, winner = null;
  const lastShown = state.last_trick && (state.phase === "hand over" || Date.now() < showLastTrickUntil);
  if (!cards.length && lastShown) {
    cards = state.last_trick.cards; winner = state.last_trick.winner;
    clearTimeout(trickTimer);
    if (state.phase !== "hand over") trickTimer = setTimeout(() => { if (state) renderTrick(); }, showLastTrickUntil - Date.now() + 5);
  }
  for (const c of cards) {
    const pos = state.seats[c.seat].position;
    const el = cardEl(c.card);
    el.classList.add(`at-${pos}`);
    el.dataset.seat = String(c.seat);
    if (winner === c.seat) el.classList.add("winner");
    box.appendChild(el);
  }
  // in the table's bottom-left corner, beside your card on the table, never under it
  $("broken").textContent = state.phase === "play" ? (state.spades_broken ? "spades broken" : "spades not broken") : "";
}

// the player's own order of the hand (drag to reorder), kept per game and per hand: a new deal
// comes in the server's order (by suit, high to low); a card it does not know (passed by the
// partner) goes after the card that precedes it in the server's order
function orderKey() { return `order.${state.id}`; }

function savedOrder() {
  const saved = store.get(orderKey(), null);
  if (!saved || Array.isArray(saved) || saved.hand !== state.hand_number) return null;
  return saved.cards;
}

function orderedHand() {
  const order = savedOrder();
  if (!order) return state.hand;
  const out = state.hand.filter((h) => order.includes(h.card))
    .sort((a, b) => order.indexOf(a.card) - order.indexOf(b.card));
  state.hand.forEach((h, i) => {
    if (order.includes(h.card)) return;
    const before = state.hand.slice(0, i).reverse().find((p) => out.includes(p));
    out.splice(before ? out.indexOf(before) + 1 : 0, 0, h);
  });
  return out;
}

function renderHand() {
  const box = $("hand");
  box.innerHTML = "";
  if (!state.looked && state.phase !== "hand over") {
    for (let i = 0; i < state.seats[2].cards_left; i++) box.appendChild(backEl(false));
    return;
  }
  const clickable = state.your_turn && !elsewhere && (state.phase === "play" || state.phase === "exchange");
  for (const h of orderedHand()) {
    const el = cardEl(h.card, { button: true });
    el.dataset.legal = String(h.legal);
    el.dataset.action = String(h.action);
    if (h.legal) el.classList.add("legal");
    if (suggested && suggested.seq === state.seq && suggested.action === h.action) el.classList.add("suggested");
    if (!clickable) el.classList.add("idle");
    el.addEventListener("pointerdown", (e) => startDrag(e, el, h));
    el.addEventListener("click", () => { if (!dragJustEnded) playCard(h.action, el); });
    box.appendChild(el);
  }
}

// ------------------------------------------------------------------ drag: onto the table to play, within the hand to reorder
let drag = null, dragJustEnded = false;
function startDrag(e, el, h) {
  if (e.button !== 0) return;
  drag = { el, h, x0: e.clientX, y0: e.clientY, moved: false, id: e.pointerId };
  try { el.setPointerCapture(e.pointerId); } catch (err) { /* synthetic */ }
  el.addEventListener("pointermove", onDragMove);
  el.addEventListener("pointerup", onDragEnd);
  el.addEventListener("pointercancel", onDragEnd);
}

function onDragMove(e) {
  if (!drag) return;
  const dx = e.clientX - drag.x0, dy = e.clientY - drag.y0;
  if (!drag.moved && Math.hypot(dx, dy) < 6) return;
  drag.moved = true;
  drag.el.classList.add("dragging");
  drag.el.style.transform = `translate(${dx}px, ${dy}px)`;
  $("felt").classList.toggle("drop-target", inside($("felt"), e) && !inside($("hand"), e));
}

function inside(el, e) {
  const r = el.getBoundingClientRect();
  return e.clientX >= r.left && e.clientX <= r.right && e.clientY >= r.top && e.clientY <= r.bottom;
}

function onDragEnd(e) {
  const d = drag;
  drag = null;
  if (!d) return;
  d.el.removeEventListener("pointermove", onDragMove);
  d.el.removeEventListener("pointerup", onDragEnd);
  d.el.removeEventListener("pointercancel", onDragEnd);
  $("felt").classList.remove("drop-target");
  if (!d.moved) return;  // a click: the click handler plays the card
  dragJustEnded = true;
  setTimeout(() => { dragJustEnded = false; }, 0);
  d.el.classList.remove("dragging");
  d.el.style.transform = "";
  if (e.type === "pointerup" && inside($("felt"), e) && !inside($("hand"), e)) {
    playCard(d.h.action, d.el);
  } else if (e.type === "pointerup" && inside($("hand"), e)) {
    reorder(d.h.card, e.clientX);
  }
}

function reorder(card, x) {
  const others = [...$("hand").querySelectorAll(".card")].filter((c) => c.dataset.card !== card);
  let at = others.length;
  for (let i = 0; i < others.length; i++) {
    const r = others[i].getBoundingClientRect();
    if (x < r.left + r.width / 2) { at = i; break; }
  }
  const order = others.map((c) => c.dataset.card);
  order.splice(at, 0, card);
  store.set(orderKey(), { hand: state.hand_number, cards: order });
  renderHand();
}

// the count runs over 1..13; a bid the engine refuses now (bidding.refused, from its legal
// actions) has its button disabled and the engine's reason in the status line, where a refused
// card's reason shows
function renderBidPanel() {
  const b = state.bidding;
  $("bidpanel").hidden = !b;
  if (!b) return;
  const deciding = b.blind_nil || b.look;
  $("bid-decide").hidden = !deciding;
  $("bid-count").hidden = deciding;
  if (!deciding) {
    const counts = b.bids.filter((x) => x > 0);
    if (counts.length && !counts.includes(bidValue)) {  // the nearest legal count
      bidValue = counts.reduce((best, x) => (Math.abs(x - bidValue) < Math.abs(best - bidValue) ? x : best));
    }
    $("bid-nil").title = b.nil ? "" : (b.refused["0"] || "");
  }
  showBidValue();
}

function showBidValue() {
  const b = state && state.bidding;
  if (!b || b.blind_nil || b.look) return;
  $("bid-value").textContent = String(bidValue);
  const ok = bidButtons();
  const why = ok ? "" : b.refused[String(bidValue)];
  $("status").dataset.bidRefused = why ? String(bidValue) : "";
  if (why) setStatus(why, true);
  else setStatus(paused ? `Paused. ${state.status}` : state.status, false);
}

// the bid panel's buttons as the bid allows (all off while a bid is being sent); whether the
// count shown may be bid
function bidButtons() {
  const b = state && state.bidding;
  $("bidpanel").classList.toggle("sending", bidSending);
  if (!b) return false;
  const ok = b.bids.includes(bidValue);
  $("bid-submit").disabled = bidSending || !ok;
  $("bid-minus").disabled = bidSending || bidValue <= 1;
  $("bid-plus").disabled = bidSending || bidValue >= 13;
  $("bid-nil").disabled = bidSending || !b.nil;
  $("bid-blind-nil").disabled = $("bid-look").disabled = bidSending;
  return ok;
}

function bidWords(action) {
  if (action === BLIND_NIL) return "Blind Nil";
  if (action === LOOK) return null;
  return action === BID_OFFSET ? "Nil" : String(action - BID_OFFSET);
}

function setStatus(text, error) {
  $("status").textContent = text;
  $("status").classList.toggle("error", !!error);
}

function render() {
  renderScore();
  for (const pos of ["top", "left", "right", "bottom"]) renderSeat(pos);
  renderTrick();
  renderHand();
  setStatus(paused ? `Paused. ${state.status}` : state.status, false);
  renderBidPanel();
  renderHandTable();
  $("hint").hidden = !(store.get("hints", true) && state.your_turn) || elsewhere;
  $("tricks-button").hidden = !(state.hand_tricks && state.hand_tricks.length);
  if (!$("tricks-box").hidden) renderTricks();
  if (!$("analysis-box").hidden) fitAnalysis();
  maybeAutoPlay();
  $("elsewhere").hidden = !elsewhere;
  if (elsewhere) $("bidpanel").hidden = true;
  if (hintSeq !== null && hintSeq !== state.seq) hideAnalysis();
}

function bidText(bid, blind) {
  if (bid === null || bid === undefined) return "\u2013";
  if (blind) return "Blind Nil";
  return bid === 0 ? "Nil" : String(bid);
}

// orders: per team, the positions of the shown seats in the table's (lower seat, higher seat)
function handTableHtml(hr, names, orders) {
  const [a, b] = hr.teams;
  const ord = (t) => (orders ? orders[t.team] : [0, 1]);
  const row = (label, f) => `<tr><th>${label}</th><td>${f(a)}</td><td>${f(b)}</td></tr>`;
  const bids = (t) => ord(t).map((i) => bidText(t.bids[i], t.blind[i])).join(" + ");
  const made = (t) => t.made === null ? "no contract" : (t.made ? "made" : "set");
  return `<tr><th></th><th>${esc(names[0])}</th><th>${esc(names[1])}</th></tr>` +
    row("Bids", bids) +
    row("Tricks", (t) => ord(t).map((i) => t.tricks[i]).join(" + ")) +
    row("Contract", (t) => `${t.contract} (${made(t)})`) +
    row("Contract points", (t) => t.contract_points) +
    row("Bags", (t) => t.bags) +
    row("Nil bonus / penalty", (t) => t.nil_points) +
    row("Bag penalty", (t) => t.bag_penalty) +
    row("Points this hand", (t) => `<b>${t.hand_points}</b>`) +
    row("Game total (bags)", (t) => `<b class="total">${t.total}</b> (${t.bags_after})`);
}

function renderHandTable() {
  const hr = state.hand_table;
  $("hand-table-box").hidden = !hr;
  if (!hr) return;
  $("hand-table-title").textContent = `Hand ${hr.hand_number + 1} over` + (state.result ? ": game over" : "");
  $("hand-table").innerHTML = handTableHtml(hr, state.teams.map((t) => t.name), state.teams.map((t) => t.order));
}

// the last trick (its four cards, who played each, who won) and every trick of this hand so far,
// from the view's hand_tricks (the server's game state: the same after a reload)
function cardText(card) {
  if (JOKERS[card]) return esc(card);
  const suit = card.slice(-1), sym = SUIT_SYMBOL[suit];
  return esc(card.slice(0, -1)) + (suit === "H" || suit === "D" ? `<span class="red">${sym}</span>` : sym);
}

function renderTricks() {
  const tricks = (state && state.hand_tricks) || [];
  if (!tricks.length) { closeTricks(); return; }
  const last = tricks[tricks.length - 1], name = (s) => state.seats[s].name;
  $("tricks-title").textContent = `Last trick (trick ${last.number} of hand ${state.hand_number})`;
  const box = $("last-trick-cards");
  box.innerHTML = "";
  last.cards.forEach((c, i) => {
    const item = document.createElement("div");
    item.className = "lt-play" + (c.seat === last.winner ? " won" : "");
    item.dataset.seat = String(c.seat);
    const el = cardEl(c.card);
    if (c.seat === last.winner) el.classList.add("winner");
    item.appendChild(el);
    const who = document.createElement("span");
    who.className = "who";
    who.textContent = name(c.seat) + (i === 0 ? " (led)" : "");
    item.appendChild(who);
    box.appendChild(item);
  });
  $("last-trick-winner").textContent = `${name(last.winner)} won it.`;
  $("tricks-hand-title").textContent = `Hand ${state.hand_number}: ${tricks.length} trick${tricks.length === 1 ? "" : "s"} so far`;
  const order = ["bottom", "left", "top", "right"].map((p) => seatOf(p).seat);
  const head = `<tr><th>#</th>${order.map((s) => `<th>${esc(name(s))}</th>`).join("")}<th>Won by</th></tr>`;
  const rows = tricks.map((t) => {
    const bySeat = {};
    t.cards.forEach((c, i) => { bySeat[c.seat] = { card: c.card, led: i === 0 }; });
    const cells = order.map((s) => {
      const x = bySeat[s];
      const cls = [s === t.winner ? "won" : "", x.led ? "led" : ""].join(" ").trim();
      return `<td class="${cls}" data-seat="${s}" data-card="${esc(x.card)}"${x.led ? ' title="led"' : ""}>${cardText(x.card)}</td>`;
    }).join("");
    return `<tr data-trick="${t.number}"><th>${t.number}</th>${cells}<td class="winner-name">${esc(name(t.winner))}</td></tr>`;
  });
  $("tricks-table").innerHTML = head + rows.join("");
}

function openTricks() {
  if (!state || !(state.hand_tricks && state.hand_tricks.length)) return;
  $("tricks-box").hidden = false;
  $("tricks-button").setAttribute("aria-expanded", "true");
  renderTricks();
  $("tricks-close").focus();
}

function closeTricks() {
  $("tricks-box").hidden = true;
  $("tricks-button").setAttribute("aria-expanded", "false");
}

// ------------------------------------------------------------------ moves
function afterState(before) {
  const m = state.last_move;
  if (m && m.completed_trick) showLastTrickUntil = Date.now() + TRICK_PAUSE;
  if (before && state.seq !== before.seq && m) sound(m.completed_trick ? "trick" : (m.kind === "play" ? "card" : "turn"));
  if (before && state.hand_table && !before.hand_table) sound("hand");
  else if (before && state.your_turn && !before.your_turn) sound("turn");
  if (!$("screen-table").hidden) render();
}

// one game request, after the ones before it; body() is read when it is sent (null: not now)
function send(path, body) {
  return serial(async () => {
    if (!state) return false;
    const b = body ? body() : {};
    if (b === null) return false;
    const before = state, id = state.id;
    try {
      const next = await withServer(() => api(path, b));
      if (!state || state.id !== id) return false;
      state = next;
      tell("moved", { seq: next.seq });
      afterState(before);
      return true;
    } catch (e) {
      if (!state || state.id !== id) return false;
      setStatus(e.message, true);
      if (e.status === 409) {  // out of step with the server (another tab or window): catch up
        try {
          state = await withServer(() => api(`/api/games/${id}`));
          render();
          if (/^stale move|moved on/.test(e.message)) {
            setStatus("The game had moved on elsewhere (another tab or window): this is where it stands now", true);
            setTimeout(() => pump(), 0);
          } else setStatus(e.message, true);
        } catch (e2) { /* keep */ }
      }
      const err = new Error(e.message); err.status = e.status;
      return err;
    }
  });
}

async function act(action, el) {
  if (!state || !state.your_turn) return;
  if (elsewhere) { setStatus("This game is open in another tab: Play here takes it over", true); return; }
  const bid = action >= BID_OFFSET;
  if (bid) {  // one bid at a time: the panel is off, and says so, until the answer
    if (bidSending) return;
    bidSending = true;
    bidButtons();
    const words = bidWords(action);
    setStatus(words ? `Bidding ${words}\u2026` : "Looking at your cards\u2026", false);
  }
  let res;
  try {
    res = await send(`/api/games/${state.id}/action`, () => (state.your_turn ? { action, seq: state.seq } : null));
  } finally {
    if (bid) { bidSending = false; bidButtons(); }
  }
  if (res === true) { pump(); return; }
  if (res instanceof Error) {
    sound("error");
    if (el && res.status === 422) {
      el.classList.remove("shake");
      void el.offsetWidth;  // restart the animation
      el.classList.add("shake");
      setTimeout(() => el.classList.remove("shake"), 650);
    }
  }
}

function playCard(action, el) { act(action, el); }

// the option "play a forced card by itself": on your turn in play with one legal card, it is
// played after the bots' delay (once per position; a pause or another tab holds it)
let autoSeq = null;
function maybeAutoPlay() {
  if (!store.get("autoplay", false) || !state || !state.your_turn || state.phase !== "play" ||
      state.hand_table || paused || elsewhere) return;
  const legal = state.hand.filter((h) => h.legal);
  if (legal.length !== 1 || autoSeq === state.seq) return;
  const seq = autoSeq = state.seq, id = state.id;
  setTimeout(() => {
    if (state && state.id === id && state.seq === seq && state.your_turn && !paused && !elsewhere) act(legal[0].action);
  }, Math.max(300, BOT_DELAY));
}

function onTable() { return state && !$("screen-table").hidden; }

// let the bots move one at a time, with a pause so that the trick can be followed; a new call
// replaces the running loop (so a quick Next or a resume never finds it busy)
async function pump() {
  const my = ++pumpGen;
  let failures = 0;
  if (state && !state.your_turn && !state.hand_table && !state.result && !elsewhere && !paused && onTable()) {
    if (!(await waitForBots(state.id, my))) return;
  }
  while (my === pumpGen && onTable() && !paused && !elsewhere) {
    if (state.your_turn || state.hand_table || state.result) break;
    const wait = Math.max(BOT_DELAY, showLastTrickUntil - Date.now(), failures ? 300 : 0);
    await sleep(wait);
    if (my !== pumpGen || !onTable() || paused || elsewhere) break;
    const res = await send(`/api/games/${state.id}/advance`, () =>
      (!paused && state && !state.your_turn && !state.hand_table && !state.result ? { seq: state.seq } : null));
    if (res instanceof Error) {
      if (res.status !== 409 || ++failures > 5) break;
    } else failures = 0;
  }
}

async function nextHand() {
  if (!state) return;
  showLastTrickUntil = 0;
  if ((await send(`/api/games/${state.id}/next`, null)) === true) route();
}

// ------------------------------------------------------------------ menu: pause, new game, sound
function updateMenu() {
  const playing = !!state && !$("screen-table").hidden;
  $("menu-pause").hidden = paused || !playing;
  $("menu-resume").hidden = !paused;
  $("menu-sound").setAttribute("aria-pressed", String(soundOn));
  $("menu-sound").textContent = soundOn ? "Sound: on" : "Sound: off";
  const sp = store.get("speed", "normal");
  $("menu-speed").textContent = `Speed: ${sp[0].toUpperCase()}${sp.slice(1)}`;
  $("paused-banner").hidden = !paused;
  document.body.classList.toggle("paused", paused);
}

function setPaused(p) {
  paused = p;
  updateMenu();
  closeMenu();
  if (state && !$("screen-table").hidden) {
    setStatus(paused ? `Paused. ${state.status}` : state.status, false);
    if (!paused) pump(); else pumpGen++;
  }
}

function closeMenu() { $("menu-panel").hidden = true; $("menu").setAttribute("aria-expanded", "false"); }

// ------------------------------------------------------------------ what the agent thinks
function hideAnalysis() {
  $("analysis-box").hidden = true;
  $("screen-table").classList.remove("with-side");
  hintSeq = null;
  $("hint-line").hidden = true;
  updateDetails();
  if (suggested) { suggested = null; if (state && !$("screen-table").hidden) renderHand(); }
}

// the hint in one line: the move to make and why, the card raised in the hand or the bid set in
// the bid box. In play the search's best (expected points of the hand); in bidding, where the
// search gives no values, the agent's first choice
function hintSuggestion(a) {
  const row = (x) => (x === null || x === undefined ? null : a.rows.find((r) => r.action === x));
  const bySearch = a.phase === "play" ? row(a.best_value) : null, byAgent = row(a.best_prob);
  const pick = bySearch || byAgent;
  if (!pick) return null;
  const pct = (r) => `${(100 * r.prob).toFixed(0)}%`;
  const move = pick.action < BID_OFFSET ? `Play ${pick.label}` :
    (pick.action === LOOK ? "Look at your cards" : (pick.action === BLIND_NIL || pick.action === BID_OFFSET ? `Bid ${pick.label}` : pick.label.replace(/^bid/, "Bid")));
  let why;
  if (bySearch) {
    const pts = `${pick.value > 0 ? "+" : ""}${pick.value.toFixed(1)}`;
    why = `the most points expected this hand (${pts} for your team against theirs)`;
    if (byAgent && byAgent !== pick && byAgent.prob !== null) why += `; the agent would play ${byAgent.label} (${pct(byAgent)})`;
    else if (pick.prob !== null) why += `, also the agent's choice (${pct(pick)})`;
  } else {
    why = `the agent's choice (${pct(pick)})`;
  }
  return { action: pick.action, text: `${move}: ${why}.` };
}

// with the one-line hint shown, its full table (and the note) is one click away, behind Details
// (the choice remembered); without a hint line (thinking, no hint, the replay) it shows as is
function updateDetails() {
  const collapsible = !$("hint-line").hidden, open = store.get("hintDetails", false);
  const btn = $("analysis-details");
  btn.hidden = !collapsible;
  btn.textContent = open ? "Hide details" : "Details";
  btn.setAttribute("aria-expanded", String(open));
  $("analysis-detail").hidden = collapsible && !open;
}

function showSuggestion(a) {
  const sg = a && hintSuggestion(a);
  $("hint-line").hidden = !sg;
  updateDetails();
  if (!sg) return;
  $("hint-line").textContent = sg.text;
  suggested = { seq: state.seq, action: sg.action };
  if (sg.action < BID_OFFSET) renderHand();
  else if (sg.action > BID_OFFSET && sg.action < BLIND_NIL && state.bidding) {
    bidValue = sg.action - BID_OFFSET;  // the suggested bid, preset in the bid box
    showBidValue();
  }
}

function renderAnalysis(a, title, note) {
  $("analysis-title").textContent = title;
  const t = $("analysis");
  const notes = [];
  if (note) notes.push(note);
  if (a && a.checkpoint_error) notes.push(`Probabilities unavailable: ${a.checkpoint_error}`);
  if (a && a.phase !== "play") notes.push("The search bot values cards in the play phase only.");
  $("analysis-note").textContent = notes.join(" ");
  if (!a) { t.innerHTML = ""; return; }
  const head = `<tr><th>Move</th><th colspan="2" title="${esc(a.checkpoint || "no checkpoint")}">Agent</th><th title="the search bot (${esc(a.search)}): expected score difference of the hand, points">Search</th></tr>`;
  // each bar in a column of its own (never under a number), as long as the row's probability
  // against the most probable move's (full length): 23.9% and 27.1% are 88% and 100% long
  const top = Math.max(0, ...a.rows.map((r) => r.prob || 0));
  const rows = a.rows.map((r) => {
    const p = r.prob === null ? "\u2013" : `${(100 * r.prob).toFixed(1)}%`;
    const bar = r.prob === null || top <= 0 ? "" : `<span class="bar" style="width:${(100 * r.prob / top).toFixed(1)}%"></span>`;
    const v = r.value === null ? "\u2013" : `${r.value > 0 ? "+" : ""}${r.value.toFixed(1)}`;
    const cls = [r.played ? "played" : "", r.action === a.best_prob ? "best-prob" : "", r.action === a.best_value ? "best-value" : ""].join(" ").trim();
    const label = r.label.replace(/([\u2665\u2666])/g, '<span class="red">$1</span>');
    return `<tr data-action="${r.action}" class="${cls}"><td class="move">${r.played ? '<span class="mark" title="the move played">\u25B6</span> ' : ""}${label}</td>` +
      `<td class="pbar">${bar}</td><td class="prob"><span class="num">${p}</span></td><td class="value">${v}</td></tr>`;
  });
  t.innerHTML = head + rows.join("");
  fitAnalysis();
}

// on a narrow screen the panel is below the hand: it takes the room left under it and scrolls
// inside, so the page never grows past the window (beside the table it keeps its own height)
function fitAnalysis() {
  const box = $("analysis-box");
  box.style.maxHeight = "";
  box.classList.remove("fitted");
  if (box.hidden || $("screen-table").hidden || !matchMedia("(max-width: 700px)").matches) return;
  const top = box.getBoundingClientRect().top + scrollY;
  const pad = parseFloat(getComputedStyle($("screen-table")).paddingBottom) || 0;
  box.style.maxHeight = `${Math.max(160, Math.floor(innerHeight - top - pad - 2))}px`;
  box.classList.add("fitted");
}

async function showHint() {
  if (!state || !state.your_turn) return;
  const seq = state.seq, id = state.id;
  hintSeq = seq;
  $("analysis-box").hidden = false;
  $("screen-table").classList.add("with-side");
  renderAnalysis(null, "Thinking\u2026", "");
  let answered = false;
  (async () => {  // the first hint after a start loads the agent: say how far that is
    await sleep(300);
    while (!answered && hintSeq === seq) {
      let st;
      try { st = await api("/api/warm", warmBody({ game: id, hints: true })); } catch (e) { return; }
      const it = st.items.find((x) => x.key === "analysis");
      if (answered || hintSeq !== seq || !it || it.state !== "loading") return;
      renderAnalysis(null, "Loading the hint\u2026", loadingText(st, "analysis"));
      await sleep(250);
    }
  })();
  try {
    const h = await api(`/api/games/${id}/hint`);
    answered = true;
    if (!state || state.id !== id || state.seq !== seq) return;
    renderAnalysis(h.analysis, "What the agent thinks of your move",
      "From your own view only: the agent's probability of each move and the search bot's expected points.");
    showSuggestion(h.analysis);
    fitAnalysis();
  } catch (e) {
    answered = true;
    renderAnalysis(null, "No hint", e.message);
  }
}

// ------------------------------------------------------------------ results
async function showResults() {
  show("results");
  const r = state.result;
  $("result-text").textContent = `${r.text} after ${r.hands} hands`;
  $("result-download").href = `/api/watch/game/${encodeURIComponent(state.id)}/record`;
  const names = state.teams.map((t) => esc(t.name));
  $("result-contracts").innerHTML =
    `<tr><th></th><th>${names[0]}</th><th>${names[1]}</th></tr>` +
    `<tr><th>Final score (bags)</th><td>${state.teams[0].score} (${state.teams[0].bags})</td><td>${state.teams[1].score} (${state.teams[1].bags})</td></tr>` +
    `<tr><th>Contracts made</th><td>${r.contracts[0].made}</td><td>${r.contracts[1].made}</td></tr>` +
    `<tr><th>Contracts missed</th><td>${r.contracts[0].missed}</td><td>${r.contracts[1].missed}</td></tr>`;
  $("stats-title").textContent = `Your statistics: ${state.difficulty}, ${state.rules.line}`;
  $("results").dataset.rules = state.rules.spec;
  renderStats($("stats"), r.stats ? [r.stats] : [], { difficulty: state.difficulty, rules: state.rules.spec });
  $("watch-this").onclick = () => { const id = state.id; releaseGame(); state = null; openWatch(`game/${id}`); };
}

// ------------------------------------------------------------------ watch (all four hands), hand by hand
let replay = null, frameIdx = 0, replayToken = 0;

function watchEmpty(on) {
  $("watch-empty").hidden = !on;
  $("watch-body").hidden = on;
}

async function openWatch(key, opts = {}) {
  pumpGen++;
  if (!opts.fromAddress) navigate(key ? `#watch=${encodeURIComponent(key)}` : "#watch");
  show("watch");
  replay = null;
  $("watch-title").textContent = "";
  $("watch-error").hidden = true;
  $("watch-download").hidden = true;
  clearUploadList();
  watchEmpty(true);
  const list = await withServer(() => api("/api/watch"), (t) => { $("watch-error").hidden = false; $("watch-error").textContent = t; });
  $("watch-error").hidden = true;
  const sel = $("watch-source");
  sel.innerHTML = '<option value="">Choose a finished game or a record\u2026</option>';
  for (const g of list.games) {
    const o = document.createElement("option");
    o.value = g.key;
    o.textContent = gameLabel(g);
    o.title = `${g.hands} hands`;
    sel.appendChild(o);
  }
  for (const r of list.records) {
    for (let i = 0; i < Math.min(r.games, 500); i++) {
      const o = document.createElement("option");
      o.value = `${r.key}?game=${i}`;
      o.textContent = `${r.name} #${i}`;
      sel.appendChild(o);
    }
  }
  if (key) { sel.value = key; await loadReplay(key); }
}

// a finished game in the replay picker, the score first (so a narrow picker cuts the date, never
// the score): "You 313\u2013297 \u00b7 easy, Standard \u00b7 500 \u00b7 Dec 2, 1:54 PM" (the hands in its tooltip)
function gameLabel(g) {
  const when = new Date(g.updated * 1000).toLocaleString([], { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
  return `You ${g.scores[0]}\u2013${g.scores[1]} \u00b7 ${g.difficulty}, ${g.rules} \u00b7 ${when}`;
}

// a refused record: the player's line, the server's reason one click away (when it says more)
function watchError(text, summary) {
  const box = $("watch-error");
  box.hidden = false;
  if (!summary || summary === text) { box.textContent = text; return; }
  box.innerHTML = `<span class="summary">${esc(summary)}</span>` +
    `<details><summary>Details</summary><span class="detail">${esc(text)}</span></details>`;
}

function clearUploadList() {
  $("watch-game").hidden = true;
  $("watch-game").innerHTML = "";
  $("watch-refused").hidden = true;
  $("watch-refused").textContent = "";
}

// key: "game/ID", "file/N?game=K" or "upload/TOKEN?game=K"; upload: the file's bytes to send first
async function loadReplay(key, upload) {
  const token = ++replayToken;
  replay = null;
  hideAnalysis();
  watchEmpty(true);
  $("watch-error").hidden = true;
  $("watch-title").textContent = "Loading\u2026";
  if (upload || !key.startsWith("upload/")) clearUploadList();
  // a finished game of yours: its record one click away (a file's games are files already)
  const own = /^game\/([^?]+)$/.exec(key || "");
  $("watch-download").hidden = !own;
  if (own) $("watch-download").href = `/api/watch/${key}/record`;
  let summary;
  try {
    if (upload) {
      summary = await api("/api/watch/upload", upload.data, "POST", { "X-File-Name": encodeURIComponent(upload.name) });
    } else {
      summary = await api(`/api/watch/${key}`);
    }
  } catch (e) {
    if (token !== replayToken) return;
    $("watch-title").textContent = "";
    watchError(e.message, e.summary);
    return;
  }
  if (token !== replayToken) return;
  if (!$("screen-watch").hidden) {
    navigate(`#watch=${encodeURIComponent(upload ? `${summary.key}?game=${summary.game || 0}` : key)}`, true);
  }
  if (upload) {
    key = `${summary.key}?game=${summary.game || 0}`;
    const gsel = $("watch-game");
    gsel.innerHTML = "";
    for (const g of summary.games) {
      const o = document.createElement("option");
      o.value = `${summary.key}?game=${g.index}`;
      o.textContent = g.refused ? `${g.title} (${g.problem})` : g.title;
      o.disabled = !!g.refused;
      if (g.refused) o.title = g.refused;
      gsel.appendChild(o);
    }
    gsel.hidden = summary.game_count < 2;
    if (summary.refused_count) {  // the games that did not load, each with its line and reason
      const bad = summary.games.filter((g) => g.refused);
      $("watch-refused").hidden = false;
      $("watch-refused").innerHTML =
        `${summary.refused_count} of ${summary.game_count} games did not load: ` +
        bad.slice(0, 5).map((g) => `<span title="${esc(g.refused)}">${esc(g.problem)}</span>`).join(", ") +
        (bad.length > 5 ? ", \u2026" : "") +
        `<details><summary>Details</summary><ul>${bad.slice(0, 50).map((g) => `<li>${esc(g.refused)}</li>`).join("")}</ul></details>`;
    }
    gsel.value = key;
    $("watch-source").value = "";
  }
  const [path, query] = key.split("?");
  replay = { key, base: `/api/watch/${path}`, query: query ? `?${query}` : "", summary,
             pages: new Map([[0, summary.frames]]), analyses: new Map() };
  $("watch-title").textContent = summary.title || "";
  $("w-slider").max = String(summary.frame_count - 1);
  watchEmpty(false);
  await showFrame(0);
}

function handOfFrame(i) {
  const hands = replay.summary.hands;
  let lo = 0, hi = hands.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (hands[mid].first_frame <= i) lo = mid; else hi = mid - 1;
  }
  return hands[lo];
}

async function showFrame(i) {
  if (!replay) return;
  const rp = replay;
  frameIdx = Math.max(0, Math.min(rp.summary.frame_count - 1, i));
  const want = frameIdx;
  const h = handOfFrame(want);
  let frames = rp.pages.get(h.hand);
  if (!frames) {
    try {
      frames = (await api(`${rp.base}/hand/${h.hand}${rp.query}`)).frames;
    } catch (e) { watchError(e.message); return; }
    rp.pages.set(h.hand, frames);
    if (rp.pages.size > 12) rp.pages.delete(rp.pages.keys().next().value);
  }
  if (rp !== replay || want !== frameIdx) return;
  drawFrame(frames[want - h.first_frame]);
}

// the teams' names as the table shows them ("You & Max"), from the server (summary.teams)
function replayTeams(rp) {
  const p = rp.summary.players;
  return rp.summary.teams || [`${p[0]} & ${p[2]}`, `${p[1]} & ${p[3]}`];
}

function drawFrame(f) {
  const rp = replay;
  $("w-slider").value = String(frameIdx);
  $("w-pos").textContent = `move ${f.move} / ${rp.summary.moves}`;
  const names = rp.summary.players.map(esc), teams = replayTeams(rp).map(esc);
  $("watch-score").innerHTML =
    `<span class="team"><b>${teams[0]}</b> <span class="pts">${f.scores[0]}</span> <span class="bags">(${f.bags[0]})</span></span>` +
    `<span class="team"><b>${teams[1]}</b> <span class="pts">${f.scores[1]}</span> <span class="bags">(${f.bags[1]})</span></span>` +
    `<span class="meta">Hand ${f.hand_number} \u00b7 ${esc(f.phase)}</span>`;
  $("watch-event").textContent = f.event ? `${rp.summary.players[f.event.seat]} ${f.event.text}` :
    (f.move === 0 ? "The deal" : "New deal");
  for (let s = 0; s < 4; s++) {
    const box = $(`w-seat-${s}`);
    box.classList.toggle("to-act", f.to_act === s);
    const bid = f.bids[s] === null ? "" : `<span class="bid">bid ${bidText(f.bids[s], f.blind[s])}</span>`;
    const tricks = f.bids[s] === null ? `${f.tricks[s]}` : `${f.tricks[s]}/${f.bids[s]}`;
    box.innerHTML = `<div class="name">${names[s]}${f.dealer === s ? ' <span class="dealer">D</span>' : ""}</div>` +
      `<div class="info">${bid} <span class="tricks">tricks ${tricks}</span></div>`;
    const hand = document.createElement("div");
    hand.className = "open-hand";
    for (const c of f.hands[s]) hand.appendChild(cardEl(c, { small: true }));
    box.appendChild(hand);
  }
  const tb = $("w-trick");
  tb.innerHTML = "";
  const pos = ["top", "right", "bottom", "left"];
  for (const c of f.trick) {
    const el = cardEl(c.card);
    el.classList.add(`at-${pos[c.seat]}`);
    el.dataset.seat = String(c.seat);
    if (f.trick_complete && f.trick_winner === c.seat) el.classList.add("winner");
    tb.appendChild(el);
  }
  const ht = $("w-hand-table");
  ht.hidden = !f.hand_result;
  if (f.hand_result) ht.innerHTML = handTableHtml(f.hand_result, replayTeams(rp));
  watchAnalysis(f);
}

let analysisTimer = null;
function watchAnalysis(f) {
  clearTimeout(analysisTimer);
  if (!$("watch-analysis-on").checked || !replay) { hideAnalysis(); return; }
  $("analysis-box").hidden = false;
  $("hint-line").hidden = true;  // no one-line hint in the replay: its table shows as is
  updateDetails();
  if (!f.event) { renderAnalysis(null, "What the agent thinks", "No decision on this frame: step to a move."); return; }
  const rp = replay, move = f.move - 1;
  const who = rp.summary.players[f.event.seat];
  const title = `${who}'s decision: ${f.event.text}`;
  const cached = rp.analyses.get(move);
  if (cached) { renderAnalysis(cached, title, "From this seat's view only. \u25B6 marks the move played."); return; }
  renderAnalysis(null, title, "Thinking\u2026");
  analysisTimer = setTimeout(async () => {
    try {
      const sep = rp.query ? "&" : "?";
      const a = await api(`${rp.base}/analysis${rp.query}${sep}move=${move}`);
      rp.analyses.set(move, a.analysis);
      if (rp === replay && frameIdx >= 0 && $("analysis-title").textContent === title) {
        renderAnalysis(a.analysis, title, "From this seat's view only. \u25B6 marks the move played.");
      }
    } catch (e) {
      if (rp === replay) renderAnalysis(null, title, e.message);
    }
  }, 120);
}

// ------------------------------------------------------------------ wiring
function wire() {
  $("difficulty").onchange = () => { store.set("difficulty", $("difficulty").value); lineupText(); warmChosen(); };
  $("play").onclick = askNewGame;
  $("confirm-new").onclick = newGame;
  $("cancel-new").onclick = () => { $("confirm-box").hidden = true; $("play").hidden = false; };
  $("hint-setting").onchange = (e) => store.set("hints", e.target.checked);
  const setSpeed = (name) => { store.set("speed", name); applySpeed(name); $("speed-setting").value = name; updateMenu(); };
  $("speed-setting").onchange = (e) => setSpeed(e.target.value);
  $("autoplay-setting").onchange = (e) => store.set("autoplay", e.target.checked);
  $("menu-speed").onclick = () => {  // Slow -> Normal -> Fast -> Slow; the menu stays open
    const names = Object.keys(SPEEDS);
    setSpeed(names[(names.indexOf(store.get("speed", "normal")) + 1) % names.length]);
  };
  $("bid-minus").onclick = () => { if (state && state.bidding) { bidValue = Math.max(1, bidValue - 1); showBidValue(); } };
  $("bid-plus").onclick = () => { if (state && state.bidding) { bidValue = Math.min(13, bidValue + 1); showBidValue(); } };
  $("rules-preset").onchange = (e) => { applyRules(config.presets[e.target.value]); checkRules(); };
  for (const id of ["target", "loss-threshold", "bid-variant", "min-team-bid", "nil-pass", "blind-nil-deficit",
    "blind-nil-rule", "bid-total-not-13", "spades-any-time", "bags-score", "two-of-clubs",
    "big-bid", "moon-wins", "jokers"]) $(id).addEventListener("change", checkRules);
  $("rules-chip").onclick = (e) => { e.stopPropagation(); toggleRules(); };
  document.addEventListener("click", (e) => { if (!$("rules-list").contains(e.target)) toggleRules(false); });
  $("bid-submit").onclick = () => act(BID_OFFSET + bidValue);
  $("bid-nil").onclick = () => act(BID_OFFSET);
  $("bid-blind-nil").onclick = () => act(BLIND_NIL);
  $("bid-look").onclick = () => act(LOOK);
  $("next").onclick = nextHand;
  $("hint").onclick = showHint;
  $("analysis-close").onclick = () => { hideAnalysis(); if (!$("screen-watch").hidden) $("watch-analysis-on").checked = false; };
  $("new-game").onclick = () => toSettings();
  $("menu").onclick = (e) => {
    e.stopPropagation();
    const open = $("menu-panel").hidden;
    $("menu-panel").hidden = !open;
    $("menu").setAttribute("aria-expanded", String(open));
    updateMenu();
  };
  document.addEventListener("click", (e) => { if (!$("menu-panel").contains(e.target)) closeMenu(); });
  $("menu-pause").onclick = () => setPaused(true);
  $("menu-resume").onclick = () => setPaused(false);
  $("paused-resume").onclick = () => setPaused(false);
  $("menu-new-game").onclick = () => { closeMenu(); setPaused(false); toSettings(); };
  $("menu-settings").onclick = () => { closeMenu(); toSettings(); };
  $("menu-watch").onclick = () => { closeMenu(); releaseGame(); state = null; openWatch(); };
  $("menu-sound").onclick = () => { soundOn = !soundOn; store.set("sound", soundOn); updateMenu(); if (soundOn) sound("turn"); };
  $("nav-watch").onclick = () => { releaseGame(); state = null; openWatch(); };
  $("take-over").onclick = takeOver;
  window.addEventListener("popstate", () => { closeMenu(); routeFromHash(); });
  window.addEventListener("pagehide", () => releaseGame());
  window.addEventListener("resize", () => fitAnalysis());
  document.addEventListener("visibilitychange", () => {  // back to this tab: catch up
    if (!document.hidden && onTable() && !elsewhere) refreshGame().then(() => { if (onTable()) pump(); });
  });
  $("watch-source").onchange = (e) => { if (e.target.value) loadReplay(e.target.value); };
  $("watch-game").onchange = (e) => { if (e.target.value) loadReplay(e.target.value); };
  $("watch-analysis-on").onchange = () => { if (replay) showFrame(frameIdx); };
  $("watch-file").onchange = async (e) => {
    const f = e.target.files[0];
    if (f) loadReplay(null, { name: f.name, data: await f.arrayBuffer() });
    e.target.value = "";
  };
  $("w-first").onclick = () => showFrame(0);
  $("w-prev").onclick = () => showFrame(frameIdx - 1);
  $("w-next").onclick = () => showFrame(frameIdx + 1);
  $("w-last").onclick = () => showFrame(replay ? replay.summary.frame_count - 1 : 0);
  $("w-slider").oninput = (e) => showFrame(Number(e.target.value));
  $("tricks-button").onclick = openTricks;
  $("tricks-close").onclick = closeTricks;
  $("tricks-box").onclick = (e) => { if (e.target === $("tricks-box")) closeTricks(); };
  $("analysis-details").onclick = () => { store.set("hintDetails", !store.get("hintDetails", false)); updateDetails(); };
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !$("tricks-box").hidden) closeTricks();
  });
  document.addEventListener("keydown", (e) => {
    if ($("screen-watch").hidden || e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === "ArrowRight") showFrame(frameIdx + 1);
    if (e.key === "ArrowLeft") showFrame(frameIdx - 1);
  });
}

window.addEventListener("DOMContentLoaded", async () => {
  applySpeed(store.get("speed", "normal"));
  wire();
  updateMenu();
  const named = location.hash;  // a reload or a link: back to the screen the address names
  if (!named) show("settings");
  try {
    await loadSettings();
  } catch (e) {
    $("settings-error").hidden = false;
    $("settings-error").textContent = e.message;
  }
  if (named) await routeFromHash();
  document.body.dataset.ready = "true";
});
