package initproto

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	payloads := [][]byte{[]byte(`{}`), []byte(`{"a":1}`), bytes.Repeat([]byte("x"), 200_000), {}}
	for _, p := range payloads {
		require.NoError(t, w.Write(p))
	}
	r := NewReader(&buf)
	for _, want := range payloads {
		got, err := r.Read()
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := r.Read()
	assert.Equal(t, io.EOF, err)
}

func TestTruncatedFrame(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, NewWriter(&buf).Write([]byte(`{"id":1}`)))
	cut := buf.Bytes()[:buf.Len()-3]
	_, err := NewReader(bytes.NewReader(cut)).Read()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	_, err = NewReader(bytes.NewReader([]byte{0, 0})).Read()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestOversizedFrame(t *testing.T) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxSize+1)
	_, err := NewReader(bytes.NewReader(hdr[:])).Read()
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "67108865")

	err = NewWriter(io.Discard).Write(make([]byte, MaxSize+1))
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestConcurrentWritesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			assert.NoError(t, w.Write([]byte(strings.Repeat(string(rune('a'+i%26)), 5000))))
		}(i)
	}
	wg.Wait()
	r := NewReader(&buf)
	for i := 0; i < 50; i++ {
		p, err := r.Read()
		require.NoError(t, err)
		require.Len(t, p, 5000)
		assert.Equal(t, strings.Repeat(string(p[0]), 5000), string(p), "frame %d interleaved", i)
	}
}

func TestReplyFastPath(t *testing.T) {
	result := []byte(`{"content":[{"type":"text","text":"}"}]}`)
	enc := EncodeReply(42, result)
	var generic Reply
	require.NoError(t, json.Unmarshal(enc, &generic), "fast form must be valid JSON")
	assert.Equal(t, uint64(42), generic.ID)

	r, err := DecodeReply(enc)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), r.ID)
	assert.Equal(t, string(result), string(r.Result))
	assert.Nil(t, r.Error)
}

func TestReplyGenericForm(t *testing.T) {
	b, err := json.Marshal(Reply{ID: 7, Error: &Error{Code: CodeInvalidParams, Message: "bad"}})
	require.NoError(t, err)
	r, err := DecodeReply(b)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), r.ID)
	require.NotNil(t, r.Error)
	assert.Equal(t, "bad", r.Error.Message)

	_, err = DecodeReply([]byte(`{"id":`))
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrTooLarge))
}

// testHello is the hello of the fronts and boxsh-inits of these tests.
var testHello = NewHello("test")

// newTestClient is a Client on conn with testHello.
func newTestClient(conn io.ReadWriter) *Client {
	return NewClient(conn, ClientConfig{Hello: testHello})
}

// fakeInit answers every call on conn with a small result and reports each
// cancel frame on cancels.
func fakeInit(conn net.Conn, cancels chan<- uint64, answer func(Call) bool) {
	r, w := NewReader(conn), NewWriter(conn)
	// The front's hello, then ours (a pipe has no buffer for both sides
	// to write first, as they do on a socket).
	if _, err := r.Read(); err != nil {
		return
	}
	if w.Write(EncodeHello(testHello)) != nil {
		return
	}
	for {
		payload, err := r.Read()
		if err != nil {
			return
		}
		var call Call
		_ = json.Unmarshal(payload, &call)
		if call.Cancel {
			cancels <- call.ID
			continue
		}
		if answer(call) && w.Write(EncodeReply(call.ID, []byte(`{"t":"`+strings.Repeat("r", 54)+`"}`))) != nil {
			return
		}
	}
}

type outcome struct {
	result json.RawMessage
	err    error
}

func TestClientBlockedDoneStopsReading(t *testing.T) {
	front, back := net.Pipe()
	defer front.Close()
	defer back.Close()
	go fakeInit(back, make(chan uint64, 1), func(Call) bool { return true })
	c := newTestClient(front)

	unblock := make(chan struct{})
	first, second := make(chan outcome, 1), make(chan outcome, 1)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx, "bash", []byte(`{}`), func(r json.RawMessage, err error) {
		first <- outcome{r, err}
		<-unblock
	}))
	require.NoError(t, c.Start(ctx, "bash", []byte(`{}`), func(r json.RawMessage, err error) { second <- outcome{r, err} }))
	o := <-first
	require.NoError(t, o.err)
	assert.Len(t, o.result, 62)
	select {
	case <-second:
		t.Fatal("a second reply was read while the first one's Done was still running")
	case <-time.After(100 * time.Millisecond):
	}
	close(unblock)
	o = <-second
	require.NoError(t, o.err)
	assert.Len(t, o.result, 62)
}

func TestClientCancelAndClose(t *testing.T) {
	front, back := net.Pipe()
	defer front.Close()
	cancels := make(chan uint64, 1)
	go fakeInit(back, cancels, func(Call) bool { return false }) // never answers
	c := newTestClient(front)

	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan outcome, 1)
	require.NoError(t, c.Start(ctx, "bash", []byte(`{}`), func(r json.RawMessage, err error) { cancelled <- outcome{r, err} }))
	orphan := make(chan outcome, 1)
	require.NoError(t, c.Start(context.Background(), "bash", []byte(`{}`), func(r json.RawMessage, err error) { orphan <- outcome{r, err} }))
	cancel()
	o := <-cancelled
	assert.ErrorIs(t, o.err, context.Canceled)
	assert.Equal(t, uint64(1), <-cancels, "boxsh-init is asked to stop the call")

	back.Close()
	o = <-orphan
	assert.ErrorIs(t, o.err, ErrClosed, "calls left when the channel ends fail")
	<-c.Done()
	assert.ErrorIs(t, c.Start(context.Background(), "bash", []byte(`{}`), func(json.RawMessage, error) {
		t.Error("done called for a call that was not started")
	}), ErrClosed)
}

// dyingConn is a channel whose other end dies while a call is being sent:
// reading ends at once, and the write of the call (after the hello) fails
// once the client has seen that.
type dyingConn struct {
	c      **Client
	hellos *int
}

func (d dyingConn) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func (d dyingConn) Write(b []byte) (int, error) {
	if *d.hellos < 4+len(EncodeHello(testHello)) { // header and body
		*d.hellos += len(b)
		return len(b), nil
	}
	<-(*d.c).Done() // the reader has taken the pending calls
	return 0, errors.New("broken pipe")
}

// A call whose sending fails because the channel ended meanwhile is
// finished once, by the reader: Start must not report it failed too (the
// server would answer it twice).
func TestClientSendFailsAfterChannelEnded(t *testing.T) {
	var c *Client
	c = newTestClient(dyingConn{&c, new(int)})
	var calls int
	var mu sync.Mutex
	finished := make(chan struct{}, 2)
	err := c.Start(context.Background(), "bash", json.RawMessage(`{}`), func(_ json.RawMessage, err error) {
		mu.Lock()
		calls++
		mu.Unlock()
		assert.ErrorIs(t, err, ErrClosed)
		finished <- struct{}{}
	})
	if err != nil {
		// The reader had not taken the call: Start took it, and only the
		// one who takes a call finishes it.
		mu.Lock()
		defer mu.Unlock()
		assert.Zero(t, calls, "Start failed, yet done was called: answered twice")
		return
	}
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the call taken by the reader was not finished")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, calls)
}

// Calls boxsh-init said it queued and had not started when the channel
// ended finish with ErrNotStarted; the others with ErrClosed alone.
func TestClientNotStartedCalls(t *testing.T) {
	front, init := net.Pipe()
	errs := make([]error, 4)
	var wg sync.WaitGroup
	r, w := NewReader(init), NewWriter(init)
	go func() {
		_, err := r.Read() // the front's hello
		assert.NoError(t, err)
		for range errs {
			_, err := r.Read() // the calls, read as they are sent
			assert.NoError(t, err)
		}
	}()
	c := newTestClient(front)
	require.NoError(t, w.Write(EncodeHello(testHello)))
	for i := range errs {
		wg.Add(1)
		require.NoError(t, c.Start(context.Background(), "bash", json.RawMessage(`{}`), func(_ json.RawMessage, err error) {
			errs[i] = err
			wg.Done()
		}))
	}
	// Call 1 runs; 2 was queued and started; 3 and 4 are queued.
	for _, n := range []struct {
		id    uint64
		state string
	}{{2, StateQueued}, {3, StateQueued}, {4, StateQueued}, {2, StateStarted}} {
		require.NoError(t, w.Write(EncodeState(n.id, n.state)))
	}
	init.Close()
	wg.Wait()
	for i, err := range errs {
		assert.ErrorIs(t, err, ErrClosed, "call %d", i+1)
		assert.Equal(t, i >= 2, errors.Is(err, ErrNotStarted), "call %d: %v", i+1, err)
	}
}

func TestEncodeState(t *testing.T) {
	for _, state := range []string{StateQueued, StateStarted} {
		r, err := DecodeReply(EncodeState(7, state))
		require.NoError(t, err)
		assert.Equal(t, Reply{ID: 7, State: state}, r)
	}
	// Other forms go through encoding/json.
	r, err := DecodeReply([]byte(`{"state":"queued","id":8}`))
	require.NoError(t, err)
	assert.Equal(t, Reply{ID: 8, State: StateQueued}, r)
	_, err = DecodeReply([]byte(`{"id":8,"state":"queued"}x`))
	assert.Error(t, err)
}

// Deferred frames go out before the next frame written, or on Flush, in
// their order.
func TestDeferredFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Defer([]byte(`"a"`))
	w.Defer([]byte(`"b"`))
	assert.Zero(t, buf.Len(), "deferred frames wait")
	require.NoError(t, w.Write([]byte(`"c"`)))
	w.Defer([]byte(`"d"`))
	require.NoError(t, w.Flush())
	require.NoError(t, w.Flush())
	r := NewReader(&buf)
	for _, want := range []string{`"a"`, `"b"`, `"c"`, `"d"`} {
		got, err := r.Read()
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	_, err := r.Read()
	assert.ErrorIs(t, err, io.EOF)
}
