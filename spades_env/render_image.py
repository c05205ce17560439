"""Image of the table for ``render_mode="rgb_array"``, drawn with Pillow. Formatting only.

``draw_table(game, viewer)`` returns an RGB array of shape ``(IMAGE_HEIGHT, IMAGE_WIDTH, 3)``
(``uint8``; 480 x 640, the same size for every state, as video recorders need). The viewer's seat
is at the bottom, the others clockwise (left, top = partner, right). Each seat shows its bid, the
tricks it took this hand and its hand: face up for the viewer (and for every seat when
``viewer=None``, a referee's view), otherwise only the number of cards it holds. The middle shows
the current trick (each card in front of the seat that played it, the leader's card marked), and
the top line the hand number, phase, spades broken or not, and both teams' totals and bags.
"""

from __future__ import annotations

import numpy as np

from .cards import TEAM, card_str, format_hand

IMAGE_WIDTH = 640
IMAGE_HEIGHT = 480

_FELT = (22, 100, 54)
_PANEL = (14, 70, 38)
_TEXT = (240, 240, 230)
_HILITE = (255, 215, 0)
_RED = (200, 20, 30)
_BLACK = (20, 20, 20)
_CARD = (250, 250, 245)
_PHASES = ("bidding", "Blind Nil exchange", "play", "game over")
_POS_NAMES = ("bottom", "left", "top", "right")

_FONTS: dict = {}


def _font(size: int):
    from PIL import ImageFont
    f = _FONTS.get(size)
    if f is None:
        try:
            f = ImageFont.load_default(size=size)  # Pillow >= 10.1: a scalable bundled font
        except TypeError:
            f = ImageFont.load_default()
        _FONTS[size] = f
    return f


def _bid_text(bid, blind) -> str:
    if bid is None:
        return "-"
    if blind:
        return "Blind Nil"
    return "Nil" if bid == 0 else str(bid)


def _suit_rows(mask: int, jokers: bool = False) -> list[tuple[str, int]]:
    """(text, suit) per suit held, spades first: e.g. ('S: A Q 7', 3); with ``jokers`` (the deck
    of ``Rules.jokers``) the spades start with the trumps above the ace ('S: BJ LJ 2D 2 A')."""
    rows = []
    for part, suit in zip(format_hand(mask, symbols=False, jokers=jokers).split("  "),
                          (3, 2, 1, 0)):
        letter, cards = part.split(" ", 1)
        if cards != "-":
            rows.append((f"{letter}: {cards}", suit))
    return rows


def _draw_card(d, x: int, y: int, card: int, lead: bool, jokers: bool = False) -> None:
    w, h = 44, 60
    d.rounded_rectangle((x, y, x + w, y + h), radius=5, fill=_CARD,
                        outline=_HILITE if lead else _BLACK, width=3 if lead else 1)
    # the colour printed on the card (the big joker, id 26 of the 2H, is the red one)
    colour = _RED if card // 13 in (1, 2) else _BLACK
    d.text((x + w // 2, y + h // 2), card_str(card, jokers=jokers), fill=colour, font=_font(18),
           anchor="mm")


def draw_table(game, viewer: int | None = None) -> np.ndarray:
    """RGB image of ``game`` seen by seat ``viewer`` (0..3; ``None``: every hand face up).

    Returns:
        ``np.ndarray`` of shape ``(480, 640, 3)``, dtype ``uint8``.
    Raises:
        ValueError: ``viewer`` not None or a seat 0..3.
    """
    from PIL import Image, ImageDraw
    if viewer is not None and (isinstance(viewer, bool) or viewer not in (0, 1, 2, 3)):
        raise ValueError(f"viewer must be None or a seat 0..3, got {viewer!r}")
    img = Image.new("RGB", (IMAGE_WIDTH, IMAGE_HEIGHT), _FELT)
    d = ImageDraw.Draw(img)
    bottom = 0 if viewer is None else int(viewer)
    over = game.is_over
    # --- top line: hand, phase, scores
    hand_no = game.hand_number + (0 if over else 1)
    d.rectangle((0, 0, IMAGE_WIDTH, 24), fill=_PANEL)
    d.text((8, 12), f"Hand {hand_no}  {_PHASES[int(game.phase)]}  spades "
                    f"{'broken' if game.spades_broken else 'not broken'}",
           fill=_TEXT, font=_font(14), anchor="lm")
    d.text((IMAGE_WIDTH - 8, 12), f"Team 0: {game.scores[0]} ({game.bags[0]} bags)   "
                                  f"Team 1: {game.scores[1]} ({game.bags[1]} bags)",
           fill=_TEXT, font=_font(14), anchor="rm")
    if over:
        d.text((IMAGE_WIDTH // 2, 44), f"Game over: team {game.winner} wins", fill=_HILITE,
               font=_font(18), anchor="mm")
    # --- seats: panel origin (x, y) for bottom, left, top, right
    panels = {0: (200, 370), 1: (8, 150), 2: (200, 34), 3: (452, 150)}
    for s in range(4):
        pos = (s - bottom) & 3
        x, y = panels[pos]
        to_act = s == game.current_player and not over
        title = (f"Seat {s} (team {TEAM[s]}){'  dealer' if s == game.dealer else ''}")
        d.text((x, y), title, fill=_HILITE if to_act else _TEXT, font=_font(15))
        d.text((x, y + 18), f"bid {_bid_text(game.bids[s], game.blind[s])}   tricks "
                            f"{game.tricks_won[s]}", fill=_TEXT, font=_font(14))
        held = game.hands[s]
        face_up = viewer is None or s == viewer
        if face_up and game.looked[s]:
            for k, (text, suit) in enumerate(_suit_rows(held, game.rules.jokers)):
                d.text((x, y + 38 + 17 * k), text, fill=(255, 170, 170) if suit in (1, 2)
                       else _TEXT, font=_font(14))
        else:
            n = held.bit_count()
            d.text((x, y + 38), f"{n} card{'s' if n != 1 else ''}"
                                f"{'' if face_up else ' (hidden)'}", fill=_TEXT, font=_font(14))
    # --- the current trick, each card in front of its player
    spots = {0: (298, 250), 1: (240, 200), 2: (298, 150), 3: (356, 200)}
    for i, (s, c) in enumerate(game.current_trick):
        x, y = spots[(s - bottom) & 3]
        _draw_card(d, x, y, c, lead=i == 0, jokers=game.rules.jokers)
    return np.asarray(img, dtype=np.uint8).copy()


__all__ = ["draw_table", "IMAGE_WIDTH", "IMAGE_HEIGHT"]
