"""How much work one decision of a search bot costs, estimated from all its options together, and
the limits a bot or a command refuses past (docs/bots.md, Limits).

Each option of ``PIMCBot`` / ``ExpertBot`` is checked alone in its range; their product is
checked here: ``search_work`` turns the options into a ``WorkEstimate`` of the costliest decision
(deals drawn, play-outs, network rows, peak memory, seconds) and of one seat's whole hand, and
``check_work`` refuses an estimate past ``LIMITS`` with a ``ValueError`` that names the options,
the estimate and the limit. ``check_task`` does the same for a command's unit of work (a label
chunk) and for its workers together, before any worker starts.

The unit costs are measured on the project's 2-core x86_64 machine (one core, the C play-outs);
the estimate is an upper bound of a typical decision, not a promise: the Python play-outs (no C
kernel built) are about 35 times slower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

__all__ = ["WorkEstimate", "LIMITS", "search_work", "check_work", "check_task",
           "SECONDS_PER_DEAL", "SECONDS_PER_PLAYOUT", "SECONDS_PER_ROW", "SOLVE_PLAYOUTS"]

LIMITS = {
    "deals": 500_000,
    "playouts": 2_000_000,
    "network_rows": 1_000_000,
    "peak_bytes": 2 * 2**30,
    "seconds": 10.0,
    "task_seconds": 4 * 3600.0,
    "parallel_bytes": 32 * 2**30,
}
"""The most one decision may cost: deals drawn, play-outs (an exact endgame solve counted as
``SOLVE_PLAYOUTS`` play-outs), rows through the network, peak bytes and estimated seconds; the
most estimated seconds of one unit of a command's work (a label chunk: what a worker does before
it reports, and what a stopped run loses); the most peak bytes of all of a command's workers
together. Stated in docs/bots.md, Limits."""

SECONDS_PER_DEAL = 20e-6
"""seconds to draw one deal (and weigh it by the bids, ``insane``)."""
SECONDS_PER_PLAYOUT = 5e-6
"""seconds of one C play-out of a (deal, candidate) row, its utility included."""
SECONDS_PER_ROW = 10e-6
"""seconds of one network row (``expert``: one earlier decision re-read under one deal)."""
SOLVE_PLAYOUTS = (0, 1, 5, 50, 600, 4000)
"""cost of one exact endgame solve (``solver.solve``) with 0..5 tricks left, in play-outs."""
DEAL_BYTES = 200
"""bytes of one drawn deal (4 Python ints in a list)."""
PLAYOUT_ROW_BYTES = 200
"""bytes of one play-out row (its deal reference, C buffers, the result tuple, its value)."""
MAX_CANDIDATES = 13
"""most candidate cards of a card decision (a 13-card hand, none merged)."""
MAX_EVIDENCE = 42
"""most decisions of the other three seats that ``expert`` re-reads: 3 bids and 39 cards."""


def _deals_left(tricks: int) -> int:
    """Most deals that agree with a view with ``tricks`` tricks left: the 3 * tricks unseen
    cards split among 3 hands."""
    return comb(3 * tricks, tricks) * comb(2 * tricks, tricks)


@dataclass(frozen=True)
class WorkEstimate:
    """The cost of a search bot's costliest decision and of one seat's hand (``search_work``).

    Attributes:
        deals: deals drawn in one decision. playouts: play-outs in one decision (exact solves
            as ``SOLVE_PLAYOUTS``). network_rows: rows through the network in one decision.
        peak_bytes: working memory of one decision, bytes. seconds: estimated seconds of one
            decision (one core). hand_seconds: estimated seconds of one seat's whole hand (its
            bid and 13 cards).
        formulas: ``{quantity: "option=value x ... "}``, how each quantity was reached.
        levers: ``{quantity: "options to lower"}``.
    """

    deals: int
    playouts: int
    network_rows: int
    peak_bytes: int
    seconds: float
    hand_seconds: float
    formulas: dict = field(default_factory=dict, compare=False, repr=False)
    levers: dict = field(default_factory=dict, compare=False, repr=False)


def search_work(samples: int, bid_samples: int, endgame_tricks: int = 3, infer_bids: bool = False,
                inference_factor: int = 4, bid_window: int = 2, network: dict | None = None
                ) -> WorkEstimate:
    """The work of a ``PIMCBot`` (``hard``, ``insane``) or, with ``network``, an ``ExpertBot``.

    Card decision: ``samples * (inference_factor if infer_bids)`` deals drawn, ``samples`` x 13
    candidates play-outs, or with t = ``endgame_tricks`` tricks left ``min(samples, deals left)``
    x t candidates x ``SOLVE_PLAYOUTS[t]``. Bid: ``bid_samples * (inference_factor if infer_bids)``
    deals drawn, ``bid_samples`` x (``min(13, 2 * bid_window + 2)`` + Nil) play-outs.

    Args:
        samples, bid_samples, endgame_tricks, infer_bids, inference_factor, bid_window: the
            bot's options (``PIMCBot``).
        network: for ``expert``: ``{"row_bytes": bytes of one likelihood row, "critic_bytes":
            bytes of one critic row, "card_rows": bool (the network weighs the cards),
            "bid_rows": bool (it reads the bids too), "critic": bool (``leaf="critic"``),
            "policy": bool (a policy row per decision: ``prune`` or ``bid_prior``)}``.
    Returns:
        a ``WorkEstimate``.
    """
    factor = inference_factor if infer_bids else 1
    f_txt = f" x inference_factor={inference_factor}" if infer_bids else ""
    net = network or {}
    e = endgame_tricks
    exact_deals = min(samples, _deals_left(e)) if e else 0
    exact = exact_deals * e * SOLVE_PLAYOUTS[e]
    card_playouts = max(samples * MAX_CANDIDATES, exact)
    n_bids = min(13, 2 * bid_window + 2) + 1
    bid_playouts = bid_samples * n_bids
    card_rows = samples * MAX_EVIDENCE if net.get("card_rows") else 0
    critic_rows = samples * MAX_CANDIDATES if net.get("critic") else 0
    policy = 1 if net.get("policy") else 0
    bid_rows = bid_samples * 3 if net.get("bid_rows") else 0
    row_bytes = net.get("row_bytes", 0)
    critic_bytes = net.get("critic_bytes", 0)
    card_sec = _cost(samples * factor, card_playouts, card_rows + critic_rows + policy)
    bid_sec = _cost(bid_samples * factor, bid_playouts, bid_rows + policy)
    card_bytes = (samples * factor * DEAL_BYTES + samples * MAX_CANDIDATES * PLAYOUT_ROW_BYTES
                  + card_rows * row_bytes + critic_rows * critic_bytes)
    bid_bytes = bid_samples * factor * DEAL_BYTES + bid_playouts * PLAYOUT_ROW_BYTES \
        + bid_rows * row_bytes
    hand = _hand_seconds(bid_sec, samples, factor, e, net.get("card_rows"))
    exact_txt = (f"samples={samples} (at most {_deals_left(e)} deals with {e} tricks left) x {e} "
                 f"candidates x {SOLVE_PLAYOUTS[e]} per exact solve (endgame_tricks={e})")
    card_txt = exact_txt if exact > samples * MAX_CANDIDATES else \
        f"samples={samples} x {MAX_CANDIDATES} candidate cards"
    bids_card = card_playouts >= bid_playouts
    formulas = {
        "deals": (f"samples={samples}{f_txt}" if samples >= bid_samples
                  else f"bid_samples={bid_samples}{f_txt}"),
        "playouts": card_txt if bids_card else
        f"bid_samples={bid_samples} x {n_bids} candidate bids (bid_window={bid_window})",
        "network_rows": (f"samples={samples} x {MAX_EVIDENCE} decisions re-read"
                         + (f" + samples x {MAX_CANDIDATES} critic rows" if critic_rows else "")
                         if card_rows + critic_rows >= bid_rows else
                         f"bid_samples={bid_samples} x 3 bids re-read (bid_model='network')"),
    }
    formulas["peak_bytes"] = _peak_formula(card_bytes >= bid_bytes, samples, bid_samples, f_txt,
                                           n_bids, card_rows, critic_rows, bid_rows, row_bytes,
                                           critic_bytes)
    formulas["seconds"] = (
        f"{formulas['deals']} deals x "
        f"{SECONDS_PER_DEAL * 1e6:g} us + {formulas['playouts']} play-outs x "
        f"{SECONDS_PER_PLAYOUT * 1e6:g} us"
        + (f" + network rows x {SECONDS_PER_ROW * 1e6:g} us" if card_rows or bid_rows else ""))
    levers = _levers(infer_bids, bids_card, exact > samples * MAX_CANDIDATES,
                     card_rows + critic_rows >= bid_rows)
    return WorkEstimate(
        deals=max(samples, bid_samples) * factor,
        playouts=max(card_playouts, bid_playouts),
        network_rows=max(card_rows + critic_rows, bid_rows) + policy,
        peak_bytes=int(max(card_bytes, bid_bytes)),
        seconds=max(card_sec, bid_sec),
        hand_seconds=hand,
        formulas=formulas, levers=levers)


def _cost(drawn, playouts, rows):
    """Estimated seconds of drawing ``drawn`` deals, ``playouts`` play-outs and ``rows`` network
    rows."""
    return drawn * SECONDS_PER_DEAL + playouts * SECONDS_PER_PLAYOUT + rows * SECONDS_PER_ROW


def _hand_seconds(bid_sec: float, samples: int, factor: int, e: int, card_rows) -> float:
    """Estimated seconds of one seat's whole hand: its bid (``bid_sec``) and its 13 cards, the
    last ``e`` (``endgame_tricks``) by exact solves; ``card_rows``: the network weighs the cards
    (``search_work``'s ``network["card_rows"]``)."""
    hand = bid_sec
    for t in range(13, 0, -1):  # t tricks left, t cards in hand
        if t <= e:
            po = min(samples, _deals_left(t)) * t * SOLVE_PLAYOUTS[t]
        else:
            po = samples * t
        rows = samples * (6 + 3 * (13 - t)) if card_rows else 0
        hand += _cost(samples * factor, po, rows)
    return hand


def _peak_formula(card_first: bool, samples: int, bid_samples: int, f_txt: str, n_bids: int,
                  card_rows: int, critic_rows: int, bid_rows: int, row_bytes: int,
                  critic_bytes: int) -> str:
    """How ``search_work`` reached the peak bytes: from the card decision's deals, play-outs and
    network rows when ``card_first`` (it needs the most memory), else from the bid's."""
    if card_first:
        n, opt, po, rows = samples, "samples", f"samples x {MAX_CANDIDATES}", []
        if card_rows:
            rows.append(f"samples x {MAX_EVIDENCE} network rows x {row_bytes} B")
        if critic_rows:
            rows.append(f"samples x {MAX_CANDIDATES} critic rows x {critic_bytes} B")
    else:
        n, opt, po = bid_samples, "bid_samples", f"bid_samples x {n_bids}"
        rows = [f"bid_samples x 3 network rows x {row_bytes} B"] if bid_rows else []
    return " + ".join(
        [f"{opt}={n}{f_txt} deals x {DEAL_BYTES} B", f"{po} play-out rows x "
         f"{PLAYOUT_ROW_BYTES} B"] + rows)


def _levers(infer_bids: bool, bids_card: bool, exact_first: bool, card_rows_first: bool) -> dict:
    """``search_work``'s options to lower, by quantity: ``bids_card``, the card decision has the
    most play-outs (``exact_first``: its exact solves more than its play-outs); and
    ``card_rows_first``, the most network rows."""
    levers = {
        "deals": ("samples or inference_factor" if infer_bids else "samples") + " or bid_samples",
        "playouts": ("samples or endgame_tricks" if exact_first
                     else "samples") if bids_card else "bid_samples or bid_window",
        "network_rows": "samples" if card_rows_first else "bid_samples",
    }
    names = ("samples", "bid_samples", "inference_factor", "endgame_tricks", "bid_window")
    for q, parts in (("peak_bytes", ("deals", "playouts", "network_rows")),
                     ("seconds", ("deals", "playouts", "network_rows"))):
        used = [n for n in names if any(n in levers[p].replace(" or ", " ").split()
                                        for p in parts)]
        levers[q] = ", ".join(used[:-1]) + " or " + used[-1] if len(used) > 1 else used[0]
    return levers


_UNITS = {"deals": "deals drawn", "playouts": "play-outs", "network_rows": "network rows"}


def _num(x, q: str = "") -> str:
    if q == "peak_bytes":
        return f"{x / 2**30:.3g} GiB" if x >= 2**30 else f"{x / 2**20:.3g} MiB"
    if q == "seconds":
        return f"{x:.4g} estimated seconds"
    return (f"{x:.3g}" if x >= 1e6 else f"{x:,.0f}") + (f" {_UNITS[q]}" if q else "")


def check_work(who: str, est: WorkEstimate) -> WorkEstimate:
    """``est`` when every quantity of one decision is within ``LIMITS``.

    Raises:
        ValueError: ``"WHO: FORMULA = N UNITS per decision, over the limit of M (docs/bots.md,
            Limits); lower OPTIONS"`` for the first quantity over its limit.
    """
    for q in ("deals", "playouts", "network_rows", "peak_bytes", "seconds"):
        v = getattr(est, q)
        if v > LIMITS[q]:
            raise ValueError(f"{who}: {est.formulas[q]} = {_num(v, q)} per decision, over the "
                             f"limit of {_num(LIMITS[q], q)} (docs/bots.md, Limits); "
                             f"lower {est.levers[q]}")
    return est


def check_task(who: str, est: WorkEstimate, hands: int, seats: int, workers: int) -> float:
    """The estimated seconds of one unit of a command's work: ``hands`` hands of which the bot
    plays ``seats`` seats' decisions (``hands * seats * est.hand_seconds``), checked against
    ``LIMITS["task_seconds"]``, and ``workers`` times the bot's peak bytes against
    ``LIMITS["parallel_bytes"]``; ``check_work`` first.

    Raises:
        ValueError: naming the counts, the estimate and the limit.
    """
    check_work(who, est)
    sec = hands * seats * est.hand_seconds
    if sec > LIMITS["task_seconds"]:
        raise ValueError(f"{who}: {hands} hands x {seats} seats x {est.hand_seconds:.3g} s per "
                         f"seat's hand = {sec:,.0f} estimated seconds per unit of work, over the "
                         f"limit of {LIMITS['task_seconds']:,.0f} (docs/bots.md, Limits); lower "
                         f"the hands per unit or the search's deals")
    total = workers * est.peak_bytes
    if total > LIMITS["parallel_bytes"]:
        raise ValueError(f"{who}: {workers} workers x {est.peak_bytes / 2**20:,.0f} MiB per "
                         f"decision = {total / 2**30:.3g} GiB, over the limit of "
                         f"{LIMITS['parallel_bytes'] / 2**30:g} GiB (docs/bots.md, Limits); "
                         f"lower the workers or the search's deals")
    return sec
