package main

import (
	"math"
	"slices"
	"time"
)

// sample is a set of measured durations.
type sample []time.Duration

// percentile returns the nearest-rank p-th percentile (0 < p <= 100): the
// smallest value at least p percent of the sample is less than or equal to.
// It is 0 for an empty sample.
func (s sample) percentile(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// median is the 50th percentile.
func (s sample) median() time.Duration { return s.percentile(50) }

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
