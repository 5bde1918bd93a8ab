package hostcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineAndProblem(t *testing.T) {
	ok := Check{Name: "a", OK: true, Needed: true, Detail: "fine", Fix: "unused"}
	info := Check{Name: "b", Detail: "not there", Fix: "install b"}
	bad := Check{Name: "c", Needed: true, Detail: "off", Fix: "turn it on"}
	assert.Equal(t, "a: fine", ok.Line())
	assert.Equal(t, "b: not there: install b", info.Line())
	assert.Equal(t, "", Problem([]Check{ok, info}), "a check that only informs is no problem")
	assert.Equal(t, "c: off: turn it on", Problem([]Check{ok, info, bad, {Name: "d", Needed: true}}))
}
