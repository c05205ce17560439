/* Fused CPU step of the batched Spades engine (spades_env/vector/, backend "native").
 *
 * Every function works on the tensors of a SpadesVectorEnv in place (contiguous CPU tensors,
 * pointers in struct sp_env) and does, game by game, what the torch path of
 * SpadesVectorEnv.step / _output does with tensor ops, on the same buffers with the same results,
 * with one difference: the torch path keeps every observer's uint8 observation row (obs4) up to
 * date at every move, while here a move updates only the small per-game state (hands as 52-bit
 * masks, bids, the trick, voids...) and the observation of the seat to act is assembled from it
 * when rendered (assemble); obs4 is written only on request (sp_sync_rows: state_dict, observe).
 * Four rows of 712 bytes per game are what made the step memory-bound. The torch path is the
 * reference; the vector tests check both backends against the scalar engine. The card-play rules (follow suit, spades break, voids, trick winner)
 * are rules.h's, shared with the play-outs, on the deck's tables in the rules (rules.deck: a card's
 * suit is rules.deck.suit_of[card], the jokers' deck included).
 *
 * Built at first use by spades_env/native.py (plain C, no Python or torch headers; loaded with
 * ctypes). Compiled without -ffast-math: k / 13.0f must be IEEE float32 division. */
#include <stdint.h>
#include <string.h>

#include "rules.h"

typedef struct {
    int64_t n, row, obs_size;
    sp_rules rules;       /* the switches (rules.h: SP_RULES_FIELDS) */
    /* observation offsets (spades_env.observation.OFFSETS starts) */
    int64_t o_phase, o_hand, o_played, o_trick, o_led, o_bids, o_won, o_voids, o_broken, o_tn,
        o_to_act, o_side;
    /* state (shapes with N = n) */
    int64_t *cur;         /* (N,) seat to act */
    int64_t *actions;     /* (N, 56) this hand's moves */
    int64_t *bids;        /* (N, 4) */
    int64_t *trick_obs;   /* (N, 16) flat entries of the current trick in the 4 trick blocks */
    int64_t *leader;      /* (N,) */
    int64_t *led;         /* (N,) led suit */
    int64_t *trick;       /* (N, 4) cards of the current trick in play order */
    int64_t *tricks;      /* (N, 4) tricks won by seat */
    uint8_t *obs4;        /* (N, 4 * row) every observer's uint8 observation row (sp_sync_rows) */
    uint8_t *hands;       /* (N, 4 * 52) bool */
    uint8_t *voids;       /* (N, 16) bool, seat * 4 + suit */
    uint8_t *broken;      /* (N,) bool */
    uint8_t *mask;        /* (N, 68) bool */
    float *side;          /* (N, 4, 5) scores, bags, target by observer */
    /* hand start and end */
    int64_t o_looked, o_dealer;
    int64_t hands_per_episode, max_hands, reward_game; /* 0 = no limit / hand rewards */
    int64_t *owner;       /* (N, 52) seat dealt each card */
    int64_t *dealer;      /* (N,) */
    int64_t *scores;      /* (N, 2) team totals */
    int64_t *bags;        /* (N, 2) team bag counts */
    int64_t *hand_count;  /* (N,) hands finished in the running game */
    float target_feature; /* float32(target / 500) */
    int32_t threads;      /* OpenMP threads for the loops over games (1: serial) */
    int64_t o_rules, n_rules; /* the rules piece: offset and width (observation version 3) */
    float *rules_feat;    /* (n_rules,) observation.rules_features(rules), the same for every row */
    /* output format: 0 float32 rows of obs_size, 1 compact rows (spades_env.compact) of c_size
     * bytes: the row's flags as bits, the counts at c_counts, the side floats at c_side */
    int64_t compact, c_size, c_counts, c_side;
    /* each seat's hand and its cards at the deal as 52-bit masks, (N, 4): the observation rows
     * are assembled from these and the arrays above when rendered (sp_render) or synced into
     * obs4 (sp_sync_rows); sp_step and sp_start_hands do not write obs4 */
    uint64_t *hbits, *dealt;
    /* (N,) the legal actions of the seat to act, as the mask holds them: bit c for card c, or
     * with bit 63 set (bidding) bit b for action 52 + b; sp_sample draws from these */
    uint64_t *lbits;
} sp_env;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "the compact observation and the mask words assume a little-endian host"
#endif

/* Loops over games run on e->threads OpenMP threads when built with -fopenmp (games are
 * independent: each iteration touches only its own rows). */
#define PAR_FOR _Pragma("omp parallel for schedule(static) num_threads(e->threads) if(e->threads > 1)")
/* The per-step loops: stmt for i = 0..n-1, on the threads, or with one thread as a plain loop
 * (an OpenMP region that does not fork still costs a library call per step). */
#define GAME_LOOP(n, stmt) do { \
        if (e->threads > 1) { PAR_FOR for (int64_t i = 0; i < (n); i++) { stmt; } } \
        else { for (int64_t i = 0; i < (n); i++) { stmt; } } \
    } while (0)


#define NCARDS 52
#define NACT 68
#define HAND_STEPS 56
#define BIDDING_BIT (1ULL << 63) /* lbits: the bits are bids (action 52 + bit) */

/* Set bits of x, inline on every compiler (the builtin is a library call without -mpopcnt). */
static inline int popcount64(uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}

/* Index of the lowest set bit of x (x != 0). */
static inline int lowest_bit(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; n++; }
    return n;
#endif
}

/* SPREAD[b]: the 8 bits of b as 8 bytes of 0/1 (byte j = bit j), to write 8 flags at once. */
#define SP1(b) ((uint64_t)((b) & 1) | (uint64_t)(((b) >> 1) & 1) << 8 \
    | (uint64_t)(((b) >> 2) & 1) << 16 | (uint64_t)(((b) >> 3) & 1) << 24 \
    | (uint64_t)(((b) >> 4) & 1) << 32 | (uint64_t)(((b) >> 5) & 1) << 40 \
    | (uint64_t)(((b) >> 6) & 1) << 48 | (uint64_t)(((b) >> 7) & 1) << 56)
#define SP4(b) SP1(b), SP1((b) + 1), SP1((b) + 2), SP1((b) + 3)
#define SP16(b) SP4(b), SP4((b) + 4), SP4((b) + 8), SP4((b) + 12)
#define SP64(b) SP16(b), SP16((b) + 16), SP16((b) + 32), SP16((b) + 48)
static const uint64_t SPREAD[256] = {SP64(0), SP64(64), SP64(128), SP64(192)};

/* Write the 52-bit mask m as 52 bytes of 0/1 at dst. */
static inline void write_bits52(uint8_t *dst, uint64_t m) {
    for (int q = 0; q < 6; q++) {
        const uint64_t w = SPREAD[(m >> (8 * q)) & 0xFF];
        memcpy(dst + 8 * q, &w, 8);
    }
    const uint64_t w = SPREAD[(m >> 48) & 0xF];
    memcpy(dst + 48, &w, 4);
}

/* The legal cards of the seat to act in game i into its action mask (rules.h: sp_legal_cards); led
 * is the suit led, or -1 to lead. */
static void play_mask(const sp_env *e, int64_t i, int led) {
    uint8_t *m = e->mask + i * NACT;
    const uint64_t legal = sp_legal_cards(&e->rules.deck, e->hbits[i * 4 + e->cur[i]], led,
                                          e->broken[i]);
    e->lbits[i] = legal;
    write_bits52(m, legal);
    memset(m + NCARDS, 0, NACT - NCARDS);
}

/* The legal bids of the seat to act in game i into its action mask (rules.h: sp_legal_bids; no
 * Blind Nil decision here: every seat has seen its cards). */
static void bid_mask(const sp_env *e, int64_t i) {
    const int64_t p = e->cur[i];
    uint64_t hand = 0;
    if (e->rules.mirror || e->rules.whiz) { /* the bid reads the spades held (rules.deck's) */
        hand = e->hbits[i * 4 + p];
    }
    const uint32_t legal = sp_legal_bids(&e->rules, (int)p, hand, 1, e->bids + i * 4);
    uint8_t *m = e->mask + i * NACT;
    memset(m, 0, NCARDS);
    for (int b = 0; b < NACT - NCARDS; b++) m[NCARDS + b] = (uint8_t)((legal >> b) & 1);
    e->lbits[i] = BIDDING_BIT | legal;
}

/* Refuse a step whose ids do not fit the phase: -1 - (the first such game), or -1 for a bad t;
 * 0 when every id is a bid while bidding (t < 4) or a card in play. */
static int64_t check_ids(const sp_env *e, const int64_t *a, int64_t t) {
    const int64_t lo = t < 4 ? NCARDS : 0, hi = t < 4 ? NCARDS + 13 : NCARDS - 1;
    if (t < 0 || t >= HAND_STEPS) return -1;
    for (int64_t i = 0; i < e->n; i++) {
        if (a[i] < lo || a[i] > hi) return -1 - i;
    }
    return 0;
}

/* Apply action act at hand step t in game i (checked by check_ids). */
static void step_game(const sp_env *e, int64_t i, int64_t act, int64_t t) {
    const int64_t row = e->row;
    {
        int64_t p = e->cur[i];
        e->actions[i * HAND_STEPS + t] = act;
        if (t < 4) { /* bidding */
            e->bids[i * 4 + p] = act - NCARDS;
            p = (p + 1) & 3;
            e->cur[i] = p;
            if (t < 3) bid_mask(e, i);
            if (t == 3) { /* the player left of the dealer leads (rules.first_leader) */
                if (e->rules.two_of_clubs_leads) { /* the holder of the 2C leads it */
                    p = e->owner[i * NCARDS];
                    e->cur[i] = p;
                }
                e->leader[i] = p;
                play_mask(e, i, -1);
                if (e->rules.two_of_clubs_leads) { /* rules.first_lead_mask: the 2C only */
                    uint8_t *m = e->mask + i * NACT;
                    memset(m, 0, NCARDS);
                    m[0] = 1;
                    e->lbits[i] = 1;
                }
            }
            return;
        }
        const int64_t k = t - 4, pos = k & 3;
        const sp_deck *deck = &e->rules.deck;
        const int64_t suit = deck->suit_of[act];
        for (int o = 0; o < 4; o++) /* where the card shows in each observer's trick block */
            e->trick_obs[i * 16 + 4 * pos + o] = o * row + e->o_trick + 52 * ((p - o) & 3) + act;
        e->hands[i * 4 * NCARDS + p * NCARDS + act] = 0;
        e->hbits[i * 4 + p] &= ~(1ULL << act);
        const int led_before = pos == 0 ? -1 : (int)e->led[i];
        if (pos == 0) {
            e->leader[i] = p;
            e->led[i] = suit;
        }
        /* the voids the play shows (a spade led before spades are broken: the leader held only
         * spades, so it is void in clubs, diamonds and hearts; observation version 2) */
        const int shown = sp_voids_revealed(deck, (int)act, led_before, e->broken[i]);
        for (int s = 0; s < 4; s++) {
            if ((shown >> s) & 1) e->voids[i * 16 + p * 4 + s] = 1;
        }
        e->broken[i] = (uint8_t)sp_spades_broken_after(deck, (int)act, led_before, e->broken[i],
                                                       (int)e->rules.forced_spade_lead_breaks);
        e->trick[i * 4 + pos] = act;
        if (pos < 3) {
            e->cur[i] = (p + 1) & 3;
            play_mask(e, i, (int)e->led[i]);
            return;
        }
        /* trick complete */
        const int64_t w = sp_trick_winner(deck, e->trick + i * 4, (int)e->leader[i]);
        e->tricks[i * 4 + w]++;
        e->cur[i] = w;
        e->leader[i] = w;
        if ((k >> 2) < 12) play_mask(e, i, -1);
    }
}

/* Apply actions a[i] at hand step t (0..55) in every game. Bidding steps and card plays, trick
 * completion included; the scoring at the end of the hand (t == 55) is left to the caller.
 * Every id is first checked against the phase (a bid 52..65 while bidding, a card 0..51 in play),
 * even when the caller does not validate legality, so no id can index outside the buffers: a bad
 * one changes nothing and returns -1 - (its game). Otherwise returns 1 when the hand is over
 * (t == 55), else 0. */
int64_t sp_step(const sp_env *e, const int64_t *a, int64_t t) {
    const int64_t bad = check_ids(e, a, t);
    if (bad < 0) return bad;
    const int64_t n = e->n;
    PAR_FOR
    for (int64_t i = 0; i < n; i++) step_game(e, i, a[i], t);
    return t == HAND_STEPS - 1;
}

/* OR the mask v (< 2^52) into the bit string B (12 words) at bit offset off (off + 52 <= 768). */
static inline void put_bits(uint64_t *B, int64_t off, uint64_t v) {
    const int64_t w = off >> 6, b = off & 63;
    B[w] |= v << b;
    if (b) B[w + 1] |= v >> (64 - b);
}

#define PUT1(B, k) ((B)[(k) >> 6] |= 1ULL << ((k) & 63))
#define OBS_WORDS 12 /* 768 bits >= obs_size */

/* The observation of seat o in game i at hand step t (0..55), as observation.encode writes it
 * (the torch backend's uint8 row, to_act marking the seat to act): B (OBS_WORDS words) holds the
 * 0/1 flags, bit k = observation index k; cnt[0..3] the tricks won by relative seat, cnt[4] the
 * tricks completed. The numeric pieces' bits stay 0. */
static void assemble(const sp_env *e, int64_t i, int o, int64_t t, uint64_t *B, uint8_t *cnt) {
    memset(B, 0, OBS_WORDS * sizeof(uint64_t));
    const uint64_t *hb = e->hbits + i * 4, *dl = e->dealt + i * 4;
    PUT1(B, e->o_phase + (t < 4 ? 0 : 2));
    PUT1(B, e->o_looked);
    put_bits(B, e->o_hand, hb[o]);
    for (int r = 0; r < 4; r++) {
        const int s = (o + r) & 3;
        put_bits(B, e->o_played + 52 * r, dl[s] & ~hb[s]);
        const int64_t bid = e->bids[i * 4 + s];
        PUT1(B, e->o_bids + 16 * r + (bid < 0 ? 0 : 1 + bid));
        uint32_t v; /* the seat's 4 void flags (0/1 bytes) as 4 bits, without branches */
        memcpy(&v, e->voids + i * 16 + s * 4, 4);
        v = (v & 1u) | ((v >> 7) & 2u) | ((v >> 14) & 4u) | ((v >> 21) & 8u);
        put_bits(B, e->o_voids + 4 * r, v);
        cnt[r] = (uint8_t)e->tricks[i * 4 + s];
    }
    const int64_t pos = t < 4 ? 0 : (t - 4) & 3;
    for (int64_t q = 0; q < pos; q++) {
        const int64_t s = (e->leader[i] + q) & 3;
        PUT1(B, e->o_trick + 52 * ((s - o) & 3) + e->trick[i * 4 + q]);
    }
    if (pos) PUT1(B, e->o_led + e->led[i]);
    if (e->broken[i]) PUT1(B, e->o_broken);
    PUT1(B, e->o_dealer + ((e->dealer[i] - o) & 3));
    PUT1(B, e->o_to_act + ((e->cur[i] - o) & 3));
    cnt[4] = (uint8_t)(t < 4 ? 0 : (t - 4) >> 2);
}

/* FLT8[b]: the 8 bits of b as 8 floats 0.0f / 1.0f (bit j = float j), to write 8 flags at once. */
#define FB(b, j) ((float)(((b) >> (j)) & 1))
#define FL1(b) {FB(b, 0), FB(b, 1), FB(b, 2), FB(b, 3), FB(b, 4), FB(b, 5), FB(b, 6), FB(b, 7)}
#define FL4(b) FL1(b), FL1((b) + 1), FL1((b) + 2), FL1((b) + 3)
#define FL16(b) FL4(b), FL4((b) + 4), FL4((b) + 8), FL4((b) + 12)
#define FL64(b) FL16(b), FL16((b) + 16), FL16((b) + 32), FL16((b) + 48)
static const float FLT8[256][8] = {FL64(0), FL64(64), FL64(128), FL64(192)};

/* Row i of sp_render's output. */
static void render_game(const sp_env *e, int64_t i, void *out, int64_t *seat, int64_t t) {
    const int64_t m = e->obs_size, nb = (m + 7) >> 3;
    const int64_t s = e->cur[i];
    uint64_t B[OBS_WORDS];
    uint8_t cnt[5];
    seat[i] = s;
    assemble(e, i, (int)s, t, B, cnt);
    const float *sd = e->side + (i * 4 + s) * 5;
    if (e->compact) {
        uint8_t *dst = (uint8_t *)out + i * e->c_size;
        memcpy(dst, B, (size_t)nb); /* little-endian words: bit k at byte k / 8 */
        memset(dst + nb, 0, (size_t)(e->c_counts - nb));
        memcpy(dst + e->c_counts, cnt, 5);
        memset(dst + e->c_counts + 5, 0, (size_t)(e->c_side - e->c_counts - 5));
        memcpy(dst + e->c_side, sd, 5 * sizeof(float));
        memset(dst + e->c_side + 20, 0, (size_t)(e->c_size - e->c_side - 20));
        return;
    }
    float *dst = (float *)out + i * m;
    const uint8_t *bytes = (const uint8_t *)B;
    for (int64_t q = 0; q + 1 < nb; q++) memcpy(dst + 8 * q, FLT8[bytes[q]], 8 * sizeof(float));
    memcpy(dst + 8 * (nb - 1), FLT8[bytes[nb - 1]], (size_t)(m - 8 * (nb - 1)) * sizeof(float));
    for (int q = 0; q < 4; q++) dst[e->o_won + q] = (float)cnt[q] / 13.0f;
    dst[e->o_tn] = (float)cnt[4] / 13.0f;
    for (int q = 0; q < 5; q++) dst[e->o_side + q] = sd[q];
    for (int64_t q = 0; q < e->n_rules; q++) dst[e->o_rules + q] = e->rules_feat[q];
}

/* Observation of the seat to act in every game at hand step t: row i of out, float32
 * out[i, :obs_size] (tricks_won and trick_number counts / 13, the side floats, the rules piece),
 * or with e->compact the compact row uint8 out[i, :c_size] (spades_env.compact: the flags as
 * bits, the counts and side floats in their bytes); seat[i] = that seat. Assembled from the game
 * state (assemble): no observation row is read or written. */
void sp_render(const sp_env *e, void *out, int64_t *seat, int64_t t) {
    const int64_t n = e->n;
    PAR_FOR
    for (int64_t i = 0; i < n; i++) render_game(e, i, out, seat, t);
}

/* Write every observer's uint8 observation row (obs4) of every game at hand step t from the
 * game state: the rows the torch backend keeps up to date step by step, for state_dict,
 * observe and a change of backend. */
void sp_sync_rows(const sp_env *e, int64_t t) {
    const int64_t n = e->n, row = e->row, nb = (e->obs_size + 7) >> 3;
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
        for (int o = 0; o < 4; o++) {
            uint64_t B[OBS_WORDS];
            uint8_t cnt[5];
            assemble(e, i, o, t, B, cnt);
            uint8_t *r = e->obs4 + (i * 4 + o) * row;
            const uint8_t *bytes = (const uint8_t *)B;
            memset(r, 0, (size_t)row);
            for (int64_t q = 0; q < nb && 8 * q + 8 <= row; q++) {
                const uint64_t w = SPREAD[bytes[q]];
                memcpy(r + 8 * q, &w, 8);
            }
            for (int q = 0; q < 4; q++) r[e->o_won + q] = cnt[q];
            r[e->o_tn] = cnt[4];
        }
    }
}

/* Deal a new hand in every game and reset its state (the torch path's
 * SpadesVectorEnv._start_hands; the observation rows follow from it: sp_sync_rows). The deal: card perm[k] goes to seat (first + k) % 4, where
 * perm is the stable ascending argsort of u[i, :52] (uniform floats drawn by the caller from the
 * env's torch generator) and first is the seat left of the dealer, i.e. card c goes to seat
 * (first + its rank in that order) % 4; or holder[i, c] when given. */
void sp_start_hands(const sp_env *e, const float *u, const int64_t *holder) {
    const int64_t n = e->n;
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
        const int64_t dealer = e->dealer[i], first = (dealer + 1) & 3;
        int64_t *own = e->owner + i * NCARDS;
        if (holder) {
            for (int c = 0; c < NCARDS; c++) own[c] = holder[i * NCARDS + c];
        } else {
            const float *ui = u + i * NCARDS;
            /* card c's place in the stable ascending order of u: the number of cards j with
             * u[j] < u[c], or u[j] == u[c] and j < c. First without ties (one loop of fixed
             * length per card, which the compiler vectorizes): the places are 0..51 exactly when
             * no two floats are equal, i.e. when they sum to 1326; else (about one game in
             * 12,000) again with the ties broken by index. */
            int rank[NCARDS], sum = 0;
            for (int c = 0; c < NCARDS; c++) {
                const float uc = ui[c];
                int r = 0;
                for (int j = 0; j < NCARDS; j++) r += ui[j] < uc;
                rank[c] = r;
                sum += r;
            }
            if (sum != NCARDS * (NCARDS - 1) / 2) {
                for (int c = 0; c < NCARDS; c++) {
                    const float uc = ui[c];
                    int r = 0;
                    for (int j = 0; j < c; j++) r += ui[j] <= uc;
                    for (int j = c + 1; j < NCARDS; j++) r += ui[j] < uc;
                    rank[c] = r;
                }
            }
            for (int c = 0; c < NCARDS; c++) own[c] = (first + rank[c]) & 3;
        }
        uint8_t *h = e->hands + i * 4 * NCARDS;
        uint64_t *hb = e->hbits + i * 4;
        memset(h, 0, 4 * NCARDS);
        hb[0] = hb[1] = hb[2] = hb[3] = 0;
        for (int c = 0; c < NCARDS; c++) {
            h[own[c] * NCARDS + c] = 1;
            hb[own[c]] |= 1ULL << c;
        }
        for (int q = 0; q < 4; q++) e->dealt[i * 4 + q] = hb[q];
        memset(e->voids + i * 16, 0, 16);
        for (int q = 0; q < 4; q++) {
            e->bids[i * 4 + q] = -1;
            e->tricks[i * 4 + q] = 0;
            e->trick[i * 4 + q] = 0;
        }
        memset(e->trick_obs + i * 16, 0, 16 * sizeof(int64_t));
        e->broken[i] = (uint8_t)(e->rules.spades_lead_any_time != 0); /* broken from the start */
        e->cur[i] = first;
        e->leader[i] = first;
        e->led[i] = 0;
        memset(e->actions + i * HAND_STEPS, 0, HAND_STEPS * sizeof(int64_t));
        for (int o = 0; o < 4; o++) { /* the side floats by observer (the rows: sp_sync_rows) */
            const int mine = o & 1, theirs = 1 - mine;
            float *sd = e->side + (i * 4 + o) * 5;
            sd[0] = (float)((double)e->scores[i * 2 + mine] / (double)e->rules.target_score);
            sd[1] = (float)((double)e->scores[i * 2 + theirs] / (double)e->rules.target_score);
            sd[2] = (float)((double)e->bags[i * 2 + mine] / (double)e->rules.bag_limit);
            sd[3] = (float)((double)e->bags[i * 2 + theirs] / (double)e->rules.bag_limit);
            sd[4] = e->target_feature;
        }
        bid_mask(e, i);
    }
}

/* Score the finished hand in every game (docs/rules.md, Scoring a hand; End of the game), as the torch
 * path's SpadesVectorEnv._end_hands: rec[i] (27 int64) is the hand's score record, appended to
 * hist[i, hand_count[i]] (hist: (N, cap, 27) int64, the caller guarantees the room); scores, bags
 * and hand_count are updated in place; hand_points (N, 2), winner (N,: 0, 1 or -1),
 * terminated / truncated (N,) bool and rewards (N, 4) float32 by absolute seat are written.
 * Returns the number of games whose episode ended (terminated or truncated). */
int64_t sp_end_hands(const sp_env *e, int64_t *rec, int64_t *hist, int64_t cap,
                     int64_t *hand_points, int64_t *winner, uint8_t *terminated,
                     uint8_t *truncated, float *rewards) {
    const int64_t n = e->n;
    int64_t ended = 0;
    _Pragma("omp parallel for schedule(static) num_threads(e->threads) if(e->threads > 1) reduction(+:ended)")
    for (int64_t i = 0; i < n; i++) {
        const int64_t *b = e->bids + i * 4, *k = e->tricks + i * 4;
        int64_t *r = rec + i * 27;
        r[0] = e->dealer[i];
        for (int q = 0; q < 4; q++) { r[1 + q] = b[q]; r[5 + q] = k[q]; }
        int64_t hp[2], sc[2];
        sp_team_score both[2];
        for (int t = 0; t < 2; t++) { /* rules.h: sp_score_team (no Blind Nil here) */
            const sp_team_score ts = sp_score_team(b, k, NULL, t, e->scores[i * 2 + t],
                                                   e->bags[i * 2 + t], &e->rules);
            both[t] = ts;
            hp[t] = ts.hand_points;
            sc[t] = ts.total;
            int64_t *f = r + 9 + 9 * t;
            f[0] = ts.contract; f[1] = ts.contract_points;
            f[2] = ts.made; f[3] = ts.bags; f[4] = ts.nil_points;
            f[5] = ts.bag_penalty; f[6] = hp[t]; f[7] = sc[t];
            f[8] = ts.bags_after;
            e->bags[i * 2 + t] = ts.bags_after;
            e->scores[i * 2 + t] = sc[t];
            hand_points[i * 2 + t] = hp[t];
        }
        const int64_t hc = e->hand_count[i];
        memcpy(hist + (i * cap + hc) * 27, r, 27 * sizeof(int64_t));
        e->hand_count[i] = hc + 1;
        /* end of the game (rules.h: sp_game_outcome) */
        const int64_t w = sp_game_outcome(sc, &e->rules, sp_moon_team(&e->rules, both));
        winner[i] = w;
        const int term = w >= 0 || (e->hands_per_episode && hc + 1 >= e->hands_per_episode);
        const int trunc = !term && e->max_hands && hc + 1 >= e->max_hands;
        terminated[i] = (uint8_t)term;
        truncated[i] = (uint8_t)trunc;
        ended += term || trunc;
        double d;
        if (!e->reward_game) {
            d = (double)(hp[0] - hp[1]) / 100.0;
        } else if (w >= 0) {
            d = 1.0 - 2.0 * (double)w;
        } else if (term) {
            d = (double)((sc[0] > sc[1]) - (sc[0] < sc[1]));
        } else {
            d = 0.0;
        }
        float *rw = rewards + i * 4;
        rw[0] = (float)d; rw[1] = (float)(-d); rw[2] = (float)d; rw[3] = (float)(-d);
    }
    return ended;
}

/* Index of the first game whose action a[i] is not in its action mask (or out of 0..67), or -1
 * when every action is legal. */
int64_t sp_check(const sp_env *e, const int64_t *a) {
    for (int64_t i = 0; i < e->n; i++) {
        if (a[i] < 0 || a[i] >= NACT || !e->mask[i * NACT + a[i]]) return i;
    }
    return -1;
}

/* SELECT8[b][r]: the position of the r-th (0-based) set bit of the byte b (8 when b has fewer). */
static uint8_t SELECT8[256][8];
static volatile int select8_ready = 0;

static void init_select8(void) {
    for (int b = 0; b < 256; b++) {
        int r = 0;
        for (int j = 0; j < 8; j++) SELECT8[b][j] = 8;
        for (int j = 0; j < 8; j++)
            if (b >> j & 1) SELECT8[b][r++] = (uint8_t)j;
    }
    select8_ready = 1;
}

/* Position of the k-th (0-based) set bit of x, 0 <= k < popcount(x), without a branch that
 * depends on the data (a loop clearing k bits mispredicts its exit in every game): the bytes'
 * running bit counts locate the byte (broadword select, Vigna 2008, "Broadword implementation of
 * rank/select queries"), a table the bit within it. */
static inline int select64(uint64_t x, int k) {
    const uint64_t L8 = 0x0101010101010101ULL, H8 = 0x8080808080808080ULL;
    uint64_t c = x - ((x >> 1) & 0x5555555555555555ULL);
    c = (c & 0x3333333333333333ULL) + ((c >> 2) & 0x3333333333333333ULL);
    c = (c + (c >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    const uint64_t cum = c * L8;                         /* byte j: set bits in bytes 0..j */
    const uint64_t le = ((((uint64_t)k * L8) | H8) - cum) & H8;  /* bytes with cum <= k */
    const int b = (int)(((le >> 7) * L8) >> 56);         /* the byte holding the k-th bit */
    const int before = (int)(((cum << 8) >> (8 * b)) & 0xFF);
    return 8 * b + SELECT8[(x >> (8 * b)) & 0xFF][k - before];
}

/* A uniformly random legal action per game: the k-th legal action id of game i (in id order),
 * with k = (int)(u[i] * count) in float32 (u uniform in [0, 1) from the caller's generator), from
 * the legal bits the masks were written from (lbits): a popcount and a select. */
static inline int64_t sample_game(const sp_env *e, int64_t i, float ui) {
    const uint64_t w = e->lbits[i];
    const uint64_t m = w & ~BIDDING_BIT;
    const int cnt = popcount64(m);
    if (!cnt) return -1;
    int k = (int)(ui * (float)cnt);
    if (k >= cnt) k = cnt - 1;  /* u just under 1 times cnt rounded up to cnt */
    return select64(m, k) + ((w & BIDDING_BIT) ? NCARDS : 0);
}

void sp_sample(const sp_env *e, const float *u, int64_t *out) {
    if (!select8_ready) init_select8();  /* before the threads: written once, then read only */
    if (e->n < 8192) { /* a few ns a game: a second thread's start and barrier cost more, and on
                        * a loaded machine the barrier waits for a descheduled thread */
        for (int64_t i = 0; i < e->n; i++) out[i] = sample_game(e, i, u[i]);
        return;
    }
    GAME_LOOP(e->n, out[i] = sample_game(e, i, u[i]));
}

/* sp_step then sp_render in one call, for a step that does not end the hand (t < 55); when rew is
 * not NULL, also re-zeroes the caller's reused all-zero outputs: rewards (N, 4) float32 and the
 * flags done, terminated, truncated (N,) bool. With check, every action must be in its game's
 * mask (sp_check) first: nothing changes otherwise and -1 - (the first bad game) is returned. */
int64_t sp_step_render(const sp_env *e, const int64_t *a, int64_t t, void *out, int64_t *seat,
                       float *rew, uint8_t *done, uint8_t *term, uint8_t *trunc, int64_t check) {
    if (check) {
        const int64_t bad = sp_check(e, a);
        if (bad >= 0) return -1 - bad;
    }
    const int64_t r = check_ids(e, a, t);
    if (r < 0) return r;
    const int64_t n = e->n;
    /* one pass: each game's state is still in cache when it is rendered */
    GAME_LOOP(n, step_game(e, i, a[i], t); render_game(e, i, out, seat, t + 1));
    if (rew) {
        memset(rew, 0, (size_t)e->n * 4 * sizeof(float));
        memset(done, 0, (size_t)e->n);
        memset(term, 0, (size_t)e->n);
        memset(trunc, 0, (size_t)e->n);
    }
    return 0;
}

/* sizeof(sp_env): native.py checks it against the ctypes mirror it reads from this file. */
int64_t sp_env_size(void) {
    return (int64_t)sizeof(sp_env);
}

/* 1 when built with OpenMP (the threads field is used), else 0. */
int sp_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}
