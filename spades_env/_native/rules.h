/* The rules of Spades in C, written once for the batched kernel (vector_kernel.c) and the search
 * bots' play-outs (playout.c): the card play (docs/rules.md, Play), hand scoring and the end of the
 * game. The Python reference is
 * spades_env/rules.py (legal_bids, legal_cards_mask, card_beats, cards_that_beat,
 * spades_broken_after, voids_revealed, trick_winner_unchecked) and spades_env/scoring.py
 * (score_hand, moon_team, game_outcome; importable from rules too), and
 * tests/engine/test_rules_conformance.py holds every implementation to it.
 *
 * Hands are 52-bit masks (bit = card id suit * 13 + rank, spades = suit 3); led is the suit led to
 * the current trick, or -1 when the player is to lead. Which suit a card follows and how the cards
 * of a suit rank are the deck's tables (sp_deck, rules.Deck: the standard deck, or the deck of
 * Rules.jokers, whose jokers and 2 of diamonds are spades above the ace), carried in the rules
 * struct and filled from Python's tables by native.c_rules. */
#ifndef SPADES_RULES_H
#define SPADES_RULES_H

#include <stdint.h>

/* The rules' switches as C reads them: one int64 per field of spades_env.rules.Rules, in this
 * list, the one list of them (native.py builds the ctypes mirror sp_rules from it and fills it by
 * field name: a bool as 0/1, None as 0 with has_<field> 0). A new Rules field is a new X here. */
#define SP_RULES_FIELDS(X) \
    X(target_score) X(has_loss_threshold) X(loss_threshold) X(blind_nil) \
    X(forced_spade_lead_breaks) X(bag_limit) X(bag_penalty) X(nil_bonus) X(blind_nil_bonus) \
    X(failed_nil_tricks_count) X(blind_nil_deficit) X(min_team_bid) X(suicide) X(mirror) X(whiz) \
    X(bid_total_not_13) X(nil_pass) X(spades_lead_any_time) X(bags_score_points) \
    X(big_bid_double) X(moon_wins) X(two_of_clubs_leads) X(jokers)
#define SP_RULES_INT64(name) int64_t name;

/* The deck's tables (rules.Deck, one per deck: STANDARD_DECK or JOKERS_DECK), copied from Python by
 * native.c_rules and native.c_deck. */
typedef struct {
    uint64_t suit[4];    /* the cards of each suit (Deck.suit_masks) */
    uint64_t above[52];  /* the cards of a card's suit that beat it (Deck.above) */
    uint64_t plain;      /* the cards that are not promoted trumps, ordered by id (Deck.plain) */
    int8_t suit_of[52];  /* the suit of each card (Deck.suit_of) */
    int8_t strength[52]; /* the order of the cards of a suit (Deck.strength) */
    int8_t rank[52];     /* the rank to compare cards of two suits (Deck.rank) */
    int8_t top[4];       /* the promoted trumps, strongest first (Deck.top) */
    int8_t ntop;         /* how many (0 in the standard deck) */
} sp_deck;

typedef struct {
    SP_RULES_FIELDS(SP_RULES_INT64)
    sp_deck deck; /* the deck these rules play with (Rules.deck) */
} sp_rules;

#define SP_ALL52 ((1ULL << 52) - 1)
#define SP_BID_NUMBERS 0x3FFFu /* legal bids bits 0..13: the bids 0 (Nil) .. 13 */
#define SP_BLIND_NIL_BIT 14
#define SP_LOOK_BIT 15

/* The cards hand may play: the led suit when it holds one, else any card; when leading, no spade
 * before spades are broken unless the hand holds only spades. */
static inline uint64_t sp_legal_cards(const sp_deck *d, uint64_t hand, int led, int broken) {
    if (led >= 0) {
        const uint64_t follow = hand & d->suit[led];
        return follow ? follow : hand;
    }
    if (!broken) {
        const uint64_t ns = hand & ~d->suit[3];
        return ns ? ns : hand;
    }
    return hand;
}

/* Whether a partnership's two bids a and b may stand together (min_team_bid, suicide). */
static inline int sp_team_ok(const sp_rules *r, int64_t a, int64_t b) {
    return a + b >= r->min_team_bid && (!r->suicide || ((a == 0) != (b == 0)));
}

/* The bids seat may make now (docs/rules.md, Bidding and House rules; rules.legal_bids): a 16-bit
 * mask, bit b (0..13) the bid b, bit 14 Blind Nil, bit 15 look at the cards (action id 52 + bit).
 * hand: the seat's cards (read under mirror and whiz); looked: whether it has seen them; bids[4]
 * by seat, -1 for not bid yet. */
static inline uint32_t sp_legal_bids(const sp_rules *r, int seat, uint64_t hand, int looked,
                                     const int64_t *bids) {
    uint32_t allowed = SP_BID_NUMBERS;
    if (looked && (r->mirror || r->whiz)) {
        int n = 0; /* the spades held (portable: no compiler builtin) */
        for (uint64_t x = hand & r->deck.suit[3]; x; x &= x - 1) n++;
        allowed = 1u << n | (r->whiz ? 1u : 0u);
    }
    if (r->min_team_bid || r->suicide) {
        const int64_t partner = bids[seat ^ 2];
        uint32_t team = 0;
        for (int b = 0; b <= 13; b++) {
            int ok = 0;
            if (partner >= 0) ok = sp_team_ok(r, partner, b);
            else
                for (int c = 0; c <= 13 && !ok; c++) ok = sp_team_ok(r, b, c);
            team |= (uint32_t)ok << b;
        }
        allowed &= team;
    }
    if (r->bid_total_not_13) {
        int64_t sum = 0, known = 1;
        for (int s = 0; s < 4; s++)
            if (s != seat) {
                if (bids[s] < 0) known = 0;
                sum += bids[s];
            }
        if (known && sum <= 13) allowed &= ~(1u << (13 - sum));
    }
    if (!looked) return (allowed & 1u ? 1u << SP_BLIND_NIL_BIT : 0u) | 1u << SP_LOOK_BIT;
    return allowed;
}

/* Whether card takes the trick from winning (the card winning it so far): a stronger card of the
 * same suit, or a spade on another suit. */
static inline int sp_card_beats(const sp_deck *d, int card, int winning) {
    const int s = d->suit_of[card];
    return s == d->suit_of[winning] ? d->strength[card] > d->strength[winning] : s == 3;
}

/* The cards of the mask cards that would take the trick from winning. */
static inline uint64_t sp_cards_that_beat(const sp_deck *d, uint64_t cards, int winning) {
    if (d->suit_of[winning] == 3) return cards & d->above[winning];
    return cards & (d->above[winning] | d->suit[3]);
}

/* Whether spades are broken after card is played: a spade on another suit's lead breaks them; a
 * spade led (from a hand of only spades) breaks them when flb (forced_spade_lead_breaks). */
static inline int sp_spades_broken_after(const sp_deck *d, int card, int led, int broken,
                                         int flb) {
    if (broken || d->suit_of[card] != 3) return broken;
    return led < 0 ? flb : led != 3;
}

/* Suit mask (bit s) of the suits a play shows its player void in: the led suit when card does not
 * follow it; for a spade led before spades are broken, clubs, diamonds and hearts. */
static inline int sp_voids_revealed(const sp_deck *d, int card, int led, int broken) {
    if (led < 0) return d->suit_of[card] == 3 && !broken ? 7 : 0;
    return d->suit_of[card] != led ? 1 << led : 0;
}

/* The seat that wins the complete trick cards[0..4) (play order) led by leader. */
static inline int sp_trick_winner(const sp_deck *d, const int64_t *cards, int leader) {
    int best = (int)cards[0], bi = 0;
    for (int i = 1; i < 4; i++) {
        if (sp_card_beats(d, (int)cards[i], best)) {
            best = (int)cards[i];
            bi = i;
        }
    }
    return (leader + bi) & 3;
}

/* One team's score of a finished hand (docs/rules.md, Scoring a hand; rules.score_hand):
 * bids and tricks by seat (4 each), blind[4] (a Blind Nil, or NULL for none), the team (0 or 1),
 * its score and bags before the hand, and the rules. */
typedef struct {
    int64_t contract, contract_points, made; /* made: 1, 0 (set) or -1 (no contract) */
    int64_t bags, nil_points, bag_penalty, hand_points, total, bags_after;
} sp_team_score;

static inline sp_team_score sp_score_team(const int64_t *bids, const int64_t *tricks,
                                          const uint8_t *blind, int team, int64_t score_before,
                                          int64_t bags_before, const sp_rules *rules) {
    const int64_t nil_bonus = rules->nil_bonus, blind_nil_bonus = rules->blind_nil_bonus;
    const int64_t bag_limit = rules->bag_limit, bag_penalty = rules->bag_penalty;
    const int fnc = (int)rules->failed_nil_tricks_count;
    sp_team_score r;
    int64_t contract = 0, taken = 0, nil_points = 0, nil_tricks = 0, bags = 0;
    for (int q = team; q < 4; q += 2) {
        if (bids[q] == 0) {
            const int64_t bonus = blind && blind[q] ? blind_nil_bonus : nil_bonus;
            nil_points += tricks[q] == 0 ? bonus : -bonus;
            nil_tricks += tricks[q];
        } else {
            contract += bids[q];
            taken += tricks[q];
        }
    }
    const int has = contract > 0;
    if (fnc && has) taken += nil_tricks; /* they count toward the partner's contract */
    else bags += nil_tricks;             /* a failed Nil's tricks are bags only */
    const int made = has && taken >= contract;
    r.contract = contract;
    /* overtricks score a point each unless Rules.bags_score_points is off (bags count anyway) */
    const int64_t over_points = rules->bags_score_points ? taken - contract : 0;
    /* a made contract of at least Rules.big_bid_double tricks scores 20 per trick bid */
    const int64_t per = rules->big_bid_double && contract >= rules->big_bid_double ? 20 : 10;
    r.contract_points = made ? per * contract + over_points : (has ? -10 * contract : 0);
    r.made = has ? made : -1;
    r.bags = bags + (made ? taken - contract : 0);
    r.nil_points = nil_points;
    const int64_t total_bags = bags_before + r.bags; /* >= 0 */
    const int64_t penalties = total_bags / bag_limit;
    r.bag_penalty = -bag_penalty * penalties;
    r.bags_after = total_bags - penalties * bag_limit;
    r.hand_points = r.contract_points + nil_points + r.bag_penalty;
    r.total = score_before + r.hand_points;
    return r;
}

/* The winner after a complete hand (docs/rules.md, End of the game; rules.game_outcome): 0, 1,
 * or -1 to play on (also for equal totals when both teams reached an ending condition). moon: the
 * team that shot the moon in that hand (rules.moon_team), or -1. */
static inline int sp_game_outcome(const int64_t *scores, const sp_rules *rules, int moon) {
    if (moon >= 0) return moon; /* a team that shot the moon (Rules.moon_wins) wins at once */
    const int64_t target = rules->target_score, loss_threshold = rules->loss_threshold;
    const int has_loss = (int)rules->has_loss_threshold;
    int reached[2], lost[2];
    for (int t = 0; t < 2; t++) {
        reached[t] = scores[t] >= target;
        lost[t] = has_loss && scores[t] <= loss_threshold && !reached[t];
    }
    const int count = (reached[0] || lost[0]) + (reached[1] || lost[1]);
    if (count == 1) return (reached[0] || lost[1]) ? 0 : 1;
    if (count == 2 && scores[0] != scores[1]) return scores[0] > scores[1] ? 0 : 1;
    return -1;
}

/* The team that shot the moon under Rules.moon_wins (a team contract of 13 made; rules.moon_team)
 * from the hand's two team scores, or -1. */
static inline int sp_moon_team(const sp_rules *rules, const sp_team_score *ts) {
    if (!rules->moon_wins) return -1;
    for (int t = 0; t < 2; t++)
        if (ts[t].contract == 13 && ts[t].made == 1) return t;
    return -1;
}

#endif
