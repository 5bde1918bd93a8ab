package main

import (
	"fmt"
	"io"
	"os"
)

// subcommand is one of boxsh's commands named by its first argument
// (boxsh spec, boxsh doctor, ...).
type subcommand struct {
	// usage is what --help (or -h) among its arguments prints, on stdout.
	usage string
	run   func(args []string, cwd string, stdout, stderr io.Writer) int
}

// subcommands are boxsh's commands by name.
var subcommands = map[string]subcommand{
	"spec":   {specUsage, runSpec},
	"doctor": {doctorUsage, func(args []string, _ string, stdout, stderr io.Writer) int { return runDoctor(args, stdout, stderr) }},
	"policy": {policyUsage, func(args []string, cwd string, stdout, stderr io.Writer) int {
		return runPolicy(args, cwd, os.Getenv("HOME"), stdout, stderr)
	}},
	"audit":    {auditUsage, ignoreCwd(runAudit)},
	"changes":  {sessionUsage, ignoreCwd(runChanges)},
	"diff":     {sessionUsage, ignoreCwd(runDiff)},
	"apply":    {sessionUsage, ignoreCwd(runApply)},
	"discard":  {sessionUsage, ignoreCwd(runDiscard)},
	"sessions": {sessionUsage, ignoreCwd(runSessions)},
}

// ignoreCwd adapts a command that does not take the working directory.
func ignoreCwd(run func(args []string, stdout, stderr io.Writer) int) func([]string, string, io.Writer, io.Writer) int {
	return func(args []string, _ string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }
}

// runSubcommand runs the subcommand argv names, if it names one, and
// returns its exit status; --help prints its usage on stdout.
func runSubcommand(argv []string, cwd string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(argv) == 0 {
		return 0, false
	}
	sub, ok := subcommands[argv[0]]
	if !ok {
		return 0, false
	}
	if helpAsked(argv[1:]) {
		fmt.Fprint(stdout, sub.usage)
		return 0, true
	}
	return sub.run(argv[1:], cwd, stdout, stderr), true
}

// helpAsked tells whether args ask for help: --help or -h before any "--"
// (after it, the arguments are a command's own).
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--help", "-h":
			return true
		}
	}
	return false
}
