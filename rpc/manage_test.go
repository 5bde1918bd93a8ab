package rpc

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/boxsh/boxsh/internal/tool"
)

// TestManageHandlers checks that every management tool has a handler,
// and that the management endpoint lists each of them.
func TestManageHandlers(t *testing.T) {
	assert.Empty(t, manageTools.Missing(), "management tools without a handler")
	assert.Equal(t, tool.Names(tool.ManageSet, nil), manageTools.Names())
	tools, err := tool.NewRegistryOf(tool.ManageSet)
	assert.NoError(t, err)
	var names []string
	for _, s := range tools.Specs() {
		names = append(names, s.Name)
	}
	assert.Equal(t, tool.Names(tool.ManageSet, nil), names, "every era's clients see every management tool")
}
