#!/usr/bin/env node
// SPDX-License-Identifier: BSD-3-Clause
// run.js -- `redlock-cli run` with node-redlock on ioredis, for
// tools/fairness-probe.py --cost (issue 45): the same contract, so the
// probe's processes can loop it as they loop the CLI.
//
//   node run.js --nodes 127.0.0.1:7501,... RESOURCE --wait MS --ttl MS
//        [--retry-delay MS] [--retry-jitter MS] -- COMMAND [ARGS...]
//
// Acquires RESOURCE (retrying every --retry-delay +- --retry-jitter ms,
// node-redlock's own back-off, until --wait ms have passed), runs COMMAND
// with REDLOCK_TOKEN set to the lock's value, releases, and exits with
// COMMAND's status; 1 when the lock was not acquired. The lock is not
// extended: COMMAND must end within --ttl.
"use strict";

const { spawn } = require("child_process");
const Redis = require("ioredis");
const { default: Redlock } = require("redlock");

function parseArgs(argv) {
  const o = { nodes: "", wait: 60000, ttl: 5000, retryDelay: 200,
    retryJitter: 100, resource: "", command: [] };
  const names = { "--nodes": "nodes", "-n": "nodes", "--wait": "wait",
    "--ttl": "ttl", "--retry-delay": "retryDelay",
    "--retry-jitter": "retryJitter" };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      o.command = argv.slice(i + 1);
      break;
    }
    const key = names[a];
    if (key === undefined) {
      if (a.startsWith("-") || o.resource) {
        throw new Error(`unexpected argument ${a}`);
      }
      o.resource = a;
      continue;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`option ${a} needs a value`);
    o[key] = key === "nodes" ? v : Number(v);
  }
  if (!o.nodes || !o.resource || o.command.length === 0) {
    throw new Error("usage: run.js --nodes H:P,... RESOURCE [--wait MS] "
      + "[--ttl MS] -- COMMAND...");
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv);
  const clients = o.nodes.split(",").map((s) => {
    const m = /^(.*):(\d+)$/.exec(s);
    return new Redis({ host: m[1], port: Number(m[2]), connectTimeout: 1000 });
  });
  const redlock = new Redlock(clients, { driftFactor: 0.01,
    retryCount: Math.max(0, Math.ceil(o.wait / o.retryDelay)),
    retryDelay: o.retryDelay, retryJitter: o.retryJitter });
  redlock.on("error", () => {});
  let status = 1;
  try {
    const lock = await redlock.acquire([o.resource], o.ttl);
    status = await new Promise((resolve) => {
      const child = spawn(o.command[0], o.command.slice(1), {
        stdio: "inherit", env: { ...process.env, REDLOCK_TOKEN: lock.value },
      });
      child.on("exit", (code, sig) => resolve(sig ? 128 : code));
      child.on("error", () => resolve(127));
    });
    await lock.release().catch(() => {});
  } catch (e) {
    process.stderr.write(`run.js: ${e.message}\n`);
  }
  clients.forEach((c) => c.disconnect());
  process.exit(status);
}

main();
