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
  markSuggestedBid();
}

// the hint in one line: the move to make and why (the server's `suggestion`: the search's best
// where it values the moves, with the chance to make the contract or the Nil over its deals;
// the agent's choice in the exchange), the card raised in the hand, the bid set in the bid box,
// or the Nil, Blind Nil or look button ringed
function hintSuggestion(a) {
  return a && a.suggestion ? { action: a.suggestion.action, text: a.suggestion.text } : null;
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
  markSuggestedBid();  // Nil, Blind Nil or look: its button ringed
}

// in bidding, the moves the agent gives 0.0% are folded under one "other bids" row (its count),
// all but the hint's own move and the move played; a click shows them all (and folds them again)
let bidsUnfolded = false;

function foldableRows(a) {
  if (!a || a.phase !== "bidding") return new Set();
  const keep = new Set([a.suggestion && a.suggestion.action, a.best_prob]);
  return new Set(a.rows.filter((r) => r.prob !== null && r.prob < 0.0005 && !r.played && !keep.has(r.action)).map((r) => r.action));
}

function analysisNotes(a, note) {
  const notes = [];
  if (note) notes.push(note);
  if (a && a.checkpoint_error) notes.push(`Probabilities unavailable: ${a.checkpoint_error}`);
  if (a && a.phase === "bidding" && a.rows.some((r) => r.value !== null)) notes.push("The search values the bids it would consider and the agent's.");
  else if (a && a.phase !== "play" && !(a.notes || []).length) notes.push("The search bot values cards in the play phase and bids once your cards are seen.");
  if (a) notes.push(...(a.notes || []));
  // each note a sentence of its own (a checkpoint's error ends without a full stop)
  return notes.map((n) => (/[.!?)]$/.test(n.trim()) ? n.trim() : `${n.trim()}.`)).join(" ");
}

function analysisRow(a, r, chance) {
  const top = Math.max(0, ...a.rows.map((x) => x.prob || 0));
  const p = r.prob === null ? "\u2013" : `${(100 * r.prob).toFixed(1)}%`;
  const bar = r.prob === null || top <= 0 ? "" : `<span class="bar" style="width:${(100 * r.prob / top).toFixed(1)}%"></span>`;
  const v = r.value === null ? "\u2013" : `${r.value > 0 ? "+" : ""}${r.value.toFixed(1)}`;
  const cls = [r.played ? "played" : "", r.action === a.best_prob ? "best-prob" : "", r.action === a.best_value ? "best-value" : ""].join(" ").trim();
  const label = r.label.replace(/([\u2665\u2666])/g, '<span class="red">$1</span>');
  // as the one line writes a chance (analysis.pct): 78%, <1% above 0, >99% below 1
  const odds = (x) => (x === null || x === undefined ? "\u2013" : x > 0 && x < 0.005 ? "<1%" : x >= 0.995 && x < 1 ? ">99%" : `${(100 * x).toFixed(0)}%`);
  return `<tr data-action="${r.action}" class="${cls}"><td class="move">${r.played ? '<span class="mark" title="the move played">\u25B6</span> ' : ""}${label}</td>` +
    `<td class="pbar">${bar}</td><td class="prob"><span class="num">${p}</span></td><td class="value">${v}</td>` +
    (chance.make ? `<td class="make">${odds(r.make)}</td>` : "") + (chance.nil ? `<td class="nil">${odds(r.nil)}</td>` : "") + "</tr>";
}

function renderAnalysis(a, title, note) {
  $("analysis-title").textContent = title;
  const t = $("analysis");
  $("analysis-note").textContent = analysisNotes(a, note);
  if (!a) { t.innerHTML = ""; return; }
  // each bar in a column of its own (never under a number), as long as the row's probability
  // against the most probable move's (full length): 23.9% and 27.1% are 88% and 100% long
  const chance = { make: a.rows.some((r) => r.make !== null && r.make !== undefined), nil: a.rows.some((r) => r.nil !== null && r.nil !== undefined) };
  const head = `<tr><th>Move</th><th colspan="2" title="${esc(a.checkpoint || "no checkpoint")}">Agent</th><th title="the search bot (${esc(a.search)}): expected score difference of the hand, points">Search</th>` +
    (chance.make ? '<th title="how often your team makes its contract over the search\'s deals">Make</th>' : "") +
    (chance.nil ? '<th title="how often your team\'s Nil holds over the search\'s deals">Nil</th>' : "") + "</tr>";
  const foldable = foldableRows(a), folded = bidsUnfolded ? new Set() : foldable;
  const rows = a.rows.filter((r) => !folded.has(r.action)).map((r) => analysisRow(a, r, chance));
  if (foldable.size) {
    const n = foldable.size, label = bidsUnfolded ? "Fewer bids" : `${n} other bid${n > 1 ? "s" : ""} (0.0%)`;
    rows.push(`<tr class="fold"><td colspan="${4 + chance.make + chance.nil}"><button type="button" class="link" data-testid="analysis-more" aria-expanded="${bidsUnfolded}">${label}</button></td></tr>`);
  }
  t.innerHTML = head + rows.join("");
  t.classList.toggle("with-chance", chance.make || chance.nil);
  const more = t.querySelector("[data-testid=analysis-more]");
  if (more) more.onclick = () => { bidsUnfolded = !bidsUnfolded; renderAnalysis(a, title, note); };
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
  bidsUnfolded = false;
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
      "From your view only: the agent's probability of each move; the search's expected points, and how often your team makes its contract (Make) over its deals.");
    showSuggestion(h.analysis);
    fitAnalysis();
  } catch (e) {
    answered = true;
    renderAnalysis(null, "No hint", e.message);
  }
}
