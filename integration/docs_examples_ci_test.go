//go:build linux

package integration

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/boxsh/boxsh/integration/internal/outside"
)

// The examples of docs/containers.md and docs/development.md: CI jobs, the
// AppArmor profile, apt in the sandbox and the project's own recipes.

// ciRepo makes the repository of a CI job: a Go module and an npm project
// of no dependencies, since the registries are out of reach (the CI build
// tests use stand-ins of them). Its npm test prints the job's variables it
// sees. The Go package imports no standard package, so in the sandbox's
// fresh build cache its build compiles no runtime.
func ciRepo(t *testing.T, home string) string {
	t.Helper()
	repo := filepath.Join(home, "repo")
	writeFiles(t, repo, map[string]string{
		"go.mod": "module example.test/app\n\ngo 1.21\n",
		"app.go": "package app\n\n// Two is 2.\nconst Two = 2\n",
		"package.json": `{"name": "app", "version": "1.0.0", "private": true, "scripts": ` +
			`{"test": "node -e \"console.log('npm test: ' + JSON.stringify({CI: process.env.CI, SHA: process.env.CI_COMMIT_SHA}))\""}}`,
		"package-lock.json": `{"name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "app", "version": "1.0.0"}}}`,
		// npm would ask the registry for an audit and for its own updates.
		".npmrc": "audit=false\nfund=false\nupdate-notifier=false\n",
	})
	return repo
}

// checkCIBuild checks the output r of the CI build of ciRepo: Go built
// and tested, npm installed and tested, with the variables in want.
func checkCIBuild(t *testing.T, r runResult, want string) {
	t.Helper()
	require.Equal(t, 0, r.code(), "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "example.test/app\t[no test files]", "go test ran")
	assert.Contains(t, r.stdout, "npm test: "+want, "npm test ran, with the variables passed")
}

// ciExample runs docs/containers.md's CI command on a fresh runner.
func ciExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	home := homeDir(t)
	repo := ciRepo(t, home)
	r := runShell(t, ctx, repo, readerEnv(home, "CI=true", "CI_COMMIT_SHA=abc123"), block)
	checkCIBuild(t, r, `{"CI":"true"}`)
	assert.DirExists(t, filepath.Join(home, ".cache", "boxsh-ci", "go-build"), "Go's cache in the --cache directory")
	assert.DirExists(t, filepath.Join(home, ".cache", "boxsh-ci", "npm"), "npm's cache in the --cache directory")
}

// githubActionsExample runs docs/containers.md's GitHub Actions job, its
// boxsh step run as the runner runs it. The steps before it set up the
// runner. boxsh is the checkout's bin/ here, without network or root.
func githubActionsExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	var workflow struct {
		Jobs map[string]struct {
			RunsOn string `yaml:"runs-on"`
			Steps  []struct {
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
				Run  string         `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(block), &workflow))
	job, ok := workflow.Jobs["build"]
	require.True(t, ok, block)
	assert.NotEmpty(t, job.RunsOn)
	with := map[string]map[string]any{}
	var run string
	for _, s := range job.Steps {
		name, _, _ := strings.Cut(s.Uses, "@")
		with[name] = s.With
		if strings.Contains(s.Run, "boxsh --bind") {
			run = s.Run
		}
	}
	assert.Contains(t, with, "actions/checkout")
	assert.Equal(t, false, with["actions/setup-go"]["cache"], "the sandbox has its own cache")
	cache := with["actions/cache"]["path"]
	require.NotNil(t, cache, "the cache step's path")
	require.NotEmpty(t, run, "the step that runs boxsh")
	assert.Contains(t, run, "--cache "+cache.(string), "the cache saved is boxsh's")

	home := homeDir(t)
	repo := ciRepo(t, home)
	tools := t.TempDir()
	r := runShell(t, ctx, repo, readerEnv(home, "CI=true", "RUNNER_TOOL_CACHE="+tools), run)
	checkCIBuild(t, r, `{"CI":"true"}`)
	assert.DirExists(t, filepath.Join(home, ".cache", "boxsh-ci", "go-build"))
}

// gitlabCIExample runs docs/containers.md's GitLab CI job's script, with
// its variables.
func gitlabCIExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	var ci struct {
		Build struct {
			Variables map[string]string `yaml:"variables"`
			Cache     struct {
				Key struct {
					Files []string `yaml:"files"`
				} `yaml:"key"`
				Paths []string `yaml:"paths"`
			} `yaml:"cache"`
			Script []string `yaml:"script"`
		} `yaml:"build"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(block), &ci))
	job := ci.Build
	assert.ElementsMatch(t, []string{"go.sum", "package-lock.json"}, job.Cache.Key.Files)
	require.Len(t, job.Cache.Paths, 1)
	value, ok := job.Variables["BOXSH_CACHE"]
	require.True(t, ok)
	require.NotEmpty(t, job.Script)

	home := homeDir(t)
	repo := ciRepo(t, home)
	// GitLab expands a variable's variables, as sh does here.
	script := "BOXSH_CACHE=" + value + "; export BOXSH_CACHE\n" + strings.Join(job.Script, "\n")
	r := runShell(t, ctx, repo, readerEnv(home, "CI=true", "CI_PROJECT_DIR="+repo, "CI_COMMIT_SHA=abc123"), script)
	checkCIBuild(t, r, `{"CI":"true","SHA":"abc123"}`)
	assert.DirExists(t, filepath.Join(repo, job.Cache.Paths[0], "go-build"), "the cache is the path GitLab caches, in the project")
}

// appArmorExample checks docs/containers.md's AppArmor profile's script.
// Loading it needs root and AppArmor.
func appArmorExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	lines := shellLines(block)
	require.Len(t, lines, 2)
	// A file of the test's instead of /etc/apparmor.d/boxsh.
	require.Contains(t, lines[0], "> /etc/apparmor.d/boxsh")
	profile := filepath.Join(t.TempDir(), "boxsh")
	r := runShell(t, ctx, "..", nil, strings.Replace(lines[0], "/etc/apparmor.d/boxsh", profile, 1))
	require.Equal(t, 0, r.code(), r.stderr)
	text := fileText(t, profile)
	assert.Contains(t, text, "profile boxsh /usr/local/bin/boxsh ", "the profile is the installed boxsh's")
	assert.Contains(t, text, "  userns,\n", "it allows user namespaces")
	require.Equal(t, "apparmor_parser -r /etc/apparmor.d/boxsh", lines[1])
	parser, err := exec.LookPath("apparmor_parser")
	if err != nil {
		t.Skip("apparmor_parser -r loads the profile into the kernel's AppArmor, as root: this machine has no AppArmor")
	}
	// Parsed only: loading it needs root.
	r = runProgramIn(t, ctx, "..", "", nil, parser, "--skip-kernel-load", "--skip-cache", profile)
	assert.Equal(t, 0, r.code(), "apparmor_parser: %s", r.stderr)
}

// aptExample runs docs/containers.md's example of apt in the sandbox,
// through the allowlist. The mirror is out of reach: the proxy reaches a
// stand-in of deb.debian.org in the stand-in internet (standIn) instead,
// which has no files. apt gets as far as asking it for the release files. It does
// so as the user apt runs as in the sandbox, with its lists where the
// sandbox writes them.
func aptExample(t *testing.T, _ *docs, block string) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		requireInCI(t, "apt-get is not installed (the doc's apt is Debian's)")
	}
	n := standIn(t, outside.Config{Names: []string{"deb.debian.org"}})
	var mirror requestLog
	serveName(t, n, "deb.debian.org", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mirror.add(r.URL.Path)
		http.NotFound(w, r)
	}), false)
	home := homeDir(t)
	proj := filepath.Join(home, "proj")
	require.NoError(t, os.Mkdir(proj, 0o755))
	r := runShell(t, testContext(t), proj, readerEnv(home), block)
	assert.NotEqual(t, 0, r.code(), "the stand-in has no release file: %s", r.stdout)
	assert.Contains(t, r.stdout+r.stderr, "404", "the mirror answered")
	assert.NotContains(t, r.stdout+r.stderr, "setgroups", "apt did not drop to _apt")
	var releases []string
	for _, p := range mirror.take() {
		if strings.HasSuffix(p, "/InRelease") {
			releases = append(releases, p)
		}
	}
	assert.NotEmpty(t, releases, "apt update asked the mirror for its release files:\n%s\n%s", r.stdout, r.stderr)
}

// recipesExample checks docs/development.md's project commands. Each runs
// for minutes (a build, the whole suite, benchmarks) or writes the checkout
// (go generate). So each is checked by the tool's own dry run, without
// running its work:
//   - the recipe and its arguments are just's;
//   - the flags are the bench's (-h after them);
//   - the packages have a go:generate line.
func recipesExample(t *testing.T, _ *docs, block string) {
	ctx := testContext(t)
	env := []string{"GOFLAGS="} // the test run's -v would list the files
	for _, line := range shellLines(block) {
		words := shellWords(t, ctx, "..", nil, line)
		var r runResult
		switch {
		case words[0] == "just":
			r = runProgramIn(t, ctx, "..", "", env, "just", append([]string{"--dry-run"}, words[1:]...)...)
			assert.NotEmpty(t, r.stderr, "%s: the recipe's commands", line)
		case len(words) > 2 && words[0] == "go" && words[1] == "run":
			r = runProgramIn(t, ctx, "..", "", env, "go", append(words[1:], "-h")...)
			assert.Contains(t, r.stderr, "Usage of", line)
		case len(words) > 2 && words[0] == "go" && words[1] == "generate":
			r = runProgramIn(t, ctx, "..", "", env, "go", append([]string{"generate", "-n"}, words[2:]...)...)
			assert.Len(t, scanLines(r.stderr), len(words[2:]), "%s: a go:generate line in each package: %s", line, r.stderr)
		default:
			t.Errorf("a line the test does not know how to check: %s", line)
			continue
		}
		assert.Equal(t, 0, r.code(), "%s: %s", line, r.stderr)
	}
}
