package tool

// Glob is the name of the glob tool.
const Glob = "glob"

// Bounds of the glob tool.
const (
	// DefaultGlobLimit is how many matches glob answers by default.
	DefaultGlobLimit = 1000
	// MaxGlobLimit bounds glob's limit.
	MaxGlobLimit = 10000
	// MaxGlobVisits bounds the entries one glob call looks at.
	MaxGlobVisits = 200000
)

// GlobDef defines the glob tool.
var GlobDef = Define[GlobArgs, GlobOutput](Info{Name: Glob, Order: 200, BeyondV3: true,
	Description: "Find files by name pattern under a directory: * and ? match within a path segment, [abc] a character class, ** any number of segments (\"**/*.go\", \"src/**/test_*.py\"). Answers the matching paths, relative to path, in lexical order, at most limit of them (truncated tells when more were left out). Symbolic links are matched but not followed; paths the sandbox's policy refuses to read are marked with denied_by and not descended into.",
	Annotations: Annotations{"Find Files", true, false}})

// GlobArgs are the arguments of the glob tool.
type GlobArgs struct {
	Pattern string `json:"pattern" doc:"Pattern of paths relative to path, segments separated by /: * and ? within a segment, [abc] a class, ** any number of segments"`
	Path    string `json:"path,omitempty" doc:"Directory to search under (default: the working directory)"`
	Limit   int    `json:"limit,omitempty" minimum:"0" doc:"Most matches to return (default 1000, at most 10000)"`
}

// GlobMatch is one path glob found.
type GlobMatch struct {
	Path     string `json:"path" doc:"Path relative to the directory searched"`
	Type     string `json:"type" enum:"file,dir,symlink,fifo,socket,char_device,block_device" doc:"Object type (symbolic links are not followed)"`
	DeniedBy string `json:"denied_by,omitempty" required:"false" doc:"The sandbox policy rule that refuses reading it"`
}

// GlobOutput is the structured result of the glob tool.
type GlobOutput struct {
	Path      string      `json:"path" doc:"Absolute path of the directory searched"`
	Matches   []GlobMatch `json:"matches" nullable:"false" doc:"Matching paths, in lexical order"`
	Truncated bool        `json:"truncated" doc:"Whether matches were left out: the limit was reached, or the search looked at its most entries"`
}
