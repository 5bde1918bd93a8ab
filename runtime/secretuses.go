package runtime

import (
	"slices"
	"strings"
	"sync"

	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
)

// maxSecretUses bounds the secret and host pairs counted.
const maxSecretUses = 256

// secretUses count the requests each secret went into, by host, for
// sandbox_stats.
type secretUses struct {
	mu    sync.Mutex
	count map[[2]string]int
}

// decided counts the secrets of d, then tells next (if set).
func (u *secretUses) decided(next func(proxy.Decision)) func(proxy.Decision) {
	return func(d proxy.Decision) {
		if d.Allowed && len(d.Secrets) > 0 {
			u.mu.Lock()
			if u.count == nil {
				u.count = map[[2]string]int{}
			}
			for _, name := range d.Secrets {
				k := [2]string{name, d.Host}
				if _, ok := u.count[k]; ok || len(u.count) < maxSecretUses {
					u.count[k]++
				}
			}
			u.mu.Unlock()
		}
		if next != nil {
			next(d)
		}
	}
}

// stats are the counts, by secret, then host.
func (u *secretUses) stats() []tool.SecretUse {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []tool.SecretUse
	for k, n := range u.count {
		out = append(out, tool.SecretUse{Secret: k[0], Host: k[1], Requests: n})
	}
	slices.SortFunc(out, func(a, b tool.SecretUse) int {
		if c := strings.Compare(a.Secret, b.Secret); c != 0 {
			return c
		}
		return strings.Compare(a.Host, b.Host)
	})
	return out
}
