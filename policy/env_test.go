package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCommandEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "USER=u",
		"EDITOR=vim", "GOPATH=/go", "GOFLAGS=-mod=mod", "GOPROXY_TOKEN=t0k",
		"GITHUB_TOKEN=ghp_x", "AWS_SECRET_ACCESS_KEY=a", "OPENAI_API_KEY=sk", "DB_PASSWORD=p",
		"NPM_TOKEN=n", "MY_PRIVATE_THING=x", "SSH_AUTH_SOCK=/tmp/agent", "BROKEN", "=x",
		"OVERRIDDEN=host",
	}
	p := Policy{
		EnvPass: []Rule{{"GO*", "f"}, {"NPM_TOKEN", "f"}},
		EnvSet:  map[string]Value[string]{"OVERRIDDEN": {"policy", "f"}, "CI": {"1", "f"}},
	}
	assert.Equal(t, []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "USER=u",
		"GOPATH=/go", "GOFLAGS=-mod=mod",
		"NPM_TOKEN=n",
		"CI=1", "OVERRIDDEN=policy",
	}, CommandEnv(p, environ), "a prefix rule never passes a secret; an exact one does")

	assert.Equal(t, []string{"PATH=/usr/bin", "HOME=/home/u"}, CommandEnv(Policy{}, []string{"PATH=/usr/bin", "HOME=/home/u", "EDITOR=vim", "API_KEY=x"}))
}

func TestIsSecretName(t *testing.T) {
	for _, n := range []string{"GITHUB_TOKEN", "aws_access_key_id", "MY_SECRET", "PGPASSWORD", "ANTHROPIC_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH", "NPM_CONFIG__AUTH", "X_SESSION_ID", "SSH_AUTH_SOCK"} {
		assert.True(t, IsSecretName(n), n)
	}
	for _, n := range []string{"PATH", "HOME", "EDITOR", "GOPATH", "LANG", "AUTHOR"} {
		assert.False(t, IsSecretName(n), n)
	}
}
