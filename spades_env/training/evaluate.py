"""Evaluate a trained policy against bots on duplicate deals.

Command line: ``spades eval CHECKPOINT --vs medium --games 200`` plays the
checkpoint (as ``CheckpointBot``) against each bot in ``spades_env.arena`` (full games to the
target in duplicate pairs, or ``--hands N`` single-hand duplicate deals) and prints the arena's
table for each, then one summary table: average point difference per hand with its 95% Student-t
interval over duplicate pairs, games won with a Clopper-Pearson interval, and the agent's sets,
Nil bids and bags.

Library: ``duplicate_match`` is the fast batched check used during training (the network acts for
all games at once): each deal is played twice from the same cards and dealer, the agent holding
seats 0/2 then 1/3, one hand from 0-0 each; it reports the mean per-deal point difference
(agent - opponent) with a 95% Student-t interval, the per-hand win rate (ties half) and the agent
team's bidding figures.

The policy plays greedily (argmax of the masked policy) unless ``--sample`` is given.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import torch

from spades_env import Rules, SpadesGame
from spades_env import options as opt
from spades_env.bots import make_bot, quoted_name
from spades_env.cards import NUM_ACTIONS, TEAM
from spades_env.rules import HandTally
from spades_env.observation import OBS_SIZE, encode


class NetPlayer:
    """A batched player backed by an ``Agent``: ``act_batch(obs [B,575], mask [B,68]) -> [B]``.

    Args:
        agent: ``spades_env.agents.model.Agent`` (put in eval mode).
        device: torch device of the agent (``spades_env.devices.check_device``).
        greedy: argmax of the masked policy; else sample with ``generator``.
        seed: seed of the sampling generator (used when ``greedy`` is False).
    Raises:
        ValueError: a bad or absent device.
    """

    def __init__(self, agent, device="cpu", greedy: bool = True, seed: int = 0):
        from spades_env.devices import check_device
        self.agent = agent
        self.device = check_device(device, "device")
        self.greedy = greedy
        self.gen = torch.Generator(device="cpu").manual_seed(seed)

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        o = torch.as_tensor(obs, device=self.device)
        m = torch.as_tensor(mask, device=self.device)
        logits, _ = self.agent(o)
        logits = self.agent.masked(logits, m).float().cpu()
        if self.greedy:
            return logits.argmax(-1).numpy()
        probs = torch.softmax(logits, -1)
        return torch.multinomial(probs, 1, generator=self.gen).squeeze(-1).numpy()


def deal_hands(rng: np.random.Generator) -> tuple[list[int], int]:
    """One random deal ``(4 hand masks by seat, dealer)`` from ``rng`` (via ``SpadesGame``)."""
    g = SpadesGame(Rules(), seed=int(rng.integers(2**63)))
    return list(g.hands), g.dealer


def play_hands(games: list[SpadesGame], agent_team: list[int], net: NetPlayer, bot) -> None:
    """Play every game in ``games`` until one hand is finished.

    Seats of team ``agent_team[i]`` in game i are played by ``net`` (batched over games), the other
    seats by ``bot`` (``act(view)``), each from its own seat's view only.
    """
    live = [i for i, g in enumerate(games) if not g.hand_results]
    obs = np.zeros((len(games), OBS_SIZE), dtype=np.float32)
    mask = np.zeros((len(games), NUM_ACTIONS), dtype=bool)
    while live:
        net_idx = []
        for i in live:
            g = games[i]
            p = g.current_player
            v = g.view(p)
            if TEAM[p] == agent_team[i]:
                encode(v, obs[len(net_idx)])
                mask[len(net_idx)] = False
                mask[len(net_idx), list(v.legal_actions)] = True
                net_idx.append(i)
            else:
                g.apply(int(bot.act(v)))
        if net_idx:
            acts = net.act_batch(obs[:len(net_idx)], mask[:len(net_idx)])
            for k, i in enumerate(net_idx):
                games[i].apply(int(acts[k]))
        live = [i for i in live if not games[i].hand_results]


def hand_stats(results, team: int) -> dict:
    """Bidding figures of ``team`` over a list of ``HandResult``s.

    Returns a dict: ``bid_error`` (mean bid - tricks over the team's non-Nil bids), ``set_rate``
    (share of hands with a contract that was set), ``nil_rate`` (Nil bids per seat-hand),
    ``nil_success`` (share of Nil bids made; nan when none), ``bags`` (bags per hand).
    """
    errs, t = [], HandTally()
    for hr in results:
        ts = hr.teams[team]
        t.add(ts)
        errs.extend(b - k for b, k in zip(ts.bids, ts.tricks) if b != 0)
    n = max(len(results), 1)
    nils, nil_ok = t.nil_bids + t.blind_nil_bids, t.nil_made + t.blind_nil_made
    return {"bid_error": float(np.mean(errs)) if errs else float("nan"),
            "set_rate": t.contracts_set / t.contracts if t.contracts else float("nan"),
            "nil_rate": nils / (2 * n),
            "nil_success": nil_ok / nils if nils else float("nan"),
            "bags": t.bags / n}


def mean_ci(x) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval ``(mean, low, high)`` of a 1-D sample."""
    from scipy import stats
    x = np.asarray(x, dtype=np.float64)
    m = float(x.mean())
    if len(x) < 2:
        return m, float("-inf"), float("inf")
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return m, m - half, m + half


def _match_block(net: NetPlayer, opponent: str, n: int, seed: int, block: int,
                 rules: Rules) -> tuple[list, list, list, list, str]:
    """Block ``block`` of a ``duplicate_match``: ``n`` duplicate deals and the opponent's seed
    drawn from ``np.random.default_rng([seed, 7919, block])`` (nothing shared with other blocks,
    so a block gives the same result in any process). Returns per-deal point differences, win
    shares and bag-adjusted differences (``bag_adjusted``), the ``(HandResult, agent team)`` of
    every hand, and a SHA-256 of the deals (the same digest: the same deals)."""
    import hashlib
    rng = np.random.default_rng([seed, 7919, block])
    bot = make_bot(opponent, seed=int(rng.integers(2**31)))
    games, teams = [], []
    digest = hashlib.sha256()
    for _ in range(n):
        hands, dealer = deal_hands(rng)
        digest.update(repr((hands, dealer)).encode())
        for team in (0, 1):
            games.append(SpadesGame.from_deal(hands, dealer, rules=rules,
                                              seed=int(rng.integers(2**63))))
            teams.append(team)
    play_hands(games, teams, net, bot)
    diffs, wins, adjusted, results = [], [], [], []
    for k in range(n):
        d, w, a = [], [], []
        for j in (0, 1):
            hr = games[2 * k + j].hand_results[0]
            t = teams[2 * k + j]
            pts = hr.teams[t].hand_points - hr.teams[1 - t].hand_points
            d.append(pts)
            w.append(1.0 if pts > 0 else 0.5 if pts == 0 else 0.0)
            a.append(bag_adjusted(hr.teams[t], rules) - bag_adjusted(hr.teams[1 - t], rules))
            results.append((hr, t))
        diffs.append(float(np.mean(d)))
        wins.append(float(np.mean(w)))
        adjusted.append(float(np.mean(a)))
    return diffs, wins, adjusted, results, digest.hexdigest()


def bag_adjusted(ts, rules: Rules) -> float:
    """A team's points for one hand with each bag at its long-run cost ``bag_penalty /
    bag_limit`` (10 points under the standard rules) in place of any bag penalty the hand
    tripped: the arena's bag-adjusted figure (``ArenaResult.bag_adjusted_diff``), which full games
    agree with where single hands counting a bag as +1 point do not."""
    return float(ts.hand_points - ts.bag_penalty - rules.bag_penalty / rules.bag_limit * ts.bags)


def paired_difference(a: list, b: list) -> tuple[float, float, float]:
    """Mean and 95% interval of ``a[k] - b[k]`` over deals ``k``: two evaluations on the same
    deals compared deal by deal (their common luck cancels). An exact 0 when they played alike.

    Raises:
        ValueError: the lists differ in length (not the same deals)."""
    if len(a) != len(b) or not a:
        raise ValueError(f"paired_difference needs two results on the same deals, got "
                         f"{len(a)} and {len(b)} deals")
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if not d.any():
        return 0.0, 0.0, 0.0
    return mean_ci(d)


def _ray_block(agent, opponent, n, seed, block, rules):
    """A Ray task: ``_match_block`` with ``agent`` (on the CPU, one torch thread)."""
    torch.set_num_threads(1)
    return _match_block(NetPlayer(agent.eval(), "cpu"), opponent, n, seed, block, rules)


def duplicate_match(net: NetPlayer, opponent: str, deals: int, seed: int = 0,
                    rules: Rules | None = None, batch: int = 256,
                    ray_address: str | None = None) -> dict:
    """Play ``deals`` duplicate deals (2 hands each) of ``net`` against bot ``opponent``, in
    blocks of ``batch`` deals (``_match_block``: each block its own seeds), here or, with
    ``ray_address``, as one Ray task per block on that cluster (``spades_env.ray_cluster``; the
    network's weights go to the nodes; the same result as here when ``net`` is greedy on the CPU
    with one torch thread).

    Returns a dict: ``opponent``, ``deals``, ``diff`` (mean points per hand, agent - opponent),
    ``diff_lo``/``diff_hi`` (95% interval over deals), ``win_rate`` (per hand, ties half),
    ``win_lo``/``win_hi`` (95% interval over deals), ``hand_stats`` of the agent team, ``adj``
    / ``adj_lo`` / ``adj_hi`` (the same difference with bags at their long-run cost,
    ``bag_adjusted``), ``per_deal_adj`` (that figure deal by deal, for ``paired_difference``) and
    ``deals_digest`` (equal for equal deals: the same ``seed`` and ``deals``).
    Raises:
        ValueError: Ray missing or the cluster unreachable (``ray_address``).
    """
    rules = rules if rules is not None else Rules()
    sizes = [min(batch, deals - start) for start in range(0, deals, batch)]
    if ray_address is None:
        blocks = [_match_block(net, opponent, n, seed, b, rules) for b, n in enumerate(sizes)]
    else:
        import copy

        from spades_env.ray_cluster import check_cluster, connect
        started = connect(ray_address)  # a clear ValueError when Ray is missing
        import ray
        try:
            try:
                check_cluster(("spades_env", "spades_env.training.evaluate", "torch"))
            except RuntimeError as e:
                raise ValueError(str(e)) from None
            agent = ray.put(copy.deepcopy(net.agent).cpu())
            task = ray.remote(num_cpus=1, max_retries=3)(_ray_block)
            blocks = ray.get([task.remote(agent, opponent, n, seed, b, rules)
                              for b, n in enumerate(sizes)])
        finally:
            if started:
                ray.shutdown()
    diffs = [x for b in blocks for x in b[0]]
    wins = [x for b in blocks for x in b[1]]
    adjusted = [x for b in blocks for x in b[2]]
    results_agent = [x for b in blocks for x in b[3]]
    m, lo, hi = mean_ci(diffs)
    wm, wlo, whi = mean_ci(wins)
    am, alo, ahi = mean_ci(adjusted)
    stats0 = [hr for hr, t in results_agent if t == 0]
    stats1 = [hr for hr, t in results_agent if t == 1]
    s0, s1 = hand_stats(stats0, 0), hand_stats(stats1, 1)
    hs = {}
    for k in s0:
        vals = [v for v in (s0[k], s1[k]) if not math.isnan(v)]
        hs[k] = float(np.mean(vals)) if vals else float("nan")
    return {"opponent": opponent, "deals": deals, "diff": m, "diff_lo": lo, "diff_hi": hi,
            "win_rate": wm, "win_lo": wlo, "win_hi": whi, "hand_stats": hs,
            "adj": am, "adj_lo": alo, "adj_hi": ahi, "per_deal_adj": adjusted,
            "deals_digest": "-".join(b[4][:16] for b in blocks)}


def format_table(rows: list[dict], title: str = "") -> str:
    """Markdown table of ``duplicate_match`` results: first the bag-adjusted difference (each bag
    at its long-run cost: the arena's full games agree with it), then the plain one."""
    out = []
    if title:
        out.append(title)
    out.append("| opponent | deals (x2 hands) | points/hand, bags at cost [95% CI] "
               "| points/hand (agent - opp) | 95% CI | hand win rate "
               "| bid error | set rate | Nil rate | Nil made | bags/hand |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        h = r["hand_stats"]
        adj = f"{r['adj']:+.1f} [{r['adj_lo']:+.1f}, {r['adj_hi']:+.1f}]" if "adj" in r else "-"
        out.append(f"| {r['opponent']} | {r['deals']} | {adj} | {r['diff']:+.1f} | "
                   f"[{r['diff_lo']:+.1f}, {r['diff_hi']:+.1f}] | "
                   f"{r['win_rate']:.3f} [{r['win_lo']:.3f}, {r['win_hi']:.3f}] | "
                   f"{h['bid_error']:+.2f} | {h['set_rate']:.3f} | {h['nil_rate']:.3f} | "
                   f"{h['nil_success']:.3f} | {h['bags']:.2f} |")
    return "\n".join(out)


def arena_match(path: str, opponent: str, games: int | None, hands: int | None, seed: int,
                rules: Rules, greedy: bool = True, ray_address: str | None = None):
    """``spades_env.arena.play_match`` of the checkpoint at ``path`` (side A) against bot
    ``opponent`` (side B): full games to the target (``games``, rounded up to even) or single-hand
    duplicate deals (``hands``). Returns the ``ArenaResult``.

    With ``ray_address`` the pairs are Ray tasks on that cluster (the arena's ``--ray``; the
    greedy policy only), the agent named ``checkpoint:PATH`` with ``path`` made absolute: every
    node must read the file at that path (one machine, or a shared folder).

    Raises:
        ValueError: ``greedy=False`` with ``ray_address``; Ray missing or the cluster
            unreachable."""
    from spades_env.arena import play_match

    from spades_env.bots.checkpoint_bot import CheckpointBot
    if ray_address is not None:
        if not greedy:
            raise ValueError("a sampled policy (--sample) cannot be evaluated on Ray; the "
                             "arena's Ray tasks build the agent by name (greedy)")
        import os
        agent = "checkpoint:" + os.path.abspath(path)
        kw = {"hands": hands} if hands is not None else {"games": games + (games % 2)}
        return play_match(agent, opponent, seed=seed, rules=rules, names=("agent", opponent),
                          ray_address=ray_address, **kw)
    bot = CheckpointBot(path, seed=seed, greedy=greedy)
    if hands is not None:
        return play_match(bot, opponent, hands=hands, seed=seed, rules=rules,
                          names=("agent", opponent))
    return play_match(bot, opponent, games=games + (games % 2), seed=seed, rules=rules,
                      names=("agent", opponent))


def format_arena_table(results, title: str = "") -> str:
    """Markdown table of ``(opponent, ArenaResult)`` pairs (agent = side A)."""
    out = [title] if title else []
    out.append("| opponent | mode | games/hands | points/hand (agent - opp) | 95% CI | games won "
               "(95% CI) | agent sets | agent Nil made/bid | agent bags/hand |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for opp, r in results:
        a = r.sides[0]
        lo, hi = r.point_diff_ci
        ci = (f"[{lo:+.1f}, {hi:+.1f}]" if lo == lo and hi == hi  # nan: a single duplicate pair
              else "none (1 duplicate pair; the interval needs 2)")
        won = (f"{a.games_won}/{r.games} [{100 * a.win_ci[0]:.0f}%, {100 * a.win_ci[1]:.0f}%]"
               if r.mode == "games" else "-")
        sets = f"{a.contracts_set}/{a.contracts}"
        out.append(f"| {opp} | {r.mode} | {r.games} ({a.hands} hands) | "
                   f"{r.point_diff_per_hand:+.1f} | {ci} | {won} | {sets} | "
                   f"{a.nil_made}/{a.nil_bids} | {a.bags_per_hand:.2f} |")
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades eval`` (its options: ``spades_env.options``)."""
    p = argparse.ArgumentParser(
        prog="spades eval",
        description="Evaluate a trained checkpoint against bots in the arena (duplicate deals).")
    opt.add_checkpoint(p, "path of a .pt checkpoint (e.g. checkpoints/shipped/agent.pt)")
    opt.add_vs(p, ["random", "easy", "medium"],
               "opponent bots (make_bot names: random easy medium hard insane expert or "
               "checkpoint:PATH; default random easy medium)")
    opt.add_games(p, "full games to the target per opponent, an even number",
                  hands="play this many single-hand duplicate deals per opponent instead of "
                        "--games")
    opt.add_seed(p)
    opt.add_rules(p, None, "the checkpoint's own")
    p.add_argument("--sample", action="store_true", help="sample from the policy (default argmax)")
    opt.add_quiet(p, "print only the summary table")
    opt.add_ray(p, "play the pairs as tasks on this Ray cluster (auto or HOST:PORT; the "
                   "checkpoint's path must be readable on every node)")
    return p


def main(argv=None) -> int:
    p = build_parser()
    ns = p.parse_args(argv)
    problem = opt.match_problem(ns)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if ns.ray is not None and not ns.ray.strip():
        p.error("--ray must be a cluster address (auto, or HOST:PORT)")
    from .checkpoint import load_checkpoint
    try:
        data = load_checkpoint(ns.checkpoint)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    rules = Rules.parse(data["config"].get("rules", "standard"))  # checked by load_checkpoint
    if ns.rules is not None:
        try:
            rules = Rules.parse(ns.rules)
        except ValueError as e:
            print(f"error: --rules: {e}", file=sys.stderr)
            return 2
    for opp in ns.vs:  # every opponent before the first match (a typo must not cost a match)
        try:
            make_bot(opp, seed=0)
        except (ValueError, OSError) as e:  # a pasted file as a name is cut (bots.quoted_name)
            print(f"error: --vs {opp if len(opp) <= 80 else quoted_name(opp)}: {e}",
                  file=sys.stderr)
            return 2
    try:
        results = vs_bots(ns.checkpoint, ns.vs, ns.games, ns.hands, ns.seed, rules,
                          greedy=not ns.sample, ray_address=ns.ray, quiet=ns.quiet)
    except (ValueError, RuntimeError) as e:  # RuntimeError: a Ray node cannot run it
        print(f"error: {e}", file=sys.stderr)
        return 2
    what = (f"{ns.hands} single-hand duplicate deals" if ns.hands is not None
            else f"{ns.games} full games to {rules.target_score}")
    print(format_arena_table(results, f"{ns.checkpoint} vs bots: {what} per opponent, "
                                      f"seed {ns.seed}, {'sampled' if ns.sample else 'greedy'} "
                                      f"policy"))
    return 0


def vs_bots(path: str, opponents, games: int | None, hands: int | None, seed: int,
            rules: Rules, greedy: bool = True, ray_address: str | None = None,
            quiet: bool = True) -> list:
    """``arena_match`` of the checkpoint at ``path`` against each of ``opponents`` in turn
    (``spades eval --vs``; ``spades train --vs``): ``[(opponent, ArenaResult)]``. Unless
    ``quiet``, each result's summary is printed as it ends.

    Raises:
        ValueError, RuntimeError: as ``arena_match`` (RuntimeError: a Ray node cannot run it).
    """
    results = []
    for opp in opponents:
        r = arena_match(path, opp, games, hands, seed, rules, greedy=greedy,
                        ray_address=ray_address)
        results.append((opp, r))
        if not quiet:
            print(r.summary())
            print()
    return results


if __name__ == "__main__":
    sys.exit(main())
