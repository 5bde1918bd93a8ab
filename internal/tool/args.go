package tool

import "io/fs"

// The names of the tools: the nine of boxsh v3, then list.
const (
	Bash              = "bash"
	Read              = "read"
	Write             = "write"
	EditFile          = "edit"
	RunInTerminal     = "run_in_terminal"
	SendToTerminal    = "send_to_terminal"
	GetTerminalOutput = "get_terminal_output"
	KillTerminal      = "kill_terminal"
	ListTerminals     = "list_terminals"
	List              = "list"
)

// The definitions of the nine tools of boxsh v3, then of list.
var (
	BashDef = Define[BashArgs, BashOutput](Info{Name: Bash, Order: 10,
		Description: "Execute a shell command in the sandbox. Returns stdout, stderr and the exit code. Output is truncated to 10MB per stream. Give the command as command (a shell command line) or as args (an argv run without a shell), not both.",
		Annotations: Annotations{"Bash", false, true},
		OneOf:       []string{"command", "args"}, V3Required: []string{"command"},
		Audit: AuditRule{ExitCode: true}, Command: true,
		Refusals: RefusalRule{Report: true, Starts: "process", StartsIf: "background"}})
	ReadDef = Define[ReadArgs, ReadOutput](Info{Name: Read, Order: 20,
		Description: "Read the contents of a file. Text files are returned with offset/limit paging; images are returned as image content; other binary files as metadata.",
		Annotations: Annotations{"Read File", true, false}, Quick: true})
	WriteDef = Define[WriteArgs, NoOutput](Info{Name: Write, Order: 30,
		Description: "Create or overwrite a file with the given content. Parent directories are created automatically if needed.",
		Annotations: Annotations{"Write File", false, true}})
	EditDef = Define[EditArgs, EditOutput](Info{Name: EditFile, Order: 40,
		Description: "Edit a file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file.",
		Annotations: Annotations{"Edit File", false, false}})
	RunInTerminalDef = Define[RunInTerminalArgs, NoOutput](Info{Name: RunInTerminal, Order: 50,
		Description: "Start a persistent PTY session running the given command (e.g. \"bash\"). Returns a session id, initial screen output, exit status, and exit code. Use get_terminal_output to poll for further output, send_to_terminal to write to stdin, kill_terminal to terminate and free resources.",
		Annotations: Annotations{"Run in Terminal", false, false},
		Refusals:    RefusalRule{Report: true, Starts: "terminal"}})
	SendToTerminalDef = Define[SendToTerminalArgs, NoOutput](Info{Name: SendToTerminal, Order: 60,
		Description: "Send text to an existing terminal session's PTY stdin, then wait up to 500ms for new output. Returns the updated screen snapshot, exit status, and exit code. Append \\n to execute as a shell command.",
		Annotations: Annotations{"Send to Terminal", false, false},
		Refusals:    RefusalRule{Report: true, Reads: "terminal"}})
	GetTerminalOutputDef = Define[TerminalIDArgs, NoOutput](Info{Name: GetTerminalOutput, Order: 70,
		Description: "Wait up to 500ms for new output from a terminal session, then return the current screen snapshot together with exit status and exit code. Use this to poll long-running commands until exited is true.",
		Annotations: Annotations{"Get Terminal Output", true, false},
		Refusals:    RefusalRule{Report: true, Reads: "terminal"}})
	KillTerminalDef = Define[TerminalIDArgs, NoOutput](Info{Name: KillTerminal, Order: 80,
		Description: "Kill a terminal session and free its resources. Returns the final screen snapshot.",
		Annotations: Annotations{"Kill Terminal", false, true},
		Refusals:    RefusalRule{Report: true, Reads: "terminal", Ends: true}})
	ListTerminalsDef = Define[NoArgs, NoOutput](Info{Name: ListTerminals, Order: 90,
		Description: "List all active terminal sessions.",
		Annotations: Annotations{"List Terminals", true, false}})
	ListDef = Define[ListArgs, ListOutput](Info{Name: List, Order: 100, BeyondV3: true,
		Description: "List a directory: each entry's name, type, size, mode, modification time and symbolic link target, optionally descending depth levels, at most limit entries (truncated tells when entries were left out). Entries that the sandbox's policy refuses to read are listed as the sandbox shows them, marked with denied_by.",
		Annotations: Annotations{"List Directory", true, false}})
)

// BashArgs are the arguments of the bash tool.
//
// Exactly one of Command and Args is given (see Spec.Validate): Command is
// run by the shell, Args is run as an argv without one.
type BashArgs struct {
	Command string            `json:"command,omitempty" doc:"Shell command to execute (run as <shell> -c COMMAND in a fresh shell). Exactly one of command and args is required."`
	Args    []string          `json:"args,omitempty" nullable:"false" minItems:"1" doc:"Program and arguments to run without a shell (args[0] is looked up in PATH; no expansion, quoting or redirection). Exactly one of command and args is required."`
	Timeout float64           `json:"timeout,omitempty" doc:"Timeout in seconds (optional; 0 or absent means no timeout). On expiry the whole process group is killed and exit_code is -1."`
	Cwd     string            `json:"cwd,omitempty" doc:"Working directory of the command (optional)"`
	Env     map[string]string `json:"env,omitempty" doc:"Extra environment variables for the command (optional)"`
	Stdin   string            `json:"stdin,omitempty" doc:"Text fed to the command's standard input (optional; default is empty input)"`
	// Background starts the command and answers at once with its id and
	// pid, without waiting for a worker (see process_output).
	Background bool `json:"background,omitempty" doc:"Start the command in the background and answer at once with its id and pid (exit_code 0 then only means it started); read its output with process_output, signal it with process_kill. Such a command holds no worker and has no default timeout."`
}

// BashOutput is the structured result of the bash tool.
type BashOutput struct {
	ExitCode        int    `json:"exit_code" doc:"Process exit code (0 = success, 128+N when killed by signal N, -1 on timeout)"`
	Stdout          string `json:"stdout" doc:"Standard output"`
	Stderr          string `json:"stderr" doc:"Standard error"`
	DurationMS      int64  `json:"duration_ms" doc:"Execution time in milliseconds"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty" required:"false" doc:"Set when stdout exceeded 10 MiB and was cut"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty" required:"false" doc:"Set when stderr exceeded 10 MiB and was cut"`
	Signal          string `json:"signal,omitempty" required:"false" doc:"Name of the signal that killed the command, if any"`
	// ID and PID are those of a command started in the background.
	ID  string `json:"id,omitempty" required:"false" doc:"Id of the background process (background: true only)"`
	PID int    `json:"pid,omitempty" required:"false" doc:"Process id of the background process (background: true only)"`
	// NetworkRefusals are added by the front (see NetworkRefusal).
	NetworkRefusals []NetworkRefusal `json:"network_refusals,omitempty" required:"false" doc:"Connections the network proxy refused to the sandbox while the command ran (at most 16); absent when none"`
}

// ReadArgs are the arguments of the read tool.
type ReadArgs struct {
	Path   string `json:"path" doc:"Path to the file to read (relative or absolute)"`
	Offset int    `json:"offset,omitempty" doc:"Line number to start reading from (1-indexed, text files only)"`
	Limit  int    `json:"limit,omitempty" doc:"Maximum number of lines to read (text files only; default 2000, and at most 50 KB)"`
}

// ReadOutput is the structured result of the read tool.
type ReadOutput struct {
	Content        string `json:"content" doc:"File content (text files; empty for images and other binary files)"`
	Encoding       string `json:"encoding" doc:"\"text\", \"image\" or \"metadata\""`
	MimeType       string `json:"mime_type" doc:"Detected MIME type"`
	LineCount      *int   `json:"line_count,omitempty" required:"false" doc:"Number of lines returned (text only)"`
	Truncated      *bool  `json:"truncated,omitempty" required:"false" doc:"Whether the output was truncated (text only)"`
	TotalLines     int    `json:"total_lines,omitempty" required:"false" doc:"Total number of lines in the file (when truncated)"`
	NextOffset     int    `json:"next_offset,omitempty" required:"false" doc:"Offset to continue reading from (when truncated)"`
	Size           *int64 `json:"size,omitempty" required:"false" doc:"File size in bytes (binary only)"`
	Width          int    `json:"width,omitempty" required:"false" doc:"Width of the returned image"`
	Height         int    `json:"height,omitempty" required:"false" doc:"Height of the returned image"`
	OriginalWidth  int    `json:"original_width,omitempty" required:"false" doc:"Width of the image file"`
	OriginalHeight int    `json:"original_height,omitempty" required:"false" doc:"Height of the image file"`
	WasResized     *bool  `json:"was_resized,omitempty" required:"false" doc:"Whether the image was scaled down"`
}

// WriteArgs are the arguments of the write tool.
type WriteArgs struct {
	Path     string `json:"path" doc:"Path to the file to write (relative or absolute)"`
	Content  string `json:"content" doc:"Content to write to the file"`
	Encoding string `json:"encoding,omitempty" enum:"utf8,text,base64" doc:"Encoding of content: \"utf8\" (default; \"text\" is the same) or \"base64\" for binary data"`
}

// Edit is one replacement of the edit tool.
type Edit struct {
	OldText string `json:"oldText" doc:"Exact text to find (must be unique)"`
	NewText string `json:"newText" doc:"Replacement text"`
}

// EditArgs are the arguments of the edit tool.
type EditArgs struct {
	Path  string `json:"path" doc:"Path to the file to edit (relative or absolute)"`
	Edits []Edit `json:"edits" nullable:"false" minItems:"1" doc:"One or more targeted replacements"`
}

// EditOutput is the structured result of the edit tool.
type EditOutput struct {
	Diff             string `json:"diff" doc:"Unified diff of the changes made"`
	FirstChangedLine int    `json:"firstChangedLine" doc:"Line number of the first change (1-indexed)"`
}

// RunInTerminalArgs are the arguments of run_in_terminal.
type RunInTerminalArgs struct {
	Command     string `json:"command" doc:"Command to run in the PTY (e.g. bash)"`
	Explanation string `json:"explanation,omitempty" doc:"Why this terminal is needed"`
	Goal        string `json:"goal,omitempty" doc:"What you intend to accomplish"`
	Cols        int    `json:"cols,omitempty" doc:"Terminal width in columns (default 220)"`
	Rows        int    `json:"rows,omitempty" doc:"Terminal height in rows (default 50)"`
}

// SendToTerminalArgs are the arguments of send_to_terminal.
type SendToTerminalArgs struct {
	ID      string `json:"id" doc:"Terminal session id"`
	Command string `json:"command" doc:"Text to write to the PTY stdin (append \\n to run it as a command)"`
}

// TerminalIDArgs are the arguments of get_terminal_output and kill_terminal.
type TerminalIDArgs struct {
	ID string `json:"id" doc:"Terminal session id"`
}

// NoArgs are the (absent) arguments of list_terminals.
type NoArgs struct{}

// ListArgs are the arguments of the list tool.
type ListArgs struct {
	Path  string `json:"path" doc:"Directory to list (relative or absolute)"`
	Depth int    `json:"depth,omitempty" minimum:"0" doc:"Levels to descend: 1 (default; 0 means 1) lists the directory's own entries, 2 adds those of its subdirectories, and so on. Symbolic links are not followed."`
	Limit int    `json:"limit,omitempty" minimum:"0" doc:"Maximum number of entries returned (default 1000; larger values are lowered to 10000). truncated tells when entries were left out."`
}

// FileInfo describes one file system object, as list and stat report it.
type FileInfo struct {
	// Type is one of the FileType* constants.
	Type  string `json:"type" enum:"file,dir,symlink,fifo,socket,char_device,block_device" doc:"Object type (symbolic links are not followed)"`
	Size  int64  `json:"size" doc:"Size in bytes (of the link itself for a symbolic link)"`
	Mode  string `json:"mode" doc:"Permission bits in octal, with the set-user-ID, set-group-ID and sticky bits (e.g. \"0644\", \"4755\")"`
	Mtime string `json:"mtime" doc:"Modification time, RFC 3339 with nanoseconds, UTC"`
	// Target is the target of a symbolic link.
	Target string `json:"target,omitempty" required:"false" doc:"Target of a symbolic link, as stored in the link"`
	// DeniedBy names the sandbox policy rule that refuses reading the
	// object. The other fields then describe the placeholder the sandbox
	// shows in its place (empty, mode 0000), as its shell sees it.
	DeniedBy string `json:"denied_by,omitempty" required:"false" doc:"The sandbox policy rule that refuses reading it (e.g. \"denyRead .env (default)\"); the other fields then describe the empty, mode 0000 placeholder the sandbox shows instead"`
}

// The values of FileInfo.Type.
const (
	FileTypeFile        = "file"
	FileTypeDir         = "dir"
	FileTypeSymlink     = "symlink"
	FileTypeFIFO        = "fifo"
	FileTypeSocket      = "socket"
	FileTypeCharDevice  = "char_device"
	FileTypeBlockDevice = "block_device"
)

// FileType names the type of a file mode, as list, stat and glob answer it.
func FileType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return FileTypeDir
	case m&fs.ModeSymlink != 0:
		return FileTypeSymlink
	case m&fs.ModeNamedPipe != 0:
		return FileTypeFIFO
	case m&fs.ModeSocket != 0:
		return FileTypeSocket
	case m&fs.ModeCharDevice != 0:
		return FileTypeCharDevice
	case m&fs.ModeDevice != 0:
		return FileTypeBlockDevice
	}
	return FileTypeFile
}

// ListEntry is one entry of a list result.
type ListEntry struct {
	// Name is the entry's path relative to the listed directory, with "/"
	// between levels.
	Name string `json:"name" doc:"Path relative to the listed directory (\"sub/file\" below depth 1)"`
	FileInfo
	// Error tells why a directory's entries are missing from a listing
	// that should have descended into it.
	Error string `json:"error,omitempty" required:"false" doc:"Why this directory's entries could not be listed (depth > 1)"`
}

// ListOutput is the structured result of the list tool.
type ListOutput struct {
	Path      string      `json:"path" doc:"Absolute path of the listed directory"`
	Entries   []ListEntry `json:"entries" nullable:"false" doc:"Entries in lexical order, each directory followed by its own entries (depth first)"`
	Truncated bool        `json:"truncated" doc:"Whether entries were left out because limit was reached"`
}
