// Package largecall holds the fast paths for tool calls with large JSON, such
// as a write of a file of tens of megabytes.
//
// It serves both sides of the channel:
//
//   - the front's reading of the request and its arguments (package rpc);
//   - the frame of such a call, written through
//     initproto.ClientConfig.WriteCall and read by boxsh-init with DecodeCall;
//   - boxsh-init's decoding of the arguments (package internal/toolhost).
//
// It is the only package that uses internal/jsonx; every other package reads
// JSON with encoding/json.
//
// Each function gives what encoding/json gives. What it would not handle
// exactly as encoding/json does (small documents, odd shapes, invalid JSON),
// it leaves to encoding/json, so the fast paths change speed only. It is not
// part of boxsh's API.
package largecall

import (
	"encoding/json"

	"github.com/boxsh/boxsh/internal/jsonx"
)

// Large is the size of JSON from which the fast paths are taken. Below it,
// encoding/json is fast enough, and its exact behaviour needs no argument.
const Large = jsonx.Large

// Member is one member of a JSON object: its key, decoded, and its value,
// raw (Member.String decodes a string value).
type Member = jsonx.Member

// Members returns the members of valid, in order, duplicates included.
// valid is a JSON object known to be valid JSON, such as the arguments of
// a call the front has validated. Members does not check it again, so it
// finds the ends of strings faster than encoding/json. ok is false if
// valid is not an object.
func Members(valid json.RawMessage) (members []Member, ok bool) {
	return jsonx.MembersOfValid(valid)
}
