package rpc

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/boxsh/boxsh/client/apitype"
)

// serveFiles adds the paths of a sandbox's changes: their list, their
// diff and their apply.
func (rt *SandboxRouter) serveFiles(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/sandboxes/{name}/changes", func(w http.ResponseWriter, r *http.Request) {
		changes, err := rt.host.Changes(r.PathValue("name"))
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"changes": changes})
	})
	mux.HandleFunc("GET /v1/sandboxes/{name}/diff", func(w http.ResponseWriter, r *http.Request) {
		diff, err := rt.host.Diff(r.PathValue("name"), r.URL.Query().Get("path"))
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/x-diff; charset=utf-8")
		_, _ = w.Write([]byte(diff))
	})
	mux.HandleFunc("POST /v1/sandboxes/{name}/apply", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.ApplyRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil && !errors.Is(err, io.EOF) {
			writeProblem(w, http.StatusBadRequest, "apply: the body must be {\"dry_run\": BOOL, \"paths\": [PATH...]}: "+err.Error())
			return
		}
		began := time.Now()
		res, err := rt.host.Apply(r.PathValue("name"), req)
		args := map[string]any{"dry_run": req.DryRun}
		if req.Paths != nil {
			args["paths"] = req.Paths
		}
		rt.managed(SandboxCall{Action: "apply", Name: r.PathValue("name"), Client: restClient(r), Args: args, Began: began, Err: err})
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

// serveSnapshots adds the paths of snapshots, forks and restores.
func (rt *SandboxRouter) serveSnapshots(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/snapshots", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.SnapshotRequest
		if !decodeBody(w, r, &req, `{"name": SNAPSHOT, "sandbox": SANDBOX}`) || !sandboxHeaderAgrees(w, r, req.Sandbox) {
			return
		}
		began := time.Now()
		info, err := rt.host.Snapshot(req.Sandbox, req.Name)
		rt.managed(SandboxCall{Action: "snapshot", Name: req.Sandbox, Client: restClient(r), Args: map[string]any{"snapshot": req.Name}, Began: began, Err: err})
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, info)
	})
	mux.HandleFunc("GET /v1/snapshots", func(w http.ResponseWriter, _ *http.Request) {
		list, err := rt.host.Snapshots()
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, apitype.SnapshotList{Snapshots: list})
	})
	mux.HandleFunc("DELETE /v1/snapshots/{name}", func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		err := rt.host.DeleteSnapshot(r.PathValue("name"))
		rt.managed(SandboxCall{Action: "delete_snapshot", Name: r.PathValue("name"), Client: restClient(r), Began: began, Err: err})
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/sandboxes/{name}/fork", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.SandboxRequest
		if !decodeBody(w, r, &req, `{"name": NEW}`) {
			return
		}
		began := time.Now()
		info, err := rt.fork(r.Context(), r.PathValue("name"), req.Name)
		rt.managed(SandboxCall{Action: "fork", Name: req.Name, Client: restClient(r), Args: map[string]any{"from": r.PathValue("name")}, Began: began, Err: err})
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, info)
	})
	mux.HandleFunc("POST /v1/sandboxes/{name}/restore", func(w http.ResponseWriter, r *http.Request) {
		var req apitype.RestoreRequest
		if !decodeBody(w, r, &req, `{"snapshot": SNAPSHOT}`) {
			return
		}
		began := time.Now()
		info, err := rt.host.Restore(r.PathValue("name"), req.Snapshot)
		rt.managed(SandboxCall{Action: "restore", Name: r.PathValue("name"), Client: restClient(r), Args: map[string]any{"snapshot": req.Snapshot}, Began: began, Err: err})
		if err != nil {
			writeSandboxError(w, err)
			return
		}
		info.Endpoint = "/s/" + info.Name + "/mcp"
		info.Server = rt.opts.ServerID
		writeJSON(w, http.StatusOK, info)
	})
}

// decodeOptionalBody is decodeBody for a body that may be empty (v is
// left as it is then).
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeProblem(w, http.StatusBadRequest, "the body must be "+shape+": "+err.Error())
		return false
	}
	return true
}

// decodeBody decodes r's JSON body into v, or answers 400 naming the
// expected shape.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, shape string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeProblem(w, http.StatusBadRequest, "the body must be "+shape+": "+err.Error())
		return false
	}
	return true
}
