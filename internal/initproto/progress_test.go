package initproto

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressFrame(t *testing.T) {
	enc := EncodeProgress(12, 3456)
	assert.JSONEq(t, `{"id":12,"progress":3456}`, string(enc))
	id, n, ok := DecodeProgress(enc)
	require.True(t, ok)
	assert.Equal(t, uint64(12), id)
	assert.Equal(t, uint64(3456), n)

	// Replies and notices are not progress, even with "progress" inside.
	for _, other := range [][]byte{
		EncodeReply(12, []byte(`{"progress":1}`)),
		EncodeState(12, StateStarted),
		[]byte(`{"id":12,"progress":-1}`),
		[]byte(`{"id":12,"progress":1`),
		[]byte(`{"id":,"progress":1}`),
		[]byte(`{"progress":1,"id":12}`),
	} {
		_, _, ok := DecodeProgress(other)
		assert.False(t, ok, "%s", other)
	}
}

// A call started with WithProgress says so in its frame and gets its
// progress frames; a call without it asks for nothing.
func TestClientProgress(t *testing.T) {
	front, back := net.Pipe()
	defer front.Close()
	defer back.Close()
	r, w := NewReader(back), NewWriter(back)
	// The front's hello, then the init's (see fakeInit); NewClient's write
	// of its hello waits for this read on a pipe.
	helloed := make(chan error, 1)
	go func() {
		_, err := r.Read()
		if err == nil {
			err = w.Write(EncodeHello(testHello))
		}
		helloed <- err
	}()
	c := newTestClient(front)
	require.NoError(t, <-helloed)

	got := make(chan uint64, 4)
	ctx := WithProgress(context.Background(), 250*time.Millisecond, func(n uint64) { got <- n })
	done := make(chan outcome, 1)
	go func() {
		assert.NoError(t, c.Start(ctx, "bash", []byte(`{}`), func(res json.RawMessage, err error) { done <- outcome{res, err} }))
	}()
	var call Call
	payload, err := r.Read()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(payload, &call))
	assert.Equal(t, int64(250), call.Progress)

	require.NoError(t, w.Write(EncodeProgress(call.ID, 10)))
	require.NoError(t, w.Write(EncodeProgress(call.ID+1, 99))) // no such call: dropped
	require.NoError(t, w.Write(EncodeProgress(call.ID, 25)))
	require.NoError(t, w.Write(EncodeReply(call.ID, []byte(`{}`))))
	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, `{}`, string(o.result))
	assert.Equal(t, uint64(10), <-got)
	assert.Equal(t, uint64(25), <-got)
	// After the reply, a late progress frame goes nowhere.
	require.NoError(t, w.Write(EncodeProgress(call.ID, 30)))

	go func() {
		assert.NoError(t, c.Start(context.Background(), "bash", []byte(`{}`), func(json.RawMessage, error) {}))
	}()
	payload, err = r.Read()
	require.NoError(t, err)
	assert.NotContains(t, string(payload), "progress")
	select {
	case n := <-got:
		t.Fatalf("progress %d after the reply", n)
	default:
	}
}

func BenchmarkDecodeReplyCheckingProgress(b *testing.B) {
	enc := EncodeReply(123456, []byte(`{"content":[{"type":"text","text":"x\n"}],"structuredContent":{"stdout":"x\n","stderr":"","exit_code":0}}`))
	for range b.N {
		if _, _, ok := DecodeProgress(enc); ok {
			b.Fatal("a reply taken for progress")
		}
	}
}
