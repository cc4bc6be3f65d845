/*
 * Writes a starting corpus for every harness into <dir>/<harness>/: valid
 * encodings made by the encoders themselves (so the fuzzers begin past the
 * magic and version checks) and typical user strings. Run by `make fuzz`
 * before the fuzzers; plain C, no libFuzzer.
 *
 *   fuzz_seeds DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "algos/profile.h"
#include "coll/boot_wire.h"
#include "plugin/collnet.h"
#include "transport/ib/ib_wire.h"
#include "transport/tcp/tcp_wire.h"
#include "transport/ucx/ucx_wire.h"

static const char *seed_dir;

/* Writes <dir>/<harness>/<name>: the mode byte(s), then the bytes. */
static void seed(const char *harness, const char *name, const void *head, size_t hlen,
                 const void *bytes, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", seed_dir, harness);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/%s/%s", seed_dir, harness, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(head, 1, hlen, f) != hlen || fwrite(bytes, 1, len, f) != len) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

static void seed_text(const char *harness, const char *name, const char *head, size_t hlen,
                      const char *text)
{
    seed(harness, name, head, hlen, text, strlen(text));
}

static void seeds_tcp(void)
{
    /* the largest seed: the hello (40 bytes) or a header behind its sequence (28) */
    uint8_t b[STT_TCP_HELLO_BYTES > STT_TCP_HDR_BYTES + 4 ? STT_TCP_HELLO_BYTES
                                                           : STT_TCP_HDR_BYTES + 4];
    stt_tcp_hello_t h = {.version = STT_TCP_PROTO_VERSION,
                         .index = 1,
                         .nsocks = 4,
                         .listener_id = 0x1122334455667788ull,
                         .conn_id = 42};
    stt_tcp_hello_encode(&h, b);
    seed("tcp_wire", "hello", "\x00", 1, b, STT_TCP_HELLO_BYTES);
    stt_tcp_ack_t a = {.version = STT_TCP_PROTO_VERSION, .nsocks = 4, .conn_id = 42};
    stt_tcp_ack_encode(&a, b);
    seed("tcp_wire", "ack", "\x01", 1, b, STT_TCP_ACK_BYTES);
    stt_tcp_hdr_t m = {.flags = STT_TCP_HDR_STRIPED, .tag = 7, .seq = 5, .size = 1 << 20};
    memcpy(b, &m.seq, 4);
    stt_tcp_hdr_encode(&m, b + 4);
    seed("tcp_wire", "hdr", "\x02", 1, b, STT_TCP_HDR_BYTES + 4);
    seed("tcp_wire", "stripe", "\x03", 1, "\x00\x00\x10\x00\x00\x00\x00\x00\x01\x03", 10);
}

static void seeds_ib(void)
{
    uint8_t b[STT_IB_META_BYTES];
    stt_ib_meta_t m = {.kind = STT_IB_META_HELLO,
                       .nqps = 2,
                       .nmembers = 2,
                       .byte_order = STT_IB_BYTE_ORDER,
                       .listener_id = 9,
                       .conn_id = 10,
                       .addr = 0x7f0000001000ull,
                       .qpn = {0x11, 0x12},
                       .m = {{.mtu = 5, .port = 1, .rkey = 0x1234},
                             {.mtu = 3, .port = 2, .rkey = 0x5678}}};
    stt_ib_meta_encode(&m, b);
    seed("ib_wire", "hello", "\x01\x00", 2, b, sizeof(b));
    m.kind = STT_IB_META_REPLY;
    m.m[0].has_alt = 1;
    m.m[1].has_alt = 1;
    m.gid_choice = STT_IB_GID_ALT;
    stt_ib_meta_encode(&m, b);
    seed("ib_wire", "reply", "\x01\x01", 2, b, sizeof(b));
    stt_ib_imm_t imm = {.slot = 3, .nqps = 2, .size = 4096};
    uint32_t v = stt_ib_imm_encode(&imm);
    seed("ib_wire", "imm", "\x00", 1, &v, 4);

    stt_ib_fifo_slot_t slot;
    void *data[2] = {(void *)0x10000, (void *)0x20000};
    size_t sizes[2] = {4096, 8192};
    int tags[2] = {1, 2};
    uint32_t rkeys[2][STT_IB_MAX_MEMBERS] = {{5, 15}, {6, 16}}, seq = 77;
    memset(&slot, 0, sizeof(slot));
    stt_ib_fifo_fill(&slot, seq, 2, data, sizes, tags, (const uint32_t(*)[STT_IB_MAX_MEMBERS])rkeys,
                     2);
    uint8_t fb[4 + sizeof(slot)];
    memcpy(fb, &seq, 4);
    memcpy(fb + 4, &slot, sizeof(slot));
    seed("ib_fifo", "slot", "\x01", 1, fb, sizeof(fb));
    seed("ib_fifo", "fill", "\x00", 1, "\x4d\x00\x00\x00\x03", 5);
}

static void seeds_ucx(void)
{
    uint8_t b[STT_UCX_HANDLE_BYTES];
    stt_ucx_handle_t h = {.listener_id = 5};
    h.addr.in4.sin_family = AF_INET;
    h.addr.in4.sin_port = 0x3412;
    h.addr.in4.sin_addr.s_addr = 0x0100007f;
    stt_ucx_handle_encode(&h, b);
    seed("ucx_wire", "handle", "\x00", 1, b, sizeof(b));
    stt_ucx_hello_t hello = {
        .kind = STT_UCX_HELLO_CONNECT, .listener_id = 5, .conn_id = 3, .addr_len = 300};
    stt_ucx_hello_encode(&hello, b);
    seed("ucx_wire", "hello", "\x01", 1, b, STT_UCX_HELLO_BYTES);
}

static void seeds_collnet(void)
{
    uint8_t b[NCCL_NET_HANDLE_MAXSIZE] = {0}, x[NCCL_NET_HANDLE_MAXSIZE] = {0};
    /* mode, then the member's view: group (odd: take the hello's), nranks, position */
    static const uint8_t view[17] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
    stp_cn_handle_t h = {.nonce = 0x0102030405060708ull, .dev = 1};
    memcpy(x, "STRU", 4);
    stp_cn_handle_encode(b, x, &h);
    seed("collnet_wire", "handle", "\x00", 1, b, NCCL_NET_HANDLE_MAXSIZE);
    stp_cn_hello_t hello = {.group = 0x1234567887654321ull, .from = 2, .to = 1, .nranks = 3};
    stp_cn_hello_encode(b, &hello);
    seed("collnet_wire", "hello", view, sizeof(view), b, STP_CN_HELLO_BYTES);
    /* mode, then record mode 3 (member 0's, the record's own view), group, nranks */
    static const uint8_t rview[14] = {2, 3};
    sta_model_t m;
    sta_model_default(&m);
    stp_cn_record_t r = {.ok = 1, .group = 7, .rank = 0, .nranks = 2,
                         .model = {m.shm.alpha_us, m.shm.beta_gbps, m.net.alpha_us,
                                   m.net.beta_gbps, m.gamma_gbps},
                         .intra = 0, .forced = -1, .chunk = 128 << 10, .host = 99};
    stp_cn_record_encode(b, &r);
    seed("collnet_wire", "record", rview, sizeof(rview), b, STP_CN_RECORD_BYTES);
    seed("collnet_wire", "group", "\x03\x02", 2, "0123456789abcdef0123host", 24);
}

static void seeds_boot(void)
{
    uint8_t key[STC_BOOT_KEY_BYTES] = {1}, nonce[STC_BOOT_NONCE_BYTES] = {2};
    uint8_t ch[STC_BOOT_CHALLENGE_BYTES], hello[STC_BOOT_HELLO_BYTES];
    uint8_t w[STC_BOOT_WELCOME_BYTES], both[4 + sizeof(ch) + sizeof(hello)];
    stc_boot_challenge_encode(nonce, ch);
    seed("boot_wire", "challenge", "\x00", 1, ch, sizeof(ch));
    stc_boot_hello_t h = {.rank = 3, .nranks = 8};
    stc_boot_hello_encode(key, ch, &h, hello);
    uint32_t nranks = 7; /* the harness's count: 8 */
    memcpy(both, &nranks, 4);
    memcpy(both + 4, ch, sizeof(ch));
    memcpy(both + 4 + sizeof(ch), hello, sizeof(hello));
    seed("boot_wire", "hello", "\x01", 1, both, sizeof(both));
    seed("boot_wire", "hello-signed", "\x02", 1, both, sizeof(both));
    stc_boot_welcome_t wel = {.verdict = STC_BOOT_OK, .nranks = 8};
    stc_boot_welcome_encode(key, hello, &wel, w);
    uint8_t hw[sizeof(hello) + sizeof(w)];
    memcpy(hw, hello, sizeof(hello));
    memcpy(hw + sizeof(hello), w, sizeof(w));
    seed("boot_wire", "welcome", "\x03", 1, hw, sizeof(hw));
    seed("boot_wire", "welcome-signed", "\x04", 1, hw, sizeof(hw));
    seed("boot_wire", "token", "\x05", 1, "\x01\x00\x00\x00\x02\x00\x00\x00", 8);
}

static void seeds_text(void)
{
    seed_text("param", "int", "\x00\x00", 2, "64K");
    seed_text("param", "timeout", "\x01\x0f", 2, "120000");
    seed_text("param", "family", "\x01\x04", 2, "AF_INET6");
    seed_text("param", "ifname", "\x01\x03", 2, "^=docker0,lo:1");
    seed_text("param", "launch", "\x02\x00", 2, "3\n8\n\n\n\n10.0.0.1:29500\n\nnode-a");
    seed_text("param", "launch-ompi", "\x02\x00", 2, "\n\n1\n4\n4\n\n29500\n");
    seed_text("profile", "full", "", 0,
              "# measured\nshm.alpha_us = 0.6\nshm.beta_gbps = 12\nnet.alpha_us = 9 # lo\n"
              "net.beta_gbps = 3.6\r\ngamma_gbps=12\n");
    seed_text("profile", "bad", "", 0, "net.alpha_us 3\nbogus = 1\n");
    seed_text("name_filter", "prefixes", "\x00", 1, "eth,ib");
    seed_text("name_filter", "exact-ports", "\x02", 1, "^=mlx5_0:1,mlx5_1:2");
    seed_text("rail", "map", "\x04\x00\x00\x00\x02", 5, "0,1,0,1");
    seed_text("rail", "blanks", "\x03\x00\x00\x00\x04", 5, " 3 , 2,1 ");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    seed_dir = argv[1];
    if (mkdir(seed_dir, 0755) != 0 && errno != EEXIST) {
        perror(seed_dir);
        return 1;
    }
    seeds_tcp();
    seeds_ib();
    seeds_ucx();
    seeds_boot();
    seeds_collnet();
    seeds_text();
    return 0;
}
