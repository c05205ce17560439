// spades_env play page, part 5 of 9: Rules and help (from the menu). The rules in play: those of
// the game at the table (the view's rules: its line, its house rules, the full list, all from
// rules_text.py on the server), else the ones chosen in the settings (POST /api/rules); then
// Spades in short and how to use this page (written in index.html).
"use strict";

let helpToken = 0;

async function helpRules() {  // the rules to show: the game's, else the settings panel's
  if (state && state.rules) return { info: state.rules, whose: "This game" };
  if (!config) return null;
  try {
    return { info: await api("/api/rules", { rules: panelRules() }), whose: "The rules chosen in the settings" };
  } catch (e) {
    return { error: e.message };
  }
}

function renderHelpRules(got) {
  const list = (ul, items) => { ul.innerHTML = items.map((x) => `<li>${esc(x)}</li>`).join(""); };
  $("help-rules").hidden = !got;
  if (!got) return;
  $("help-rules-error").hidden = !got.error;
  $("help-rules-error").textContent = got.error || "";
  $("help-rules-body").hidden = !!got.error;
  if (got.error) return;
  const r = got.info;
  $("help-rules-title").textContent = `${got.whose}: ${r.line}`;
  list($("help-house"), r.house);
  $("help-house").hidden = !r.house.length;
  $("help-no-house").hidden = !!r.house.length;
  list($("help-items"), r.items);
}

async function openHelp() {
  closeMenu();
  const token = ++helpToken;
  $("help-box").hidden = false;
  $("help-close").focus();
  const got = await helpRules();
  if (token === helpToken && !$("help-box").hidden) renderHelpRules(got);
}

function closeHelp() {
  helpToken++;
  $("help-box").hidden = true;
}

function wireHelp() {
  $("menu-help").onclick = openHelp;
  $("help-close").onclick = closeHelp;
  $("help-box").onclick = (e) => { if (e.target === $("help-box")) closeHelp(); };
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !$("help-box").hidden) closeHelp(); });
}
