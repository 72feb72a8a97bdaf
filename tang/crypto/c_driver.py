"""The hand-written C around ML-KEM's printed arithmetic: Keccak (SHA3-256, SHA3-512,
SHAKE128, SHAKE256), SampleNTT's rejection loop over the public seed ρ, and the KEM's
algorithms calling the four printed graph functions. ``tang.crypto.emit.c_source`` fills
in the parameter set and the printed functions.

Secret data never steers a branch or an address here: Keccak's control flow depends only
on lengths, and the one data-dependent loop (SampleNTT) reads ρ, which the key makes
public; ``TANG_DECLASSIFY`` marks it (and the public key and ciphertext) as such for
checkers such as valgrind (``tang.crypto.ctgrind``); it does nothing otherwise.
"""


def _keccak_round(a: str, e: str, rc: str) -> list[str]:
    """One round of Keccak-f[1600] from lanes ``a``0…24 into lanes ``e``0…24 (lane x + 5y),
    unrolled: θ's column parities and their mix, then plane by plane ρ and π into five
    temporaries and χ out of them, then ι with constant ``rc``. Each input lane is read
    once after θ's parities, so few values are live at a time."""
    lines = [f"c{x} = {' ^ '.join(f'{a}{x + 5 * y}' for y in range(5))};" for x in range(5)]
    lines += [f"d{x} = c{(x + 4) % 5} ^ TANG_ROTL(c{(x + 1) % 5}, 1);" for x in range(5)]
    for y_out in range(5):  # b at (X, Y) comes from a at (x, y) = ((3(Y − 3X)) mod 5, X)
        for x_out in range(5):
            x, y = (3 * (y_out - 3 * x_out)) % 5, x_out
            lane, r = f"({a}{x + 5 * y} ^ d{x})", _RHO[x][y]
            lines.append(f"b{x_out} = " + (f"TANG_ROTL({lane}, {r});" if r else f"{lane};"))
        for x in range(5):
            lines.append(f"{e}{x + 5 * y_out} = b{x} ^ (~b{(x + 1) % 5} & b{(x + 2) % 5});")
    lines.append(f"{e}0 ^= {rc};")
    return lines


# ρ's rotation of lane (x, y)
_RHO = (
    (0, 36, 3, 41, 18),
    (1, 44, 10, 45, 2),
    (62, 6, 43, 15, 61),
    (28, 55, 25, 21, 56),
    (27, 20, 39, 8, 14),
)

KECCAK = r"""
/* ---- Keccak-f[1600] and the sponges of FIPS 202 ---- */
static const uint64_t tang_rc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
    0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
    0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
    0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
    0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
    0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};
#define TANG_ROTL(x, n) (((x) << (n)) | ((x) >> (64 - (n))))

static void tang_keccakf(uint64_t s[25]) {
    uint64_t LANES;
    uint64_t c0, c1, c2, c3, c4, d0, d1, d2, d3, d4, b0, b1, b2, b3, b4;
LOAD
    for (int round = 0; round < 24; round += 2) { /* two rounds: a into e, e back into a */
ROUND
    }
STORE
}

typedef struct { uint64_t s[25]; unsigned pos, rate; } tang_sponge;

static void tang_sponge_init(tang_sponge *k, unsigned rate) {
    memset(k, 0, sizeof *k);
    k->rate = rate;
}

static void tang_absorb(tang_sponge *k, const uint8_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (k->pos % 8 == 0 && i + 8 <= n) { /* a whole lane at once, little-endian */
            uint64_t lane = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(&lane, in + i, 8);
#else
            for (int b = 0; b < 8; b++) lane |= (uint64_t)in[i + b] << (8 * b);
#endif
            k->s[k->pos / 8] ^= lane;
            i += 7;
            k->pos += 8;
        } else {
            k->s[k->pos / 8] ^= (uint64_t)in[i] << (8 * (k->pos % 8));
            k->pos++;
        }
        if (k->pos == k->rate) {
            tang_keccakf(k->s);
            k->pos = 0;
        }
    }
}

static void tang_finish(tang_sponge *k, uint8_t domain) {
    k->s[k->pos / 8] ^= (uint64_t)domain << (8 * (k->pos % 8));
    k->s[(k->rate - 1) / 8] ^= (uint64_t)0x80 << (8 * ((k->rate - 1) % 8));
    tang_keccakf(k->s);
    k->pos = 0;
}

static void tang_squeeze(tang_sponge *k, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (k->pos == k->rate) {
            tang_keccakf(k->s);
            k->pos = 0;
        }
        if (k->pos % 8 == 0 && i + 8 <= n) { /* whole lanes at once */
            size_t lanes = (k->rate - k->pos) / 8, want = (n - i) / 8;
            if (want < lanes) lanes = want;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            memcpy(out + i, &k->s[k->pos / 8], 8 * lanes);
#else
            for (size_t l = 0; l < lanes; l++)
                for (int b = 0; b < 8; b++)
                    out[i + 8 * l + b] = (uint8_t)(k->s[k->pos / 8 + l] >> (8 * b));
#endif
            i += 8 * lanes - 1;
            k->pos += 8 * (unsigned)lanes;
        } else {
            out[i] = (uint8_t)(k->s[k->pos / 8] >> (8 * (k->pos % 8)));
            k->pos++;
        }
    }
}

/* one call: rate in bytes, domain 0x06 (SHA3) or 0x1f (SHAKE), two input pieces */
static void tang_hash(unsigned rate, uint8_t domain, const uint8_t *a, size_t na,
                      const uint8_t *b, size_t nb, uint8_t *out, size_t nout) {
    tang_sponge k;
    tang_sponge_init(&k, rate);
    tang_absorb(&k, a, na);
    tang_absorb(&k, b, nb);
    tang_finish(&k, domain);
    tang_squeeze(&k, out, nout);
}
""".replace("LANES", ", ".join([f"a{i}" for i in range(25)] + [f"e{i}" for i in range(25)]))
KECCAK = KECCAK.replace("LOAD", "\n".join(f"    a{i} = s[{i}];" for i in range(25)))
KECCAK = KECCAK.replace("STORE", "\n".join(f"    s[{i}] = a{i};" for i in range(25)))
_ROUNDS = _keccak_round("a", "e", "tang_rc[round]") + _keccak_round("e", "a", "tang_rc[round + 1]")
KECCAK = KECCAK.replace("ROUND", "\n".join("        " + line for line in _ROUNDS))

KEM = r"""
/* ---- ML-KEM (FIPS 203) around the printed arithmetic ---- */
#define EK_SIZE (384 * K + 32)
#define DK_SIZE (768 * K + 96)
#define CT_SIZE (32 * (DU * K + DV))
#define C1_SIZE (32 * DU * K)

static void H(uint8_t out[32], const uint8_t *a, size_t n) {
    tang_hash(136, 0x06, a, n, 0, 0, out, 32);
}
static void G(uint8_t out[64], const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
    tang_hash(72, 0x06, a, na, b, nb, out, 64);
}
static void J(uint8_t out[32], const uint8_t z[32], const uint8_t *c, size_t n) {
    tang_hash(136, 0x1f, z, 32, c, n, out, 32);
}
/* PRF_eta(s, b) as whole numbers: 64·eta bytes of SHAKE256(s ‖ b) */
static void prf(int64_t *out, int eta, const uint8_t s[32], uint8_t b) {
    uint8_t bytes[64 * 3];
    tang_hash(136, 0x1f, s, 32, &b, 1, bytes, 64 * (size_t)eta);
    for (int i = 0; i < 64 * eta; i++) out[i] = bytes[i];
}

/* SampleNTT (Algorithm 7): rejection sampling from SHAKE128(rho ‖ j ‖ i), a block of 168
   bytes (56 triples) at a time; rho is public */
static void sample_ntt(int64_t out[256], const uint8_t rho[32], uint8_t j, uint8_t i) {
    tang_sponge k;
    uint8_t ij[2] = {j, i}, block[168];
    tang_sponge_init(&k, 168);
    tang_absorb(&k, rho, 32);
    tang_absorb(&k, ij, 2);
    tang_finish(&k, 0x1f);
    for (int n = 0; n < 256;) {
        tang_squeeze(&k, block, 168);
        for (int b = 0; b < 168 && n < 256; b += 3) {
            int d1 = block[b] + 256 * (block[b + 1] & 15);
            int d2 = (block[b + 1] >> 4) + 16 * block[b + 2];
            if (d1 < 3329) out[n++] = d1;
            if (d2 < 3329 && n < 256) out[n++] = d2;
        }
    }
}

static void matrix(int64_t *a, const uint8_t rho[32]) {
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) sample_ntt(a + 256 * (K * i + j), rho, (uint8_t)j, (uint8_t)i);
}

static void widen(int64_t *out, const uint8_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = in[i];
}
static void narrow(uint8_t *out, const int64_t *in, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)in[i];
}

/* the inputs of K-PKE.Encrypt's arithmetic from ek, m and r */
typedef struct {
    int64_t t[384 * K], a[256 * K * K], m[32];
    int64_t y[64 * ETA1 * K], e1[64 * ETA2 * K], e2[64 * ETA2];
} encrypt_inputs;

static void encrypt_prepare(encrypt_inputs *in, const uint8_t *ek, const uint8_t m[32],
                            const uint8_t r[32]) {
    widen(in->t, ek, 384 * K);
    matrix(in->a, ek + 384 * K);
    widen(in->m, m, 32);
    for (int n = 0; n < K; n++) prf(in->y + 64 * ETA1 * n, ETA1, r, (uint8_t)n);
    for (int n = 0; n < K; n++) prf(in->e1 + 64 * ETA2 * n, ETA2, r, (uint8_t)(K + n));
    prf(in->e2, ETA2, r, (uint8_t)(2 * K));
}

int PREFIX_keygen_internal(const uint8_t d[32], const uint8_t z[32], uint8_t *ek, uint8_t *dk) {
    uint8_t g[64], k = K;
    G(g, d, 32, &k, 1);
    TANG_DECLASSIFY(g, 32); /* rho: part of the public key */
    int64_t a[256 * K * K], s[64 * ETA1 * K], e[64 * ETA1 * K], t[384 * K], sk[384 * K];
    matrix(a, g);
    for (int n = 0; n < K; n++) prf(s + 64 * ETA1 * n, ETA1, g + 32, (uint8_t)n);
    for (int n = 0; n < K; n++) prf(e + 64 * ETA1 * n, ETA1, g + 32, (uint8_t)(K + n));
    KEYGEN(a, s, e, t, sk);
    narrow(ek, t, 384 * K);
    memcpy(ek + 384 * K, g, 32);
    TANG_DECLASSIFY(ek, EK_SIZE);
    narrow(dk, sk, 384 * K);
    memcpy(dk + 384 * K, ek, EK_SIZE);
    H(dk + 768 * K + 32, ek, EK_SIZE);
    memcpy(dk + 768 * K + 64, z, 32);
    return 0;
}

/* FIPS 203 §7.2: every 12-bit value of the public key below q (public data: may branch) */
int PREFIX_check_ek(const uint8_t *ek) {
    for (int i = 0; i < 384 * K; i += 3) {
        int d1 = ek[i] | (ek[i + 1] & 15) << 8, d2 = ek[i + 1] >> 4 | ek[i + 2] << 4;
        if (d1 >= 3329 || d2 >= 3329) return -1;
    }
    return 0;
}

int PREFIX_encaps_internal(const uint8_t *ek, const uint8_t m[32], uint8_t key[32], uint8_t *c) {
    if (PREFIX_check_ek(ek)) return -1;
    uint8_t h[32], g[64];
    encrypt_inputs in;
    int64_t c1[C1_SIZE], c2[CT_SIZE - C1_SIZE];
    H(h, ek, EK_SIZE);
    G(g, m, 32, h, 32);
    encrypt_prepare(&in, ek, m, g + 32);
    ENCRYPT(in.t, in.a, in.m, in.y, in.e1, in.e2, c1, c2);
    narrow(c, c1, C1_SIZE);
    narrow(c + C1_SIZE, c2, CT_SIZE - C1_SIZE);
    TANG_DECLASSIFY(c, CT_SIZE);
    memcpy(key, g, 32);
    return 0;
}

int PREFIX_decaps(const uint8_t *dk, const uint8_t *c, uint8_t key[32]) {
    const uint8_t *ek = dk + 384 * K, *h = dk + 768 * K + 32, *z = dk + 768 * K + 64;
    uint8_t check[32], g[64], rejected[32], m[32];
    H(check, ek, EK_SIZE); /* FIPS 203 §7.3: the key's own hash (public data) */
    if (memcmp(check, h, 32) != 0) return -1;
    int64_t s[384 * K], c1[C1_SIZE], c2[CT_SIZE - C1_SIZE], mw[32];
    int64_t k1[32], kr[32], out[32];
    encrypt_inputs in;
    widen(s, dk, 384 * K);
    widen(c1, c, C1_SIZE);
    widen(c2, c + C1_SIZE, CT_SIZE - C1_SIZE);
    DECRYPT(s, c1, c2, mw);
    narrow(m, mw, 32);
    G(g, m, 32, h, 32);
    J(rejected, z, c, CT_SIZE);
    encrypt_prepare(&in, ek, m, g + 32);
    widen(k1, g, 32);
    widen(kr, rejected, 32);
    REENCRYPT(in.t, in.a, in.m, in.y, in.e1, in.e2, c1, c2, k1, kr, out);
    narrow(key, out, 32);
    return 0;
}
"""
