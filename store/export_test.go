package store

// IdleTransport is idleTransport, for the tests of package store_test.
var IdleTransport = idleTransport
