package frame

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckHello(t *testing.T) {
	local := NewHello("v1.2.0")
	peer, err := CheckHello(EncodeHello(NewHello("v1.2.0")), local, "boxsh-init at /x", "this boxsh")
	require.NoError(t, err)
	assert.Equal(t, local, peer)

	for _, tc := range []struct {
		name, payload, want string
	}{
		{"other build", string(EncodeHello(NewHello("v1.1.0-dirty"))),
			"boxsh-init at /x is build v1.1.0-dirty (protocol 1); this boxsh is build v1.2.0 (protocol 1): install them together"},
		{"other protocol", `{"hello":{"protocol":2,"build":"v1.2.0"}}`,
			"boxsh-init at /x is build v1.2.0 (protocol 2); this boxsh is build v1.2.0 (protocol 1): install them together"},
		{"no hello", `{"id":0,"error":{"code":-32602,"message":"unknown tool: "}}`,
			"boxsh-init at /x is of another build (it sent no hello, as builds before protocol 1); this boxsh is build v1.2.0 (protocol 1): install them together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckHello([]byte(tc.payload), local, "boxsh-init at /x", "this boxsh")
			var me *MismatchError
			require.ErrorAs(t, err, &me)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// A boxsh-init of another build ends the channel with the mismatch, which
// the calls sent meanwhile get too; the front's hello goes first.
func TestClientRefusesOtherBuild(t *testing.T) {
	front, init := net.Pipe()
	defer init.Close()
	r, w := NewReader(init), NewWriter(init)
	first := make(chan []byte, 1)
	go func() {
		p, _ := r.Read()
		first <- p
		_ = w.Write(EncodeHello(NewHello("old")))
		_, _ = r.Read() // the call
	}()
	c := NewClient(front, ClientConfig{Hello: NewHello("new"), InitName: "boxsh-init at /old"})
	got, err := DecodeHello(<-first)
	require.NoError(t, err)
	assert.Equal(t, NewHello("new"), got)
	done := make(chan error, 1)
	err = c.Start(context.Background(), "bash", json.RawMessage(`{}`), func(_ json.RawMessage, err error) { done <- err })
	if err == nil {
		err = <-done
	}
	<-c.Done()
	var me *MismatchError
	require.ErrorAs(t, c.Err(), &me)
	assert.Equal(t, "old", me.Peer.Build)
	assert.ErrorAs(t, err, &me)
	assert.Contains(t, err.Error(), "boxsh-init at /old is build old (protocol 1); this boxsh is build new (protocol 1)")
}
