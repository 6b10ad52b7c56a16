// Package grammarcheck holds one test, TestOneGrammar, that keeps the key
// and path grammar in its owners: store reads keys (DESIGN §3: format.SplitKey,
// ParseKey, ParseKind, ParseHH, DecodeObjectID, ValidValue...), index reads
// tree paths and numbers their inodes (DESIGN §4: index.ParsePath,
// Path.Child, Path.Make, PathIno, ChildIno, SplitPath, JoinPath). It runs
// with `go test ./...`, parses every non-test Go file of the module with
// go/parser (no type checking), and fails on each of these, naming file and
// line:
//
//   - key text outside store/: a string literal with no white space that
//     holds a '/' and a '/'-separated segment that is a kind name or an
//     older one-list directory ("sig/", "../../sig/", "sig/%02x/",
//     "sigs/"). Such a literal splits, tests or builds a key by hand.
//   - tree names outside index/: a string literal with no white space that
//     is index.BySigner or has it as a '/'-separated segment.
//   - inode numbers outside index/: an integer literal equal to the FNV-64
//     offset basis or prime the inode numbers hash with.
//   - a copy of an owner's function: a function declared outside store/
//     with the name (any case) of one of store's key readers, or outside
//     index/ with the name of one of index's path readers (pathIno,
//     parsePath, joinPath...), as fs/invalidate.go once copied pathIno.
//   - a path consumer reading keys: fs/, web/ and cmd/ take tree paths and
//     call none of store's key readers (ParseKey, SplitKey, ParseKind,
//     ValidateObject, ValidateValue, ValidObjectID, ValidValue,
//     DecodeObjectID, ParseHH, ParseLegacyKey): not ValidateObject(name+"00")
//     for an <hh> directory, nor ParseKey on a path. index reads the path.
//   - slash splitting in a path consumer: in fs/, web/ and cmd/, a call of a
//     strings or bytes function that splits or searches (Split, SplitN,
//     SplitAfter, SplitAfterN, SplitSeq, SplitAfterSeq, Cut, Index,
//     IndexByte, IndexRune, LastIndex, LastIndexByte, Count) with the
//     literal "/" or '/' as an argument. allowedSplits names the two that
//     split a URL path into segments only to escape and link them.
//
// What it does not catch: a grammar written without these literals, names
// or calls (a renamed copy of a splitter; FNV through hash/fnv, which a
// benchmark driver uses to derive object ids; path.Split, path.Dir and
// path.Base, which the web view and the CLI use to resolve a link target or
// name a download; a literal with white space, taken for a message; a
// literal that is a kind name alone, as "sig" also names a template and a
// secret word, and filepath.Join(dir, "sig", hh, rest) in a benchmark
// driver that writes through a mount as a shell would); and
// test files, which spell keys and paths out as literals on purpose to
// check the owners against them. store/ includes store/storetest, whose
// conformance kit writes keys as data. The check is a tripwire for copies
// of the grammar, not a proof that there is none; the owners' fuzz tests
// (store.FuzzSplitKey, index.FuzzParsePath) hold the owners themselves to
// the rules.
package grammarcheck
