/* Play-outs of the PIMC bots in C (spades_env/bots/solver.py: playout, _choose).
 *
 * A line-by-line port of the Python play-out policy: the same card at every step, so the same
 * trick counts (tests/test_native_playout.py compares both on random positions). The Python
 * functions are the reference and the fallback when the kernel is not built.
 *
 * Hands are 52-bit masks (bit = card id suit * 13 + rank). Which suit a card follows and how the
 * cards of a suit rank are the deck's tables (rules.h: sp_deck, the Python rules.Deck passed in by
 * solver.playouts), so the jokers' deck plays with its own order: "lowest" and "highest" are by
 * the deck's strength (Deck.lowest, Deck.highest), ranks across suits by Deck.rank. Built with the
 * batched engine's kernel by setup.py and loaded with ctypes by spades_env/native.py. */
#include <stdint.h>

#include "rules.h"

#define SET_MARGIN 2

static inline int lowbit(uint64_t m) { return __builtin_ctzll(m); }
static inline int highbit(uint64_t m) { return 63 - __builtin_clzll(m); }

/* The weakest card of a non-empty mask (Deck.lowest): the lowest id among the plain cards, else the
 * weakest promoted trump. */
static inline int lowest(const sp_deck *d, uint64_t m) {
    const uint64_t p = m & d->plain;
    if (p) return lowbit(p);
    for (int k = d->ntop - 1; k >= 0; k--)
        if ((m >> d->top[k]) & 1) return d->top[k];
    return lowbit(m);
}

/* The strongest card of a non-empty mask (Deck.highest): the strongest promoted trump held, else
 * the highest id. */
static inline int highest(const sp_deck *d, uint64_t m) {
    for (int k = 0; k < d->ntop; k++)
        if ((m >> d->top[k]) & 1) return d->top[k];
    return highbit(m);
}

/* lowest rank, the lower suit at equal rank (solver.low_rank, Deck.low_rank) */
static int low_rank(const sp_deck *d, uint64_t m) {
    int best = -1, br = 99;
    for (int s = 0; s < 4; s++) {
        const uint64_t ch = m & d->suit[s];
        if (ch) {
            const int c = lowest(d, ch), r = d->rank[c];
            if (r < br) { br = r; best = c; }
        }
    }
    return best;
}

/* highest rank, spades first at equal rank (solver.high_rank, Deck.high_rank) */
static int high_rank(const sp_deck *d, uint64_t m) {
    int best = -1, br = -1;
    for (int s = 3; s >= 0; s--) {
        const uint64_t ch = m & d->suit[s];
        if (ch) {
            const int c = highest(d, ch), r = d->rank[c];
            if (r > br) { br = r; best = c; }
        }
    }
    return best;
}

static inline uint64_t beaters(const sp_deck *d, uint64_t legal, int win) {
    return sp_cards_that_beat(d, legal, win);
}

static inline int can_beat(const sp_deck *d, uint64_t hand, int win, int led) {
    return sp_cards_that_beat(d, sp_legal_cards(d, hand, led, 1), win) != 0;
}

static int duck(const sp_deck *d, uint64_t legal, int n, int win) {
    if (n == 0) return low_rank(d, legal);
    uint64_t lose = legal & ~beaters(d, legal, win);
    return high_rank(d, lose ? lose : legal);
}

static int choose(const sp_deck *d, int p, const uint64_t *h, uint64_t legal, int n, int led,
                  int win, int wseat, const int *won, const int *nil, const int *contract,
                  int fnc) {
    const uint64_t *SUIT = d->suit, S3 = d->suit[3];
    int partner = p ^ 2;
    /* Nil bidder */
    if (nil[p] && !won[p]) return duck(d, legal, n, win);
    /* partner of a live Nil */
    if (nil[partner] && !won[partner]) {
        if (n == 0) return high_rank(d, legal);
        if (wseat == partner || n <= 1) {
            uint64_t b = beaters(d, legal, win);
            if (b) {
                if (n < 3) return high_rank(d, b);
                return lowest(d, b);
            }
            return low_rank(d, legal);
        }
    }
    /* opponent of a live Nil */
    int o1 = (p + 1) & 3, o2 = (p + 3) & 3, tnil = -1;
    if (nil[o1] && !won[o1]) tnil = o1;
    else if (nil[o2] && !won[o2]) tnil = o2;
    if (tnil >= 0) {
        if (n == 0) {
            uint64_t nh = h[tnil];
            int best = -1;
            for (int s = 0; s < 4; s++) {
                uint64_t mine = legal & SUIT[s], theirs = nh & SUIT[s];
                if (mine && theirs) {
                    int lo = lowest(d, mine);
                    if (d->strength[lo] < d->strength[highest(d, theirs)]
                        && (best < 0 || d->rank[lo] < d->rank[best]))
                        best = lo;
                }
            }
            return best >= 0 ? best : low_rank(d, legal);
        }
        int to_play = ((tnil - p) & 3) <= 3 - n;
        if (wseat == tnil) {
            uint64_t lose = legal & ~beaters(d, legal, win);
            return lose ? high_rank(d, lose) : low_rank(d, legal);
        }
        if (to_play) return low_rank(d, legal);
    }
    /* contract play */
    int team = p & 1, ot = team ^ 1;
    /* a Nil bidder's tricks count only with Rules.failed_nil_tricks_count (fnc) */
    int need = contract[team] - won[team] * (fnc || !nil[team])
               - won[team + 2] * (fnc || !nil[team + 2]);
    int oneed = contract[ot] - won[ot] * (fnc || !nil[ot]) - won[ot + 2] * (fnc || !nil[ot + 2]);
    int tleft = 13 - won[0] - won[1] - won[2] - won[3];
    if (need > 0 || (oneed > 0 && tleft - oneed <= SET_MARGIN)) {
        if (n == 0) {
            /* lead a sure winner (top of its suit, no opponent can ruff) */
            uint64_t oh1 = h[o1], oh2 = h[o2], others = h[partner] | oh1 | oh2;
            static const int order[4] = {2, 1, 0, 3};
            for (int i = 0; i < 4; i++) {
                int s = order[i];
                uint64_t mine = legal & SUIT[s];
                if (!mine) continue;
                int top = highest(d, mine);
                if (others & d->above[top]) continue;
                if (s != 3 && ((!(oh1 & SUIT[s]) && (oh1 & S3)) || (!(oh2 & SUIT[s]) && (oh2 & S3))))
                    continue;
                return top;
            }
            /* lead low towards partner's winner */
            uint64_t ph = h[partner];
            for (int s = 2; s >= 0; s--) {
                uint64_t mine = legal & SUIT[s], pm = ph & SUIT[s];
                if (mine && pm && !((oh1 | oh2) & d->above[highest(d, pm)])) return lowest(d, mine);
            }
            /* else low from the longest suit */
            int bs = -1, bl = -1;
            for (int s = 0; s < 4; s++) {
                int ln = __builtin_popcountll(legal & SUIT[s]);
                if ((ln > bl || (ln == bl && s != 3)) && ln) { bl = ln; bs = s; }
            }
            return lowest(d, legal & SUIT[bs]);
        }
        if (wseat == partner) {
            /* partner winning: safe against the opponent still to play? */
            if (!(n < 3 && can_beat(d, h[o1], win, led))) {
                uint64_t lose = legal & ~beaters(d, legal, win);
                return low_rank(d, lose ? lose : legal);
            }
        }
        uint64_t b = beaters(d, legal, win);
        if (b) {
            if (n == 3) {
                uint64_t bb = b & SUIT[led];
                return lowest(d, bb ? bb : b);
            }
            /* lowest winner that the opponent(s) after us cannot beat (from the weakest up:
             * the plain cards by id, then the promoted trumps from the weakest) */
            uint64_t rest = b & d->plain;
            for (int j = d->ntop - 1;;) {
                int c;
                if (rest) {
                    c = lowbit(rest);
                    rest &= rest - 1;
                } else {
                    while (j >= 0 && !((b >> d->top[j]) & 1)) j--;
                    if (j < 0) break;
                    c = d->top[j--];
                }
                if (can_beat(d, h[o1], c, led)) continue;
                if (n == 1 && can_beat(d, h[o2], c, led)) continue;
                return c;
            }
            /* cannot win for sure: second hand low, third hand high */
            if (n == 2) return (b & SUIT[led]) ? high_rank(d, b & SUIT[led]) : lowest(d, b);
        }
        uint64_t lose = legal & ~b;
        return low_rank(d, lose ? lose : legal);
    }
    /* duck (contract safe) */
    return duck(d, legal, n, win);
}

/* One play-out (solver.playout) from a position; won[4] is updated in place. */
static void playout1(const sp_deck *d, uint64_t *h, const int8_t *trick, int n, int leader,
                     int *won, int broken, const int *nil, const int *contract, int flb, int fnc) {
    int p = (leader + n) & 3, led = -1, win = -1, wseat = -1;
    if (n) {
        led = d->suit_of[trick[0]];
        win = trick[0];
        wseat = leader;
        for (int i = 1; i < n; i++) {
            if (sp_card_beats(d, trick[i], win)) {
                win = trick[i];
                wseat = (leader + i) & 3;
            }
        }
    }
    int left = __builtin_popcountll(h[0]) + __builtin_popcountll(h[1]) +
               __builtin_popcountll(h[2]) + __builtin_popcountll(h[3]);
    while (left) {
        const uint64_t hand = h[p], legal = sp_legal_cards(d, hand, led, broken);
        int card = (legal & (legal - 1))
                       ? choose(d, p, h, legal, n, led, win, wseat, won, nil, contract, fnc)
                       : highbit(legal);
        h[p] = hand & ~(1ULL << card);
        left--;
        broken = sp_spades_broken_after(d, card, led, broken, flb);
        if (n == 0) {
            led = d->suit_of[card];
            win = card;
            wseat = p;
        } else if (sp_card_beats(d, card, win)) {
            win = card;
            wseat = p;
        }
        n++;
        if (n == 4) {
            won[wseat]++;
            p = wseat;
            n = 0;
            led = -1;
        } else {
            p = (p + 1) & 3;
        }
    }
}

/* Many play-outs from one position, each row with its own deal, bids and first card.
 * The caller (solver.playouts) has checked the lengths, the seats and the trick; each row's card
 * is checked here: the result is 0, or 1 + the first row whose card is not in the mover's hand
 * (nothing is played then).
 *
 * deck: the deck's tables (native.c_deck of the rules' Deck).
 * Shared: the trick in progress trick[0..ntrick) (card ids in play order), its leader (the seat to
 * lead when ntrick == 0), won[4] trick counts by seat, broken, mover (the seat to play), flb
 * (Rules.forced_spade_lead_breaks), fnc (Rules.failed_nil_tricks_count).
 * Row r: hands[4r..4r+4) masks by seat, bids[4r..4r+4) (0 = Nil), card[r]: the mover's card played
 * first (pimc._finish_trick), or -1 to start at the position as it is.
 * Output: out[4r..4r+4) final trick counts by seat. */
int64_t sp_playouts(const sp_deck *deck, int64_t rows, const uint64_t *hands, const int8_t *bids,
                    const int8_t *card, const int8_t *trick, int64_t ntrick, int64_t leader,
                    const int8_t *won, int64_t broken, int64_t mover, int64_t flb, int64_t fnc,
                    int8_t *out) {
    for (int64_t r = 0; r < rows; r++) {
        int c = card[r];
        if (c < -1 || c > 51 || (c >= 0 && !((hands[4 * r + mover] >> c) & 1))) return r + 1;
    }
    for (int64_t r = 0; r < rows; r++) {
        uint64_t h[4];
        int8_t t[4];
        int w[4], nil[4], contract[2];
        int n = (int)ntrick, ldr = (int)leader, brk = (int)broken;
        for (int s = 0; s < 4; s++) {
            h[s] = hands[4 * r + s];
            w[s] = won[s];
            nil[s] = bids[4 * r + s] == 0;
        }
        for (int i = 0; i < n; i++) t[i] = trick[i];
        for (int k = 0; k < 2; k++) {
            int a = bids[4 * r + k], b = bids[4 * r + k + 2];
            contract[k] = (a > 0 ? a : 0) + (b > 0 ? b : 0);
        }
        int c = card[r];
        if (c >= 0) { /* solver.finish_trick */
            h[mover] &= ~(1ULL << c);
            brk = sp_spades_broken_after(deck, c, n ? deck->suit_of[t[0]] : -1, brk, (int)flb);
            t[n++] = (int8_t)c;
            if (n == 4) {
                const int64_t tc[4] = {t[0], t[1], t[2], t[3]};
                const int ws = sp_trick_winner(deck, tc, ldr);
                w[ws]++;
                ldr = ws;
                n = 0;
            }
        }
        playout1(deck, h, t, n, ldr, w, brk, nil, contract, (int)flb, (int)fnc);
        for (int s = 0; s < 4; s++) out[4 * r + s] = (int8_t)w[s];
    }
    return 0;
}
