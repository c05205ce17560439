// spades_env play page, part 2 of 9: the settings screen (the house-rules panel, saved games,
// statistics, a new game), the address (one entry per screen) and one game in several tabs.
"use strict";

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

// a streak as the page shows it: "3 won", "2 lost", "–" (before the first game counted)
function streakText(n) { return n > 0 ? `${n} won` : n < 0 ? `${-n} lost` : "\u2013"; }

function statsTable(rows, cls, head, cells) {  // one row per difficulty and rule set
  const t = document.createElement("table");
  t.className = `scoretable ${cls}`;
  t.innerHTML = `<tr><th>Level</th><th>Rules</th>${head.map((h) => `<th>${h}</th>`).join("")}</tr>`;
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.dataset.difficulty = s.difficulty; tr.dataset.target = s.target; tr.dataset.rules = s.rules;
    tr.innerHTML = `<td>${esc(s.difficulty)}</td><td class="rules" title="${esc(s.rules)}">${esc(s.rules_line)}</td>` +
      cells(s).map(([c, v]) => `<td class="${c}">${v}</td>`).join("");
    t.appendChild(tr);
  }
  return t;
}

function renderStats(box, stats, only) {
  box.innerHTML = "";
  // one row per difficulty and rule set (the rules spec): games under other rules never mix
  const rows = (stats || []).filter((s) => !only || (s.difficulty === only.difficulty && s.rules === only.rules));
  if (!rows.length) { box.textContent = only ? "No finished game yet." : ""; return; }
  box.appendChild(statsTable(rows, "stats-main",
    ["Played", "Won", "Win rate", "Points / hand", "Contracts made", "Nil made / bid"],
    (s) => [["games", s.games], ["wins", s.wins], ["", pct(s.win_rate)], ["", num(s.avg_points_per_hand)],
      ["", `${s.contracts_made} / ${s.contracts}`], ["", `${s.nil_made} / ${s.nil_bids}`]]));
  box.appendChild(statsTable(rows, "stats-more",
    ["Sets", "Nil made / failed", "Bags / hand", "Streak", "Best streak"],
    (s) => [["sets", s.sets], ["nils", `${s.nil_made} / ${s.nil_failed}`],
      ["bags-per-hand", num(s.bags_per_hand)], ["streak", streakText(s.streak)],
      ["best-streak", s.best_streak ? `${s.best_streak} won` : "\u2013"]]));
}

// the results screen's line on the game just played (your team's): sets, Nils, bags per hand
function gameStatsText(g) {
  if (!g) return "";
  const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;
  const nils = g.nil_bids ? `your Nil bids ${g.nil_made} made, ${g.nil_failed} failed` : "no Nil bid of yours";
  return `This game, your team: ${plural(g.sets, "set")} in ${plural(g.contracts, "contract")}; ` +
    `${nils}; ${num(g.bags_per_hand)} bags per hand.`;
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
