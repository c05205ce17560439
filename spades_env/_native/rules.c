/* The rules of rules.h, exported one by one so that tests/test_rules_conformance.py
 * can hold the C rules to the Python reference (spades_env/rules.py) directly. The kernel and the
 * play-outs use rules.h's inline functions, not these. */
#include <stdint.h>

#include "rules.h"

/* The card-play rules take the deck's tables (sp_deck: native.c_deck of a rules.Deck). */
uint64_t sp_rule_legal_cards(const sp_deck *d, uint64_t hand, int64_t led, int64_t broken) {
    return sp_legal_cards(d, hand, (int)led, (int)broken);
}

int64_t sp_rule_card_beats(const sp_deck *d, int64_t card, int64_t winning) {
    return sp_card_beats(d, (int)card, (int)winning);
}

uint64_t sp_rule_cards_that_beat(const sp_deck *d, uint64_t cards, int64_t winning) {
    return sp_cards_that_beat(d, cards, (int)winning);
}

int64_t sp_rule_spades_broken_after(const sp_deck *d, int64_t card, int64_t led, int64_t broken,
                                    int64_t flb) {
    return sp_spades_broken_after(d, (int)card, (int)led, (int)broken, (int)flb);
}

int64_t sp_rule_voids_revealed(const sp_deck *d, int64_t card, int64_t led, int64_t broken) {
    return sp_voids_revealed(d, (int)card, (int)led, (int)broken);
}

int64_t sp_rule_trick_winner(const sp_deck *d, const int64_t *cards, int64_t leader) {
    return sp_trick_winner(d, cards, (int)leader);
}

uint64_t sp_rule_legal_bids(const sp_rules *rules, int64_t seat, uint64_t hand, int64_t looked,
                            const int64_t *bids) {
    return sp_legal_bids(rules, (int)seat, hand, (int)looked, bids);
}

/* sp_score_team into out[9]: contract, contract_points, made (1, 0, -1), bags, nil_points,
 * bag_penalty, hand_points, total, bags_after. */
void sp_rule_score_team(const int64_t *bids, const int64_t *tricks, const uint8_t *blind,
                        int64_t team, int64_t score_before, int64_t bags_before,
                        const sp_rules *rules, int64_t *out) {
    const sp_team_score r = sp_score_team(bids, tricks, blind, (int)team, score_before,
                                          bags_before, rules);
    const int64_t v[9] = {r.contract, r.contract_points, r.made, r.bags, r.nil_points,
                          r.bag_penalty, r.hand_points, r.total, r.bags_after};
    for (int q = 0; q < 9; q++) out[q] = v[q];
}

int64_t sp_rule_game_outcome(const int64_t *scores, const sp_rules *rules, int64_t moon) {
    return sp_game_outcome(scores, rules, (int)moon);
}
