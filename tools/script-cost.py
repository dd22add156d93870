#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What each script of the lock path costs a node (issue 44 item 2).

For each script it sets up the state its common path meets (e.g. the key
holding the token, for release), runs it R times by EVALSHA with the text
the build sends (<build>/lua/sent/<name>.lua), and reads INFO
commandstats (after CONFIG RESETSTAT):

  evalsha   µs per call of the EVALSHA, the commands it calls included
  called    µs per call of the Redis commands it called (the other rows)
  lua       evalsha - called: the script's own overhead
  floor     an empty script (`return 1`) with the same KEYS and ARGV

Rows marked "lean" are written here, not in src/lua: the plain-token
common path only (GET/MGET, compare, DEL, PUBLISH), without value(),
ours(), the reservation and the readers' hash checks, so the table shows
what those helpers cost on the common path; "bare" batch rows publish
nothing (MGET, compare, DEL), to show what the publish step costs. The state is reset before
each call with MSET and UNLINK, which no script calls, so their rows are
left out of "called". Each figure is the median of --reps runs.

Usage: script-cost.py [--sent-dir DIR] [--port P] [-R N] [--reps N] [--detail]
Python 3 stdlib; starts its own redis-server unless --port is given
(the node is FLUSHALLed: use a scratch one).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "pylib"))
import rlnodes  # noqa: E402

TOK = "0123456789abcdef0123456789abcdef00000001"   # 40 hex digits
OTHER = "fedcba9876543210fedcba9876543210000000a1"
PX = "10000"

# The plain-token common path of release and release-batch. The batch
# publishes as release-batch does (only on channels with a listener), so
# the difference is the helpers' alone.
LEAN_RELEASE = """
local v = redis.call('get', KEYS[1])
if v == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', 'redlock:release:' .. KEYS[1], ARGV[1])
  return 1
end
return v and -1 or 0
"""
LUA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "src", "lua")


def lua_code(*path):
    """A script file of src/lua without its comment lines."""
    with open(os.path.join(LUA_DIR, *path)) as f:
        return "".join(line for line in f if not line.startswith("--"))


# release-batch with its loop cut to the plain-token compare: the MGET
# before the loop, the DEL and the publish step after it (and the
# publish_released include) are read from the script's own files, so the
# lean batch differs from the script by the helpers alone.
_BATCH = lua_code("release-batch.lua")
_LOOP = _BATCH.index("for i = 1, #KEYS do\n")
_AFTER = _BATCH.index("\nend\n", _LOOP) + len("\nend\n")
LEAN_RELEASE_BATCH = (lua_code("include", "publish_released.lua") +
                      _BATCH[:_LOOP] + """for i = 1, #KEYS do
  if vals[i] == ARGV[i] then
    del[#del + 1] = KEYS[i]
    done[#done + 1] = i
    out[i] = '1'
  else
    out[i] = vals[i] and '2' or '0'
  end
end
""" + _BATCH[_AFTER:])
# The batch's compare-and-delete alone (MGET, compare, DEL), publishing
# nothing: what the publish step (channel names, PUBSUB) adds.
BARE_RELEASE_BATCH = """
local vals, del = redis.call('mget', unpack(KEYS)), {}
for i = 1, #KEYS do
  if vals[i] == ARGV[i] then del[#del + 1] = KEYS[i] end
end
if #del > 0 then redis.call('del', unpack(del)) end
return #del
"""
EMPTY = "return 1"

# Reset before each call: commands no script calls, left out of "called".
RESET_CMDS = {"mset", "unlink"}


def keys_n(n):
    return ["k%d" % i for i in range(n)]


def held(keys, tok=TOK):
    """State: every key holds tok."""
    return [x for k in keys for x in (k, tok)]


def case(label, script, keys, argv, state=(), clear=(), source=None):
    return dict(label=label, script=script, keys=keys, argv=argv,
                state=list(state), clear=list(clear), source=source)


def cases():
    k1 = ["k"]
    out = [
        case("release", "release", k1, [TOK], held(k1)),
        case("release lean", "release", k1, [TOK], held(k1),
             source=LEAN_RELEASE),
        case("rollback", "rollback", k1, [TOK], held(k1)),
    ]
    for n in (1, 16, 64):
        ks = keys_n(n)
        out.append(case("release-batch %d" % n, "release-batch", ks,
                        [TOK] * n, held(ks)))
        out.append(case("release-batch %d lean" % n, "release-batch", ks,
                        [TOK] * n, held(ks), source=LEAN_RELEASE_BATCH))
        out.append(case("release-batch %d bare" % n, "release-batch", ks,
                        [TOK] * n, held(ks), source=BARE_RELEASE_BATCH))
    ks = keys_n(16)
    out += [
        case("extend", "extend", k1, [TOK, PX], held(k1)),
        case("touch-batch 16", "touch-batch", ks,
             [PX, "16"] + [TOK] * 16, held(ks)),
        case("keep", "keep", k1, [TOK, "5000"], held(k1),
             clear=["redlock:kept:k"]),
        # the acquires' common path: the key is free
        case("writer-acquire", "writer-acquire", ["k", "k:wintent"],
             [TOK, PX, "5000"], clear=["k", "k:wintent"]),
        case("acquire-fenced", "acquire-fenced",
             ["k", "redlock:fence", "redlock:fencerun",
              "redlock:fencefor:k"], [TOK, PX],
             clear=["k", "redlock:fencefor:k"]),
        case("fair-acquire", "fair-acquire", k1,
             [TOK, PX, PX, "", "1"], clear=k1),
        case("fair-release", "fair-release", k1, [TOK], held(k1)),
        # a fair waiter refused: K held by another, its queue empty
        case("queue-enter", "queue-enter", k1, [TOK, PX, "1", "1"],
             held(k1, OTHER),
             clear=["redlock:%s:k" % q for q in
                    ("q", "qx", "qt", "qw", "qm")]),
    ]
    return out


def commandstats(c):
    """{command: (calls, usec)} from INFO commandstats."""
    rows = {}
    for line in c.call("INFO", "commandstats").splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, rest = line[8:].split(":", 1)
        f = dict(kv.split("=") for kv in rest.split(","))
        rows[name] = (int(f["calls"]), int(f["usec"]))
    return rows


def run(c, sha, cs, reps_r, batch=200):
    """Runs the script R times (pipelined, `batch` calls per write) after
    a reset each; (evalsha µs/call, called µs/call, {command: µs/call}
    of the commands called)."""
    pre = b""
    if cs["clear"]:
        pre += rlnodes.resp_encode("UNLINK", *cs["clear"])
    if cs["state"]:
        pre += rlnodes.resp_encode("MSET", *cs["state"])
    call = rlnodes.resp_encode("EVALSHA", sha, len(cs["keys"]),
                               *cs["keys"], *cs["argv"])
    per = (1 if cs["clear"] else 0) + (1 if cs["state"] else 0) + 1
    c.call("FLUSHALL")
    c.call("CONFIG", "RESETSTAT")
    left = reps_r
    while left > 0:
        n = min(batch, left)
        c.sock.sendall((pre + call) * n)
        for _ in range(n * per):
            rlnodes.resp_read(c.f)
        left -= n
    rows = commandstats(c)
    calls, usec = rows.pop("evalsha")
    assert calls == reps_r, (cs["label"], calls)
    called = {name: u / calls for name, (_, u) in rows.items()
              if name not in RESET_CMDS and not name.startswith("config")}
    return usec / calls, sum(called.values()), called


def table(results):
    lines = ["| script | µs/call (EVALSHA) | µs of commands called | "
             "µs Lua overhead | empty-script floor |",
             "|---|---|---|---|---|"]
    for label, (ev, called, floor) in results:
        lines.append("| %s | %.2f | %.2f | %.2f | %.2f |"
                     % (label, ev, called, ev - called, floor))
    return "\n".join(lines)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(
        description="µs per call each lock-path script costs a node "
                    "(INFO commandstats), beside lean variants and an "
                    "empty script; prints a markdown table.")
    ap.add_argument("--sent-dir", default=os.path.join(
        here, "..", "build", "release", "lua", "sent"),
        help="the scripts' sent texts (default build/release/lua/sent)")
    ap.add_argument("--port", type=int,
                    help="a scratch redis on 127.0.0.1 (FLUSHALLed); "
                         "default: start one on a free port")
    ap.add_argument("-R", "--calls", type=int, default=2000,
                    help="calls per measurement (default 2000)")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions; the median is shown (default 3)")
    ap.add_argument("--detail", action="store_true",
                    help="also list each script's commands called, µs "
                         "per script call (median)")
    a = ap.parse_args()

    if a.port:
        port = a.port
    else:
        if rlnodes.REDIS_SERVER is None:
            sys.exit("redis-server not found in PATH")
        port = rlnodes.Node().port
    c = rlnodes.Client(port, timeout=30)

    def sent(name):
        with open(os.path.join(a.sent_dir, name + ".lua")) as f:
            return f.read()

    cs_all = cases()
    shas = {}
    empty = c.call("SCRIPT", "LOAD", EMPTY)
    for cs in cs_all:
        src = cs["source"] or sent(cs["script"])
        shas[cs["label"]] = c.call("SCRIPT", "LOAD", src)
    samples = {cs["label"]: ([], [], []) for cs in cs_all}
    detail = {cs["label"]: {} for cs in cs_all}
    t0 = time.time()
    for _ in range(a.reps):
        for cs in cs_all:
            ev, called, rows = run(c, shas[cs["label"]], cs, a.calls)
            floor = run(c, empty, dict(cs, state=[], clear=[]), a.calls)[0]
            for name, us in rows.items():
                detail[cs["label"]].setdefault(name, []).append(us)
            s = samples[cs["label"]]
            s[0].append(ev)
            s[1].append(called)
            s[2].append(floor)
    med = statistics.median
    results = [(cs["label"], tuple(med(x) for x in samples[cs["label"]]))
               for cs in cs_all]
    print(table(results))
    if a.detail:
        print()
        for label, rows in detail.items():
            # a command called on some reps only counts 0 on the others
            print("- %s: %s" % (label, ", ".join(
                "%s %.2f" % (name, med(us + [0.0] * (a.reps - len(us))))
                for name, us in sorted(rows.items(), key=lambda r: -sum(r[1])))))
    print("\n%d calls per figure, median of %d; load average %s; %.1f s"
          % (a.calls, a.reps, " ".join("%.2f" % x for x in os.getloadavg()),
             time.time() - t0))


if __name__ == "__main__":
    main()
