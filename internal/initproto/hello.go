package initproto

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ProtocolVersion is the version of the contract between the front and
// boxsh-init that this package describes.
//
// The contract covers the frames, the calls and replies, the rules file and
// boxsh-init's options. Change the version with any change that either side of
// an older build would misread.
const ProtocolVersion = 1

// Hello is the first frame each side sends: the front before its first
// call, boxsh-init as soon as it serves. Each side checks the other's
// (CheckHello): the two programs are built together and refuse to work
// with a program from another build, such as a stale boxsh-init found on
// PATH or at $BOXSH_INIT.
type Hello struct {
	// Protocol is the sender's ProtocolVersion.
	Protocol int `json:"protocol"`
	// Build is the sender's version string (main.version, which the
	// build sets with -ldflags "-X main.version=...").
	Build string `json:"build"`
}

// NewHello is this program's hello, for build.
func NewHello(build string) Hello { return Hello{Protocol: ProtocolVersion, Build: build} }

// Setup is what the front's hello tells boxsh-init besides the hello.
//
// It holds the options of a boxsh-init serving calls that came after protocol
// 1. boxsh-init's command line keeps the options it had then (see
// InitOptions.Args). A boxsh-init of any older build parses them, so it gets
// as far as its hello and is refused naming both builds. An option added to
// the command line would make it exit with its usage instead. So each new
// option goes here: a boxsh-init of another build ignores what it does not
// know, and its hello is refused anyway.
type Setup struct {
	// ForwardFD is the descriptor of the forwarding socket, or 0 for none.
	// The front opens a stream on it per connection to a port it exposes
	// (see ForwardHeader).
	ForwardFD int `json:"forward_fd,omitempty"`
	// EgressPorts are the ports boxsh-init captures on the addresses its
	// name service gives (see InitOptions.EgressPorts).
	EgressPorts []uint16 `json:"egress_ports,omitempty"`
}

// helloFrame is the encoded form of a Hello, and of the Setup the front's
// carries.
type helloFrame struct {
	Hello *Hello `json:"hello"`
	Setup *Setup `json:"setup,omitempty"`
}

// EncodeHello encodes a hello frame.
func EncodeHello(h Hello) []byte {
	b, _ := json.Marshal(helloFrame{Hello: &h}) // cannot fail: plain fields
	return b
}

// EncodeFrontHello encodes the front's hello frame, which carries s.
func EncodeFrontHello(h Hello, s Setup) []byte {
	b, _ := json.Marshal(helloFrame{Hello: &h, Setup: &s}) // cannot fail: plain fields
	return b
}

// DecodeSetup decodes the Setup of the front's hello frame: the zero Setup
// when it carries none.
func DecodeSetup(payload []byte) (Setup, error) {
	var f helloFrame
	if err := json.Unmarshal(payload, &f); err != nil || f.Hello == nil {
		return Setup{}, errNoHello
	}
	if f.Setup == nil {
		return Setup{}, nil
	}
	return *f.Setup, nil
}

// errNoHello reports a first frame that is not a hello.
var errNoHello = errors.New("the first frame is not a hello")

// DecodeHello decodes a hello frame. Any other frame is an error.
func DecodeHello(payload []byte) (Hello, error) {
	var f helloFrame
	if err := json.Unmarshal(payload, &f); err != nil || f.Hello == nil || f.Hello.Protocol <= 0 {
		return Hello{}, errNoHello
	}
	return *f.Hello, nil
}

// MismatchError reports a peer from another build, or one that sent no
// hello (Peer is then the zero Hello).
type MismatchError struct {
	// Peer is the other side's hello, and PeerName names it ("boxsh-init
	// at /usr/bin/boxsh-init").
	Peer     Hello
	PeerName string
	// Local is this side's hello, and LocalName names it ("this boxsh").
	Local     Hello
	LocalName string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s is %s; %s is %s: install them together", e.PeerName, describe(e.Peer), e.LocalName, describe(e.Local))
}

// describe names the build and protocol of a hello.
func describe(h Hello) string {
	if h.Protocol == 0 {
		return "of another build (it sent no hello, as builds before protocol 1)"
	}
	return fmt.Sprintf("build %s (protocol %d)", h.Build, h.Protocol)
}

// CheckHello checks the first frame the peer sent against this side's hello.
//
// It must be a hello of the same protocol and the same build. The error is a
// *MismatchError naming both builds.
func CheckHello(payload []byte, local Hello, peerName, localName string) (Hello, error) {
	peer, err := DecodeHello(payload)
	if err != nil || peer != local {
		return peer, &MismatchError{Peer: peer, PeerName: peerName, Local: local, LocalName: localName}
	}
	return peer, nil
}
