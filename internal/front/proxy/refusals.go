package proxy

import (
	"cmp"
	"slices"
	"sync"
)

// DefaultMaxRefusals is how many distinct refusals a Refusals keeps when
// NewRefusals is given no bound.
const DefaultMaxRefusals = 64

// A Refusal is one destination that the proxy refused, with why and how
// often.
type Refusal struct {
	Host   string
	Port   int
	Reason string
	// Allow is the setting that would allow it, or "" (see Decision).
	Allow string
	// Count is how many times it was refused since it was first kept.
	Count int
	// Seq is the sequence number of its latest refusal.
	Seq uint64
}

// refusalKey is what makes two refusals the same.
type refusalKey struct {
	host   string
	port   int
	reason string
}

// Refusals keeps the recent refusals of a proxy, so that a tool result can
// tell which ones happened while the tool ran.
//
// Each refusal recorded gets the next sequence number. Refusals of the same
// host, port and reason are kept as one, which takes the number of the latest
// and counts them. Beyond its bound, the refusal whose latest number is the
// oldest is dropped. It is safe for concurrent use.
type Refusals struct {
	mu    sync.Mutex
	max   int
	seq   uint64
	byKey map[refusalKey]*Refusal
	// dropped is the latest sequence number of a dropped refusal.
	dropped uint64
}

// NewRefusals returns an empty record of at most max distinct refusals
// (DefaultMaxRefusals when max is not above 0).
func NewRefusals(max int) *Refusals {
	if max <= 0 {
		max = DefaultMaxRefusals
	}
	return &Refusals{max: max, byKey: make(map[refusalKey]*Refusal)}
}

// Record records d if it is a refusal; it ignores an allowed decision.
func (r *Refusals) Record(d Decision) {
	if d.Allowed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	k := refusalKey{d.Host, d.Port, d.Reason}
	if e, ok := r.byKey[k]; ok {
		e.Count++
		e.Seq = r.seq
		e.Allow = d.Allow
		return
	}
	if len(r.byKey) >= r.max {
		var oldest refusalKey
		var seq uint64
		for k, e := range r.byKey {
			if seq == 0 || e.Seq < seq {
				oldest, seq = k, e.Seq
			}
		}
		delete(r.byKey, oldest)
		r.dropped = max(r.dropped, seq)
	}
	r.byKey[k] = &Refusal{Host: d.Host, Port: d.Port, Reason: d.Reason, Allow: d.Allow, Count: 1, Seq: r.seq}
}

// Seq is the sequence number of the latest refusal recorded (0: none yet).
func (r *Refusals) Seq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// Since returns the refusals recorded after sequence number seq, oldest
// first, and the sequence number of the latest one recorded. dropped tells
// that some recorded after seq are no longer kept.
func (r *Refusals) Since(seq uint64) (refs []Refusal, latest uint64, dropped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.byKey {
		if e.Seq > seq {
			refs = append(refs, *e)
		}
	}
	sortBySeq(refs)
	return refs, r.seq, r.dropped > seq
}

// Recent returns the n latest refusals (all when n is not above 0), oldest
// first.
func (r *Refusals) Recent(n int) []Refusal {
	r.mu.Lock()
	refs := make([]Refusal, 0, len(r.byKey))
	for _, e := range r.byKey {
		refs = append(refs, *e)
	}
	r.mu.Unlock()
	sortBySeq(refs)
	if n > 0 && len(refs) > n {
		refs = refs[len(refs)-n:]
	}
	return refs
}

func sortBySeq(refs []Refusal) {
	slices.SortFunc(refs, func(a, b Refusal) int { return cmp.Compare(a.Seq, b.Seq) })
}
