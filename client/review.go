package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/boxsh/boxsh/client/apitype"
	"github.com/boxsh/boxsh/client/session"
)

// Changes lists sandbox name's changes to the workspace, as boxsh changes
// lists a session's.
//
// A sandbox made from the workspace is a copy-on-write session of it.
func (s *Server) Changes(ctx context.Context, name string) ([]session.Change, error) {
	var out struct {
		Changes []session.Change `json:"changes"`
	}
	if err := s.do(ctx, http.MethodGet, "/v1/sandboxes/"+url.PathEscape(name)+"/changes", s.token, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}

// Diff returns the unified diff of sandbox name's changes at path, or of all
// of them when path is "".
//
// path is relative to the workspace.
func (s *Server) Diff(ctx context.Context, name, path string) (string, error) {
	p := "/v1/sandboxes/" + url.PathEscape(name) + "/diff"
	if path != "" {
		p += "?path=" + url.QueryEscape(path)
	}
	var diff rawText
	if err := s.do(ctx, http.MethodGet, p, s.token, nil, http.StatusOK, &diff); err != nil {
		return "", err
	}
	return string(diff), nil
}

// Apply writes sandbox name's changes into the workspace, as boxsh apply does.
//
// Each file is written atomically. Conflicts (paths the host changed since the
// sandbox started) and protected paths are refused.
//
//   - opts.DryRun only tells what Apply would do.
//   - opts.Paths limits what it applies.
//   - opts.Protect is the server's to set, from its policy's
//     filesystem.protect, and must be empty.
func (s *Server) Apply(ctx context.Context, name string, opts session.ApplyOptions) (*session.ApplyResult, error) {
	if len(opts.Protect) > 0 {
		return nil, &HTTPError{StatusCode: http.StatusBadRequest, Detail: "apply: Protect is the server's policy (filesystem.protect), not the client's"}
	}
	body, _ := json.Marshal(apitype.ApplyRequest{DryRun: opts.DryRun, Paths: opts.Paths})
	var res session.ApplyResult
	if err := s.do(ctx, http.MethodPost, "/v1/sandboxes/"+url.PathEscape(name)+"/apply", s.token, body, http.StatusOK, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// rawText is an answer taken as it is, not decoded as JSON.
type rawText []byte
