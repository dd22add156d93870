/* SPDX-License-Identifier: BSD-3-Clause */
/* run_metrics.c -- "redlock-cli run --metrics-file FILE".
 *
 * Writes one run's figures in Prometheus text exposition format for
 * node_exporter's textfile collector: whether the lock was acquired, the
 * wait and hold times, whether it was lost, the exit status and when the
 * run ended, then the client's own statistics (rl_stats_format_prometheus:
 * renewals, lost, per-node requests and latency...). Every sample carries
 * resource="R", so several runs' files can sit side by side in one
 * collector directory.
 * The file is replaced atomically: written to a temporary file in the same
 * directory (FILE.XXXXXX, close-on-exec, mode 0644, fsynced), then renamed
 * over FILE, so the collector never reads half a file. A name ending in
 * .prom is what the collector picks up; the temporary name does not. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* s as a label value: \, " and newline escaped. */
static void put_label_value(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void put_gauge(FILE *f, const char *resource, const char *name,
                      const char *help, const char *value)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s{resource=\"", name, help,
            name, name);
    put_label_value(f, resource);
    fprintf(f, "\"} %s\n", value);
}

static void put_seconds(char *buf, size_t len, uint64_t us)
{
    snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, us / 1000000u,
             us % 1000000u);
}

/* The client's statistics with resource="R", malloc'd; NULL (message
 * printed) when they cannot be had. */
static char *client_metrics(const struct cli_opts *o, const char *resource,
                            rl_client *c)
{
    const char *labels[2] = {"resource", resource};
    rl_stats *s = malloc(sizeof(*s));
    size_t needed = 0;
    char *text = NULL;
    rl_status st;

    if (s == NULL)
        return NULL;
    st = rl_client_stats(c, s);
    if (st == RL_OK)
        st = rl_stats_format_prometheus(s, labels, 1, NULL, 0, &needed);
    if (st == RL_OK)
        text = malloc(needed);
    if (text != NULL)
        st = rl_stats_format_prometheus(s, labels, 1, text, needed, &needed);
    if (st != RL_OK) {
        cli_fail(o, 0, "--metrics-file: client statistics: %s: %s",
                 rl_strerror(st), rl_last_error());
        free(text);
        text = NULL;
    }
    free(s);
    return text;
}

static int write_all(FILE *f, const char *resource,
                     const struct run_figures *r, int status,
                     const char *client_text)
{
    uint64_t end = r->released_us != 0 ? r->released_us : cli_mono_us();
    char v[64];
    struct timespec now;

    snprintf(v, sizeof(v), "%d", r->acquired_us != 0);
    put_gauge(f, resource, "redlock_run_acquired",
              "1 when redlock-cli run acquired the lock.", v);
    put_seconds(v, sizeof(v),
                (r->acquired_us != 0 ? r->acquired_us : end) - r->start_us);
    put_gauge(f, resource, "redlock_run_wait_seconds",
              "Time spent acquiring the lock (or until giving up).", v);
    put_seconds(v, sizeof(v), r->acquired_us != 0 ? end - r->acquired_us : 0);
    put_gauge(f, resource, "redlock_run_hold_seconds",
              "Time the lock was held, acquired to released.", v);
    snprintf(v, sizeof(v), "%d", status == CLI_EXIT_LOST);
    put_gauge(f, resource, "redlock_run_lost",
              "1 when the lock was lost while the command ran (exit 4).", v);
    snprintf(v, sizeof(v), "%d", status);
    put_gauge(f, resource, "redlock_run_exit_status",
              "Exit status of redlock-cli run.", v);
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(v, sizeof(v), "%lld.%03ld", (long long)now.tv_sec,
             now.tv_nsec / 1000000);
    put_gauge(f, resource, "redlock_run_end_timestamp_seconds",
              "When the run ended, Unix time.", v);
    if (client_text != NULL)
        fputs(client_text, f);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

int cli_check_metrics_file(const struct cli_opts *o, const char *path)
{
    const char *dir;
    char *copy;
    int ok;

    if (path[0] == '\0' || path[strlen(path) - 1] == '/')
        return cli_fail(o, -1, "--metrics-file: '%s' is not a file name",
                        path);
    copy = strdup(path);
    if (copy == NULL)
        return cli_fail(o, -1, "out of memory");
    dir = dirname(copy);
    ok = access(dir, W_OK | X_OK) == 0;
    if (!ok)
        cli_fail(o, -1, "--metrics-file: cannot write in directory '%s': %s",
                 dir, strerror(errno));
    free(copy);
    return ok ? 0 : -1;
}

int cli_write_run_metrics(const struct cli_opts *o, const char *path,
                          const char *resource, const struct run_figures *r,
                          int status, rl_client *c)
{
    char *client_text = c != NULL ? client_metrics(o, resource, c) : NULL;
    char *tmp = malloc(strlen(path) + sizeof(".XXXXXX"));
    FILE *f = NULL;
    int fd = -1;
    int rc = -1;

    if (tmp == NULL) {
        cli_fail(o, 0, "--metrics-file: out of memory");
        goto out;
    }
    sprintf(tmp, "%s.XXXXXX", path);
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        cli_fail(o, 0, "--metrics-file: cannot create a file next to '%s': "
                 "%s", path, strerror(errno));
        goto out;
    }
    if (fchmod(fd, 0644) != 0 || (f = fdopen(fd, "w")) == NULL)
        goto fail;
    fd = -1; /* f owns it */
    if (write_all(f, resource, r, status, client_text) != 0 ||
        fsync(fileno(f)) != 0)
        goto fail;
    if (fclose(f) != 0) {
        f = NULL;
        goto fail;
    }
    f = NULL;
    if (rename(tmp, path) != 0)
        goto fail;
    rc = 0;
    goto out;

fail:
    cli_fail(o, 0, "--metrics-file: cannot write '%s': %s", path,
             strerror(errno));
    unlink(tmp);
out:
    if (f != NULL)
        fclose(f);
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(client_text);
    return rc;
}
