//go:build !linux

package integration

import "net/http"

// frontTransport is nil: the stand-in internet is Linux's (outside_test.go).
func frontTransport() http.RoundTripper { return nil }
