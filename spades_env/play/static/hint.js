// spades_env play page, part 7 of 9: what the agent thinks (the hint on the table, the analysis
// panel the replays use too).
"use strict";

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
