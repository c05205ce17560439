// spades_env play page, part 6 of 9: the score graph of a game, an inline SVG (no library): both
// teams' running totals after each hand, with the target (and the loss threshold) as dashed
// lines. The game in progress: from the score tables of the view (hand_results: each team's
// `total`), under the score table after each hand and on the results screen. A replay: from its
// summary (each finished hand's `scores`), under the replayed table, the hand on view marked.
"use strict";

const GRAPH_W = 360, GRAPH_H = 150, GRAPH_PAD = { left: 34, right: 10, top: 10, bottom: 20 };
const TEAM_COLOURS = ["#145e9c", "#c0262d"];  // by team: yours (0) blue, theirs red

// each team's totals by hand: [start, after hand 1, ...] (the start: before the first hand)
function scoreSeries(results) {
  return [0, 1].map((t) => {
    if (!results.length) return [0];
    const first = results[0].teams[t];
    return [first.total - first.hand_points, ...results.map((hr) => hr.teams[t].total)];
  });
}

function graphScale(series, rules) {
  const all = series.flat();
  const top = Math.max(...all, rules.target_score);
  const low = Math.min(0, ...all, rules.loss_threshold === null ? 0 : rules.loss_threshold);
  const n = Math.max(1, series[0].length - 1);
  const w = GRAPH_W - GRAPH_PAD.left - GRAPH_PAD.right, h = GRAPH_H - GRAPH_PAD.top - GRAPH_PAD.bottom;
  return {
    x: (i) => GRAPH_PAD.left + (w * i) / n,
    y: (v) => GRAPH_PAD.top + (h * (top - v)) / (top - low || 1),
    n,
  };
}

function graphLevel(sc, value, label, cls) {  // a dashed line across, its value on the left
  const y = sc.y(value).toFixed(1);
  return `<line class="${cls}" x1="${GRAPH_PAD.left}" x2="${GRAPH_W - GRAPH_PAD.right}" y1="${y}" y2="${y}"/>` +
    `<text class="axis" x="${GRAPH_PAD.left - 4}" y="${y}" text-anchor="end" dominant-baseline="middle">${esc(label)}</text>`;
}

function graphTeam(sc, values, t, name, mark) {
  const pts = values.map((v, i) => `${sc.x(i).toFixed(1)},${sc.y(v).toFixed(1)}`);
  const dots = values.slice(1).map((v, i) =>
    `<circle class="pt${i + 1 === mark ? " now" : ""}" cx="${sc.x(i + 1).toFixed(1)}" cy="${sc.y(v).toFixed(1)}" r="${i + 1 === mark ? 4.5 : 3}" fill="${TEAM_COLOURS[t]}"` +
    ` data-team="${t}" data-hand="${i + 1}" data-total="${v}"><title>${esc(name)}: ${v} after hand ${i + 1}</title></circle>`);
  return `<g class="team-line" data-team="${t}"><polyline fill="none" stroke="${TEAM_COLOURS[t]}" stroke-width="2"` +
    ` points="${pts.join(" ")}"/>${dots.join("")}</g>`;
}

function graphHands(sc) {  // the hand numbers along the bottom (every one, or every k-th)
  const step = Math.ceil(sc.n / 12);
  let out = "";
  for (let i = step; i <= sc.n; i += step) {
    out += `<text class="axis" x="${sc.x(i).toFixed(1)}" y="${GRAPH_H - 5}" text-anchor="middle">${i}</text>`;
  }
  return out;
}

// the hand on view (a replay's): a line across the graph at hand `mark` (1..), its points larger
function graphMark(sc, mark) {
  if (!mark || mark > sc.n) return "";
  const x = sc.x(mark).toFixed(1);
  return `<line class="now" data-hand="${mark}" x1="${x}" x2="${x}" y1="${GRAPH_PAD.top}" y2="${GRAPH_H - GRAPH_PAD.bottom}"/>`;
}

// the graph's HTML: a legend (each team's name and its last total) and the SVG; series: each
// team's totals [start, after hand 1, ...]; names: the teams' names; mark: the hand on view, or 0
function seriesGraphHtml(series, names, rules, mark = 0) {
  const sc = graphScale(series, rules);
  let svg = graphLevel(sc, 0, "0", "zero") + graphLevel(sc, rules.target_score, String(rules.target_score), "goal");
  if (rules.loss_threshold !== null) svg += graphLevel(sc, rules.loss_threshold, String(rules.loss_threshold), "goal");
  svg += graphHands(sc) + graphMark(sc, mark) + series.map((v, t) => graphTeam(sc, v, t, names[t], mark)).join("");
  const legend = names.map((name, t) => `<span class="key" data-team="${t}"><i style="background:${TEAM_COLOURS[t]}"></i>` +
    `${esc(name)} ${series[t][series[t].length - 1]}</span>`).join("");
  return `<div class="graph-legend">${legend}<span class="axis-name">points after each hand</span></div>` +
    `<svg class="score-graph" viewBox="0 0 ${GRAPH_W} ${GRAPH_H}" role="img" ` +
    `aria-label="Running score after each hand">${svg}</svg>`;
}

// into box: the graph of the game in the view (nothing before the first hand is over)
function renderScoreGraph(box, view) {
  const results = view.hand_results || [];
  box.hidden = !results.length;
  box.innerHTML = results.length ?
    seriesGraphHtml(scoreSeries(results), view.teams.map((t) => t.name), view.rules.fields) : "";
}

// a replay's totals: the start (its first frame's scores), then each finished hand's (the
// summary's hands; an unfinished last hand has none)
function replaySeries(summary) {
  const done = summary.hands.filter((h) => h.scores);
  return [0, 1].map((t) => [summary.frames[0].scores[t], ...done.map((h) => h.scores[t])]);
}

// into box: the graph of a replayed game, every finished hand, the hand on view (1..) marked
function renderReplayGraph(box, summary, names, hand) {
  const series = replaySeries(summary);
  box.hidden = series[0].length < 2;
  box.innerHTML = box.hidden ? "" : seriesGraphHtml(series, names, summary.rules, hand);
}
