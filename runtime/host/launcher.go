package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// LauncherName is the file name of the sandbox's launcher, boxsh-launch (see
// internal/launch).
const LauncherName = "boxsh-launch"

// LauncherEnv names the launcher when it is neither beside boxsh nor beside
// boxsh-init nor on PATH.
const LauncherEnv = "BOXSH_LAUNCH"

// FindLauncher locates boxsh-launch: next to the running executable, then
// next to boxsh-init at initPath (if given), then on PATH, then at
// $BOXSH_LAUNCH.
func FindLauncher(initPath string) (string, error) {
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
	if p, err := exec.LookPath(LauncherName); err == nil {
		return filepath.Abs(p)
	}
	if p := os.Getenv(LauncherEnv); p != "" {
		if isExecutableFile(p) {
			return filepath.Abs(p)
		}
		return "", fmt.Errorf("%s=%s is not an executable file", LauncherEnv, p)
	}
	return "", errors.New("cannot find " + LauncherName + ", which starts sandboxes: install it next to boxsh, on PATH, or name it in " + LauncherEnv)
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
