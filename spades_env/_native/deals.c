/* Uniform deals of one seat's information set in C: the draw of spades_env/bots/sampler.py's
 * DealSampler (its pools, its count and its split walk) for the common case the PIMC label search
 * meets at nearly every card decision: every hand that is not fixed is unknown, its size known,
 * and the only constraints are the suits a seat has shown void in.
 *
 * The unseen cards of each suit may go to the seats with room left that are not void in it;
 * suits with the same set of such seats form a pool. A deal is drawn pool by pool: first how many
 * of the pool's cards each seat takes (a split, drawn with probability proportional to its
 * number of completions: the multinomial of the split times the count of the pools after it given
 * the room left), then which cards (a uniform shuffle of the pool). So every consistent deal has
 * the same probability, as in the Python sampler (tests/bots/test_native_deals.py compares the
 * counts and the frequencies). Counts are doubles: within 1e-12 of the exact count, and exact
 * for the small counts that decide between drawing and enumerating.
 *
 * Built with the batched engine's kernel by setup.py and loaded with ctypes by
 * spades_env/native.py; called by spades_env/bots/sampler.py's native_deals. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define SP_DEAL_SEATS 3 /* the seats that can be unknown when the observer has looked */
#define SP_NEED_STATES (14 * 14 * 14)

typedef struct {
    int npools;
    int allowed[4];      /* the pool's seats: a bit per seat index (0..2) */
    int ncards[4];
    int8_t cards[4][52]; /* the pool's cards */
    double fact[53];
    double *memo;        /* [npools][SP_NEED_STATES], -1: not counted yet */
} sp_deals;

/* Portable bit helpers (set-up only, a few calls a draw). */
static inline int bits_set(uint64_t x) {
    int n = 0;
    for (; x; x &= x - 1) n++;
    return n;
}

static inline int low_card(uint64_t x) { /* x != 0 */
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
}

static inline int need_key(const int *need) { return (need[0] * 14 + need[1]) * 14 + need[2]; }

/* The number of ways to give the pool's c cards k[0], k[1], k[2] by seat index. */
static inline double multinomial(const sp_deals *D, int c, const int *k) {
    return D->fact[c] / (D->fact[k[0]] * D->fact[k[1]] * D->fact[k[2]]);
}

static double count_from(sp_deals *D, int i, const int *need);

/* Calls f(k, weight) for each split k of pool i given the room need, weight > 0 its number of
 * completions; returns their sum. (f NULL: only the sum.) Splits in a fixed order: k[0], then k[1]
 * ascending. */
typedef int (*split_fn)(void *ctx, const int *k, double w);

static double each_split(sp_deals *D, int i, const int *need, split_fn f, void *ctx) {
    const int a = D->allowed[i], c = D->ncards[i];
    const int hi0 = (a & 1) ? (need[0] < c ? need[0] : c) : 0;
    double total = 0.0;
    for (int k0 = 0; k0 <= hi0; k0++) {
        const int left = c - k0;
        const int hi1 = (a & 2) ? (need[1] < left ? need[1] : left) : 0;
        for (int k1 = 0; k1 <= hi1; k1++) {
            const int k2 = left - k1;
            if (k2 > need[2] || (k2 && !(a & 4))) continue;
            const int k[3] = {k0, k1, k2};
            const int rest[3] = {need[0] - k0, need[1] - k1, need[2] - k2};
            const double sub = count_from(D, i + 1, rest);
            if (sub <= 0.0) continue;
            const double w = multinomial(D, c, k) * sub;
            total += w;
            if (f && f(ctx, k, w)) return total;
        }
    }
    return total;
}

/* The deals of pools i.. given the room need (DealSampler._count). */
static double count_from(sp_deals *D, int i, const int *need) {
    if (i == D->npools) return (need[0] | need[1] | need[2]) ? 0.0 : 1.0;
    double *m = D->memo + (int64_t)i * SP_NEED_STATES + need_key(need);
    if (*m < 0.0) *m = each_split(D, i, need, NULL, NULL);
    return *m;
}

typedef struct {
    double target, acc;
    int k[3];
} sp_pick;

static int pick_split(void *ctx, const int *k, double w) {
    sp_pick *p = (sp_pick *)ctx;
    p->acc += w;
    memcpy(p->k, k, sizeof p->k);
    return p->acc > p->target;
}

/* splitmix64 (Steele, Lea and Flood 2014): the draw's random numbers from one 64-bit seed. */
static inline uint64_t next64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A double in [0, 1): the top 53 bits times 2**-53 (no hex float literal: older MSVC). */
static inline double uniform01(uint64_t *s) {
    return (double)(next64(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* An integer in [0, m), m >= 1. */
static inline int below(uint64_t *s, int m) {
    int r = (int)(uniform01(s) * m);
    return r < m ? r : m - 1;
}

/* Draw n deals of the cards in free among seats[0..nseats) (nseats <= 3), seat seats[j] taking
 * need[j] of them, none of a suit it is void in (voids[j]: a bit per suit), the other seats keeping
 * fixed[s]. deck gives the suits.
 *
 * Output: out[4r..4r+4) the masks by seat of deal r (r < n); *count the number of consistent
 * deals (a double). With n == 0 only the count. Returns 0, or -1 when the needs do not add up to
 * the free cards or a pool has no seat that may hold it (a corrupt view: no deal), -2 for bad
 * arguments, -3 when memory runs out. */
int64_t sp_sample_deals(const sp_deck *deck, const uint64_t *fixed, uint64_t free_cards,
                        int64_t nseats, const int8_t *seats, const int8_t *need_in,
                        const int8_t *voids, int64_t n, uint64_t seed, uint64_t *out,
                        double *count) {
    *count = 0.0;
    if (nseats < 0 || nseats > SP_DEAL_SEATS || n < 0) return -2;
    int need[3] = {0, 0, 0};
    int total = 0;
    for (int j = 0; j < nseats; j++) {
        if (seats[j] < 0 || seats[j] > 3 || need_in[j] < 0 || need_in[j] > 13) return -2;
        need[j] = need_in[j];
        total += need[j];
    }
    if (total != bits_set(free_cards)) return -1;
    sp_deals D;
    D.npools = 0;
    /* pools: the suits grouped by the seats that may hold them */
    for (int suit = 0; suit < 4; suit++) {
        uint64_t m = free_cards & deck->suit[suit];
        if (!m) continue;
        int a = 0;
        for (int j = 0; j < nseats; j++)
            if (!((voids[j] >> suit) & 1) && need[j]) a |= 1 << j;
        if (!a) return -1;
        int p = 0;
        while (p < D.npools && D.allowed[p] != a) p++;
        if (p == D.npools) {
            D.allowed[p] = a;
            D.ncards[p] = 0;
            D.npools++;
        }
        while (m) {
            D.cards[p][D.ncards[p]++] = (int8_t)low_card(m);
            m &= m - 1;
        }
    }
    /* the pools with fewer seats first (DealSampler's order): the last split is then the most
     * often forced; insertion sort of at most 4 */
    for (int i = 1; i < D.npools; i++) {
        for (int j = i; j > 0; j--) {
            const int pa = bits_set((uint64_t)D.allowed[j - 1]);
            const int pb = bits_set((uint64_t)D.allowed[j]);
            if (pa < pb || (pa == pb && D.ncards[j - 1] <= D.ncards[j])) break;
            int t = D.allowed[j]; D.allowed[j] = D.allowed[j - 1]; D.allowed[j - 1] = t;
            t = D.ncards[j]; D.ncards[j] = D.ncards[j - 1]; D.ncards[j - 1] = t;
            int8_t tmp[52];
            memcpy(tmp, D.cards[j], 52); memcpy(D.cards[j], D.cards[j - 1], 52);
            memcpy(D.cards[j - 1], tmp, 52);
        }
    }
    D.fact[0] = 1.0;
    for (int i = 1; i <= 52; i++) D.fact[i] = D.fact[i - 1] * i;
    if (D.npools == 0) { /* nothing unseen: the one deal is the fixed hands */
        *count = 1.0;
        for (int64_t r = 0; r < n; r++)
            for (int s = 0; s < 4; s++) out[4 * r + s] = fixed[s];
        return 0;
    }
    D.memo = (double *)malloc(sizeof(double) * SP_NEED_STATES * D.npools);
    if (!D.memo) return -3;
    for (int64_t i = 0; i < (int64_t)SP_NEED_STATES * D.npools; i++) D.memo[i] = -1.0;
    const double all = count_from(&D, 0, need);
    *count = all;
    if (all <= 0.0) {
        free(D.memo);
        return -1;
    }
    uint64_t rng = seed;
    for (int64_t r = 0; r < n; r++) {
        uint64_t h[4] = {fixed[0], fixed[1], fixed[2], fixed[3]};
        int room[3] = {need[0], need[1], need[2]};
        for (int i = 0; i < D.npools; i++) {
            sp_pick pk;
            pk.acc = 0.0;
            pk.target = uniform01(&rng) * count_from(&D, i, room);
            each_split(&D, i, room, pick_split, &pk); /* the last split with weight stops it */
            int8_t *cards = D.cards[i];
            const int c = D.ncards[i];
            /* a uniform permutation's first k[0] cards to seat index 0, the next k[1] to 1, ... */
            int pos = 0;
            for (int j = 0; j < nseats; j++) {
                for (int t = 0; t < pk.k[j]; t++, pos++) {
                    const int q = pos + below(&rng, c - pos);
                    const int8_t card = cards[q];
                    cards[q] = cards[pos];
                    cards[pos] = card;
                    h[seats[j]] |= 1ULL << card;
                }
                room[j] -= pk.k[j];
            }
        }
        for (int s = 0; s < 4; s++) out[4 * r + s] = h[s];
    }
    free(D.memo);
    return 0;
}
