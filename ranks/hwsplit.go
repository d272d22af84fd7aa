package ranks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// SplitType's kinds (MPI_COMM_TYPE_*).
const (
	// TypeShared: ranks that can share memory, which on one node is
	// every rank.
	TypeShared = 1
	// TypeHWUnguided: the largest pieces of hardware that split the
	// communicator's ranks into strict subsets (MPI 4.0).
	TypeHWUnguided = 2
	// TypeHWGuided: ranks that share one resource of the type that the
	// info key HWResourceKey names (MPI 4.0).
	TypeHWGuided = 3
)

// HWResourceKey is the info key that names TypeHWGuided's resource type,
// and that SplitTypeInfo sets, for TypeHWUnguided, to the type it chose.
const HWResourceKey = "mpi_hw_resource_type"

// Levels of the hardware, from the whole machine down to one hardware
// thread, in the order TypeHWUnguided tries them. The names are what
// TypeHWUnguided reports; TypeHWGuided also accepts the aliases in
// levelAliases, in any case.
const (
	lvMachine = iota
	lvPackage
	lvNUMA
	lvL3
	lvL2
	lvL1
	lvCore
	lvHWThread
	numLevels

	lvNoKey   = -1 // TypeHWGuided without the info key
	lvUnknown = -2 // TypeHWGuided naming a type not known here
	lvAny     = -3 // TypeHWUnguided: the split chooses
)

var levelNames = [numLevels]string{"Machine", "Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "HWThread"}

var levelAliases = map[string]int{
	"mpi_shared_memory": lvMachine, // MPI 4.0: TypeShared's equivalent
	"board":             lvMachine,
	"host":              lvMachine,
	"node":              lvMachine,
	"socket":            lvPackage,
	"numa":              lvNUMA,
	"l3":                lvL3,
	"l2":                lvL2,
	"l1":                lvL1,
	"pu":                lvHWThread, // hwloc's name
}

// levelOf parses a resource type name.
func levelOf(name string) int {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), HWResourcePrefix)
	for l, s := range levelNames {
		if strings.ToLower(s) == n {
			return l
		}
	}
	if l, ok := levelAliases[n]; ok {
		return l
	}
	return lvUnknown
}

// SplitType splits c by kind with no hints: SplitTypeInfo(kind, key, nil).
func (c *Comm) SplitType(kind, key int) (*Comm, error) { return c.SplitTypeInfo(kind, key, nil) }

// SplitTypeInfo splits c by kind (MPI_Comm_split_type); within each new
// communicator ranks are ordered by key, then by their rank in c. It is
// collective over c; a rank that passes Undefined as the kind gets nil.
//
//   - TypeShared: one communicator of every rank of a node (they share
//     memory; across node agents, one per node).
//   - TypeHWGuided: ranks that share one resource of the type
//     info[HWResourceKey] names: "HWThread" (or "PU"), "Core",
//     "L1Cache", "L2Cache", "L3Cache", "NUMANode", "Package" (or
//     "socket"), "Machine" (or "Board", or "mpi_shared_memory", which is
//     TypeShared), in any case. A rank whose CPU affinity spans more than
//     one resource of the type gets nil, as does every rank if info or
//     the key is missing or names an unknown type.
//   - TypeHWUnguided: the first level of Package, NUMANode, L3Cache,
//     L2Cache, L1Cache, Core, HWThread at which the ranks that take part
//     fall into strict subsets; ranks not restricted to one resource of
//     that level, and every rank if there is no such level, get nil. For
//     a rank that gets a communicator, the level's name is set in info
//     (if not nil) under HWResourceKey.
//
// The hardware is what sysfs describes (caches' shared_cpu_list, cores'
// and packages' CPU lists, NUMA nodes' cpulist) and a rank's resources
// are those its CPU affinity allows (every thread of the process); where
// sysfs says nothing about a level, its one resource is the whole node.
// Every member must pass the same kind and resource type (or Undefined);
// if they do not, every member gets ErrArg.
func (c *Comm) SplitTypeInfo(kind, key int, info *Info) (*Comm, error) {
	const op = "SplitType"
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if c.inter != nil {
		return nil, newErr(ErrComm, op, -1, "an intercommunicator")
	}
	level := lvAny
	switch kind {
	case TypeShared:
		kind, level = TypeHWGuided, lvMachine
	case TypeHWGuided:
		level = lvNoKey
		if v, ok := info.lookup(HWResourceKey); ok {
			level = levelOf(v)
		}
	}
	row := make([]int64, rowHead+numLevels)
	row[0], row[1], row[2] = int64(kind), int64(key), int64(level)
	// A resource is named by its node (the node's first world rank: 0 on
	// one node) and its number there, so that ranks of different nodes
	// never share one.
	node := int64(c.e.lay.First) << 32
	if (kind == TypeHWGuided || kind == TypeHWUnguided) && level != lvMachine {
		for l, id := range resourcesOf(affinity()) {
			if id >= 0 {
				row[rowHead+l] = node | int64(id)
			} else {
				row[rowHead+l] = -1
			}
		}
	}
	// Every rank of a node runs on its machine: no need to read the
	// hardware.
	row[rowHead+lvMachine] = node
	var nc *Comm
	var err error
	c.inOrder(func() {
		var table []int64
		table, err = c.splitTable(row, op)
		if err != nil {
			return
		}
		var plan hwPlan
		plan, err = planHWSplit(table, c.rank, op)
		if err != nil || plan.members == nil {
			return
		}
		nc, err = c.createAfterTable(plan.members, tagCreate, op)
		if err == nil && kind == TypeHWUnguided && info != nil {
			err = info.Set(HWResourceKey, levelNames[plan.level])
		}
	})
	return nc, err
}

// A member's row in SplitTypeInfo's table: kind, key, level, then its
// resource at each level (resourcesOf).
const rowHead = 3

// hwPlan is a member's part of a split: the members of its new
// communicator (nil: none) and the level they share.
type hwPlan struct {
	members []int
	level   int
}

// planHWSplit decides, from every member's row, the part of member me:
// the same decision at every member, since they all have the table.
func planHWSplit(table []int64, me int, op string) (hwPlan, error) {
	const w = rowHead + numLevels
	n := len(table) / w
	row := func(r int) []int64 { return table[w*r : w*r+w] }
	first := -1
	for r := range n {
		if row(r)[0] == Undefined {
			continue
		}
		if first < 0 {
			first = r
			continue
		}
		if row(r)[0] != row(first)[0] || row(r)[2] != row(first)[2] {
			return hwPlan{}, newErr(ErrArg, op, -1, "ranks %d and %d passed different split types or resource types", first, r)
		}
	}
	mine := row(me)
	kind, level := mine[0], int(mine[2])
	switch {
	case kind == Undefined:
		return hwPlan{}, nil
	case kind != TypeHWGuided && kind != TypeHWUnguided:
		return hwPlan{}, newErr(ErrArg, op, -1, "split type %d", kind)
	case level == lvNoKey || level == lvUnknown:
		return hwPlan{}, nil // MPI 4.0: nil for every rank
	}
	taking := func(r int) bool { return row(r)[0] != Undefined }
	id := func(r, l int) int64 { return row(r)[rowHead+l] }
	if level == lvAny {
		level = -1
		for l := lvPackage; l < numLevels && level < 0; l++ {
			count := map[int64]int{}
			most, parts := 0, 0
			for r := range n {
				if !taking(r) {
					continue
				}
				parts++
				if x := id(r, l); x >= 0 {
					count[x]++
					most = max(most, count[x])
				}
			}
			if most > 0 && most < parts {
				level = l
			}
		}
		if level < 0 {
			return hwPlan{}, nil // no level divides the ranks
		}
	}
	my := id(me, level)
	if my < 0 {
		return hwPlan{}, nil // not restricted to one resource of the level
	}
	return hwPlan{members: byKey(table, w, func(r int) bool { return taking(r) && id(r, level) == my }), level: level}, nil
}

// affinity lists the CPUs this process may run on: the union of its
// threads' affinities (a launcher pins the process, so all have the
// same; hwloc also reads a process's binding this way).
func affinity() []int {
	var all unix.CPUSet
	ok := false
	if ents, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, ent := range ents {
			tid, err := strconv.Atoi(ent.Name())
			if err != nil {
				continue
			}
			var s unix.CPUSet
			if unix.SchedGetaffinity(tid, &s) == nil {
				for i := range all {
					all[i] |= s[i]
				}
				ok = true
			}
		}
	}
	if !ok && unix.SchedGetaffinity(0, &all) != nil {
		return nil
	}
	var cpus []int
	for cpu := range len(all) * 64 {
		if all.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// resourcesOf is, for each level, the resource that all of cpus belong
// to, or -1 if they span several (or cpus is empty).
func resourcesOf(cpus []int) [numLevels]int {
	var out [numLevels]int
	for l := range out {
		out[l] = -1
	}
	for i, cpu := range cpus {
		r := topo.of(cpu)
		for l := range out {
			switch {
			case i == 0:
				out[l] = r[l]
			case out[l] != r[l]:
				out[l] = -1
			}
		}
	}
	out[lvMachine] = 0
	return out
}

// sysRoot is where the hardware description is read (a variable for
// tests, which point it at a tree of their own and reset topo).
var sysRoot = "/sys/devices/system"

// wholeNode is the resource of a CPU at a level sysfs says nothing about:
// one resource, the whole node.
const wholeNode = 1 << 30

// cpuResources is a CPU's resource at each level, named by the lowest
// CPU in it (wholeNode where sysfs says nothing).
type cpuResources [numLevels]int

// topo is this process's reading of sysfs, made CPU by CPU as needed and
// kept: the hardware does not change under a job.
var topo hwTopo

type hwTopo struct {
	mu   sync.Mutex
	cpus map[int]cpuResources
	numa map[int]int // CPU -> lowest CPU of its NUMA node; nil until read
}

func (t *hwTopo) reset() {
	t.mu.Lock()
	t.cpus, t.numa = nil, nil
	t.mu.Unlock()
}

func (t *hwTopo) of(cpu int) cpuResources {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.cpus[cpu]; ok {
		return r
	}
	if t.numa == nil {
		t.numa = readNUMA()
	}
	dir := filepath.Join(sysRoot, "cpu", "cpu"+strconv.Itoa(cpu))
	var r cpuResources
	r[lvMachine] = 0
	r[lvHWThread] = cpu
	r[lvPackage] = firstList(dir, "topology/package_cpus_list", "topology/core_siblings_list")
	r[lvCore] = firstList(dir, "topology/core_cpus_list", "topology/thread_siblings_list")
	r[lvNUMA] = wholeNode
	if n, ok := t.numa[cpu]; ok {
		r[lvNUMA] = n
	}
	r[lvL1], r[lvL2], r[lvL3] = wholeNode, wholeNode, wholeNode
	idx, _ := filepath.Glob(filepath.Join(dir, "cache", "index*"))
	for _, d := range idx {
		if readString(filepath.Join(d, "type")) == "Instruction" {
			continue
		}
		lv := 0
		switch readString(filepath.Join(d, "level")) {
		case "1":
			lv = lvL1
		case "2":
			lv = lvL2
		case "3":
			lv = lvL3
		default:
			continue
		}
		if low, ok := lowestOf(readString(filepath.Join(d, "shared_cpu_list"))); ok {
			r[lv] = low
		}
	}
	if t.cpus == nil {
		t.cpus = map[int]cpuResources{}
	}
	t.cpus[cpu] = r
	return r
}

// readNUMA maps every CPU of a NUMA node to the node's lowest CPU.
func readNUMA() map[int]int {
	out := map[int]int{}
	nodes, _ := filepath.Glob(filepath.Join(sysRoot, "node", "node[0-9]*"))
	for _, d := range nodes {
		cpus, ok := parseCPUList(readString(filepath.Join(d, "cpulist")))
		if !ok || len(cpus) == 0 {
			continue
		}
		low := cpus[0]
		for _, c := range cpus {
			low = min(low, c)
		}
		for _, c := range cpus {
			out[c] = low
		}
	}
	return out
}

// firstList is the lowest CPU of the first of the CPU-list files under
// dir that can be read, or wholeNode.
func firstList(dir string, names ...string) int {
	for _, n := range names {
		if low, ok := lowestOf(readString(filepath.Join(dir, n))); ok {
			return low
		}
	}
	return wholeNode
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func lowestOf(list string) (int, bool) {
	cpus, ok := parseCPUList(list)
	if !ok || len(cpus) == 0 {
		return 0, false
	}
	low := cpus[0]
	for _, c := range cpus {
		low = min(low, c)
	}
	return low, true
}

// parseCPUList parses the kernel's CPU list format: "0-3,8,10-15:2".
func parseCPUList(s string) ([]int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, false
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		rng, stride := part, 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			st, err := strconv.Atoi(part[i+1:])
			if err != nil || st <= 0 {
				return nil, false
			}
			rng, stride = part[:i], st
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, false
			}
		}
		for c := a; c <= b; c += stride {
			out = append(out, c)
		}
	}
	return out, true
}
