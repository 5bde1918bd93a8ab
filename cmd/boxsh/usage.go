package main

import "strings"

// usage is boxsh --help's text, after the version line. It is made when
// asked for, not at every start.
func usage() string { return usageText(flagTable) }

// usageHead is the start of the help, before its sections of flags.
const usageHead = `Usage: boxsh [OPTIONS] [SHELL-ARGS...]
       boxsh [OPTIONS] --rpc
       boxsh [SANDBOX OPTIONS] -- COMMAND [ARGS...]

A sandboxed POSIX shell and MCP server.
`

// usageSections are the help's sections of flags, in order: a title, and
// entries that are not flags, listed before the section's flags.
var usageSections = []struct {
	section section
	title   string
	lead    []helpEntry
}{
	{sectionModes, "Modes:", []helpEntry{{"(default)", []string{
		"Run the shell (--shell, default /bin/sh) with SHELL-ARGS:",
		"boxsh, boxsh -c 'CMD' [NAME ARGS...], boxsh script.sh ARGS...",
		"A long option that is not boxsh's is refused: a shell's",
		"own goes after -- (boxsh -- /bin/bash --login).",
	}}}},
	{sectionOptions, "Options:", nil},
	{sectionSandbox, `Sandbox options (each of them, and a --policy file with filesystem or network
settings, turns the sandbox on):`, nil},
	{sectionPolicy, `Policy options (also in settings files: ~/.config/boxsh/policy.json, then
./.boxsh/policy.json, then --policy FILE; flags win; see boxsh policy --help):`, nil},
}

// usageTail is the end of the help: boxsh's subcommands.
const usageTail = `Other commands:
  boxsh spec [OPTIONS]           Print the sandbox as an OCI runtime spec.
  boxsh doctor                   Check that this host can run sandboxes, and
                                 say what to change where it cannot.
  boxsh policy init|show [...]   Write the default settings; show the policy.
  boxsh policy trust [PATH]      Let a project's settings file widen the policy
                                 (it can only narrow it until then).
  boxsh changes DST              List the changes of a copy-on-write session
                                 (--try's .boxsh-try-XXXXXX/work, or the Go client's).
  boxsh diff DST [PATH]          Unified diff of its changes.
  boxsh apply DST [--dry-run]    Write them into SRC (deletions too); host-changed
                                 and protected paths are reported, not applied.
  boxsh discard DST              Remove the session.
  boxsh sessions                 List the sessions, with age and size.
  boxsh audit [FILE|DST] [--json]
                                 Print an audit log (--audit's FILE, or a
                                 copy-on-write session's; by default the latest
                                 session's whose source is this directory).
`

// helpEntry is one entry of the help: a label (a flag and its value) and
// its text, one string a line.
type helpEntry struct {
	label string
	text  []string
}

// helpEntries are the help's entries of f.
func (f *flagDef) helpEntries() []helpEntry {
	names := f.label
	if names == "" {
		names = strings.Join(f.names, ", ")
	}
	label := func(placeholder string) string {
		if placeholder == "" {
			return names
		}
		return names + " " + placeholder
	}
	entries := []helpEntry{{label(f.placeholder), f.help}}
	for _, m := range f.more {
		entries = append(entries, helpEntry{label(m.placeholder), m.help})
	}
	return entries
}

// labelWidth is the width of the help's column of labels, with the space
// after them. A longer label has a line of its own.
const labelWidth = 21

// usageText is boxsh --help's text for the flags of table.
func usageText(table []flagDef) string {
	var b strings.Builder
	b.WriteString(usageHead)
	for _, s := range usageSections {
		b.WriteString("\n" + s.title + "\n")
		entries := s.lead
		for i := range table {
			if table[i].section == s.section {
				entries = append(entries, table[i].helpEntries()...)
			}
		}
		for _, e := range entries {
			writeHelpEntry(&b, e)
		}
	}
	b.WriteString("\n" + usageTail)
	return b.String()
}

// writeHelpEntry writes e to b, its text in the column after the labels.
func writeHelpEntry(b *strings.Builder, e helpEntry) {
	indent := strings.Repeat(" ", 2+labelWidth)
	b.WriteString("  " + e.label)
	if len(e.label) < labelWidth {
		b.WriteString(strings.Repeat(" ", labelWidth-len(e.label)))
	} else {
		b.WriteString("\n" + indent)
	}
	for i, line := range e.text {
		if i > 0 {
			b.WriteString(indent)
		}
		b.WriteString(line + "\n")
	}
}
