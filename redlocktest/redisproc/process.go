package redisproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// stopTimeout bounds how long Stop waits after SIGTERM before SIGKILL.
const stopTimeout = 10 * time.Second

// process owns one started redis-server and the goroutine waiting on it.
// The goroutine ends exactly when the process has exited and been reaped;
// done is closed at that moment.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error // written before done is closed
}

// startProcess starts cmd and the goroutine that reaps it.
func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	proc := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		proc.waitErr = cmd.Wait()
		close(proc.done)
	}()
	return proc, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process; a process that already exited is not an error.
func (p *process) signal(sig os.Signal) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redisproc: send %v to pid %d: %w", sig, p.pid(), err)
	}
	return nil
}

// kill sends SIGKILL to the process and to its process group (which holds
// any BGSAVE/AOF-rewrite children so they cannot keep writing into Dir), then
// waits until the process is reaped.
func (p *process) kill() error {
	var groupErr error
	if !p.exited() {
		groupErr = killGroup(p.pid())
	}
	err := p.signal(syscall.SIGKILL)
	<-p.done
	if err != nil {
		return err
	}
	return groupErr
}

// waitExit waits up to timeout for the process to exit and reports whether it did.
func (p *process) waitExit(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// Kill sends SIGKILL (also to a paused server) and waits until the process
// has exited. Killing a server that is not running is not an error. No data
// is flushed: whatever was not yet on disk is lost.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killLocked()
}

func (s *Server) killLocked() error {
	proc := s.proc
	if proc == nil {
		return nil
	}
	err := proc.kill()
	s.proc = nil
	s.paused = false
	return err
}

// Stop shuts the server down gracefully: a paused server is resumed, SIGTERM
// is sent and Stop waits for the exit. If the server has not exited after
// ten seconds it is killed and an error is returned; the server is stopped
// in every case. Stopping a server that is not running is not an error.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	proc := s.proc
	if proc == nil {
		return nil
	}
	if err := proc.signal(syscall.SIGTERM); err != nil {
		return errors.Join(err, s.killLocked())
	}
	if s.paused {
		if err := proc.signal(syscall.SIGCONT); err != nil {
			return errors.Join(err, s.killLocked())
		}
	}
	if proc.waitExit(stopTimeout) {
		s.proc = nil
		s.paused = false
		return nil
	}
	killErr := s.killLocked()
	return errors.Join(fmt.Errorf("redisproc: server on port %d ignored SIGTERM for %v; killed", s.port, stopTimeout), killErr)
}

// Pause freezes the server with SIGSTOP: connections are still accepted by
// the kernel but nothing is answered until Resume. It returns once the
// process is observed stopped (best effort where /proc is unavailable).
// Pausing a paused server is a no-op; pausing a server that is not running
// is an error.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("redisproc: pause server on port %d: %w", s.port, ErrNotRunning)
	}
	if s.paused {
		return nil
	}
	if err := s.proc.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.paused = true
	waitForState(s.proc, true)
	return nil
}

// Resume continues a paused server with SIGCONT. Resuming a server that is
// not paused is a no-op; resuming a server that is not running is an error.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("redisproc: resume server on port %d: %w", s.port, ErrNotRunning)
	}
	if err := s.proc.signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.paused = false
	waitForState(s.proc, false)
	return nil
}

// Restart kills the server (SIGKILL) if it is running, deletes its data files
// (RDB, AOF file and AOF directory, temp files) unless keepData is true, then
// starts it again with the same configuration on the same port and waits
// until it answers PING. If the restart fails the server is left stopped.
func (s *Server) Restart(keepData bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.killLocked(); err != nil {
		return err
	}
	if !keepData {
		if err := s.removeDataFiles(); err != nil {
			return err
		}
	}
	proc, err := s.launch()
	if err != nil {
		return err
	}
	s.proc = proc
	return nil
}

// SetEnv replaces the extra environment (Config.Env) the server gets the
// next time it starts, e.g. a libfaketime clock for a restart.
func (s *Server) SetEnv(env []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Env = append([]string(nil), env...)
}

// removeDataFiles deletes the persistence files in Dir, honouring
// --dbfilename, --appendfilename and --appenddirname overrides in Args.
func (s *Server) removeDataFiles() error {
	names := []string{
		argValue(s.cfg.Args, "--dbfilename", "dump.rdb"),
		argValue(s.cfg.Args, "--appendfilename", "appendonly.aof"),
		argValue(s.cfg.Args, "--appenddirname", "appendonlydir"),
	}
	temps, err := filepath.Glob(filepath.Join(s.cfg.Dir, "temp-*"))
	if err != nil {
		return fmt.Errorf("redisproc: list temp files: %w", err)
	}
	paths := temps
	for _, name := range names {
		paths = append(paths, filepath.Join(s.cfg.Dir, filepath.Base(name)))
	}
	for _, path := range paths {
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("redisproc: remove data file: %w", err)
		}
	}
	return nil
}

// argValue returns the value following the last occurrence of flag in args,
// or fallback.
func argValue(args []string, flag, fallback string) string {
	value := fallback
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			value = args[i+1]
		}
	}
	return value
}
