#!/usr/bin/env python3
"""wr_paths.py MOUNTFILE SECS MODE [NW NR]
Like wr_mix (NW writer threads beside NR reader threads, one mount), but the
writers open the name another way. MODE:
  symlink  - writers open MOUNT/by-signer/<signer>/<hh><rest> (a symlink)
  dirfd    - writers openat(dirfd, "<signer>") relative to a directory fd
  notrunc  - writers os.open(O_WRONLY) without O_TRUNC, write, ftruncate to length
  append   - writers open O_WRONLY|O_TRUNC then a second O_APPEND open adds a tail
  procs    - writers are separate processes (fork), not threads
Readers read the canonical path and check the bytes are a whole version."""
import os, sys, time, threading, random, errno, json, collections, hashlib

p, secs, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
nw = int(sys.argv[4]) if len(sys.argv) > 4 else 2
nr = int(sys.argv[5]) if len(sys.argv) > 5 else 1
parts = p.split("/")
signer, rest, hh = parts[-1], parts[-2], parts[-3]
mnt = "/".join(parts[:-4])
link = "%s/by-signer/%s/%s%s" % (mnt, signer, hh, rest)
dirp = os.path.dirname(p)
lock = threading.Lock()
written = set()
try: written.add(hashlib.sha1(open(p, "rb").read()).digest())
except OSError: pass
c = collections.Counter(); werr = collections.Counter(); rerr = collections.Counter()
stop = time.monotonic() + secs
def ename(e): return errno.errorcode.get(e.errno, str(e.errno))

def version(rnd, w, i):
    n = rnd.randint(16 * 1024, 64 * 1024)
    tag = ("%s%d-%d;" % (mode, w, i)).encode()
    return tag + rnd.randbytes(n - len(tag))

def write_once(w, data, dfd):
    stage = "open"
    if mode == "symlink":
        with open(link, "wb") as f: stage = "write"; f.write(data); stage = "close"
    elif mode == "dirfd":
        fd = os.open(signer, os.O_WRONLY | os.O_TRUNC, dir_fd=dfd)
        try: stage = "write"; os.write(fd, data)
        finally: stage = "close"; os.close(fd)
    elif mode == "notrunc":
        try: fd = os.open(p, os.O_WRONLY)
        except OSError as e: e.stage = "open"; raise
        err = None
        try:
            stage = "write"; os.write(fd, data); stage = "ftruncate"; os.ftruncate(fd, len(data))
        except OSError as e: e.stage = stage; err = e
        try: os.close(fd)
        except OSError as e:
            if err is None: e.stage = "close"; err = e
        if err is not None: raise err
    elif mode == "append":
        half = len(data) // 2
        with open(p, "wb") as f: stage = "write"; f.write(data[:half])
        stage = "open2"
        with open(p, "ab") as f: stage = "write2"; f.write(data[half:])
    else:
        with open(p, "wb") as f: stage = "write"; f.write(data)

def writer(w, results=None):
    rnd = random.Random(w * 7919 + os.getpid())
    dfd = os.open(dirp, os.O_RDONLY | os.O_DIRECTORY)
    i = 0; ok = 0; failed = collections.Counter()
    while time.monotonic() < stop:
        data = version(rnd, w, i)
        if mode == "append":
            with lock: written.add(hashlib.sha1(data[:len(data)//2]).digest())
        with lock: written.add(hashlib.sha1(data).digest()); vlen[data[:data.find(b";") + 1].decode()] = len(data)
        if results is not None: results.write(hashlib.sha1(data).hexdigest() + "\n"); results.flush()
        try:
            write_once(w, data, dfd); ok += 1
        except OSError as e:
            failed[(getattr(e, "stage", "") + ":" if hasattr(e, "stage") else "") + ename(e)] += 1
        i += 1
    with lock:
        c["writes_ok"] += ok
        for k, v in failed.items(): werr[k] += v; c["writes_failed"] += v
    return ok, failed

def reader(r):
    while time.monotonic() < stop:
        try:
            with open(p, "rb") as f: data = f.read()
        except OSError as e:
            with lock: c["reads_failed"] += 1; rerr[ename(e)] += 1
            continue
        h = hashlib.sha1(data).digest()
        with lock:
            c["reads_ok"] += 1
            if h not in written:
                c["reads_empty" if not data else "reads_not_whole_pending"] += 1
                if data: pend.append((h, len(data), data[:data.find(b";") + 1][:20].decode("latin1"), len(data) - len(data.rstrip(b"\0"))))

pend = []
vlen = {}
children = []
if mode == "procs":
    for w in range(nw):
        fn = "/tmp/wr_paths_%d_%d" % (os.getpid(), w)
        pid = os.fork()
        if pid == 0:
            with open(fn, "w") as res:
                ok, failed = writer(w, res)
            with open(fn + ".json", "w") as jf: json.dump([ok, failed], jf)
            os._exit(0)
        children.append((pid, fn))
    ts = [threading.Thread(target=reader, args=(r,)) for r in range(nr)]
else:
    ts = [threading.Thread(target=writer, args=(w,)) for w in range(nw)] + \
         [threading.Thread(target=reader, args=(r,)) for r in range(nr)]
for t in ts: t.start()
for t in ts: t.join()
for pid, fn in children:
    os.waitpid(pid, 0)
    for l in open(fn): written.add(bytes.fromhex(l.strip()))
    ok, failed = json.load(open(fn + ".json"))
    c["writes_ok"] += ok
    for k, v in failed.items(): werr[k] += v; c["writes_failed"] += v
    os.unlink(fn); os.unlink(fn + ".json")
bad = [x for x in pend if x[0] not in written]
nwhole = len(bad)
print(json.dumps(dict(scenario="wr_paths", mode=mode, nw=nw, nr=nr, secs=secs,
    writes=c["writes_ok"] + c["writes_failed"], writes_failed=c["writes_failed"], write_errnos=dict(werr),
    reads=c["reads_ok"] + c["reads_failed"], reads_failed=c["reads_failed"], read_errnos=dict(rerr),
    reads_not_whole=nwhole, reads_empty=c["reads_empty"], not_whole_samples=[dict(len=x[1], tag=x[2], version_len=vlen.get(x[2]), zero_tail=x[3]) for x in bad[:6]])))
