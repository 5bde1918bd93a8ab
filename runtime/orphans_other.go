//go:build !linux

package runtime

import "github.com/hashicorp/go-hclog"

// adoptOrphans is a no-op where there are no child subreapers.
func adoptOrphans(hclog.Logger) {}

// killOrphans is a no-op where the front cannot adopt orphans.
func killOrphans(hclog.Logger) {}
