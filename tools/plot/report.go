package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Value is one figure: a number, a range [lo, hi] (a table that gives
// the spread of several runs' medians rather than one), or null (not
// measured).
type Value struct {
	Lo, Hi float64
	OK     bool
}

// Mid is the value, or the middle of its range.
func (v Value) Mid() float64 { return (v.Lo + v.Hi) / 2 }

// IsRange reports whether v is a range of more than one value.
func (v Value) IsRange() bool { return v.OK && v.Lo != v.Hi }

func (v *Value) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*v = Value{}
		return nil
	case len(b) > 0 && b[0] == '[':
		var r []float64
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if len(r) != 2 || r[0] > r[1] {
			return fmt.Errorf("a range is [lo, hi], got %s", b)
		}
		*v = Value{Lo: r[0], Hi: r[1], OK: true}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*v = Value{Lo: f, Hi: f, OK: true}
	return nil
}

// Envelope is what every report starts with (benchmarks/lib.sh).
type Envelope struct {
	Report    string `json:"report"`
	Date      string `json:"date"`
	Command   string `json:"command"`
	SystemMPI string `json:"system_mpi"`
	Host      struct {
		CPU  string `json:"cpu"`
		CPUs int    `json:"cpus"`
	} `json:"host"`
	// Source says where figures come from when they were not written by
	// a report (docs/figures: the tables of docs/performance.md).
	Source string `json:"source"`
}

// Latency is latency_report.sh's output.
type Latency struct {
	Envelope
	Summary []struct {
		Kind      string `json:"kind"`
		Placement string `json:"placement"`
		Runs      int    `json:"runs"`
		Handoff   Value  `json:"handoff_ns"`
		Lat8      Value  `json:"lat8_ns"`
		Lat1k     Value  `json:"lat1k_ns"`
		Lat8k     Value  `json:"lat8k_ns"`
	} `json:"summary"`
	SmallMessages []struct {
		Kind  string `json:"kind"`
		Size  int    `json:"size"`
		Value Value  `json:"value"`
	} `json:"small_messages"`
}

// Coll is coll_report.sh's output.
type Coll struct {
	Envelope
	Summary []struct {
		Ranks int    `json:"ranks"`
		What  string `json:"what"`
		Shmpi Value  `json:"shmpi_us"`
		OMPI  Value  `json:"ompi_us"`
	} `json:"summary"`
}

// ULFMFigures are one job size's figures of ulfm_report.sh, or of Open
// MPI 5 (ULFM) where a figure file records them.
type ULFMFigures struct {
	Agree             Value `json:"agree_us"`
	Barrier           Value `json:"barrier_us"`
	Shrink            Value `json:"shrink_us"`
	Dup               Value `json:"dup_us"`
	Revoke            Value `json:"revoke_us"`
	FutexFloor        Value `json:"futex_floor_us"`
	RecoveryError     Value `json:"recovery_error_us"`
	RecoveryRevoke    Value `json:"recovery_revoke_us"`
	RecoveryAgree     Value `json:"recovery_agree_us"`
	RecoveryShrink    Value `json:"recovery_shrink_us"`
	RecoveryAllreduce Value `json:"recovery_allreduce_us"`
	RecoveryTotal     Value `json:"recovery_total_us"`
}

// ULFM is ulfm_report.sh's output.
type ULFM struct {
	Envelope
	OMPIName string `json:"ompi_name"` // which Open MPI the "ompi" figures are
	Summary  []struct {
		Ranks int `json:"ranks"`
		ULFMFigures
		OMPI *ULFMFigures `json:"ompi"`
	} `json:"summary"`
}

// Footprint is footprint_report.sh's output.
type Footprint struct {
	Envelope
	Rows []struct {
		Ranks         int   `json:"ranks"`
		Segment       Value `json:"segment_KiB"`
		SegmentByRank Value `json:"segment_per_rank_KiB"`
		RSS           Value `json:"rss_KiB"`
		PSS           Value `json:"pss_KiB"`
	} `json:"rows"`
}

// Reports are the reports read, by kind; a later file's report of a kind
// replaces an earlier one's.
type Reports struct {
	Latency   *Latency
	Coll      *Coll
	ULFM      *ULFM
	Footprint *Footprint
}

// readFile adds the reports of one file: a report of benchmarks/*.sh
// -json, or benchmarks/all.sh's file of all of them.
func (rs *Reports) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var all struct {
		Reports map[string]json.RawMessage `json:"reports"`
	}
	if err := json.Unmarshal(data, &all); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if all.Reports != nil {
		for _, raw := range all.Reports {
			if err := rs.add(raw); err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
		}
		return nil
	}
	if err := rs.add(data); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func (rs *Reports) add(raw []byte) error {
	var e Envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return err
	}
	var dst any
	switch e.Report {
	case "latency":
		rs.Latency = new(Latency)
		dst = rs.Latency
	case "coll":
		rs.Coll = new(Coll)
		dst = rs.Coll
	case "ulfm":
		rs.ULFM = new(ULFM)
		dst = rs.ULFM
	case "footprint":
		rs.Footprint = new(Footprint)
		dst = rs.Footprint
	case "foundation", "rma", "nodes_rma", "nodes_report":
		return nil // no chart of their own: their figures are single sizes
	case "coll_sweep", "nbc_sweep":
		return nil // no chart yet: read, so that all.sh's file stays readable
	case "":
		return fmt.Errorf("not a report: no \"report\" field")
	default:
		return fmt.Errorf("unknown report %q", e.Report)
	}
	return json.Unmarshal(raw, dst)
}
