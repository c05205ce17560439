"""The move texts of the page, its analysis and its replays, built on cards.action_parts."""

from spades_env.cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION
from spades_env.engine import Phase
from spades_env.play.analysis import action_label
from spades_env.play.replay import _event
from spades_env.play.session import _action_text

MOVES = (12, BID_OFFSET, BID_OFFSET + 4, BLIND_NIL_ACTION, LOOK_ACTION)  # A♣, Nil, 4, Blind Nil


def test_each_text_keeps_its_wording():
    assert [action_label(a) for a in MOVES] == ["A♣", "Nil", "bid 4", "Blind Nil",
                                                "look at the cards"]
    assert [_action_text(a) for a in MOVES] == ["A♣", "Nil", "4", "Blind Nil",
                                                "looks at the cards"]
    assert [(e["kind"], e["text"]) for e in (_event(1, a, Phase.PLAY) for a in MOVES)] == [
        ("play", "plays A♣"), ("bid", "bids Nil"), ("bid", "bids 4"), ("bid", "bids Blind Nil"),
        ("look", "looks at the cards")]
    assert _event(2, 12, Phase.EXCHANGE)["text"] == "passes A♣ to partner"
