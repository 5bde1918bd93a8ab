// Package lcinit turns the process into libcontainer's container init when
// libcontainer started it as "boxsh init".
//
// Its init function runs as soon as libcontainer's packages are
// initialized: Go initializes a package once its imports are, so the
// front's other packages (the server, the tools, the fleet) are not
// initialized in the container's init, which only sets the sandbox up and
// executes boxsh-init.
package lcinit
