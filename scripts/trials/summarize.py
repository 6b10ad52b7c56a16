#!/usr/bin/env python3
"""summarize.py RESULTFILE... : one row per run (binary, layout, scenario, counts) and per-scenario totals."""
import json, re, sys, collections
runs = []
for fn in sys.argv[1:]:
    for l in open(fn):
        m = re.match(r'rep=(\d+) (\w+) (\w+) load=(\S+) log=(\S+) check=\[(.*?)\] (\{.*\})$', l.strip())
        if not m: continue
        rep, b, lay, load, log, chk, js = m.groups()
        d = json.loads(js)
        if d["scenario"] == "fd_stable":
            cc = d["counts"]; d["writes"] = sum(v for k, v in cc.items() if k.startswith("write")); d["writes_failed"] = d["writes"] - cc.get("writes_ok", 0)
        d.update(rep=rep, bin=b, layout=lay, load=load, check_rc=chk.split("rc=")[-1].strip())
        runs.append(d)
def key(d):
    sc = d["scenario"]
    if sc == "wr_mix": return "wr_mix %dw/%dr" % (d["nw"], d["nr"])
    if sc == "fd_stable": return "fd_stable %dw/%dr" % (d["nw"], d["nr"])
    if sc == "wr_paths": return "wr_paths %s %dw/%dr" % (d["mode"], d["nw"], d["nr"])
    return sc
for d in runs:
    sc = d["scenario"]; k = key(d)
    base = "%-4s %-6s %-24s rep%s load %-11s check rc=%s writes %5d failed %4d %s" % (d["bin"], d["layout"], k, d["rep"], d["load"], d["check_rc"], d["writes"], d["writes_failed"], d.get("write_errnos") or "")
    if sc in ("wr_mix", "wr_paths"):
        base += " | reads %5d failed %d %s not_whole %d empty %d" % (d["reads"], d["reads_failed"], d.get("read_errnos") or "", d["reads_not_whole"], d["reads_empty"])
    elif sc == "mm_hostile":
        base += " | readers %d SIGBUS %d other_sig %d errs %d mapped %d empty %d not_whole %d changed %d" % (d["reader_procs"], d["sigbus"], d["killed_other"], d["reader_errors"], d["mapped"], d["empty"], d["maps_not_whole"], d["maps_changed_between_reads"])
    elif sc == "fd_stable":
        base += " | %s" % {k: v for k, v in d["counts"].items() if not k.startswith("write")}
    elif sc == "fst2":
        base += " | opens %d open_fail %s fstat!=bytes %d (fstat0 %d, whole-other-size %d, empty-read %d)" % (d["read_opens"], d.get("read_errnos") or 0, d["fstat_disagree"], d["dis_fstat0"], d["dis_whole_version_wrong_size"], d["dis_partial"])
    print(base)
print()
tot = collections.defaultdict(collections.Counter)
for d in runs:
    t = tot[(key(d), d["layout"], d["bin"])]
    t["runs"] += 1
    for f in ("writes", "writes_failed", "reads", "reads_failed", "reads_not_whole", "reads_empty", "reader_procs", "sigbus", "maps_not_whole", "maps_changed_between_reads", "read_opens", "open_estale", "fstat_disagree"):
        if f in d: t[f] += d[f]
    if d.get("sigbus"): t["runs_with_sigbus"] += 1
    for k2, v in d.get("counts", {}).items(): t[k2] += v
for k in sorted(tot):
    print(k, dict(tot[k]))
