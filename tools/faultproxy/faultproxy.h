/* SPDX-License-Identifier: BSD-3-Clause */
/* faultproxy.h -- state shared by the faultproxy modules.
 *
 * faultproxy is a single-threaded libev program. Its whole state is one
 * struct proxy owned by main() (faultproxy.c): the loop, the fault settings
 * the control socket changes, the upstream address resolved once at start,
 * the lists of relayed connections (relay.c) and control clients
 * (control.c), and the counters `stats` reports. Modules reach each other
 * only through the functions declared here and in relay.h / control.h.
 */
#ifndef FAULTPROXY_H
#define FAULTPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ev.h>

#include "list.h" /* src/list.h, header-only */

#define FP_MAX_DELAY_MS 3600000u               /* largest delay or jitter */
#define FP_QUEUE_CAP (16u * 1024u * 1024u)     /* bytes per direction */
#define FP_READ_CHUNK 65536                    /* bytes per recv() */
#define FP_CONNECT_TIMEOUT_MS 5000             /* upstream connect limit */

typedef uint64_t fp_mono_us;                   /* CLOCK_MONOTONIC, µs */

struct conn;
struct ctl_client;

/* Faults in force; changed at run time by the control socket. */
struct faults {
    uint32_t delay_ms;          /* added to every chunk, each direction */
    uint32_t jitter_ms;         /* +- uniform random on delay_ms */
    bool blackhole;             /* read everything, forward nothing */
    bool refuse;                /* reset new connections at once */
    bool hold;                  /* queue everything, forward nothing yet */
};

struct proxy {
    struct ev_loop *loop;
    struct faults faults;
    struct sockaddr_storage up_addr;    /* upstream, resolved at start */
    socklen_t up_addrlen;
    char up_name[96];                   /* upstream "host:port", messages */
    bool quiet;                         /* -q: nothing on stderr */
    bool stopping;                      /* quit or signal seen */
    struct list conns;                  /* relayed connections (relay.c) */
    struct list ctls;                   /* control clients (control.c) */
    uint64_t nconns;                    /* entries on conns */
    uint64_t bytes_up;                  /* written to upstream */
    uint64_t bytes_down;                /* written to clients */
    uint64_t rng;                       /* xorshift64 state for jitter */
    int listen_fd;
    int ctl_fd;
    ev_io listen_w;
    ev_io ctl_w;
    ev_timer accept_pause;              /* back-off after EMFILE */
    ev_signal sigint_w;
    ev_signal sigterm_w;
    char buf[FP_READ_CHUNK];            /* scratch for every recv() */
};

/* Current CLOCK_MONOTONIC time in microseconds. */
fp_mono_us mono_now_us(void);

/* One line "faultproxy: ..." on stderr unless -q. */
void fp_log(const struct proxy *px, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a decimal millisecond count 0..FP_MAX_DELAY_MS.
 * Returns 0, or -1 (and leaves *ms alone) on anything else. */
int fp_parse_ms(const char *s, uint32_t *ms);

/* Closes a socket. With rst, SO_LINGER 0 makes the kernel send RST;
 * without, unread input is drained first so that close() sends FIN
 * (Linux answers close() with RST while unread bytes remain). */
void fp_close(int fd, bool rst);

/* Zeroed memory of size bytes for the state of the accepted socket fd, or
 * NULL when out of memory: then fd is reset and the log says
 * "out of memory; <what>". */
void *fp_accepted_new(struct proxy *px, int fd, size_t size,
                      const char *what);

/* Stops accepting for a moment (EMFILE and friends). */
void proxy_accept_pause(struct proxy *px);

/* Ends the loop; main() then frees everything and exits 0. Safe from any
 * callback: nothing is freed before the callback returns. */
void proxy_stop(struct proxy *px);

#endif /* FAULTPROXY_H */
