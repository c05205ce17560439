"""What the batched engine reports about ended hands and games: ``FinalResults`` (the games that
ended in one step, ``info["final"]``) and ``HandList`` (the hands that ended, ``info["hands"]``),
both held as tensors and decoded into ``rules.HandResult`` score tables on demand."""

from __future__ import annotations

from ..rules import HandResult, TeamScore
from .layout import HIST_COLUMN, TEAM0, TEAM_FIELDS


def hand_result(rec, hand_number: int) -> HandResult:
    """``HandResult`` of one int64 score record (a row of ``HIST_WIDTH`` ints in the columns of
    ``layout.HIST_FIELDS``: a tensor row, numpy row or list); ``hand_number`` counts from 0."""
    rec = [int(x) for x in rec]
    bids = tuple(rec[HIST_COLUMN["bid0"]:HIST_COLUMN["bid0"] + 4])
    tricks = tuple(rec[HIST_COLUMN["tricks0"]:HIST_COLUMN["tricks0"] + 4])
    teams = []
    for t in (0, 1):
        f = rec[TEAM0 + TEAM_FIELDS * t:TEAM0 + TEAM_FIELDS * (t + 1)]
        made = None if f[2] < 0 else bool(f[2])
        teams.append(TeamScore(
            team=t, bids=(bids[t], bids[t + 2]), blind=(False, False),
            tricks=(tricks[t], tricks[t + 2]), contract=f[0], contract_points=f[1], made=made,
            bags=f[3], nil_points=f[4], bag_penalty=f[5], hand_points=f[6], total=f[7],
            bags_after=f[8]))
    return HandResult(hand_number, rec[HIST_COLUMN["dealer"]], bids, (False,) * 4, tricks,
                      tuple(teams))


class FinalResults:
    """Final results of the games that ended in one ``step`` (held as tensors, decoded on demand).

    Attributes:
        env_ids: ``(k,)`` int64, the env index of each finished game.
        scores, bags: ``(k, 2)`` int64 team totals / bag counts at the end.
        winner: ``(k,)`` int64, winning team 0/1, or -1 (truncated, or a hands_per_episode end).
        truncated: ``(k,)`` bool.
        num_hands: ``(k,)`` int64, hands played.
        table: ``(k, H, 27)`` int64 per-hand score records (first ``num_hands[j]`` rows valid).

    ``results()`` turns them into dicts with ``HandResult`` score tables (same as the scalar
    engine's ``hand_results``).
    """

    def __init__(self, env_ids, scores, bags, winner, truncated, num_hands, table, rules):
        self.env_ids = env_ids
        self.scores = scores
        self.bags = bags
        self.winner = winner
        self.truncated = truncated
        self.num_hands = num_hands
        self.table = table
        self.rules = rules

    def __len__(self) -> int:
        return int(self.env_ids.shape[0])

    def results(self) -> list[dict]:
        """One dict per finished game: ``env``, ``scores``, ``bags``, ``winner`` (None when the
        game has no winner), ``truncated``, ``num_hands``, ``hand_results`` (``HandResult`` list).
        """
        ids = self.env_ids.tolist()
        sc = self.scores.tolist()
        bg = self.bags.tolist()
        wn = self.winner.tolist()
        tr = self.truncated.tolist()
        nh = self.num_hands.tolist()
        table = self.table.cpu().numpy()
        out = []
        for j, i in enumerate(ids):
            out.append({
                "env": i, "scores": sc[j], "bags": bg[j],
                "winner": None if wn[j] < 0 else wn[j], "truncated": bool(tr[j]),
                "num_hands": nh[j],
                "hand_results": [hand_result(table[j, h], h) for h in range(nh[j])],
            })
        return out


class HandList:
    """Lazy list of ``(env index, HandResult, start bags)`` for the hands that ended in a step
    (``info["hands"]``); decoded from tensors on first access. The start bags are each team's bag
    count before the hand: the count after it less the hand's bags, modulo ``bag_limit`` (a bag
    penalty takes ``bag_limit`` off; the count stays below it).

    Args:
        env_ids: ``(k,)`` int64 env indices.
        table_rows: ``(k, HIST_WIDTH)`` int64 score records, one per env.
        hand_numbers: ``(k,)`` int64, each hand's number in its game (0 = the first).
        bag_limit: ``Rules.bag_limit``.
    """

    def __init__(self, env_ids, table_rows, hand_numbers, bag_limit: int = 10):
        self._ids = env_ids
        self._rows = table_rows
        self._nums = hand_numbers
        self._limit = bag_limit
        self._items = None

    def _load(self):
        if self._items is None:
            rows = self._rows.cpu().numpy()
            nums = self._nums.tolist()
            items = []
            for j, i in enumerate(self._ids.tolist()):
                h = hand_result(rows[j], nums[j])
                start = tuple((t.bags_after - t.bags) % self._limit for t in h.teams)
                items.append((i, h, start))
            self._items = items
        return self._items

    def __len__(self):
        return int(self._ids.shape[0])

    def __iter__(self):
        return iter(self._load())

    def __getitem__(self, k):
        return self._load()[k]


__all__ = ["FinalResults", "HandList", "hand_result"]
