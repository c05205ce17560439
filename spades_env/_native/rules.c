/* The card-play rules of rules.h, exported one by one so that tests/test_rules_conformance.py
 * can hold the C rules to the Python reference (spades_env/rules.py) directly. The kernel and the
 * play-outs use rules.h's inline functions, not these. */
#include <stdint.h>

#include "rules.h"

uint64_t sp_rule_legal_cards(uint64_t hand, int64_t led, int64_t broken) {
    return sp_legal_cards(hand, (int)led, (int)broken);
}

int64_t sp_rule_card_beats(int64_t card, int64_t winning) {
    return sp_card_beats((int)card, (int)winning);
}

uint64_t sp_rule_cards_that_beat(uint64_t cards, int64_t winning) {
    return sp_cards_that_beat(cards, (int)winning);
}

int64_t sp_rule_spades_broken_after(int64_t card, int64_t led, int64_t broken, int64_t flb) {
    return sp_spades_broken_after((int)card, (int)led, (int)broken, (int)flb);
}

int64_t sp_rule_voids_revealed(int64_t card, int64_t led, int64_t broken) {
    return sp_voids_revealed((int)card, (int)led, (int)broken);
}

int64_t sp_rule_trick_winner(const int64_t *cards, int64_t leader) {
    return sp_trick_winner(cards, (int)leader);
}
