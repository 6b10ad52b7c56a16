#!/usr/bin/env python3
"""fd_stable.py MOUNTFILE SECS [NW] [NR]: NW writer threads rewrite the name (sizes 100 B..200 KB);
NR reader threads open it, fstat, pread the whole file, sleep 20 ms, fstat + pread again, close.
A descriptor whose first read was a whole written version (a settled version, not a write in progress)
must read the same bytes again; counts those that changed, by what they became."""
import os, sys, time, threading, random, errno, json, collections, hashlib
p, secs = sys.argv[1], float(sys.argv[2])
nw = int(sys.argv[3]) if len(sys.argv) > 3 else 1
nr = int(sys.argv[4]) if len(sys.argv) > 4 else 2
stop = time.monotonic() + secs; lock = threading.Lock()
written = {hashlib.sha1(open(p, "rb").read()).digest()}
c = collections.Counter(); samples = []
def pread_all(fd):
    out = []; off = 0
    while True:
        b = os.pread(fd, 1 << 20, off)
        if not b: return b"".join(out)
        out.append(b); off += len(b)
def writer(w):
    rnd = random.Random(w * 31 + os.getpid()); i = 0
    while time.monotonic() < stop:
        n = rnd.choice([rnd.randint(100, 4000), rnd.randint(4096, 20000), rnd.randint(20000, 200000)])
        data = ("s%d-%d;" % (w, i)).encode() + rnd.randbytes(n); i += 1
        with lock: written.add(hashlib.sha1(data).digest())
        try:
            with open(p, "wb") as f: f.write(data)
            with lock: c["writes_ok"] += 1
        except OSError as e:
            with lock: c["write_" + errno.errorcode[e.errno]] += 1
def reader():
    while time.monotonic() < stop:
        try: fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            with lock: c["open_" + errno.errorcode[e.errno]] += 1
            continue
        try:
            s1 = os.fstat(fd).st_size; a = pread_all(fd); time.sleep(0.02); s2 = os.fstat(fd).st_size; b = pread_all(fd)
        except OSError as e:
            with lock: c["read_" + errno.errorcode[e.errno]] += 1
            continue
        finally: os.close(fd)
        with lock:
            c["opens"] += 1
            wa = hashlib.sha1(a).digest() in written; wb = hashlib.sha1(b).digest() in written
            if not a: c["first_empty"] += 1
            elif not wa: c["first_partial"] += 1
            else:
                c["first_whole"] += 1
                if a != b:
                    c["whole_then_changed"] += 1
                    c["  ->" + ("empty" if not b else "other_whole" if wb else "partial/torn")] += 1
                    if len(samples) < 6: samples.append(dict(len_a=len(a), tag_a=a[:a.find(b";")+1].decode(), len_b=len(b), tag_b=b[:b.find(b";")+1].decode("latin1")[:16], fstat1=s1, fstat2=s2))
ts = [threading.Thread(target=writer, args=(w,)) for w in range(nw)] + [threading.Thread(target=reader) for _ in range(nr)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps(dict(scenario="fd_stable", nw=nw, nr=nr, counts=dict(c), samples=samples)))
