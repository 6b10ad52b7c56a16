#!/usr/bin/env python3
"""notrunc_land.py MOUNTFILE N [reader]: N times open(O_WRONLY, no O_TRUNC)/write/ftruncate/close
(what `dd conv=notrunc` or open(...,"r+b") does), by one thread; after a failed call, read the file back:
did the write land (bytes == data), is the previous version there, or something else?"""
import os, sys, random, errno, collections, json, threading, time
p, n = sys.argv[1], int(sys.argv[2]); rnd = random.Random(2); c = collections.Counter()
prev = open(p, "rb").read()
stop = False
def reader():
    while not stop:
        try: open(p, "rb").read()
        except OSError: pass
t = None
if "reader" in sys.argv[3:]:
    t = threading.Thread(target=reader, daemon=True); t.start()
try:
    for i in range(n):
        data = ("v%d;" % i).encode() + rnd.randbytes(rnd.randint(16384, 65536))
        st = "open"; err = None
        try:
            fd = os.open(p, os.O_WRONLY)
        except OSError as e:
            c["open:" + errno.errorcode[e.errno]] += 1; continue
        try:
            st = "write"; os.write(fd, data); st = "ftruncate"; os.ftruncate(fd, len(data))
        except OSError as e:
            err = e
        try:
            os.close(fd)
        except OSError as e:
            if err is None: err = e; st = "close"
        if err is None:
            c["ok"] += 1; prev = data; continue
        time.sleep(0.05)
        now = open(p, "rb").read()
        k = "landed" if now == data else "previous" if now == prev else "other"
        c["%s:%s -> %s" % (st, errno.errorcode[err.errno], k)] += 1
        if k == "other" and c["samples"] < 3:
            c["samples"] += 1; print("other: len %d starts %r; data len %d prev len %d" % (len(now), now[:8], len(data), len(prev)))
        prev = now
finally:
    stop = True
print(json.dumps(c))
