package initproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The replies a front must not pass on: found by fuzzing the reply reader,
// which used to splice the raw result into the client's response.
var malformedReplies = []struct {
	name, payload string
	id            uint64
}{
	{"no result", `{"id":1}`, 1},
	{"empty result", `{"id":1,"result":}`, 1},
	{"second JSON text", `{"id":1,"result":{"content":[]}}` + "\n" + `{"jsonrpc":"2.0","id":9,"result":{"forged":true}}`, 1},
	{"second text inside the splice", `{"id":1,"result":{"a":1}},"x":{"b":2}}`, 1},
	{"result not an object", `{"id":2,"result":"text"}`, 2},
	{"null result", `{"id":2,"result":null}`, 2},
	{"raw newline in a string", "{\"id\":3,\"result\":{\"text\":\"a\nb\"}}", 3},
	{"line break between tokens", "{\"id\":3,\"result\":{\"x\":\n{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n}}", 3},
	{"line break between tokens, generic form", "{\"result\":{\"x\":\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\r\n},\"id\":3}", 3},
	{"bad escape", `{"id":3,"result":{"text":"a\qb"}}`, 3},
	{"unbalanced", `{"id":4,"result":{"a":[1,2}}`, 4},
	{"missing value", `{"id":4,"result":{"a":}}`, 4},
	{"result and error", `{"id":5,"result":{},"error":{"code":-32603,"message":"x"}}`, 5},
	{"no id", `{"result":{}}`, 0},
	{"not JSON", `hello`, 0},
}

func TestDecodeReplyRefusesMalformed(t *testing.T) {
	for _, tc := range malformedReplies {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeReply([]byte(tc.payload))
			require.ErrorIs(t, err, ErrMalformed)
			assert.Equal(t, tc.id, r.ID)
			assert.Nil(t, r.Result)
		})
	}
}

func TestDecodeReplyAcceptsWellFormed(t *testing.T) {
	for _, payload := range []string{
		`{"id":1,"result":{}}`,
		`{"id":1,"result": { "a" : [ 1 , -2.5e+3 , true , false , null , "\u00e9\"\\\/\b\f\n\r\t" , { } , [ ] ] } }`,
		`{"id":18446744073709551615,"result":{"content":[{"type":"text","text":"}"}]}}`,
		`{"result":{},"id":1}`,
		`{"id":1,"result":{}} `,
		`{"id":1,"error":{"code":-32602,"message":"bad"}}`,
	} {
		r, err := DecodeReply([]byte(payload))
		require.NoError(t, err, payload)
		assert.NotZero(t, r.ID, payload)
	}
}

func TestValidObjectAgreesWithJSONValid(t *testing.T) {
	for _, s := range []string{
		`{}`, ` {} `, `{"a":1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":1E+2}`,
		`{"a":tru}`, `{"a":true}`, `{"a":nul}`, `{"a":[}`, `{"a":[]]}`, `{"a":1,}`, `{,}`, `{"a" 1}`,
		`{"a":"\u12"}`, `{"a":"\u12ag"}`, `{"a":"` + "\x7f\xff" + `"}`, `{"a":"x` + "\x1f" + `"}`, `{1:2}`,
		`{"a":{"b":{"c":[[[]]]}}}`, `{"a":1}{}`, `{"a":1} x`, `[]`, `"s"`, ``, `{`, `}`,
		"{\"a\":\t1 }", "{\"a\":\n1}", "{}\n", "\r\n{}",
	} {
		want := json.Valid([]byte(s)) && strings.HasPrefix(strings.TrimSpace(s), "{") && !strings.ContainsAny(s, "\r\n")
		assert.Equal(t, want, validObject([]byte(s)), "%q", s)
	}
	// Deep nesting is no stack overflow.
	deep := `{"a":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`
	assert.True(t, validObject([]byte(deep)))
	assert.False(t, validObject([]byte(deep[:len(deep)-2]+"}")))
}

// FuzzDecodeReply checks the reply reader: a payload is refused, or what
// the front would splice into its response (the result) is one JSON object
// without a line break, and the id is the one a JSON parser reads.
func FuzzDecodeReply(f *testing.F) {
	for _, tc := range malformedReplies {
		f.Add([]byte(tc.payload))
	}
	f.Add(EncodeReply(7, []byte(`{"content":[{"type":"text","text":"ok"}]}`)))
	f.Add(EncodeState(8, StateQueued))
	f.Add([]byte(`{"id":9,"error":{"code":-32603,"message":"x"}}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := DecodeReply(payload)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		var ref struct {
			ID uint64 `json:"id"`
		}
		if !json.Valid(payload) || json.Unmarshal(payload, &ref) != nil {
			t.Fatalf("accepted a payload that is not JSON: %q", payload)
		}
		if ref.ID != r.ID {
			t.Fatalf("id %d, but the payload's is %d: %q", r.ID, ref.ID, payload)
		}
		if r.State != "" || r.Error != nil {
			if r.Result != nil {
				t.Fatalf("state or error with a result: %q", payload)
			}
			return
		}
		if bytes.ContainsAny(r.Result, "\r\n") {
			t.Fatalf("a result with a line break: %q", payload)
		}
		out := EncodeReply(r.ID, r.Result)
		var back map[string]json.RawMessage
		if !json.Valid(out) || json.Unmarshal(out, &back) != nil || !strings.HasPrefix(strings.TrimSpace(string(back["result"])), "{") {
			t.Fatalf("the spliced reply is not one JSON object with an object result: %q", out)
		}
	})
}

// A malformed reply fails its call with an internal error, and the
// channel goes on serving the others.
func TestClientMalformedReplyFailsTheCall(t *testing.T) {
	front, init := net.Pipe()
	defer init.Close()
	r, w := NewReader(init), NewWriter(init)
	go func() {
		_, _ = r.Read() // hello
		_ = w.Write(EncodeHello(testHello))
		for range 2 {
			_, _ = r.Read()
		}
		_ = w.Write([]byte(`{"id":1,"result":{"a":1}}` + "\n" + `{"jsonrpc":"2.0","id":9,"result":{}}`))
		_ = w.Write(EncodeReply(2, []byte(`{"ok":true}`)))
	}()
	c := newTestClient(front)
	outs := make(chan outcome, 2)
	for range 2 {
		require.NoError(t, c.Start(context.Background(), "bash", json.RawMessage(`{}`), func(r json.RawMessage, err error) { outs <- outcome{r, err} }))
	}
	o := <-outs
	var fe *Error
	require.ErrorAs(t, o.err, &fe)
	assert.Equal(t, CodeInternalError, fe.Code)
	o = <-outs
	require.NoError(t, o.err)
	assert.JSONEq(t, `{"ok":true}`, string(o.result))
}
