#!/usr/bin/env python3
"""fst2.py MOUNTFILE SECS
3 writer threads re-sign MOUNTFILE in a loop; the main thread opens for
reading in a loop and checks fstat(fd).st_size == len(all bytes read).
Counts read-open ESTALEs (and other errnos) and disagreements."""
import os, sys, time, threading, random, errno, json, collections, hashlib

p, secs = sys.argv[1], float(sys.argv[2])
stop = time.monotonic() + secs
lock = threading.Lock()
c = collections.Counter(); werr = collections.Counter(); rerr = collections.Counter()
samples = []
written = set()
try:
    written.add(hashlib.sha1(open(p,'rb').read()).digest())
except OSError: pass
def ename(e): return errno.errorcode.get(e.errno, str(e.errno))
def writer(w):
    rnd = random.Random(w + os.getpid() * 31)
    i = 0
    while time.monotonic() < stop:
        n = rnd.randint(1, 70000)
        data = (("f%d-%d;" % (w, i)).encode() + rnd.randbytes(n))
        with lock: written.add(hashlib.sha1(data).digest())
        stage = "open"
        try:
            f = open(p, "wb"); stage = "write"
            try: f.write(data)
            finally:
                stage = "close"; f.close()
            with lock: c["writes_ok"] += 1
        except OSError as e:
            with lock: c["writes_failed"] += 1; werr[stage + ":" + ename(e)] += 1
        i += 1
ts = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
for t in ts: t.start()
while time.monotonic() < stop:
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as e:
        c["open_failed"] += 1; rerr["open:" + ename(e)] += 1
        continue
    try:
        st = os.fstat(fd).st_size
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b: break
            chunks.append(b)
        n = sum(map(len, chunks))
        st2 = os.fstat(fd).st_size
        c["reads"] += 1
        with lock: whole = hashlib.sha1(b"".join(chunks)).digest() in written
        if not whole: c["not_whole_nonempty" if n else "read_empty"] += 1
        if st != n:
            c["disagree"] += 1
            if st == 0: c["dis_fstat0"] += 1
            elif whole: c["dis_whole_version_wrong_size"] += 1
            else: c["dis_partial"] += 1
            if st > n: c["dis_fstat_gt_read"] += 1
            if len(samples) < 8: samples.append((st, n, st2, whole))
    except OSError as e:
        c["read_failed"] += 1; rerr["read:" + ename(e)] += 1
    finally:
        os.close(fd)
for t in ts: t.join()
print(json.dumps(dict(scenario="fst2", secs=secs, writes=c["writes_ok"] + c["writes_failed"],
    writes_failed=c["writes_failed"], write_errnos=dict(werr), read_opens=c["reads"] + c["open_failed"] + c["read_failed"],
    open_failed=c["open_failed"], read_failed=c["read_failed"], read_errnos=dict(rerr),
    open_estale=rerr.get("open:ESTALE", 0), fstat_disagree=c["disagree"],
    dis_fstat0=c["dis_fstat0"], dis_whole_version_wrong_size=c["dis_whole_version_wrong_size"], dis_partial=c["dis_partial"],
    dis_fstat_gt_read=c["dis_fstat_gt_read"], not_whole_nonempty=c["not_whole_nonempty"], read_empty=c["read_empty"], samples=samples)))
