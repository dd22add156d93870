/* election_demo -- campaign, proclaim, observe and resign.
 *   election_demo host:port[,host:port...] [name] [owner]
 * An observer prints every change of leader of name (on the client's loop
 * thread); this process campaigns for it, publishes "<owner>:ready" with
 * rl_proclaim once leader, then resigns. The nodes are trusted to persist
 * every write (tools/nodes.sh starts them with appendfsync always), so
 * freshly started nodes vote at once. */
#include <redlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NODES 16

static void changed(rl_observer *obs, rl_status st,
                    const rl_resource_info *info, void *privdata)
{
    (void)obs;
    if (st != RL_OK)
        printf("observer: %s\n", rl_strerror(st));
    else if (info->held)
        printf("%s: leader %s, term %llu\n", (const char *)privdata,
               info->owner[0] != '\0' ? info->owner : "unknown",
               (unsigned long long)info->fence);
    else
        printf("%s: no leader\n", (const char *)privdata);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *nodes[MAX_NODES];
    const char *name = argc > 2 ? argv[2] : "demo-leader";
    size_t count = 0;
    char *list, *save = NULL, *tok;
    char ready[RL_OWNER_MAX + 1];
    rl_acquire_opts o = {0};
    rl_observer *obs = NULL;
    rl_config cfg;
    rl_client *c;
    rl_lock *l;
    rl_status st;

    if (argc < 2) {
        fprintf(stderr, "usage: election_demo host:port[,...] [name] "
                        "[owner]\n");
        return 2;
    }
    list = strdup(argv[1]);
    for (tok = strtok_r(list, ",", &save); tok && count < MAX_NODES;
         tok = strtok_r(NULL, ",", &save))
        nodes[count++] = tok;
    rl_config_init(&cfg);
    cfg.nodes = nodes;
    cfg.node_count = count;
    cfg.trust_restarted_nodes = true;
    c = rl_client_new(&cfg, &st);
    if (c == NULL) {
        fprintf(stderr, "election_demo: %s\n", rl_last_error());
        free(list);
        return 2;
    }
    st = rl_observe(c, name, changed, (void *)name, &obs);
    o.ttl_ms = 5000;
    o.owner = argc > 3 ? argv[3] : "demo";
    if (st == RL_OK)
        st = rl_campaign(c, name, &o, &l); /* waits until leader */
    if (st != RL_OK) {
        fprintf(stderr, "election_demo: %s: %s\n", rl_strerror(st),
                rl_last_error());
        rl_observe_stop(obs);
        rl_client_free(c);
        free(list);
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
    free(list);
    return st == RL_OK ? 0 : 1;
}
