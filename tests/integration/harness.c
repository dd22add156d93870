/* SPDX-License-Identifier: BSD-3-Clause */
/* harness.c -- runs real redis-server processes for the integration tests
 * (see harness.h for the lifecycle). Each server gets a free loopback port
 * (bind port 0, read it back, close, start; retried when the server then
 * fails to bind because someone else took the port) and its own temp dir.
 *
 * Invariants:
 *   - a struct rl_redis with running == true has a live child pid that
 *     answered PING with an empty keyspace when it was started;
 *   - every temp dir made here is in the registry until harness_stop, and
 *     every live pid is in it until harness_kill/harness_stop: the atexit
 *     handler kills and removes what is left. The registry copies pid and
 *     dir, so it never points into a caller's (maybe stack) struct.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#define START_TIMEOUT_MS 5000
#define START_ATTEMPTS 5
#define CMD_TIMEOUT_S 2
#define ARGV_MAX 64

/* ---- Registry of servers, for the atexit safety net ---- */

struct reg_entry {
    bool used;
    pid_t pid;                 /* 0 when not running */
    char dir[HARNESS_DIR_MAX]; /* temp dir to remove at exit */
};

static struct reg_entry registry[HARNESS_MAX_SERVERS];
static bool atexit_installed;

static bool keep_dirs(void)
{
    const char *k = getenv("RL_HARNESS_KEEP");

    return k != NULL && k[0] != '\0' && strcmp(k, "0") != 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_dir(const char *dir)
{
    if (dir[0] == '\0' || keep_dirs())
        return;
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void kill_and_reap(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

static void registry_atexit(void)
{
    for (size_t i = 0; i < HARNESS_MAX_SERVERS; i++) {
        if (!registry[i].used)
            continue;
        kill_and_reap(registry[i].pid);
        remove_dir(registry[i].dir);
        registry[i].used = false;
    }
}

static struct reg_entry *registry_find(const char *dir)
{
    for (size_t i = 0; i < HARNESS_MAX_SERVERS; i++) {
        if (registry[i].used && strcmp(registry[i].dir, dir) == 0)
            return &registry[i];
    }
    return NULL;
}

static int registry_set(const char *dir, pid_t pid)
{
    struct reg_entry *e = registry_find(dir);

    if (!atexit_installed) {
        atexit(registry_atexit);
        atexit_installed = true;
    }
    for (size_t i = 0; e == NULL && i < HARNESS_MAX_SERVERS; i++) {
        if (!registry[i].used) {
            e = &registry[i];
            e->used = true;
            snprintf(e->dir, sizeof(e->dir), "%s", dir);
        }
    }
    if (e == NULL) {
        fprintf(stderr, "harness: more than %d servers\n",
                HARNESS_MAX_SERVERS);
        return -1;
    }
    e->pid = pid;
    return 0;
}

static void registry_drop(const char *dir)
{
    struct reg_entry *e = registry_find(dir);

    if (e != NULL)
        e->used = false;
}

/* ---- Time ---- */

int64_t harness_clock_ns(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t harness_now_ns(void)
{
    return harness_clock_ns(CLOCK_MONOTONIC);
}

int64_t harness_now_us(void)
{
    return harness_now_ns() / 1000;
}

int64_t harness_now_ms(void)
{
    return harness_now_ns() / 1000000;
}

void harness_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

int64_t harness_scale_ms(int64_t ms)
{
    const char *m = getenv("RL_TEST_TIMEOUT_MULTIPLIER");
    long mult = 1;

    if (m != NULL && m[0] != '\0')
        mult = strtol(m, NULL, 10);
    if (mult < 1)
        mult = 1;
    return ms * mult;
}

/* ---- Finding and starting redis-server ---- */

static const char *server_binary(void)
{
    const char *b = getenv("REDIS_SERVER");

    return (b != NULL && b[0] != '\0') ? b : "redis-server";
}

static bool binary_exists(const char *name)
{
    const char *path;
    char buf[4096];

    if (strchr(name, '/') != NULL)
        return access(name, X_OK) == 0;
    path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path != '\0') {
        size_t n = strcspn(path, ":");

        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n,
                 n > 0 ? path : ".", name);
        if (n == 0)
            snprintf(buf, sizeof(buf), "./%s", name);
        if (access(buf, X_OK) == 0)
            return true;
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

void harness_require_redis(void)
{
    const char *list = getenv("RL_TEST_LIST");

    /* Listing the cases (test_filter.c) needs no server. */
    if (list != NULL && list[0] != '\0')
        return;
    if (!binary_exists(server_binary())) {
        printf("SKIP: redis-server not found in PATH\n");
        fflush(stdout);
        exit(77);
    }
}

/* ---- TLS certificates ---- */

static char certs[HARNESS_DIR_MAX];

static int make_certs(void)
{
    static const char script[] =
        "set -e; cd '%s';"
        "key() { openssl genpkey -algorithm EC"
        " -pkeyopt ec_paramgen_curve:P-256 -out $1 2>/dev/null; };"
        "ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem"
        " -days 30 -subj /CN=$1 2>/dev/null; };"
        "sign() { openssl req -new -key $2 -subj /CN=$3 -out t.csr"
        " 2>/dev/null; printf '%%s\\n' \"$5\" > t.ext;"
        " openssl x509 -req -in t.csr -CA ca.pem -CAkey ca.key"
        " -CAcreateserial -days $4 -extfile t.ext -out $1 2>/dev/null; };"
        "ca ca; ca ca2; key server.key; key client.key;"
        "sign server.pem server.key localhost 30"
        " 'subjectAltName=IP:127.0.0.1,DNS:localhost';"
        "sign expired.pem server.key localhost -1"
        " 'subjectAltName=IP:127.0.0.1,DNS:localhost';"
        "sign client.pem client.key client 30"
        " 'extendedKeyUsage=clientAuth';"
        "cat client.pem client.key > client-both.pem;"
        "mkdir cadir; cp ca.pem cadir/; openssl rehash cadir 2>/dev/null;";
    const char *tmp = getenv("TMPDIR");
    char cmd[sizeof(script) + HARNESS_DIR_MAX];

    snprintf(certs, sizeof(certs), "%s/rl-certs-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(certs) == NULL)
        return -1;
    snprintf(cmd, sizeof(cmd), script, certs);
    return system(cmd) == 0 ? 0 : -1;
}

static void remove_certs(void)
{
    char cmd[HARNESS_DIR_MAX + 16];

    if (certs[0] == '\0' || getenv("RL_HARNESS_KEEP") != NULL)
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certs);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", certs);
}

void harness_require_certs(void)
{
    if (certs[0] != '\0')
        return;
    if (system("openssl version >/dev/null 2>&1") != 0) {
        printf("SKIP: openssl CLI not found\n");
        fflush(stdout);
        exit(77);
    }
    if (make_certs() != 0) {
        fprintf(stderr, "cannot make test certificates in %s\n", certs);
        remove_certs();
        exit(1);
    }
    atexit(remove_certs);
}

const char *harness_cert(const char *name)
{
    static char paths[8][HARNESS_DIR_MAX + 32];
    static int next;
    char *p = paths[next++ % 8];

    snprintf(p, sizeof(paths[0]), "%s/%s", certs, name);
    return p;
}

struct harness_opts harness_tls_opts(const struct harness_opts *base,
                                     const char *server_cert,
                                     bool auth_clients)
{
    struct harness_opts o = {0};

    if (base != NULL)
        o = *base;
    o.tls_cert = harness_cert(server_cert);
    o.tls_key = harness_cert("server.key");
    o.tls_ca = harness_cert("ca.pem");
    o.tls_auth_clients = auth_clients;
    return o;
}

/* A port nobody uses right now, picked at random below the kernel's
 * ephemeral range (32768 and up by default): a port the kernel hands out
 * for outgoing connections could be taken by a client's socket while a
 * killed server is down, and its restart on the same port would fail. */
int harness_free_port(void)
{
    static unsigned seed;
    struct sockaddr_in sa;
    int fd, port = -1;

    if (seed == 0)
        seed = (unsigned)getpid() ^ (unsigned)harness_now_us();
    for (int attempt = 0; attempt < 200 && port < 0; attempt++) {
        int candidate = 20000 + (int)(rand_r(&seed) % 12000u);

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sa.sin_port = htons((uint16_t)candidate);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            port = candidate;
        close(fd);
    }
    return port;
}

static pid_t spawn(const struct rl_redis *r)
{
    const char *argv[ARGV_MAX];
    char port[16];
    char logfile[HARNESS_DIR_MAX + 32];
    char outfile[HARNESS_DIR_MAX + 32];
    char pass_rule[HARNESS_CRED_MAX + 2];
    char tls_port[16];
    int argc = 0;
    pid_t parent = getpid();
    pid_t pid;

    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(logfile, sizeof(logfile), "%s/redis.log", r->dir);
    snprintf(outfile, sizeof(outfile), "%s/stdout.log", r->dir);
    argv[argc++] = server_binary();
    argv[argc++] = "--port";
    argv[argc++] = port;
    argv[argc++] = "--bind";
    argv[argc++] = HARNESS_HOST;
    argv[argc++] = "--dir";
    argv[argc++] = r->dir;
    argv[argc++] = "--save";
    argv[argc++] = "";
    argv[argc++] = "--appendonly";
    argv[argc++] = "no";
    argv[argc++] = "--daemonize";
    argv[argc++] = "no";
    argv[argc++] = "--logfile";
    argv[argc++] = logfile;
    argv[argc++] = "--enable-debug-command";
    argv[argc++] = "local";
    if (r->requirepass[0] != '\0') {
        argv[argc++] = "--requirepass";
        argv[argc++] = r->requirepass;
    }
    if (r->acl_user[0] != '\0') {
        snprintf(pass_rule, sizeof(pass_rule), ">%s", r->acl_pass);
        argv[argc++] = "--user";
        argv[argc++] = r->acl_user;
        argv[argc++] = "on";
        argv[argc++] = pass_rule;
        argv[argc++] = "~*";
        argv[argc++] = "&*";
        argv[argc++] = "+@all";
    }
    if (r->tls_port > 0) {
        snprintf(tls_port, sizeof(tls_port), "%d", r->tls_port);
        argv[argc++] = "--tls-port";
        argv[argc++] = tls_port;
        argv[argc++] = "--tls-cert-file";
        argv[argc++] = r->tls_cert;
        argv[argc++] = "--tls-key-file";
        argv[argc++] = r->tls_key;
        argv[argc++] = "--tls-ca-cert-file";
        argv[argc++] = r->tls_ca;
        argv[argc++] = "--tls-auth-clients";
        argv[argc++] = r->tls_auth_clients ? "yes" : "no";
    }
    if (r->unix_path[0] != '\0') {
        argv[argc++] = "--unixsocket";
        argv[argc++] = r->unix_path;
        argv[argc++] = "--unixsocketperm";
        argv[argc++] = "700";
    }
    for (size_t i = 0; r->extra_args != NULL && r->extra_args[i] != NULL &&
                       argc < ARGV_MAX - 1;
         i++)
        argv[argc++] = r->extra_args[i];
    argv[argc] = NULL;

    fflush(NULL);
    pid = fork();
    if (pid != 0)
        return pid;

    /* Child: die with the parent thread, keep none of its fds. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int in = open("/dev/null", O_RDONLY);
    int out = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in >= 0)
        dup2(in, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    close_range(3, ~0U, 0);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

static redisContext *connect_port(int port, int timeout_ms)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout(HARNESS_HOST, port, tv);

    if (c == NULL)
        return NULL;
    if (c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    return c;
}

static int auth_ctx(redisContext *c, const struct rl_redis *r)
{
    redisReply *rep;
    int ok;

    if (r->requirepass[0] == '\0')
        return 0;
    rep = redisCommand(c, "AUTH %s", r->requirepass);
    ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
    if (rep != NULL)
        freeReplyObject(rep);
    return ok ? 0 : -1;
}

enum ready { READY_OK, READY_EXITED, READY_TIMEOUT, READY_NOT_EMPTY };

/* Poll until the server answers PONG (and, for a first start, DBSIZE 0),
 * exits or times out. After a restart the live clients of the test may
 * already have written to it: only our own fresh process answers there. */
/* Whether the server answering on c is r's own process: another test
 * program's server may hold the port that r's was told to take (picked
 * free, then taken before r's server bound it), and would answer PING
 * while r's own exits. A user that may not run INFO cannot tell: yes. */
static bool answers_as_ours(redisContext *c, const struct rl_redis *r)
{
    redisReply *rep = redisCommand(c, "INFO server");
    const char *id;
    bool ours = true;

    if (rep != NULL && rep->type == REDIS_REPLY_STRING &&
        (id = strstr(rep->str, "process_id:")) != NULL)
        ours = strtol(id + strlen("process_id:"), NULL, 10) == (long)r->pid;
    if (rep != NULL)
        freeReplyObject(rep);
    return ours;
}

static enum ready wait_ready(struct rl_redis *r, bool first_start)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(START_TIMEOUT_MS);
    int status;

    while (harness_now_ms() < deadline) {
        pid_t w = waitpid(r->pid, &status, WNOHANG);
        redisContext *c;

        if (w == r->pid) {
            r->pid = 0;
            return READY_EXITED;
        }
        c = connect_port(r->port, 100);
        if (c != NULL && auth_ctx(c, r) == 0) {
            redisReply *rep = redisCommand(c, "PING");
            bool pong = rep != NULL && rep->type == REDIS_REPLY_STATUS &&
                        strcmp(rep->str, "PONG") == 0;

            if (rep != NULL)
                freeReplyObject(rep);
            if (pong && !answers_as_ours(c, r))
                pong = false; /* a stranger's: ours exits, or binds later */
            if (pong) {
                rep = redisCommand(c, "DBSIZE");
                bool empty = rep != NULL &&
                             rep->type == REDIS_REPLY_INTEGER &&
                             rep->integer == 0;

                if (rep != NULL)
                    freeReplyObject(rep);
                redisFree(c);
                return empty || !first_start ? READY_OK : READY_NOT_EMPTY;
            }
        }
        if (c != NULL)
            redisFree(c);
        harness_sleep_ms(10);
    }
    return READY_TIMEOUT;
}

static void print_log_tail(const struct rl_redis *r)
{
    char path[HARNESS_DIR_MAX + 32];
    char line[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/redis.log", r->dir);
    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(path, sizeof(path), "%s/stdout.log", r->dir);
        f = fopen(path, "r");
    }
    if (f == NULL)
        return;
    fprintf(stderr, "harness: --- %s ---\n", path);
    while (fgets(line, sizeof(line), f) != NULL)
        fprintf(stderr, "  %s", line);
    fclose(f);
}

/* Fork the server on r->port and wait for it. 0 ok, 1 exited early (port
 * taken?), -1 other failure. */
static int launch(struct rl_redis *r, bool first_start)
{
    enum ready rd;

    r->pid = spawn(r);
    if (r->pid < 0) {
        r->pid = 0;
        fprintf(stderr, "harness: fork: %s\n", strerror(errno));
        return -1;
    }
    if (registry_set(r->dir, r->pid) != 0) {
        kill_and_reap(r->pid);
        r->pid = 0;
        return -1;
    }
    rd = wait_ready(r, first_start);
    if (rd == READY_OK) {
        r->running = true;
        r->paused = false;
        return 0;
    }
    if (rd == READY_EXITED) {
        registry_set(r->dir, 0);
        return 1;
    }
    kill_and_reap(r->pid);
    r->pid = 0;
    registry_set(r->dir, 0);
    if (rd == READY_NOT_EMPTY)
        fprintf(stderr, "harness: server on port %d is not empty, "
                        "refusing to use it\n", r->port);
    else
        fprintf(stderr, "harness: server on port %d did not answer PING\n",
                r->port);
    print_log_tail(r);
    return -1;
}

static void copy_cred(char *dst, const char *src)
{
    snprintf(dst, HARNESS_CRED_MAX, "%s", src != NULL ? src : "");
}

int harness_start(struct rl_redis *r, const struct harness_opts *o)
{
    const char *tmp = getenv("TMPDIR");
    int rc = 1;

    memset(r, 0, sizeof(*r));
    if (o != NULL) {
        copy_cred(r->requirepass, o->requirepass);
        copy_cred(r->acl_user, o->acl_user);
        copy_cred(r->acl_pass, o->acl_pass);
        r->extra_args = o->extra_args;
        if (o->tls_cert != NULL) {
            snprintf(r->tls_cert, sizeof(r->tls_cert), "%s", o->tls_cert);
            snprintf(r->tls_key, sizeof(r->tls_key), "%s", o->tls_key);
            snprintf(r->tls_ca, sizeof(r->tls_ca), "%s", o->tls_ca);
            r->tls_auth_clients = o->tls_auth_clients;
        }
    }
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    snprintf(r->dir, sizeof(r->dir), "%s/rl-redis-XXXXXX", tmp);
    if (mkdtemp(r->dir) == NULL) {
        fprintf(stderr, "harness: mkdtemp %s: %s\n", r->dir, strerror(errno));
        r->dir[0] = '\0';
        return -1;
    }
    if (o != NULL && o->unix_socket) {
        struct sockaddr_un sun;

        snprintf(r->unix_path, sizeof(r->unix_path), "%s/redis.sock",
                 r->dir);
        if (strlen(r->unix_path) >= sizeof(sun.sun_path)) {
            fprintf(stderr, "harness: socket path %s is too long (TMPDIR)\n",
                    r->unix_path);
            rmdir(r->dir);
            r->dir[0] = '\0';
            return -1;
        }
    }
    for (int attempt = 0; attempt < START_ATTEMPTS && rc == 1; attempt++) {
        r->port = harness_free_port();
        if (r->tls_cert[0] != '\0') {
            do
                r->tls_port = harness_free_port();
            while (r->tls_port == r->port);
        }
        if (r->port <= 0 || r->tls_port < 0) {
            fprintf(stderr, "harness: no free port: %s\n", strerror(errno));
            rc = -1;
            break;
        }
        rc = launch(r, true);
    }
    if (rc != 0) {
        if (rc == 1) {
            fprintf(stderr, "harness: redis-server keeps exiting at start\n");
            print_log_tail(r);
        }
        harness_stop(r);
        return -1;
    }
    return 0;
}

void harness_kill(struct rl_redis *r)
{
    if (r == NULL)
        return;
    if (r->pid > 0) {
        kill_and_reap(r->pid);
        registry_set(r->dir, 0);
    }
    r->pid = 0;
    r->running = false;
    r->paused = false;
}

void harness_stop(struct rl_redis *r)
{
    if (r == NULL)
        return;
    harness_kill(r);
    if (r->dir[0] != '\0') {
        remove_dir(r->dir);
        registry_drop(r->dir);
        r->dir[0] = '\0';
    }
}

int harness_restart(struct rl_redis *r)
{
    int rc = 1;

    if (r == NULL || r->port <= 0 || r->dir[0] == '\0')
        return -1;
    harness_kill(r);
    /* Same port: if it is briefly unavailable, try again a few times. */
    for (int attempt = 0; attempt < START_ATTEMPTS && rc == 1; attempt++) {
        if (attempt > 0)
            harness_sleep_ms(100);
        rc = launch(r, false);
    }
    if (rc != 0) {
        fprintf(stderr, "harness: restart on port %d failed\n", r->port);
        print_log_tail(r);
        return -1;
    }
    return 0;
}

/* Send sig (SIGSTOP or SIGCONT) to a running server; paused: what it
 * is then. */
static int signal_server(struct rl_redis *r, int sig, bool paused)
{
    if (r == NULL || !r->running || r->pid <= 0)
        return -1;
    if (kill(r->pid, sig) != 0)
        return -1;
    r->paused = paused;
    return 0;
}

int harness_pause(struct rl_redis *r)
{
    return signal_server(r, SIGSTOP, true);
}

int harness_resume(struct rl_redis *r)
{
    return signal_server(r, SIGCONT, false);
}

int harness_cluster_start(struct rl_redis *arr, int n,
                          const struct harness_opts *o)
{
    for (int i = 0; i < n; i++) {
        if (harness_start(&arr[i], o) != 0) {
            harness_cluster_stop(arr, i);
            return -1;
        }
    }
    return 0;
}

void harness_cluster_stop(struct rl_redis *arr, int n)
{
    for (int i = 0; arr != NULL && i < n; i++)
        harness_stop(&arr[i]);
}

int harness_cluster_start_nodes(struct rl_redis *arr, int n,
                                const struct harness_opts *o,
                                struct harness_nodes *hn)
{
    if (harness_cluster_start(arr, n, o) != 0)
        return -1;
    harness_nodes_fill(hn, arr, n);
    return 0;
}

bool harness_wait_uptime(const struct rl_redis *arr, int n, int secs)
{
    char buf[32];

    for (int i = 0; i < n; i++) {
        int64_t deadline = harness_now_ms() + 1000 * (secs + 3);

        if (!arr[i].running)
            continue;
        for (;;) {
            if (harness_info_field(&arr[i], "server", "uptime_in_seconds",
                                   buf, sizeof(buf)) != 0) {
                fprintf(stderr, "harness: port %d: no uptime in INFO\n",
                        arr[i].port);
                return false;
            }
            if (atoi(buf) >= secs)
                break;
            if (harness_now_ms() >= deadline) {
                fprintf(stderr, "harness: port %d: uptime %s s, want %d\n",
                        arr[i].port, buf, secs);
                return false;
            }
            harness_sleep_ms(100);
        }
    }
    return true;
}

/* ---- URIs ---- */

char *harness_uri(const struct rl_redis *r, char *buf, size_t len)
{
    if (r->requirepass[0] != '\0')
        return harness_uri_auth(r, NULL, r->requirepass, buf, len);
    snprintf(buf, len, "%s:%d", HARNESS_HOST, r->port);
    return buf;
}

char *harness_uri_auth(const struct rl_redis *r, const char *user,
                       const char *pass, char *buf, size_t len)
{
    bool has_user = user != NULL && user[0] != '\0';
    bool has_pass = pass != NULL && pass[0] != '\0';

    if (!has_user && !has_pass)
        snprintf(buf, len, "redis://%s:%d", HARNESS_HOST, r->port);
    else
        snprintf(buf, len, "redis://%s:%s@%s:%d", has_user ? user : "",
                 has_pass ? pass : "", HARNESS_HOST, r->port);
    return buf;
}

void harness_nodes_fill(struct harness_nodes *hn, const struct rl_redis *arr,
                        int n)
{
    memset(hn, 0, sizeof(*hn));
    for (int i = 0; i < n && i < HARNESS_MAX_SERVERS; i++) {
        harness_uri(&arr[i], hn->uri[i], sizeof(hn->uri[i]));
        hn->ptr[i] = hn->uri[i];
        hn->count++;
    }
}

void harness_nodes_set(struct harness_nodes *hn, int i, const char *uri)
{
    if (i < 0 || i >= HARNESS_MAX_SERVERS)
        return;
    snprintf(hn->uri[i], sizeof(hn->uri[i]), "%s", uri);
    hn->ptr[i] = hn->uri[i];
    if (hn->count < (size_t)i + 1)
        hn->count = (size_t)i + 1;
}

/* ---- Sync commands ---- */

redisContext *harness_connect(const struct rl_redis *r)
{
    redisContext *c = connect_port(r->port, CMD_TIMEOUT_S * 1000);

    if (c == NULL) {
        fprintf(stderr, "harness: cannot connect to port %d\n", r->port);
        return NULL;
    }
    if (auth_ctx(c, r) != 0) {
        fprintf(stderr, "harness: AUTH failed on port %d\n", r->port);
        redisFree(c);
        return NULL;
    }
    return c;
}

static redisReply *vcmd(const struct rl_redis *r, const char *fmt,
                        va_list ap)
{
    redisContext *c = harness_connect(r);
    redisReply *rep;

    if (c == NULL)
        return NULL;
    rep = redisvCommand(c, fmt, ap);
    if (rep == NULL)
        fprintf(stderr, "harness: port %d: %s\n", r->port, c->errstr);
    redisFree(c);
    return rep;
}

redisReply *harness_cmd(const struct rl_redis *r, const char *fmt, ...)
{
    va_list ap;
    redisReply *rep;

    va_start(ap, fmt);
    rep = vcmd(r, fmt, ap);
    va_end(ap);
    return rep;
}

redisReply *harness_cmd_argv(const struct rl_redis *r, int argc,
                             const char **argv)
{
    redisContext *c = harness_connect(r);
    redisReply *rep;

    if (c == NULL)
        return NULL;
    rep = redisCommandArgv(c, argc, argv, NULL);
    if (rep == NULL)
        fprintf(stderr, "harness: port %d: %s\n", r->port, c->errstr);
    redisFree(c);
    return rep;
}

char *harness_get(const struct rl_redis *r, const char *key)
{
    redisReply *rep = harness_cmd(r, "GET %s", key);
    char *s = NULL;

    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        s = malloc(rep->len + 1);
        if (s != NULL) {
            memcpy(s, rep->str, rep->len);
            s[rep->len] = '\0';
        }
    }
    if (rep != NULL)
        freeReplyObject(rep);
    return s;
}

static long long integer_cmd(const struct rl_redis *r, long long err,
                             const char *fmt, const char *arg)
{
    return harness_int(arg != NULL ? harness_cmd(r, fmt, arg)
                                   : harness_cmd(r, "%s", fmt),
                       err);
}

long long harness_pttl(const struct rl_redis *r, const char *key)
{
    return integer_cmd(r, -3, "PTTL %s", key);
}

long long harness_dbsize(const struct rl_redis *r)
{
    return integer_cmd(r, -1, "DBSIZE", NULL);
}

long long harness_count_keys(const struct rl_redis *r, const char *pattern)
{
    redisReply *rep = harness_cmd(r, "KEYS %s", pattern);
    long long n = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY)
        n = (long long)rep->elements;
    if (rep != NULL)
        freeReplyObject(rep);
    return n;
}

long long harness_int(redisReply *reply, long long err)
{
    long long v = err;

    if (reply != NULL && reply->type == REDIS_REPLY_INTEGER)
        v = reply->integer;
    if (reply != NULL)
        freeReplyObject(reply);
    return v;
}

int harness_ok(redisReply *reply)
{
    int ok = reply != NULL && reply->type == REDIS_REPLY_STATUS;

    if (reply != NULL)
        freeReplyObject(reply);
    return ok;
}

int harness_info_field(const struct rl_redis *r, const char *section,
                       const char *field, char *buf, size_t len)
{
    redisReply *rep = section != NULL ? harness_cmd(r, "INFO %s", section)
                                      : harness_cmd(r, "INFO");
    size_t flen = strlen(field);
    int rc = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
        const char *p = rep->str;

        while (p != NULL && *p != '\0') {
            if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
                const char *v = p + flen + 1;
                size_t n = strcspn(v, "\r\n");

                snprintf(buf, len, "%.*s", (int)n, v);
                rc = 0;
                break;
            }
            p = strchr(p, '\n');
            if (p != NULL)
                p++;
        }
    }
    if (rep != NULL)
        freeReplyObject(rep);
    return rc;
}

/* ---- Checks on what Redis holds ---- */

/* Scaled. A round returns at its quorum; on a loaded machine the last
 * nodes' writes land later, more than a second later at times (a node
 * still at its old PTTL after rl_extend, 3 of 60 runs at 1000 ms). Only a
 * failing check waits all of it. */
#define SETTLE_MS 3000
#define SETTLE_STEP_MS 10
#define WITHIN_STEP_MS 20

/* One look at the servers; true when what the caller waits for is
 * there. */
typedef bool (*look_fn)(void *arg);

/* Look, then look again every SETTLE_STEP_MS for harness_scale_ms(
 * SETTLE_MS), until look says yes (replies still on their way after a
 * majority answered: on a busy machine the nodes a decision did not wait
 * for can lag by hundreds of milliseconds). */
static bool settle(look_fn look, void *arg)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(SETTLE_MS);
    bool ok = look(arg);

    while (!ok && harness_now_ms() < deadline) {
        harness_sleep_ms(SETTLE_STEP_MS);
        ok = look(arg);
    }
    return ok;
}

/* Look until yes or the deadline (mono ms) has passed; always once. */
static bool until(look_fn look, void *arg, int64_t deadline)
{
    bool ok = look(arg);

    while (!ok && harness_now_ms() < deadline) {
        harness_sleep_ms(WITHIN_STEP_MS);
        ok = look(arg);
    }
    return ok;
}

static int64_t deadline_in(int64_t ms)
{
    return harness_now_ms() + harness_scale_ms(ms);
}

struct key_look {
    const struct rl_redis *r;
    const char *key;
    const char *value;
    long long min_pttl;
    long long max_pttl;
    char *seen;     /* last value seen (malloc'd), NULL if none */
    long long pttl; /* last PTTL seen */
};

static bool look_holds(void *arg)
{
    struct key_look *k = arg;

    free(k->seen);
    k->seen = harness_get(k->r, k->key);
    k->pttl = harness_pttl(k->r, k->key);
    return k->seen != NULL && strcmp(k->seen, k->value) == 0 &&
           k->pttl >= k->min_pttl && k->pttl <= k->max_pttl;
}

static bool report_holds(struct key_look *k, bool ok)
{
    if (!ok)
        fprintf(stderr, "port %d: %s = %s (want %s), PTTL %lld (want "
                        "%lld..%lld)\n",
                k->r->port, k->key, k->seen ? k->seen : "(nil)", k->value,
                k->pttl, k->min_pttl, k->max_pttl);
    free(k->seen);
    return ok;
}

bool harness_key_holds_ttl(const struct rl_redis *r, const char *key,
                           const char *value, long long min_pttl,
                           long long max_pttl)
{
    struct key_look k = { r, key, value, min_pttl, max_pttl, NULL, -3 };

    return report_holds(&k, settle(look_holds, &k));
}

bool harness_key_holds_within(const struct rl_redis *r, const char *key,
                              const char *value, int64_t ms)
{
    struct key_look k = { r, key, value, 1, LLONG_MAX, NULL, -3 };

    return report_holds(&k, until(look_holds, &k, deadline_in(ms)));
}

bool harness_key_holds(const struct rl_redis *r, const char *key,
                       const char *value)
{
    return harness_key_holds_ttl(r, key, value, 1, LLONG_MAX);
}

static bool look_absent(void *arg)
{
    struct key_look *k = arg;

    k->pttl = harness_pttl(k->r, k->key);
    return k->pttl == -2;
}

bool harness_key_absent(const struct rl_redis *r, const char *key)
{
    struct key_look k = { r, key, NULL, 0, 0, NULL, -3 };
    bool ok = settle(look_absent, &k);

    if (!ok)
        fprintf(stderr, "port %d: %s still exists (PTTL %lld)\n", r->port,
                key, k.pttl);
    return ok;
}

struct size_look {
    const struct rl_redis *r;
    long long n; /* last DBSIZE seen */
};

static bool look_empty(void *arg)
{
    struct size_look *s = arg;

    s->n = harness_dbsize(s->r);
    return s->n == 0;
}

static bool report_empty(const struct size_look *s, bool ok)
{
    if (!ok) {
        fprintf(stderr, "port %d: DBSIZE %lld, want 0\n", s->r->port, s->n);
        harness_print_keys(s->r);
    }
    return ok;
}

bool harness_empty(const struct rl_redis *r)
{
    struct size_look s = { r, -1 };

    return report_empty(&s, settle(look_empty, &s));
}

static bool empty_until(const struct rl_redis *r, int64_t deadline)
{
    struct size_look s = { r, -1 };

    return report_empty(&s, until(look_empty, &s, deadline));
}

bool harness_empty_within(const struct rl_redis *r, int64_t ms)
{
    return empty_until(r, deadline_in(ms));
}

bool harness_all_empty(const struct rl_redis *arr, int n)
{
    bool ok = true;

    for (int i = 0; i < n; i++)
        ok = harness_empty(&arr[i]) && ok;
    return ok;
}

bool harness_all_empty_within(const struct rl_redis *arr, int n,
                              int64_t ms)
{
    int64_t deadline = deadline_in(ms);
    bool ok = true;

    for (int i = 0; i < n; i++)
        ok = empty_until(&arr[i], deadline) && ok;
    return ok;
}

static bool looked_at(const struct rl_redis *r)
{
    return r->running && !r->paused;
}

bool harness_live_hold(const struct rl_redis *arr, int n, const char *key,
                       const char *value)
{
    int live = 0;
    bool ok = true;

    for (int i = 0; i < n; i++) {
        if (looked_at(&arr[i])) {
            live++;
            ok = harness_key_holds(&arr[i], key, value) && ok;
        }
    }
    return live > 0 && ok;
}

bool harness_live_empty(const struct rl_redis *arr, int n)
{
    int live = 0;
    bool ok = true;

    for (int i = 0; i < n; i++) {
        if (looked_at(&arr[i])) {
            live++;
            ok = harness_empty(&arr[i]) && ok;
        }
    }
    return live > 0 && ok;
}

int harness_holders(const struct rl_redis *arr, int n, const char *key,
                    const char *value, long long *max_pttl)
{
    int count = 0;

    if (max_pttl != NULL)
        *max_pttl = -3;
    for (int i = 0; i < n; i++) {
        char *v;
        long long pttl;

        if (!looked_at(&arr[i]))
            continue;
        v = harness_get(&arr[i], key);
        pttl = harness_pttl(&arr[i], key);
        if (v != NULL && strcmp(v, value) == 0 && pttl > 0)
            count++;
        if (max_pttl != NULL && pttl > *max_pttl)
            *max_pttl = pttl;
        free(v);
    }
    return count;
}

int harness_key_count(const struct rl_redis *arr, int n, const char *key)
{
    int count = 0;

    for (int i = 0; i < n; i++) {
        if (looked_at(&arr[i]) && harness_pttl(&arr[i], key) != -2)
            count++;
    }
    return count;
}

struct gone_look {
    const struct rl_redis *arr;
    int n;
    const char *key;
};

static bool look_gone(void *arg)
{
    const struct gone_look *g = arg;

    return harness_key_count(g->arr, g->n, g->key) == 0;
}

bool harness_key_gone(const struct rl_redis *arr, int n, const char *key)
{
    struct gone_look g = { arr, n, key };

    return settle(look_gone, &g);
}

bool harness_key_gone_within(const struct rl_redis *arr, int n,
                             const char *key, int64_t ms)
{
    struct gone_look g = { arr, n, key };

    return until(look_gone, &g, deadline_in(ms));
}

struct count_look {
    const struct rl_redis *arr;
    int n;
    const char *key;
    int want;
    int count; /* at the last look */
};

static bool look_count(void *arg)
{
    struct count_look *c = arg;

    c->count = harness_key_count(c->arr, c->n, c->key);
    return c->want > 0 ? c->count >= c->want : c->count == 0;
}

int harness_key_count_within(const struct rl_redis *arr, int n,
                             const char *key, int want, int64_t ms)
{
    struct count_look c = { arr, n, key, want, 0 };

    until(look_count, &c, deadline_in(ms));
    return c.count;
}

long long harness_numsub(const struct rl_redis *r, const char *channel)
{
    redisReply *rep = harness_cmd(r, "PUBSUB NUMSUB %s", channel);
    long long n = -1;

    if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER)
        n = rep->element[1]->integer;
    if (rep != NULL)
        freeReplyObject(rep);
    return n;
}

bool harness_all_subscribed(const struct rl_redis *arr, int n,
                            const char *channel, int64_t ms)
{
    int64_t deadline = harness_now_ms() + harness_scale_ms(ms);
    int missing;

    do {
        missing = 0;
        for (int i = 0; i < n; i++)
            missing += harness_numsub(&arr[i], channel) < 1;
        if (missing == 0)
            return true;
        harness_sleep_ms(WITHIN_STEP_MS);
    } while (harness_now_ms() < deadline);
    fprintf(stderr, "%s: no subscriber on %d of %d servers after %lld ms\n",
            channel, missing, n, (long long)harness_scale_ms(ms));
    return false;
}

/* What one server said of a key: GET and PTTL on one connection, with
 * the monotonic time just after the reply. */
struct expiry_look {
    char seen[256];  /* the value, "(nil)" if none, "(error)" */
    long long pttl;  /* -2 absent, -1 no expiry, -3 error */
    int64_t read_ms; /* harness_now_ms() after the replies */
};

static void look_expiry(const struct rl_redis *r, const char *key,
                        struct expiry_look *e)
{
    redisContext *c = harness_connect(r);
    redisReply *get = NULL;
    redisReply *pttl = NULL;

    snprintf(e->seen, sizeof(e->seen), "(error)");
    e->pttl = -3;
    e->read_ms = harness_now_ms();
    if (c != NULL && redisAppendCommand(c, "GET %s", key) == REDIS_OK &&
        redisAppendCommand(c, "PTTL %s", key) == REDIS_OK &&
        redisGetReply(c, (void **)&get) == REDIS_OK &&
        redisGetReply(c, (void **)&pttl) == REDIS_OK) {
        e->read_ms = harness_now_ms();
        if (get->type == REDIS_REPLY_STRING)
            snprintf(e->seen, sizeof(e->seen), "%.*s", (int)get->len,
                     get->str);
        else if (get->type == REDIS_REPLY_NIL)
            snprintf(e->seen, sizeof(e->seen), "(nil)");
        e->pttl = harness_int(pttl, -3);
        pttl = NULL;
    }
    if (get != NULL)
        freeReplyObject(get);
    if (pttl != NULL)
        freeReplyObject(pttl);
    if (c != NULL)
        redisFree(c);
}

/* The key's expiry is an instant: the server read PTTL between sending
 * and read_ms, so it expires at read_ms + pttl or a little before, and a
 * write of ttl_ms at since_ms or later expires at since_ms + ttl_ms or
 * after (1 ms for the server's and our clocks rounding apart). Unlike a
 * PTTL window, this does not decay while a check waits. */
static bool expiry_ok(const struct expiry_look *e, int64_t since_ms,
                      long long ttl_ms)
{
    if (ttl_ms <= 0)
        return true;
    return e->pttl > 0 && e->pttl <= ttl_ms &&
           e->read_ms + e->pttl + 1 >= since_ms + ttl_ms;
}

bool harness_all_hold_ttl(const struct rl_redis *arr, int n, const char *key,
                          const char *value, int64_t since_ms,
                          long long ttl_ms)
{
    int64_t deadline = deadline_in(SETTLE_MS);
    struct expiry_look e[HARNESS_MAX_SERVERS];
    bool held[HARNESS_MAX_SERVERS];
    bool all;

    if (n > HARNESS_MAX_SERVERS)
        return false;
    for (;;) {
        all = true;
        for (int i = 0; i < n; i++) {
            look_expiry(&arr[i], key, &e[i]);
            held[i] = strcmp(e[i].seen, value) == 0 &&
                      expiry_ok(&e[i], since_ms, ttl_ms);
            all = all && held[i];
        }
        if (all || harness_now_ms() >= deadline)
            break;
        harness_sleep_ms(SETTLE_STEP_MS);
    }
    for (int i = 0; i < n; i++) {
        if (held[i])
            continue;
        fprintf(stderr, "port %d: %s = %s (want %s), PTTL %lld", arr[i].port,
                key, e[i].seen, value, e[i].pttl);
        if (ttl_ms > 0)
            fprintf(stderr, " (want <= %lld), expires %+lld ms from since + "
                            "ttl (want >= 0)",
                    ttl_ms,
                    (long long)(e[i].read_ms + e[i].pttl - since_ms - ttl_ms));
        fprintf(stderr, "\n");
    }
    return all;
}

void harness_print_keys(const struct rl_redis *r)
{
    redisReply *keys = harness_cmd(r, "KEYS *");

    for (size_t i = 0; keys != NULL && keys->type == REDIS_REPLY_ARRAY &&
                       i < keys->elements && i < 10;
         i++) {
        const char *k = keys->element[i]->str;
        char *v = harness_get(r, k);

        fprintf(stderr, "  %s = %s, PTTL %lld\n", k,
                v ? v : "(not a string)", harness_pttl(r, k));
        free(v);
    }
    if (keys != NULL)
        freeReplyObject(keys);
}

bool harness_wait_count(atomic_int *counter, int want, int64_t ms)
{
    int64_t deadline = deadline_in(ms);

    while (atomic_load(counter) < want && harness_now_ms() < deadline)
        harness_sleep_ms(2);
    return atomic_load(counter) >= want;
}
