package ranks

// HWResourcePrefix begins the names HWResourceInfo gives resource types:
// hwloc's type names as URIs ("hwloc://NUMANode"), as MPI 5.0 shows them
// and Open MPI reports them. TypeHWGuided takes these names too.
const HWResourcePrefix = "hwloc://"

// hwlocNames are the levels' names in hwloc's spelling.
var hwlocNames = [numLevels]string{"Machine", "Package", "NUMANode", "L3Cache", "L2Cache", "L1Cache", "Core", "PU"}

// HWResourceInfo describes the hardware this process may run on
// (MPI_Get_hw_resource_info): for each resource type that TypeHWGuided
// splits by, from the whole machine down to one hardware thread, the key
// HWResourcePrefix+name with "true" if the process's CPU affinity lies
// within one resource of that type, "false" if it spans several. A
// "true" type is one for which TypeHWGuided gives this process a
// communicator. It reads the affinity at the call (it may change) and
// the same sysfs description as SplitTypeInfo.
func HWResourceInfo() *Info {
	in := NewInfo()
	res := resourcesOf(affinity())
	for l, name := range hwlocNames {
		v := "false"
		if res[l] >= 0 {
			v = "true"
		}
		in.Set(HWResourcePrefix+name, v)
	}
	return in
}
