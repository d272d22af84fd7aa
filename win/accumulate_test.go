package win_test

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

// accRounds is how many times each rank applies each op: odd, so that a
// Bxor or Lxor of one value leaves it set.
const accRounds = 25

// An accumulate op/type pair under contention: every rank applies step
// accRounds times to one element of rank 0's window, the pairs
// interleaved so that ranks race on every element; then rank 0 checks
// the element against the sequential result.
type accCase struct {
	name  string
	init  func(p unsafe.Pointer) // rank 0, before the epoch
	step  func(w *win.Win, rank, disp int) error
	check func(p unsafe.Pointer, n int) string // "" if right
}

type ordered interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func at[T any](p unsafe.Pointer) *T { return (*T)(p) }

func want[T comparable](p unsafe.Pointer, v T) string {
	if got := *at[T](p); got != v {
		return fmt.Sprintf("%v, want %v", got, v)
	}
	return ""
}

func numberCases[T ordered](typ string) []accCase {
	one := []T{1}
	return []accCase{
		{typ + "/Sum", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error { return win.Accumulate(w, one, 0, disp, coll.Sum[T]) },
			func(p unsafe.Pointer, n int) string { return want(p, T(n*accRounds)) }},
		{typ + "/Prod", func(p unsafe.Pointer) { *at[T](p) = 1 },
			func(w *win.Win, rank, disp int) error {
				// Rank 0 doubles it each round, the others multiply by 1.
				return win.Accumulate(w, []T{T(1 + boolInt(rank == 0))}, 0, disp, coll.Prod[T])
			},
			nil}, // set by the callers: prodCheck
		{typ + "/Min", func(p unsafe.Pointer) { *at[T](p) = 100 },
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{T(50 - rank)}, 0, disp, coll.Min[T])
			},
			func(p unsafe.Pointer, n int) string { return want(p, T(50-(n-1))) }},
		{typ + "/Max", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{T(10 + rank)}, 0, disp, coll.Max[T])
			},
			func(p unsafe.Pointer, n int) string { return want(p, T(10+n-1)) }},
		{typ + "/Replace", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{T(rank + 1)}, 0, disp, win.Replace[T])
			},
			func(p unsafe.Pointer, n int) string {
				if v := *at[T](p); v < 1 || v > T(n) {
					return fmt.Sprintf("%v, want one of the ranks' values 1..%d", v, n)
				}
				return ""
			}},
		{typ + "/NoOp", func(p unsafe.Pointer) { *at[T](p) = 42 },
			func(w *win.Win, rank, disp int) error {
				res := []T{0}
				if err := win.GetAccumulate(w, []T{7}, res, 0, disp, win.NoOp[T]); err != nil {
					return err
				}
				if res[0] != 42 {
					return fmt.Errorf("GetAccumulate with NoOp read %v, want 42", res[0])
				}
				return nil
			},
			func(p unsafe.Pointer, n int) string { return want(p, T(42)) }},
	}
}

// prodCheck: rank 0 multiplied by 2 accRounds times, the others by 1;
// in 8 and 16 bits the product wraps as the sequential one does.
func prodCheck[T ordered](p unsafe.Pointer, n int) string {
	v := T(1)
	for range accRounds {
		v *= 2
	}
	return want(p, v)
}

func integerCases[T integer](typ string) []accCase {
	cs := numberCases[T](typ)
	cs[1].check = prodCheck[T]
	return append(cs,
		accCase{typ + "/Band", func(p unsafe.Pointer) { *at[T](p) = ^T(0) },
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{^T(1 << rank)}, 0, disp, coll.Band[T])
			},
			func(p unsafe.Pointer, n int) string { return want(p, ^T(1<<n-1)) }},
		accCase{typ + "/Bor", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{T(1 << rank)}, 0, disp, coll.Bor[T])
			},
			func(p unsafe.Pointer, n int) string { return want(p, T(1<<n-1)) }},
		accCase{typ + "/Bxor", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []T{T(1 << rank)}, 0, disp, coll.Bxor[T])
			},
			func(p unsafe.Pointer, n int) string { return want(p, T(1<<n-1)) }},
	)
}

func floatCases[T ~float32 | ~float64](typ string) []accCase {
	cs := numberCases[T](typ)
	cs[1].check = prodCheck[T]
	return cs
}

func boolCases() []accCase {
	return []accCase{
		{"bool/Land", func(p unsafe.Pointer) { *at[bool](p) = true },
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []bool{rank != 0}, 0, disp, coll.Land)
			},
			func(p unsafe.Pointer, n int) string { return want(p, false) }},
		{"bool/Lor", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []bool{rank == 0}, 0, disp, coll.Lor)
			},
			func(p unsafe.Pointer, n int) string { return want(p, true) }},
		{"bool/Lxor", func(p unsafe.Pointer) {},
			func(w *win.Win, rank, disp int) error {
				return win.Accumulate(w, []bool{true}, 0, disp, coll.Lxor)
			},
			func(p unsafe.Pointer, n int) string { return want(p, n*accRounds%2 == 1) }},
	}
}

// Every op of coll, with Replace and NoOp, on every element type it
// supports, applied by every rank at once to the same elements: each
// element's update is atomic (nothing lost, nothing torn), under a
// shared lock of all targets, with ranks that sleep and ranks that spin.
func TestAccumulateEveryOpType(t *testing.T) {
	var cases []accCase
	cases = append(cases, integerCases[int8]("int8")...)
	cases = append(cases, integerCases[int16]("int16")...)
	cases = append(cases, integerCases[int32]("int32")...)
	cases = append(cases, integerCases[int64]("int64")...)
	cases = append(cases, integerCases[uint8]("uint8")...)
	cases = append(cases, integerCases[uint16]("uint16")...)
	cases = append(cases, integerCases[uint32]("uint32")...)
	cases = append(cases, integerCases[uint64]("uint64")...)
	cases = append(cases, floatCases[float32]("float32")...)
	cases = append(cases, floatCases[float64]("float64")...)
	cases = append(cases, boolCases()...)
	for _, cores := range []int{0, 4} {
		t.Run(fmt.Sprint("cores=", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				// One 8-byte slot per case in rank 0's part; unit 1: byte
				// displacements.
				w, err := win.AllocateShared(r.Comm, 8*len(cases)*boolInt(r.Rank == 0), 1)
				r.Check(err, "AllocateShared")
				part, _, err := w.SharedQuery(0)
				r.Check(err, "SharedQuery")
				if r.Rank == 0 {
					for i, c := range cases {
						c.init(unsafe.Pointer(&part[8*i]))
					}
				}
				r.Check(w.Fence(0), "fence")
				r.Check(w.LockAll(), "LockAll")
				for range accRounds {
					for i, c := range cases {
						if err := c.step(w, r.Rank, 8*i); err != nil {
							r.Fatalf("%s: %v", c.name, err)
						}
					}
				}
				r.Check(w.UnlockAll(), "UnlockAll")
				r.Check(w.Fence(0), "fence")
				if r.Rank == 0 {
					for i, c := range cases {
						if msg := c.check(unsafe.Pointer(&part[8*i]), r.Size); msg != "" {
							r.Errorf("%s: %s", c.name, msg)
						}
					}
				}
				r.Check(w.Free(), "free")
			})
		})
	}
}
