package main

import (
	"fmt"
	"slices"
	"strings"
)

// baseline is the system every ratio is relative to.
const baseline = "runnel-1"

// results holds every measurement: system → metric → one value per run, plus notes
// (a system that did not start) and failures (a workload that failed, with why).
type results struct {
	Values   map[string]map[string][]float64 `json:"values"`
	Notes    map[string]string               `json:"notes"`
	Failures map[string]map[string]string    `json:"failures"`
}

func newResults() *results {
	return &results{Values: map[string]map[string][]float64{}, Notes: map[string]string{},
		Failures: map[string]map[string]string{}}
}

func (r *results) add(system, metric string, v float64) {
	if r.Values[system] == nil {
		r.Values[system] = map[string][]float64{}
	}
	r.Values[system][metric] = append(r.Values[system][metric], v)
}

func (r *results) note(system, note string) { r.Notes[system] = note }

func (r *results) fail(system, workload string, err error) {
	if r.Failures[system] == nil {
		r.Failures[system] = map[string]string{}
	}
	if _, ok := r.Failures[system][workload]; !ok {
		r.Failures[system][workload] = firstLine(err)
	}
}

// metricOrder lists the table's rows in workload order.
func metricOrder(ws []workload) []string {
	var ms []string
	for _, w := range ws {
		if w.e2e {
			for _, m := range []string{"achieved records/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms"} {
				ms = append(ms, w.name+" "+m)
			}
			continue
		}
		for _, m := range []string{"produce records/s", "produce MB/s", "produce p50 ms", "produce p99 ms", "consume records/s", "consume MB/s"} {
			ms = append(ms, w.name+" "+m)
		}
	}
	return ms
}

// stats returns the median, minimum and maximum of vs.
func stats(vs []float64) (med, lo, hi float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// markdown renders one table: a row per metric and system, with the median, the range
// over the runs and the ratio to the baseline's median.
func (r *results) markdown(systems []system, metrics []string, lim *limits) string {
	var b strings.Builder
	if lim != nil {
		b.WriteString(lim.markdown())
	}
	b.WriteString("| metric | system | median | min – max | ÷ runnel-1 | ÷ physical limit |\n|---|---|---:|---:|---:|---:|\n")
	for _, m := range metrics {
		for _, s := range systems {
			b.WriteString(r.row(m, s, lim))
		}
	}
	for _, s := range systems {
		if n, ok := r.Notes[s.name]; ok {
			fmt.Fprintf(&b, "\n%s: %s", s.name, n)
		}
		for w, f := range r.Failures[s.name] {
			fmt.Fprintf(&b, "\n%s %s: FAILED: %s", s.name, w, f)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func (r *results) row(metric string, s system, lim *limits) string {
	system := s.name
	vs := r.Values[system][metric]
	if len(vs) == 0 {
		return ""
	}
	med, lo, hi := stats(vs)
	ratio := "–"
	if bv := r.Values[baseline][metric]; len(bv) > 0 && system != baseline {
		if bm, _, _ := stats(bv); bm > 0 {
			ratio = fmt.Sprintf("%.3g×", med/bm)
		}
	}
	toLimit := "–"
	if v, name, ok := lim.of(metric, s); ok && v > 0 {
		toLimit = fmt.Sprintf("%.3g× %s", med/v, name)
	}
	return fmt.Sprintf("| %s | %s | %s | %s – %s | %s | %s |\n", metric, system, num(med), num(lo), num(hi), ratio, toLimit)
}

// num prints a value with about three significant digits.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
