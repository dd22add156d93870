/* SPDX-License-Identifier: BSD-3-Clause */
/* cli.c -- shared helpers of redlock-cli.
 *
 * Owns: one-line error output, strict number parsing, JSON string
 * escaping, the defaults and the environment, the global options (also
 * accepted after the command name) and building the rl_client from them.
 * Also used by tools/bench/redlock-bench. Invariants: every error is one
 * line on stderr that names the option or URI at fault; a password never
 * reaches stdout or stderr (URIs are shown through the library's
 * rl_uri_describe, its messages never hold one). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- Messages ------------------------------------------------------------ */

static void vline(const struct cli_opts *o, const char *fmt, va_list ap)
{
    const char *prog = o != NULL && o->prog != NULL ? o->prog
                                                    : "redlock-cli";
    char buf[1024];
    char *p;

    vsnprintf(buf, sizeof(buf), fmt, ap);
    for (p = buf; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    }
    if (o != NULL && o->cmd != NULL)
        fprintf(stderr, "%s: %s: %s\n", prog, o->cmd, buf);
    else
        fprintf(stderr, "%s: %s\n", prog, buf);
    fflush(stderr);
}

int cli_fail(const struct cli_opts *o, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vline(o, fmt, ap);
    va_end(ap);
    return code;
}

void cli_info(const struct cli_opts *o, const char *fmt, ...)
{
    va_list ap;

    if (o == NULL || o->verbose == 0 || o->quiet)
        return;
    va_start(ap, fmt);
    vline(o, fmt, ap);
    va_end(ap);
}

void cli_json_str(FILE *f, const char *s)
{
    /* The characters written as a backslash and a letter. */
    static const char plain[] = "\"\\\n\r\t";
    static const char escaped[] = "\"\\nrt";
    const unsigned char *p;
    const char *e;

    fputc('"', f);
    for (p = (const unsigned char *)(s != NULL ? s : ""); *p != '\0'; p++) {
        e = strchr(plain, *p);
        if (e != NULL)
            fprintf(f, "\\%c", escaped[e - plain]);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* ---- Numbers ------------------------------------------------------------- */

int cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    unsigned long long v;
    char *end;

    if (s == NULL || !isdigit((unsigned char)s[0]))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;

    if (cli_parse_u64(s, lo, hi, &v) != 0)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_double(const char *s, double lo, double hi, double *out)
{
    double v;
    char *end;

    if (s == NULL || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return -1;
    if (!(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

int cli_parse_signal(const char *s)
{
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {
        {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},
        {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
        {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {"CONT", SIGCONT},
        {"STOP", SIGSTOP}, {"ABRT", SIGABRT}, {"PIPE", SIGPIPE},
    };
    uint32_t n;
    size_t i;

    if (s == NULL)
        return -1;
    if (cli_parse_u32(s, 1, 64, &n) == 0)
        return (int)n;
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        if (strcasecmp(s, sigs[i].name) == 0)
            return sigs[i].sig;
    }
    return -1;
}

uint64_t cli_mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t cli_boot_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- Option parsing ------------------------------------------------------ */

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_match(const struct cli_opts *o, int argc, char **argv, int *i,
              const char *name, char c, bool has_val, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);

    if (a[0] != '-')
        return 0;
    if (a[1] == '-' && strncmp(a + 2, name, n) == 0) {
        if (a[2 + n] == '\0') {
            if (!has_val)
                return 1;
            if (*i + 1 >= argc) {
                cli_fail(o, CLI_EXIT_USAGE, "option --%s needs a value", name);
                return -1;
            }
            *i += 1;
            *val = argv[*i];
            return 1;
        }
        if (a[2 + n] == '=' && has_val) {
            *val = a + 3 + n;
            return 1;
        }
        if (a[2 + n] == '=') {
            cli_fail(o, CLI_EXIT_USAGE, "option --%s takes no value", name);
            return -1;
        }
        return 0;
    }
    if (c != 0 && a[1] == c) {
        if (!has_val)
            return a[2] == '\0' ? 1 : 0;
        if (a[2] != '\0') {
            *val = a + 2;
            return 1;
        }
        if (*i + 1 >= argc) {
            cli_fail(o, CLI_EXIT_USAGE, "option -%c needs a value", c);
            return -1;
        }
        *i += 1;
        *val = argv[*i];
        return 1;
    }
    return 0;
}

/* Split a comma list of URIs and append them to o->nodes. */
static int add_nodes(struct cli_opts *o, const char *list, const char *from)
{
    const char *p = list;
    size_t pos = 0;

    for (;;) {
        size_t len = strcspn(p, ",");
        char **grown;
        char *uri;

        pos++;
        if (len == 0)
            return cli_fail(o, -1, "%s: empty URI at position %zu", from,
                            pos);
        uri = strndup(p, len);
        grown = realloc(o->nodes, (o->cfg.node_count + 1) * sizeof(*grown));
        if (uri == NULL || grown == NULL) {
            free(uri);
            if (grown != NULL)
                o->nodes = grown;
            return cli_fail(o, -1, "out of memory");
        }
        o->nodes = grown;
        o->nodes[o->cfg.node_count++] = uri;
        o->cfg.nodes = (const char *const *)o->nodes;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

static void clear_nodes(struct cli_opts *o)
{
    size_t i;

    for (i = 0; i < o->cfg.node_count; i++)
        free(o->nodes[i]);
    free(o->nodes);
    o->nodes = NULL;
    o->cfg.nodes = NULL;
    o->cfg.node_count = 0;
}

static void wipe_password(struct cli_opts *o)
{
    if (o->password != NULL) {
        explicit_bzero(o->password, strlen(o->password));
        free(o->password);
        o->password = NULL;
        o->cfg.password = NULL;
    }
}

/* The first line of the file, without its line ending. */
static int read_password_file(struct cli_opts *o, const char *path)
{
    char buf[4097];
    ssize_t n;
    size_t len = 0;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return cli_fail(o, -1, "--password-file '%s': %s", path,
                        strerror(errno));
    while (len < sizeof(buf) - 1) {
        n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;

            close(fd);
            explicit_bzero(buf, sizeof(buf));
            return cli_fail(o, -1, "--password-file '%s': %s", path,
                            strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0')
        return cli_fail(o, -1, "--password-file '%s': the file is empty",
                        path);
    wipe_password(o);
    o->password = strdup(buf);
    o->cfg.password = o->password;
    explicit_bzero(buf, sizeof(buf));
    if (o->password == NULL)
        return cli_fail(o, -1, "out of memory");
    return 0;
}

/* Value check for a u32 option; prints "--name: ..." on error. */
static int opt_u32(struct cli_opts *o, const char *name, const char *v,
                   uint32_t lo, uint32_t hi, uint32_t *out)
{
    if (cli_parse_u32(v, lo, hi, out) != 0)
        return cli_fail(o, -1, "--%s: '%s' is not a whole number in %u..%u",
                        name, v, lo, hi);
    return 0;
}

static int opt_nodes(struct cli_opts *o, const char *v)
{
    if (!o->nodes_from_cli)
        clear_nodes(o);         /* the command line replaces $REDLOCK_NODES */
    o->nodes_from_cli = true;
    return add_nodes(o, v, "--nodes");
}

static int opt_drift(struct cli_opts *o, const char *v)
{
    if (cli_parse_double(v, 0.0, 0.1, &o->cfg.drift_factor) != 0)
        return cli_fail(o, -1, "--drift-factor: '%s' is not a number in "
                        "[0, 0.1]", v);
    return 0;
}

static int opt_quarantine(struct cli_opts *o, const char *v)
{
    return cli_parse_quarantine(o, "--quarantine", v, &o->cfg.restart_trust);
}

static int opt_no_quarantine(struct cli_opts *o, const char *v)
{
    (void)v;
    o->cfg.restart_trust = RL_RESTART_TRUST;
    return 0;
}

static int opt_renew_window(struct cli_opts *o, const char *v)
{
    uint32_t pct = 0;

    if (opt_u32(o, "renew-window", v, 0, 24, &pct) != 0)
        return -1;
    o->cfg.renew_window_pct = (uint8_t)pct;
    return 0;
}

static int opt_verbose(struct cli_opts *o, const char *v)
{
    (void)v;
    o->verbose++;
    return 0;
}

/* How a global option is applied. */
enum gkind {
    G_FLAG,     /* no value: sets *flag */
    G_TEXT,     /* *text = the value (borrowed from argv) */
    G_U32,      /* *u32 = the value, a whole number in lo..hi */
    G_CALL,     /* call(o, value) */
    G_DO        /* no value: call(o, NULL) */
};

struct gopt {
    const char *name;
    char c;                     /* short option, or 0 */
    enum gkind kind;
    bool *flag;
    const char **text;
    uint32_t *u32;
    uint32_t lo, hi;
    int (*call)(struct cli_opts *o, const char *v);
};

static int apply_global(struct cli_opts *o, const struct gopt *g,
                        const char *v)
{
    switch (g->kind) {
    case G_FLAG:
        *g->flag = true;
        return 0;
    case G_TEXT:
        *g->text = v;
        return 0;
    case G_U32:
        return opt_u32(o, g->name, v, g->lo, g->hi, g->u32);
    case G_CALL:
    case G_DO:
        return g->call(o, v);
    }
    return -1;
}

int cli_global_option(struct cli_opts *o, int argc, char **argv, int *i)
{
    rl_config *cfg = &o->cfg;
    /* Built here: the entries point at the fields of o they set. */
    const struct gopt gopts[] = {
        {"nodes", 'n', G_CALL, .call = opt_nodes},
        {"connect-timeout", 0, G_U32, .u32 = &cfg->connect_timeout_ms,
         .lo = 1, .hi = 60000},
        {"op-timeout", 0, G_U32, .u32 = &cfg->op_timeout_ms, .lo = 1,
         .hi = 60000},
        {"drift-factor", 0, G_CALL, .call = opt_drift},
        {"retry-count", 0, G_U32, .u32 = &cfg->retry_count, .lo = 0,
         .hi = 1000000},
        {"retry-delay", 0, G_U32, .u32 = &cfg->retry_delay_ms, .lo = 1,
         .hi = 3600000},
        {"retry-jitter", 0, G_U32, .u32 = &cfg->retry_jitter_ms, .lo = 0,
         .hi = 3600000},
        {"max-ttl", 0, G_U32, .u32 = &cfg->max_ttl_ms, .lo = 1,
         .hi = INT32_MAX},
        {"prefix", 0, G_TEXT, .text = &cfg->prefix},
        {"password-file", 0, G_CALL, .call = read_password_file},
        {"quarantine", 0, G_CALL, .call = opt_quarantine},
        {"no-quarantine", 0, G_DO, .call = opt_no_quarantine},
        {"allow-evicting-nodes", 0, G_FLAG,
         .flag = &cfg->allow_evicting_nodes},
        {"no-clock-guard", 0, G_FLAG, .flag = &cfg->no_clock_guard},
        {"renew-window", 0, G_CALL, .call = opt_renew_window},
        {"tls", 0, G_FLAG, .flag = &cfg->tls},
        {"cacert", 0, G_TEXT, .text = &cfg->tls_ca_file},
        {"cacertdir", 0, G_TEXT, .text = &cfg->tls_ca_dir},
        {"cert", 0, G_TEXT, .text = &cfg->tls_cert_file},
        {"key", 0, G_TEXT, .text = &cfg->tls_key_file},
        {"sni", 0, G_TEXT, .text = &cfg->tls_server_name},
        {"insecure", 0, G_FLAG, .flag = &cfg->tls_insecure},
        {"json", 0, G_FLAG, .flag = &o->json},
        {"quiet", 'q', G_FLAG, .flag = &o->quiet},
        {"verbose", 'v', G_DO, .call = opt_verbose},
    };
    const char *v = NULL;
    size_t k;
    int m;

    if (strcmp(argv[*i], "-vv") == 0) {
        o->verbose += 2;
        return 1;
    }
    for (k = 0; k < sizeof(gopts) / sizeof(gopts[0]); k++) {
        bool has_val = gopts[k].kind != G_FLAG && gopts[k].kind != G_DO;

        m = cli_match(o, argc, argv, i, gopts[k].name, gopts[k].c, has_val,
                      &v);
        if (m == 0)
            continue;
        if (m < 0)
            return -1;
        return apply_global(o, &gopts[k], v) == 0 ? 1 : -1;
    }
    return 0;
}

void cli_print_usage(const char *text)
{
    rl_config d;
    const char *p, *end;
    size_t k;

    rl_config_init(&d);
    const struct {
        const char *name;
        double value;
    } defaults[] = {
        {"connect_timeout", d.connect_timeout_ms},
        {"op_timeout", d.op_timeout_ms},
        {"drift", d.drift_factor},
        {"retry_count", d.retry_count},
        {"retry_delay", d.retry_delay_ms},
        {"retry_jitter", d.retry_jitter_ms},
        {"max_ttl", d.max_ttl_ms},
        {"renew_window", d.renew_window_pct},
        {"ttl", RL_DEFAULT_TTL_MS},
    };

    for (p = text; (end = strstr(p, "%{")) != NULL; p = strchr(end, '}') + 1) {
        size_t len = strcspn(end + 2, "}");

        fwrite(p, 1, (size_t)(end - p), stdout);
        for (k = 0; k < sizeof(defaults) / sizeof(defaults[0]); k++) {
            if (strlen(defaults[k].name) == len &&
                strncmp(end + 2, defaults[k].name, len) == 0)
                break;
        }
        /* A placeholder without a default is a bug in a help text. */
        if (k == sizeof(defaults) / sizeof(defaults[0]))
            abort();
        printf("%.10g", defaults[k].value);
    }
    fputs(p, stdout);
}

int cli_parse_args(struct cli_opts *o, int argc, char **argv,
                   const struct cli_cmdopt *opts, size_t nopts,
                   const char *usage, const char **pos, int maxpos,
                   int *npos, int *rest)
{
    bool dashdash = false;
    const char *v = NULL;
    size_t k;
    int m;
    int i;

    *npos = 0;
    if (rest != NULL)
        *rest = -1;
    for (i = 1; i < argc; i++) {
        if (dashdash || argv[i][0] != '-' || argv[i][1] == '\0') {
            if (*npos >= maxpos) {
                if (rest != NULL)
                    return cli_fail(o, -1, "unexpected argument '%s': put "
                                    "'--' before the command to run",
                                    argv[i]);
                return cli_fail(o, -1, "unexpected argument '%s' (see "
                                "redlock-cli %s --help)", argv[i], argv[0]);
            }
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (strcmp(argv[i], "--") == 0) {
            if (rest != NULL) {
                *rest = i + 1;
                return 0;
            }
            dashdash = true;
            continue;
        }
        if (cli_is_help(argv[i])) {
            cli_print_usage(usage);
            return 1;
        }
        m = 0;
        for (k = 0; k < nopts && m == 0; k++) {
            m = cli_match(o, argc, argv, &i, opts[k].name, 0,
                          opts[k].val != NULL, &v);
            if (m > 0 && opts[k].val != NULL)
                *opts[k].val = v;
            if (m > 0 && opts[k].flag != NULL)
                *opts[k].flag = true;
        }
        if (m == 0)
            m = cli_global_option(o, argc, argv, &i);
        if (m < 0)
            return -1;
        if (m == 0)
            return cli_fail(o, -1, "unknown option '%s' (see redlock-cli %s "
                            "--help)", argv[i], argv[0]);
    }
    return 0;
}

/* --quarantine's words, by enum rl_restart_trust. */
static const char *const quarantine_names[] = {
    [RL_RESTART_AUTO] = "auto",
    [RL_RESTART_QUARANTINE] = "on",
    [RL_RESTART_TRUST] = "off",
};
#define QUARANTINE_NAMES                                                      \
    (sizeof(quarantine_names) / sizeof(quarantine_names[0]))

int cli_parse_quarantine(const struct cli_opts *o, const char *from,
                         const char *s, uint8_t *out)
{
    size_t k;

    for (k = 0; k < QUARANTINE_NAMES; k++) {
        if (strcmp(s, quarantine_names[k]) == 0) {
            *out = (uint8_t)k;
            return 0;
        }
    }
    return cli_fail(o, -1, "%s: '%s' is not auto, on or off", from, s);
}

const char *cli_quarantine_name(uint8_t restart_trust)
{
    if (restart_trust < QUARANTINE_NAMES)
        return quarantine_names[restart_trust];
    return "?";
}

int cli_parse_resource(struct cli_opts *o, int argc, char **argv,
                       const struct cli_cmdopt *opts, size_t nopts,
                       const char *usage, const char *what,
                       const char *synopsis, const char **resource)
{
    const char *pos[1] = {NULL}; /* set when npos >= 1; -O3 cannot tell */
    int npos;
    int code;

    code = cli_parse_args(o, argc, argv, opts, nopts, usage, pos, 1, &npos,
                          NULL);
    if (code != 0)
        return code;
    if (npos < 1)
        return cli_fail(o, -1, "missing %s (usage: %s %s)", what, argv[0],
                        synopsis);
    if (cli_check_resource(o, pos[0]) != 0)
        return -1;
    *resource = pos[0];
    return 0;
}

int cli_parse_ttl(const struct cli_opts *o, const char *opt, const char *s,
                  uint32_t *out)
{
    uint64_t v;

    if (cli_parse_u64(s, 0, UINT64_MAX, &v) != 0)
        return cli_fail(o, -1, "%s: '%s' is not a whole number of "
                        "milliseconds", opt, s);
    if (v == 0)
        return cli_fail(o, -1, "%s: must be at least 1 ms", opt);
    if (v > o->cfg.max_ttl_ms)
        return cli_fail(o, -1, "%s: %s ms is above --max-ttl (%u ms)", opt, s,
                        o->cfg.max_ttl_ms);
    *out = (uint32_t)v;
    return 0;
}

int cli_parse_wait(const struct cli_opts *o, const char *s, int64_t *out)
{
    uint64_t v;

    if (strcmp(s, "forever") == 0) {
        *out = RL_WAIT_FOREVER;
        return 0;
    }
    if (s[0] == '-')
        return cli_fail(o, -1, "--wait: '%s' is negative (a number of "
                        "milliseconds, or 'forever' to wait until "
                        "acquired)", s);
    if (cli_parse_u64(s, 0, (uint64_t)INT32_MAX * 1000u, &v) != 0)
        return cli_fail(o, -1, "--wait: '%s' is not a number of milliseconds "
                        "(or 'forever')", s);
    *out = (int64_t)v;
    return 0;
}

int cli_check_resource(const struct cli_opts *o, const char *r)
{
    if (r[0] == '\0')
        return cli_fail(o, -1, "the resource name is empty");
    if (strlen(r) > 512)
        return cli_fail(o, -1, "the resource name is longer than 512 bytes");
    if (strncmp(r, "redlock:", 8) == 0)
        return cli_fail(o, -1, "resource '%s' uses the reserved namespace "
                        "'redlock:'", r);
    return 0;
}

/* ---- Client -------------------------------------------------------------- */

static void log_to_stderr(int level, const char *msg, void *privdata)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    const struct cli_opts *o = privdata;

    if (o->quiet && level > RL_LOG_ERROR)
        return;
    fprintf(stderr, "redlock-cli: [%s] %s\n",
            names[level >= 0 && level <= 3 ? level : 0], msg);
}

/* The library names a bad URI (redacted) as "nodes[i] ..." or the field
 * at fault; say which option it came from. */
static int config_error(struct cli_opts *o)
{
    const char *e = rl_last_error();

    if (strncmp(e, "nodes", 5) == 0)
        return cli_fail(o, CLI_EXIT_USAGE, "bad --nodes: %s", e);
    return cli_fail(o, CLI_EXIT_USAGE, "bad configuration: %s", e);
}

int cli_client_new(struct cli_opts *o, rl_client **out)
{
    rl_config cfg;
    rl_client *c;
    rl_status st;
    size_t i;

    *out = NULL;
    if (o->cfg.node_count == 0)
        return cli_fail(o, CLI_EXIT_USAGE, "no nodes: use -n/--nodes "
                        "URI[,URI...] or set REDLOCK_NODES");
    if (o->cfg.retry_jitter_ms > o->cfg.retry_delay_ms)
        return cli_fail(o, CLI_EXIT_USAGE, "--retry-jitter (%u) must not "
                        "exceed --retry-delay (%u)", o->cfg.retry_jitter_ms,
                        o->cfg.retry_delay_ms);
    cfg = o->cfg;
    if (o->cfg.tls_insecure && !o->quiet)
        cli_fail(o, 0, "warning: --insecure: TLS certificates are not "
                 "verified; anybody on the network path can pose as the "
                 "nodes");
    if (o->verbose > 0) {
        cfg.log = log_to_stderr;
        cfg.log_privdata = o;
        cfg.log_level = o->verbose > 1 ? RL_LOG_DEBUG : RL_LOG_INFO;
        for (i = 0; i < o->cfg.node_count; i++) {
            char shown[256];

            rl_uri_describe(o->nodes[i], shown, sizeof(shown));
            cli_info(o, "node %zu: %s", i, shown);
        }
        cli_info(o, "connect-timeout %u ms, op-timeout %u ms, max-ttl %u ms,"
                 " quarantine %s, evicting nodes %s, password %s",
                 o->cfg.connect_timeout_ms, o->cfg.op_timeout_ms,
                 o->cfg.max_ttl_ms,
                 cli_quarantine_name(o->cfg.restart_trust),
                 o->cfg.allow_evicting_nodes ? "allowed" : "refused",
                 o->password != NULL ? "set" : "not set");
    }
    c = rl_client_new(&cfg, &st);
    if (c == NULL) {
        if (st == RL_EINVAL)
            return config_error(o);
        return cli_fail(o, CLI_EXIT_NO_QUORUM, "cannot create the client: %s",
                        rl_last_error());
    }
    *out = c;
    return CLI_EXIT_OK;
}

int cli_status_exit(const struct cli_opts *o, rl_status st, const char *what)
{
    return cli_status_exit_detail(o, st, what, rl_last_error());
}

int cli_status_exit_detail(const struct cli_opts *o, rl_status st,
                           const char *what, const char *e)
{
    int code;

    switch (st) {
    case RL_OK:
        return CLI_EXIT_OK;
    case RL_ENOQUORUM:
    case RL_EOVERLOAD: /* the nodes cannot keep up: as unavailable */
        code = CLI_EXIT_NO_QUORUM;
        break;
    case RL_EINVAL:
        code = CLI_EXIT_USAGE;
        break;
    default:
        code = CLI_EXIT_NOT_ACQUIRED;
        break;
    }
    /* The detail text names the resource already; fall back to the
     * status text when there is none. */
    if (!o->quiet || code != CLI_EXIT_NOT_ACQUIRED) {
        if (e[0] != '\0')
            cli_fail(o, code, "%s", e);
        else
            cli_fail(o, code, "%s: %s", what, rl_strerror(st));
    }
    return code;
}

/* A yes/no variable: 1/true/yes sets *flag, 0/false/no clears it, unset
 * or empty leaves it. -1 (message printed) on anything else. */
static int env_flag(const struct cli_opts *o, const char *name, bool *flag)
{
    const char *v = getenv(name);

    if (v == NULL || v[0] == '\0')
        return 0;
    if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ||
        strcmp(v, "yes") == 0)
        *flag = true;
    else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0 ||
             strcmp(v, "no") == 0)
        *flag = false;
    else
        return cli_fail(o, -1, "%s: '%s' is not 1 or 0", name, v);
    return 0;
}

int cli_opts_load(struct cli_opts *o)
{
    const char *v;
    bool flag;
    char *fake[3];
    int i = 1;

    rl_config_init(&o->cfg);

    v = getenv("REDLOCK_NODES");
    if (v != NULL && v[0] != '\0') {
        /* Parse it through the same code as -n (replaced by any -n). */
        fake[0] = "redlock-cli";
        fake[1] = "--nodes";
        fake[2] = (char *)v;
        if (cli_global_option(o, 3, fake, &i) != 1)
            return -1;
        o->nodes_from_cli = false;
    }
    v = getenv("REDLOCK_PASSWORD");
    if (v != NULL && v[0] != '\0') {
        o->password = strdup(v);
        if (o->password == NULL)
            return cli_fail(o, -1, "out of memory");
        o->cfg.password = o->password;
    }
    v = getenv("REDLOCK_CACERT");
    if (v != NULL && v[0] != '\0')
        o->cfg.tls_ca_file = v;
    v = getenv("REDLOCK_CERT");
    if (v != NULL && v[0] != '\0')
        o->cfg.tls_cert_file = v;
    v = getenv("REDLOCK_KEY");
    if (v != NULL && v[0] != '\0')
        o->cfg.tls_key_file = v;
    v = getenv("REDLOCK_MAX_TTL");
    if (v != NULL && v[0] != '\0' &&
        cli_parse_u32(v, 1, INT32_MAX, &o->cfg.max_ttl_ms) != 0)
        return cli_fail(o, -1, "REDLOCK_MAX_TTL: '%s' is not a whole number "
                        "of milliseconds in 1..%d", v, INT32_MAX);
    v = getenv("REDLOCK_QUARANTINE");
    if (v != NULL && v[0] != '\0' &&
        cli_parse_quarantine(o, "REDLOCK_QUARANTINE", v,
                             &o->cfg.restart_trust) != 0)
        return -1;
    flag = false;
    if (env_flag(o, "REDLOCK_NO_QUARANTINE", &flag) != 0)
        return -1;
    if (flag)
        o->cfg.restart_trust = RL_RESTART_TRUST;
    return env_flag(o, "REDLOCK_ALLOW_EVICTING_NODES",
                    &o->cfg.allow_evicting_nodes);
}

void cli_opts_free(struct cli_opts *o)
{
    clear_nodes(o);
    wipe_password(o);
}

int cli_adopt_token(struct cli_opts *o, const char *resource,
                    const char *name, const char *token,
                    const rl_acquire_opts *ao, rl_client **c, rl_lock **l)
{
    rl_status st;
    int code;

    if (token[0] == '\0' || strlen(token) > 128)
        return cli_fail(o, CLI_EXIT_USAGE, "TOKEN must be 1..128 characters");
    code = cli_client_new(o, c);
    if (code != CLI_EXIT_OK)
        return code;
    st = rl_lock_adopt_opts(*c, name, token, ao, l);
    if (st != RL_OK)
        return cli_status_exit(o, st, resource);
    return CLI_EXIT_OK;
}

uint32_t cli_default_ttl(const struct cli_opts *o)
{
    return RL_DEFAULT_TTL_MS < o->cfg.max_ttl_ms ? RL_DEFAULT_TTL_MS
                                                 : o->cfg.max_ttl_ms;
}

void cli_json_holders(FILE *f, const rl_holder_info *h, size_t count)
{
    size_t i;

    fputc('[', f);
    for (i = 0; i < count; i++) {
        char tok[CLI_TOKEN_SHOWN + 1];

        snprintf(tok, sizeof(tok), "%s", h[i].token);
        fprintf(f, "%s{\"node\":", i > 0 ? "," : "");
        cli_json_str(f, h[i].name);
        fprintf(f, ",\"reachable\":%s,\"voting\":%s,\"holder\":",
                h[i].reachable ? "true" : "false",
                h[i].voting ? "true" : "false");
        if (tok[0] != '\0')
            cli_json_str(f, tok);
        else
            fputs("null", f);
        fprintf(f, ",\"readers\":%" PRIu32 ",\"readers_in_lock_delay\":%"
                PRIu32 ",\"pttl_ms\":%" PRId64 ",\"lock_delay_ms\":%" PRIu32
                ",\"error\":", h[i].readers, h[i].readers_in_delay,
                h[i].pttl_ms, h[i].lock_delay_ms);
        cli_json_str(f, h[i].error);
        fputc('}', f);
    }
    fputc(']', f);
}

bool cli_in_lock_delay(const rl_resource_info *info)
{
    return info->held && info->validity_ms == 0 && info->blocked_ms != 0;
}

/* A node's readers, counted only where it votes (as held is): a
 * quarantined node's readers make no majority. */
static uint32_t readers_of(const rl_holder_info *h, bool delayed)
{
    if (!h->reachable || !h->voting)
        return 0;
    return h->readers + (delayed ? h->readers_in_delay : 0);
}

uint32_t cli_majority_readers(const rl_holder_info *h, size_t count,
                              bool delayed)
{
    size_t i, j, at_least;
    uint32_t best = 0, r;

    for (i = 0; i < count; i++) {
        r = readers_of(&h[i], delayed);
        at_least = 0;
        for (j = 0; j < count; j++)
            at_least += readers_of(&h[j], delayed) >= r && r > 0;
        if (at_least >= count / 2 + 1 && r > best)
            best = r;
    }
    return best;
}

void cli_holder_text(char *buf, size_t len, const rl_holder_info *h)
{
    if (h->readers > 0)
        snprintf(buf, len, "readers:%" PRIu32, h->readers);
    else if (h->readers_in_delay > 0)
        snprintf(buf, len, "delayed:%" PRIu32, h->readers_in_delay);
    else if (h->token[0] != '\0')
        snprintf(buf, len, "%.*s", CLI_TOKEN_SHOWN, h->token);
    else
        snprintf(buf, len, "-");
}

void cli_pttl_text(char *buf, size_t len, const rl_holder_info *h,
                   const char *free_word)
{
    if (!h->reachable)
        snprintf(buf, len, "-");
    else if (h->pttl_ms == -2)
        snprintf(buf, len, "%s", free_word);
    else if (h->pttl_ms == -1)
        snprintf(buf, len, "no-expiry");
    else
        snprintf(buf, len, "%" PRId64, h->pttl_ms);
}

uint32_t cli_semaphore_slots(rl_client *c, const char *resource,
                             bool any_node, uint32_t *out)
{
    rl_resource_info *slots = calloc(RL_MAX_LIMIT, sizeof(*slots));
    uint32_t i, n = 0;
    rl_status st;

    if (slots == NULL)
        return 0;
    st = rl_semaphore_inspect(c, resource, RL_MAX_LIMIT, slots, NULL, 0,
                              NULL);
    for (i = 0; (st == RL_OK || st == RL_ENOQUORUM) && i < RL_MAX_LIMIT;
         i++) {
        if (any_node ? slots[i].nodes_holding > 0 : slots[i].held)
            out[n++] = i;
    }
    free(slots);
    return n;
}
