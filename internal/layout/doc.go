// Package layout states the import rules of boxsh's packages, the direction
// data flows in (client → rpc → frames → boxsh-init → tools), as a test that
// fails on a new upward or forbidden import. It has no code of its own.
package layout
