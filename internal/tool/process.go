package tool

// The tools of background processes, beyond v3: bash with background
// started them; these read, signal and list them.
const (
	ProcessOutput = "process_output"
	ProcessKill   = "process_kill"
	ProcessList   = "process_list"
)

// Bounds of background processes, which boxsh-init enforces.
const (
	// MaxProcesses bounds the background processes boxsh-init keeps at
	// once, exited ones not yet read included.
	MaxProcesses = 16
	// ProcessBuffer bounds the output kept of each background process
	// (both streams together): older output is dropped.
	ProcessBuffer = 1 << 20
	// MaxProcessWaitMS bounds process_output's wait_ms.
	MaxProcessWaitMS = 30000
)

// The values of ProcessInfo.State.
const (
	ProcessRunning = "running"
	ProcessExited  = "exited"
)

// ProcessOutputArgs are the arguments of process_output.
type ProcessOutputArgs struct {
	ID     string `json:"id" doc:"Background process id, as bash with background answered it"`
	Offset int64  `json:"offset,omitempty" minimum:"0" doc:"Position in the process's output (both streams, counted together in bytes) to read from: 0 (default) for the start, next_offset of the previous answer to read on"`
	WaitMS int    `json:"wait_ms,omitempty" minimum:"0" doc:"How long to wait, in milliseconds, for output past offset or for the exit when there is none yet (default 0: answer at once; at most 30000)"`
}

// ProcessOutputResult is the structured result of process_output.
type ProcessOutputResult struct {
	ID string `json:"id" doc:"Background process id"`
	// Stdout and Stderr are the output from Offset on, each stream's in
	// its own member.
	Stdout string `json:"stdout" doc:"Standard output written from offset on"`
	Stderr string `json:"stderr" doc:"Standard error written from offset on"`
	// NextOffset is where the next read goes on from.
	NextOffset int64 `json:"next_offset" doc:"Offset to read on from: the end of the output returned"`
	// Dropped counts the bytes from Offset on that were no longer kept.
	Dropped int64 `json:"dropped" doc:"Bytes of output from offset on that were no longer kept (each process keeps its last 1 MiB of output) and are missing from stdout and stderr"`
	ProcessState
	// NetworkRefusals are added by the front (see NetworkRefusal).
	NetworkRefusals []NetworkRefusal `json:"network_refusals,omitempty" required:"false" doc:"Connections the network proxy refused to the sandbox since the process started or was last read (at most 16); absent when none"`
}

// ProcessState is the state of a background process.
type ProcessState struct {
	State string `json:"state" enum:"running,exited" doc:"\"running\", or \"exited\" once the process has exited (its process group may still hold processes it started)"`
	// ExitCode is nil while the process runs.
	ExitCode *int   `json:"exit_code,omitempty" required:"false" doc:"Exit status once exited: the code, or 128+N after death by signal N"`
	Signal   string `json:"signal,omitempty" required:"false" doc:"Name of the signal that killed it, if any"`
}

// ProcessKillArgs are the arguments of process_kill.
type ProcessKillArgs struct {
	ID     string `json:"id" doc:"Background process id"`
	Signal string `json:"signal,omitempty" doc:"Signal sent to the process's whole process group: a name (\"TERM\", \"SIGKILL\", \"INT\", \"HUP\", ...) or number; default TERM"`
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID  string `json:"id" doc:"Background process id"`
	PID int    `json:"pid" doc:"Process id of its shell (or program, for args), the leader of its process group, as the sandbox numbers it"`
	// Command is the command line, or the argv joined by spaces.
	Command     string `json:"command" doc:"The command, or args joined by spaces"`
	Started     string `json:"started" doc:"Start time, RFC 3339, UTC"`
	OutputBytes int64  `json:"output_bytes" doc:"Bytes of output it has written so far (both streams)"`
	Dropped     int64  `json:"dropped" doc:"Bytes of its output no longer kept (only the last 1 MiB is)"`
	ProcessState
}

// ProcessListOutput is the structured result of process_list.
type ProcessListOutput struct {
	Processes []ProcessInfo `json:"processes" nullable:"false" doc:"Background processes, oldest first"`
}

// The definitions of the tools of background processes.
var (
	ProcessOutputDef = Define[ProcessOutputArgs, ProcessOutputResult](Info{Name: ProcessOutput, Order: 150, BeyondV3: true,
		Description: "Read the output of a background process (started by bash with background: true) from offset on, stdout and stderr apart, waiting up to wait_ms for new output; tells whether it exited and its exit code. Each process keeps its last 1 MiB of output; dropped counts what was lost. Once it has exited and its output is read to the end, it is forgotten.",
		Annotations: Annotations{"Background Process Output", true, false},
		Refusals:    RefusalRule{Report: true, Reads: "process"}})
	ProcessKillDef = Define[ProcessKillArgs, ProcessInfo](Info{Name: ProcessKill, Order: 160, BeyondV3: true,
		Description: "Send a signal (default TERM) to a background process's whole process group, then wait up to a second for it to exit; answers its state.",
		Annotations: Annotations{"Kill Background Process", false, true}})
	ProcessListDef = Define[NoArgs, ProcessListOutput](Info{Name: ProcessList, Order: 170, BeyondV3: true,
		Description: "List the background processes: id, pid, command, start time, state, exit code and output bytes.",
		Annotations: Annotations{"List Background Processes", true, false}})
)
