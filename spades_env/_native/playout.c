/* Play-outs and the exact endgame solver of the PIMC bots in C (spades_env/bots/solver.py:
 * playout, _choose; solve, _minimax).
 *
 * A line-by-line port of the Python play-out policy: the same card at every step, so the same
 * trick counts (tests/bots/test_native_playout.py compares both on random positions); and of the
 * Python solver's search, so the same values and leaves (tests/bots/test_native_solver.py). The
 * Python functions are the reference and the fallback when the kernel is not built.
 *
 * Hands are 52-bit masks (bit = card id suit * 13 + rank). Which suit a card follows and how the
 * cards of a suit rank are the deck's tables (rules.h: sp_deck, the Python rules.Deck passed in by
 * solver.playouts), so the jokers' deck plays with its own order: "lowest" and "highest" are by
 * the deck's strength (Deck.lowest, Deck.highest), ranks across suits by Deck.rank. Built with the
 * batched engine's kernel by setup.py and loaded with ctypes by spades_env/native.py. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

/* ============================================================================ exact endgame solver
 *
 * The search of solver.solve (solver._minimax) card for card: the same cards tried in the same
 * order (by id, a card skipped when equivalent to the one tried before it), the same alpha-beta
 * cut-offs inside a trick, a full window at each trick boundary, and values at trick boundaries
 * memoized. So it returns the very value of the Python search (one of the utility table's values,
 * compared with ==) and the same leaf: the final trick counts of the line whose value it is
 * (pimc card_outcomes' won). tests/bots/test_native_solver.py compares both on random positions.
 *
 * The utility is a table by the tricks each seat wins from the position on: with r tricks left
 * (the trick in progress counted), util[((d0 * k + d1) * k + d2) * k + d3], k = r + 1, is the
 * value of the final counts won + (d0, d1, d2, d3); only the entries with d0 + d1 + d2 + d3 == r
 * are read (solver.solve_many fills them from the Python utility). */

/* A memoized trick boundary; the table is a cache (a colliding store replaces the entry), so
 * values found are exact and values lost are searched again to the same result. */
typedef struct {
    uint64_t h[4];  /* the hands */
    uint32_t gen;   /* 1 + the row whose search stored it; 0: empty */
    uint32_t meta;  /* the seat to lead, broken << 2, the tricks won since the position << 3 */
    double value;
    uint32_t leaf;  /* the leaf's tricks won since the position, 4 bits a seat */
} sp_memo;

typedef struct {
    const sp_deck *d;
    const double *util; /* by the tricks won since the position (above) */
    int k;              /* r + 1 */
    int flb, broken;
    uint64_t h[4];      /* the hands, by seat */
    int t[4], n;        /* the trick in progress: its cards in play order */
    int inc[4];         /* tricks won since the position, by seat */
    sp_memo *memo;      /* NULL: no memo */
    uint64_t mask;      /* the memo's entries - 1 */
    uint32_t gen;
} sp_search;

static inline uint32_t pack_inc(const int *inc) {
    return (uint32_t)(inc[0] | inc[1] << 4 | inc[2] << 8 | inc[3] << 12);
}

static inline uint64_t memo_slot(const sp_search *S, uint32_t meta) {
    uint64_t x = S->h[0] * 0x9E3779B97F4A7C15ULL ^ S->h[1] * 0xC2B2AE3D27D4EB4FULL
                 ^ S->h[2] * 0x165667B19E3779F9ULL ^ S->h[3] * 0xD6E8FEB86659FD93ULL
                 ^ (uint64_t)meta * 0xFF51AFD7ED558CCDULL;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 29;
    return x & S->mask;
}

/* The value of the position in S with seat p to play in a trick led by ldr (solver._minimax's
 * rec); *leaf: the packed tricks won since the position at the end of the line of that value. */
static double solve_rec(sp_search *S, int p, int ldr, double alpha, double beta,
                        uint32_t *leaf) {
    const sp_deck *d = S->d;
    const int n = S->n;
    uint32_t meta = 0;
    int memoize = 0;
    if (n == 0) {
        if (!(S->h[0] | S->h[1] | S->h[2] | S->h[3])) {
            *leaf = pack_inc(S->inc);
            return S->util[((S->inc[0] * S->k + S->inc[1]) * S->k + S->inc[2]) * S->k
                           + S->inc[3]];
        }
        /* a full window, so that the memoized value is exact; the last trick is not memoized
         * (playing it is cheaper than looking it up) */
        alpha = -INFINITY;
        beta = INFINITY;
        if (S->memo && (S->h[p] & (S->h[p] - 1))) {
            memoize = 1;
            meta = (uint32_t)p | (uint32_t)S->broken << 2 | pack_inc(S->inc) << 3;
            const sp_memo *e = &S->memo[memo_slot(S, meta)];
            if (e->gen == S->gen && e->meta == meta && e->h[0] == S->h[0]
                && e->h[1] == S->h[1] && e->h[2] == S->h[2] && e->h[3] == S->h[3]) {
                *leaf = e->leaf;
                return e->value;
            }
        }
    }
    const uint64_t hand = S->h[p];
    const int led = n ? d->suit_of[S->t[0]] : -1;
    const uint64_t legal = sp_legal_cards(d, hand, led, S->broken);
    const int maxi = !(p & 1);
    uint64_t others = (S->h[0] | S->h[1] | S->h[2] | S->h[3]) & ~hand;
    for (int i = 0; i < n; i++) others |= 1ULL << S->t[i];
    double best = 0.0;
    uint32_t best_leaf = 0;
    int have = 0, prev = -1;
    for (uint64_t m = legal; m; m &= m - 1) {
        const int c = lowbit(m);
        /* skip a card equivalent to the one tried before it (same suit, no card of another hand
         * or of the trick between them in the deck's order) */
        if (prev >= 0 && d->suit_of[prev] == d->suit_of[c]) {
            const int lo = d->strength[prev] < d->strength[c] ? prev : c, hi = prev ^ c ^ lo;
            const uint64_t between = d->above[lo] & ~d->above[hi] & ~(1ULL << hi);
            if (!(others & between)) {
                prev = c;
                continue;
            }
        }
        prev = c;
        const int saved_broken = S->broken;
        S->h[p] = hand & ~(1ULL << c);
        S->broken = sp_spades_broken_after(d, c, led, saved_broken, S->flb);
        S->t[n] = c;
        uint32_t lf;
        double v;
        if (n == 3) { /* the trick is complete */
            const int64_t tc[4] = {S->t[0], S->t[1], S->t[2], S->t[3]};
            const int ws = sp_trick_winner(d, tc, ldr);
            S->n = 0;
            S->inc[ws]++;
            v = solve_rec(S, ws, ws, alpha, beta, &lf);
            S->inc[ws]--;
            for (int i = 0; i < 3; i++) S->t[i] = (int)tc[i]; /* the next trick wrote there */
        } else {
            S->n = n + 1;
            v = solve_rec(S, (p + 1) & 3, ldr, alpha, beta, &lf);
        }
        S->n = n;
        S->broken = saved_broken;
        S->h[p] = hand;
        if (maxi) {
            if (!have || v > best) {
                best = v;
                best_leaf = lf;
                if (v > alpha) alpha = v;
            }
        } else if (!have || v < best) {
            best = v;
            best_leaf = lf;
            if (v < beta) beta = v;
        }
        have = 1;
        if (alpha >= beta) break;
    }
    if (memoize) {
        sp_memo *e = &S->memo[memo_slot(S, meta)];
        for (int s = 0; s < 4; s++) e->h[s] = S->h[s];
        e->gen = S->gen;
        e->meta = meta;
        e->value = best;
        e->leaf = best_leaf;
    }
    *leaf = best_leaf;
    return best;
}

/* Many exact solves from one position, each row with its own deal and first card (the rows of
 * solver.solve_many). The caller has checked the trick (at most 3 cards, ids 0..51), the seats
 * and tricks (0..13); each row is checked here before anything is searched: the result is 0,
 * 1 + the first row whose card is not in the mover's hand, or -(1 + the first row) whose masks
 * hold a card id above 51 or whose hand sizes do not fit `tricks` tricks left (each seat holds
 * one card a trick, less the card it has played to the trick in progress).
 *
 * deck: the deck's tables (native.c_deck of the rules' Deck).
 * Shared: the trick in progress trick[0..ntrick) (card ids in play order), its leader (the seat to
 * lead when ntrick == 0), broken, mover (the seat to play), flb (Rules.forced_spade_lead_breaks),
 * tricks: the tricks left r (the trick in progress counted), util: (r + 1)^4 values by the tricks
 * each seat wins from the position on (above).
 * Row r: hands[4r..4r+4) masks by seat, card[r]: the mover's card played first
 * (solver.finish_trick), or -1 to start at the position as it is.
 * Output: out[r] the exact value of the row, leaves[4r..4r+4) (unless NULL) the tricks each seat
 * wins from the position on in the line of that value. */
int64_t sp_solve(const sp_deck *deck, int64_t rows, const uint64_t *hands, const int8_t *card,
                 const int8_t *trick, int64_t ntrick, int64_t leader, int64_t broken,
                 int64_t mover, int64_t flb, int64_t tricks, const double *util, double *out,
                 int8_t *leaves) {
    for (int64_t r = 0; r < rows; r++) {
        int c = card[r];
        if (c < -1 || c > 51 || (c >= 0 && !((hands[4 * r + mover] >> c) & 1))) return r + 1;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int s = 0; s < 4; s++) {
            const uint64_t m = hands[4 * r + s];
            const int played = ((s - (int)leader) & 3) < ntrick;
            if ((m & ~SP_ALL52) || __builtin_popcountll(m) != tricks - played) return -(r + 1);
        }
    /* a memo for 3 tricks left or more: 2^(3r + 1) entries, at most 2^16 (zeroed lazily by the
     * system: only the entries used are touched) */
    sp_search S;
    S.memo = NULL;
    S.mask = 0;
    if (tricks >= 3) {
        const int bits = tricks >= 5 ? 16 : (int)(3 * tricks + 1);
        S.memo = (sp_memo *)calloc((size_t)1 << bits, sizeof(sp_memo));
        if (S.memo) S.mask = ((uint64_t)1 << bits) - 1; /* no memory: search without it */
    }
    S.d = deck;
    S.util = util;
    S.k = (int)tricks + 1;
    S.flb = (int)flb;
    for (int64_t r = 0; r < rows; r++) {
        int n = (int)ntrick, ldr = (int)leader;
        S.gen = (uint32_t)(r + 1);
        S.broken = (int)broken;
        for (int s = 0; s < 4; s++) {
            S.h[s] = hands[4 * r + s];
            S.inc[s] = 0;
        }
        for (int i = 0; i < n; i++) S.t[i] = trick[i];
        const int c = card[r];
        if (c >= 0) { /* solver.finish_trick */
            S.h[mover] &= ~(1ULL << c);
            S.broken = sp_spades_broken_after(deck, c, n ? deck->suit_of[S.t[0]] : -1, S.broken,
                                              (int)flb);
            S.t[n++] = c;
            if (n == 4) {
                const int64_t tc[4] = {S.t[0], S.t[1], S.t[2], S.t[3]};
                const int ws = sp_trick_winner(deck, tc, ldr);
                S.inc[ws]++;
                ldr = ws;
                n = 0;
            }
        }
        S.n = n;
        uint32_t lf;
        out[r] = solve_rec(&S, (ldr + n) & 3, ldr, -INFINITY, INFINITY, &lf);
        if (leaves)
            for (int s = 0; s < 4; s++) leaves[4 * r + s] = (int8_t)((lf >> (4 * s)) & 15);
    }
    free(S.memo);
    return 0;
}
