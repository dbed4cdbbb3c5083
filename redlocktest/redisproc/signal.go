package redisproc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// stateTimeout bounds how long Pause/Resume wait to observe the new state.
const stateTimeout = time.Second

// killGroup sends SIGKILL to the process group led by pid. A group that no
// longer exists is not an error.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("redisproc: kill process group %d: %w", pid, err)
	}
	return nil
}

// waitForState polls /proc until the process is (stopped=true) or is not
// (stopped=false) in the stopped state, the process exits, or stateTimeout
// passes. Without /proc it returns at once.
func waitForState(proc *process, stopped bool) {
	deadline := time.Now().Add(stateTimeout)
	for !proc.exited() && time.Now().Before(deadline) {
		state, ok := processState(proc.pid())
		if !ok || (state == 'T') == stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// processState returns the state letter from /proc/PID/stat.
func processState(pid int) (byte, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	text := string(data)
	// The command name is parenthesised and may itself contain ')'.
	end := strings.LastIndexByte(text, ')')
	if end < 0 || end+2 >= len(text) {
		return 0, false
	}
	return text[end+2], true
}
