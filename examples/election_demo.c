/* SPDX-License-Identifier: BSD-3-Clause */
/* election_demo -- campaign, proclaim, observe and resign.
 *   election_demo name owner host:port [host:port...]
 * An observer prints every change of leader of name (on the client's loop
 * thread); this process campaigns for it, publishes "<owner>:ready" with
 * rl_proclaim once leader, then resigns. The nodes are trusted to persist
 * every write (tools/nodes.sh starts them with appendfsync always), so
 * freshly started nodes vote at once. */
#include <redlock.h>
#include <stdio.h>
#include <unistd.h>

static void changed(rl_observer *obs, rl_status st,
                    const rl_resource_info *info, void *privdata)
{
    (void)obs;
    if (st != RL_OK)
        printf("observer: %s\n", rl_strerror(st));
    else if (info->held)
        printf("%s: leader %s, term %llu\n", (const char *)privdata,
               info->owner[0] != '\0' ? info->owner : "unknown",
               (unsigned long long)info->term);
    else
        printf("%s: no leader\n", (const char *)privdata);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *name = argc > 3 ? argv[1] : NULL;
    char ready[RL_OWNER_MAX + 1];
    rl_acquire_opts o = {0};
    rl_observer *obs = NULL;
    rl_config cfg;
    rl_client *c;
    rl_lock *l;
    rl_status st;

    if (name == NULL) {
        fprintf(stderr, "usage: election_demo name owner host:port "
                        "[host:port...]\n");
        return 2;
    }
    rl_config_init(&cfg);
    cfg.nodes = (const char *const *)argv + 3;
    cfg.node_count = (size_t)(argc - 3);
    cfg.trust_restarted_nodes = true;
    c = rl_client_new(&cfg, &st);
    if (c == NULL) {
        fprintf(stderr, "election_demo: %s\n", rl_last_error());
        return 2;
    }
    st = rl_observe(c, name, changed, (void *)name, &obs);
    o.ttl_ms = 5000;
    o.owner = argv[2];
    if (st == RL_OK)
        st = rl_campaign(c, name, &o, &l); /* waits until leader */
    if (st != RL_OK) {
        fprintf(stderr, "election_demo: %s: %s\n", rl_strerror(st),
                rl_last_error());
        rl_observe_stop(obs);
        rl_client_free(c);
        return 1;
    }
    sleep(1); /* ... lead: the watchdog keeps the lock ... */
    snprintf(ready, sizeof(ready), "%.58s:ready", o.owner);
    st = rl_proclaim(l, ready);
    if (st != RL_OK)
        fprintf(stderr, "election_demo: proclaim: %s\n", rl_last_error());
    sleep(1);
    rl_release(l); /* resign */
    sleep(1);
    rl_observe_stop(obs);
    rl_client_free(c);
    return st == RL_OK ? 0 : 1;
}
