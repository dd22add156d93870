#!/usr/bin/env node
// SPDX-License-Identifier: BSD-3-Clause
// bench.js -- the peer side of tools/bench-compare.sh (issue 6): the same
// workloads as `redlock-cli bench`, run with node-redlock on ioredis, the
// way its users call it, printing the same JSON fields, one object per
// measurement per line.
//
//   node --expose-gc bench.js --nodes 127.0.0.1:7501,... [--phases a,b,c,f]
//        [--concurrency 1,16,64,256] [--duration S] [--ttl MS] [--hold MS]
//        [--contenders 2,8] [--locks N] [--label TEXT]
//        [--retry-count N] [--retry-delay MS] [--retry-jitter MS]
//        [--watched N] [--tls] [--cacert FILE] [--sni NAME]
//
// a  sequential acquire+release on fresh resources;
// b  N cycles in flight, each on its own resource;
// c  N contenders on one resource, each holding it --hold ms (retries
//    every --retry-delay +- --retry-jitter ms for up to ~1 s, as the C
//    side's wait of 1000 ms);
// f  RSS of a fresh Redlock with its clients, and per held lock.
// --watched N (instead of the phases; issue 16): N locks held with
//    node-redlock's auto-extension (`redlock.using`, extended when ttl*2/3
//    remain, i.e. every ttl/3 as our watchdog), acquired 256 at a time,
//    then --duration of renewals: renewals/s (calls of redlock.extend that
//    succeeded), client CPU and server CPU per renewal, bytes per held lock
//    (RSS after gc) and locks lost (aborted signals).
// --tls (or rediss:// node URIs): every node over TLS with ioredis's `tls`
//    option, verified against --cacert FILE (the system store without it)
//    and the node's host or --sni NAME.
// Latency is measured with process.hrtime (monotonic), client CPU with
// process.cpuUsage() (every thread of the process), server CPU from each
// node's INFO cpu over a separate connection.
"use strict";

const fs = require("fs");
const net = require("net");
const Redis = require("ioredis");
const { default: Redlock } = require("redlock");

function parseArgs(argv) {
  const o = {
    nodes: process.env.REDLOCK_NODES || "",
    phases: "a,b,c",
    concurrency: "1,16,64,256",
    duration: 3,
    ttl: 30000,
    hold: 1,
    contenders: "2,8",
    locks: 10000,
    label: "",
    retryCount: 3,
    retryDelay: 200,
    retryJitter: 100,
    watched: 0,
    tls: false,
    cacert: "",
    sni: "",
  };
  const names = {
    "--nodes": "nodes", "-n": "nodes", "--phases": "phases",
    "--concurrency": "concurrency", "--duration": "duration", "--ttl": "ttl",
    "--hold": "hold", "--contenders": "contenders", "--locks": "locks",
    "--label": "label", "--retry-count": "retryCount",
    "--retry-delay": "retryDelay", "--retry-jitter": "retryJitter",
    "--watched": "watched", "--cacert": "cacert", "--sni": "sni",
  };
  for (let i = 2; i < argv.length; i++) {
    let a = argv[i];
    let v;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      v = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    const key = names[a];
    if (key === undefined) {
      if (a === "--json") continue; // always JSON
      if (a === "--tls" && v === undefined) {
        o.tls = true;
        continue;
      }
      throw new Error(`unknown option ${a}`);
    }
    if (v === undefined) v = argv[++i];
    if (v === undefined) throw new Error(`option ${a} needs a value`);
    o[key] = typeof o[key] === "number" ? Number(v) : v;
    if (typeof o[key] === "number" && !Number.isFinite(o[key])) {
      throw new Error(`option ${a}: '${v}' is not a number`);
    }
  }
  if (!o.nodes) throw new Error("no nodes: use --nodes host:port,...");
  o.nodeList = o.nodes.split(",").map((s) => {
    const m = /^(?:(rediss?):\/\/)?(?:([^:@]*):?([^@]*)@)?\[?([^\]]+?)\]?:(\d+)$/
      .exec(s);
    if (!m) throw new Error(`bad node '${s}' (host:port)`);
    return { host: m[4], port: Number(m[5]), password: m[3] || undefined,
      tls: o.tls || m[1] === "rediss" };
  });
  o.phaseSet = new Set(o.phases.split(","));
  o.concList = o.concurrency.split(",").map(Number);
  o.contList = o.contenders.split(",").map(Number);
  return o;
}

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pct(v) {
  if (v.length === 0) return { p50: 0, p90: 0, p99: 0, max: 0 };
  v.sort((x, y) => x - y);
  const at = (q) => v[Math.max(0, Math.ceil(q * v.length - 1e-6) - 1)];
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: v[v.length - 1] };
}

function cpuUs() {
  const c = process.cpuUsage();
  return c.user + c.system;
}

function newClients(o, extra) {
  const ca = o.cacert ? fs.readFileSync(o.cacert) : undefined;
  return o.nodeList.map((n) => new Redis({
    host: n.host, port: n.port, password: n.password,
    connectTimeout: 1000,
    // servername is the SNI, and names the host to verify: not for an IP
    // address (RFC 6066), which node's tls verifies against IP SANs.
    tls: n.tls ? { ca, servername: o.sni || (net.isIP(n.host) ? undefined
      : n.host) } : undefined,
    ...extra,
  }));
}

// Resolve once every client is ready, or after ms (a stopped node never
// becomes ready; node-redlock copes with it as with any slow node).
function ready(clients, ms) {
  return Promise.race([
    Promise.all(clients.map((c) => (c.status === "ready" ? null
      : new Promise((r) => c.once("ready", r))))),
    sleep(ms),
  ]);
}

// Sum of used_cpu_sys + used_cpu_user per node, null where no answer.
async function serverCpu(infoClients) {
  return Promise.all(infoClients.map(async (c) => {
    try {
      const text = await Promise.race([c.info("cpu"), sleep(300)]);
      if (typeof text !== "string") return null;
      const get = (k) => Number((new RegExp(`^${k}:([0-9.]+)`, "m")
        .exec(text) || [])[1]);
      const v = get("used_cpu_sys") + get("used_cpu_user");
      return Number.isFinite(v) ? v : null;
    } catch (e) {
      return null;
    }
  }));
}

function emit(o, obj) {
  process.stdout.write(JSON.stringify({ label: o.label, ...obj }) + "\n");
}

// n copies of loop(i), i = 0..n-1, at once; resolves when all returned.
function inParallel(n, loop) {
  return Promise.all(Array.from({ length: n }, (_, i) => loop(i)));
}

// Phases a, b, c: inParallel(n, loop) for --duration seconds; each
// loop(i, run) keeps going while run.on.
async function forDuration(o, n, loop) {
  const run = { on: true };
  const loops = inParallel(n, (i) => loop(i, run));
  await sleep(o.duration * 1000);
  run.on = false;
  await loops;
}

function fairness(x) {
  const sum = x.reduce((a, b) => a + b, 0);
  const sq = x.reduce((a, b) => a + b * b, 0);
  return sq > 0 ? (sum * sum) / (x.length * sq) : 0;
}

// Phases a and b: n loops, each chaining acquire -> release on its own
// resource (phase a: a fresh resource every cycle).
async function cycles(o, redlock, phase, n) {
  const st = { acq: [], rel: [], cyc: [], cycles: 0, failures: 0 };
  let seq = 0;
  await forDuration(o, n, async (i, run) => {
    while (run.on) {
      const res = phase === "a" ? `bench:${process.pid}:a:${seq++}`
        : `bench:${process.pid}:${phase}${n}:${i}`;
      const t0 = nowUs();
      let lock;
      try {
        lock = await redlock.acquire([res], o.ttl);
      } catch (e) {
        st.failures++;
        continue;
      }
      const t1 = nowUs();
      st.acq.push(t1 - t0);
      try {
        await lock.release();
      } catch (e) {
        st.failures++;
      }
      const t2 = nowUs();
      st.rel.push(t2 - t1);
      st.cyc.push(t2 - t0);
      st.cycles++;
    }
  });
  return st;
}

// Phase c: n contenders on one resource.
async function contend(o, redlock, n) {
  const st = { acq: [], rel: [], cyc: [], wait: [], handoff: [], cycles: 0,
    failures: 0, handoffs: 0, overlaps: 0, shares: new Array(n).fill(0) };
  const res = `bench:${process.pid}:c${n}`;
  let holding = -1;
  let last = -1;
  let tFree = 0;
  const retryCount = Math.ceil(1000 / Math.max(1, o.retryDelay));
  await forDuration(o, n, async (idx, run) => {
    while (run.on) {
      const t0 = nowUs();
      let lock;
      try {
        lock = await redlock.acquire([res], o.ttl, { retryCount });
      } catch (e) {
        if (run.on) st.failures++;
        continue;
      }
      const t1 = nowUs();
      if (holding >= 0) st.overlaps++;
      holding = idx;
      if (last >= 0 && last !== idx) {
        st.handoffs++;
        if (tFree !== 0 && t1 >= tFree) st.handoff.push(t1 - tFree);
      }
      last = idx;
      st.shares[idx]++;
      st.wait.push(t1 - t0);
      st.acq.push(t1 - t0);
      await sleep(o.hold);
      const t2 = nowUs();
      holding = -1;
      tFree = t2;
      try {
        await lock.release();
      } catch (e) {
        st.failures++;
      }
      st.rel.push(nowUs() - t2);
      st.cyc.push(nowUs() - t0);
      st.cycles++;
    }
  });
  return st;
}

async function measure(o, redlock, infoClients, phase, n) {
  const s0 = await serverCpu(infoClients);
  const t0 = nowUs();
  const c0 = cpuUs();
  const st = phase === "c" ? await contend(o, redlock, n)
    : await cycles(o, redlock, phase, n);
  const elapsed = (nowUs() - t0) / 1e6;
  const cpu = cpuUs() - c0;
  const s1 = await serverCpu(infoClients);
  let srv = null;
  for (let i = 0; i < s0.length; i++) {
    if (s0[i] !== null && s1[i] !== null) srv = (srv || 0) + (s1[i] - s0[i]);
  }
  const per = st.cycles > 0 ? st.cycles / elapsed : 0;
  const out = {
    phase, nodes: o.nodeList.length, concurrency: n,
    duration_s: Number(elapsed.toFixed(3)), cycles: st.cycles,
    cycles_per_s: Number(per.toFixed(1)),
    acquire_us: pct(st.acq), release_us: pct(st.rel), cycle_us: pct(st.cyc),
    cpu_us_per_cycle: st.cycles > 0 ? Number((cpu / st.cycles).toFixed(2))
      : 0,
    server_cpu_us_per_cycle: srv !== null && st.cycles > 0
      ? Number(((srv * 1e6) / st.cycles).toFixed(2)) : null,
    failures: st.failures,
  };
  if (phase === "c") {
    Object.assign(out, {
      contenders: n, hold_ms: o.hold, acquisitions_per_s: out.cycles_per_s,
      handoffs_per_s: Number((st.handoffs / elapsed).toFixed(1)),
      overlaps: st.overlaps, wait_us: pct(st.wait),
      handoff_us: pct(st.handoff), shares: st.shares,
      fairness: Number(fairness(st.shares).toFixed(3)),
    });
  }
  emit(o, out);
}

function rssKb() {
  if (global.gc) {
    global.gc();
    global.gc();
  }
  return Math.round(process.memoryUsage().rss / 1024);
}

// Phase f: RSS of a fresh Redlock + clients, then per held lock.
async function memory(o) {
  const before = rssKb();
  const clients = newClients(o, {});
  await ready(clients, 2000);
  const redlock = new Redlock(clients, { driftFactor: 0.01,
    retryCount: o.retryCount, retryDelay: o.retryDelay,
    retryJitter: o.retryJitter, automaticExtensionThreshold: 500 });
  redlock.on("error", () => {});
  const baseline = rssKb() - before;
  const held = new Array(o.locks).fill(null);
  let failures = 0;
  const takeAll = async (count) => {
    let next = 0;
    await inParallel(256, async () => {
      while (next < count) {
        const i = next++;
        try {
          held[i] = await redlock.acquire([`bench:${process.pid}:f:${i}`],
            o.ttl);
        } catch (e) {
          failures++;
        }
      }
    });
  };
  const releaseAll = async () => {
    let next = 0;
    await inParallel(256, async () => {
      while (next < held.length) {
        const l = held[next];
        held[next++] = null;
        if (l) await l.release().catch(() => { failures++; });
      }
    });
  };
  await takeAll(Math.min(256, o.locks));
  await releaseAll();
  const rss0 = rssKb();
  const t0 = nowUs();
  await takeAll(o.locks);
  const elapsed = (nowUs() - t0) / 1e6;
  const rss1 = rssKb();
  const got = held.filter((l) => l !== null).length;
  emit(o, {
    phase: "f", nodes: o.nodeList.length, concurrency: 256,
    duration_s: Number(elapsed.toFixed(3)), cycles: got,
    cycles_per_s: Number((got / elapsed).toFixed(1)), failures,
    locks: o.locks, held: got, rss_kb_no_locks: rss0, rss_kb_held: rss1,
    bytes_per_lock: got > 0 ? Number((((rss1 - rss0) * 1024) / got)
      .toFixed(1)) : 0,
    resource_bytes: `bench:${process.pid}:f:${o.locks >> 1}`.length,
    baseline_rss_kb: baseline, process_rss_kb: before,
  });
  await releaseAll();
  clients.forEach((c) => c.disconnect());
}

// --watched: N locks kept alive by redlock.using for --duration.
async function watched(o, redlock, infoClients) {
  let renewals = 0;
  let lost = 0;
  let failures = 0;
  const extend = redlock.extend.bind(redlock);
  redlock.extend = async (...args) => {
    const l = await extend(...args);
    renewals++;
    return l;
  };
  let release;
  const holding = new Promise((r) => { release = r; });
  const settings = { automaticExtensionThreshold: Math.round(o.ttl * 2 / 3) };
  const done = [];
  const rss0 = rssKb();
  const t0 = nowUs();
  let next = 0;
  let held = 0;
  await inParallel(256, async () => {
    while (next < o.watched) {
      const i = next++;
      await new Promise((acquired) => {
        done.push(redlock.using([`bench:${process.pid}:w:${i}`], o.ttl,
          settings, async (signal) => {
            held++;
            acquired();
            await holding;
            if (signal.aborted) lost++;
          }).catch(() => { failures++; acquired(); }));
      });
    }
  });
  const acquireS = (nowUs() - t0) / 1e6;
  const rss1 = rssKb();
  const s0 = await serverCpu(infoClients);
  const r0 = renewals;
  const c0 = cpuUs();
  const t1 = nowUs();
  await sleep(o.duration * 1000);
  const c1 = cpuUs();
  const t2 = nowUs();
  const r1 = renewals;
  const s1 = await serverCpu(infoClients);
  let srv = null;
  s0.forEach((v, i) => {
    if (v !== null && s1[i] !== null) srv = (srv || 0) + (s1[i] - v) * 1e6;
  });
  const secs = (t2 - t1) / 1e6;
  const n = r1 - r0;
  emit(o, {
    phase: "watched", nodes: o.nodeList.length, locks: held, ttl_ms: o.ttl,
    duration_s: Number(secs.toFixed(3)),
    acquire_s: Number(acquireS.toFixed(3)), renewals: n,
    renewals_per_s: Number((n / secs).toFixed(1)),
    cpu_us_per_renewal: n > 0 ? Number(((c1 - c0) / n).toFixed(3)) : 0,
    server_cpu_us_per_renewal: n > 0 && srv !== null
      ? Number((srv / n).toFixed(3)) : null,
    bytes_per_lock: held > 0 ? Number((((rss1 - rss0) * 1024) / held)
      .toFixed(1)) : 0,
    resource_bytes: `bench:${process.pid}:w:${o.watched >> 1}`.length,
    lost, failures,
  });
  release();
  await Promise.all(done);
}

async function main() {
  const o = parseArgs(process.argv);
  const clients = newClients(o, {});
  const infoClients = newClients(o, { commandTimeout: 300,
    maxRetriesPerRequest: 0 });
  infoClients.forEach((c) => c.on("error", () => {}));
  clients.forEach((c) => c.on("error", () => {}));
  await ready(clients, 2000);
  const settings = { driftFactor: 0.01, retryCount: o.retryCount,
    retryDelay: o.retryDelay, retryJitter: o.retryJitter,
    automaticExtensionThreshold: 500 };
  const redlock = new Redlock(clients, settings);
  redlock.on("error", () => {});
  if (o.watched > 0) {
    await watched(o, redlock, infoClients);
    o.phaseSet.clear();
  }
  if (o.phaseSet.has("a")) await measure(o, redlock, infoClients, "a", 1);
  if (o.phaseSet.has("b")) {
    for (const n of o.concList) await measure(o, redlock, infoClients, "b", n);
  }
  if (o.phaseSet.has("c")) {
    for (const n of o.contList) await measure(o, redlock, infoClients, "c", n);
  }
  if (o.phaseSet.has("f")) await memory(o);
  // disconnect, not quit: a stopped node would never answer QUIT.
  clients.forEach((c) => c.disconnect());
  infoClients.forEach((c) => c.disconnect());
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`bench.js: ${e.message}\n`);
  process.exit(2);
});
