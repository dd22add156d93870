/* SPDX-License-Identifier: BSD-3-Clause */
/* facts.c -- see facts.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"

bool facts_info_field(const char *info, const char *field, char *dst,
                      size_t dstlen)
{
    size_t flen = strlen(field);
    const char *p = info;
    size_t i = 0;

    if (dstlen == 0)
        return false;
    while ((p = strstr(p, field)) != NULL) {
        if ((p == info || p[-1] == '\n') && p[flen] == ':') {
            p += flen + 1;
            while (p[i] != '\0' && p[i] != '\r' && p[i] != '\n' &&
                   i + 1 < dstlen) {
                dst[i] = p[i];
                i++;
            }
            dst[i] = '\0';
            return true;
        }
        p += flen;
    }
    dst[0] = '\0';
    return false;
}

/* "0" / "1" fields (aof_enabled, cluster_enabled). */
static enum fact info_flag(const char *info, const char *field)
{
    char v[4];

    if (!facts_info_field(info, field, v, sizeof(v)))
        return FACT_UNKNOWN;
    if (strcmp(v, "1") == 0)
        return FACT_YES;
    return strcmp(v, "0") == 0 ? FACT_NO : FACT_UNKNOWN;
}

static bool info_u64(const char *info, const char *field, uint64_t *out)
{
    char v[32];
    char *end;

    if (!facts_info_field(info, field, v, sizeof(v)) || v[0] < '0' ||
        v[0] > '9')
        return false;
    *out = strtoull(v, &end, 10);
    return *end == '\0';
}

void facts_from_info(struct node_facts *f, const char *info)
{
    facts_info_field(info, "redis_version", f->version, sizeof(f->version));
    facts_info_field(info, "run_id", f->run_id, sizeof(f->run_id));
    facts_info_field(info, "role", f->role, sizeof(f->role));
    facts_info_field(info, "master_replid", f->replid, sizeof(f->replid));
    facts_info_field(info, "maxmemory_policy", f->policy,
                     sizeof(f->policy));
    f->maxmemory_known = info_u64(info, "maxmemory", &f->maxmemory);
    f->aof_enabled = info_flag(info, "aof_enabled");
    f->cluster_enabled = info_flag(info, "cluster_enabled");
    f->uptime_known = info_u64(info, "uptime_in_seconds", &f->uptime_s);
    f->evicted_known = info_u64(info, "evicted_keys", &f->evicted_keys);
}

/* A string field read (non-empty) replaces the one kept. */
static void merge_string(char *kept, const char *read, size_t size)
{
    if (read[0] != '\0')
        memcpy(kept, read, size);
}

void facts_merge_info(struct node_facts *f, const char *info)
{
    struct node_facts got;

    memset(&got, 0, sizeof(got));
    facts_from_info(&got, info);
    merge_string(f->version, got.version, sizeof(f->version));
    merge_string(f->run_id, got.run_id, sizeof(f->run_id));
    merge_string(f->role, got.role, sizeof(f->role));
    merge_string(f->replid, got.replid, sizeof(f->replid));
    merge_string(f->policy, got.policy, sizeof(f->policy));
    if (got.maxmemory_known) {
        f->maxmemory = got.maxmemory;
        f->maxmemory_known = true;
    }
    if (got.aof_enabled != FACT_UNKNOWN)
        f->aof_enabled = got.aof_enabled;
    if (got.cluster_enabled != FACT_UNKNOWN)
        f->cluster_enabled = got.cluster_enabled;
    if (got.uptime_known) {
        f->uptime_s = got.uptime_s;
        f->uptime_known = true;
    }
    if (got.evicted_known) {
        f->evicted_keys = got.evicted_keys;
        f->evicted_known = true;
    }
}

void facts_from_config(struct node_facts *f, const char *name,
                       const char *value)
{
    char *end;

    if (strcmp(name, "maxmemory") == 0) {
        f->maxmemory = strtoull(value, &end, 10);
        f->maxmemory_known = end != value && *end == '\0' &&
                             value[0] >= '0' && value[0] <= '9';
    } else if (strcmp(name, "maxmemory-policy") == 0) {
        snprintf(f->policy, sizeof(f->policy), "%s", value);
    } else if (strcmp(name, "appendonly") == 0) {
        f->aof_enabled = strcmp(value, "yes") == 0   ? FACT_YES
                         : strcmp(value, "no") == 0 ? FACT_NO
                                                    : FACT_UNKNOWN;
    } else if (strcmp(name, "appendfsync") == 0) {
        snprintf(f->appendfsync, sizeof(f->appendfsync), "%s", value);
    }
}

bool facts_evicted_since(const struct node_facts *f,
                         const struct node_facts *before)
{
    if (!f->evicted_known)
        return false;
    if (before == NULL || !before->evicted_known)
        return f->evicted_keys > 0;
    return f->evicted_keys > before->evicted_keys;
}

enum fact facts_may_evict(const struct node_facts *f)
{
    if (f->maxmemory_known && f->maxmemory == 0)
        return FACT_NO; /* no limit: nothing to make room for */
    if (!f->maxmemory_known || f->policy[0] == '\0')
        return FACT_UNKNOWN;
    return strcmp(f->policy, "noeviction") == 0 ? FACT_NO : FACT_YES;
}

enum fact facts_fsyncs_every_write(const struct node_facts *f)
{
    if (f->aof_enabled == FACT_NO)
        return FACT_NO;
    if (f->appendfsync[0] != '\0' && strcmp(f->appendfsync, "always") != 0)
        return FACT_NO;
    if (f->aof_enabled == FACT_UNKNOWN || f->appendfsync[0] == '\0')
        return FACT_UNKNOWN;
    return FACT_YES;
}

const char *facts_same_server(const struct node_facts *a,
                              const struct node_facts *b)
{
    if (a->run_id[0] != '\0' && strcmp(a->run_id, b->run_id) == 0)
        return "the same server (same run_id)";
    if (a->replid[0] != '\0' && strcmp(a->replid, b->replid) == 0)
        return "one replication stream (a master and its replica, or "
               "two replicas of one master)";
    return NULL;
}

/* ---- Shared readings ------------------------------------------------------ */

#define SHARE_FIELDS 10

static const char *or_dash(const char *s)
{
    return s[0] != '\0' ? s : "-";
}

size_t facts_share_format(const struct node_facts *f, uint64_t from,
                          char *dst)
{
    char maxmemory[24] = "-", evicted[24] = "-";
    int n;

    if (f->run_id[0] == '\0')
        return 0;
    if (f->maxmemory_known)
        snprintf(maxmemory, sizeof(maxmemory), "%llu",
                 (unsigned long long)f->maxmemory);
    if (f->evicted_known)
        snprintf(evicted, sizeof(evicted), "%llu",
                 (unsigned long long)f->evicted_keys);
    n = snprintf(dst, FACTS_SHARE_MAX, "rlf1 %016llx %s %s %s %s %s %s %s %s",
                 (unsigned long long)from, f->run_id, or_dash(f->role),
                 or_dash(f->replid), or_dash(f->policy), maxmemory,
                 f->aof_enabled == FACT_UNKNOWN ? "-"
                 : f->aof_enabled == FACT_YES   ? "1"
                                                : "0",
                 or_dash(f->appendfsync), evicted);
    return n > 0 && n < FACTS_SHARE_MAX ? (size_t)n : 0;
}

/* A field into dst (size bytes, "-" read as ""); false when too long or
 * empty. */
static bool share_string(char *dst, size_t size, const char *field)
{
    size_t len = strlen(field);

    if (len == 0 || len >= size)
        return false;
    memcpy(dst, strcmp(field, "-") == 0 ? "" : field,
           strcmp(field, "-") == 0 ? 1 : len + 1);
    return true;
}

/* A decimal field ("-": unknown); false when malformed. */
static bool share_u64(const char *field, uint64_t *out, bool *known)
{
    char *end;

    *known = false;
    if (strcmp(field, "-") == 0)
        return true;
    if (field[0] < '0' || field[0] > '9')
        return false;
    *out = strtoull(field, &end, 10);
    *known = *end == '\0';
    return *known;
}

bool facts_share_parse(struct node_facts *f, uint64_t *from,
                       const char *msg, size_t len)
{
    char line[FACTS_SHARE_MAX];
    char *field[SHARE_FIELDS];
    struct node_facts got = *f;
    size_t count = 0;
    char *p, *end;

    if (len == 0 || len >= sizeof(line) || memchr(msg, '\0', len) != NULL)
        return false;
    memcpy(line, msg, len);
    line[len] = '\0';
    for (p = strtok_r(line, " ", &end); p != NULL && count < SHARE_FIELDS;
         p = strtok_r(NULL, " ", &end))
        field[count++] = p;
    if (count != SHARE_FIELDS || p != NULL || strcmp(field[0], "rlf1") != 0 ||
        strlen(field[1]) != 16 || f->run_id[0] == '\0' ||
        strcmp(field[2], f->run_id) != 0)
        return false;
    if (strspn(field[1], "0123456789abcdef") != 16 ||
        !share_string(got.role, sizeof(got.role), field[3]) ||
        !share_string(got.replid, sizeof(got.replid), field[4]) ||
        !share_string(got.policy, sizeof(got.policy), field[5]) ||
        !share_u64(field[6], &got.maxmemory, &got.maxmemory_known) ||
        !share_string(got.appendfsync, sizeof(got.appendfsync), field[8]) ||
        !share_u64(field[9], &got.evicted_keys, &got.evicted_known))
        return false;
    if (strcmp(field[7], "1") == 0)
        got.aof_enabled = FACT_YES;
    else if (strcmp(field[7], "0") == 0)
        got.aof_enabled = FACT_NO;
    else if (strcmp(field[7], "-") == 0)
        got.aof_enabled = FACT_UNKNOWN;
    else
        return false;
    *from = strtoull(field[1], NULL, 16);
    *f = got;
    return true;
}
