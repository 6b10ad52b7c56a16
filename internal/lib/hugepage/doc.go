// Package hugepage backs large, short-lived or fast-filled memory with
// transparent huge pages where the kernel makes them, and faults it in
// at once.
//
// Why: on this project's 2-core VMs a 4 KiB page of new memory costs its
// first writer 10–40 µs (the fault, and the host's behind it), while a
// 2 MiB huge page populated in one call costs about 0.3 µs per 4 KiB of
// it. A 10M-entry open writes about a gigabyte of new memory: the list's
// body as it arrives, and the set's arrays (docs/performance.md, target 4).
//
// Model:
//   - Mode reads the kernel's policy once (/sys/kernel/mm/transparent_hugepage/enabled).
//   - Map gives a mapping of its own, aligned to a huge page, advised and
//     populated; Unmap returns it. Mapped counts the mappings not yet
//     returned (for tests and leak checks).
//   - Populate faults in a range of any memory (the Go heap's included)
//     with MADV_POPULATE_WRITE, its whole 2 MiB blocks as huge pages where
//     the kernel makes them only when advised: the advice is given for the
//     call and replaced by MADV_NOHUGEPAGE after it, which on such a kernel
//     is what unadvised memory gets, so memory reused later in that range
//     (the Go heap's) gets no huge page it did not ask for.
//
// Memory: nothing held; Map's mappings are the caller's until Unmap.
// Concurrency: every function is safe for concurrent use. Off Linux, or
// where the kernel makes no huge pages, Map says no and Populate does
// nothing (false): callers fall back to ordinary memory.
package hugepage
