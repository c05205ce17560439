"""Text rendering of a game: the table, the current trick and the score table. Formatting only."""

from __future__ import annotations

from .cards import SUIT_LETTERS, SUIT_SYMBOLS, TEAM, action_str, card_str, format_hand

_PHASES = ("bidding", "Blind Nil exchange", "play", "game over")


def _bid_text(bid, blind) -> str:
    if bid is None:
        return "-"
    if blind:
        return "BlindNil"
    return "Nil" if bid == 0 else str(bid)


def render_score_table(hand_results, last: int | None = None) -> str:
    """Score table lines for finished hands (each team: bids, tricks, contract points, bags,
    Nil points, bag penalty, hand points, total, bags after).

    Raises:
        ValueError: ``hand_results`` is not a list of ``HandResult`` or ``last`` not None or an
            int >= 0.
    """
    from .rules import HandResult
    if isinstance(hand_results, (str, bytes, dict)) or not hasattr(hand_results, "__iter__"):
        raise ValueError(f"hand_results must be a list of HandResult, got {hand_results!r}")
    hand_results = list(hand_results)
    if not all(isinstance(h, HandResult) for h in hand_results):
        raise ValueError("hand_results must be a list of HandResult (game.hand_results)")
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
        raise ValueError(f"last must be None or an int >= 0, got {last!r}")
    if last == 0:
        hand_results = []
    rows = [f"{'hand':>4} {'team':>4} {'bids':>13} {'tricks':>7} {'contract':>8} {'bags':>4} "
            f"{'nil':>5} {'bagpen':>6} {'hand':>5} {'total':>6} {'bags':>4}"]
    results = hand_results if last is None else hand_results[-last:]
    for h in results:
        for t in h.teams:
            bids = "/".join(_bid_text(b, bl) for b, bl in zip(t.bids, t.blind))
            tricks = "/".join(str(x) for x in t.tricks)
            rows.append(f"{h.hand_number + 1:>4} {t.team:>4} {bids:>13} {tricks:>7} "
                        f"{t.contract_points:>8} {t.bags:>4} {t.nil_points:>5} "
                        f"{t.bag_penalty:>6} {t.hand_points:>5} {t.total:>6} {t.bags_after:>4}")
    return "\n".join(rows)


def render_game(game, symbols: bool = True) -> str:
    """Readable text of the whole table (all four hands: a referee's view).

    Raises:
        ValueError: ``game`` is not a ``SpadesGame``.
    """
    if not all(hasattr(game, a) for a in ("hands", "plays", "trick", "view", "hand_results")):
        raise ValueError(f"render_game needs a SpadesGame, got {type(game).__name__}")
    # once the game is over, hand_number counts the finished hands and no trick is in progress
    over = game.is_over
    lines = [f"Hand {game.hand_number + (0 if over else 1)}, dealer: seat {game.dealer}, "
             f"phase: {_PHASES[game.phase]}, to act: "
             f"{'-' if game.current_player < 0 else 'seat ' + str(game.current_player)}"]
    jokers = getattr(game.rules, "jokers", False)  # BJ and LJ (docs/rules.md, Jokers)
    for s in range(4):
        mark = ">" if s == game.current_player else " "
        bid = _bid_text(game.bids[s], game.blind[s])
        lines.append(f"{mark} seat {s} (team {TEAM[s]})  bid {bid:>8}  tricks {game.tricks_won[s]:>2}"
                     f"  {format_hand(game.hands[s], symbols, jokers)}")
    trick = "  ".join(f"seat {s}: {card_str(c, symbols, jokers)}" for s, c in game.current_trick)
    empty = "(hand over)" if over else "(no card yet)"
    lines.append(f"Trick {min(game.trick_number + 1, 13)}: {trick or empty}"
                 f"   spades {'broken' if game.spades_broken else 'not broken'}")
    lines.append(f"Score: team 0 {game.scores[0]} ({game.bags[0]} bags), "
                 f"team 1 {game.scores[1]} ({game.bags[1]} bags)")
    if game.hand_results:
        lines.append(render_score_table(game.hand_results, last=3))
    if game.is_over:
        lines.append(f"Game over: team {game.winner} wins")
    return "\n".join(lines)


def render_view(view, symbols: bool = True) -> str:
    """Text of one seat's view (only what that seat may know): its hand, bids, tricks, the
    current trick, known voids, scores and its legal actions.

    Raises:
        ValueError: ``view`` is not a ``PlayerView``.
    """
    if not all(hasattr(view, a) for a in ("seat", "hand", "looked", "known_voids", "info_key")):
        raise ValueError(f"render_view needs a PlayerView (game.view(seat)), got "
                         f"{type(view).__name__}")
    suits = SUIT_SYMBOLS if symbols else SUIT_LETTERS
    jokers = getattr(view.rules, "jokers", False)
    lines = [f"Seat {view.seat}, phase {_PHASES[view.phase]}, dealer seat {view.dealer}",
             f"Your hand: "
             f"{format_hand(view.hand, symbols, jokers) if view.looked else '(not looked)'}",
             "Bids: " + ", ".join(f"seat {s} {_bid_text(view.bids[s], view.blind[s])}"
                                  for s in range(4)),
             "Tricks: " + ", ".join(f"seat {s} {view.tricks_won[s]}" for s in range(4)),
             "Trick: " + ("  ".join(f"seat {s}: {card_str(c, symbols, jokers)}"
                                    for s, c in view.current_trick) or "(no card yet)")]
    voids = ", ".join(f"seat {s} void in " + "".join(suits[x] for x in range(4) if (v >> x) & 1)
                      for s, v in enumerate(view.voids) if v)
    if voids:
        lines.append("Known voids: " + voids)
    lines.append(f"Score: team 0 {view.scores[0]} ({view.bags[0]} bags), "
                 f"team 1 {view.scores[1]} ({view.bags[1]} bags)")
    if view.legal_actions:
        lines.append("Legal: " + " ".join(action_str(a, symbols, jokers)
                                          for a in view.legal_actions))
    return "\n".join(lines)
