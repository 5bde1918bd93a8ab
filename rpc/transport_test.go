package rpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, rd *reader) (msgs []string, errs []error) {
	t.Helper()
	for {
		m, err := rd.next()
		if errors.Is(err, io.EOF) {
			return msgs, errs
		}
		if err != nil {
			errs = append(errs, err)
			if errors.Is(err, errTruncated) {
				return msgs, errs
			}
			continue
		}
		msgs = append(msgs, string(m))
	}
}

func TestNewlineTransport(t *testing.T) {
	rd := newReader(strings.NewReader("\n\n{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}"), 1024)
	msgs, errs := readAll(t, rd)
	assert.Empty(t, errs)
	assert.Equal(t, []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}, msgs)
	assert.False(t, rd.framed)
}

func TestFramedTransport(t *testing.T) {
	body := `{"x":"héllo"}`
	in := fmt.Sprintf("\r\nContent-Length: %d\r\nContent-Type: application/json\r\n\r\n%scontent-length:%d\r\n\r\n%s", len(body), body, 2, "{}")
	rd := newReader(strings.NewReader(in), 1024)
	msgs, errs := readAll(t, rd)
	assert.Empty(t, errs)
	assert.Equal(t, []string{body, "{}"}, msgs)
	assert.True(t, rd.framed)
}

func TestFramedTruncatedBody(t *testing.T) {
	rd := newReader(strings.NewReader("Content-Length: 50\r\n\r\n{\"short\":1}"), 1024)
	msgs, errs := readAll(t, rd)
	assert.Empty(t, msgs)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errTruncated)
	assert.Contains(t, errs[0].Error(), "expected 50 body bytes, got 11")
}

func TestFramedBadHeaders(t *testing.T) {
	in := "Content-Length: abc\r\n\r\nContent-Type: x\r\n\r\nContent-Length: 2\r\n\r\n{}"
	rd := newReader(strings.NewReader(in), 1024)
	msgs, errs := readAll(t, rd)
	assert.Equal(t, []string{"{}"}, msgs, "the stream recovers after bad header blocks")
	require.Len(t, errs, 2)
	assert.ErrorIs(t, errs[0], errBadHeader)
	assert.ErrorIs(t, errs[1], errBadHeader)
}

func TestOversizedMessagesAreSkipped(t *testing.T) {
	big := strings.Repeat("a", 5000)
	rd := newReader(strings.NewReader(big+"\n{\"ok\":1}\n"+big), 1000)
	msgs, errs := readAll(t, rd)
	assert.Equal(t, []string{`{"ok":1}`}, msgs)
	require.Len(t, errs, 2)
	for _, err := range errs {
		assert.ErrorIs(t, err, errTooLarge)
	}

	framed := fmt.Sprintf("Content-Length: %d\r\n\r\n%sContent-Length: 2\r\n\r\n{}", len(big), big)
	rd = newReader(strings.NewReader(framed), 1000)
	msgs, errs = readAll(t, rd)
	assert.Equal(t, []string{"{}"}, msgs)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], errTooLarge)
}

func TestWriterFraming(t *testing.T) {
	var buf bytes.Buffer
	framed := false
	w := newWriter(&buf, func() bool { return framed })
	require.NoError(t, w.write([]byte(`{"a":`), []byte(`"é"}`)))
	assert.Equal(t, "{\"a\":\"é\"}\n", buf.String())
	buf.Reset()
	framed = true
	require.NoError(t, w.write([]byte(`{"a":"é"}`)))
	assert.Equal(t, "Content-Length: 10\r\n\r\n{\"a\":\"é\"}", buf.String())
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriterKeepsFirstError(t *testing.T) {
	w := newWriter(failWriter{}, func() bool { return false })
	assert.Error(t, w.write([]byte("{}")))
	assert.EqualError(t, w.write([]byte("{}")), "broken pipe")
}
