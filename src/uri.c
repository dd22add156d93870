/* SPDX-License-Identifier: BSD-3-Clause */
/* uri.c -- node addresses: parsing the URI forms listed above
 * rl_config.nodes (host names are resolved by resolver.c).
 *
 * Owns struct node_addr and every string in it, and the public rl_uri_*
 * calls (one URI parser, for the library and its tools).
 * uri_parse() works in two passes: the first only validates and records
 * pointers into the input, the second allocates. So a bad URI never allocates, and an allocation failure
 * frees what the second pass built; either way *out is left zeroed.
 *
 * User info ends at the LAST '@' (host, port, db and path hold none), so a
 * password may hold raw '/', '?', '#', ':' and '@'; the user name ends at
 * its first ':'. find_secrets() + redact() mask, in any string (valid URI
 * or not), every span that may be a password; rl_uri_describe() (public,
 * used by redlock-cli) and every parse error quote URIs through them.
 *
 * Invariants kept for every message written to err:
 *   - it is one line (control characters become '?');
 *   - it quotes the URI as rl_uri_describe() shows it, and no detail ever
 *     echoes a masked span, so neither a password nor a mistyped one
 *     reaches a log;
 *   - it says what is wrong in words a user can act on.
 * display is built from host/port/path/db only, so it can never hold a
 * password. Passwords are wiped before their memory is freed.

 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "uri.h"

#define URI_DEFAULT_PORT 6379
#define URI_MAX_HOST 255
#define URI_QUOTE_MAX 96 /* longest quoted URI in a message, bytes */
#define URI_TOKEN_MAX 40 /* longest echoed piece of a URI, bytes */

/* Longest socket path connect() accepts (sun_path holds the NUL too). */
#define URI_MAX_PATH (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* What the validating pass found: pointers into the caller's string. */
struct uri_parts {
    enum addr_kind kind;
    const char *host; /* TCP: without [] */
    size_t host_len;
    const char *path; /* UNIX */
    size_t path_len;
    const char *user; /* still percent-encoded; NULL when absent */
    size_t user_len;
    const char *pass; /* still percent-encoded; NULL when absent */
    size_t pass_len;
    int port;
    int db;
    bool tls;         /* rediss:// */
};

/* The parts of a URI that may hold a secret, as uri_redact() masks them:
 * [hide_from, hide_to) is the user info (or its password), and everything
 * from tail to the end is text after a ':' or '?' that is neither a port
 * nor "db=" (a URI missing its '@', or a "?password=" query). */
struct secret_spans {
    const char *hide_from; /* NULL when none */
    const char *hide_to;
    const char *tail; /* NULL when none */
};

/* Message context of one uri_parse() call. */
struct parse_ctx {
    const char *uri;
    struct secret_spans spans;
    char quoted[URI_QUOTE_MAX + 2]; /* masked, maybe cut, URI */
    char *err;
    size_t errlen;
};

/* Replace anything that could break the one-line rule. */
static void sanitize_line(char *s)
{
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch < 0x20 || ch == 0x7f)
            *s = '?';
    }
}

rl_status uri_error(char *err, size_t errlen, rl_status st,
                    const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return st;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    sanitize_line(err);
    return st;
}

/* RL_EINVAL with "node URI '<masked>': <detail>". */
static rl_status bad(struct parse_ctx *c, const char *fmt, ...)
    RL_PRINTF(2, 3);

static rl_status bad(struct parse_ctx *c, const char *fmt, ...)
{
    char detail[RL_ERRLEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return uri_error(c->err, c->errlen, RL_EINVAL, "node URI '%s': %s",
                   c->quoted, detail);
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* True when every '%' in s[0..n) starts a valid escape other than %00. */
static bool pct_valid(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (s[i] != '%')
            continue;
        if (i + 2 >= n)
            return false;
        if (hex_value(s[i + 1]) < 0 || hex_value(s[i + 2]) < 0)
            return false;
        if (s[i + 1] == '0' && s[i + 2] == '0')
            return false;
        i += 2;
    }
    return true;
}

/* Length of the token at s that ends at any byte of stops or at the end. */
static size_t token_len(const char *s, const char *stops)
{
    return strcspn(s, stops);
}

/* "::1", "fe80::1:6379": two or more ':' and only hex digits, ':' and
 * '.' up to the end of the authority. */
static bool looks_like_bare_v6(const char *s)
{
    size_t n = token_len(s, "/?#");
    size_t colons = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (s[i] == ':')
            colons++;
        else if (hex_value(s[i]) < 0 && s[i] != '.')
            return false;
    }
    return colons >= 2;
}

/* Length of a URI scheme ending at sep ("://"), or 0 when the text before
 * sep is not one (letters, digits, '+', '-', '.', first a letter): then a
 * "://" inside a password does not pass for a scheme. */
static size_t scheme_len(const char *uri, const char *sep)
{
    const char *p;

    if (sep == NULL || sep == uri || !isalpha((unsigned char)uri[0]))
        return 0;
    for (p = uri; p < sep; p++) {
        if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' &&
            *p != '.')
            return 0;
    }
    return (size_t)(sep - uri);
}

/* Find what uri_redact() masks in any string, valid URI or not:
 *   - the user info, which ends at the LAST '@' (host, port, db and path
 *     hold none, so a password may hold raw '/', '?', '#', ':' and '@'):
 *     with a scheme and a ':' in it only the password after the first ':'
 *     (the user name stays), otherwise all of it. A "unix://" URI whose
 *     path starts right after "//" has no user info (a path may hold '@').
 *   - after the host, a ':' followed by anything but digits up to the path
 *     ("redis://user:secret" lacks its "@host"; a comma in a password
 *     splits a node list there): from that ':' on, all of it. A host that
 *     is an unbracketed IPv6 address is left for the parser to name.
 *   - a query parameter other than "db=" ("?password=..."): from it on. */
static void find_secrets(const char *uri, struct secret_spans *sp)
{
    const char *sep = strstr(uri, "://");
    size_t slen = scheme_len(uri, sep);
    const char *auth = slen > 0 ? sep + 3 : uri;
    const char *rest = auth;
    const char *at = strrchr(auth, '@');
    const char *p;
    const char *q;

    memset(sp, 0, sizeof(*sp));
    if (slen == 4 && strncasecmp(uri, "unix", 4) == 0 && auth[0] == '/')
        at = NULL;
    if (at != NULL) {
        p = memchr(auth, ':', (size_t)(at - auth));
        sp->hide_from = slen > 0 && p != NULL ? p + 1 : auth;
        sp->hide_to = at;
        rest = at + 1;
    }
    if (rest[0] == '[') {
        p = strchr(rest, ']');
        p = p != NULL ? p + 1 : rest + strlen(rest);
    } else {
        p = rest + token_len(rest, ":/?#");
    }
    if (*p == ':' && !looks_like_bare_v6(rest)) {
        size_t n = token_len(p + 1, "/?#");
        size_t i;

        for (i = 0; i < n; i++) {
            if (!is_digit(p[1 + i])) {
                sp->tail = p + 1;
                return;
            }
        }
    }
    q = strchr(p, '?');
    if (q == NULL)
        return;
    q++;
    while (strncmp(q, "db=", 3) == 0) {
        q += token_len(q, "&");
        if (*q == '\0')
            return;
        q++;
    }
    if (*q != '\0')
        sp->tail = q;
}

static void append(char *buf, size_t cap, size_t *used, const char *s,
                   size_t n)
{
    if (*used < cap)
        memcpy(buf + *used, s, n < cap - *used ? n : cap - *used);
    *used += n;
}

/* Write uri into buf (cap bytes, NUL-terminated when cap > 0) with the
 * spans of sp replaced by "***" and control characters by '?'. Returns
 * the length of the whole result, as snprintf does. */
static size_t redact(const char *uri, const struct secret_spans *sp,
                     char *buf, size_t cap)
{
    const char *end = sp->tail != NULL ? sp->tail : uri + strlen(uri);
    size_t used = 0;
    size_t i;

    if (sp->hide_to != NULL) {    /* always before tail */
        append(buf, cap, &used, uri, (size_t)(sp->hide_from - uri));
        if (sp->hide_to > sp->hide_from)
            append(buf, cap, &used, "***", 3);
        append(buf, cap, &used, sp->hide_to, (size_t)(end - sp->hide_to));
    } else {
        append(buf, cap, &used, uri, (size_t)(end - uri));
    }
    if (sp->tail != NULL)
        append(buf, cap, &used, "***", 3);
    if (cap == 0)
        return used;
    buf[used < cap ? used : cap - 1] = '\0';
    for (i = 0; buf[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)buf[i];

        if (ch < 0x20 || ch == 0x7f)
            buf[i] = '?';
    }
    return used;
}

/* Fill c->quoted with the redacted URI, cut to URI_QUOTE_MAX bytes, and
 * record its secret spans for echo(). */
static void quote_uri(struct parse_ctx *c)
{
    size_t n;

    find_secrets(c->uri, &c->spans);
    n = redact(c->uri, &c->spans, c->quoted, sizeof(c->quoted));
    if (n > URI_QUOTE_MAX)
        memcpy(c->quoted + URI_QUOTE_MAX - 3, "...", 4);
}

/* A piece of the URI a detail may quote: "***" when it touches a secret
 * span, shortened when long. Use as "%.*s" with *len. */
static const char *echo(const struct parse_ctx *c, const char *p, size_t n,
                        int *len)
{
    const struct secret_spans *sp = &c->spans;

    if ((sp->hide_to != NULL && p < sp->hide_to && p + n > sp->hide_from) ||
        (sp->tail != NULL && p + n > sp->tail)) {
        *len = 3;
        return "***";
    }
    *len = (int)(n > URI_TOKEN_MAX ? URI_TOKEN_MAX : n);
    return p;
}

/* Unsigned decimal s[0..n) into *out: 0, or -1 when empty or not all
 * digits, or -2 when above max. */
static int parse_uint(const char *s, size_t n, long max, long *out)
{
    long v = 0;
    size_t i;

    if (n == 0)
        return -1;
    for (i = 0; i < n; i++) {
        if (!is_digit(s[i]))
            return -1;
    }
    for (i = 0; i < n; i++) {
        int d = s[i] - '0';

        if (v > (max - d) / 10)
            return -2;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static rl_status parse_port(struct parse_ctx *c, const char *s, size_t n,
                            int *port)
{
    long v = 0;
    int len;
    const char *t = echo(c, s, n, &len);
    int r = parse_uint(s, n, 65535, &v);

    if (r == -1 && t != s)
        return bad(c, "the text after ':' is not a port number (not "
                      "shown: it may be a password missing its '@host')");
    if (r == -1)
        return bad(c, "port '%.*s' is not a number", len, t);
    if (r == -2 || v == 0)
        return bad(c, "port %.*s is out of range (1..65535)", len, t);
    *port = (int)v;
    return RL_OK;
}

static rl_status parse_db(struct parse_ctx *c, const char *s, size_t n,
                          int *db)
{
    long v = 0;
    int len;
    const char *t = echo(c, s, n, &len);
    int r;

    if (n > 1 && s[0] == '-' && parse_uint(s + 1, n - 1, LONG_MAX, &v) != -1)
        return bad(c, "db %.*s is negative", len, t);
    r = parse_uint(s, n, INT_MAX, &v);
    if (r == -1)
        return bad(c, "db '%.*s' is not a number", len, t);
    if (r == -2)
        return bad(c, "db %.*s is out of range (0..%d)", len, t, INT_MAX);
    *db = (int)v;
    return RL_OK;
}

static bool host_char_ok(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           is_digit(ch) || ch == '-' || ch == '.' || ch == '_';
}

/* Host at *sp: "[v6]" or a name / IPv4 address made of letters, digits,
 * '-', '.' and '_'. Leaves *sp just past it. */
static rl_status parse_host(struct parse_ctx *c, const char **sp,
                            struct uri_parts *u)
{
    const char *s = *sp;
    const char *rbracket;
    char v6[INET6_ADDRSTRLEN];
    struct in6_addr probe;
    size_t n;
    size_t i;
    int len;
    const char *t;

    if (*s == '[') {
        rbracket = strchr(s, ']');
        if (rbracket == NULL)
            return bad(c, "unterminated '[' (write IPv6 as [addr]:port)");
        n = (size_t)(rbracket - s - 1);
        if (n == 0)
            return bad(c, "missing host: '[]' is empty");
        t = echo(c, s + 1, n, &len);
        if (n >= sizeof(v6))
            return bad(c, "'%.*s' is not an IPv6 address", len, t);
        memcpy(v6, s + 1, n);
        v6[n] = '\0';
        if (inet_pton(AF_INET6, v6, &probe) != 1)
            return bad(c, "'%.*s' is not an IPv6 address", len, t);
        u->host = s + 1;
        u->host_len = n;
        *sp = rbracket + 1;
        return RL_OK;
    }
    n = token_len(s, ":/?#");
    if (looks_like_bare_v6(s))
        return bad(c, "IPv6 addresses must be in brackets: [addr]:port");
    if (n == 0)
        return bad(c, "missing host");
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];

        if (host_char_ok(s[i]))
            continue;
        if (ch > 0x20 && ch < 0x7f)
            return bad(c, "invalid character '%c' in host", s[i]);
        return bad(c, "invalid byte 0x%02x in host", ch);
    }
    if (n > URI_MAX_HOST)
        return bad(c, "host name is longer than %d bytes", URI_MAX_HOST);
    u->host = s;
    u->host_len = n;
    *sp = s + n;
    return RL_OK;
}

/* ":port" at *sp (or no colon: *port keeps its default). */
static rl_status parse_opt_port(struct parse_ctx *c, const char **sp,
                                int *port)
{
    const char *s = *sp;
    size_t n;
    rl_status st;

    if (*s != ':')
        return RL_OK;
    s++;
    n = token_len(s, "/?#");
    if (n == 0)
        return bad(c, "missing port after ':'");
    st = parse_port(c, s, n, port);
    if (st != RL_OK)
        return st;
    *sp = s + n;
    return RL_OK;
}

static rl_status trailing(struct parse_ctx *c, const char *s,
                          const char *after)
{
    int len;
    const char *t = echo(c, s, strlen(s), &len);

    return bad(c, "unexpected '%.*s' after %s", len, t, after);
}

/* The part after "redis://" or "rediss://". */
static rl_status parse_redis(struct parse_ctx *c, const char *s,
                             struct uri_parts *u)
{
    const char *at = strrchr(s, '@');
    const char *colon;
    const char *after = "port";
    size_t n;
    rl_status st;

    if (at != NULL) {
        colon = memchr(s, ':', (size_t)(at - s));
        if (colon == NULL && at == s)
            return bad(c, "empty user info before '@'");
        if (colon == NULL)
            return bad(c, "user info needs a ':' (redis://:password@host "
                          "or redis://user:password@host)");
        if (colon + 1 == at)
            return bad(c, "empty password after ':'");
        if (colon > s) {
            u->user = s;
            u->user_len = (size_t)(colon - s);
            if (!pct_valid(u->user, u->user_len))
                return bad(c, "bad percent escape in user name (write "
                          "'%%' as %%25)");
        }
        u->pass = colon + 1;
        u->pass_len = (size_t)(at - colon - 1);
        if (!pct_valid(u->pass, u->pass_len))
            return bad(c, "bad percent escape in password (write '%%' "
                      "as %%25)");
        s = at + 1;
    }
    if (*s == '\0' || *s == '/')
        return bad(c, "missing host");
    st = parse_host(c, &s, u);
    if (st != RL_OK)
        return st;
    if (*s != '\0' && *s != ':' && *s != '/')
        return trailing(c, s, "host");
    st = parse_opt_port(c, &s, &u->port);
    if (st != RL_OK)
        return st;
    if (*s == '/') {
        s++;
        n = token_len(s, "/?#");
        if (n > 0) {
            st = parse_db(c, s, n, &u->db);
            if (st != RL_OK)
                return st;
        }
        s += n;
        after = "db";
    }
    if (*s != '\0')
        return trailing(c, s, after);
    return RL_OK;
}

/* The part after "unix://": an absolute path, then optionally "?db=N". */
static rl_status parse_unix(struct parse_ctx *c, const char *s,
                            struct uri_parts *u)
{
    size_t n = token_len(s, "?");
    const char *q;
    rl_status st;

    u->kind = ADDR_UNIX;
    u->port = 0;
    if (n == 0)
        return bad(c, "empty socket path (write unix:///absolute/path)");
    if (s[0] != '/')
        return bad(c, "socket path must be absolute (unix:///path)");
    if (s[n - 1] == '/')
        return bad(c, "socket path ends with '/'");
    if (n > URI_MAX_PATH)
        return bad(c, "socket path is longer than %zu bytes", URI_MAX_PATH);
    u->path = s;
    u->path_len = n;
    if (s[n] == '\0')
        return RL_OK;
    q = s + n + 1;
    if (*q == '\0')
        return bad(c, "empty query after '?' (only ?db=N is supported)");
    if (strncmp(q, "db=", 3) != 0) {
        int len;
        const char *t = echo(c, q, token_len(q, "&#"), &len);

        return bad(c, "unsupported query '%.*s' (only ?db=N is supported)",
                   len, t);
    }
    q += 3;
    n = token_len(q, "&#");
    if (n == 0)
        return bad(c, "missing db after 'db='");
    st = parse_db(c, q, n, &u->db);
    if (st != RL_OK)
        return st;
    if (q[n] != '\0')
        return trailing(c, q + n, "db");
    return RL_OK;
}

/* "host:port" or "[v6]:port": the port is required here, since a bare
 * word is more likely a mistake than a wish for the default port. */
static rl_status parse_bare(struct parse_ctx *c, const char *s,
                            struct uri_parts *u)
{
    rl_status st;

    if (strchr(s, '@') != NULL)
        return bad(c, "credentials need a redis:// URI "
                      "(redis://:password@host:port)");
    if (strncasecmp(s, "unix:/", 6) == 0)
        return bad(c, "unix sockets are written unix:///absolute/path");
    st = parse_host(c, &s, u);
    if (st != RL_OK)
        return st;
    if (*s == '\0')
        return bad(c, "missing port: expected host:port or a redis:// URI");
    if (*s != ':')
        return trailing(c, s, "host");
    st = parse_opt_port(c, &s, &u->port);
    if (st != RL_OK)
        return st;
    if (*s != '\0')
        return trailing(c, s, "port");
    return RL_OK;
}

static void wipe(char *s)
{
    volatile char *p = s;

    if (s == NULL)
        return;
    while (*p != '\0')
        *p++ = '\0';
}

static char *dup_range(const char *s, size_t n)
{
    char *copy = malloc(n + 1);

    if (copy == NULL)
        return NULL;
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

/* Decode s[0..n), already checked by pct_valid(). */
static char *pct_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    size_t i;
    size_t j = 0;

    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        if (s[i] == '%') {
            out[j++] = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

/* "unix:/path", "host:port" or "[v6]:port", then "/db" unless db is 0. */
static char *make_display(const struct node_addr *a)
{
    char tail[32] = "";
    const char *name;
    const char *lbr = "";
    const char *rbr = "";
    char *buf;
    int n;

    if (a->kind == ADDR_UNIX) {
        name = a->path;
    } else {
        name = a->host;
        if (strchr(name, ':') != NULL) {
            lbr = "[";
            rbr = "]";
        }
        snprintf(tail, sizeof(tail), ":%d", a->port);
    }
    if (a->db != 0)
        snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail), "/%d",
                 a->db);
    n = snprintf(NULL, 0, "%s%s%s%s%s", a->kind == ADDR_UNIX ? "unix:" : "",
                 lbr, name, rbr, tail);
    buf = malloc((size_t)n + 1);
    if (buf != NULL)
        snprintf(buf, (size_t)n + 1, "%s%s%s%s%s",
                 a->kind == ADDR_UNIX ? "unix:" : "", lbr, name, rbr,
                 tail);
    return buf;
}

/* Second pass: copy what the first pass found into *out. */
static rl_status build(const struct uri_parts *u, struct node_addr *out)
{
    out->kind = u->kind;
    out->tls = u->tls;
    out->port = u->port;
    out->db = u->db;
    if (u->kind == ADDR_TCP) {
        out->host = dup_range(u->host, u->host_len);
        if (out->host == NULL)
            goto out_nomem;
    } else {
        out->path = dup_range(u->path, u->path_len);
        if (out->path == NULL)
            goto out_nomem;
    }
    if (u->user != NULL) {
        out->user = pct_decode(u->user, u->user_len);
        if (out->user == NULL)
            goto out_nomem;
    }
    if (u->pass != NULL) {
        out->password = pct_decode(u->pass, u->pass_len);
        if (out->password == NULL)
            goto out_nomem;
    }
    out->display = make_display(out);
    if (out->display == NULL)
        goto out_nomem;
    return RL_OK;

out_nomem:
    node_addr_clear(out);
    return RL_ENOMEM;
}

rl_status uri_parse(const char *uri, struct node_addr *out, char *err,
                    size_t errlen)
{
    struct parse_ctx c;
    struct uri_parts u;
    const char *sep;
    size_t scheme_len;
    rl_status st;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL)
        return uri_error(err, errlen, RL_EINVAL, "uri_parse: out is NULL");
    memset(out, 0, sizeof(*out));
    if (uri == NULL)
        return uri_error(err, errlen, RL_EINVAL, "node URI is NULL");
    if (uri[0] == '\0')
        return uri_error(err, errlen, RL_EINVAL, "node URI is empty");

    memset(&u, 0, sizeof(u));
    u.kind = ADDR_TCP;
    u.port = URI_DEFAULT_PORT;
    c.uri = uri;
    c.err = err;
    c.errlen = errlen;
    quote_uri(&c);

    sep = strstr(uri, "://");
    if (sep == NULL) {
        st = parse_bare(&c, uri, &u);
    } else {
        scheme_len = (size_t)(sep - uri);
        if (scheme_len == 5 && strncasecmp(uri, "redis", 5) == 0) {
            st = parse_redis(&c, sep + 3, &u);
        } else if (scheme_len == 4 && strncasecmp(uri, "unix", 4) == 0) {
            st = parse_unix(&c, sep + 3, &u);
        } else if (scheme_len == 6 && strncasecmp(uri, "rediss", 6) == 0) {
            u.tls = true;
            st = parse_redis(&c, sep + 3, &u);
        } else {
            int len;
            const char *t = echo(&c, uri, scheme_len, &len);

            st = bad(&c, "unknown scheme '%.*s' (expected redis://, "
                         "rediss:// or unix://)", len, t);
        }
    }
    if (st != RL_OK)
        return st;

    st = build(&u, out);
    if (st != RL_OK)
        return uri_error(err, errlen, st, "node URI '%s': out of memory",
                       c.quoted);
    return RL_OK;
}

bool uri_host_is_name(const struct node_addr *a)
{
    unsigned char bin[sizeof(struct in6_addr)];

    return a->kind == ADDR_TCP && a->host != NULL &&
           inet_pton(AF_INET, a->host, bin) != 1 &&
           inet_pton(AF_INET6, a->host, bin) != 1;
}

static const char *endpoint_name(const struct node_addr *a)
{
    return a->ip != NULL ? a->ip : a->host;
}

bool node_addr_same(const struct node_addr *a, const struct node_addr *b)
{
    const char *na;
    const char *nb;

    if (a == NULL || b == NULL || a->kind != b->kind || a->db != b->db)
        return false;
    if (a->kind == ADDR_UNIX)
        return a->path != NULL && b->path != NULL &&
               strcmp(a->path, b->path) == 0;
    na = endpoint_name(a);
    nb = endpoint_name(b);
    /* Host names and IPv6 hex digits are case-insensitive. */
    return na != NULL && nb != NULL && a->port == b->port &&
           strcasecmp(na, nb) == 0;
}

void node_addr_clear(struct node_addr *a)
{
    if (a == NULL)
        return;
    wipe(a->password);
    free(a->host);
    free(a->ip);
    free(a->path);
    free(a->user);
    free(a->password);
    free(a->display);
    memset(a, 0, sizeof(*a));
}

/* ---- Public API: describing and parsing node URIs ------------------------ */

struct rl_uri {
    struct node_addr a;
};

size_t rl_uri_describe(const char *uri, char *buf, size_t len)
{
    struct secret_spans sp;

    if (uri == NULL)
        uri = "";
    find_secrets(uri, &sp);
    return redact(uri, &sp, buf, buf != NULL ? len : 0);
}

rl_status rl_uri_parse(const char *uri, rl_uri **out)
{
    char err[RL_ERRLEN];
    rl_uri *u;
    rl_status st;

    if (out == NULL)
        return rl_fail(RL_EINVAL, "rl_uri_parse: out is NULL");
    *out = NULL;
    u = malloc(sizeof(*u));
    if (u == NULL)
        return rl_fail(RL_ENOMEM, "rl_uri_parse: out of memory");
    st = uri_parse(uri, &u->a, err, sizeof(err));
    if (st != RL_OK) {
        free(u);
        return rl_fail(st, "%s", err);
    }
    rl_error_clear();
    *out = u;
    return RL_OK;
}

void rl_uri_free(rl_uri *u)
{
    if (u == NULL)
        return;
    node_addr_clear(&u->a);
    free(u);
}

const char *rl_uri_name(const rl_uri *u)
{
    return u != NULL ? u->a.display : NULL;
}

const char *rl_uri_host(const rl_uri *u)
{
    return u != NULL ? u->a.host : NULL;
}

int rl_uri_port(const rl_uri *u)
{
    return u != NULL ? u->a.port : 0;
}

const char *rl_uri_path(const rl_uri *u)
{
    return u != NULL ? u->a.path : NULL;
}

int rl_uri_db(const rl_uri *u)
{
    return u != NULL ? u->a.db : 0;
}

bool rl_uri_tls(const rl_uri *u)
{
    return u != NULL && u->a.tls;
}

const char *rl_uri_user(const rl_uri *u)
{
    return u != NULL ? u->a.user : NULL;
}

const char *rl_uri_password(const rl_uri *u)
{
    return u != NULL ? u->a.password : NULL;
}
