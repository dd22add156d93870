/* SPDX-License-Identifier: BSD-3-Clause */
/* kinds.c -- the lock-kind options of acquire, run, extend, release and
 * status: --limit K (semaphore), --shared (reader of a
 * read-write lock), --lock-delay MS, --fair and --priority N (wait in
 * the resource's queue, docs/fair-queue.md), and the handle acquire
 * prints for a lock of another kind, which extend and release adopt
 * again.
 *
 * Handle: the token, preceded by what release and extend need to find the
 * lock again: "slot<i>/" (the semaphore slot, key "<R>:slot:<i>"),
 * "shared/" (a reader), "delay<MS>/" (the lock-delay, kept by extend), in
 * that order; a plain mutex's handle is its bare token. Our tokens are
 * hex, so a handle never starts with a segment of a token; a foreign
 * token whose first '/'-separated parts are not such segments is taken
 * whole.
 * --owner S (default host:pid; '' for none) is stored with the token: the
 * handle then ends with ".S". */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_parse_limit(const struct cli_opts *o, const char *s,
                    uint32_t *limit)
{
    if (cli_parse_u32(s, 1, RL_MAX_LIMIT, limit) != 0)
        return cli_fail(o, -1, "--limit: '%s' is not a number of permits "
                        "in 1..%u", s, RL_MAX_LIMIT);
    return 0;
}

int cli_check_owner(const struct cli_opts *o, const char *s)
{
    size_t i, len = strlen(s);

    if (len > RL_OWNER_MAX)
        return cli_fail(o, -1, "--owner: '%s' is longer than %d bytes", s,
                        RL_OWNER_MAX);
    for (i = 0; i < len; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e)
            return cli_fail(o, -1, "--owner: character %zu is not visible "
                            "ASCII (no spaces or control characters)",
                            i + 1);
    }
    return 0;
}

/* --owner S into ao->owner: checked, or host:pid without the option (a
 * host name's bytes outside 0x21..0x7e become '?'); '' means none. */
static int apply_owner(const struct cli_opts *o, const char *s,
                       rl_acquire_opts *ao)
{
    static char owner[RL_OWNER_MAX + 1];
    char host[RL_OWNER_MAX + 1];
    size_t i;

    if (s != NULL) {
        if (cli_check_owner(o, s) != 0)
            return -1;
        ao->owner = s[0] != '\0' ? s : NULL;
        return 0;
    }
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "?");
    host[sizeof(host) - 1] = '\0';
    snprintf(owner, sizeof(owner), "%.*s:%ld", RL_OWNER_MAX - 12, host,
             (long)getpid());
    for (i = 0; owner[i] != '\0'; i++) {
        if (owner[i] < 0x21 || owner[i] > 0x7e)
            owner[i] = '?';
    }
    ao->owner = owner;
    return 0;
}

int cli_kind_apply(const struct cli_opts *o, const struct cli_kind *k,
                   rl_acquire_opts *ao)
{
    uint32_t v;

    if (k->limit_s != NULL) {
        if (cli_parse_limit(o, k->limit_s, &v) != 0)
            return -1;
        ao->limit = v;
    }
    if (k->shared && k->limit_s != NULL)
        return cli_fail(o, -1, "--shared and --limit cannot be combined: a "
                        "semaphore's slots are exclusive");
    ao->mode = k->shared ? RL_MODE_SHARED : RL_MODE_EXCLUSIVE;
    if (k->delay_s != NULL) {
        if (cli_parse_u32(k->delay_s, 0, o->cfg.max_ttl_ms, &v) != 0)
            return cli_fail(o, -1, "--lock-delay: '%s' is not a number of "
                            "milliseconds in 0..--max-ttl (%u)",
                            k->delay_s, o->cfg.max_ttl_ms);
        ao->lock_delay_ms = v;
    }
    ao->fair = k->fair || k->priority_s != NULL;
    if (k->priority_s != NULL) {
        if (cli_parse_u32(k->priority_s, 0, RL_MAX_PRIORITY, &v) != 0)
            return cli_fail(o, -1, "--priority: '%s' is not a number in "
                            "0..%u", k->priority_s, RL_MAX_PRIORITY);
        ao->priority = v;
    }
    return apply_owner(o, k->owner_s, ao);
}

bool cli_kind_any(const rl_acquire_opts *ao)
{
    return ao->limit != 0 || ao->mode != RL_MODE_EXCLUSIVE ||
           ao->lock_delay_ms != 0;
}

void cli_print_handle(FILE *f, const rl_lock *l, uint32_t delay_ms)
{
    if (rl_lock_slot(l) >= 0)
        fprintf(f, "slot%d/", rl_lock_slot(l));
    if (rl_lock_mode(l) == RL_MODE_SHARED)
        fputs("shared/", f);
    if (delay_ms != 0)
        fprintf(f, "delay%u/", delay_ms);
    fputs(rl_lock_token(l), f);
}

/* "<word><digits>" -> the number (0 or -1). */
static int segment_number(const char *seg, size_t len, const char *word,
                          uint32_t *out)
{
    size_t w = strlen(word);
    char buf[16];

    if (len <= w || len - w >= sizeof(buf) || memcmp(seg, word, w) != 0)
        return -1;
    memcpy(buf, seg + w, len - w);
    buf[len - w] = '\0';
    return cli_parse_u32(buf, 0, UINT32_MAX, out);
}

/* cli_adopt_token for a handle cli_print_handle printed (or a bare
 * token). */
static int adopt_handle(struct cli_opts *o, const char *resource,
                        const char *handle, rl_client **c, rl_lock **l)
{
    rl_acquire_opts ao;
    const char *p = handle, *slash;
    char name[CLI_SLOT_NAME_MAX];
    int64_t slot = -1;
    uint32_t v;
    size_t len;

    memset(&ao, 0, sizeof(ao));
    while ((slash = strchr(p, '/')) != NULL) {
        len = (size_t)(slash - p);
        if (len == 6 && memcmp(p, "shared", 6) == 0)
            ao.mode = RL_MODE_SHARED;
        else if (segment_number(p, len, "slot", &v) == 0 && v < RL_MAX_LIMIT)
            slot = v;
        else if (segment_number(p, len, "delay", &v) == 0)
            ao.lock_delay_ms = v;
        else
            break;
        p = slash + 1;
    }
    if (slot >= 0 && cli_slot_name(name, sizeof(name), resource,
                                   (uint32_t)slot) != 0)
        return cli_fail(o, CLI_EXIT_USAGE, "resource name is too long");
    return cli_adopt_token(o, resource, slot >= 0 ? name : resource, p, &ao,
                           c, l);
}

int cli_slot_name(char *buf, size_t len, const char *resource,
                  uint32_t slot)
{
    int n = snprintf(buf, len, "%s:slot:%u", resource, slot);

    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int cli_check_handle_args(const struct cli_opts *o, const char *const *pos,
                          int npos, const char *synopsis)
{
    if (npos < 2)
        return cli_fail(o, -1, "missing %s (usage: %s)",
                        npos == 0 ? "resource" : "TOKEN", synopsis);
    return cli_check_resource(o, pos[0]);
}

int cli_on_handle(struct cli_opts *o, const char *resource,
                  const char *handle, cli_handle_fn fn, void *arg)
{
    rl_client *c = NULL;
    rl_lock *l = NULL;
    int code;

    code = adopt_handle(o, resource, handle, &c, &l);
    if (code == CLI_EXIT_OK)
        code = fn(o, resource, &l, arg);
    rl_lock_free(l);
    rl_client_free(c);
    return code;
}
