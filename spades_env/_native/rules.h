/* The card-play rules of Spades in C, written once for the batched kernel (vector_kernel.c) and
 * the search bots' play-outs (playout.c): docs/rules.md, Play. The Python reference is
 * spades_env/rules.py (legal_cards_mask, card_beats, cards_that_beat, spades_broken_after,
 * voids_revealed, trick_winner_unchecked), and tests/test_rules_conformance.py holds every
 * implementation to it.
 *
 * Hands are 52-bit masks (bit = card id suit * 13 + rank, spades = suit 3); led is the suit led to
 * the current trick, or -1 when the player is to lead. */
#ifndef SPADES_RULES_H
#define SPADES_RULES_H

#include <stdint.h>

#define SP_ALL52 ((1ULL << 52) - 1)
#define SP_SUIT(s) (0x1FFFULL << (13 * (s)))
#define SP_NON_SPADES (SP_SUIT(0) | SP_SUIT(1) | SP_SUIT(2))

/* The cards hand may play: the led suit when it holds one, else any card; when leading, no spade
 * before spades are broken unless the hand holds only spades. */
static inline uint64_t sp_legal_cards(uint64_t hand, int led, int broken) {
    if (led >= 0) {
        const uint64_t follow = hand & SP_SUIT(led);
        return follow ? follow : hand;
    }
    if (!broken) {
        const uint64_t ns = hand & SP_NON_SPADES;
        return ns ? ns : hand;
    }
    return hand;
}

/* Whether card takes the trick from winning (the card winning it so far): a higher card of the
 * same suit, or a spade on another suit. */
static inline int sp_card_beats(int card, int winning) {
    return card / 13 == winning / 13 ? card > winning : card >= 39;
}

/* The cards of the mask cards that would take the trick from winning. */
static inline uint64_t sp_cards_that_beat(uint64_t cards, int winning) {
    const uint64_t above = ~((1ULL << (winning + 1)) - 1) & SP_ALL52;
    if (winning >= 39) return cards & SP_SUIT(3) & above;
    return (cards & SP_SUIT(winning / 13) & above) | (cards & SP_SUIT(3));
}

/* Whether spades are broken after card is played: a spade on another suit's lead breaks them; a
 * spade led (from a hand of only spades) breaks them when flb (forced_spade_lead_breaks). */
static inline int sp_spades_broken_after(int card, int led, int broken, int flb) {
    if (broken || card < 39) return broken;
    return led < 0 ? flb : led != 3;
}

/* Suit mask (bit s) of the suits a play shows its player void in: the led suit when card does not
 * follow it; for a spade led before spades are broken, clubs, diamonds and hearts. */
static inline int sp_voids_revealed(int card, int led, int broken) {
    if (led < 0) return card >= 39 && !broken ? 7 : 0;
    return card / 13 != led ? 1 << led : 0;
}

/* The seat that wins the complete trick cards[0..4) (play order) led by leader. */
static inline int sp_trick_winner(const int64_t *cards, int leader) {
    int best = (int)cards[0], bi = 0;
    for (int i = 1; i < 4; i++) {
        if (sp_card_beats((int)cards[i], best)) {
            best = (int)cards[i];
            bi = i;
        }
    }
    return (leader + bi) & 3;
}

#endif
