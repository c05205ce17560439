// spades_env play page, part 8 of 9: the results of a game, and the replays (all four hands),
// hand by hand, with uploads of record files.
"use strict";

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
  $("result-game").textContent = gameStatsText(r.game);
  renderScoreGraph($("result-graph"), state);
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
  $("watch-graph").hidden = true;
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

// a click on a point of the replay's graph: that hand's last frame (its score table)
function graphJump(e) {
  const pt = e.target.closest && e.target.closest("circle.pt");
  if (!pt || !replay) return;
  const h = replay.summary.hands[Number(pt.dataset.hand) - 1];
  if (h) showFrame(h.first_frame + h.frames - 1);
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
  if (rp.graphHand !== f.hand_number) {  // every finished hand's totals, the hand on view marked
    rp.graphHand = f.hand_number;
    renderReplayGraph($("watch-graph"), rp.summary, replayTeams(rp), f.hand_number);
  }
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
