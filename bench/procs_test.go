package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
)

// BenchmarkContendedProcesses is BenchmarkContended with every worker in a
// process of its own, as a fleet of workers has it: one Client (or redsync
// Mutex), its own connections, its own Go runtime. The workers are this
// test binary run again (TestMain sees procWorkerEnv); each sets up, warms
// up, says it is ready, starts when told, and writes its log to stdout.
//
// Goroutines of one process share the runtime's netpoller, and on Linux
// that wakes a sleeping goroutine with a resolution of 1 ms (epoll_wait's
// timeout, Go issue 44343): a worker holding the lock with time.Sleep(1ms)
// sleeps until about 1 ms after the last network event its process saw
// during the hold. In one process every other worker's traffic is such an
// event; here only the holder's own is. hold-p50-µs shows it.
//
// client-cpu-µs/section is the CPU time (getrusage) all worker processes
// used while measured, per section.
func BenchmarkContendedProcesses(b *testing.B) {
	cfg := loadConfig(b)
	set := startNodes(b, cfg.nodes)
	for _, name := range []string{"redlock", "redlock-fair", "redsync"} {
		b.Run(fmt.Sprintf("lib=%s/procs=%d/nodes=%d", name, cfg.workers, cfg.nodes), func(b *testing.B) {
			runProcesses(b, cfg, set, name)
		})
	}
}

// procLibs are the libraries a worker process can run, each with one
// locker per process.
var procLibs = map[string]func(set *nodes, name string, hold time.Duration) (*rig, error){
	"redlock": func(set *nodes, name string, hold time.Duration) (*rig, error) {
		return setupRedlockPerWorker(set, 1, name, hold)
	},
	"redlock-fair": func(set *nodes, name string, hold time.Duration) (*rig, error) {
		return setupRedlockPerWorker(set, 1, name, hold, redlock.WithFair())
	},
	"redsync": func(set *nodes, name string, hold time.Duration) (*rig, error) {
		return setupRedsync(set, 1, name, hold)
	},
	spreadLib: setupSpread, // BenchmarkCluster's workers
}

// The environment of a worker process.
const (
	procWorkerEnv = "REDLOCK_BENCH_WORKER" // its library (a procLibs key)
	procAddrsEnv  = "REDLOCK_BENCH_ADDRS"  // the nodes, comma-separated
	procNameEnv   = "REDLOCK_BENCH_NAME"   // the lock's name
	procHoldEnv   = "REDLOCK_BENCH_HOLD"   // the hold, as time.ParseDuration reads it
)

// procReport is what a worker process writes when it is done: its log
// (times in Unix nanoseconds: the processes share the wall clock, not a
// monotonic one) and what its clients counted.
type procReport struct {
	Sections   [][3]int64 // asked, granted, released
	Cut        int64      // ns the Lock the deadline cut short had waited
	Err        string     // the first unexpected Lock error
	UnlockErrs int
	UnlockErr  string
	Calls      int64
	Trips      int64
	CPU        int64 // ns of CPU time while measured
	// Names: per section, the index of the name it locked, from a locker
	// that picks among names (a namePicker); none otherwise.
	Names []int `json:",omitempty"`
}

func runProcesses(b *testing.B, cfg config, set *nodes, libName string) {
	workers := startWorkers(b, cfg.workers, libName, set.addrs(), lockName("procs"), cfg.hold)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := set.snapshot(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	deadline, reports := runWorkers(b, workers, cfg.duration)
	logs := make([]workerLog, len(reports))
	var spent counts
	for i, report := range reports {
		logs[i] = report.log(i)
		spent.calls += report.Calls
		spent.trips += report.Trips
		spent.selfCPU += time.Duration(report.CPU)
	}
	b.StopTimer()
	after, err := set.snapshot(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	nodesSpent := after.since(set, before)
	spent.cmds, spent.redisCPU = nodesSpent.cmds, nodesSpent.redisCPU
	spent.scripts, spent.scriptT = nodesSpent.scripts, nodesSpent.scriptT

	reportContended(b, cfg, logs, deadline, spent)
	if st := analyze(logs, deadline); st.sections > 0 {
		b.ReportMetric(micros(spent.selfCPU)/float64(st.sections), "client-cpu-µs/section")
	}
}

// startWorkers starts n worker processes of libName (env: more of their
// environment) and waits until each is ready; any still running when b
// ends is killed.
func startWorkers(b *testing.B, n int, libName string, addrs []string, name string, hold time.Duration,
	env ...string) []*procWorker {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	workers := make([]*procWorker, n)
	b.Cleanup(func() {
		for _, w := range workers {
			if w != nil {
				w.kill()
			}
		}
	})
	for i := range workers {
		w, err := startProcWorker(self, libName, addrs, name, hold, env...)
		if err != nil {
			b.Fatalf("worker %d: %v", i, err)
		}
		workers[i] = w
	}
	for i, w := range workers {
		if err := w.expect("ready", time.Minute); err != nil {
			b.Fatalf("worker %d: %v", i, err)
		}
	}
	return workers
}

// runWorkers starts the ready workers together, each working until d from
// now (the deadline it returns), and collects their reports.
func runWorkers(b *testing.B, workers []*procWorker, d time.Duration) (time.Time, []procReport) {
	b.Helper()
	deadline := time.Now().Add(d).Round(0)
	for i, w := range workers {
		if _, err := fmt.Fprintf(w.stdin, "go %d\n", deadline.UnixNano()); err != nil {
			b.Fatalf("worker %d: %v", i, err)
		}
	}
	reports := make([]procReport, len(workers))
	for i, w := range workers {
		report, err := w.finish(d + time.Minute)
		if err != nil {
			b.Fatalf("worker %d: %v", i, err)
		}
		reports[i] = report
	}
	return deadline, reports
}

// log turns a report back into the worker's log.
func (r procReport) log(worker int) workerLog {
	l := workerLog{cut: time.Duration(r.Cut), unlockErrs: r.UnlockErrs}
	for _, s := range r.Sections {
		l.sections = append(l.sections, section{worker: worker,
			asked: time.Unix(0, s[0]), granted: time.Unix(0, s[1]), released: time.Unix(0, s[2])})
	}
	if r.Err != "" {
		l.errs, l.err = 1, errors.New(r.Err)
	}
	if r.UnlockErr != "" {
		l.unlockErr = errors.New(r.UnlockErr)
	}
	return l
}

// procWorker is one worker process, seen from the benchmark.
type procWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // its stdout, a line at a time; closed at EOF
	stderr bytes.Buffer
	done   chan struct{} // closed once cmd.Wait returned
	kill   func()
}

func startProcWorker(self, libName string, addrs []string, name string, hold time.Duration,
	env ...string) (*procWorker, error) {
	w := &procWorker{lines: make(chan string, 4), done: make(chan struct{})}
	w.cmd = exec.Command(self, "-test.run", "^$")
	w.cmd.Env = append(os.Environ(), procWorkerEnv+"="+libName, procAddrsEnv+"="+strings.Join(addrs, ","),
		procNameEnv+"="+name, procHoldEnv+"="+hold.String())
	w.cmd.Env = append(w.cmd.Env, env...)
	w.cmd.Stderr = &w.stderr
	w.cmd.SysProcAttr = sysProcAttr()
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { // ends at the process's EOF; then Wait, waited for through done
		scan := bufio.NewScanner(stdout)
		scan.Buffer(nil, 64<<20)
		for scan.Scan() {
			w.lines <- scan.Text()
		}
		close(w.lines)
		_ = w.cmd.Wait()
		close(w.done)
	}()
	w.kill = sync.OnceFunc(func() {
		_ = w.cmd.Process.Kill()
		for range w.lines { // unblocks the reader
		}
		<-w.done
	})
	return w, nil
}

// expect waits for the line want.
func (w *procWorker) expect(want string, timeout time.Duration) error {
	select {
	case line, ok := <-w.lines:
		if !ok {
			return fmt.Errorf("exited before %q: %s", want, w.stderr.String())
		}
		if line != want {
			return fmt.Errorf("said %q, want %q", line, want)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("no %q within %v", want, timeout)
	}
}

// finish reads the worker's report and waits for it to exit.
func (w *procWorker) finish(timeout time.Duration) (procReport, error) {
	var report procReport
	select {
	case line, ok := <-w.lines:
		if !ok {
			return report, fmt.Errorf("exited without a report: %s", w.stderr.String())
		}
		if err := json.Unmarshal([]byte(line), &report); err != nil {
			return report, fmt.Errorf("report: %w", err)
		}
	case <-time.After(timeout):
		return report, fmt.Errorf("no report within %v", timeout)
	}
	select {
	case <-w.done:
	case <-time.After(timeout):
		return report, fmt.Errorf("did not exit within %v", timeout)
	}
	if err := w.cmd.ProcessState; err != nil && !err.Success() {
		return report, fmt.Errorf("exited with %v: %s", err, w.stderr.String())
	}
	return report, nil
}

// procWorkerMain is a worker process's whole life (see
// BenchmarkContendedProcesses); it returns the exit code.
func procWorkerMain() int {
	if err := procWorkerRun(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func procWorkerRun(stdin io.Reader, stdout io.Writer) error {
	setup, ok := procLibs[os.Getenv(procWorkerEnv)]
	if !ok {
		return fmt.Errorf("%s=%q: no such library", procWorkerEnv, os.Getenv(procWorkerEnv))
	}
	hold, err := time.ParseDuration(os.Getenv(procHoldEnv))
	if err != nil {
		return err
	}
	set := &nodes{}
	for addr := range strings.SplitSeq(os.Getenv(procAddrsEnv), ",") {
		set.servers = append(set.servers, &server{addr: addr})
	}
	r, err := setup(set, os.Getenv(procNameEnv), hold)
	if err != nil {
		return err
	}
	closeRig := sync.OnceValue(r.close)
	defer closeRig()
	warm, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.warmUp(warm); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
		return err
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for go: %w", err)
	}
	at, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(line), "go "), 10, 64)
	if err != nil {
		return fmt.Errorf("go line %q: %w", line, err)
	}
	calls, trips, cpu := r.calls.n.Load(), r.calls.trips.Load(), processCPU()
	ctx, stop := context.WithDeadline(context.Background(), time.Unix(0, at))
	log := work(ctx, 0, r.lockers[0], hold)
	stop()
	if err := closeRig(); err != nil { // late releases finish before counting
		return fmt.Errorf("close: %w", err)
	}
	report := procReport{Cut: int64(log.cut), UnlockErrs: log.unlockErrs,
		Calls: r.calls.n.Load() - calls, Trips: r.calls.trips.Load() - trips, CPU: int64(processCPU() - cpu)}
	for _, s := range log.sections {
		report.Sections = append(report.Sections, [3]int64{s.asked.UnixNano(), s.granted.UnixNano(), s.released.UnixNano()})
	}
	if log.err != nil {
		report.Err = log.err.Error()
	}
	if log.unlockErr != nil {
		report.UnlockErr = log.unlockErr.Error()
	}
	if p, ok := r.lockers[0].(namePicker); ok {
		names := p.picked() // the warm-up's picks first, then one per section
		report.Names = names[len(names)-len(log.sections):]
	}
	out, err := json.Marshal(report)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

// TestMain runs a worker process of BenchmarkContendedProcesses when the
// environment names one, and the package's tests and benchmarks otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(procWorkerEnv) != "" {
		os.Exit(procWorkerMain())
	}
	os.Exit(m.Run())
}
