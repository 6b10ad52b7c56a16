#!/usr/bin/env python3
"""mm_hostile.py MOUNTFILE SECS
One writer process rewrites MOUNTFILE in a loop (sizes vary); reader processes
are forked one after another (2 at a time), each opens the file, mmaps it
MAP_SHARED read-only, reads the whole mapping twice with a short sleep
between, and exits. Counts SIGBUS deaths, torn mappings and failed writes."""
import os, sys, time, random, errno, json, mmap, signal, subprocess, collections, hashlib

if len(sys.argv) > 1 and sys.argv[1] == "--reader":
    # reader child: prints digest of both reads, exit 0; exit 3 on open errors
    p = sys.argv[2]
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as e:
        print("OPENERR " + errno.errorcode.get(e.errno, str(e.errno))); sys.exit(3)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            print("EMPTY"); sys.exit(0)
        try:
            m = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except OSError as e:
            print("MMAPERR " + errno.errorcode.get(e.errno, str(e.errno))); sys.exit(4)
        a = bytes(m[:])
        time.sleep(0.02)
        b = bytes(m[:])
        print("OK %d %s %s" % (size, hashlib.sha1(a).hexdigest(), hashlib.sha1(b).hexdigest()))
        sys.stdout.flush()
        sys.exit(0)
    finally:
        os.close(fd)

if len(sys.argv) > 1 and sys.argv[1] == "--writer":
    p, secs, outp = sys.argv[2], float(sys.argv[3]), sys.argv[4]
    rnd = random.Random(os.getpid())
    stop = time.monotonic() + secs
    ok = 0; failed = collections.Counter(); i = 0
    with open(outp, "w") as log:
        while time.monotonic() < stop:
            n = rnd.choice([rnd.randint(100, 4000), rnd.randint(4096, 20000), rnd.randint(20000, 200000)])
            tag = ("m-%d;" % i).encode()
            data = tag + rnd.randbytes(n - len(tag))
            log.write("%s %d %s\n" % (hashlib.sha1(data).hexdigest(), len(data), tag.decode())); log.flush()
            stage = "open"
            try:
                f = open(p, "wb"); stage = "write"
                try: f.write(data)
                finally:
                    stage = "close"; f.close()
                ok += 1
            except OSError as e:
                failed[stage + ":" + errno.errorcode.get(e.errno, str(e.errno))] += 1
            i += 1
    print(json.dumps(dict(ok=ok, failed=dict(failed))))
    sys.exit(0)

p, secs = sys.argv[1], float(sys.argv[2])
outp = "/tmp/mm_hostile_%d.sha" % os.getpid()
with open(p, "rb") as f:
    init = hashlib.sha1(f.read()).hexdigest()
me = os.path.abspath(__file__)
w = subprocess.Popen([sys.executable, me, "--writer", p, str(secs), outp], stdout=subprocess.PIPE, text=True)
stop = time.monotonic() + secs
res = collections.Counter(); other_errs = collections.Counter(); rows = []; bus_samples = []
running = []
def reap(pr):
    out, _ = pr.communicate()
    rc = pr.returncode
    res["readers"] += 1
    if rc == -signal.SIGBUS:
        res["sigbus"] += 1
    elif rc < 0:
        res["killed_other"] += 1; other_errs["signal%d" % -rc] += 1
    elif rc != 0:
        res["reader_errors"] += 1; other_errs[out.strip()] += 1
    elif "OK " in out:
        res["mapped"] += 1; rows.append(out[out.index("OK "):].split())
    elif "EMPTY" in out:
        res["empty"] += 1
def child(wfd):
    # forked reader process: open, mmap MAP_SHARED read-only, read twice, exit
    code = 0
    try:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            msg = "OPENERR " + errno.errorcode.get(e.errno, str(e.errno)); code = 3
        else:
            size = os.fstat(fd).st_size
            if size == 0:
                msg = "EMPTY"
            else:
                try:
                    m = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                except OSError as e:
                    msg = "MMAPERR " + errno.errorcode.get(e.errno, str(e.errno)); code = 4
                else:
                    os.write(wfd, ("PRE %d;" % size).encode())
                    a = bytes(m[:])
                    os.write(wfd, b"A;")
                    time.sleep(0.02); b = bytes(m[:])
                    os.write(wfd, b"B;")
                    tag = a[:a.find(b";") + 1].decode("latin1") if b";" in a[:16] else "?" + a[:8].hex()
                    z = len(a) - len(a.rstrip(b"\0"))
                    msg = "OK %d %s %s %s %d %d" % (size, hashlib.sha1(a).hexdigest(), hashlib.sha1(b).hexdigest(), tag, len(a), z)
        os.write(wfd, msg.encode())
    finally:
        os._exit(code)
def spawn():
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.signal(signal.SIGBUS, signal.SIG_DFL)
        child(wfd)
    os.close(wfd)
    return (pid, r)
def reap(pr):
    pid, r = pr
    out = b""
    while True:
        b = os.read(r, 4096)
        if not b: break
        out += b
    os.close(r)
    _, st = os.waitpid(pid, 0)
    out = out.decode()
    res["readers"] += 1
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        if sig == signal.SIGBUS:
            res["sigbus"] += 1
            res["sigbus_in_second_read" if "A;" in out else "sigbus_in_first_read"] += 1
            if len(bus_samples) < 6: bus_samples.append(out)
        else: res["killed_other"] += 1; other_errs["signal%d" % sig] += 1
    elif os.WEXITSTATUS(st) != 0:
        res["reader_errors"] += 1; other_errs[out.strip()] += 1
    elif "OK " in out:
        res["mapped"] += 1; rows.append(out[out.index("OK "):].split())
    elif "EMPTY" in out:
        res["empty"] += 1
while time.monotonic() < stop:
    while len(running) < 2:
        running.append(spawn())
    pr = running.pop(0); reap(pr)
for pr in running: reap(pr)
wout, _ = w.communicate()
wres = json.loads(wout)
valid = {init}
vlen = {}
with open(outp) as f:
    for l in f:
        sha, ln, tg = l.split()
        valid.add(sha); vlen[tg] = int(ln)
samples = []
os.unlink(outp)
nw = 0; twice_diff = 0
for r in rows:
    _, size, a, b, tg, la, z = r
    if a not in valid or b not in valid:
        nw += 1
        if len(samples) < 6: samples.append(dict(fstat=int(size), mapped=int(la), tag=tg, version_len=vlen.get(tg), prev_version_len=vlen.get("m-%d;" % (int(tg[2:-1]) - 1)) if tg.startswith("m-") else None, zero_tail=int(z), changed=a != b))
    if a != b: twice_diff += 1
out = dict(scenario="mm_hostile", secs=secs, writes=wres["ok"] + sum(wres["failed"].values()),
           writes_failed=sum(wres["failed"].values()), write_errnos=wres["failed"],
           reader_procs=res["readers"], sigbus=res["sigbus"], killed_other=res["killed_other"],
           reader_errors=res["reader_errors"], reader_error_kinds=dict(other_errs),
           mapped=res["mapped"], empty=res["empty"], maps_not_whole=nw, maps_changed_between_reads=twice_diff, not_whole_samples=samples, sigbus_in_first_read=res['sigbus_in_first_read'], sigbus_in_second_read=res['sigbus_in_second_read'], sigbus_samples=bus_samples)
print(json.dumps(out))
