//go:build !linux

package host

// ShareLauncherCopies does nothing here: there is no launcher.
func ShareLauncherCopies(string) {}

// PrepareLauncher does nothing here: there is no launcher.
func PrepareLauncher() {}
