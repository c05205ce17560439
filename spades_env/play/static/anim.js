// spades_env play page, part 4 of 9: motion. A card played flies from its player to its place on
// the table; a complete trick slides to its winner's side before it clears. Short (FLY_MS,
// GATHER_MS) and never in the way: nothing waits for them (the bots' delay and the trick's pause
// are as before, a click plays at once, and the slide runs in the last GATHER_MS of the pause).
// Off when the system asks for reduced motion, and when the bots play faster than a card could
// fly (a delay under MOTION_MIN_DELAY: the Fast speed, ?delay=0).
"use strict";

const FLY_MS = 260, GATHER_MS = 300, MOTION_MIN_DELAY = 250, HUMAN = 2;
const REDUCED_MOTION = matchMedia("(prefers-reduced-motion: reduce)");

function motionOn() { return !REDUCED_MOTION.matches && BOT_DELAY >= MOTION_MIN_DELAY; }

let flight = null;        // {seq, seat, from}: the card just played, flown in at the next render
let playedFrom = null;    // {action, rect}: where the player's own card was when played
let gatherTimer = null;

// the player's card is about to be sent: remember where it is (in the hand, or where a drag
// dropped it: rect), so that it flies from there
function notePlayedFrom(action, rect) {
  const el = $("hand").querySelector(`.card[data-action="${action}"]`);
  rect = rect || (el && el.getBoundingClientRect());
  playedFrom = rect && action < BID_OFFSET ? { action, rect } : null;
}

// a move's answer arrived: a card played flies in at the next render (from the hand for the
// player's own card, from the seat for a bot's)
function noteFlight(move) {
  flight = null;
  if (!move || move.kind !== "play" || !motionOn()) return;
  const own = move.seat === HUMAN && playedFrom;
  flight = { seq: state.seq, seat: move.seat, from: own ? playedFrom.rect : null };
  playedFrom = null;
}

function centre(r) { return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; }

// where a player's cards come from and a trick won goes to: its cards' backs, else its name
function seatRect(seat) {
  const box = $(`seat-${state.seats[seat].position}`);
  const backs = box.querySelector(".backs");
  return (backs && backs.childElementCount ? backs : box).getBoundingClientRect();
}

// after renderTrick built the cards: the card of the move just answered flies in
function flyIn(box) {
  const f = flight;
  flight = null;
  if (!f || f.seq !== state.seq || !motionOn()) return;
  const el = box.querySelector(`.card[data-seat="${f.seat}"]`);
  if (!el) return;
  const from = centre(f.from || seatRect(f.seat)), to = centre(el.getBoundingClientRect());
  const scale = f.from ? 1 : 0.6;
  el.classList.add("flying");
  const a = el.animate([
    { translate: `${from.x - to.x}px ${from.y - to.y}px`, scale: String(scale) },
    { translate: "0px 0px", scale: "1" },
  ], { duration: FLY_MS, easing: "cubic-bezier(.2, .7, .3, 1)" });
  a.onfinish = a.oncancel = () => el.classList.remove("flying");
}

// a complete trick on show: in the last GATHER_MS of its pause it slides to the winner's side
function scheduleGather(winner) {
  clearTimeout(gatherTimer);
  if (!motionOn() || winner === null || TRICK_PAUSE < GATHER_MS + 300) return;
  const left = showLastTrickUntil - Date.now();
  if (left <= 0) return;
  gatherTimer = setTimeout(() => gather(winner), Math.max(0, left - GATHER_MS));
}

function gather(winner) {
  const left = showLastTrickUntil - Date.now();
  if (!state || !motionOn() || left <= 0) return;
  const to = centre(seatRect(winner));
  for (const el of $("trick").querySelectorAll(".card")) {
    const c = centre(el.getBoundingClientRect());
    el.classList.add("gathering");
    el.animate([
      { translate: "0px 0px", scale: "1", opacity: 1 },
      { translate: `${0.8 * (to.x - c.x)}px ${0.8 * (to.y - c.y)}px`, scale: "0.55", opacity: 0 },
    ], { duration: Math.min(GATHER_MS, left), easing: "ease-in", fill: "forwards" });
  }
}
