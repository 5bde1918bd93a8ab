package runtime

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/largecall"
	"github.com/boxsh/boxsh/internal/tool"
)

// ReadQuickFunc reports the read of fd, an open regular file of size bytes,
// as boxsh-init's files.ReadQuick would once the file is open, or gives up
// (ok false). The program gives readhead.Quick (Config.ReadQuick): the
// runtime runs no tool code of its own.
type ReadQuickFunc func(ctx context.Context, fd int, size int64, args tool.ReadArgs) (r tool.Result, ok bool)

// frontReadSlots bounds the reads the front serves at once, over every
// sandbox of the server: a file system that hangs holds at most that many of
// the front's threads, and a read beyond goes to boxsh-init.
var frontReadSlots = make(chan struct{}, 4)

// frontRead serves a read call in the front, through the sandbox's own root
// (in plain mode, the front's, which boxsh-init shares), when it is certain
// to give what boxsh-init would (see openInRoot), and tells whether it did.
// Anything else, every error among it, is left to boxsh-init.
//
// It takes the running boxsh-init as any call does, so that a paused
// sandbox, a stale or retired boxsh-init and a lost protection are dealt
// with first, and the read is of the sandbox that would have run it.
func (s *Supervisor) frontRead(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) bool {
	if name != tool.Read || s.cfg.ReadQuick == nil || initproto.ProgressAsked(ctx) {
		return false
	}
	var a tool.ReadArgs
	if err := largecall.UnmarshalArgs(args, &a); err != nil || !filepath.IsAbs(a.Path) {
		// boxsh-init resolves a relative path from its working
		// directory, which the sandbox may move.
		return false
	}
	in, err := s.instance(ctx)
	if err != nil || in.root == nil || !in.answered.Load() {
		return false
	}
	if in.Client.Pending() >= initproto.OtherSlots {
		// boxsh-init's slots may all be taken: there the read would wait
		// its turn, and so it does.
		return false
	}
	select {
	case frontReadSlots <- struct{}{}:
	default:
		return false
	}
	defer func() { <-frontReadSlots }()
	r, ok := in.root.read(ctx, a, s.cfg.ReadQuick)
	if !ok || r.IsError {
		return false
	}
	b, err := r.AppendJSON(nil)
	if err != nil {
		return false
	}
	s.frontReads.Add(1)
	if s.cfg.Log.IsDebug() {
		s.cfg.Log.Debug("read served by the front", "path", a.Path)
	}
	done(b, nil)
	return true
}

// FrontReads is how many read calls the front has served itself (see
// frontRead).
func (s *Supervisor) FrontReads() uint64 { return s.frontReads.Load() }
