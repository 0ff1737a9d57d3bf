package fnserve

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the binary when the test process ends
// without Stop: a test that times out panics and exits at once, and would
// leave the binary serving. The signal follows the thread that started the
// binary, and the Go runtime ends no thread but one a goroutine locked.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
