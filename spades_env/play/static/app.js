// spades_env play page. The server decides every rule: these scripts send action ids and show
// the view they get back. Nothing here checks legality (a refused move shows the server's reason).
// This is part 9 of 9, loaded last: common.js, settings.js, table.js, anim.js, help.js,
// graph.js, hint.js and watch.js come first, plain scripts that share one scope (no modules, no
// build step). Here: wiring the page and starting it.
"use strict";

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
  wireHelp();
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
  $("watch-graph").onclick = graphJump;
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
