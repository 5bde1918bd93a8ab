package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/audit"
	"github.com/boxsh/boxsh/client/session"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/tool"
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

// What the sandbox or the client chose is quoted as boxsh changes quotes
// file names: no control character reaches the terminal.
func TestFormatEntryQuotes(t *testing.T) {
	code := 0
	line := formatEntry(audit.Entry{Time: "T", Kind: tool.AuditCall, Client: "stdio", Tool: "bash",
		Args: map[string]any{"command": "echo \x1b[2Jhi\nforged line", "timeout": 5.0}, ExitCode: &code, DurationMS: 3, OutputBytes: 2048})
	assert.Equal(t, `T stdio bash command="echo \033[2Jhi\nforged line" timeout=5 exit 0 3ms 2.0K`, line)
	allowed := false
	line = formatEntry(audit.Entry{Time: "T", Kind: tool.AuditNetwork, Host: "évil\r", Port: 443, Protocol: "connect", Allowed: &allowed})
	assert.Equal(t, `T - network connect "\303\251vil\r":443 refused`, line)
}
