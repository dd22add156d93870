/* SPDX-License-Identifier: BSD-3-Clause */
/* control.c -- the faultproxy control socket: one command per line, one
 * reply line per command ("ok ..." or "error <why>"), in order.
 *
 * Commands (README.md is the user-facing list):
 *   delay MS [JITTER_MS]   blackhole on|off   refuse on|off
 *   drop   reset   pass   stats   help   quit
 *
 * Owns every struct ctl_client (linked on proxy->ctls), its socket, its two
 * io watchers and its two fixed buffers. Memory per client is bounded: a
 * line longer than CTL_LINE_MAX is answered with an error and the client is
 * closed; a command is only run while the output buffer has room for its
 * reply, and the socket is not read while it has none, so a client that
 * pipelines commands without reading replies is simply slowed down.
 * A client is freed once it has sent EOF and every line it sent has been
 * answered and flushed, on any socket error, after an over-long line, or
 * by ctl_close_all() at shutdown.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "relay.h"

#define CTL_LINE_MAX 256        /* longest command line, bytes */
#define CTL_REPLY_MAX 160       /* longest reply line, bytes */
#define CTL_OUT_MAX 2048        /* output buffer, bytes */
#define CTL_ARGS_MAX 4          /* words kept per line; more is an error */

struct ctl_client {
    struct proxy *px;
    struct list_link link;      /* on px->ctls */
    int fd;
    ev_io rd;
    ev_io wr;
    bool eof;                   /* peer sent FIN: read no more */
    bool closing;               /* free once out is flushed */
    size_t in_len;              /* bytes in in */
    size_t out_len;             /* bytes in out */
    char in[CTL_LINE_MAX];
    char out[CTL_OUT_MAX];
};

static void ctl_free(struct ctl_client *cc)
{
    struct proxy *px = cc->px;

    ev_io_stop(px->loop, &cc->rd);
    ev_io_stop(px->loop, &cc->wr);
    fp_close(cc->fd, false);
    list_remove(&px->ctls, &cc->link);
    free(cc);
}

static void ctl_reply(struct ctl_client *cc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends one reply line. ctl_process() guarantees CTL_REPLY_MAX bytes of
 * room before each command; a longer reply is cut. */
static void ctl_reply(struct ctl_client *cc, const char *fmt, ...)
{
    size_t room = sizeof(cc->out) - cc->out_len;
    va_list ap;
    int n;

    if (room > CTL_REPLY_MAX)
        room = CTL_REPLY_MAX;
    va_start(ap, fmt);
    n = vsnprintf(cc->out + cc->out_len, room - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > room - 2)
        n = (int)(room - 2);
    cc->out[cc->out_len + (size_t)n] = '\n';
    cc->out_len += (size_t)n + 1;
}

static bool parse_onoff(const char *s, bool *on)
{
    if (strcmp(s, "on") == 0) {
        *on = true;
        return true;
    }
    if (strcmp(s, "off") == 0) {
        *on = false;
        return true;
    }
    return false;
}

static void cmd_delay(struct ctl_client *cc, int argc, char **argv)
{
    uint32_t delay_ms;
    uint32_t jitter_ms = 0;

    if (argc < 2 || argc > 3) {
        ctl_reply(cc, "error usage: delay MS [JITTER_MS]");
        return;
    }
    if (fp_parse_ms(argv[1], &delay_ms) < 0) {
        ctl_reply(cc, "error delay: '%.32s' is not 0..%u ms", argv[1],
                  FP_MAX_DELAY_MS);
        return;
    }
    if (argc == 3 && fp_parse_ms(argv[2], &jitter_ms) < 0) {
        ctl_reply(cc, "error jitter: '%.32s' is not 0..%u ms", argv[2],
                  FP_MAX_DELAY_MS);
        return;
    }
    /* Chunks already queued keep their due time; order is kept anyway. */
    cc->px->faults.delay_ms = delay_ms;
    cc->px->faults.jitter_ms = jitter_ms;
    ctl_reply(cc, "ok");
}

static void cmd_switch(struct ctl_client *cc, int argc, char **argv)
{
    struct proxy *px = cc->px;
    bool on;

    if (argc != 2 || !parse_onoff(argv[1], &on)) {
        ctl_reply(cc, "error usage: %s on|off", argv[0]);
        return;
    }
    if (strcmp(argv[0], "blackhole") == 0) {
        if (on != px->faults.blackhole)
            relay_set_blackhole(px, on);
    } else if (strcmp(argv[0], "hold") == 0) {
        if (on != px->faults.hold)
            relay_set_hold(px, on);
    } else {
        px->faults.refuse = on;
    }
    ctl_reply(cc, "ok");
}

/* Runs one command line (NUL-terminated, no newline) and queues its reply. */
static void ctl_command(struct ctl_client *cc, char *line)
{
    struct proxy *px = cc->px;
    char *argv[CTL_ARGS_MAX];
    char *save = NULL;
    char *word;
    int argc = 0;

    for (word = strtok_r(line, " \t\r", &save); word != NULL;
         word = strtok_r(NULL, " \t\r", &save)) {
        if (argc == CTL_ARGS_MAX) {
            ctl_reply(cc, "error too many arguments");
            return;
        }
        argv[argc++] = word;
    }
    if (argc == 0)
        return;
    if (strcmp(argv[0], "delay") == 0) {
        cmd_delay(cc, argc, argv);
    } else if (strcmp(argv[0], "blackhole") == 0 ||
               strcmp(argv[0], "hold") == 0 ||
               strcmp(argv[0], "refuse") == 0) {
        cmd_switch(cc, argc, argv);
    } else if (argc > 1) {
        if (strcmp(argv[0], "drop") == 0 || strcmp(argv[0], "reset") == 0 ||
            strcmp(argv[0], "pass") == 0 || strcmp(argv[0], "stats") == 0 ||
            strcmp(argv[0], "help") == 0 || strcmp(argv[0], "quit") == 0)
            ctl_reply(cc, "error usage: %s takes no argument", argv[0]);
        else
            ctl_reply(cc, "error unknown command '%.32s'", argv[0]);
    } else if (strcmp(argv[0], "drop") == 0) {
        relay_close_all(px, RELAY_FIN);
        ctl_reply(cc, "ok");
    } else if (strcmp(argv[0], "reset") == 0) {
        relay_close_all(px, RELAY_RST);
        ctl_reply(cc, "ok");
    } else if (strcmp(argv[0], "pass") == 0) {
        px->faults.delay_ms = 0;
        px->faults.jitter_ms = 0;
        px->faults.refuse = false;
        if (px->faults.hold)
            relay_set_hold(px, false);
        if (px->faults.blackhole)
            relay_set_blackhole(px, false);
        ctl_reply(cc, "ok");
    } else if (strcmp(argv[0], "stats") == 0) {
        ctl_reply(cc, "ok conns=%" PRIu64 " bytes_up=%" PRIu64
                  " bytes_down=%" PRIu64, px->nconns, px->bytes_up,
                  px->bytes_down);
    } else if (strcmp(argv[0], "help") == 0) {
        ctl_reply(cc, "ok delay MS [JITTER_MS] | blackhole on|off | "
                  "hold on|off | refuse on|off | drop | reset | pass | "
                  "stats | quit");
    } else if (strcmp(argv[0], "quit") == 0) {
        ctl_reply(cc, "ok");
        proxy_stop(px);
    } else {
        ctl_reply(cc, "error unknown command '%.32s'", argv[0]);
    }
}

static void ctl_watch(struct ctl_client *cc)
{
    struct ev_loop *loop = cc->px->loop;
    bool room = cc->out_len + CTL_REPLY_MAX <= sizeof(cc->out);
    bool rd = !cc->eof && !cc->closing && room &&
              cc->in_len < sizeof(cc->in);

    if (rd && !ev_is_active(&cc->rd))
        ev_io_start(loop, &cc->rd);
    else if (!rd && ev_is_active(&cc->rd))
        ev_io_stop(loop, &cc->rd);
    if (cc->out_len > 0 && !ev_is_active(&cc->wr))
        ev_io_start(loop, &cc->wr);
    else if (cc->out_len == 0 && ev_is_active(&cc->wr))
        ev_io_stop(loop, &cc->wr);
}

/* Sends what it can. Returns -1 when the client was freed (error, or
 * closing and fully flushed). */
static int ctl_flush(struct ctl_client *cc)
{
    while (cc->out_len > 0) {
        ssize_t n = send(cc->fd, cc->out, cc->out_len, MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            ctl_free(cc);
            return -1;
        }
        memmove(cc->out, cc->out + n, cc->out_len - (size_t)n);
        cc->out_len -= (size_t)n;
    }
    if (cc->closing) {
        ctl_free(cc);
        return -1;
    }
    return 0;
}

/* Runs every complete line while there is room for its reply, then
 * flushes. Returns -1 when the client was freed. */
static int ctl_process(struct ctl_client *cc)
{
    while (!cc->px->stopping &&
           cc->out_len + CTL_REPLY_MAX <= sizeof(cc->out)) {
        char *nl = memchr(cc->in, '\n', cc->in_len);
        size_t used;

        if (nl == NULL) {
            if (cc->in_len == sizeof(cc->in)) {
                ctl_reply(cc, "error line too long (max %d bytes)",
                          CTL_LINE_MAX - 1);
                cc->in_len = 0;
                cc->closing = true;
            }
            break;
        }
        *nl = '\0';
        used = (size_t)(nl - cc->in) + 1;
        ctl_command(cc, cc->in);
        memmove(cc->in, cc->in + used, cc->in_len - used);
        cc->in_len -= used;
    }
    if (cc->eof && cc->in_len == 0)
        cc->closing = true;
    if (ctl_flush(cc) < 0)
        return -1;
    ctl_watch(cc);
    return 0;
}

static void ctl_rd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct ctl_client *cc = w->data;
    ssize_t n;

    (void)loop;
    (void)revents;
    n = recv(cc->fd, cc->in + cc->in_len, sizeof(cc->in) - cc->in_len, 0);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        ctl_free(cc);
        return;
    }
    if (n == 0) {
        /* A last line without newline still counts. */
        if (cc->in_len > 0 && cc->in_len < sizeof(cc->in)) {
            cc->in[cc->in_len] = '\n';
            cc->in_len++;
        }
        cc->eof = true;
    } else {
        cc->in_len += (size_t)n;
    }
    (void)ctl_process(cc);
}

static void ctl_wr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct ctl_client *cc = w->data;

    (void)loop;
    (void)revents;
    if (ctl_flush(cc) < 0)
        return;
    (void)ctl_process(cc);
}

void ctl_accept(struct proxy *px, int fd)
{
    struct ctl_client *cc = fp_accepted_new(px, fd, sizeof(*cc),
                                            "control connection closed");

    if (cc == NULL)
        return;
    cc->px = px;
    cc->fd = fd;
    ev_io_init(&cc->rd, ctl_rd_cb, fd, EV_READ);
    ev_io_init(&cc->wr, ctl_wr_cb, fd, EV_WRITE);
    cc->rd.data = cc;
    cc->wr.data = cc;
    list_push_front(&px->ctls, &cc->link);
    ev_io_start(px->loop, &cc->rd);
}

void ctl_close_all(struct proxy *px)
{
    while (!list_empty(&px->ctls)) {
        struct ctl_client *cc =
            list_entry(px->ctls.first, struct ctl_client, link);

        /* Best effort: the reply to "quit" is usually still here. */
        if (cc->out_len > 0)
            (void)send(cc->fd, cc->out, cc->out_len, MSG_NOSIGNAL);
        ctl_free(cc);
    }
}
