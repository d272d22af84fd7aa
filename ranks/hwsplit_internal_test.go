package ranks

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0", []int{0}, true},
		{"0-3", []int{0, 1, 2, 3}, true},
		{"0-1,8,10-11\n", []int{0, 1, 8, 10, 11}, true},
		{"0-6:3", []int{0, 3, 6}, true},
		{"", nil, false},
		{"3-1", nil, false},
		{"a", nil, false},
		{"0-4:0", nil, false},
	}
	for _, c := range cases {
		got, ok := parseCPUList(c.in)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// fakeSysfs writes a hardware description of 8 CPUs: one package; NUMA
// nodes 0-3 and 4-7; an L3 per NUMA node; cores (and their L2 and L1)
// of two hardware threads each, {0,1} {2,3} {4,5} {6,7}; an instruction
// cache shared by all, which must not count as L1. CPU 8 exists in no
// file: every level but the hardware thread is the whole node for it.
func fakeSysfs(t *testing.T) {
	t.Helper()
	root := t.TempDir()
	write := func(path, s string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for cpu := range 8 {
		d := "cpu/cpu" + strconv.Itoa(cpu)
		core := cpu &^ 1
		coreList := strconv.Itoa(core) + "-" + strconv.Itoa(core+1)
		l3 := "0-3"
		if cpu >= 4 {
			l3 = "4-7"
		}
		write(d+"/topology/package_cpus_list", "0-7")
		write(d+"/topology/core_cpus_list", coreList)
		for i, c := range []struct{ level, typ, list string }{
			{"1", "Data", coreList}, {"1", "Instruction", "0-7"}, {"2", "Unified", coreList}, {"3", "Unified", l3},
		} {
			x := d + "/cache/index" + strconv.Itoa(i)
			write(x+"/level", c.level)
			write(x+"/type", c.typ)
			write(x+"/shared_cpu_list", c.list)
		}
	}
	write("node/node0/cpulist", "0-3")
	write("node/node1/cpulist", "4-7")
	old := sysRoot
	sysRoot = root
	topo.reset()
	t.Cleanup(func() {
		sysRoot = old
		topo.reset()
	})
}

func TestResourcesOf(t *testing.T) {
	fakeSysfs(t)
	const W, M = wholeNode, -1
	cases := []struct {
		cpus []int
		want [numLevels]int // Machine, Package, NUMA, L3, L2, L1, Core, HWThread
	}{
		{[]int{0}, [numLevels]int{0, 0, 0, 0, 0, 0, 0, 0}},
		{[]int{5}, [numLevels]int{0, 0, 4, 4, 4, 4, 4, 5}},
		{[]int{0, 1}, [numLevels]int{0, 0, 0, 0, 0, 0, 0, M}},
		{[]int{2, 4}, [numLevels]int{0, 0, M, M, M, M, M, M}},
		{[]int{0, 3}, [numLevels]int{0, 0, 0, 0, M, M, M, M}},
		{[]int{8}, [numLevels]int{0, W, W, W, W, W, W, 8}},
		{[]int{0, 8}, [numLevels]int{0, M, M, M, M, M, M, M}},
		{nil, [numLevels]int{0, M, M, M, M, M, M, M}},
	}
	for _, c := range cases {
		if got := resourcesOf(c.cpus); got != c.want {
			t.Errorf("resourcesOf(%v) = %v; want %v", c.cpus, got, c.want)
		}
	}
}

// table builds SplitTypeInfo's table for members with these affinities
// (nil: Undefined), kind and level, with keys.
func table(affs [][]int, kind, level int, keys []int) []int64 {
	var out []int64
	for r, a := range affs {
		row := make([]int64, rowHead+numLevels)
		row[0], row[1], row[2] = int64(kind), int64(keys[r]), int64(level)
		if a == nil {
			row[0] = Undefined
		}
		for l, id := range resourcesOf(a) {
			row[rowHead+l] = int64(id)
		}
		out = append(out, row...)
	}
	return out
}

func TestPlanHWSplit(t *testing.T) {
	fakeSysfs(t)
	type part struct {
		members []int // nil: no communicator
		level   int
	}
	check := func(name string, tab []int64, want []part) {
		t.Helper()
		for me, w := range want {
			p, err := planHWSplit(tab, me, "SplitType")
			if err != nil {
				t.Errorf("%s: rank %d: %v", name, me, err)
				continue
			}
			if !slices.Equal(p.members, w.members) || (w.members != nil && p.level != w.level) {
				t.Errorf("%s: rank %d: members %v level %d; want %v level %d", name, me, p.members, p.level, w.members, w.level)
			}
		}
	}
	keys := []int{0, 0, 0, 0, 0}
	// Unguided: the NUMA nodes split the four ranks first.
	check("unguided", table([][]int{{0, 1}, {2, 3}, {4}, {5}}, TypeHWUnguided, lvAny, keys), []part{
		{[]int{0, 1}, lvNUMA}, {[]int{0, 1}, lvNUMA}, {[]int{2, 3}, lvNUMA}, {[]int{2, 3}, lvNUMA},
	})
	// Within NUMA node 0, the L3 does not divide; the L2 does.
	check("unguided in a node", table([][]int{{0, 1}, {2, 3}}, TypeHWUnguided, lvAny, keys), []part{
		{[]int{0}, lvL2}, {[]int{1}, lvL2},
	})
	// Two hardware threads of one core: only the threads divide.
	check("unguided in a core", table([][]int{{4}, {5}}, TypeHWUnguided, lvAny, keys), []part{
		{[]int{0}, lvHWThread}, {[]int{1}, lvHWThread},
	})
	// A rank on both nodes takes no part at the NUMA level.
	check("unguided unrestricted", table([][]int{{0, 5}, {1}, {2}, {6}}, TypeHWUnguided, lvAny, keys), []part{
		{nil, 0}, {[]int{1, 2}, lvNUMA}, {[]int{1, 2}, lvNUMA}, {[]int{3}, lvNUMA},
	})
	// Nothing divides ranks on the same CPU, nor unrestricted ones.
	check("unguided none", table([][]int{{3}, {3}}, TypeHWUnguided, lvAny, keys), []part{{nil, 0}, {nil, 0}})
	check("unguided unrestricted only", table([][]int{{0, 4}, {1, 5}}, TypeHWUnguided, lvAny, keys), []part{{nil, 0}, {nil, 0}})
	// Ranks on one CPU next to an unrestricted one: a strict subset.
	check("unguided beside unrestricted", table([][]int{{3}, {3}, {0, 1, 2, 3, 4, 5, 6, 7}}, TypeHWUnguided, lvAny, keys), []part{
		{[]int{0, 1}, lvNUMA}, {[]int{0, 1}, lvNUMA}, {nil, 0},
	})
	// Undefined ranks take no part: the others are divided among themselves.
	check("unguided undefined", table([][]int{{0}, nil, {1}}, TypeHWUnguided, lvAny, keys), []part{
		{[]int{0}, lvHWThread}, {nil, 0}, {[]int{2}, lvHWThread},
	})
	// Guided by core, ordered by key.
	check("guided core", table([][]int{{0}, {1}, {2, 3, 4}, {0, 1}, {6}}, TypeHWGuided, lvCore, []int{5, 4, 0, 3, 1}), []part{
		{[]int{3, 1, 0}, lvCore}, {[]int{3, 1, 0}, lvCore}, {nil, 0}, {[]int{3, 1, 0}, lvCore}, {[]int{4}, lvCore},
	})
	// Guided by the machine: everyone, restricted or not.
	check("guided machine", table([][]int{{0}, {0, 1, 2, 3, 4, 5, 6, 7}, {8}}, TypeHWGuided, lvMachine, keys), []part{
		{[]int{0, 1, 2}, lvMachine}, {[]int{0, 1, 2}, lvMachine}, {[]int{0, 1, 2}, lvMachine},
	})
	// Without the key, or with an unknown type: nil everywhere.
	for _, lv := range []int{lvNoKey, lvUnknown} {
		check("guided "+strconv.Itoa(lv), table([][]int{{0}, {1}}, TypeHWGuided, lv, keys), []part{{nil, 0}, {nil, 0}})
	}
	// Members that disagree all get ErrArg, the Undefined one too.
	tab := table([][]int{{0}, {1}, nil}, TypeHWGuided, lvCore, keys)
	tab[rowHead+numLevels+2] = lvL2
	for me := range 3 {
		if _, err := planHWSplit(tab, me, "SplitType"); !errors.Is(err, ErrArg) {
			t.Errorf("mismatched levels: rank %d: %v; want ErrArg", me, err)
		}
	}
	tab = table([][]int{{0}, {1}}, TypeHWGuided, lvCore, keys)
	tab[rowHead+numLevels] = TypeHWUnguided
	if _, err := planHWSplit(tab, 0, "SplitType"); !errors.Is(err, ErrArg) {
		t.Errorf("mismatched kinds: %v; want ErrArg", err)
	}
	if _, err := planHWSplit(table([][]int{{0}}, 77, lvAny, keys), 0, "SplitType"); !errors.Is(err, ErrArg) {
		t.Errorf("kind 77: %v; want ErrArg", err)
	}
}

func TestLevelOf(t *testing.T) {
	for name, want := range map[string]int{
		"hwthread": lvHWThread, "PU": lvHWThread, "core": lvCore, "L1Cache": lvL1, "l2cache": lvL2,
		"L3Cache": lvL3, "NUMANode": lvNUMA, "numa": lvNUMA, "Package": lvPackage, "socket": lvPackage,
		"Board": lvMachine, "Machine": lvMachine, "mpi_shared_memory": lvMachine, "GPU": lvUnknown,
	} {
		if got := levelOf(name); got != want {
			t.Errorf("levelOf(%q) = %d; want %d", name, got, want)
		}
	}
}
