/* External32: MPI_Pack_external and friends. Every predefined type's
 * external32 size against MPI 4.0's table 13.2, byte-exact big-endian
 * encodings computed by hand, round trips of predefined and derived
 * types (struct with padding, vector, resized), the _c forms, and the
 * errors (another datarep, a buffer too small). */
#include "check.h"
#include <stddef.h>
#include <stdbool.h>
#include <wchar.h>
#include <complex.h>

static const char *E32 = "external32";

/* pack packs count elements of t and checks the size and position. */
static MPI_Aint pack(const void *in, int count, MPI_Datatype t, unsigned char *out, MPI_Aint outsize)
{
    MPI_Aint pos = 0, size = -1;
    CHECK_RC(MPI_Pack_external_size(E32, count, t, &size));
    CHECK_RC(MPI_Pack_external(E32, in, count, t, out, outsize, &pos));
    CHECK(pos == size);
    return pos;
}

static void unpack(const unsigned char *in, MPI_Aint insize, void *out, int count, MPI_Datatype t)
{
    MPI_Aint pos = 0;
    CHECK_RC(MPI_Unpack_external(E32, in, insize, &pos, out, count, t));
    CHECK(pos == insize);
}

/* expect packs one value and compares its bytes with want. */
#define EXPECT(t, val, ...)                                                  \
    do {                                                                     \
        unsigned char want_[] = {__VA_ARGS__}, got_[64];                     \
        __typeof__(val) v_ = (val), back_;                                   \
        memset(&back_, 0, sizeof back_);                                     \
        MPI_Aint n_ = pack(&v_, 1, t, got_, sizeof got_);                    \
        CHECK(n_ == (MPI_Aint)sizeof want_);                                 \
        if (memcmp(got_, want_, sizeof want_) != 0) {                        \
            printf("bytes of %s:", #t);                                      \
            for (int i_ = 0; i_ < n_; i_++) printf(" %02x", got_[i_]);       \
            printf("\n");                                                    \
        }                                                                    \
        CHECK(memcmp(got_, want_, sizeof want_) == 0);                       \
        unpack(got_, n_, &back_, 1, t);                                      \
        /* Compared packed again: long double's padding is not data. */      \
        CHECK(pack(&back_, 1, t, got_, sizeof got_) == n_);                  \
        CHECK(memcmp(got_, want_, sizeof want_) == 0);                       \
    } while (0)

struct size_case {
    MPI_Datatype t;
    const char *name;
    int size;   /* external32 */
    int part;   /* the size of one big-endian component: 0 for special cases */
};

#define SC(t, s, p) {t, #t, s, p}
static const struct size_case sizes[] = {
    SC(MPI_PACKED, 1, 1), SC(MPI_BYTE, 1, 1), SC(MPI_CHAR, 1, 1), SC(MPI_UNSIGNED_CHAR, 1, 1),
    SC(MPI_SIGNED_CHAR, 1, 1), SC(MPI_WCHAR, 2, 0), SC(MPI_SHORT, 2, 2), SC(MPI_UNSIGNED_SHORT, 2, 2),
    SC(MPI_INT, 4, 4), SC(MPI_UNSIGNED, 4, 4), SC(MPI_LONG, 4, 0), SC(MPI_UNSIGNED_LONG, 4, 0),
    SC(MPI_LONG_LONG, 8, 8), SC(MPI_UNSIGNED_LONG_LONG, 8, 8), SC(MPI_FLOAT, 4, 4), SC(MPI_DOUBLE, 8, 8),
    SC(MPI_LONG_DOUBLE, 16, 0), SC(MPI_C_BOOL, 1, 1), SC(MPI_INT8_T, 1, 1), SC(MPI_INT16_T, 2, 2),
    SC(MPI_INT32_T, 4, 4), SC(MPI_INT64_T, 8, 8), SC(MPI_UINT8_T, 1, 1), SC(MPI_UINT16_T, 2, 2),
    SC(MPI_UINT32_T, 4, 4), SC(MPI_UINT64_T, 8, 8), SC(MPI_AINT, 8, 8), SC(MPI_COUNT, 8, 8),
    SC(MPI_OFFSET, 8, 8), SC(MPI_C_FLOAT_COMPLEX, 8, 4), SC(MPI_C_DOUBLE_COMPLEX, 16, 8),
    SC(MPI_C_LONG_DOUBLE_COMPLEX, 32, 0), SC(MPI_CHARACTER, 1, 1), SC(MPI_LOGICAL, 4, 4),
    SC(MPI_INTEGER, 4, 4), SC(MPI_REAL, 4, 4), SC(MPI_DOUBLE_PRECISION, 8, 8), SC(MPI_COMPLEX, 8, 4),
    SC(MPI_DOUBLE_COMPLEX, 16, 8), SC(MPI_INTEGER1, 1, 1), SC(MPI_INTEGER2, 2, 2), SC(MPI_INTEGER4, 4, 4),
    SC(MPI_INTEGER8, 8, 8), SC(MPI_INTEGER16, 16, 16), SC(MPI_REAL2, 2, 2), SC(MPI_REAL4, 4, 4),
    SC(MPI_REAL8, 8, 8), SC(MPI_REAL16, 16, 16), SC(MPI_COMPLEX4, 4, 2), SC(MPI_COMPLEX8, 8, 4),
    SC(MPI_COMPLEX16, 16, 8), SC(MPI_COMPLEX32, 32, 16), SC(MPI_LOGICAL1, 1, 1), SC(MPI_LOGICAL2, 2, 2),
    SC(MPI_LOGICAL4, 4, 4), SC(MPI_LOGICAL8, 8, 8), SC(MPI_LOGICAL16, 16, 16), SC(MPI_CXX_BOOL, 1, 1),
    SC(MPI_CXX_FLOAT_COMPLEX, 8, 4), SC(MPI_CXX_DOUBLE_COMPLEX, 16, 8), SC(MPI_CXX_LONG_DOUBLE_COMPLEX, 32, 0),
    /* pair types: the members one after the other */
    SC(MPI_FLOAT_INT, 8, 0), SC(MPI_DOUBLE_INT, 12, 0), SC(MPI_LONG_INT, 8, 0), SC(MPI_2INT, 8, 4),
    SC(MPI_SHORT_INT, 6, 0), SC(MPI_LONG_DOUBLE_INT, 20, 0), SC(MPI_2REAL, 8, 4),
    SC(MPI_2DOUBLE_PRECISION, 16, 8), SC(MPI_2INTEGER, 8, 4),
};

static void sizes_and_swaps(void)
{
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const struct size_case *c = &sizes[i];
        MPI_Aint s = -1;
        MPI_Count sc = -1;
        CHECK_RC(MPI_Pack_external_size(E32, 3, c->t, &s));
        CHECK_RC(MPI_Pack_external_size_c(E32, 3, c->t, &sc));
        if (s != 3 * c->size || sc != 3 * c->size)
            printf("%s: external32 size %ld, want %d\n", c->name, (long)s / 3, c->size);
        CHECK(s == 3 * c->size && sc == 3 * c->size);
        if (c->part == 0 || c->t == MPI_C_BOOL || c->t == MPI_CXX_BOOL)
            continue;
        /* A plain type: each component is the native bytes reversed. */
        int nsize;
        MPI_Type_size(c->t, &nsize);
        CHECK(nsize == c->size);
        unsigned char in[3 * 32], out[3 * 32], back[3 * 32], want[3 * 32];
        for (int k = 0; k < 3 * nsize; k++)
            in[k] = (unsigned char)(k * 7 + 1);
        for (int k = 0; k < 3 * nsize; k += c->part)
            for (int j = 0; j < c->part; j++)
                want[k + j] = in[k + c->part - 1 - j];
        CHECK(pack(in, 3, c->t, out, sizeof out) == 3 * nsize);
        if (memcmp(out, want, 3 * nsize) != 0)
            printf("%s: wrong bytes\n", c->name);
        CHECK(memcmp(out, want, 3 * nsize) == 0);
        memset(back, 0, sizeof back);
        unpack(out, 3 * nsize, back, 3, c->t);
        CHECK(memcmp(back, in, 3 * nsize) == 0);
    }
}

static void exact(void)
{
    EXPECT(MPI_INT, (int)0x01020304, 0x01, 0x02, 0x03, 0x04);
    EXPECT(MPI_INT, -2, 0xff, 0xff, 0xff, 0xfe);
    EXPECT(MPI_SHORT, (short)-3, 0xff, 0xfd);
    EXPECT(MPI_UNSIGNED_SHORT, (unsigned short)0xbeef, 0xbe, 0xef);
    /* C long is 4 bytes in external32 (MPI's table): a value beyond
     * 32 bits keeps its low ones. */
    EXPECT(MPI_LONG, 0x05060708L, 5, 6, 7, 8);
    EXPECT(MPI_LONG, -1L, 0xff, 0xff, 0xff, 0xff);
    EXPECT(MPI_LONG, -0x7fffffffL, 0x80, 0, 0, 1);
    EXPECT(MPI_UNSIGNED_LONG, 0xfffffffeUL, 0xff, 0xff, 0xff, 0xfe);
    {
        long big = 0x0102030405060708L, back = 0;
        unsigned char g4[4], w4[4] = {5, 6, 7, 8};
        CHECK(pack(&big, 1, MPI_LONG, g4, sizeof g4) == 4);
        CHECK(memcmp(g4, w4, 4) == 0);
        unpack(g4, 4, &back, 1, MPI_LONG);
        CHECK(back == 0x05060708L);
    }
    EXPECT(MPI_AINT, (MPI_Aint)0x1122334455667788, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88);
    EXPECT(MPI_COUNT, (MPI_Count)-0x100, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00);
    EXPECT(MPI_OFFSET, (MPI_Offset)258, 0, 0, 0, 0, 0, 0, 1, 2);
    EXPECT(MPI_FLOAT, 1.0f, 0x3f, 0x80, 0x00, 0x00);
    EXPECT(MPI_FLOAT, -0.375f, 0xbe, 0xc0, 0x00, 0x00);
    EXPECT(MPI_DOUBLE, 1.0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
    EXPECT(MPI_DOUBLE, -2.5, 0xc0, 0x04, 0, 0, 0, 0, 0, 0);
    EXPECT(MPI_C_BOOL, (bool)true, 0x01);
    EXPECT(MPI_C_BOOL, (bool)false, 0x00);
    EXPECT(MPI_CHAR, 'A', 0x41);
    EXPECT(MPI_WCHAR, (wchar_t)0x263a, 0x26, 0x3a);
    EXPECT(MPI_C_FLOAT_COMPLEX, 1.0f - 2.0f * I, 0x3f, 0x80, 0, 0, 0xc0, 0x00, 0, 0);
    EXPECT(MPI_C_DOUBLE_COMPLEX, 0.5 + 1.0 * I, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
    /* binary128: sign, 15-bit exponent (bias 16383), 112 fraction bits. */
    EXPECT(MPI_LONG_DOUBLE, 1.0L, 0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    EXPECT(MPI_LONG_DOUBLE, -2.5L, 0xc0, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    /* 1 + 2^-63: x87's last fraction bit is binary128's 49th from the end. */
    EXPECT(MPI_LONG_DOUBLE, 1.0L + 0x1p-63L, 0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0, 0, 0, 0, 0, 0);
}

/* long_doubles checks denormals, infinities, NaN and the rounding of
 * unpacking. */
static void long_doubles(void)
{
    unsigned char b[16];
    long double v;
    /* A denormal: 2^-16400 = 2^-16382 * 2^-18: fraction bit 18 from the
     * top, bit 94 of 128. */
    v = 0x1p-16400L;
    CHECK(pack(&v, 1, MPI_LONG_DOUBLE, b, sizeof b) == 16);
    unsigned char want[16] = {0, 0, 0, 0, 0x40};
    CHECK(memcmp(b, want, 16) == 0);
    /* Infinity. */
    v = -__builtin_infl();
    pack(&v, 1, MPI_LONG_DOUBLE, b, sizeof b);
    unsigned char winf[16] = {0xff, 0xff};
    CHECK(memcmp(b, winf, 16) == 0);
    /* Unpacking rounds 112 fraction bits to x87's 63, to nearest even. */
    unsigned char half[16] = {0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0, 0, 0}; /* 1 + 2^-64 */
    unpack(half, 16, &v, 1, MPI_LONG_DOUBLE);
    CHECK(v == 1.0L);
    unsigned char above[16] = {0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0, 0, 0, 0, 0, 1};
    unpack(above, 16, &v, 1, MPI_LONG_DOUBLE);
    CHECK(v == 1.0L + 0x1p-63L);
    unsigned char odd[16] = {0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0x00, 0x03, 0, 0, 0, 0, 0, 0}; /* (1 + 2^-63) + 2^-64 */
    unpack(odd, 16, &v, 1, MPI_LONG_DOUBLE);
    CHECK(v == 1.0L + 0x1p-62L);
    /* A NaN comes back a NaN. */
    unsigned char nan[16] = {0x7f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    unpack(nan, 16, &v, 1, MPI_LONG_DOUBLE);
    CHECK(v != v);
    /* Complex long double: two of them. */
    long double _Complex z = 1.0L - 2.5L * I, zb = 0;
    unsigned char zz[32];
    CHECK(pack(&z, 1, MPI_C_LONG_DOUBLE_COMPLEX, zz, sizeof zz) == 32);
    unsigned char wz[32] = {0x3f, 0xff, [16] = 0xc0, [17] = 0x00, [18] = 0x40};
    CHECK(memcmp(zz, wz, 32) == 0);
    unpack(zz, 32, &zb, 1, MPI_C_LONG_DOUBLE_COMPLEX);
    CHECK(zb == z);
    /* MPI_LONG_DOUBLE_INT: 16 + 4 bytes. */
    struct { long double v; int i; } li = {-2.5L, 0x0a0b0c0d}, lb;
    memset(&lb, 0, sizeof lb);
    unsigned char wl[20] = {0xc0, 0x00, 0x40, [16] = 0x0a, 0x0b, 0x0c, 0x0d}, gl[20];
    CHECK(pack(&li, 1, MPI_LONG_DOUBLE_INT, gl, sizeof gl) == 20);
    CHECK(memcmp(gl, wl, 20) == 0);
    unpack(gl, 20, &lb, 1, MPI_LONG_DOUBLE_INT);
    CHECK(lb.v == li.v && lb.i == li.i);
}

static void pairs(void)
{
    struct { double v; int i; } di = {1.0, 7}, db;
    unsigned char w[12] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}, g[16];
    CHECK(pack(&di, 1, MPI_DOUBLE_INT, g, sizeof g) == 12);
    CHECK(memcmp(g, w, 12) == 0);
    memset(&db, 0, sizeof db);
    unpack(g, 12, &db, 1, MPI_DOUBLE_INT);
    CHECK(db.v == 1.0 && db.i == 7);
    struct { short v; int i; } si = {-2, 0x01020304};
    unsigned char ws[6] = {0xff, 0xfe, 1, 2, 3, 4};
    CHECK(pack(&si, 1, MPI_SHORT_INT, g, sizeof g) == 6);
    CHECK(memcmp(g, ws, 6) == 0);
    struct { long v; int i; } li = {1, 2};
    unsigned char wli[8] = {0, 0, 0, 1, 0, 0, 0, 2};
    CHECK(pack(&li, 1, MPI_LONG_INT, g, sizeof g) == 8);
    CHECK(memcmp(g, wli, 8) == 0);
    struct { float v; int i; } fi = {1.0f, -1};
    unsigned char wfi[8] = {0x3f, 0x80, 0, 0, 0xff, 0xff, 0xff, 0xff};
    CHECK(pack(&fi, 1, MPI_FLOAT_INT, g, sizeof g) == 8);
    CHECK(memcmp(g, wfi, 8) == 0);
}

/* A struct with padding and mixed members, two elements. */
struct rec {
    char c;       /* 0 */
    int i;        /* 4 */
    double d;     /* 8 */
    wchar_t w;    /* 16 */
    bool b;       /* 20 */
    long double x; /* 32 */
};

static void derived(void)
{
    MPI_Datatype rt, vt, rz;
    int bl[6] = {1, 1, 1, 1, 1, 1};
    MPI_Aint disp[6] = {offsetof(struct rec, c), offsetof(struct rec, i), offsetof(struct rec, d),
                        offsetof(struct rec, w), offsetof(struct rec, b), offsetof(struct rec, x)};
    MPI_Datatype ts[6] = {MPI_CHAR, MPI_INT, MPI_DOUBLE, MPI_WCHAR, MPI_C_BOOL, MPI_LONG_DOUBLE};
    CHECK_RC(MPI_Type_create_struct(6, bl, disp, ts, &rt));
    CHECK_RC(MPI_Type_commit(&rt));
    struct rec r[2], back[2];
    memset(r, 0x55, sizeof r); /* padding bytes must not travel */
    r[0].c = 'x'; r[0].i = 0x01020304; r[0].d = 1.0; r[0].w = 0x41; r[0].b = true; r[0].x = 1.0L;
    r[1].c = 'y'; r[1].i = -1; r[1].d = -2.5; r[1].w = 0x263a; r[1].b = false; r[1].x = -2.5L;
    /* 1 + 4 + 8 + 2 + 1 + 16 = 32 bytes an element. */
    unsigned char want[64] = {
        'x', 1, 2, 3, 4, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0x41, 1, 0x3f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        'y', 0xff, 0xff, 0xff, 0xff, 0xc0, 0x04, 0, 0, 0, 0, 0, 0, 0x26, 0x3a, 0, 0xc0, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    };
    unsigned char got[80];
    CHECK(pack(r, 2, rt, got, sizeof got) == 64);
    CHECK(memcmp(got, want, 64) == 0);
    memset(back, 0, sizeof back);
    unpack(got, 64, back, 2, rt);
    for (int k = 0; k < 2; k++)
        CHECK(back[k].c == r[k].c && back[k].i == r[k].i && back[k].d == r[k].d && back[k].w == r[k].w &&
              back[k].b == r[k].b && back[k].x == r[k].x);
    /* The padding of the unpacked records was left alone. */
    CHECK(((unsigned char *)back)[1] == 0 && ((unsigned char *)back)[21] == 0);

    /* A vector of shorts, every other one, resized to 6 bytes: three
     * elements are shorts 0, 2 (of the first), 3, 5, 6, 8. */
    CHECK_RC(MPI_Type_vector(2, 1, 2, MPI_SHORT, &vt));
    CHECK_RC(MPI_Type_create_resized(vt, 0, 6, &rz));
    CHECK_RC(MPI_Type_commit(&rz));
    short s[9];
    for (int k = 0; k < 9; k++)
        s[k] = (short)(0x0100 * k + k + 1);
    unsigned char vw[12], vg[12];
    int idx[6] = {0, 2, 3, 5, 6, 8};
    for (int k = 0; k < 6; k++) {
        vw[2 * k] = (unsigned char)(s[idx[k]] >> 8);
        vw[2 * k + 1] = (unsigned char)s[idx[k]];
    }
    CHECK(pack(s, 3, rz, vg, sizeof vg) == 12);
    CHECK(memcmp(vg, vw, 12) == 0);
    short sb[9] = {0};
    unpack(vg, 12, sb, 3, rz);
    for (int k = 0; k < 9; k++)
        CHECK(sb[k] == ((k % 3 == 1) ? 0 : s[k]));

    /* Packing at an offset, then the _c forms continue from there. */
    unsigned char buf[100];
    MPI_Count pos = 0;
    int one = 0x0a0b0c0d;
    CHECK_RC(MPI_Pack_external_c(E32, &one, 1, MPI_INT, buf, sizeof buf, &pos));
    CHECK_RC(MPI_Pack_external_c(E32, r, 2, rt, buf, sizeof buf, &pos));
    CHECK(pos == 68 && buf[0] == 0x0a && buf[3] == 0x0d && memcmp(buf + 4, want, 64) == 0);
    MPI_Count rpos = 0;
    int oneb = 0;
    memset(back, 0, sizeof back);
    CHECK_RC(MPI_Unpack_external_c(E32, buf, pos, &rpos, &oneb, 1, MPI_INT));
    CHECK_RC(MPI_Unpack_external_c(E32, buf, pos, &rpos, back, 2, rt));
    CHECK(rpos == 68 && oneb == one && back[1].x == -2.5L && back[1].w == 0x263a);
    MPI_Type_free(&rt);
    MPI_Type_free(&vt);
    MPI_Type_free(&rz);
}

static void errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int v = 1, cls = -1;
    unsigned char b[8];
    MPI_Aint pos = 0, size;
    int rc = MPI_Pack_external("native", &v, 1, MPI_INT, b, sizeof b, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_DATAREP && pos == 0);
    rc = MPI_Pack_external_size("external64", 1, MPI_INT, &size);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_DATAREP);
    rc = MPI_Unpack_external("internal", b, 4, &pos, &v, 1, MPI_INT);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_DATAREP);
    /* Too small a buffer: truncation, position unchanged. */
    long long l = 5;
    pos = 4;
    rc = MPI_Pack_external(E32, &l, 1, MPI_LONG_LONG, b, sizeof b, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE && pos == 4);
    pos = 0;
    rc = MPI_Unpack_external(E32, b, 4, &pos, &l, 1, MPI_LONG_LONG);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE && pos == 0);
    rc = MPI_Pack_external(E32, &v, 1, MPI_DATATYPE_NULL, b, sizeof b, &pos);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    sizes_and_swaps();
    exact();
    long_doubles();
    pairs();
    derived();
    errors();
    DONE();
}
