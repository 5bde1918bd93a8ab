package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime"
)

// prepareSandbox checks that this boxsh can make the sandbox sb asks for
// and turns --try into its binds, announcing where the changes go. Call
// done once the sandbox has ended (or failed to start: started false) to
// remove what --try made that nobody needs: its overlay work directory,
// and all of it when nothing ran.
func prepareSandbox(sb policy.Sandbox, cwd, home string) (_ policy.Sandbox, done func(started bool), err error) {
	done = func(bool) {}
	if !sb.Enabled && !sb.Try {
		return sb, done, nil
	}
	if err := runtime.SandboxSupported(); err != nil {
		return sb, done, err
	}
	if !sb.Try {
		return sb, done, nil
	}
	sb, changes, err := runtime.ResolveTry(sb, cwd, home)
	if err != nil {
		return sb, done, err
	}
	fmt.Fprintf(os.Stderr, "boxsh: changes will be saved in %s\n", changes)
	cow := sb.Binds[len(sb.Binds)-1:] // --try's own
	return sb, func(started bool) {
		runtime.RemoveCowWorkDirs(cow)
		if !started {
			os.RemoveAll(filepath.Dir(changes))
		}
	}, nil
}
