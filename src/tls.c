/* SPDX-License-Identifier: BSD-3-Clause */
/* tls.c -- OpenSSL client contexts, targets and per-connection SSL objects
 * (the TLS half of conn.c).
 *
 * Owns:
 *   struct tls_ctx     one SSL_CTX per configuration: TLS 1.2 minimum,
 *                      verification on (system trust store, or a CA file /
 *                      directory) unless "insecure" was asked for, the
 *                      optional client certificate + key (mutual TLS), and
 *                      a socket BIO method that never raises SIGPIPE.
 *   struct tls_target  one per connection target (node): the name sent as
 *                      SNI and verified, and the last session the server
 *                      issued, offered again on the next connect
 *                      (resumption). TLS 1.3 tickets arrive after the
 *                      handshake, so sessions are taken from the context's
 *                      new-session callback, not from SSL_get1_session.
 *
 * Invariants: every file is checked when the context is made (a bad file
 * is a configuration error naming the file, never key material); a key
 * passphrase is never prompted for (encrypted keys fail); the OpenSSL
 * error queue of the calling thread is drained by every function that
 * reports an error. Lifetimes: ctx outlives its targets, a target
 * outlives the SSL objects made from it (the SSL's app data points at
 * it). conn.c drives the handshake and the I/O. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tls.h"

struct tls_ctx {
    SSL_CTX *ssl_ctx;
    BIO_METHOD *bio_method;      /* send/recv with MSG_NOSIGNAL */
    char *server_name;           /* explicit SNI / verified name, or NULL */
    bool insecure;
};

struct tls_target {
    struct tls_ctx *ctx;
    bool cert_requested;         /* the last handshake was asked for a
                                    client certificate we do not have */
    char *name;                  /* SNI (unless an IP) and verified name */
    bool name_is_ip;
    SSL_SESSION *session;        /* last resumable session, or NULL */
};

/* ---- Socket BIO ---------------------------------------------------------
 * OpenSSL's own socket BIO writes with write(2), which raises SIGPIPE when
 * the server has gone; a library must not change the process's signal
 * disposition, so ours uses send(MSG_NOSIGNAL). */

static int bio_write(BIO *b, const char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    ssize_t n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);

    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    ssize_t n = recv(fd, buf, (size_t)len, 0);

    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_read(b);
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    RL_UNUSED(b);
    RL_UNUSED(num);
    RL_UNUSED(ptr);
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *bio_method_new(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOURCE_SINK | BIO_get_new_index(),
                                 "redlock socket");

    if (m == NULL)
        return NULL;
    if (!BIO_meth_set_write(m, bio_write) ||
        !BIO_meth_set_read(m, bio_read) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) ||
        !BIO_meth_set_create(m, bio_create)) {
        BIO_meth_free(m);
        return NULL;
    }
    return m;
}

/* ---- Errors ------------------------------------------------------------- */

/* OpenSSL's text for the oldest queued error (then the queue is empty),
 * or NULL; *reason gets its reason code (0 with NULL). */
static const char *take_error(int *reason, char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    const char *s;

    ERR_clear_error();
    *reason = 0;
    if (e == 0)
        return NULL;
    *reason = ERR_GET_REASON(e);
    s = ERR_reason_error_string(e);
    if (s != NULL)
        return s;
    ERR_error_string_n(e, buf, len);
    return buf;
}

static const char *verify_category(long v)
{
    switch (v) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        return "unknown CA";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        return "host-name mismatch";
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return "certificate expired";
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return "certificate not yet valid";
    default:
        return "rejected";
    }
}

void tls_error_text(SSL *ssl, int ret, int ssl_error, bool early,
                    char *buf, size_t len)
{
    long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    struct tls_target *t = ssl != NULL ? SSL_get_app_data(ssl) : NULL;
    int reason = 0;
    char tmp[160];
    const char *s;

    if (early && t != NULL && t->cert_requested) {
        ERR_clear_error();
        snprintf(buf, len, "the server requires a client certificate "
                           "(none configured)");
        return;
    }
    if (v != X509_V_OK) {
        ERR_clear_error();
        snprintf(buf, len, "certificate verification failed: %s (%s)",
                 verify_category(v), X509_verify_cert_error_string(v));
        return;
    }
    s = take_error(&reason, tmp, sizeof(tmp));
    if (s != NULL) {
        if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
            reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
            snprintf(buf, len, "the server requires a client certificate "
                               "(%s)", s);
        else if (reason == SSL_R_WRONG_VERSION_NUMBER ||
                 reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
                 reason == SSL_R_UNKNOWN_PROTOCOL ||
                 reason == SSL_R_RECORD_LENGTH_MISMATCH)
            snprintf(buf, len, "not a TLS server, is the port plaintext? "
                               "(%s)", s);
        else if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
            snprintf(buf, len, "connection closed by server");
        else
            snprintf(buf, len, "%s", s);
    } else if (ssl_error == SSL_ERROR_SYSCALL && ret < 0 && errno != 0) {
        snprintf(buf, len, "%s", strerror(errno));
    } else if (ssl_error == SSL_ERROR_ZERO_RETURN) {
        snprintf(buf, len, "connection closed by server (close_notify)");
    } else {
        snprintf(buf, len, "connection closed by server");
    }
}

/* ---- Contexts ----------------------------------------------------------- */

/* Called only when the server asks for a client certificate and none is
 * configured: remember it, for the error text, and send none. */
static int on_cert_request(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    struct tls_target *t = SSL_get_app_data(ssl);

    RL_UNUSED(x509);
    RL_UNUSED(pkey);
    if (t != NULL)
        t->cert_requested = true;
    return 0;
}

/* Never prompt for a passphrase on the terminal: encrypted keys fail. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    RL_UNUSED(buf);
    RL_UNUSED(size);
    RL_UNUSED(rwflag);
    RL_UNUSED(u);
    return 0;
}

/* Keep a copy, not sess itself: sess may be the SSL's own session, which
 * SSL_free marks not resumable when the connection ends without a
 * close_notify (a dead server, a stuck connection we drop). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
    struct tls_target *t = SSL_get_app_data(ssl);
    SSL_SESSION *copy;

    if (t == NULL || !SSL_SESSION_is_resumable(sess))
        return 0;
    copy = SSL_SESSION_dup(sess);
    if (copy == NULL)
        return 0;
    SSL_SESSION_free(t->session);
    t->session = copy;
    return 0; /* OpenSSL keeps its reference to sess */
}

static rl_status fail(char *err, size_t errlen, const char *fmt, ...)
    RL_PRINTF(3, 4);

static rl_status fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    ERR_clear_error();
    return RL_EINVAL;
}

/* A file the process can read, or a message naming it. */
static bool check_readable(const char *what, const char *path, char *err,
                           size_t errlen)
{
    FILE *f = fopen(path, "r");

    if (f == NULL) {
        fail(err, errlen, "TLS %s %s: %s", what, path, strerror(errno));
        return false;
    }
    fclose(f);
    return true;
}

/* OpenSSL refused a file: a message naming it, with OpenSSL's reason (or
 * fallback when it gave none). */
static rl_status fail_file(const char *what, const char *path,
                           const char *fallback, char *err, size_t errlen)
{
    char tmp[160];
    int reason;
    const char *why = take_error(&reason, tmp, sizeof(tmp));

    return fail(err, errlen, "TLS %s %s: %s", what, path,
                why != NULL ? why : fallback);
}

static rl_status load_trust(SSL_CTX *sc, const struct tls_config *cfg,
                            char *err, size_t errlen)
{
    DIR *d;

    if (cfg->ca_file == NULL && cfg->ca_dir == NULL) {
        if (SSL_CTX_set_default_verify_paths(sc) != 1)
            return fail(err, errlen, "TLS: cannot load the system trust "
                                     "store");
        return RL_OK;
    }
    if (cfg->ca_file != NULL &&
        !check_readable("CA file", cfg->ca_file, err, errlen))
        return RL_EINVAL;
    if (cfg->ca_dir != NULL) {
        d = opendir(cfg->ca_dir);
        if (d == NULL)
            return fail(err, errlen, "TLS CA directory %s: %s", cfg->ca_dir,
                        strerror(errno));
        closedir(d);
    }
    if (SSL_CTX_load_verify_locations(sc, cfg->ca_file, cfg->ca_dir) != 1)
        return fail_file(cfg->ca_file != NULL ? "CA file" : "CA directory",
                         cfg->ca_file != NULL ? cfg->ca_file : cfg->ca_dir,
                         "no usable certificate", err, errlen);
    return RL_OK;
}

static rl_status load_client_cert(SSL_CTX *sc, const struct tls_config *cfg,
                                  char *err, size_t errlen)
{
    char tmp[160];
    const char *why;
    int reason;

    if (cfg->cert_file == NULL && cfg->key_file == NULL)
        return RL_OK;
    if (cfg->cert_file == NULL)
        return fail(err, errlen, "TLS key %s given without a certificate",
                    cfg->key_file);
    if (cfg->key_file == NULL)
        return fail(err, errlen, "TLS certificate %s given without a key",
                    cfg->cert_file);
    if (!check_readable("certificate", cfg->cert_file, err, errlen) ||
        !check_readable("key", cfg->key_file, err, errlen))
        return RL_EINVAL;
    if (SSL_CTX_use_certificate_chain_file(sc, cfg->cert_file) != 1)
        return fail_file("certificate", cfg->cert_file,
                         "not a PEM certificate", err, errlen);
    if (SSL_CTX_use_PrivateKey_file(sc, cfg->key_file, SSL_FILETYPE_PEM) !=
        1) {
        why = take_error(&reason, tmp, sizeof(tmp));
        if (reason == X509_R_KEY_VALUES_MISMATCH ||
            reason == X509_R_KEY_TYPE_MISMATCH)
            return fail(err, errlen, "TLS key %s does not match "
                                     "certificate %s", cfg->key_file,
                        cfg->cert_file);
        return fail(err, errlen, "TLS key %s: %s (an unencrypted PEM key "
                                 "is needed)", cfg->key_file,
                    why != NULL ? why : "unusable");
    }
    if (SSL_CTX_check_private_key(sc) != 1)
        return fail(err, errlen, "TLS key %s does not match certificate %s",
                    cfg->key_file, cfg->cert_file);
    return RL_OK;
}

rl_status tls_ctx_new(const struct tls_config *cfg, struct tls_ctx **out,
                      char *err, size_t errlen)
{
    struct tls_ctx *ctx;
    rl_status st = RL_ENOMEM;

    *out = NULL;
    err[0] = '\0';
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        goto out_fail;
    ctx->insecure = cfg->insecure;
    ctx->server_name = rl_strdup(cfg->server_name);
    ctx->ssl_ctx = SSL_CTX_new(TLS_client_method());
    ctx->bio_method = bio_method_new();
    if ((cfg->server_name != NULL && ctx->server_name == NULL) ||
        ctx->ssl_ctx == NULL || ctx->bio_method == NULL)
        goto out_fail;
    if (cfg->server_name != NULL && cfg->server_name[0] == '\0') {
        st = fail(err, errlen, "TLS server name is empty");
        goto out_fail;
    }
    SSL_CTX_set_min_proto_version(ctx->ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx->ssl_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                                       SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_default_passwd_cb(ctx->ssl_ctx, no_passphrase);
    SSL_CTX_set_session_cache_mode(ctx->ssl_ctx,
                                   SSL_SESS_CACHE_CLIENT |
                                       SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx->ssl_ctx, on_new_session);
    SSL_CTX_set_client_cert_cb(ctx->ssl_ctx, on_cert_request);
    SSL_CTX_set_verify(ctx->ssl_ctx,
                       cfg->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);
    if (!cfg->insecure || cfg->ca_file != NULL || cfg->ca_dir != NULL) {
        st = load_trust(ctx->ssl_ctx, cfg, err, errlen);
        if (st != RL_OK)
            goto out_fail;
    }
    st = load_client_cert(ctx->ssl_ctx, cfg, err, errlen);
    if (st != RL_OK)
        goto out_fail;
    *out = ctx;
    return RL_OK;

out_fail:
    if (st == RL_ENOMEM)
        snprintf(err, errlen, "TLS: out of memory");
    ERR_clear_error();
    tls_ctx_free(ctx);
    return st;
}

void tls_ctx_free(struct tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    BIO_meth_free(ctx->bio_method);
    free(ctx->server_name);
    free(ctx);
}

/* ---- Targets ------------------------------------------------------------ */

static bool is_ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

struct tls_target *tls_target_new(struct tls_ctx *ctx, const char *host)
{
    struct tls_target *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    t->ctx = ctx;
    t->name = rl_strdup(ctx->server_name != NULL ? ctx->server_name : host);
    if (t->name == NULL) {
        free(t);
        return NULL;
    }
    t->name_is_ip = is_ip_literal(t->name);
    return t;
}

void tls_target_free(struct tls_target *t)
{
    if (t == NULL)
        return;
    SSL_SESSION_free(t->session);
    free(t->name);
    free(t);
}

/* ---- Connections -------------------------------------------------------- */

SSL *tls_ssl_new(struct tls_target *t, int fd, char *err, size_t errlen)
{
    SSL *ssl = SSL_new(t->ctx->ssl_ctx);
    X509_VERIFY_PARAM *param;
    BIO *bio;
    int ok;

    if (ssl == NULL)
        goto out_fail;
    SSL_set_app_data(ssl, t);
    t->cert_requested = false;
    param = SSL_get0_param(ssl);
    X509_VERIFY_PARAM_set_hostflags(param,
                                    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    /* RFC 6066: no IP literal in SNI; IPs are checked against IP SANs. */
    if (t->name_is_ip)
        ok = X509_VERIFY_PARAM_set1_ip_asc(param, t->name);
    else
        ok = SSL_set_tlsext_host_name(ssl, t->name) &&
             X509_VERIFY_PARAM_set1_host(param, t->name, 0);
    if (!ok)
        goto out_fail;
    if (t->session != NULL && !SSL_set_session(ssl, t->session))
        goto out_fail;
    bio = BIO_new(t->ctx->bio_method);
    if (bio == NULL)
        goto out_fail;
    BIO_set_data(bio, (void *)(intptr_t)fd);
    SSL_set_bio(ssl, bio, bio);
    return ssl;

out_fail:
    snprintf(err, errlen, "TLS: cannot set up the connection for %s",
             t->name);
    ERR_clear_error();
    SSL_free(ssl);
    return NULL;
}
