package toolhost

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
)

// serveOnPipe starts a host with one worker serving one end of a pipe
// until the test ends. It reads the host's hello and sends the front's, of
// the same empty build. It returns the reader and writer of the other end.
func serveOnPipe(t *testing.T) (*initproto.Reader, *initproto.Writer) {
	t.Helper()
	return serveHostOnPipe(t, func(*Host) {})
}

// serveHostOnPipe is serveOnPipe with the host adjusted by adjust before
// it serves.
func serveHostOnPipe(t *testing.T, adjust func(*Host)) (*initproto.Reader, *initproto.Writer) {
	t.Helper()
	a, err := New(Config{Workers: 1})
	require.NoError(t, err)
	adjust(a)
	front, back := net.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Serve(ctx, back)
	}()
	t.Cleanup(func() {
		cancel()
		front.Close()
		<-done
		a.Close()
	})
	r, w := initproto.NewReader(front), initproto.NewWriter(front)
	_, err = r.Read()
	require.NoError(t, err)
	require.NoError(t, w.Write(initproto.EncodeHello(initproto.NewHello(""))))
	return r, w
}

// nextReply reads frames from r until a reply, past notices of calls'
// states.
func nextReply(t *testing.T, r *initproto.Reader) initproto.Reply {
	t.Helper()
	for {
		payload, err := r.Read()
		require.NoError(t, err)
		reply, err := initproto.DecodeReply(payload)
		require.NoError(t, err)
		if reply.State == "" {
			return reply
		}
	}
}

// frames reads r on a goroutine and returns a function that gives the
// next frame read: a reply, or a notice of a call's state. The function
// fails the test if no frame comes in time.
func frames(t *testing.T, r *initproto.Reader) func() initproto.Reply {
	ch := make(chan initproto.Reply, 1024)
	go func() {
		defer close(ch)
		for {
			payload, err := r.Read()
			if err != nil {
				return
			}
			if reply, err := initproto.DecodeReply(payload); err == nil {
				ch <- reply
			}
		}
	}()
	return func() initproto.Reply {
		t.Helper()
		select {
		case reply, ok := <-ch:
			require.True(t, ok, "the channel ended")
			return reply
		case <-time.After(10 * time.Second):
			t.Fatal("no frame in 10 s")
			return initproto.Reply{}
		}
	}
}

// TestServeGivesSetup checks that Serve gives Config.Setup what the
// front's hello carries once the hello checks, and nothing for a hello of
// another build.
func TestServeGivesSetup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build string
		same  bool
	}{{"same build", "", true}, {"other build", "other", false}} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan initproto.Setup, 1)
			a, err := New(Config{Workers: 1, Setup: func(s initproto.Setup) { got <- s }})
			require.NoError(t, err)
			defer a.Close()
			front, back := net.Pipe()
			defer front.Close()
			served := make(chan error, 1)
			go func() { served <- a.Serve(context.Background(), back) }()
			r, w := initproto.NewReader(front), initproto.NewWriter(front)
			_, err = r.Read()
			require.NoError(t, err)
			require.NoError(t, w.Write(initproto.EncodeFrontHello(initproto.NewHello(tc.build), initproto.Setup{ForwardFD: 7})))
			if !tc.same {
				var mismatch *initproto.MismatchError
				require.ErrorAs(t, <-served, &mismatch)
				require.Empty(t, got, "no setup from a front of another build")
				return
			}
			select {
			case s := <-got:
				require.Equal(t, initproto.Setup{ForwardFD: 7}, s)
			case err := <-served:
				t.Fatalf("Serve returned before the setup: %v", err)
			}
			front.Close()
			require.NoError(t, <-served)
		})
	}
}
