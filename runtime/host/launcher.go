package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LauncherName is the file name of the sandbox's launcher, boxsh-launch (see
// internal/launch).
const LauncherName = "boxsh-launch"

// LauncherEnv names the launcher to use instead of the one beside boxsh or
// boxsh-init.
const LauncherEnv = "BOXSH_LAUNCH"

// FindLauncher locates boxsh-launch: at $BOXSH_LAUNCH when it is set, else
// next to the running executable, then next to boxsh-init at initPath (if
// given).
//
// It never looks on PATH: the launcher runs on the host, and a directory on
// PATH may be one a sandbox can write (a project's bin, node_modules/.bin).
func FindLauncher(initPath string) (string, error) {
	if p := os.Getenv(LauncherEnv); p != "" {
		if isExecutableFile(p) {
			return filepath.Abs(p)
		}
		return "", fmt.Errorf("%s=%s is not an executable file", LauncherEnv, p)
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			dirs = append(dirs, filepath.Dir(exe))
		}
	}
	if initPath != "" {
		if real, err := filepath.EvalSymlinks(initPath); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	for _, d := range dirs {
		if p := filepath.Join(d, LauncherName); isExecutableFile(p) {
			return p, nil
		}
	}
	return "", errors.New("cannot find " + LauncherName + ", which starts sandboxes: install it next to boxsh (or boxsh-init), or name it in " + LauncherEnv)
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
