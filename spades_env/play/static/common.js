// spades_env play page, part 1 of 9 (the page loads common.js, settings.js, table.js, anim.js,
// help.js, graph.js, hint.js, watch.js, then app.js; they share one scope): the page's state and settings, talking to the
// server, loading the bots, the screens, sound and the cards.
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
