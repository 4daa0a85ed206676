package store

// HistoryToTheTop lets the external conformance tests put a key dir's
// history at its last sequence number, as the package's own tests do.
var HistoryToTheTop = historyToTheTop
