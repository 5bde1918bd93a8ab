// Package jsontest checks the JSON a test reads from a server more
// strictly than encoding/json does.
package jsontest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// UniqueKeys returns an error if b is not one JSON value, or if an object
// in it, at any depth, has a member name twice. encoding/json keeps the
// last of two such members; RFC 8259 leaves the meaning open and I-JSON
// (RFC 7493) forbids them, so a strict parser rejects the message. Names
// are compared after unescaping: "a" and "\u0061" are the same.
func UniqueKeys(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := value(d, "$"); err != nil {
		return err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("more after the JSON value")
	}
	return nil
}

// Unmarshal is json.Unmarshal of b into v after UniqueKeys has passed it.
func Unmarshal(b []byte, v any) error {
	if err := UniqueKeys(b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// value reads one value from d; path names it in errors.
func value(d *json.Decoder, path string) error {
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch tok {
	case json.Delim('{'):
		seen := make(map[string]bool)
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			name, ok := tok.(string)
			if !ok {
				return fmt.Errorf("%s: member name is %v, not a string", path, tok)
			}
			if seen[name] {
				return fmt.Errorf("%s: member %q twice", path, name)
			}
			seen[name] = true
			if err := value(d, path+"."+name); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if err := value(d, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := d.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Reader passes a stream of messages through, each checked once.
//
// A line that holds a JSON object or array, alone or as an event stream's data
// line, must pass UniqueKeys. The first that does not ends the stream with its
// error, and none of it is passed on. A line is passed on only once it is
// whole. So Reader suits newline-delimited messages and event streams, not
// Content-Length framing.
type Reader struct {
	r       *bufio.Reader
	pending []byte
	err     error
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10)}
}

func (c *Reader) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		line, err := c.r.ReadBytes('\n')
		if cerr := CheckLine(line); cerr != nil {
			c.err = cerr
			return 0, cerr
		}
		c.pending, c.err = line, err
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// CheckLine checks one line of a stream as Reader does: a JSON object or
// array, alone or after an event stream's "data:", must pass UniqueKeys.
// Other lines (blank, headers, event names) pass.
func CheckLine(line []byte) error {
	msg := bytes.TrimSpace(line)
	if data, ok := bytes.CutPrefix(msg, []byte("data:")); ok {
		msg = bytes.TrimSpace(data)
	}
	if len(msg) == 0 || (msg[0] != '{' && msg[0] != '[') {
		return nil
	}
	if err := UniqueKeys(msg); err != nil {
		return fmt.Errorf("message %.200s: %w", msg, err)
	}
	return nil
}

// Transport is an http.RoundTripper whose responses' bodies are read
// through a Reader, so a client of it reads only checked messages.
type Transport struct {
	// Base makes the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// NewClient returns an http.Client on a Transport.
func NewClient() *http.Client { return &http.Client{Transport: Transport{}} }

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = checkedBody{NewReader(res.Body), res.Body}
	return res, nil
}

type checkedBody struct {
	io.Reader
	io.Closer
}
