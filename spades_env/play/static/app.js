// spades_env play page. The server decides every rule: this script sends action ids and shows
// the view it gets back. Nothing here checks legality (a refused move shows the server's reason).
"use strict";

const params = new URLSearchParams(location.search);
const BOT_DELAY = Number(params.get("delay") ?? 550);     // ms before each bot move
const TRICK_PAUSE = Number(params.get("pause") ?? 1100);  // ms a completed trick stays shown
const SUIT_SYMBOL = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const BID_OFFSET = 52, BLIND_NIL = 66, LOOK = 67;

let state = null;       // the last view of the game from the server
let config = null;
let bidValue = 3;
let pumping = false;
let showLastTrickUntil = 0;

const $ = (id) => document.getElementById(id);
const esc = (x) => String(x).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  const r = await fetch(path, opts);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = new Error((data && data.detail) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return data;
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

function show(screen) {
  for (const s of ["settings", "table", "results", "watch"]) {
    $(`screen-${s}`).hidden = s !== screen;
  }
  if (screen !== "table") $("hand-table-box").hidden = true;
}

// ------------------------------------------------------------------ cards
function cardEl(card, opts = {}) {
  const el = document.createElement(opts.button ? "button" : "div");
  if (opts.button) el.type = "button";
  const rank = card.slice(0, -1), suit = card.slice(-1);
  el.className = `card suit-${suit}` + (opts.small ? " small" : "");
  el.dataset.card = card;
  el.innerHTML = `<span class="rank">${rank}</span><span class="pip">${SUIT_SYMBOL[suit]}</span>`;
  el.setAttribute("aria-label", `${rank} of ${{ S: "spades", H: "hearts", D: "diamonds", C: "clubs" }[suit]}`);
  return el;
}

function backEl(small) {
  const el = document.createElement("div");
  el.className = "card back" + (small ? " small" : "");
  return el;
}

// ------------------------------------------------------------------ settings
async function loadSettings() {
  config = await api("/api/config");
  const sel = $("difficulty");
  for (const lv of config.levels) {
    if (![...sel.options].some((o) => o.value === lv.key)) {
      const o = document.createElement("option");
      o.value = lv.key; o.textContent = lv.key === "checkpoint" ? "Trained agent" : lv.key;
      sel.appendChild(o);
    }
  }
  lineupText();
  const active = await api("/api/games/active");
  if (active.game) {
    const g = active.game;
    $("continue-box").hidden = false;
    $("continue-text").textContent =
      `Saved game: ${g.difficulty}, ${g.target} points, hand ${g.hand_number}, ` +
      `${g.teams[0].name} ${g.teams[0].score} \u2013 ${g.teams[1].name} ${g.teams[1].score}`;
    $("continue").onclick = () => enterGame(g);
  } else {
    $("continue-box").hidden = true;
  }
  const st = await api("/api/stats");
  renderStats($("settings-stats"), st.stats);
}

function lineupText() {
  const lv = config && config.levels.find((l) => l.key === $("difficulty").value);
  $("lineup-text").textContent = lv ? `Opponents: ${lv.opponents}. Your partner: ${lv.partner}.` : "";
}

function pct(x) { return x === null || x === undefined ? "\u2013" : `${Math.round(100 * x)}%`; }
function num(x, d = 1) { return x === null || x === undefined ? "\u2013" : x.toFixed(d); }

function renderStats(box, stats, only) {
  box.innerHTML = "";
  const rows = (stats || []).filter((s) => !only || (s.difficulty === only.difficulty && s.target === only.target));
  if (!rows.length) { box.textContent = only ? "No finished game yet." : ""; return; }
  const t = document.createElement("table");
  t.className = "scoretable";
  t.innerHTML = "<tr><th>Level</th><th>Length</th><th>Played</th><th>Won</th><th>Win rate</th>" +
    "<th>Points / hand</th><th>Contracts made</th><th>Nil made / bid</th></tr>";
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.dataset.difficulty = s.difficulty; tr.dataset.target = s.target;
    tr.innerHTML = `<td>${esc(s.difficulty)}</td><td>${s.target}</td><td class="games">${s.games}</td>` +
      `<td class="wins">${s.wins}</td><td>${pct(s.win_rate)}</td><td>${num(s.avg_points_per_hand)}</td>` +
      `<td>${s.contracts_made} / ${s.contracts}</td><td>${s.nil_made} / ${s.nil_bids}</td>`;
    t.appendChild(tr);
  }
  box.appendChild(t);
}

async function newGame() {
  try {
    const g = await api("/api/games", {
      difficulty: $("difficulty").value, target: Number($("target").value),
      blind_nil: $("blind-nil-rule").checked,
    });
    enterGame(g);
  } catch (e) {
    alert(e.message);
  }
}

function enterGame(g) {
  state = g;
  history.replaceState(null, "", location.pathname + location.search + `#game=${g.id}`);
  route();
}

function route() {
  if (!state) { show("settings"); return; }
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
    `<span class="meta">Hand ${state.hand_number} \u00b7 to ${state.target} \u00b7 ${state.difficulty}</span>`;
}

function renderSeat(pos) {
  const s = seatOf(pos);
  const box = $(`seat-${pos}`);
  box.className = `seat seat-${pos}` + (s.to_act ? " to-act" : "") + (s.team === 0 ? " us" : " them");
  const bid = s.bid_text === null ? "" : `<span class="bid">bid ${s.bid_text}</span>`;
  const tricks = s.bid === null ? `${s.tricks}` : `${s.tricks}/${s.bid}`;
  box.innerHTML =
    `<div class="name">${esc(s.name)}${s.level ? ` <small>${esc(s.level)}</small>` : ""}` +
    `${s.dealer ? ' <span class="dealer" title="dealer">D</span>' : ""}</div>` +
    `<div class="info">${bid} <span class="tricks" title="tricks / bid">tricks ${tricks}</span></div>`;
  if (pos !== "bottom") {
    const backs = document.createElement("div");
    backs.className = "backs";
    for (let i = 0; i < s.cards_left; i++) backs.appendChild(backEl(true));
    box.appendChild(backs);
  }
}

function renderTrick() {
  const box = $("trick");
  box.innerHTML = "";
  let cards = state.trick, winner = null;
  if (!cards.length && state.last_trick && Date.now() < showLastTrickUntil) {
    cards = state.last_trick.cards; winner = state.last_trick.winner;
  }
  for (const c of cards) {
    const pos = state.seats[c.seat].position;
    const el = cardEl(c.card);
    el.classList.add(`at-${pos}`);
    if (winner === c.seat) el.classList.add("winner");
    box.appendChild(el);
  }
  const sb = document.createElement("div");
  sb.className = "broken";
  sb.textContent = state.phase === "play" ? (state.spades_broken ? "spades broken" : "spades not broken") : "";
  box.appendChild(sb);
}

function renderHand() {
  const box = $("hand");
  box.innerHTML = "";
  if (!state.looked) {
    for (let i = 0; i < state.seats[2].cards_left; i++) box.appendChild(backEl(false));
    return;
  }
  const clickable = state.your_turn && (state.phase === "play" || state.phase === "exchange");
  for (const h of state.hand) {
    const el = cardEl(h.card, { button: true });
    el.dataset.legal = String(h.legal);
    el.dataset.action = String(h.action);
    if (h.legal) el.classList.add("legal");
    if (!clickable) el.classList.add("idle");
    el.onclick = () => playCard(h.action);
    box.appendChild(el);
  }
}

function renderBidPanel() {
  const b = state.bidding;
  $("bidpanel").hidden = !b;
  if (!b) return;
  $("bid-decide").hidden = !(b.blind_nil || b.look);
  $("bid-count").hidden = b.min === null;
  if (b.min !== null) {
    bidValue = Math.min(b.max, Math.max(b.min, bidValue));
    $("bid-value").textContent = String(bidValue);
    $("bid-nil").hidden = !b.nil;
  }
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
  renderBidPanel();
  setStatus(state.status, false);
  renderHandTable();
}

function bidText(bid, blind) {
  if (bid === null || bid === undefined) return "\u2013";
  if (blind) return "Blind Nil";
  return bid === 0 ? "Nil" : String(bid);
}

function handTableHtml(hr, names) {
  const [a, b] = hr.teams;
  const row = (label, f) => `<tr><th>${label}</th><td>${f(a)}</td><td>${f(b)}</td></tr>`;
  const bids = (t) => t.bids.map((x, i) => bidText(x, t.blind[i])).join(" + ");
  const made = (t) => t.made === null ? "no contract" : (t.made ? "made" : "set");
  return `<tr><th></th><th>${names[0]}</th><th>${names[1]}</th></tr>` +
    row("Bids", bids) +
    row("Tricks", (t) => t.tricks.join(" + ")) +
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
  $("hand-table").innerHTML = handTableHtml(hr, state.teams.map((t) => t.name));
}

// ------------------------------------------------------------------ moves
async function send(path, body) {
  try {
    state = await api(path, body);
    if (state.last_move && state.last_move.completed_trick) showLastTrickUntil = Date.now() + TRICK_PAUSE;
    render();
    return true;
  } catch (e) {
    setStatus(e.message, true);
    if (e.status === 409) {  // out of step with the server: fetch the game again
      try { state = await api(`/api/games/${state.id}`); render(); setStatus(e.message, true); } catch (e2) { /* keep */ }
    }
    return false;
  }
}

async function act(action) {
  if (!state || !state.your_turn || pumping) return;
  if (await send(`/api/games/${state.id}/action`, { action, seq: state.seq })) pump();
}

function playCard(action) { act(action); }

// let the bots move one at a time, with a pause so that the trick can be followed
async function pump() {
  if (pumping) return;
  pumping = true;
  try {
    while (state && !state.your_turn && !state.hand_table && !state.result) {
      const wait = Math.max(BOT_DELAY, showLastTrickUntil - Date.now());
      await sleep(wait);
      if (!state || $("screen-table").hidden) break;
      if (!(await send(`/api/games/${state.id}/advance`, { seq: state.seq }))) break;
    }
    if (state && state.last_move && state.last_move.completed_trick) {
      const left = showLastTrickUntil - Date.now();
      if (left > 0) { await sleep(left); if (state && !$("screen-table").hidden) renderTrick(); }
    }
  } finally {
    pumping = false;
  }
}

async function nextHand() {
  if (!state) return;
  showLastTrickUntil = 0;
  if (await send(`/api/games/${state.id}/next`, {})) route();
}

// ------------------------------------------------------------------ results
async function showResults() {
  show("results");
  const r = state.result;
  $("result-text").textContent = `${r.text} after ${r.hands} hands`;
  const names = state.teams.map((t) => t.name);
  $("result-contracts").innerHTML =
    `<tr><th></th><th>${names[0]}</th><th>${names[1]}</th></tr>` +
    `<tr><th>Final score (bags)</th><td>${state.teams[0].score} (${state.teams[0].bags})</td><td>${state.teams[1].score} (${state.teams[1].bags})</td></tr>` +
    `<tr><th>Contracts made</th><td>${r.contracts[0].made}</td><td>${r.contracts[1].made}</td></tr>` +
    `<tr><th>Contracts missed</th><td>${r.contracts[0].missed}</td><td>${r.contracts[1].missed}</td></tr>`;
  $("stats-title").textContent = `Your statistics: ${state.difficulty}, ${state.target} points`;
  renderStats($("stats"), r.stats ? [r.stats] : [], { difficulty: state.difficulty, target: state.target });
  $("watch-this").onclick = () => openWatch(`game/${state.id}`);
}

// ------------------------------------------------------------------ watch (all four hands)
let replay = null, frameIdx = 0;

async function openWatch(key) {
  show("watch");
  const list = await api("/api/watch");
  const sel = $("watch-source");
  sel.innerHTML = '<option value="">Choose a finished game or a record\u2026</option>';
  for (const g of list.games) {
    const o = document.createElement("option");
    o.value = g.key;
    o.textContent = `${new Date(g.updated * 1000).toLocaleString()} \u00b7 ${g.difficulty}, ${g.target} \u00b7 ${g.scores[0]}\u2013${g.scores[1]} (${g.hands} hands)`;
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
  if (key) { sel.value = key; await loadReplay(`/api/watch/${key}`); }
}

async function loadReplay(url, body) {
  try {
    replay = body === undefined ? await api(url) : await (async () => {
      const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body });
      const d = await r.json();
      if (!r.ok) throw new Error(d.detail);
      return d;
    })();
  } catch (e) {
    $("watch-event").textContent = e.message;
    return;
  }
  $("watch-title").textContent = replay.title || "";
  $("w-slider").max = String(replay.frames.length - 1);
  showFrame(0);
}

function showFrame(i) {
  if (!replay) return;
  frameIdx = Math.max(0, Math.min(replay.frames.length - 1, i));
  const f = replay.frames[frameIdx];
  $("w-slider").value = String(frameIdx);
  $("w-pos").textContent = `move ${f.move} / ${replay.moves}`;
  const names = replay.players.map(esc);
  $("watch-score").innerHTML =
    `<span class="team"><b>${names[0]} & ${names[2]}</b> <span class="pts">${f.scores[0]}</span> <span class="bags">(${f.bags[0]})</span></span>` +
    `<span class="team"><b>${names[1]} & ${names[3]}</b> <span class="pts">${f.scores[1]}</span> <span class="bags">(${f.bags[1]})</span></span>` +
    `<span class="meta">Hand ${f.hand_number} \u00b7 ${f.phase}</span>`;
  $("watch-event").textContent = f.event ? `${names[f.event.seat]} ${f.event.text}` :
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
    if (f.trick_complete && f.trick_winner === c.seat) el.classList.add("winner");
    tb.appendChild(el);
  }
  const ht = $("w-hand-table");
  ht.hidden = !f.hand_result;
  if (f.hand_result) ht.innerHTML = handTableHtml(f.hand_result, [`${names[0]} & ${names[2]}`, `${names[1]} & ${names[3]}`]);
}

// ------------------------------------------------------------------ wiring
function wire() {
  $("difficulty").onchange = lineupText;
  $("play").onclick = newGame;
  $("bid-minus").onclick = () => { if (state && state.bidding) { bidValue = Math.max(state.bidding.min, bidValue - 1); $("bid-value").textContent = String(bidValue); } };
  $("bid-plus").onclick = () => { if (state && state.bidding) { bidValue = Math.min(state.bidding.max, bidValue + 1); $("bid-value").textContent = String(bidValue); } };
  $("bid-submit").onclick = () => act(BID_OFFSET + bidValue);
  $("bid-nil").onclick = () => act(BID_OFFSET);
  $("bid-blind-nil").onclick = () => act(BLIND_NIL);
  $("bid-look").onclick = () => act(LOOK);
  $("next").onclick = nextHand;
  $("new-game").onclick = () => { state = null; history.replaceState(null, "", location.pathname + location.search); show("settings"); loadSettings(); };
  $("nav-menu").onclick = () => { state = null; history.replaceState(null, "", location.pathname + location.search); show("settings"); loadSettings(); };
  $("nav-watch").onclick = () => { state = null; openWatch(); };
  $("watch-source").onchange = (e) => { if (e.target.value) loadReplay(`/api/watch/${e.target.value}`); };
  $("watch-file").onchange = async (e) => {
    const f = e.target.files[0];
    if (f) loadReplay("/api/watch/upload", await f.text());
  };
  $("w-first").onclick = () => showFrame(0);
  $("w-prev").onclick = () => showFrame(frameIdx - 1);
  $("w-next").onclick = () => showFrame(frameIdx + 1);
  $("w-last").onclick = () => showFrame(replay ? replay.frames.length - 1 : 0);
  $("w-slider").oninput = (e) => showFrame(Number(e.target.value));
  document.addEventListener("keydown", (e) => {
    if ($("screen-watch").hidden) return;
    if (e.key === "ArrowRight") showFrame(frameIdx + 1);
    if (e.key === "ArrowLeft") showFrame(frameIdx - 1);
  });
}

window.addEventListener("DOMContentLoaded", async () => {
  wire();
  show("settings");
  try {
    await loadSettings();
  } catch (e) {
    $("lineup-text").textContent = `The server did not answer: ${e.message}`;
  }
  document.body.dataset.ready = "true";
});
