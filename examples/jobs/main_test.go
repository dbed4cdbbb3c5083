package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/quorumlock/redlock/examples/internal/localpg"
	"github.com/quorumlock/redlock/redlocktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		main() // a worker process of a test: this binary stands in for the command
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// database is a throwaway PostgreSQL with the job table of n jobs.
func database(t *testing.T, n int) (string, *pgx.Conn) {
	t.Helper()
	if _, err := localpg.Bin(); err != nil {
		if os.Getenv(redlocktest.RequireRedisEnv) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	pg, err := localpg.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Stop)
	ctx := context.Background()
	db, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(ctx) })
	if err := setUp(ctx, db, n); err != nil {
		t.Fatal(err)
	}
	return pg.DSN(), db
}

func TestRun_claimsEveryJobOnce(t *testing.T) {
	nodes := redlocktest.Start(t, 3)
	dsn, db := database(t, 12)
	w := worker{nodes: nodes.URLs(), dsn: dsn, ttl: 2 * time.Second, work: 5 * time.Millisecond, fenced: true}
	if err := run(w, strings.Join(w.nodes, ","), 4, 12); err != nil {
		t.Fatal(err)
	}
	r, err := readReport(context.Background(), db)
	if err != nil || r.done != 12 || r.duplicated != 0 {
		t.Fatalf("%v (%v): want all 12 jobs done once", r, err)
	}
}

// pausedPastItsLease runs worker A, stops it (SIGSTOP) as it works on its
// first job, lets its lease expire, runs worker B to the end, then resumes
// A, which writes its job's result. It returns the table's report and A's
// output after the resume.
func pausedPastItsLease(t *testing.T, fenced bool) (report, string) {
	nodes := redlocktest.Start(t, 3)
	dsn, db := database(t, 3)
	base := worker{nodes: nodes.URLs(), dsn: dsn, fenced: fenced}
	a := base
	a.name, a.ttl, a.work, a.sections = "A", 500*time.Millisecond, 2*time.Second, 1
	procA, out := startWorker(t, a)
	if line, _ := out.ReadString('\n'); !strings.HasPrefix(line, "A claimed job 1") {
		t.Fatalf("A said %q, want its claim of job 1", line)
	}
	if err := procA.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(a.ttl + 500*time.Millisecond) // A's lease ends on the nodes
	b := base
	b.name, b.ttl, b.work = "B", 2*time.Second, 10*time.Millisecond
	procB, outB := startWorker(t, b)
	rest, _ := readAll(outB)
	if err := procB.Wait(); err != nil {
		t.Fatalf("B: %v\n%s", err, rest)
	}
	if err := procA.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	afterResume, _ := readAll(out)
	if err := procA.Wait(); err != nil {
		t.Fatalf("A: %v\n%s", err, afterResume)
	}
	r, err := readReport(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return r, afterResume
}

func TestPause_aStaleWriteIsRefusedByTheDatabase(t *testing.T) {
	r, a := pausedPastItsLease(t, true)
	if r.done != 3 || r.duplicated != 0 || !strings.Contains(a, "stale fencing token") {
		t.Fatalf("with fencing: %v; A after its pause said %q: want every job done once, A's write refused", r, a)
	}
}

func TestPause_withoutFencingTheStaleWriteLands(t *testing.T) {
	r, a := pausedPastItsLease(t, false)
	if r.duplicated < 1 || !strings.Contains(a, "A finished job 1") {
		t.Fatalf("control, no fencing: %v; A after its pause said %q: want job 1 done twice", r, a)
	}
}

// startWorker runs w as a worker process and returns it and its output.
func startWorker(t *testing.T, w worker) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, w.args()...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(stdout)
}

// readAll reads r to its end (the process's exit).
func readAll(r *bufio.Reader) (string, error) {
	b, err := io.ReadAll(r)
	return string(b), err
}
