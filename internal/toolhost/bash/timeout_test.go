package bash

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSecondsDurationClamps(t *testing.T) {
	assert.Equal(t, 1500*time.Millisecond, SecondsDuration(1.5))
	for _, s := range []float64{1e10, 9.3e9, 1e300, math.Inf(1), math.NaN()} {
		assert.Equal(t, time.Duration(math.MaxInt64), SecondsDuration(s), "%v", s)
	}
	assert.Greater(t, SecondsDuration(9.2e9), time.Duration(0))
}
