#!/usr/bin/env python3
"""rulemap.py - the rule-to-test map, built from the documents and the tests.

Rules: a line of CONTRACT.md or PRODUCTION_BOUNDARY.md that starts with
`**ID.**` (ID: capital letters then digits) is a rule; one that starts with
`- **ID.**` is a non-guarantee (listed, needs no test).  A rule holds
exactly one RFC 2119 keyword in capitals.  PRODUCTION_BOUNDARY.md ids start
with PB; no CONTRACT.md id does.

Tags (in any file under tests/):
  /* rules: W1 H3 */            the test function defined just below proves
                                those rules (a `# rules:` line in a shell
                                script: the script proves them);
  /* rules-skip: ID: reason */  no test on this machine can run ID (or a
                                tagged test skips where it cannot run:
                                the map shows both).

  rulemap.py            print the map (docs/RULES-TO-TESTS.md) to stdout
  rulemap.py --write    write docs/RULES-TO-TESTS.md
  rulemap.py --check    print each problem and exit 1 on any: a rule
                        without a test, a tag naming no rule, a rule
                        without exactly one keyword, a duplicate id, a
                        stale docs/RULES-TO-TESTS.md, a tagged C test
                        function named nowhere else in its file (not
                        registered to run)
Run from the top of the source tree.
"""
import os
import re
import sys

DOCS = ["CONTRACT.md", "PRODUCTION_BOUNDARY.md"]
MAP = "docs/RULES-TO-TESTS.md"
RULE = re.compile(r"^\*\*([A-Z]+[0-9]+)\.\*\*\s*(.*)")
NONG = re.compile(r"^- \*\*([A-Z]+[0-9]+)\.\*\*")
HEAD = re.compile(r"^#{1,3} (.*)")
KEYWORD = re.compile(r"\b(MUST NOT|MUST|REQUIRED|SHALL NOT|SHALL|SHOULD NOT|"
                     r"SHOULD|RECOMMENDED|NOT RECOMMENDED|MAY|OPTIONAL)\b")
TAG = re.compile(r"(?:/\*|#)\s*rules:\s*([A-Z0-9 ]+?)\s*(?:\*/|$)")
SKIP = re.compile(r"(?:/\*|#)\s*rules-skip:\s*([A-Z]+[0-9]+):\s*(.*?)\s*(?:\*/|$)")
FUNC = re.compile(r"^(test_[A-Za-z0-9_]+)\s*\(")
# a test made by a macro: `BADMODE(unknownid, ...)` names BADMODE(unknownid)
MACRO = re.compile(r"^([A-Z][A-Z0-9_]*)\(([A-Za-z0-9_]+)")


def read_rules(problems):
    """[(doc, section, id, text)] and the set of non-guarantee ids."""
    rules, nongs, seen = [], set(), set()
    for doc in DOCS:
        if not os.path.exists(doc):
            continue
        section, cur = "", None
        for line in open(doc, encoding="utf-8"):
            line = line.rstrip("\n")
            m = HEAD.match(line)
            if m:
                section = m.group(1)
            m, n = RULE.match(line), NONG.match(line)
            if m or n:
                rid = (m or n).group(1)
                if rid in seen:
                    problems.append("%s: id %s given twice" % (doc, rid))
                seen.add(rid)
                if doc == "CONTRACT.md" and rid.startswith("PB"):
                    problems.append("CONTRACT.md: id %s starts with PB" % rid)
                if doc == "PRODUCTION_BOUNDARY.md" and not (
                        (m and rid.startswith("PB")) or
                        (n and rid.startswith("NG"))):
                    problems.append("%s: id %s: rules there are PBn, "
                                    "non-guarantees NGn" % (doc, rid))
                if n:
                    nongs.add(rid)
                    cur = None
                else:
                    cur = [doc, section, rid, m.group(2)]
                    rules.append(cur)
                continue
            if cur is not None:
                if line.strip() == "" or line.startswith(("#", "|", "- ")):
                    cur = None
                else:
                    cur[3] += " " + line.strip()
    for doc, _, rid, text in rules:
        k = KEYWORD.findall(text)
        if len(k) != 1:
            problems.append("%s: rule %s has %d RFC 2119 keywords (%s), "
                            "not one" % (doc, rid, len(k), " ".join(k)))
    return rules, nongs


def read_tags(problems):
    """{id: [test]} and {id: reason}, from every file under tests/."""
    tests, skips = {}, {}
    for root, dirs, files in os.walk("tests"):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".sh")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, "tests")
            lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
            for i, line in enumerate(lines):
                s = SKIP.search(line)
                if s:
                    skips.setdefault(s.group(1), []).append(
                        "%s: %s" % (rel, s.group(2)))
                    continue
                m = TAG.search(line)
                if not m:
                    continue
                name = None
                if f.endswith(".sh"):
                    name = rel
                else:
                    for nxt in lines[i + 1:i + 4]:
                        fm, mm = FUNC.match(nxt), MACRO.match(nxt)
                        if fm:
                            name = "%s:%s" % (rel, fm.group(1))
                            if "\n".join(lines).count(fm.group(1)) < 2:
                                problems.append("%s: %s is tagged but never "
                                                "registered to run" % (path, fm.group(1)))
                            break
                        if mm:
                            name = "%s:%s(%s)" % (rel, mm.group(1), mm.group(2))
                            break
                if name is None:
                    problems.append("%s:%d: rules tag not just above a "
                                    "test function" % (path, i + 1))
                    continue
                for rid in m.group(1).split():
                    tests.setdefault(rid, []).append(name)
    return tests, skips


def render(rules, nongs, tests, skips):
    out = ["# Rules to tests", "",
           "Generated by `mk/rulemap.py --write` from the rule ids of",
           "`CONTRACT.md` and `PRODUCTION_BOUNDARY.md` and the `rules:` tags",
           "of the tests (`file:function` under `tests/`). Do not edit;",
           "`make check` fails when it is stale.", ""]
    doc, section = None, None
    for d, sec, rid, _ in rules:
        if d != doc:
            if out[-1] != "":
                out.append("")
            out += ["## " + d, ""]
            doc, section = d, None
        if sec != section:
            if out[-1] != "":
                out.append("")
            out += ["### " + sec, ""]
            section = sec
        cells = ["`%s`" % t for t in tests.get(rid, [])]
        cells += ["skip: %s" % r for r in skips.get(rid, [])]
        out.append("- **%s**: %s" % (rid, ", ".join(cells) or "NONE"))
    out.append("")
    if nongs:
        out += ["## Non-guarantees (no test)", "",
                ", ".join(sorted(nongs, key=lambda x: (re.sub(r"\d", "", x), int(re.sub(r"\D", "", x))))),
                ""]
    return "\n".join(out)


def main():
    problems = []
    rules, nongs = read_rules(problems)
    tests, skips = read_tags(problems)
    ids = {r[2] for r in rules}
    for rid in sorted(set(tests) | set(skips)):
        if rid not in ids:
            where = (tests.get(rid) or skips.get(rid))[0]
            problems.append("tag names %s, which is no rule (%s)" % (rid, where))
    for _, _, rid, _ in rules:
        if rid not in tests and rid not in skips:
            problems.append("rule %s has no test" % rid)
    text = render(rules, nongs, tests, skips)
    if "--write" in sys.argv:
        open(MAP, "w", encoding="utf-8").write(text)
    elif "--check" in sys.argv:
        old = open(MAP, encoding="utf-8").read() if os.path.exists(MAP) else ""
        if old != text:
            problems.append("%s is stale: run mk/rulemap.py --write" % MAP)
    else:
        sys.stdout.write(text)
    for p in problems:
        print(p)
    return 1 if problems and "--check" in sys.argv else 0


if __name__ == "__main__":
    sys.exit(main())
