package tool

// Stat is the name of the stat tool.
const Stat = "stat"

// StatDef defines the stat tool.
var StatDef = Define[StatArgs, StatOutput](Info{Name: Stat, Order: 110, BeyondV3: true,
	Description: "Describe a path without reading it: whether it exists, its type, size, mode, modification time and symbolic link target (links are not followed).",
	Annotations: Annotations{"Stat Path", true, false}})

// StatArgs are the arguments of the stat tool.
type StatArgs struct {
	Path string `json:"path" doc:"Path to describe (relative or absolute); a symbolic link is described, not followed"`
}

// StatOutput is the structured result of the stat tool. When Exists is
// false, only Path is set.
type StatOutput struct {
	Path     string `json:"path" doc:"Absolute path described"`
	Exists   bool   `json:"exists" doc:"Whether the path exists (a dangling symbolic link exists); the other fields are set only when it does"`
	Type     string `json:"type,omitempty" required:"false" enum:"file,dir,symlink,fifo,socket,char_device,block_device" doc:"Object type (symbolic links are not followed)"`
	Size     *int64 `json:"size,omitempty" required:"false" doc:"Size in bytes (of the link itself for a symbolic link)"`
	Mode     string `json:"mode,omitempty" required:"false" doc:"Permission bits in octal, with the set-user-ID, set-group-ID and sticky bits (e.g. \"0644\", \"4755\")"`
	Mtime    string `json:"mtime,omitempty" required:"false" doc:"Modification time, RFC 3339 with nanoseconds, UTC"`
	Target   string `json:"target,omitempty" required:"false" doc:"Target of a symbolic link, as stored in the link"`
	DeniedBy string `json:"denied_by,omitempty" required:"false" doc:"The sandbox policy rule that refuses reading it; the other fields then describe the empty, mode 0000 placeholder the sandbox shows instead"`
}

// StatOf is the stat result of an existing object.
func StatOf(path string, fi FileInfo) StatOutput {
	size := fi.Size
	return StatOutput{Path: path, Exists: true, Type: fi.Type, Size: &size, Mode: fi.Mode, Mtime: fi.Mtime, Target: fi.Target, DeniedBy: fi.DeniedBy}
}
