package toolhost

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsBackground(t *testing.T) {
	for args, want := range map[string]bool{
		`{"command":"x","background":true}`:          true,
		`{"command":"x", "background" : true}`:       true,
		`{"command":"x","background":false}`:         false,
		`{"command":"echo \"background\": true"}`:    false,
		`{"command":"x"}`:                            false,
		`{"args":["a"],"background":true,"cwd":"/"}`: true,
	} {
		assert.Equal(t, want, isBackground(json.RawMessage(args)), args)
	}
}
