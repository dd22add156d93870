/* SPDX-License-Identifier: BSD-3-Clause */
/* faultproxy.c -- a fault-injecting TCP proxy for the chaos tests:
 * entry point, options, listening sockets, signals.
 *
 * faultproxy sits between Redis clients and one redis-server and relays
 * bytes both ways, adding the faults a chaos profile asks for: latency with
 * jitter, a black hole, dropped (FIN) or reset (RST) connections, refused
 * new connections. Faults are set by options at start and changed at run
 * time through a line-based control socket (control.c); the relaying
 * itself is relay.c.
 *
 * This file owns struct proxy (one, static), the two listening sockets and
 * their watchers, the signal watchers and the libev loop. Lifecycle: parse
 * and resolve everything first (a bad option exits 2 before anything is
 * opened), bind both listeners, print the ready line
 * "listening HOST:PORT control HOST:PORT" on stdout, run the loop. `quit`,
 * SIGINT and SIGTERM only break the loop; main() then closes every relayed
 * connection (FIN), every control client and both listeners, destroys the
 * loop and exits 0, so a valgrind run ends with nothing allocated.
 * Single-threaded; every socket is non-blocking.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "faultproxy.h"
#include "relay.h"

#define ACCEPTS_PER_EVENT 64    /* accept() calls per readiness event */
#define ACCEPT_PAUSE_S 0.1      /* back-off after EMFILE, seconds */
#define DRAIN_MAX (1u << 20)    /* unread bytes drained before a FIN */
#define HOST_MAX 256            /* longest host part of HOST:PORT */

static const char usage_text[] =
"Usage: faultproxy --listen HOST:PORT --upstream HOST:PORT [OPTIONS]\n"
"\n"
"Relays TCP connections to one upstream server, injecting faults.\n"
"\n"
"Options:\n"
"  --listen HOST:PORT    accept clients here (port 0: any free port)\n"
"  --upstream HOST:PORT  relay every client connection to this server\n"
"  --control HOST:PORT   control socket (default: listen host, free port)\n"
"  --delay MS            hold every chunk MS ms, in each direction (0)\n"
"  --jitter MS           +- uniform random jitter on the delay (0)\n"
"  --blackhole           start black-holed (read all, forward nothing)\n"
"  -q, --quiet           print nothing on stderr\n"
"  -h, --help            this text\n"
"\n"
"Once ready, prints \"listening HOST:PORT control HOST:PORT\" on stdout.\n"
"Control socket: one command per line, reply \"ok ...\" or \"error WHY\":\n"
"  delay MS [JITTER_MS]  blackhole on|off  hold on|off  refuse on|off\n"
"  drop  reset  pass  stats  help  quit\n"
"IPv6 addresses go in brackets: [::1]:6379.\n";

struct options {
    const char *listen;
    const char *upstream;
    const char *control;
    uint32_t delay_ms;
    uint32_t jitter_ms;
    bool blackhole;
    bool quiet;
};

static struct proxy proxy;

fp_mono_us mono_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (fp_mono_us)ts.tv_sec * 1000000u + (fp_mono_us)ts.tv_nsec / 1000u;
}

void fp_log(const struct proxy *px, const char *fmt, ...)
{
    va_list ap;

    if (px->quiet)
        return;
    fputs("faultproxy: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int fp_parse_ms(const char *s, uint32_t *ms)
{
    uint64_t v = 0;
    const char *p;

    if (s == NULL || *s == '\0')
        return -1;
    for (p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
        if (v > FP_MAX_DELAY_MS)
            return -1;
    }
    *ms = (uint32_t)v;
    return 0;
}

void fp_close(int fd, bool rst)
{
    if (rst) {
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };

        (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    } else {
        size_t drained = 0;

        while (drained < DRAIN_MAX) {
            ssize_t n = recv(fd, proxy.buf, sizeof(proxy.buf), 0);

            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            drained += (size_t)n;
        }
    }
    close(fd);
}

void *fp_accepted_new(struct proxy *px, int fd, size_t size,
                      const char *what)
{
    void *p = calloc(1, size);

    if (p == NULL) {
        fp_log(px, "out of memory; %s", what);
        fp_close(fd, true);
    }
    return p;
}

static void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* One line on stderr, exit 2: the contract for every bad argument. */
static void usage_error(const char *fmt, ...)
{
    va_list ap;

    fputs("faultproxy: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(2);
}

/* Splits "host:port" or "[v6addr]:port". Returns NULL or what is wrong. */
static const char *hostport_split(const char *s, char *host, char *port,
                                  size_t port_cap)
{
    const char *colon;
    size_t hlen;

    if (s[0] == '[') {
        const char *close = strchr(s, ']');

        if (close == NULL || close[1] != ':')
            return "expected [ADDR]:PORT";
        hlen = (size_t)(close - s - 1);
        s++;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL)
            return "expected HOST:PORT";
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen) != NULL)
            return "IPv6 addresses need brackets: [ADDR]:PORT";
    }
    if (hlen == 0)
        return "empty host";
    if (hlen >= HOST_MAX)
        return "host too long";
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    if (strlen(colon + 1) >= port_cap)
        return "port is not 0..65535";
    strcpy(port, colon + 1);
    return NULL;
}

/* Resolves option opt's HOST:PORT value to its first address; exits 2
 * naming the option on any error. Upstream ports must not be 0. */
static void resolve(const char *opt, const char *value, bool passive,
                    struct sockaddr_storage *ss, socklen_t *len)
{
    char host[HOST_MAX];
    char port[8];
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    const char *why;
    uint32_t portnum = 0;
    const char *p;
    int rc;

    why = hostport_split(value, host, port, sizeof(port));
    if (why != NULL)
        usage_error("%s '%s': %s", opt, value, why);
    for (p = port; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            break;
        portnum = portnum * 10 + (uint32_t)(*p - '0');
    }
    if (port[0] == '\0' || *p != '\0' || portnum > 65535 ||
        (!passive && portnum == 0))
        usage_error("%s '%s': port is not %s..65535", opt, value,
                    passive ? "0" : "1");
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0)
        usage_error("%s '%s': %s", opt, value, gai_strerror(rc));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
}

/* Takes the value of option argv[*i] ("--opt VALUE" or "--opt=VALUE").
 * Returns NULL when argv[*i] is not opt. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt)
{
    const char *arg = argv[*i];
    size_t n = strlen(opt);

    if (strncmp(arg, opt, n) != 0)
        return NULL;
    if (arg[n] == '=')
        return arg + n + 1;
    if (arg[n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        usage_error("%s needs a value", opt);
    (*i)++;
    return argv[*i];
}

static void parse_ms_opt(const char *opt, const char *value, uint32_t *ms)
{
    if (fp_parse_ms(value, ms) < 0)
        usage_error("%s '%s': expected milliseconds 0..%u", opt, value,
                    FP_MAX_DELAY_MS);
}

static void parse_args(int argc, char **argv, struct options *o)
{
    int i;

    memset(o, 0, sizeof(*o));
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *v;

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (strcmp(arg, "-q") == 0 || strcmp(arg, "--quiet") == 0) {
            o->quiet = true;
        } else if (strcmp(arg, "--blackhole") == 0) {
            o->blackhole = true;
        } else if ((v = opt_value(argc, argv, &i, "--listen")) != NULL) {
            o->listen = v;
        } else if ((v = opt_value(argc, argv, &i, "--upstream")) != NULL) {
            o->upstream = v;
        } else if ((v = opt_value(argc, argv, &i, "--control")) != NULL) {
            o->control = v;
        } else if ((v = opt_value(argc, argv, &i, "--delay")) != NULL) {
            parse_ms_opt("--delay", v, &o->delay_ms);
        } else if ((v = opt_value(argc, argv, &i, "--jitter")) != NULL) {
            parse_ms_opt("--jitter", v, &o->jitter_ms);
        } else {
            usage_error("unknown option '%s'", arg);
        }
    }
    if (o->listen == NULL)
        usage_error("--listen HOST:PORT is required");
    if (o->upstream == NULL)
        usage_error("--upstream HOST:PORT is required");
}

/* Formats a bound socket's address as HOST:PORT ([HOST]:PORT for IPv6). */
static void sock_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char host[NI_MAXHOST];
    char port[NI_MAXSERV];

    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
        getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port,
                    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, cap, "?");
        return;
    }
    if (ss.ss_family == AF_INET6)
        snprintf(out, cap, "[%s]:%s", host, port);
    else
        snprintf(out, cap, "%s:%s", host, port);
}

/* Opens a non-blocking listening socket; exits 1 naming opt on failure. */
static int listen_open(const char *opt, const char *value,
                       const struct sockaddr_storage *ss, socklen_t len)
{
    int one = 1;
    int fd;

    fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)ss, len) < 0 ||
        listen(fd, 128) < 0)
        goto fail_close;
    return fd;

fail_close:
    {
        int err = errno;

        close(fd);
        errno = err;
    }
fail:
    fprintf(stderr, "faultproxy: %s %s: %s\n", opt, value, strerror(errno));
    exit(1);
}

void proxy_accept_pause(struct proxy *px)
{
    ev_io_stop(px->loop, &px->listen_w);
    ev_io_stop(px->loop, &px->ctl_w);
    if (!ev_is_active(&px->accept_pause))
        ev_timer_start(px->loop, &px->accept_pause);
}

static void accept_resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct proxy *px = w->data;

    (void)revents;
    ev_io_start(loop, &px->listen_w);
    ev_io_start(loop, &px->ctl_w);
}

static void accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct proxy *px = w->data;
    bool control = w == &px->ctl_w;
    int i;

    (void)loop;
    (void)revents;
    for (i = 0; i < ACCEPTS_PER_EVENT && !px->stopping; i++) {
        int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                fp_log(px, "accept: %s; pausing", strerror(errno));
                proxy_accept_pause(px);
            }
            return;
        }
        if (control)
            ctl_accept(px, fd);
        else
            relay_accept(px, fd);
    }
}

void proxy_stop(struct proxy *px)
{
    px->stopping = true;
    ev_break(px->loop, EVBREAK_ALL);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    proxy_stop(w->data);
}

/* The control socket defaults to the listen host on a free port. */
static const char *default_control(const char *listen, char *buf, size_t cap)
{
    const char *colon = strrchr(listen, ':');

    snprintf(buf, cap, "%.*s:0", (int)(colon - listen), listen);
    return buf;
}

int main(int argc, char **argv)
{
    struct proxy *px = &proxy;
    struct options o;
    struct sockaddr_storage listen_ss;
    struct sockaddr_storage ctl_ss;
    socklen_t listen_len;
    socklen_t ctl_len;
    char ctl_default[HOST_MAX + 8];
    char listen_name[NI_MAXHOST + NI_MAXSERV + 4];
    char ctl_name[NI_MAXHOST + NI_MAXSERV + 4];

    parse_args(argc, argv, &o);
    resolve("--listen", o.listen, true, &listen_ss, &listen_len);
    if (o.control == NULL)
        o.control = default_control(o.listen, ctl_default,
                                    sizeof(ctl_default));
    resolve("--control", o.control, true, &ctl_ss, &ctl_len);
    resolve("--upstream", o.upstream, false, &px->up_addr, &px->up_addrlen);

    snprintf(px->up_name, sizeof(px->up_name), "%s", o.upstream);
    px->quiet = o.quiet;
    px->faults.delay_ms = o.delay_ms;
    px->faults.jitter_ms = o.jitter_ms;
    px->faults.blackhole = o.blackhole;
    px->rng = mono_now_us() ^ ((uint64_t)getpid() << 32) ^
              0x9e3779b97f4a7c15u;
    if (px->rng == 0)
        px->rng = 1;

    signal(SIGPIPE, SIG_IGN);
    px->loop = ev_default_loop(EVFLAG_AUTO);
    if (px->loop == NULL) {
        fprintf(stderr, "faultproxy: cannot initialise libev\n");
        return 1;
    }
    px->listen_fd = listen_open("--listen", o.listen, &listen_ss, listen_len);
    px->ctl_fd = listen_open("--control", o.control, &ctl_ss, ctl_len);

    ev_io_init(&px->listen_w, accept_cb, px->listen_fd, EV_READ);
    ev_io_init(&px->ctl_w, accept_cb, px->ctl_fd, EV_READ);
    ev_timer_init(&px->accept_pause, accept_resume_cb, ACCEPT_PAUSE_S, 0.);
    ev_signal_init(&px->sigint_w, signal_cb, SIGINT);
    ev_signal_init(&px->sigterm_w, signal_cb, SIGTERM);
    px->listen_w.data = px;
    px->ctl_w.data = px;
    px->accept_pause.data = px;
    px->sigint_w.data = px;
    px->sigterm_w.data = px;
    ev_io_start(px->loop, &px->listen_w);
    ev_io_start(px->loop, &px->ctl_w);
    ev_signal_start(px->loop, &px->sigint_w);
    ev_signal_start(px->loop, &px->sigterm_w);

    sock_name(px->listen_fd, listen_name, sizeof(listen_name));
    sock_name(px->ctl_fd, ctl_name, sizeof(ctl_name));
    printf("listening %s control %s\n", listen_name, ctl_name);
    fflush(stdout);

    ev_run(px->loop, 0);

    relay_close_all(px, RELAY_FIN);
    ctl_close_all(px);
    ev_io_stop(px->loop, &px->listen_w);
    ev_io_stop(px->loop, &px->ctl_w);
    ev_timer_stop(px->loop, &px->accept_pause);
    ev_signal_stop(px->loop, &px->sigint_w);
    ev_signal_stop(px->loop, &px->sigterm_w);
    close(px->listen_fd);
    close(px->ctl_fd);
    ev_loop_destroy(px->loop);
    return 0;
}
