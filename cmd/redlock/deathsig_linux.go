package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// dieWithRedlock makes the kernel SIGKILL cmd when redlock dies, whatever
// kills it (SIGKILL included): an unsupervised CMD would go on after the
// lock expired and another holder took it. The signal is tied to the
// thread that starts cmd, so that thread is locked to the calling
// goroutine until the returned func runs (after cmd exited).
func dieWithRedlock(cmd *exec.Cmd) (done func()) {
	runtime.LockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return runtime.UnlockOSThread
}
