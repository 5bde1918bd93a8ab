package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/internal/front/audit"
	"github.com/boxsh/boxsh/internal/front/proxy"
	"github.com/boxsh/boxsh/internal/tool"
	"github.com/boxsh/boxsh/policy"
)

func TestAuditFlags(t *testing.T) {
	o, err := parseArgs([]string{"--audit", "a.jsonl", "--rpc"}, "/")
	require.NoError(t, err)
	assert.Equal(t, "a.jsonl", o.audit)
	_, err = parseArgs([]string{"--audit", "a.jsonl", "--no-audit", "--rpc"}, "/")
	assert.ErrorContains(t, err, "--audit and --no-audit exclude each other")
	_, err = parseArgs([]string{"--audit=", "--rpc"}, "/")
	assert.ErrorContains(t, err, "--audit needs a file")
}

func TestAuditPath(t *testing.T) {
	sessionDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(sessionDir, session.MetaFile), []byte("{}"), 0o600))
	cow := policy.Bind{Mode: policy.CopyOnWrite, Src: "/src", Dst: filepath.Join(sessionDir, "dst")}
	plainCow := policy.Bind{Mode: policy.CopyOnWrite, Src: "/src", Dst: filepath.Join(t.TempDir(), "dst")}
	sb := policy.Sandbox{Enabled: true, Binds: []policy.Bind{plainCow, cow}}
	assert.Equal(t, filepath.Join(sessionDir, session.AuditFile), auditPath(options{}, sb), "a session's cow bind")
	assert.Equal(t, "mine", auditPath(options{audit: "mine"}, sb))
	assert.Empty(t, auditPath(options{noAudit: true}, sb))
	assert.Empty(t, auditPath(options{}, policy.Sandbox{Enabled: true, Binds: []policy.Bind{plainCow}}), "a cow bind of no session")
	try := options{sandbox: policy.Sandbox{Try: true}}
	assert.Equal(t, filepath.Join(filepath.Dir(plainCow.Dst), session.AuditFile),
		auditPath(try, policy.Sandbox{Enabled: true, Binds: []policy.Bind{plainCow}}), "--try's, before its session is recorded")
}

// TestFormatEntryQuotes checks that what the sandbox or the client chose is
// quoted as boxsh changes quotes file names. No control character reaches
// the terminal.
func TestFormatEntryQuotes(t *testing.T) {
	code := 0
	line := formatEntry(audit.Entry{Time: "T", Kind: tool.AuditCall, Client: "stdio", Tool: "bash",
		Args: map[string]any{"command": "echo \x1b[2Jhi\nforged line", "timeout": 5.0}, ExitCode: &code, DurationMS: 3, OutputBytes: 2048})
	assert.Equal(t, `T stdio bash command="echo \033[2Jhi\nforged line" timeout=5 exit 0 3ms 2 KiB`, line)
	allowed := false
	line = formatEntry(audit.Entry{Time: "T", Kind: tool.AuditNetwork, Host: "évil\r", Port: 443, Protocol: "connect", Allowed: &allowed})
	assert.Equal(t, `T - network connect "\303\251vil\r":443 refused`, line)
}

// TestShellAudit checks how Linux and macOS record a sandboxed run of
// shell mode:
//   - the proxy's decisions as they come, then the run with its argv and
//     exit status;
//   - without a log, nothing;
//   - a log the sandbox could write is refused.
func TestShellAudit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sb := policy.Sandbox{Enabled: true}
	a, err := openShellAudit(options{audit: path}, sb, hclog.NewNullLogger())
	require.NoError(t, err)
	a.started()
	decided := a.proxy().Decided
	require.NotNil(t, decided)
	decided(proxy.Decision{Host: "evil.example", Port: 443, Protocol: "connect"})
	a.ended([]string{"/bin/sh", "-c", "exit 3"}, 3)
	a.close()
	f, err := audit.ReadFile(path)
	require.NoError(t, err)
	defer f.Close()
	var entries []audit.Entry
	require.NoError(t, audit.Read(f, func(e audit.Entry) error { entries = append(entries, e); return nil }, func(le *audit.LineError) { t.Error(le) }))
	require.Len(t, entries, 2)
	assert.Equal(t, tool.AuditNetwork, entries[0].Kind)
	assert.Equal(t, "evil.example", entries[0].Host)
	assert.False(t, *entries[0].Allowed)
	shell := entries[1]
	assert.Equal(t, tool.AuditShell, shell.Kind)
	assert.Equal(t, "shell", shell.Client)
	assert.Equal(t, []any{"/bin/sh", "-c", "exit 3"}, shell.Args["args"])
	require.NotNil(t, shell.ExitCode)
	assert.Equal(t, 3, *shell.ExitCode)

	none, err := openShellAudit(options{}, sb, hclog.NewNullLogger())
	require.NoError(t, err)
	assert.Nil(t, none.proxy().Decided)
	none.ended([]string{"true"}, 0)
	none.close()

	_, err = openShellAudit(options{audit: path}, policy.Sandbox{Enabled: true, Binds: []policy.Bind{{Mode: policy.ReadWrite, Src: dir, Dst: dir}}}, hclog.NewNullLogger())
	assert.ErrorContains(t, err, "which the sandbox can write")
}
