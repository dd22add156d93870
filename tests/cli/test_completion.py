#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bash completion of redlock-cli (tools/redlock-cli/redlock-cli.bash).

1. Its lists cannot drift from the binary:
   - the commands are those of `redlock-cli --help`'s "Commands:" section;
   - the global options are those of its "Global options" section, an
     option with a METAVAR taking a value ('=' in the completion's lists);
   - each command's own options are exactly the options that command
     accepts, found by probing it with every option named in any --help
     text: `redlock-cli CMD --opt=x` fails with "unknown option" for an
     option it does not have and "takes no value" for a flag;
   - every value completed for a fixed set (--quarantine, --kill-signal,
     --wait, --phases) is accepted and a made-up one refused.
   The probes run with no nodes and no REDLOCK_* variables: each stops at
   a usage error and never reaches the network.
2. The completion function, sourced in a bash subshell with COMP_WORDS and
   COMP_CWORD set as bash sets them ('=' is a word of its own), gives the
   expected COMPREPLY for a set of command lines, and `complete -p`
   shows it registered for redlock-cli.

Usage: test_completion.py REDLOCK_CLI    (run from tests/cli)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "tools", "redlock-cli",
                      "redlock-cli.bash")
COMMANDS = ["acquire", "extend", "release", "run", "hold", "elect",
            "leader", "status", "ping", "doctor", "bench"]
# Arguments that carry each command past its positional checks to the
# option's value, for the fixed-set probes.
POSITIONAL = {"run": ["R"], "elect": ["R"], "acquire": ["R"], "hold": ["R"],
              "bench": [], "ping": []}
TAIL = {"run": ["--", "true"], "elect": ["--", "true"]}

CLI = None
ENV = {k: v for k, v in os.environ.items() if not k.startswith("REDLOCK_")}


def cli(args):
    p = subprocess.run([CLI] + args, env=ENV, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def bash(code, cwd=None):
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", code],
                       capture_output=True, text=True, timeout=30, cwd=cwd)
    assert p.returncode == 0, "bash failed:\n" + code + "\n" + p.stderr
    return p.stdout


def source_and(code, cwd=None):
    return bash('source "%s" || exit 1\n%s' % (SCRIPT, code), cwd)


def completion_lists():
    """commands, globals and per-command options as the script has them."""
    # Unquoted: the lists span lines; echo joins their words.
    loop = "".join("echo %s: $(_redlock_cli_command_options %s)\n" % (c, c)
                   for c in COMMANDS)
    out = source_and("echo commands: $_redlock_cli_commands\n"
                     "echo globals: $_redlock_cli_globals\n" + loop)
    lists = {}
    for line in out.splitlines():
        name, _, words = line.partition(":")
        lists[name] = set(words.split())
    return lists


def help_sections():
    code, text = cli(["--help"])
    assert code == 0, text
    cmds = re.search(r"\nCommands:\n(.*?)\n\n", text, re.S).group(1)
    commands = set(re.findall(r"^  ([a-z]+)\b", cmds, re.M))
    glob = re.search(r"\nGlobal options[^\n]*\n(.*?)\n\n", text,
                     re.S).group(1)
    options = set()
    # "  -n, --nodes URI[,URI...]  ..." or "      --tls  ..." (descriptions,
    # which name options too, are indented further)
    for m in re.finditer(r"^(?:  (-[a-z]), |      )(--[a-z-]+)( [A-Z])?",
                         glob, re.M):
        short, long_, value = m.groups()
        mark = "=" if value else ""
        options.add(long_ + mark)
        if short:
            options.add(short + mark)
    return commands, options


def probe(cmd, opt):
    """None: CMD has no OPT; '' a flag; '=' it takes a value."""
    code, text = cli([cmd, opt + "=x"])
    assert code != 0, "%s %s=x succeeded: %s" % (cmd, opt, text)
    if "unknown option '%s=x'" % opt in text:
        return None
    if "option %s takes no value" % opt in text:
        return ""
    return "="


def check_lists():
    lists = completion_lists()
    commands, options = help_sections()
    assert lists["commands"] == commands | {"help"}, (
        "completion commands %s, --help %s" % (sorted(lists["commands"]),
                                              sorted(commands)))
    assert lists["globals"] == options, (
        "global options: only in the completion %s, only in --help %s" % (
            sorted(lists["globals"] - options),
            sorted(options - lists["globals"])))
    bare_globals = {o.rstrip("=") for o in options}

    # Every option any help text names is a candidate for every command.
    names = set()
    for c in [None] + COMMANDS:
        names |= set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)",
                                cli(([c] if c else []) + ["--help"])[1]))
    candidates = sorted(names - bare_globals)
    checked = 0
    for c in COMMANDS:
        accepted = set()
        for o in candidates:
            mark = probe(c, o)
            if mark is not None:
                accepted.add(o + mark)
        assert lists[c] == accepted, (
            "%s: only in the completion %s, only in the binary %s" % (
                c, sorted(lists[c] - accepted), sorted(accepted - lists[c])))
        checked += len(accepted)
    # The global options' value marks, probed once (ping takes no others).
    for o in sorted(options):
        if o.startswith("--") and o.rstrip("=") not in ("--help",
                                                         "--version"):
            assert probe("ping", o.rstrip("=")) == ("=" if o.endswith("=")
                                                    else ""), o
    print("lists: %d commands, %d global options, %d command options "
          "match --help and the binary" % (len(commands), len(options),
                                           checked))


def complete(words, cur_index=None, cwd=None):
    """COMPREPLY for the command line `words` (the last is being typed)."""
    if cur_index is None:
        cur_index = len(words) - 1
    arr = " ".join("'%s'" % w for w in words)
    out = source_and('COMP_WORDS=(%s)\nCOMP_CWORD=%d\n_redlock_cli\n'
                     'printf "%%s\\n" "${COMPREPLY[@]}"' % (arr, cur_index),
                     cwd)
    # Each match once, as readline shows them: a command name completes
    # once per PATH directory that has it (the build's redlock-cli, and
    # /usr/bin's and /bin's while install_deb has the package installed
    # beside this test).
    return sorted({w for w in out.split("\n") if w})


def check_values():
    """Every completed value of a fixed set is accepted, a made-up one not."""
    cases = [("ping", "--quarantine"), ("run", "--kill-signal"),
             ("acquire", "--wait"), ("hold", "--wait"), ("run", "--wait"),
             ("bench", "--phases")]
    for cmd, opt in cases:
        values = complete(["redlock-cli", cmd, opt, ""])
        assert values, "no values for %s %s" % (cmd, opt)
        for v in values + ["bogus"]:
            code, text = cli([cmd] + POSITIONAL[cmd] + [opt + "=" + v]
                             + TAIL.get(cmd, []))
            refused = opt in text
            assert refused == (v == "bogus"), (
                "%s %s=%s: %s" % (cmd, opt, v, text.strip()))
    print("values: %d fixed-set options, each value accepted, 'bogus' "
          "refused" % len(cases))


def check_prefixes():
    cases = [
        (["redlock-cli", ""], sorted(COMMANDS + ["help"])),
        (["redlock-cli", "ac"], ["acquire"]),
        (["redlock-cli", "--qu"], ["--quarantine", "--quiet"]),
        (["redlock-cli", "--quarantine", ""], ["auto", "off", "on"]),
        (["redlock-cli", "--quarantine", "=", "o"], ["off", "on"]),
        (["redlock-cli", "--quarantine", "="], ["auto", "off", "on"]),
        (["redlock-cli", "--json", "st"], ["status"]),
        (["redlock-cli", "--prefix", "x", "st"], ["status"]),
        (["redlock-cli", "-n", "h:1", "--max-ttl", "=", "9", "ho"],
         ["hold"]),
        (["redlock-cli", "acquire", "--f"], ["--fair", "--fence"]),
        (["redlock-cli", "-n", "h:1", "acquire", "R", "--lock"],
         ["--lock-delay"]),
        (["redlock-cli", "acquire", "R", "--js"], ["--json"]),
        (["redlock-cli", "acquire", "R", ""], []),
        (["redlock-cli", "release", "--f"], ["--force"]),
        (["redlock-cli", "ping", "--w"], []),
        (["redlock-cli", "leader", "L", "--w"], ["--watch"]),
        (["redlock-cli", "run", "R", "--kill-signal", "T"], ["TERM"]),
        (["redlock-cli", "elect", "N", "--wait", "f"], ["forever"]),
        (["redlock-cli", "bench", "--phases", "a,"],
         ["a,a", "a,b", "a,c", "a,f", "a,k"]),
        (["redlock-cli", "bench", "--ttl", "5", "--con"],
         ["--concurrency", "--connect-timeout", "--contenders"]),
        (["redlock-cli", "help", "le"], ["leader"]),
        (["redlock-cli", "help", "leader", ""], []),
        (["redlock-cli", "run", "R", "--", "redlock-cl"], ["redlock-cli"]),
        (["redlock-cli", "status", "R", "--", "--l"], ["--limit"]),
    ]
    path = os.path.dirname(os.path.abspath(CLI))
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = path + os.pathsep + saved  # for compgen -c
    try:
        for words, want in cases:
            got = complete(words)
            assert got == want, "%s: got %s, want %s" % (words, got, want)
    finally:
        os.environ["PATH"] = saved
    # File names, blanks and all.
    with tempfile.TemporaryDirectory() as d:
        for name in ("my ca.pem", "my key.pem", "other"):
            open(os.path.join(d, name), "w").close()
        os.mkdir(os.path.join(d, "my certs"))
        got = complete(["redlock-cli", "--cacert", "my"], cwd=d)
        assert got == ["my ca.pem", "my certs", "my key.pem"], got
        got = complete(["redlock-cli", "--cacertdir", "my"], cwd=d)
        assert got == ["my certs"], got
    reg = source_and("complete -p redlock-cli").strip()
    assert reg == "complete -F _redlock_cli redlock-cli", reg
    print("prefixes: %d command lines complete as expected" % len(cases))


def main():
    global CLI
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    CLI = os.path.abspath(sys.argv[1])
    if shutil.which("bash") is None:
        print("SKIP: bash not found")
        return 77
    check_lists()
    check_values()
    check_prefixes()
    return 0


if __name__ == "__main__":
    sys.exit(main())
