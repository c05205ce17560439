"""One game of the play app: a ``SpadesGame``, its bots and its stored row.

This is the only place that applies moves and advances bots. Every move goes through
``SpadesGame.apply`` (the engine decides legality and scoring) and is saved in the same call
(``Store.save_move``, one transaction). What leaves this module for the browser is built by
``public_view`` from ``game.view(HUMAN_SEAT)`` and public history only (cards already played,
bids, score tables), so it never holds a card the player may not see.

The human sits at seat 2 (South, shown at the bottom); the partner Max at seat 0 (North, top), the
opponents Lily at seat 3 (West, left; next to act after the human, play goes clockwise) and Zoe at
seat 1 (East, right). Bot line-ups by difficulty (``LINEUPS``): the partner plays at least at
``hard``, at ``insane`` on Insane and ``expert`` on Expert.

Bots are deterministic: before each decision a bot's RNG is reseeded from the game's seed and the
move number, so a game continued after a restart plays on exactly as it would have.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import secrets
import threading
import time

import numpy as np

from ..agents import SHIPPED_CHECKPOINT
from ..bots import make_bot
from ..cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, MAX_BID, SUIT_NAMES, action_parts, card_str,
    mask_to_cards, partner_of, team_of,
)
from ..engine import Phase, SpadesGame
from ..rules import STANDARD_DECK, Deck, HandTally, Rules, trick_winner
from .rules_text import PANEL_FIELDS, rules_info, stats_rates, stats_summary  # (re-exported)
from .store import GameRow, StaleGameError, StatsDelta, Store

__all__ = ["HUMAN_SEAT", "LEVELS", "TARGETS", "LINEUPS", "SEAT_NAMES", "Refused", "BotPool",
           "GameSession", "display_order", "checkpoint_lineup", "rules_info", "PANEL_FIELDS"]

HUMAN_SEAT = 2
SEAT_NAMES = ("Max", "Zoe", "You", "Lily")
"""Names by seat: the partner Max (North, top), Zoe (East, on the right), the player (South),
Lily (West, on the left)."""
COMPASS = ("north", "east", "south", "west")
_POSITIONS = ("bottom", "left", "top", "right")  # by (seat - HUMAN_SEAT) % 4, clockwise play
TARGETS = (500, 250)
"""The game lengths of the request's plain ``target`` field (a ``rules`` mapping takes any
target the engine accepts)."""


def _torch_installed() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except ImportError:  # a finder that refuses the name
        return False


LINEUPS = {
    "easy": {"partner": "hard", "opponents": "easy"},
    "medium": {"partner": "hard", "opponents": "medium"},
    "hard": {"partner": "hard", "opponents": "hard"},
    "insane": {"partner": "insane", "opponents": "insane"},
}
"""Bot levels (``make_bot`` names) of the partner and the two opponents for each difficulty, in
the order the settings screen offers them. A new difficulty is one line here: the page, the API
and the statistics read the list from it. ``expert`` is offered where PyTorch and the shipped
network are installed."""
if _torch_installed() and SHIPPED_CHECKPOINT.is_file():
    LINEUPS["expert"] = {"partner": "expert", "opponents": "expert"}  # search on the network
LEVELS = tuple(LINEUPS)

_PHASE_NAMES = ("bidding", "exchange", "play", "over")
_SUIT_DISPLAY = (3, 2, 0, 1)  # spades, hearts, clubs, diamonds: colours alternate


def checkpoint_lineup(path: str) -> dict:
    """Line-up of the ``checkpoint`` difficulty: the trained agent at both opponent seats and a
    ``hard`` partner."""
    return {"partner": "hard", "opponents": f"checkpoint:{path}"}


def display_order(cards, deck: Deck = STANDARD_DECK) -> list[int]:
    """Card ids sorted for showing a hand: spades, hearts, clubs, diamonds, each high to low, in
    ``deck``'s suits and order (``Rules.deck``: under jokers BJ LJ 2D 2S AS ... 3S first)."""
    so, st = deck.suit_of, deck.strength
    return sorted(cards, key=lambda c: (_SUIT_DISPLAY.index(so[c]), -st[c]))


def _cards(mask: int, rules: Rules) -> list[str]:
    return [card_str(c, jokers=rules.jokers)
            for c in display_order(mask_to_cards(mask), rules.deck)]


def _bid_text(bid, blind) -> str | None:
    if bid is None:
        return None
    if blind:
        return "Blind Nil"
    return "Nil" if bid == 0 else str(bid)


def _action_text(action: int, jokers: bool = False) -> str:
    kind, words = action_parts(action, True, jokers)
    return "looks at the cards" if kind == "look" else words


class Refused(Exception):
    """A request the game refuses; nothing changed. ``status`` is the HTTP status (404 unknown
    game, 409 not now, 422 not a legal move), ``str()`` the reason for the player."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def warm_views():
    """Two decisions of a fixed deal (a bid, then a card): what a bot or the analyst meets
    first, so that warming runs every lazy start (imports, the network's first call, the C
    play-outs' first compile) before a player waits on it."""
    g = SpadesGame(Rules(), seed=0)
    bid = g.view(g.current_player)
    while g.phase != Phase.PLAY:
        g.apply(g.legal_actions()[0])
    g.apply(g.legal_actions()[0])
    return bid, g.view(g.current_player)


def level_label(level: str) -> str:
    """How the page names what a level loads: ``Expert (its network)``, ``Hard``..."""
    if level.startswith("checkpoint:"):
        return "the trained agent"
    return {"expert": "Expert (its network)"}.get(level, level.capitalize())


class BotPool:
    """Bots by ``make_bot`` name, built once and shared by all games (bots keep no state between
    decisions other than their RNG, which is reseeded before each decision).

    A level is built on first use, or ahead of it by ``warm`` (in a thread of its own, with one
    throw-away bid and card, so the first real decision does not pay for imports, the network's
    first call or the play-outs' compile); ``status`` tells how far that is. Thread-safe: a
    level is built once, whoever asks first, and the others wait for it.

    Raises (``decide``): ``Refused`` (503) when a level cannot be built, e.g. a checkpoint that no
    longer loads.
    """

    def __init__(self):
        self._bots: dict = {}
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Event] = {}  # level -> set once built (or failed)
        self._errors: dict[str, str] = {}
        self._seconds: dict[str, float] = {}
        self._started: dict[str, float] = {}

    def _build(self, level: str, warm: bool) -> None:
        """Build ``level`` (this thread owns its ``_loading`` event)."""
        t0 = time.perf_counter()
        try:
            bot = make_bot(level, seed=0)
            if warm:
                for v in warm_views():
                    bot.rng = np.random.default_rng(0)
                    bot.act(v)
            with self._lock:
                self._bots[level] = bot
        except Exception as e:  # noqa: BLE001 - told to whoever asks for the level
            with self._lock:
                self._errors[level] = str(e) or type(e).__name__
        finally:
            with self._lock:
                self._seconds[level] = round(time.perf_counter() - t0, 3)
                self._loading.pop(level).set()

    def _claim(self, level: str, retry: bool = False):
        """``(event, mine)``: the event of ``level``'s build, and whether this caller builds it
        (None when it is built, or failed and not ``retry``)."""
        with self._lock:
            if retry:
                self._errors.pop(level, None)
            if level in self._bots or level in self._errors:
                return None, False
            ev = self._loading.get(level)
            if ev is not None:
                return ev, False
            ev = self._loading[level] = threading.Event()
            self._started[level] = time.perf_counter()
            return ev, True

    def get(self, level: str):
        """The bot for ``level`` (built on first use, or waited for while ``warm`` builds it;
        ``ValueError`` for an unknown name or a level that failed to build)."""
        ev, mine = self._claim(level, retry=True)
        if mine:
            self._build(level, warm=False)
        elif ev is not None:
            ev.wait()
        with self._lock:
            if level in self._errors:
                raise ValueError(self._errors[level])
            return self._bots[level]

    def warm(self, levels) -> None:
        """Start building each of ``levels`` not built yet, in a background thread, with a
        throw-away bid and card (returns at once)."""
        todo = [lv for lv in dict.fromkeys(levels) if self._claim(lv)[1]]
        if todo:
            threading.Thread(target=lambda: [self._build(lv, warm=True) for lv in todo],
                             name="spades-play-warm", daemon=True).start()

    def status(self, level: str) -> dict:
        """``{"key", "label", "state", "seconds"}``: ``state`` is ``ready``, ``loading``,
        ``failed`` (with ``error``) or ``cold`` (not asked for yet); ``seconds`` the build's time
        (so far, while loading)."""
        with self._lock:
            out = {"key": f"bot:{level}", "label": level_label(level)}
            if level in self._bots:
                out.update(state="ready", seconds=self._seconds.get(level, 0.0))
            elif level in self._errors:
                out.update(state="failed", seconds=self._seconds.get(level, 0.0),
                           error=self._errors[level])
            elif level in self._loading:
                out.update(state="loading", seconds=round(
                    time.perf_counter() - self._started[level], 3))
            else:
                out.update(state="cold", seconds=0.0)
            return out

    def decide(self, level: str, view, seed: int, move_no: int) -> int:
        """Action id of the ``level`` bot for ``view``, its RNG seeded from ``(seed, move_no)``."""
        try:
            bot = self.get(level)
        except (ValueError, OSError) as e:
            raise Refused(503, f"the bot {level!r} cannot be loaded: {e}") from None
        self.check_rules(level, view.rules)
        bot.rng = np.random.default_rng([seed, move_no])
        return int(bot.act(view))

    def check_rules(self, level: str, rules: Rules) -> None:
        """Refuse (409) a ``level`` whose bot cannot play ``rules``: a checkpoint whose network
        reads no rules piece, under rules other than it was trained under
        (``CheckpointBot.check_rules``). Only a ``checkpoint:PATH`` level has such a check, so
        another level is not built (nor waited for while ``warm`` builds it) to be asked."""
        if not level.startswith("checkpoint:"):
            return
        try:
            bot = self.get(level)
        except (ValueError, OSError) as e:
            raise Refused(503, f"the bot {level!r} cannot be loaded: {e}") from None
        check = getattr(bot, "check_rules", None)
        if check is not None:
            try:
                check(rules)
            except ValueError as e:
                raise Refused(409, str(e)) from None


class GameSession:
    """A stored game with its bots: load, apply one move, build the player's view.

    Args:
        row: the stored game (``Store.load_game``).
        store: where moves are saved.
        bots: the shared ``BotPool``.
    Raises:
        Refused: (500) the stored engine state does not load (a damaged row).
    """

    def __init__(self, row: GameRow, store: Store, bots: BotPool):
        self.row = row
        self.store = store
        self.bots = bots
        try:
            self.game = SpadesGame.from_json(row.state)
        except ValueError as e:
            raise Refused(500, f"saved game {row.id} is damaged and cannot be continued: {e}"
                          ) from None

    # ------------------------------------------------------------------ creation
    @classmethod
    def create(cls, store: Store, bots: BotPool, player: str, difficulty: str, lineup: dict,
               target: int = 500, blind_nil: bool = False, seed: int | None = None,
               rules: Rules | None = None) -> "GameSession":
        """Start and save a new game.

        Args:
            player: owner id; difficulty: level key; lineup: ``{"partner": name, "opponents":
            name}``; target: 500 or 250 (``Rules.target_score``); blind_nil: the Blind Nil switch;
            seed: game seed (default: a random 63-bit int); rules: the whole rules (then
            ``target`` and ``blind_nil`` are not read).
        """
        if seed is None:
            seed = secrets.randbits(63)
        if rules is None:
            rules = Rules(target_score=int(target), blind_nil=bool(blind_nil))
        target = rules.target_score
        game = SpadesGame(rules, seed=seed)
        seats = {str(s): (lineup["partner"] if s == partner_of(HUMAN_SEAT) else lineup["opponents"])
                 for s in range(4) if s != HUMAN_SEAT}
        for level in sorted(set(seats.values())):  # before anything is saved
            bots.check_rules(level, rules)
        now = time.time()
        row = GameRow(id=secrets.token_urlsafe(18), player=player, difficulty=difficulty,
                      target=int(target), lineup=seats, seed=int(seed), state=game.to_json(),
                      moves=0, hands_acked=0, notes={"hands": 0, "last_trick": None,
                                                     "last_move": None},
                      over=False, created=now, updated=now, rules=rules.spec())
        store.create_game(row)
        return cls(row, store, bots)

    # ------------------------------------------------------------------ state questions
    @property
    def pending_table(self) -> bool:
        """A finished hand's table is waiting for the player's Next."""
        return self.row.hands_acked < self.game.hand_number

    def _seat_name(self, seat: int) -> str:
        return SEAT_NAMES[seat]

    def _check_can_move(self) -> None:
        g = self.game
        if g.is_over and not self.pending_table:
            raise Refused(409, "the game is over")
        if self.pending_table:
            raise Refused(409, f"hand {g.hand_number} is over: close its score table with Next "
                               f"first")

    # ------------------------------------------------------------------ moves
    def human_action(self, action, seq: int | None = None) -> None:
        """Apply the player's action id after the checks; save it.

        Raises:
            Refused: 409 game over / hand table open / not the player's turn / stale ``seq``;
                422 an action the rules do not allow now (the engine's words). State unchanged.
        """
        self._check_can_move()
        g = self.game
        if seq is not None and seq != len(g.moves):
            raise Refused(409, f"stale move: the game is at move {len(g.moves)}, not {seq}; "
                               f"reload it")
        if g.current_player != HUMAN_SEAT:
            raise Refused(409, f"not your turn: {self._seat_name(g.current_player)} is to act")
        why = g.explain_illegal(action, seat=HUMAN_SEAT)
        if why is not None:
            raise Refused(422, why)
        self._apply(HUMAN_SEAT, int(action))

    def advance(self, seq: int | None = None) -> None:
        """Let the bot to act make exactly one move; save it.

        Raises:
            Refused: 409 when the game is over, a hand table is open, it is the player's turn, or
                ``seq`` is stale; 503 when the bot cannot be loaded.
        """
        self._check_can_move()
        g = self.game
        if seq is not None and seq != len(g.moves):
            raise Refused(409, f"stale move: the game is at move {len(g.moves)}, not {seq}; "
                               f"reload it")
        p = g.current_player
        if p == HUMAN_SEAT:
            raise Refused(409, "it is your turn: the bots wait for your move")
        level = self.row.lineup[str(p)]
        a = self.bots.decide(level, g.view(p), self.row.seed, len(g.moves))
        self._apply(p, a)

    def _apply(self, seat: int, action: int) -> None:
        g = self.game
        before_moves = len(g.moves)
        before_hands = g.hand_number
        trick_before = list(g.current_trick)
        plays_before = list(g.plays)
        phase_before = g.phase
        g.apply(action, seat=seat)  # legality was checked; raises IllegalActionError otherwise
        notes = dict(self.row.notes)
        notes["hands"] = g.hand_number
        # public notes: the move (a passed card stays private to the two partners), the trick
        if phase_before == Phase.EXCHANGE:
            notes["last_move"] = {"seat": seat, "kind": "pass", "text": "passes a card",
                                  "completed_trick": False}
        else:
            kind = "play" if phase_before == Phase.PLAY else "bid"
            notes["last_move"] = {"seat": seat, "kind": kind,
                                  "text": _action_text(action, g.rules.jokers),
                                  "completed_trick": False}
            if kind == "play" and len(trick_before) == 3:
                cards = trick_before + [(seat, action)]
                notes["last_trick"] = {
                    "cards": [{"seat": s, "card": card_str(c, jokers=g.rules.jokers)}
                              for s, c in cards],
                    "winner": trick_winner([c for _, c in cards], cards[0][0], g.rules.deck),
                    "number": 13 if g.hand_number > before_hands else g.trick_number,
                }
                notes["last_move"]["completed_trick"] = True
                if g.hand_number > before_hands:  # the hand's tricks, shown behind its table
                    notes["hand_tricks"] = hand_tricks(plays_before + [(seat, action)], g.rules)
        stats = None
        if g.is_over:
            stats = (self.row.player, self.row.difficulty, g.rules.spec(), self.row.target,
                     self._stats_delta())
        state = g.to_json()
        try:
            self.store.save_move(self.row.id, before_moves, seat, action, state, len(g.moves),
                                 notes, g.is_over, stats)
        except StaleGameError:
            raise Refused(409, "the game moved on in another request; reload it") from None
        self.row.state = state
        self.row.moves = len(g.moves)
        self.row.notes = notes
        self.row.over = g.is_over

    def next_hand(self) -> None:
        """Close the open hand table (the player pressed Next).

        Raises:
            Refused: 409 when no hand table is open.
        """
        if not self.pending_table:
            raise Refused(409, "no hand score table is open")
        notes = dict(self.row.notes)
        notes["last_trick"] = None
        notes["last_move"] = None
        notes.pop("hand_tricks", None)
        try:
            self.store.set_hands_acked(self.row.id, self.row.moves, self.game.hand_number, notes)
        except StaleGameError:
            raise Refused(409, "the game moved on in another request; reload it") from None
        self.row.hands_acked = self.game.hand_number
        self.row.notes = notes

    # ------------------------------------------------------------------ statistics
    def _stats_delta(self) -> StatsDelta:
        """The finished game's contribution to the player's statistics (the player's team)."""
        g = self.game
        team = team_of(HUMAN_SEAT)
        d = StatsDelta(games=1, wins=int(g.winner == team), hands=len(g.hand_results),
                       bag_hands=len(g.hand_results))
        t = HandTally()
        mine = (int(HUMAN_SEAT > partner_of(HUMAN_SEAT)),)  # the player's Nils, not the partner's
        for hr in g.hand_results:
            t.add(hr.teams[team], partners=mine)
        d.points, d.bags, d.contracts, d.contracts_made = t.points, t.bags, t.contracts, \
            t.contracts_made
        d.nil_bids, d.nil_made = t.nil_bids + t.blind_nil_bids, t.nil_made + t.blind_nil_made
        return d

    # ------------------------------------------------------------------ the player's view
    def public_view(self, stats: list[dict] | None = None) -> dict:
        """JSON-ready view of the table for the player (seat 2), built from ``view(2)`` and
        public history only. See docs/play.md for the fields."""
        g = self.game
        v = g.view(HUMAN_SEAT)
        row = self.row
        phase = _PHASE_NAMES[v.phase]
        to_act = v.current_player
        your_turn = to_act == HUMAN_SEAT and not self.pending_table and not g.is_over
        legal = set(v.legal_actions) if your_turn else set()
        jokers = g.rules.jokers
        hand = [{"card": card_str(c, jokers=jokers), "action": c, "legal": c in legal}
                for c in display_order(mask_to_cards(v.hand), g.rules.deck)]
        seats = []
        for s in range(4):
            level = None if s == HUMAN_SEAT else row.lineup.get(str(s))
            seats.append({
                "seat": s, "name": self._seat_name(s), "compass": COMPASS[s],
                "level": _level_label(level),
                "position": _POSITIONS[(s - HUMAN_SEAT) % 4], "team": team_of(s),
                "partner": s == partner_of(HUMAN_SEAT), "dealer": s == v.dealer,
                "bid": v.bids[s], "bid_text": _bid_text(v.bids[s], v.blind[s]),
                "blind": v.blind[s], "tricks": v.tricks_won[s], "cards_left": v.hand_sizes[s],
                "to_act": s == to_act and not self.pending_table,
            })
        teams = []
        for t in (0, 1):
            members = [s for s in range(4) if team_of(s) == t]
            shown = sorted(members, key=lambda s: s != HUMAN_SEAT)  # the player first
            bids = [v.bids[s] for s in members]
            teams.append({
                "team": t, "name": " & ".join(self._seat_name(s) for s in shown),
                "members": shown,
                # the positions of the shown seats in a score table's (lower seat, higher seat)
                "order": [members.index(s) for s in shown],
                "yours": t == team_of(HUMAN_SEAT), "score": v.scores[t], "bags": v.bags[t],
                "tricks": sum(v.tricks_won[s] for s in members),
                "contract": sum(b for b in bids if b),
                "bids_complete": all(b is not None for b in bids),
            })
        bidding = None
        if your_turn and v.phase == Phase.BIDDING:
            bids = sorted(a - BID_OFFSET for a in legal if BID_OFFSET <= a <= BID_OFFSET + MAX_BID)
            counts = [b for b in bids if b > 0]
            # every bid 0..13 the engine refuses now, with its reason (none before looking:
            # the Blind Nil decision comes first)
            refused = {} if not v.looked else {
                str(b): g.explain_illegal(BID_OFFSET + b, seat=HUMAN_SEAT)
                for b in range(MAX_BID + 1) if b not in bids}
            bidding = {"min": min(counts, default=None), "max": max(counts, default=None),
                       "nil": 0 in bids,
                       "blind_nil": BLIND_NIL_ACTION in legal, "look": LOOK_ACTION in legal,
                       "bids": bids, "refused": refused}
        out = {
            "id": row.id, "seq": len(g.moves), "difficulty": row.difficulty,
            "target": row.target, "blind_nil_rule": g.rules.blind_nil,
            "rules": self._rules_info(),
            "hand_number": v.hand_number + (0 if g.is_over else 1),
            "phase": phase, "to_act": to_act, "your_turn": your_turn,
            "dealer": v.dealer, "seats": seats, "teams": teams,
            "hand": hand, "looked": v.looked, "bidding": bidding,
            "trick": [{"seat": s, "card": card_str(c, jokers=jokers)}
                      for s, c in v.current_trick],
            "trick_number": v.trick_number, "spades_broken": v.spades_broken,
            "last_trick": row.notes.get("last_trick"), "last_move": row.notes.get("last_move"),
            "hand_tricks": hand_tricks(v.play_history, g.rules),
            "hand_results": self._hand_result_dicts(v.hand_results),
            "hand_table": None, "result": None,
        }
        if self.pending_table:
            out["hand_table"] = out["hand_results"][-1]
            self._finished_hand_on_table(out, g.hand_results[-1])
        if g.is_over:
            out["result"] = self._result(stats)
        out["status"] = self._status(v, your_turn)
        return out

    def _finished_hand_on_table(self, out: dict, hr) -> None:
        """While a hand's score table waits for Next, the table shows that hand as it ended (its
        bids and tricks; no card of the next deal, which waits behind the score table)."""
        out["hand_number"] = hr.hand_number + 1
        out["hand"] = []
        out["bidding"] = None
        out["dealer"] = hr.dealer
        out["phase"] = "hand over"
        out["trick"] = []  # the page shows ``last_trick`` (the hand's 13th trick) behind the table
        out["trick_number"] = 13
        out["hand_tricks"] = self.row.notes.get("hand_tricks") or []
        for st in out["seats"]:
            s = st["seat"]
            st.update(dealer=s == hr.dealer, bid=hr.bids[s], blind=hr.blind[s],
                      bid_text=_bid_text(hr.bids[s], hr.blind[s]), tricks=hr.tricks[s],
                      cards_left=0, to_act=False)
        for tm in out["teams"]:
            ts = hr.teams[tm["team"]]
            tm.update(score=ts.total, bags=ts.bags_after, tricks=sum(ts.tricks),
                      contract=ts.contract, bids_complete=True)

    def _rules_info(self) -> dict:
        """``rules_info`` of the game's rules (cached: they never change)."""
        info = self.__dict__.get("_rules")
        if info is None:
            info = self.__dict__["_rules"] = rules_info(self.game.rules)
        return info

    def summary(self) -> dict:
        """A line for the list of games to continue: id, settings, hand, the teams' scores."""
        v = self.public_view()
        return {"id": v["id"], "difficulty": v["difficulty"], "target": v["target"],
                "rules": v["rules"]["line"],
                "hand_number": v["hand_number"], "updated": self.row.updated,
                "teams": [{"name": t["name"], "score": t["score"]} for t in v["teams"]],
                "damaged": None}

    def _hand_result_dicts(self, results) -> list[dict]:
        """``HandResult.to_dict()`` of each finished hand (cached: a score table never changes)."""
        cache = self.__dict__.setdefault("_hr_dicts", [])
        del cache[len(results):]
        while len(cache) < len(results):
            cache.append(results[len(cache)].to_dict())
        return list(cache)

    def _result(self, stats) -> dict:
        g = self.game
        mine = team_of(HUMAN_SEAT)
        contracts = []
        for t in (0, 1):
            made = sum(1 for hr in g.hand_results if hr.teams[t].made is True)
            missed = sum(1 for hr in g.hand_results if hr.teams[t].made is False)
            contracts.append({"team": t, "made": made, "missed": missed})
        s = g.scores
        won = g.winner == mine
        text = (f"You win {s[mine]} to {s[1 - mine]}" if won
                else f"You lose {s[mine]} to {s[1 - mine]}")
        st = None
        for rec in stats or ():
            if rec["difficulty"] == self.row.difficulty and rec["rules"] == g.rules.spec():
                st = stats_summary(rec)
        game = stats_rates(dataclasses.asdict(self._stats_delta()))  # this game alone
        return {"winner": g.winner, "you_won": won, "text": text, "contracts": contracts,
                "hands": g.hand_number, "stats": st, "game": game}

    def _status(self, v, your_turn: bool) -> str:
        g = self.game
        if g.is_over:
            if self.pending_table:
                return f"Game over after hand {g.hand_number}: see the score table, then Next"
            return "Game over"
        if self.pending_table:
            return f"Hand {g.hand_number} is over: see the score table, then Next"
        p = v.current_player
        if your_turn:
            if v.phase == Phase.BIDDING:
                if not v.looked:
                    return "Your turn: bid Blind Nil, or look at your cards"
                return "Your turn: bid"
            if v.phase == Phase.EXCHANGE:
                if not v.blind[HUMAN_SEAT] and not v.blind[partner_of(HUMAN_SEAT)]:
                    return "Your turn: pass a card to your partner (Nil passing)"
                return "Your turn: pass a card to your partner"
            if v.current_trick:
                return f"Your turn: play a card ({SUIT_NAMES[v.led_suit]}s led)"
            return "Your turn: lead a card"
        what = {Phase.BIDDING: "bidding", Phase.EXCHANGE: "passing a card",
                Phase.PLAY: "playing"}[Phase(v.phase)]
        return f"{self._seat_name(p)} is {what}…"


def hand_tricks(plays, rules: Rules) -> list[dict]:
    """The completed tricks of a hand from its plays in order (``(seat, card)``, public):
    ``[{"number": 1.., "cards": [{"seat", "card"}] in play order, "winner": seat}]``."""
    out = []
    for i in range(0, len(plays) - len(plays) % 4, 4):
        cards = plays[i:i + 4]
        out.append({
            "number": i // 4 + 1,
            "cards": [{"seat": int(s), "card": card_str(c, jokers=rules.jokers)} for s, c in cards],
            "winner": trick_winner([c for _, c in cards], cards[0][0], rules.deck),
        })
    return out


def _level_label(level: str | None) -> str | None:
    if level is None:
        return None
    if level.startswith("checkpoint:"):
        return "agent"
    return level
