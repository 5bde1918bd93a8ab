package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	for _, n := range []string{"GITHUB_TOKEN", "aws_access_key_id", "MY_SECRET", "PGPASSWORD", "ANTHROPIC_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH", "NPM_CONFIG__AUTH", "X_SESSION_ID", "SSH_AUTH_SOCK", "GITHUB_PAT", "CI_JOB_JWT", "GH_TOKEN"} {
		assert.True(t, isSecretName(n), n)
	}
	for _, n := range []string{"PATH", "HOME", "EDITOR", "GOPATH", "LANG", "AUTHOR", "GITHUB_SHA", "GITHUB_REF", "GITHUB_WORKSPACE", "GITLAB_CI"} {
		assert.False(t, isSecretName(n), n)
	}
}

// --env passes and sets as environment.pass and environment.set do,
// secret scrubbing included.
func TestParseEnvFlagCommandEnv(t *testing.T) {
	m := NewMerger()
	for _, v := range []string{"CI=true", "GOFLAGS", "NPM_CONFIG_*", "GITHUB_TOKEN"} {
		s, err := ParseEnvFlag(v)
		require.NoError(t, err, v)
		m.Add(s, "--env")
	}
	env := CommandEnv(m.Policy(), []string{"GOFLAGS=-mod=mod", "NPM_CONFIG_REGISTRY=http://r", "NPM_CONFIG__AUTH=x", "GITHUB_TOKEN=t", "OTHER=o", "CI=false"})
	assert.ElementsMatch(t, []string{"GOFLAGS=-mod=mod", "NPM_CONFIG_REGISTRY=http://r", "GITHUB_TOKEN=t", "CI=true"}, env,
		"a prefix does not pass a secret; a secret named exactly is passed; a set value wins")
}

// A prefix rule's secret-looking matches are listed by rule, but for those
// another rule names exactly or the policy sets.
func TestWithheldEnv(t *testing.T) {
	m := NewMerger()
	for _, v := range []string{"GITHUB_*", "GITHUB_PAT", "NPM_*", "CI"} {
		s, err := ParseEnvFlag(v)
		require.NoError(t, err, v)
		m.Add(s, "--env")
	}
	s, err := ParseEnvFlag("NPM_TOKEN=stand-in")
	require.NoError(t, err)
	m.Add(s, "--env")
	environ := []string{"GITHUB_SHA=a", "GITHUB_TOKEN=t", "GITHUB_PAT=p", "GH_TOKEN=g", "NPM_TOKEN=n", "NPM_CONFIG_REGISTRY=r", "CI_TOKEN=c"}
	assert.Equal(t, []Withheld{{Rule: Rule{Value: "GITHUB_*", Source: "--env"}, Names: []string{"GITHUB_TOKEN"}}}, WithheldEnv(m.Policy(), environ))
	assert.Empty(t, WithheldEnv(Policy{}, environ), "no prefix rule, nothing withheld to name")
}
