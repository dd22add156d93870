/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target: bytes from a hostile server through the connection
 * layer's read path (src/conn.c; issue 11 item 5). Input: byte 0 chooses
 * the set-up (bit 0 subscriber mode, bits 1-3 how many PINGs are queued,
 * bit 4 a 256-byte reply limit); the rest is what the "server" sends,
 * over a real unix socket, before it half-closes. Malformed RESP, huge
 * bulk lengths, deep nesting, replies nobody asked for: nothing may
 * crash, leak or hang, every queued request is answered exactly once,
 * on_close runs exactly once, and the connection ends CLOSED. */
#include <ev.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"

#define MAX_REQUESTS 7
#define MAX_ITERATIONS 10000 /* loop turns before a hang is declared */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ev_loop *loop;
static int listen_fd = -1;
static char dir[64];
static char path[96];

static void cleanup(void)
{
    if (listen_fd >= 0)
        close(listen_fd);
    unlink(path);
    rmdir(dir);
    if (loop != NULL)
        ev_loop_destroy(loop);
}

static void init(void)
{
    struct sockaddr_un sun = {0};

    snprintf(dir, sizeof(dir), "/tmp/rl-fuzz-XXXXXX");
    if (mkdtemp(dir) == NULL)
        abort();
    snprintf(path, sizeof(path), "%s/s", dir);
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 ||
        bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
        listen(listen_fd, 16) != 0)
        abort();
    loop = ev_loop_new(EVFLAG_AUTO);
    if (loop == NULL)
        abort();
    atexit(cleanup);
}

static void on_reply(struct conn *c, const struct redisReply *reply,
                     const char *down, void *privdata)
{
    int *calls = privdata;

    (void)c;
    if ((reply == NULL) == (down == NULL))
        abort(); /* exactly one of them */
    (*calls)++;
}

static void on_close(struct conn *c, const char *reason, void *privdata)
{
    int *closed = privdata;

    if (reason == NULL || reason[0] == '\0' || conn_pending(c) != 0)
        abort();
    (*closed)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *ping[1] = {"PING"};
    size_t ping_len = 4;
    int calls[MAX_REQUESTS] = {0};
    struct node_addr addr = {0};
    struct conn_opts o = {0};
    struct conn *c;
    int closed = 0, nreq, i, sfd;
    size_t off = 0;
    ssize_t n;

    if (loop == NULL)
        init();
    if (size == 0)
        return 0;
    addr.kind = ADDR_UNIX;
    addr.path = path;
    o.addr = &addr;
    o.connect_timeout_ms = 5000;
    o.subscriber = data[0] & 1;
    o.max_reply_bytes = (data[0] & 16) ? 256 : 0;
    o.on_close = on_close;
    o.privdata = &closed;
    nreq = (data[0] >> 1) & 7;
    c = conn_new(loop, &o);
    if (c == NULL)
        abort();
    for (i = 0; i < nreq; i++) {
        if (!conn_command(c, 1, ping, &ping_len, on_reply, &calls[i]))
            abort();
    }
    sfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (sfd < 0)
        abort();
    while (off < size - 1) {
        n = write(sfd, data + 1 + off, size - 1 - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    shutdown(sfd, SHUT_WR);
    for (i = 0; i < MAX_ITERATIONS && closed == 0; i++)
        ev_run(loop, EVRUN_ONCE);
    if (closed != 1 || conn_get_state(c) != CONN_CLOSED)
        abort();
    for (i = 0; i < nreq; i++) {
        if (calls[i] != 1)
            abort();
    }
    conn_free(c);
    close(sfd);
    if (closed != 1)
        abort();
    return 0;
}
