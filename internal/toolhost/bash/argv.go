package bash

import (
	"errors"
	"fmt"
	"strings"
)

// argvCommand returns the shell command that runs argv without the shell
// interpreting it.
//
// The command is `exec` and each argument single-quoted. So no expansion, word
// splitting, quoting or redirection applies, and the program replaces the
// shell. The program is looked up in PATH as the shell does: exit code 127
// when not found, 126 when not executable. argv runs through the pool like any
// command, with its timeout, environment, working directory and stdin.
func argvCommand(argv []string) (string, error) {
	if err := CheckArgv(argv); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("exec")
	for _, a := range argv {
		b.WriteString(" '")
		b.WriteString(strings.ReplaceAll(a, "'", `'\''`))
		b.WriteByte('\'')
	}
	return b.String(), nil
}

// CheckArgv tells what makes argv impossible to run.
//
// That is an empty argv, an empty program name, one beginning with "-" (which
// exec would take for an option), or a NUL byte, which no argument can hold.
func CheckArgv(argv []string) error {
	if len(argv) == 0 {
		return errors.New("args must name a program")
	}
	if argv[0] == "" {
		return errors.New("args[0] must name a program, got an empty string")
	}
	if strings.HasPrefix(argv[0], "-") {
		return fmt.Errorf("args[0] must name a program, got %q, which begins with -", argv[0])
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("args[%d] holds a NUL byte", i)
		}
	}
	return nil
}

// ArgvCommand returns the shell command that runs argv without the shell
// interpreting it, as a bash call's args runs.
func ArgvCommand(argv []string) (string, error) { return argvCommand(argv) }
