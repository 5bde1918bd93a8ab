//go:build !linux

package host

// walkGuard is Linux's (inotify); elsewhere a walk is unguarded.
type walkGuard struct{}

func newWalkGuard() *walkGuard    { return nil }
func (g *walkGuard) watch(string) {}
func (g *walkGuard) moved() bool  { return false }
