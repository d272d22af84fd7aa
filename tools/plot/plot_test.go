package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValueJSON(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Value
		wantErr bool
	}{
		{`12.5`, Value{12.5, 12.5, true}, false},
		{`[59, 64]`, Value{59, 64, true}, false},
		{`null`, Value{}, false},
		{`[64, 59]`, Value{}, true},
		{`[1, 2, 3]`, Value{}, true},
		{`"12"`, Value{}, true},
	} {
		var v Value
		err := json.Unmarshal([]byte(c.in), &v)
		if (err != nil) != c.wantErr || err == nil && v != c.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", c.in, v, err, c.want, c.wantErr)
		}
	}
}

// The charts committed in docs/figures are what the figures next to them
// give: change a figure file and this fails until the charts are drawn
// again (go run . -o ../../docs/figures ../../docs/figures/*.json).
func TestCommittedChartsAreCurrent(t *testing.T) {
	files, err := filepath.Glob("../../docs/figures/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no figure files: %v", err)
	}
	dir := t.TempDir()
	written, err := run(dir, "svg", files)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 3 {
		t.Errorf("wrote %v, want p2p, coll and ulfm", written)
	}
	for _, w := range written {
		got, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("../../docs/figures", filepath.Base(w)))
		if err != nil {
			t.Errorf("%s is not committed: %v", filepath.Base(w), err)
			continue
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("docs/figures/%s differs from what its figures give: draw it again", filepath.Base(w))
		}
	}
}

// The charts say what they compare and where the figures come from.
func TestChartsNameTheirSources(t *testing.T) {
	files, _ := filepath.Glob("../../docs/figures/*.json")
	dir := t.TempDir()
	if _, err := run(dir, "svg", files); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"p2p.svg":  {"One-way latency", "Open MPI 4.1.4 (dashed)", "ROUNDS=7 benchmarks/latency_report.sh", "2026-11-25"},
		"coll.svg": {"barrier", "allreduce 1 MiB", "ranks (on 2 cores)", "coll_report.sh"},
		"ulfm.svg": {"agree", "Open MPI 5.0.7 (ULFM) (dashed)", "2026-11-24"},
	} {
		svg, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(svg), w) {
				t.Errorf("%s: no %q", name, w)
			}
		}
	}
}

// A file of benchmarks/all.sh, from a machine without the system MPI:
// every report is read, the charts have no comparison, and the recovery
// is drawn by phase.
func TestAllFileWithoutMPI(t *testing.T) {
	all := `{"date": "2026-11-26T10:00:00Z", "quick": true, "reports": {
"foundation": {"report": "foundation", "date": "2026-11-26T10:00:00Z", "command": "benchmarks/report.sh -json", "system_mpi": null},
"latency": {"report": "latency", "date": "2026-11-26T10:00:01Z", "command": "benchmarks/latency_report.sh -json", "system_mpi": null,
  "host": {"cpu": "test", "cpus": 4},
  "summary": [{"kind": "ours_default", "placement": "near", "runs": 3, "handoff_ns": 30, "lat8_ns": 150, "lat1k_ns": 300, "lat8k_ns": 1500}],
  "small_messages": [{"kind": "ours_bw", "size": 1, "value": 10}, {"kind": "ours_bw", "size": 2, "value": 21}]},
"ulfm": {"report": "ulfm", "date": "2026-11-26T10:00:02Z", "command": "benchmarks/ulfm_report.sh -json", "system_mpi": null,
  "host": {"cpu": "test", "cpus": 4},
  "summary": [
   {"ranks": 2, "agree_us": 0.2, "barrier_us": 0.15, "shrink_us": 1.5, "dup_us": 1.7, "revoke_us": 30, "futex_floor_us": 40,
    "recovery_error_us": 90, "recovery_revoke_us": 10, "recovery_agree_us": 12, "recovery_shrink_us": 30, "recovery_allreduce_us": 1, "recovery_total_us": 150},
   {"ranks": 8, "agree_us": 12, "barrier_us": 11, "shrink_us": 20, "dup_us": 30, "revoke_us": 45, "futex_floor_us": 55,
    "recovery_error_us": 400, "recovery_revoke_us": 15, "recovery_agree_us": 200, "recovery_shrink_us": 150, "recovery_allreduce_us": 300, "recovery_total_us": 1100}]}
}}`
	dir := t.TempDir()
	path := filepath.Join(dir, "all.json")
	if err := os.WriteFile(path, []byte(all), 0o644); err != nil {
		t.Fatal(err)
	}
	written, err := run(dir, "svg", []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 {
		t.Fatalf("wrote %v, want p2p.svg and ulfm.svg", written)
	}
	p2p, _ := os.ReadFile(filepath.Join(dir, "p2p.svg"))
	if strings.Contains(string(p2p), "(dashed)") {
		t.Errorf("p2p.svg has a comparison, but the report has no system MPI")
	}
	ulfm, _ := os.ReadFile(filepath.Join(dir, "ulfm.svg"))
	for _, w := range []string{"by phase", "first allreduce", "futex wake of the sleepers (dotted)", "ranks (on 4 cores)"} {
		if !strings.Contains(string(ulfm), w) {
			t.Errorf("ulfm.svg: no %q", w)
		}
	}
}

func TestRejectsWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty.json":   `{}`,
		"unknown.json": `{"report": "nonsense"}`,
		"broken.json":  `{"report": `,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := run(dir, "svg", []string{path}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
