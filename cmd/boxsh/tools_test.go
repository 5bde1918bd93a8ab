package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/runtime"
)

// TestFrontToolsHandled checks that every tool the front runs for a
// sandbox has exactly one handler: the runtime's, or the audit log's
// backend's, which the front puts before the runtime.
func TestFrontToolsHandled(t *testing.T) {
	handled := append(runtime.FrontTools(), audit.Tools()...)
	want := tool.Names(tool.SandboxSet, tool.On(tool.Front))
	assert.ElementsMatch(t, want, handled)
	slices.Sort(handled)
	assert.Len(t, slices.Compact(handled), len(want), "a tool with two handlers")
}
