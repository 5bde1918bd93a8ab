package initproto

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

// The front's hello carries the Setup; to a boxsh-init it is a hello like
// any other (one of an older build, which knows no Setup, reads its build
// and refuses it), and a hello without one has the zero Setup.
func TestFrontHelloSetup(t *testing.T) {
	local := NewHello("v1.2.0")
	payload := EncodeFrontHello(local, Setup{ForwardFD: 5})
	assert.JSONEq(t, `{"hello":{"protocol":1,"build":"v1.2.0"},"setup":{"forward_fd":5}}`, string(payload))
	peer, err := CheckHello(payload, local, "the boxsh that started this boxsh-init", "this boxsh-init")
	require.NoError(t, err)
	assert.Equal(t, local, peer)
	setup, err := DecodeSetup(payload)
	require.NoError(t, err)
	assert.Equal(t, Setup{ForwardFD: 5}, setup)

	setup, err = DecodeSetup(EncodeHello(local))
	require.NoError(t, err)
	assert.Equal(t, Setup{}, setup)
	_, err = DecodeSetup([]byte(`{"id":1,"tool":"bash"}`))
	assert.Error(t, err, "not a hello")

	var older struct {
		Hello *Hello `json:"hello"`
	}
	require.NoError(t, json.Unmarshal(EncodeFrontHello(NewHello("v1.3.0"), Setup{ForwardFD: 5}), &older))
	assert.Equal(t, NewHello("v1.3.0"), *older.Hello, "what an older build decodes")
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
