// Package layout holds the import rules of boxsh's packages as a test.
//
// The rules follow the direction data flows in: client → rpc → frames →
// boxsh-init → tools. The test fails on a new upward or forbidden import.
// The package has no code of its own.
package layout
