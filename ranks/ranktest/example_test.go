package ranktest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// A test of four ranks in which rank 3 is killed with SIGKILL at a named
// point: the survivors see ErrProcFailed, shrink the world to
// themselves and go on. RunOpts fails the test if a survivor reports an
// error, if a rank other than 3 fails, if rank 3 does not, or if the job
// outlives its deadline.
func ExampleRunOpts() {
	t := testingT() // in a test function, its *testing.T
	ranktest.RunOpts(t, ranktest.Options{
		N:    4,
		Kill: &ranktest.KillAt{Rank: 3, Point: "before-sum", How: ranktest.SIGKILL},
	}, func(r *ranktest.R) {
		r.Point("before-sum") // rank 3 dies here
		_, err := coll.AllreduceValue(r.Comm, 1, coll.Sum[int])
		if !errors.Is(err, ranks.ErrProcFailed) {
			r.Fatalf("allreduce with a dead member: %v, want ErrProcFailed", err)
		}
		survivors, err := ulfm.Shrink(r.Comm)
		r.Check(err, "shrink")
		sum, err := coll.AllreduceValue(survivors, 1, coll.Sum[int])
		r.Check(err, "allreduce among the survivors")
		if sum != 3 {
			r.Errorf("sum over the survivors %d, want 3", sum)
		}
	})
	fmt.Println("test failed:", t.Failed())
	// Output:
	// test failed: false
}

// testingT returns a stand-in for a test's *testing.T: RunOpts takes a
// testing.TB, and an Example function has none. Its Name is the calling
// example's, which ranktest passes to the rank processes as -test.run so
// that they run this example; what a test would report it prints, so
// that the example's output shows it.
func testingT() *exampleT {
	pc, _, _, _ := runtime.Caller(1)
	name := runtime.FuncForPC(pc).Name()
	return &exampleT{name: name[strings.LastIndexByte(name, '.')+1:]}
}

type exampleT struct {
	testing.TB // nil: RunOpts calls only the methods below
	name       string
	failed     bool
}

func (t *exampleT) Name() string { return t.name }
func (t *exampleT) Helper()      {}
func (t *exampleT) Failed() bool { return t.failed }

func (t *exampleT) Errorf(format string, args ...any) {
	t.failed = true
	fmt.Printf(format+"\n", args...)
}

func (t *exampleT) Error(args ...any) {
	t.failed = true
	fmt.Println(args...)
}

func (t *exampleT) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic("ranktest example: " + t.name + " failed")
}

func (t *exampleT) Fatal(args ...any) {
	t.Error(args...)
	panic("ranktest example: " + t.name + " failed")
}

// Logf shows the ranks' output when the test failed (RunOpts logs it
// then), and nothing otherwise, as go test without -v.
func (t *exampleT) Logf(format string, args ...any) {
	if t.failed {
		fmt.Printf(format+"\n", args...)
	}
}

func (t *exampleT) Log(args ...any) {
	if t.failed {
		fmt.Println(args...)
	}
}
