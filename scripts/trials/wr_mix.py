#!/usr/bin/env python3
"""wr_mix.py MOUNTFILE SECS NW NR
NW writer threads rewrite MOUNTFILE (open "wb", write 16..64 KiB tagged, close);
NR reader threads read it whole and check it is one whole written version.
Prints one JSON line of counts."""
import os, sys, time, threading, random, errno, json, collections

p, secs, nw, nr = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lock = threading.Lock()
written = set()
try:
    with open(p, "rb") as f:
        written.add(f.read())
except OSError:
    pass
c = collections.Counter()
werr = collections.Counter(); rerr = collections.Counter()
bad_samples = []
stop = time.monotonic() + secs

def ename(e):
    return errno.errorcode.get(e.errno, str(e.errno))

def writer(w):
    rnd = random.Random(w * 7919 + os.getpid())
    i = 0
    while time.monotonic() < stop:
        n = rnd.randint(16 * 1024, 64 * 1024)
        tag = ("w%d-%d;" % (w, i)).encode()
        data = tag + rnd.randbytes(n - len(tag))
        with lock:
            written.add(data)
        stage = "open"
        try:
            f = open(p, "wb")
            stage = "write"
            try:
                f.write(data)
            finally:
                stage = "close"
                f.close()
            with lock: c["writes_ok"] += 1
        except OSError as e:
            with lock:
                c["writes_failed"] += 1
                werr[stage + ":" + ename(e)] += 1
        i += 1

def reader(r):
    while time.monotonic() < stop:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError as e:
            with lock:
                c["reads_failed"] += 1
                rerr[ename(e)] += 1
            continue
        with lock:
            c["reads_ok"] += 1
            if data not in written:
                if len(data) == 0:
                    c["reads_empty"] += 1
                else:
                    c["reads_not_whole"] += 1
                    if len(bad_samples) < 5:
                        bad_samples.append((len(data), data[:16].hex()))

ts = [threading.Thread(target=writer, args=(w,)) for w in range(nw)] + \
     [threading.Thread(target=reader, args=(r,)) for r in range(nr)]
for t in ts: t.start()
for t in ts: t.join()
out = dict(scenario="wr_mix", nw=nw, nr=nr, secs=secs,
           writes=c["writes_ok"] + c["writes_failed"], writes_failed=c["writes_failed"],
           write_errnos=dict(werr), reads=c["reads_ok"] + c["reads_failed"],
           reads_failed=c["reads_failed"], read_errnos=dict(rerr),
           reads_not_whole=c["reads_not_whole"], reads_empty=c["reads_empty"],
           bad_samples=bad_samples)
print(json.dumps(out))
