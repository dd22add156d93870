/* SPDX-License-Identifier: BSD-3-Clause */
/* test_conn.c -- the connection layer (src/conn.c, src/tls.c; issue 11)
 * against real redis-server processes, plaintext and TLS.
 *
 * Certificates are made per test program by the harness
 * (harness_require_certs). TLS servers also keep their plaintext port (the
 * harness checks readiness there); the tests connect to tls_port.
 *
 * Every test checks the connection's contract: each accepted request is
 * answered exactly once (a reply, or NULL with a reason) and on_close
 * runs exactly once. Bounds on time are generous safety limits only. */
#include <errno.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn.h"
#include "harness.h"
#include "tls.h"

#define PIPELINE 1000
#define BIG_VALUE (1024 * 1024)
#define MAX_CALLS (PIPELINE + 8)


/* ---- Recording callbacks ------------------------------------------------ */

struct call {
    int calls;                   /* must end at exactly 1 */
    int type;                    /* reply type, 0 when down */
    long long integer;
    char str[128];
    size_t len;
    char down[RL_ERRLEN];        /* reason when down */
};

struct watch {
    int opened;
    int closed;                  /* must end at exactly 1 */
    char reason[RL_ERRLEN];
    int pushes;
    char push_kind[32];
    char push_data[128];
    bool free_on_close;          /* conn_free from inside on_close */
};

static void on_reply(struct conn *c, const redisReply *r, const char *down,
                     void *privdata)
{
    struct call *k = privdata;

    (void)c;
    k->calls++;
    if (r == NULL) {
        snprintf(k->down, sizeof(k->down), "%s", down);
        return;
    }
    k->type = r->type;
    k->integer = r->integer;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        r = r->element[0];
    if (r->str != NULL) {
        snprintf(k->str, sizeof(k->str), "%.*s", (int)r->len, r->str);
        k->len = (size_t)r->len;
    }
}

/* Frees the connection from inside its first reply. */
static void on_reply_free(struct conn *c, const redisReply *r,
                          const char *down, void *privdata)
{
    on_reply(c, r, down, privdata);
    conn_free(c);
}

static void on_open(struct conn *c, void *privdata)
{
    struct watch *w = privdata;

    (void)c;
    w->opened++;
}

static void on_close(struct conn *c, const char *reason, void *privdata)
{
    struct watch *w = privdata;

    w->closed++;
    snprintf(w->reason, sizeof(w->reason), "%s", reason);
    if (w->free_on_close)
        conn_free(c);
}

static void on_push(struct conn *c, const redisReply *r, void *privdata)
{
    struct watch *w = privdata;

    (void)c;
    w->pushes++;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
        snprintf(w->push_kind, sizeof(w->push_kind), "%s",
                 r->element[0]->str);
        if (r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING)
            snprintf(w->push_data, sizeof(w->push_data), "%s",
                     r->element[2]->str);
    }
}

/* ---- Loop helpers ------------------------------------------------------- */

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

/* Run the loop until *counter >= want or ms (scaled) have passed. */
static bool spin(struct ev_loop *loop, const int *counter, int want,
                 int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    ev_timer tick;

    ev_timer_init(&tick, on_tick, 0.01, 0.01);
    ev_timer_start(loop, &tick);
    while (*counter < want && harness_now_ms() < deadline)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &tick);
    return *counter >= want;
}

/* Sum of calls over n records. */
static int total_calls(const struct call *k, int n)
{
    int sum = 0;

    for (int i = 0; i < n; i++)
        sum += k[i].calls;
    return sum;
}

static bool spin_calls(struct ev_loop *loop, const struct call *k, int n,
                       int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    ev_timer tick;

    ev_timer_init(&tick, on_tick, 0.01, 0.01);
    ev_timer_start(loop, &tick);
    while (total_calls(k, n) < n && harness_now_ms() < deadline)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &tick);
    return total_calls(k, n) == n;
}

static bool command(struct conn *c, struct call *k, const char *a0,
                    const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    size_t lens[3];
    int argc = a2 != NULL ? 3 : a1 != NULL ? 2 : 1;

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return conn_command(c, argc, argv, lens, on_reply, k);
}

/* ---- Fixture ------------------------------------------------------------ */

struct fx {
    struct ev_loop *loop;
    struct rl_redis r;
    struct node_addr addr;
    struct tls_ctx *ctx;
    struct tls_target *target;
    struct conn *c;
    struct watch w;
    struct call k[MAX_CALLS];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return -1;
    f->loop = ev_loop_new(EVFLAG_AUTO);
    *state = f;
    return f->loop != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    conn_free(f->c);
    tls_target_free(f->target);
    tls_ctx_free(f->ctx);
    harness_stop(&f->r);
    ev_loop_destroy(f->loop);
    free(f);
    return 0;
}

/* A TCP address: ip 127.0.0.1, host as the URI would have had it. */
static void tcp_addr(struct fx *f, const char *host, int port)
{
    f->addr.kind = ADDR_TCP;
    f->addr.host = (char *)host;
    f->addr.ip = (char *)"127.0.0.1";
    f->addr.port = port;
}

static struct conn *open_conn(struct fx *f, struct tls_target *t,
                              uint32_t connect_timeout_ms, bool subscriber)
{
    struct conn_opts o = {0};

    o.addr = &f->addr;
    o.tls = t;
    o.connect_timeout_ms = (uint32_t)harness_scale_ms(connect_timeout_ms);
    o.subscriber = subscriber;
    o.on_open = on_open;
    o.on_close = on_close;
    o.on_push = on_push;
    o.privdata = &f->w;
    memset(&f->w, 0, sizeof(f->w));
    return conn_new(f->loop, &o);
}

static void start_plain(struct fx *f, const struct harness_opts *o)
{
    assert_int_equal(harness_start(&f->r, o), 0);
    tcp_addr(f, "127.0.0.1", f->r.port);
}

/* A TLS server with server_cert (base may be NULL), f->addr its TLS port.
 * Returns a client configuration that trusts the test CA. */
static struct tls_config start_tls(struct fx *f, const char *server_cert,
                                   bool auth_clients,
                                   const struct harness_opts *base)
{
    struct harness_opts o = harness_tls_opts(base, server_cert, auth_clients);
    struct tls_config cfg = {.ca_file = harness_cert("ca.pem")};

    assert_int_equal(harness_start(&f->r, &o), 0);
    tcp_addr(f, "127.0.0.1", f->r.tls_port);
    return cfg;
}

/* A context (cfg may name files relative to the cert dir via harness_cert()). */
static void make_ctx(struct fx *f, const struct tls_config *cfg,
                     const char *host)
{
    char err[RL_ERRLEN];

    conn_free(f->c); /* a connection must not outlive its target */
    f->c = NULL;
    tls_target_free(f->target);
    tls_ctx_free(f->ctx);
    f->target = NULL;
    assert_int_equal(tls_ctx_new(cfg, &f->ctx, err, sizeof(err)), RL_OK);
    f->target = tls_target_new(f->ctx, host);
    assert_non_null(f->target);
}

/* A TLS server with server.pem (no client certificates asked for), and a
 * context for 127.0.0.1 that trusts the test CA. */
static void start_tls_trusted(struct fx *f, const struct harness_opts *base)
{
    struct tls_config cfg = start_tls(f, "server.pem", false, base);

    make_ctx(f, &cfg, "127.0.0.1");
}

/* PING on a fresh connection: true when PONG came back; else *k says
 * why (down) and f->w.reason too. */
static bool ping_once(struct fx *f, struct tls_target *t, struct call *k)
{
    memset(k, 0, sizeof(*k));
    conn_free(f->c);
    f->c = open_conn(f, t, 2000, false);
    assert_non_null(f->c);
    assert_true(command(f->c, k, "PING", NULL, NULL));
    assert_true(spin_calls(f->loop, k, 1, 5000));
    assert_int_equal(k->calls, 1);
    if (k->type == REDIS_REPLY_STATUS && strcmp(k->str, "PONG") == 0)
        return true;
    fprintf(stderr, "  ping: down=\"%s\" close=\"%s\"\n", k->down,
            f->w.reason);
    return false;
}

/* Expect the connection to fail before answering; the reason must contain
 * want. */
static void expect_down(struct fx *f, struct tls_target *t, const char *want)
{
    struct call k;

    assert_false(ping_once(f, t, &k));
    assert_int_equal(k.type, 0);
    assert_true(spin(f->loop, &f->w.closed, 1, 5000));
    assert_int_equal(f->w.closed, 1);
    if (strstr(k.down, want) == NULL) {
        fprintf(stderr, "  reason \"%s\" lacks \"%s\"\n", k.down, want);
        fail();
    }
    assert_string_equal(k.down, f->w.reason);
    assert_int_equal(conn_get_state(f->c), CONN_CLOSED);
    assert_int_equal(conn_pending(f->c), 0);
}

/* PING on a fresh connection must be answered PONG. */
static void expect_pong(struct fx *f, struct tls_target *t)
{
    struct call k;

    assert_true(ping_once(f, t, &k));
}

/* A fresh context from cfg for host (make_ctx), then one PING on a new
 * connection through it: want NULL expects PONG, else the connection must
 * go down with a reason containing want (expect_down). */
static void tls_expect(struct fx *f, const struct tls_config *cfg,
                       const char *host, const char *want)
{
    make_ctx(f, cfg, host);
    if (want == NULL)
        expect_pong(f, f->target);
    else
        expect_down(f, f->target, want);
}

/* ---- Plaintext ---------------------------------------------------------- */

/* PIPELINE INCRs, a SET of a BIG_VALUE-byte string, its STRLEN and a GET,
 * all queued on a new connection through t (NULL: plaintext) while it still
 * connects: each is answered once, in order. */
static void pipelined_round(struct fx *f, struct tls_target *t)
{
    char *big = malloc(BIG_VALUE);
    const char *set[3] = {"SET", "big", big};
    size_t lens[3] = {3, 3, BIG_VALUE};
    int i;

    assert_non_null(big);
    memset(big, 'x', BIG_VALUE);
    f->c = open_conn(f, t, 2000, false);
    assert_non_null(f->c);
    /* Queued while still connecting: written once open. */
    for (i = 0; i < PIPELINE; i++)
        assert_true(command(f->c, &f->k[i], "INCR", "n", NULL));
    assert_true(conn_command(f->c, 3, set, lens, on_reply, &f->k[PIPELINE]));
    assert_true(command(f->c, &f->k[PIPELINE + 1], "STRLEN", "big", NULL));
    assert_true(command(f->c, &f->k[PIPELINE + 2], "GET", "big", NULL));
    assert_true(spin_calls(f->loop, f->k, PIPELINE + 3, 10000));
    for (i = 0; i < PIPELINE; i++) {
        assert_int_equal(f->k[i].calls, 1);
        assert_int_equal(f->k[i].type, REDIS_REPLY_INTEGER);
        assert_int_equal(f->k[i].integer, i + 1);
    }
    assert_string_equal(f->k[PIPELINE].str, "OK");
    assert_int_equal(f->k[PIPELINE + 1].integer, BIG_VALUE);
    assert_int_equal(f->k[PIPELINE + 2].len, BIG_VALUE);
    assert_int_equal(f->w.opened, 1);
    assert_int_equal(conn_pending(f->c), 0);
    free(big);
}

static void test_pipelined_requests_are_answered_in_order(void **state)
{
    struct fx *f = *state;

    start_plain(f, NULL);
    pipelined_round(f, NULL);
    assert_null(conn_tls_version(f->c));
    conn_free(f->c);
    f->c = NULL;
    assert_int_equal(f->w.closed, 1);
    assert_string_equal(f->w.reason, "connection closed by client");
}

static void test_unix_socket(void **state)
{
    struct fx *f = *state;
    struct harness_opts o = {.unix_socket = true};

    assert_int_equal(harness_start(&f->r, &o), 0);
    f->addr.kind = ADDR_UNIX;
    f->addr.path = f->r.unix_path;
    expect_pong(f, NULL);
    conn_free(f->c);
    f->c = NULL;
    /* Nobody listening on the path: a failure from the loop, not NULL. */
    unlink(f->r.unix_path);
    harness_stop(&f->r);
    expect_down(f, NULL, "connect failed");
}

static void test_ipv6_loopback(void **state)
{
    struct fx *f = *state;
    struct harness_opts o = {0};
    const char *extra[] = {"--bind", "127.0.0.1 ::1", NULL};
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 sa = {0};

    sa.sin6_family = AF_INET6;
    sa.sin6_addr = in6addr_loopback;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0)
            close(fd);
        printf("SKIP: no IPv6 loopback\n");
        skip();
    }
    close(fd);
    o.extra_args = extra;
    assert_int_equal(harness_start(&f->r, &o), 0);
    f->addr.kind = ADDR_TCP;
    f->addr.host = (char *)"::1";
    f->addr.ip = (char *)"::1";
    f->addr.port = f->r.port;
    expect_pong(f, NULL);
}

static void test_connection_refused_is_reported_from_the_loop(void **state)
{
    struct fx *f = *state;

    tcp_addr(f, "127.0.0.1", harness_free_port());
    f->w.free_on_close = false;
    expect_down(f, NULL, "connect failed: Connection refused");
    /* Free from inside on_close. */
    conn_free(f->c);
    f->c = open_conn(f, NULL, 2000, false);
    f->w.free_on_close = true;
    assert_true(spin(f->loop, &f->w.closed, 1, 5000));
    f->c = NULL; /* freed by on_close */
}

/* SUBSCRIBE, a request in subscribed mode, a PUBLISHed message. */
static void pubsub_round(struct fx *f, struct tls_target *t)
{
    const char *sub[2] = {"SUBSCRIBE", "chan"};
    size_t lens[2] = {9, 4};
    redisReply *rep;

    f->c = open_conn(f, t, 2000, true);
    assert_non_null(f->c);
    assert_true(conn_push_command(f->c, 2, sub, lens));
    assert_true(spin(f->loop, &f->w.pushes, 1, 5000));
    assert_string_equal(f->w.push_kind, "subscribe");
    /* A request in subscribed mode is still answered in order. */
    assert_true(command(f->c, &f->k[0], "PING", NULL, NULL));
    assert_true(spin_calls(f->loop, f->k, 1, 5000));
    assert_string_equal(f->k[0].str, "pong");
    rep = harness_cmd(&f->r, "PUBLISH chan hello");
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    assert_true(spin(f->loop, &f->w.pushes, 2, 5000));
    assert_string_equal(f->w.push_kind, "message");
    assert_string_equal(f->w.push_data, "hello");
    assert_int_equal(f->w.closed, 0);
}

static void test_pubsub_pushes_go_to_the_push_handler(void **state)
{
    struct fx *f = *state;

    start_plain(f, NULL);
    pubsub_round(f, NULL);
}

static void test_tls_pubsub_pushes(void **state)
{
    struct fx *f = *state;

    start_tls_trusted(f, NULL);
    pubsub_round(f, f->target);
    assert_non_null(conn_tls_version(f->c));
}

static void test_server_killed_answers_each_pending_request_once(
    void **state)
{
    struct fx *f = *state;
    int i;

    start_plain(f, NULL);
    f->c = open_conn(f, NULL, 2000, false);
    assert_true(command(f->c, &f->k[6], "PING", NULL, NULL));
    assert_true(spin_calls(f->loop, &f->k[6], 1, 5000));
    for (i = 0; i < 5; i++)
        assert_true(command(f->c, &f->k[i], "BLPOP", "nothing", "0"));
    assert_true(command(f->c, &f->k[5], "PING", NULL, NULL));
    /* BLPOPs block the connection: wait until they are on the server. */
    for (i = 0; i < 100; i++) {
        char clients[16] = "0";

        harness_info_field(&f->r, "clients", "blocked_clients", clients,
                           sizeof(clients));
        if (atoi(clients) == 1)
            break;
        spin(f->loop, &f->w.closed, 1, 20);
    }
    harness_kill(&f->r);
    assert_true(spin(f->loop, &f->w.closed, 1, 5000));
    for (i = 0; i < 6; i++) {
        assert_int_equal(f->k[i].calls, 1);
        assert_int_equal(f->k[i].type, 0);
        assert_string_equal(f->k[i].down, "connection lost: closed by server");
    }
    assert_int_equal(f->w.closed, 1);
    /* Closed: new requests are refused, nothing is called back. */
    assert_false(command(f->c, &f->k[7], "PING", NULL, NULL));
    conn_free(f->c);
    f->c = NULL;
    assert_int_equal(f->w.closed, 1);
    assert_int_equal(f->k[6].calls, 1);
    assert_int_equal(f->k[7].calls, 0);
}

static void test_owner_close_and_free_inside_a_reply(void **state)
{
    struct fx *f = *state;
    const char *ping[1] = {"PING"};
    size_t len = 4;

    start_plain(f, NULL);
    f->c = open_conn(f, NULL, 2000, false);
    assert_true(command(f->c, &f->k[0], "BLPOP", "nothing", "0"));
    assert_true(command(f->c, &f->k[1], "BLPOP", "nothing", "0"));
    assert_true(spin(f->loop, &f->w.opened, 1, 5000));
    conn_close(f->c, "no reply within 50 ms");
    assert_int_equal(f->k[0].calls, 1);
    assert_int_equal(f->k[1].calls, 1);
    assert_string_equal(f->k[1].down, "no reply within 50 ms");
    assert_int_equal(f->w.closed, 1);
    conn_close(f->c, "again"); /* no-op */
    assert_int_equal(f->w.closed, 1);
    conn_free(f->c);

    /* Freed inside the first of two replies: the second is answered as
     * down, on_close runs once, the memory goes when the callback ends. */
    memset(f->k, 0, sizeof(f->k));
    f->c = open_conn(f, NULL, 2000, false);
    assert_true(conn_command(f->c, 1, ping, &len, on_reply_free, &f->k[0]));
    assert_true(conn_command(f->c, 1, ping, &len, on_reply, &f->k[1]));
    assert_true(spin_calls(f->loop, f->k, 2, 5000));
    f->c = NULL;
    assert_int_equal(f->k[0].calls, 1);
    assert_string_equal(f->k[0].str, "PONG");
    assert_int_equal(f->k[1].calls, 1);
    assert_string_equal(f->k[1].down, "connection closed by client");
    assert_int_equal(f->w.closed, 1);
}

/* A port that accepts TCP (the kernel's backlog) and never speaks. */
static int silent_listener(int *port)
{
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

static void test_handshake_bounded_by_connect_timeout(void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = {0};
    int64_t t0;
    int port = 0, lfd = silent_listener(&port);

    assert_true(lfd >= 0);
    cfg.insecure = true;
    make_ctx(f, &cfg, "127.0.0.1");
    tcp_addr(f, "127.0.0.1", port);
    t0 = harness_now_ms();
    f->c = open_conn(f, f->target, 300, false);
    assert_true(command(f->c, &f->k[0], "PING", NULL, NULL));
    assert_true(spin(f->loop, &f->w.closed, 1, 5000));
    assert_true(harness_now_ms() - t0 < harness_scale_ms(3000));
    assert_non_null(strstr(f->k[0].down, "TLS handshake timed out"));
    close(lfd);
}

/* A fake server sends bytes and keeps the socket open: the connection
 * must fail on the bytes themselves (not on EOF), with a reason. */
static void expect_hostile(struct fx *f, int lfd, const char *bytes,
                           size_t len, int requests, size_t max_reply,
                           const char *want)
{
    struct conn_opts o = {0};
    int sfd, i;

    memset(f->k, 0, sizeof(f->k));
    memset(&f->w, 0, sizeof(f->w));
    o.addr = &f->addr;
    o.connect_timeout_ms = (uint32_t)harness_scale_ms(2000);
    o.max_reply_bytes = max_reply;
    o.on_open = on_open;
    o.on_close = on_close;
    o.privdata = &f->w;
    f->c = conn_new(f->loop, &o);
    assert_non_null(f->c);
    for (i = 0; i < requests; i++)
        assert_true(command(f->c, &f->k[i], "PING", NULL, NULL));
    assert_true(spin(f->loop, &f->w.opened, 1, 5000));
    sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(sfd >= 0);
    assert_int_equal(write(sfd, bytes, len), (ssize_t)len);
    assert_true(spin(f->loop, &f->w.closed, 1, 5000));
    fprintf(stderr, "  %s\n", f->w.reason);
    assert_non_null(strcasestr(f->w.reason, want));
    for (i = 0; i < requests; i++)
        assert_int_equal(f->k[i].calls, 1);
    close(sfd);
    conn_free(f->c);
    f->c = NULL;
}

static void test_hostile_server_bytes_fail_the_connection(void **state)
{
    struct fx *f = *state;
    static const char nested[] =
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
    char longer[700];
    int port = 0, lfd = silent_listener(&port);

    assert_true(lfd >= 0);
    tcp_addr(f, "127.0.0.1", port);
    expect_hostile(f, lfd, "+PONG\r\n:1\r\n", 11, 1, 0,
                   "no request asked for");
    expect_hostile(f, lfd, "*100000000\r\n", 13, 1, 0,
                   "an array of 100000000 elements");
    expect_hostile(f, lfd, "?\r\n", 3, 2, 0, "protocol error");
    expect_hostile(f, lfd, nested, sizeof(nested) - 1, 1, 0,
                   "protocol error");
    memset(longer, 'z', sizeof(longer));
    memcpy(longer, "$1000\r\n", 7);
    expect_hostile(f, lfd, longer, sizeof(longer), 1, 512,
                   "longer than 512 bytes");
    expect_hostile(f, lfd, "\x15\x03\x01\x00\x02\x02\x16", 7, 1, 0,
                   "speaks TLS");
    close(lfd);
}

/* ---- TLS ---------------------------------------------------------------- */

static void test_tls_pipelined_requests_and_version(void **state)
{
    struct fx *f = *state;

    start_tls_trusted(f, NULL);
    pipelined_round(f, f->target);
    assert_non_null(conn_tls_version(f->c));
    assert_int_equal(strncmp(conn_tls_version(f->c), "TLSv1.", 6), 0);
    assert_false(conn_tls_resumed(f->c));
}

static void test_tls_verification_is_on_by_default(void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = start_tls(f, "server.pem", false, NULL);

    cfg.ca_file = NULL; /* the system trust store only */
    tls_expect(f, &cfg, "127.0.0.1", "unknown CA");
    cfg.ca_file = harness_cert("ca2.pem");
    tls_expect(f, &cfg, "127.0.0.1", "unknown CA");
    cfg.ca_file = NULL;
    cfg.ca_dir = harness_cert("."); /* not hashed: nothing found in it */
    tls_expect(f, &cfg, "127.0.0.1",
               "TLS handshake failed: certificate verification failed");
    cfg.ca_dir = harness_cert("cadir"); /* hashed (openssl rehash) */
    tls_expect(f, &cfg, "127.0.0.1", NULL);
}

static void test_tls_host_name_checks(void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = start_tls(f, "server.pem", false, NULL);

    tls_expect(f, &cfg, "localhost", NULL); /* URI host name, SNI */
    tls_expect(f, &cfg, "redis.example.com", "host-name mismatch");
    cfg.server_name = "localhost"; /* explicit name wins over the host */
    tls_expect(f, &cfg, "redis.example.com", NULL);
    cfg.server_name = "wrong.example";
    tls_expect(f, &cfg, "127.0.0.1", "host-name mismatch");
    cfg.server_name = "127.0.0.2"; /* an IP is checked against IP SANs */
    tls_expect(f, &cfg, "127.0.0.1", "host-name mismatch");
}

static void test_tls_expired_certificate_and_insecure(void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = start_tls(f, "expired.pem", false, NULL);

    tls_expect(f, &cfg, "127.0.0.1", "certificate expired");
    cfg.ca_file = NULL;
    cfg.insecure = true;
    tls_expect(f, &cfg, "127.0.0.1", NULL);
}

static void test_mutual_tls_with_and_without_client_cert(void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = start_tls(f, "server.pem", true, NULL);

    tls_expect(f, &cfg, "127.0.0.1", "client certificate");
    cfg.cert_file = harness_cert("client.pem");
    cfg.key_file = harness_cert("client.key");
    tls_expect(f, &cfg, "127.0.0.1", NULL);
    /* Certificate and key in one file. */
    cfg.cert_file = harness_cert("client-both.pem");
    cfg.key_file = harness_cert("client-both.pem");
    tls_expect(f, &cfg, "127.0.0.1", NULL);
}

static void test_tls_with_acl_user_and_password(void **state)
{
    struct fx *f = *state;
    struct harness_opts o = {0};

    o.acl_user = "locker";
    o.acl_pass = "s3cret";
    start_tls_trusted(f, &o);
    f->c = open_conn(f, f->target, 2000, false);
    assert_true(command(f->c, &f->k[0], "AUTH", "locker", "wrong"));
    assert_true(command(f->c, &f->k[1], "AUTH", "locker", "s3cret"));
    assert_true(command(f->c, &f->k[2], "ACL", "WHOAMI", NULL));
    assert_true(spin_calls(f->loop, f->k, 3, 5000));
    assert_int_equal(f->k[0].type, REDIS_REPLY_ERROR); /* not down */
    assert_string_equal(f->k[1].str, "OK");
    assert_string_equal(f->k[2].str, "locker");
    assert_int_equal(f->w.closed, 0);
}

static void test_protocol_mismatch_fails_within_connect_timeout(
    void **state)
{
    struct fx *f = *state;
    struct tls_config cfg = {0};
    int64_t t0;

    start_tls(f, "server.pem", false, NULL);
    /* TLS client on the plaintext port. */
    cfg.insecure = true;
    make_ctx(f, &cfg, "127.0.0.1");
    tcp_addr(f, "127.0.0.1", f->r.port);
    t0 = harness_now_ms();
    expect_down(f, f->target, "TLS handshake");
    assert_true(harness_now_ms() - t0 < harness_scale_ms(2000) + 1000);
    fprintf(stderr, "  TLS client, plaintext port: %s\n", f->w.reason);
    /* Plaintext client on the TLS port. */
    tcp_addr(f, "127.0.0.1", f->r.tls_port);
    t0 = harness_now_ms();
    expect_down(f, NULL, "");
    assert_true(harness_now_ms() - t0 < harness_scale_ms(2000) + 1000);
    fprintf(stderr, "  plaintext client, TLS port: %s\n", f->w.reason);
    assert_true(strstr(f->w.reason, "TLS") != NULL);
}

static void test_tls_session_is_resumed_on_reconnect(void **state)
{
    struct fx *f = *state;

    start_tls_trusted(f, NULL);
    expect_pong(f, f->target);
    assert_false(conn_tls_resumed(f->c));
    expect_pong(f, f->target);
    assert_true(conn_tls_resumed(f->c));
    fprintf(stderr, "  resumed with %s\n", conn_tls_version(f->c));
    /* A restarted server does not know the ticket: a full handshake. */
    assert_int_equal(harness_restart(&f->r), 0);
    expect_pong(f, f->target);
    assert_false(conn_tls_resumed(f->c));
}

static void expect_config_error(const struct tls_config *cfg,
                                const char *want1, const char *want2)
{
    struct tls_ctx *ctx = (struct tls_ctx *)1;
    char err[RL_ERRLEN];

    assert_int_equal(tls_ctx_new(cfg, &ctx, err, sizeof(err)), RL_EINVAL);
    assert_null(ctx);
    fprintf(stderr, "  %s\n", err);
    assert_non_null(strstr(err, want1));
    if (want2 != NULL)
        assert_non_null(strstr(err, want2));
    assert_null(strstr(err, "BEGIN"));
    assert_null(strstr(err, "PRIVATE"));
}

static void test_tls_configuration_errors_name_the_file(void **state)
{
    struct tls_config cfg = {0};
    char bad[HARNESS_DIR_MAX + 32];
    FILE *fp;

    (void)state;
    cfg.ca_file = "/nonexistent/ca.pem";
    expect_config_error(&cfg, "/nonexistent/ca.pem", "No such file");
    cfg.ca_file = NULL;
    cfg.ca_dir = "/nonexistent/certs";
    expect_config_error(&cfg, "/nonexistent/certs", NULL);
    cfg.ca_dir = NULL;
    cfg.ca_file = harness_cert("client.key"); /* no certificate in it */
    expect_config_error(&cfg, "client.key", NULL);
    cfg.ca_file = harness_cert("ca.pem");
    cfg.cert_file = harness_cert("client.pem");
    expect_config_error(&cfg, "client.pem", "without a key");
    cfg.cert_file = NULL;
    cfg.key_file = harness_cert("client.key");
    expect_config_error(&cfg, "client.key", "without a certificate");
    cfg.cert_file = harness_cert("client.pem");
    cfg.key_file = harness_cert("server.key");
    expect_config_error(&cfg, "server.key", "does not match");
    snprintf(bad, sizeof(bad), "%s", harness_cert("garbage.key"));
    fp = fopen(bad, "w");
    assert_non_null(fp);
    fputs("-----BEGIN PRIVATE KEY-----\nnot a key\n", fp);
    fclose(fp);
    cfg.key_file = bad;
    expect_config_error(&cfg, "garbage.key", NULL);
    cfg.key_file = harness_cert("client.key");
    cfg.server_name = "";
    expect_config_error(&cfg, "server name", NULL);
    if (geteuid() != 0) {
        chmod(bad, 0);
        cfg.server_name = NULL;
        cfg.key_file = bad;
        expect_config_error(&cfg, "garbage.key", "Permission denied");
    }
    unlink(bad);
    tls_ctx_free(NULL);
    tls_target_free(NULL);
    conn_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_pipelined_requests_are_answered_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unix_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ipv6_loopback, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_connection_refused_is_reported_from_the_loop, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_pubsub_pushes_go_to_the_push_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_server_killed_answers_each_pending_request_once, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_owner_close_and_free_inside_a_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_handshake_bounded_by_connect_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_hostile_server_bytes_fail_the_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_pipelined_requests_and_version, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_verification_is_on_by_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_host_name_checks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tls_pubsub_pushes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_expired_certificate_and_insecure, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_mutual_tls_with_and_without_client_cert, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_with_acl_user_and_password, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_protocol_mismatch_fails_within_connect_timeout, setup,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_session_is_resumed_on_reconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_tls_configuration_errors_name_the_file, setup, teardown),
    };
    harness_require_redis();
    harness_require_certs();
    return cmocka_run_group_tests_name("conn", tests, NULL, NULL);
}
