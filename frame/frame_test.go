package frame

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
	b, err := json.Marshal(Reply{ID: 7, Error: &Error{Code: -32602, Message: "bad"}})
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

func TestClientBudgetStopsReading(t *testing.T) {
	front, back := net.Pipe()
	defer front.Close()
	defer back.Close()
	c := NewClient(front, 100)

	// The fake boxsh-init answers every call with an 80-byte result.
	go func() {
		r, w := NewReader(back), NewWriter(back)
		for {
			payload, err := r.Read()
			if err != nil {
				return
			}
			var call Call
			_ = json.Unmarshal(payload, &call)
			if call.Cancel {
				continue
			}
			result := []byte(`"` + strings.Repeat("r", 60) + `"`)
			if w.Write(EncodeReply(call.ID, result)) != nil {
				return
			}
		}
	}()

	ctx := context.Background()
	p1, err := c.Start(ctx, "bash", []byte(`{}`))
	require.NoError(t, err)
	p2, err := c.Start(ctx, "bash", []byte(`{}`))
	require.NoError(t, err)
	_, err = p1.Wait()
	require.NoError(t, err)
	select {
	case <-p2.ch:
		t.Fatal("a second result was taken in while the first still holds the budget")
	case <-time.After(100 * time.Millisecond):
	}
	p1.Release()
	res, err := p2.Wait()
	require.NoError(t, err)
	assert.Len(t, res, 62)
	p2.Release()
	p2.Release() // idempotent
	assert.True(t, c.held.TryAcquire(100), "all budget is back")
}
