// Package examplejob runs the Example functions of shmpi's packages as
// jobs of several ranks, so that go doc shows a program as its users
// write it (Init, the calls, Finalize) and go test checks what the ranks
// print against the example's Output comment.
//
// An example begins with
//
//	if startJob(4) {
//		return
//	}
//
// where the example file's startJob is Start. In the test process Start
// runs the test binary again as a job of 4 ranks (as shmrun -n 4 runs a
// program), prints the ranks' standard output in rank order, then a line
// for each rank that ended abnormally, and returns true. In a rank, the
// example file's init function has called Serve, which runs the example
// named by the launcher's environment and exits, before the testing
// framework starts: there Start returns false and the rest of the example
// runs as the rank's program.
package examplejob

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"sync"
	"time"

	"github.com/shmpi/shmpi/ranks/launch"
)

// envExample names the example a rank process runs (its function's full
// name, as runtime.FuncForPC gives it).
const envExample = "SHMPI_EXAMPLE"

// Deadline bounds a job: past it the ranks are killed and the output says
// which were still running and in which operation.
const Deadline = 60 * time.Second

// Serve runs the example this process was started for, if it is a rank of
// an example's job, and exits; otherwise it returns at once. Call it from
// an init function of the example file with every example that calls
// Start. os.Exit is safe here: the testing framework has not started.
func Serve(examples ...func()) {
	name, ok := os.LookupEnv(envExample)
	if !ok || !launch.IsRank() {
		return
	}
	for _, f := range examples {
		if funcName(reflect.ValueOf(f).Pointer()) == name {
			f()
			os.Exit(0)
		}
	}
	fmt.Fprintf(os.Stderr, "examplejob: %s is not among the examples given to Serve\n", name)
	os.Exit(2)
}

// Start runs the calling example as a job of n ranks and reports true, in
// the test process; in a rank of that job it reports false.
func Start(n int) bool {
	if launch.IsRank() {
		return false
	}
	pc, _, _, _ := runtime.Caller(1)
	name := funcName(pc)
	exe, err := os.Executable()
	if err != nil {
		fmt.Println("examplejob:", err)
		return true
	}
	outs := make([]lockedBuffer, n)
	errs := make([]lockedBuffer, n)
	job, err := launch.Start(launch.Config{
		N:    n,
		Path: exe,
		Env:  append(os.Environ(), envExample+"="+name),
		Output: func(r int) (io.Writer, io.Writer) {
			return &outs[r], &errs[r]
		},
	})
	if err != nil {
		fmt.Println("examplejob:", err)
		return true
	}
	exits, ok := job.WaitTimeout(Deadline)
	if !ok {
		fates := job.Unfinished()
		job.Kill()
		job.Wait()
		fmt.Printf("examplejob: %s: deadline of %v passed; ranks not done:\n", name, Deadline)
		for _, f := range fates {
			fmt.Printf("  %v\n", f)
		}
		return true
	}
	for r := range outs {
		os.Stdout.Write(outs[r].Bytes())
	}
	for _, x := range exits {
		if x.Abnormal() {
			fmt.Printf("rank %d %s\n", x.Rank, x.How())
			os.Stdout.Write(errs[x.Rank].Bytes())
		}
	}
	return true
}

func funcName(pc uintptr) string {
	if f := runtime.FuncForPC(pc); f != nil {
		return f.Name()
	}
	return ""
}

// lockedBuffer is a rank's output, written by the launcher's copier and
// read once the job has ended.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Bytes()
}
