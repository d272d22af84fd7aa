package ranks_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// The model of the hardware these tests check SplitTypeInfo against,
// read from sysfs on its own: a CPU's resource at a level is the text of
// the file that lists the CPUs sharing it ("" where sysfs has none: the
// whole node).

var hwLevels = []string{"Machine", "Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "HWThread"}

func sysText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// inList reports whether cpu is in the kernel's CPU list s ("0-3,8").
func inList(s string, cpu int) bool {
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if ok {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 == nil && err2 == nil && a <= cpu && cpu <= b {
			return true
		}
	}
	return false
}

func modelResource(level string, cpu int) string {
	dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/", cpu)
	switch level {
	case "Machine":
		return "machine"
	case "HWThread":
		return strconv.Itoa(cpu)
	case "Core":
		return sysText(dir + "topology/core_cpus_list")
	case "Package":
		return sysText(dir + "topology/package_cpus_list")
	case "NUMANode":
		nodes, _ := filepath.Glob("/sys/devices/system/node/node*/cpulist")
		for _, n := range nodes {
			if inList(sysText(n), cpu) {
				return n
			}
		}
		return ""
	}
	want := strings.TrimSuffix(strings.TrimPrefix(level, "L"), "Cache")
	idx, _ := filepath.Glob(dir + "cache/index*")
	for _, d := range idx {
		if sysText(d+"/level") == want && sysText(d+"/type") != "Instruction" {
			return sysText(d + "/shared_cpu_list")
		}
	}
	return ""
}

// modelOf is the resource that all of cpus share at level, and whether
// they share one.
func modelOf(level string, cpus []int) (string, bool) {
	if len(cpus) == 0 {
		return "", false
	}
	first := modelResource(level, cpus[0])
	for _, c := range cpus[1:] {
		if modelResource(level, c) != first {
			return "", false
		}
	}
	return first, true
}

// modelSplit is what the world rank me gets from a split among
// members (world ranks, each with its CPUs in affs and its key -rank):
// its communicator's world ranks in key order, or nil.
func modelSplit(level string, me int, members []int, affs map[int][]int) []int {
	mine, ok := modelOf(level, affs[me])
	if !ok {
		return nil
	}
	var out []int
	for _, w := range members {
		if res, ok := modelOf(level, affs[w]); ok && res == mine {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] }) // key -rank
	return out
}

// modelUnguided is the level TypeHWUnguided picks among members, or "".
func modelUnguided(members []int, affs map[int][]int) string {
	for _, level := range hwLevels[1:] {
		count := map[string]int{}
		most := 0
		for _, w := range members {
			if res, ok := modelOf(level, affs[w]); ok {
				count[res]++
				most = max(most, count[res])
			}
		}
		if most > 0 && most < len(members) {
			return level
		}
	}
	return ""
}

func cpusOf(set *unix.CPUSet) []int {
	var out []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// pinProcess sets the affinity of every thread of this process to cpus,
// until no thread (new ones included) has another.
func pinProcess(r *ranktest.R, cpus []int) {
	var want unix.CPUSet
	for _, c := range cpus {
		want.Set(c)
	}
	for changed := true; changed; {
		changed = false
		ents, err := os.ReadDir("/proc/self/task")
		r.Check(err, "read /proc/self/task")
		for _, e := range ents {
			tid, _ := strconv.Atoi(e.Name())
			var cur unix.CPUSet
			if unix.SchedGetaffinity(tid, &cur) == nil && cur != want {
				unix.SchedSetaffinity(tid, &want) // a thread that ended meanwhile fails: no matter
				changed = true
			}
		}
	}
}

// allAffinities exchanges every rank's CPUs over the world.
func allAffinities(r *ranktest.R) map[int][]int {
	var set unix.CPUSet
	r.Check(unix.SchedGetaffinity(0, &set), "affinity")
	mine := set[:]
	out := map[int][]int{r.Rank: cpusOf(&set)}
	for p := range r.Size {
		if p == r.Rank {
			continue
		}
		var theirs unix.CPUSet
		_, err := ranks.Sendrecv(r.Comm, mine, p, 9, theirs[:], p, 9)
		r.Check(err, "exchange affinities")
		out[p] = cpusOf(&theirs)
	}
	return out
}

func worldRanks(r *ranktest.R, c *ranks.Comm) []int {
	if c == nil {
		return nil
	}
	g, err := c.Group()
	r.Check(err, "group")
	return g.WorldRanks()
}

func guided(level string) *ranks.Info {
	in := ranks.NewInfo()
	in.Set(ranks.HWResourceKey, level)
	return in
}

// checkHWSplits runs every kind of hardware split of the world and checks
// each against the model.
func checkHWSplits(r *ranktest.R) {
	affs := allAffinities(r)
	everyone := make([]int, r.Size)
	for i := range everyone {
		everyone[i] = i
	}
	r.Logf("affinity %v", affs[r.Rank])
	levels := append(slices.Clone(hwLevels), "mpi_shared_memory", "pu", "socket", "board")
	for _, name := range levels {
		c, err := r.Comm.SplitTypeInfo(ranks.TypeHWGuided, -r.Rank, guided(name))
		r.Check(err, "guided "+name)
		model := map[string]string{"mpi_shared_memory": "Machine", "pu": "HWThread", "socket": "Package", "board": "Machine"}[name]
		if model == "" {
			model = name
		}
		want := modelSplit(model, r.Rank, everyone, affs)
		if got := worldRanks(r, c); !slices.Equal(got, want) {
			r.Errorf("guided %s: %v; model %v", name, got, want)
		}
		if c != nil {
			crossCheck(r, []*ranks.Comm{c})
			r.Check(c.Free(), "free")
		}
	}
	c, err := r.Comm.SplitType(ranks.TypeShared, -r.Rank)
	r.Check(err, "shared")
	if got, want := worldRanks(r, c), modelSplit("Machine", r.Rank, everyone, affs); !slices.Equal(got, want) {
		r.Errorf("shared: %v; want %v", got, want)
	}
	r.Check(c.Free(), "free")

	// Unguided, again on each result until nothing divides.
	parent, members := r.Comm, everyone
	for depth := 0; parent != nil; depth++ {
		if depth > len(hwLevels) {
			r.Fatalf("unguided splits went on dividing past the hardware levels")
		}
		info := ranks.NewInfo()
		c, err := parent.SplitTypeInfo(ranks.TypeHWUnguided, -r.Rank, info)
		r.Check(err, "unguided")
		level := modelUnguided(members, affs)
		var want []int
		if level != "" {
			want = modelSplit(level, r.Rank, members, affs)
		}
		got := worldRanks(r, c)
		if !slices.Equal(got, want) {
			r.Errorf("unguided at depth %d: %v; model %v at %q", depth, got, want, level)
		}
		if v, _, _ := info.Get(ranks.HWResourceKey); c != nil && v != level {
			r.Errorf("unguided at depth %d: info says %q; model %q", depth, v, level)
		}
		if c != nil && len(got) >= len(members) {
			r.Errorf("unguided at depth %d: not a strict subset: %v of %v", depth, got, members)
		}
		if parent != r.Comm {
			r.Check(parent.Free(), "free")
		}
		parent, members = c, got
	}
}

// SplitTypeInfo with the hardware kinds, against the model, with ranks
// unpinned (every rank on every CPU), pinned by the launcher as shmrun
// pins them, and pinned by themselves to a mix of CPUs.
func TestSplitTypeHW(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ranktest.Options
		pin  bool
	}{
		{"unpinned", ranktest.Options{N: 2}, false},
		{"bound-2", ranktest.Options{N: 2, Bind: true}, false},
		{"bound-3", ranktest.Options{N: 3, Bind: true}, false},
		{"mixed-4", ranktest.Options{N: 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Quiet = true
			ranktest.RunOpts(t, tc.o, func(r *ranktest.R) {
				if tc.pin {
					// Rank 0 on every CPU, 1 and 2 on the last, 3 on the first.
					var set unix.CPUSet
					r.Check(unix.SchedGetaffinity(0, &set), "affinity")
					cpus := cpusOf(&set)
					switch r.Rank {
					case 1, 2:
						pinProcess(r, cpus[len(cpus)-1:])
					case 3:
						pinProcess(r, cpus[:1])
					}
				}
				checkHWSplits(r)
			})
		})
	}
}

// What every member must agree on, and the cases MPI 4.0 gives nil.
func TestSplitTypeHWArgs(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		w := r.Comm
		level := "L2Cache"
		if r.Rank == 0 {
			level = "Core"
		}
		if c, err := w.SplitTypeInfo(ranks.TypeHWGuided, 0, guided(level)); !errors.Is(err, ranks.ErrArg) || c != nil {
			r.Errorf("different resource types: %v %v; want ErrArg", c, err)
		}
		kind := ranks.TypeHWUnguided
		if r.Rank == 1 {
			kind = ranks.TypeShared
		}
		if c, err := w.SplitType(kind, 0); !errors.Is(err, ranks.ErrArg) || c != nil {
			r.Errorf("different kinds: %v %v; want ErrArg", c, err)
		}
		if c, err := w.SplitType(77, 0); !errors.Is(err, ranks.ErrArg) || c != nil {
			r.Errorf("kind 77: %v %v; want ErrArg", c, err)
		}
		// Split at one member, SplitType at the others: their rows differ.
		var err error
		if r.Rank == 2 {
			_, err = w.Split(0, 0)
		} else {
			_, err = w.SplitType(ranks.TypeShared, 0)
		}
		if !errors.Is(err, ranks.ErrArg) {
			r.Errorf("Split against SplitType: %v; want ErrArg", err)
		}
		// TypeShared and guided mpi_shared_memory are the same split.
		var c *ranks.Comm
		if r.Rank == 0 {
			c, err = w.SplitType(ranks.TypeShared, 0)
		} else {
			c, err = w.SplitTypeInfo(ranks.TypeHWGuided, 0, guided("MPI_SHARED_MEMORY"))
		}
		r.Check(err, "shared memory both ways")
		if c == nil || c.Size() != r.Size {
			r.Errorf("shared memory both ways: %v", c)
		} else {
			r.Check(c.Free(), "free")
		}
		for i, info := range []*ranks.Info{nil, ranks.NewInfo(), guided("GPU")} { // no info, no key, an unknown type
			if c, err := w.SplitTypeInfo(ranks.TypeHWGuided, 0, info); c != nil || err != nil {
				r.Errorf("guided, case %d: %v %v; want nil, nil", i, c, err)
			}
		}
		// Undefined at one member: nil there, the others split as usual.
		kind = ranks.TypeHWGuided
		if r.Rank == 1 {
			kind = ranks.Undefined
		}
		c, err = w.SplitTypeInfo(kind, 0, guided("Machine"))
		r.Check(err, "guided with an Undefined member")
		if got := worldRanks(r, c); r.Rank == 1 && got != nil || r.Rank != 1 && !slices.Equal(got, []int{0, 2}) {
			r.Errorf("guided with an Undefined member: %v", got)
		}
		if c != nil {
			r.Check(c.Free(), "free")
		}
		// The world still works.
		crossCheck(r, []*ranks.Comm{w})
	})
}
