#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""redlock-cli over TLS (issue 11 item 3) against real redis-server nodes
started with --tls-port and certificates made here by the openssl CLI.

acquire/release over TLS with --tls --cacert and with rediss:// URIs (and
$REDLOCK_CACERT), --insecure says so on stderr, a missing --cacert file is
exit 2 naming the file, a wrong CA fails the nodes (exit 3) naming the
reason, and `ping --json` reports each node's TLS protocol in "tls".

Usage: test_cli_tls.py PATH-TO-redlock-cli [unittest args]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import clitest
from clitest import base_env, free_port, run_cli, start_nodes

CERTS = None
NODES = []

CERT_SCRIPT = r"""
set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$1" 2>/dev/null; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -out "$1.pem" \
    -days 30 -subj "/CN=$1" 2>/dev/null; }
ca ca; ca ca2; key server.key
openssl req -new -key server.key -subj /CN=localhost -out server.csr \
    2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile server.ext -out server.pem 2>/dev/null
"""


def setUpModule():
    global CERTS
    CERTS = tempfile.mkdtemp(prefix="rlcli-certs-")
    subprocess.run(["sh", "-c", CERT_SCRIPT], cwd=CERTS, check=True)
    for _ in range(3):
        tls_port = free_port()
        node = start_nodes(1, [
            "--tls-port", str(tls_port),
            "--tls-cert-file", cert("server.pem"),
            "--tls-key-file", cert("server.key"),
            "--tls-ca-cert-file", cert("ca.pem"),
            "--tls-auth-clients", "no"])[0]
        node.tls_port = tls_port
        NODES.append(node)


def tearDownModule():
    for n in NODES:
        n.stop()
    if CERTS is not None:
        shutil.rmtree(CERTS, ignore_errors=True)


def cert(name):
    return os.path.join(CERTS, name)


res = clitest.resource_namer("tls")


def tls_nodes(scheme=""):
    return ",".join("%s127.0.0.1:%d" % (scheme, n.tls_port) for n in NODES)


def cli(*args, env=None):
    return run_cli(["--no-quarantine", "--connect-timeout", "2000",
                    "--op-timeout", "1000"] + list(args), env=env)


class TlsCli(unittest.TestCase):
    def cycle(self, args, env=None):
        r = res("cycle")
        rc, out, err = cli(*args, "acquire", r, "--ttl", "10000", env=env)
        self.assertEqual(rc, 0, err)
        token = out.strip()
        for n in NODES:  # checked on the plaintext port
            self.assertEqual(n.cmd("GET", r), token)
        rc, out, err = cli(*args, "release", r, token, env=env)
        self.assertEqual(rc, 0, err)
        for n in NODES:
            self.assertIsNone(n.cmd("GET", r))

    def test_acquire_release_with_tls_and_cacert(self):
        self.cycle(["--tls", "--cacert", cert("ca.pem"), "-n", tls_nodes()])

    def test_acquire_release_with_rediss_uris_and_env_cacert(self):
        env = base_env()
        env["REDLOCK_CACERT"] = cert("ca.pem")
        self.cycle(["-n", tls_nodes("rediss://")], env=env)

    def test_insecure_warns_on_stderr(self):
        rc, out, err = cli("--tls", "--insecure", "-n", tls_nodes(), "ping")
        self.assertEqual(rc, 0, err)
        self.assertIn("--insecure", err)
        self.assertIn("not verified", err)

    def test_missing_cacert_file_is_exit_2_naming_it(self):
        missing = cert("no-such-ca.pem")
        rc, out, err = cli("--tls", "--cacert", missing, "-n", tls_nodes(),
                           "ping")
        self.assertEqual(rc, 2, err)
        self.assertIn(missing, err)
        self.assertEqual(out, "")

    def test_wrong_ca_fails_the_nodes_naming_the_reason(self):
        rc, out, err = cli("--tls", "--cacert", cert("ca2.pem"), "-n",
                           tls_nodes(), "acquire", res("wrongca"))
        self.assertEqual(rc, 3, err)
        self.assertIn("unknown CA", err)
        self.assertNotIn("BEGIN", err)

    def test_bench_over_tls_runs_and_says_what_it_cannot_measure(self):
        args = ["--tls", "--cacert", cert("ca.pem"), "-n", tls_nodes()]
        rc, out, err = cli(*args, "--json", "bench", "--phases", "b",
                           "--concurrency", "4", "--duration", "0.3")
        self.assertEqual(rc, 0, err)
        line = json.loads(out.splitlines()[0])
        self.assertGreater(line["cycles"], 0)
        self.assertIsNone(line["server_cpu_us_per_cycle"])
        self.assertIn("server CPU is not measured on TLS nodes", err)
        rc, out, err = run_cli(["floor", "--no-quarantine", *args],
                               prog=os.environ["REDLOCK_BENCH"])
        self.assertEqual(rc, 2, err)
        self.assertIn("plaintext only", err)

    def test_ping_json_has_the_tls_field(self):
        rc, out, err = cli("--json", "--tls", "--cacert", cert("ca.pem"),
                           "-n", tls_nodes(), "ping")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(len(doc["nodes"]), 3)
        for n in doc["nodes"]:
            self.assertTrue(n["tls"].startswith("TLSv1."), n)
        rc, out, err = cli("--tls", "--cacert", cert("ca.pem"), "-n",
                           tls_nodes(), "ping")
        self.assertEqual(rc, 0, err)
        self.assertIn(" TLS ", out.splitlines()[0])
        self.assertIn("TLSv1.", out)
        # Plaintext nodes: an empty field.
        rc, out, err = cli("--json", "-n",
                           ",".join(n.addr for n in NODES), "ping")
        self.assertEqual(rc, 0, err)
        for n in json.loads(out)["nodes"]:
            self.assertEqual(n["tls"], "")


if __name__ == "__main__":
    clitest.setup_or_skip()
    if shutil.which("openssl") is None:
        print("SKIP: openssl CLI not found")
        sys.exit(77)
    clitest.main()
