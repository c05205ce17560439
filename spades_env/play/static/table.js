// spades_env play page, part 3 of 9: the table (seats, the trick, the hand and dragging it, the
// bid panel, the score tables, the tricks of the hand), the moves, the bots' turns, the menu.
"use strict";

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
  flyIn(box);  // the card just played flies in from its player (anim.js)
  if (winner !== null && state.phase !== "hand over") scheduleGather(winner);
  else clearTimeout(gatherTimer);
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
  const dropped = d.el.getBoundingClientRect();  // where the card was let go: it flies from there
  d.el.classList.remove("dragging");
  d.el.style.transform = "";
  if (e.type === "pointerup" && inside($("felt"), e) && !inside($("hand"), e)) {
    playCard(d.h.action, d.el, dropped);
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
  if (!b) return;
  if (b.blind_nil || b.look) {  // the Blind Nil decision: its buttons on again after a bid sent
    bidButtons();
    return;
  }
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
  markSuggestedBid();
  return ok;
}

// the hint's bid when it is a button of its own (Nil, Blind Nil, look: the count box cannot
// show it), ringed as the hinted card is, until the bid is sent or the hint goes away
function markSuggestedBid() {
  const on = suggested && state && suggested.seq === state.seq && state.bidding && !bidSending ?
    suggested.action : null;
  for (const [id, a] of [["bid-nil", BID_OFFSET], ["bid-blind-nil", BLIND_NIL], ["bid-look", LOOK]]) {
    $(id).classList.toggle("suggested", on === a);
  }
}

function bidWords(action) {
  if (action === BLIND_NIL) return "Blind Nil";
  if (action === LOOK) return null;
  return action === BID_OFFSET ? "Nil" : String(action - BID_OFFSET);
}

// the status line is one line: on a phone (beside Last trick and Hint) in its short words, cut
// short if still too long; its title has it whole. An error keeps its words (it may wrap).
const PHONE = matchMedia("(max-width: 600px)");

function phoneStatus(text) {
  const paused = /^Paused\. /.test(text) ? "Paused. " : "";
  return paused + text.slice(paused.length)
    .replace(/^Your turn: play a card \((\w)\w*s led\)$/, (_, s) => `Your turn: play (${SUIT_SYMBOL[s.toUpperCase()]} led)`)
    .replace(/^Your turn: bid Blind Nil, or look at your cards$/, "Your turn: Blind Nil or look")
    .replace(/^Your turn: pass a card to your partner.*$/, "Your turn: pass a card")
    .replace(/^(Hand \d+ is over|Game over after hand \d+): see the score table, then Next$/, "$1");
}

function setStatus(text, error) {
  const el = $("status");
  el.dataset.full = text;
  el.textContent = PHONE.matches && !error ? phoneStatus(text) : text;
  el.title = text;
  el.classList.toggle("error", !!error);
}
PHONE.addEventListener("change", () => {
  const el = $("status");
  if (el.dataset.full) setStatus(el.dataset.full, el.classList.contains("error"));
});

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
  placeTricksButton(!!hr);
  if (!hr) return;
  $("hand-table-title").textContent = `Hand ${hr.hand_number + 1} over` + (state.result ? ": game over" : "");
  $("hand-table").innerHTML = handTableHtml(hr, state.teams.map((t) => t.name), state.teams.map((t) => t.order));
  renderScoreGraph($("hand-graph"), state);
}

// the Last trick button: beside the status line, and in the score table's dialog while that is
// open (the dialog covers the table: the button stays in sight and clickable at every size)
function placeTricksButton(handOver) {
  const btn = $("tricks-button");
  if (handOver) {
    if (btn.parentElement !== $("hand-table-buttons")) $("hand-table-buttons").prepend(btn);
  } else if (btn.parentElement !== $("hint").parentElement) {
    $("hint").before(btn);
  }
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
  if (before && state.seq !== before.seq) noteFlight(m);
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

async function act(action, el, from) {
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
  notePlayedFrom(action, from);
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

function playCard(action, el, from) { act(action, el, from); }

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
